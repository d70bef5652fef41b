/* test_writers.c: a property of every writer: names of 0 to 4,096 bytes holding every byte value
 * (1..255; generated, deterministic) survive, whole, escaped for where they go, with every row.
 * For each name a job of two ranks whose host, job, process, communicator and function names are
 * all that name (invalid UTF-8 read as U+FFFD), as traces; then
 *   report text     valid UTF-8, no control character but newlines, the job shown whole (\xNN)
 *   report --json   json-c parses it; job and both ranks' hosts are the name; no raw C1 or DEL
 *   report --html   Python's html.parser reads it; its <h1> shows the job; no raw control
 *   merge JSON      json-c parses it; every collective's slices under the name, with it as
 *                   comm_name; both ranks' process names hold it
 *   merge pftrace   fuzz/pft_check.h's decoder (and protoc where installed) reads it; every
 *                   slice is there and the name's bytes are in it whole
 *   merge CSV       Python's csv module: a row per collective, host, comm_name and func the name
 * and the plugin's Prometheus text (exporters/prom.c) with the name as host, job and function:
 * check_prom.py's grammar, promtool where installed, and every label value unescapes to it.
 * test/tools/check_writers.py holds the Python side. */
#include "tl.h"
#include "harness.h"
#include "exporters/prom.h"
#include "exporters/summary.h"
#include "common/utf8.h"
#include "../../fuzz/pft_check.h"
#include <json-c/json.h>
#include <unistd.h>

#define NCOLL 4   /* collectives per rank */
static const size_t g_len[] = {0, 1, 2, 3, 17, 64, 255, 256, 1000, 2047, 4095, 4096};
#define NNAMES (sizeof g_len / sizeof g_len[0])

/* Name k: g_len[k] bytes stepping through 1..255 (101 is prime to 255: any 255 in a row hold
 * every value once), from a start of its own. */
static char *gen_name(size_t k) {
  char *s = malloc(g_len[k] + 1);
  for (size_t i = 0; i < g_len[k]; i++) s[i] = (char)(1 + (k * 37 + i * 101) % 255);
  s[g_len[k]] = 0;
  return s;
}
/* The name as read: each byte that starts no valid UTF-8 sequence as U+FFFD. */
static char *as_read(const char *s) {
  size_t n = strlen(s);
  char *o = malloc(3 * n + 1);
  cl_utf8_clean(s, n, o, 3 * n + 1);
  return o;
}
/* As a terminal is shown it, worked out here apart from the CLI's rule: each control character
 * (C0, DEL, the C1 range U+0080..U+009F) as \xNN per byte. */
static char *as_shown(const char *s) {
  char *o = malloc(8 * strlen(s) + 1), *w = o;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    int two = p[0] == 0xC2 && p[1] >= 0x80 && p[1] < 0xA0;
    if (*p < 0x20 || *p == 0x7f || two) {
      w += sprintf(w, "\\x%02x", *p);
      if (two) w += sprintf(w, "\\x%02x", *++p);
    } else *w++ = (char)*p;
  }
  *w = 0;
  return o;
}
/* s as a JSON string body: quote, backslash and control bytes escaped, other bytes as they are
 * (invalid UTF-8 too: the trace is what a careless or hostile writer left). */
static void json_body(FILE *f, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  }
}

/* Rank r of the job, every name `name`: header, process name, and per collective its enqueue
 * (coll) and GPU span (coll_gpu), one communicator. */
static void write_rank(const char *dir, int r, const char *name) {
  char path[600];
  snprintf(path, sizeof path, "%s/commlens-r%d-w-%d.trace.json", dir, r, 100 + r);
  FILE *f = fopen(path, "w");
  if (!f) return;
  fputs("{\"displayTimeUnit\":\"ns\",\"commlens\":{\"format\":1,\"version\":\"0.1.0\",\"abi\":5,\"host\":\"", f);
  json_body(f, name);
  fprintf(f, "\",\"os_pid\":%d,\"rank\":%d,\"rank_source\":\"RANK\",\"job\":\"", 100 + r, r);
  json_body(f, name);
  fputs("\",\"cuda_device\":0,\"clock\":{\"realtime_offset_ns\":1700000000000000000,\"offset_error_ns\":0},\"mask\":1},"
        "\"traceEvents\":[\n", f);
  fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"", r);
  json_body(f, name);
  fputs("\"}}", f);
  for (int i = 0; i < NCOLL; i++) {
    long long t = 1763799170000000 + i * 1000 + r * 7;   /* us */
    for (int gpu = 0; gpu < 2; gpu++) {
      fprintf(f, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%lld.000,\"dur\":%d.000,\"cat\":\"%s\",\"name\":\"", r, 2 + gpu,
              t + gpu * 10, gpu ? 200 : 5, gpu ? "coll_gpu" : "coll");
      json_body(f, name);
      fputs("\",\"args\":{\"comm\":\"0xabc\",\"comm_name\":\"", f);
      json_body(f, name);
      fprintf(f, "\",\"rank\":%d,\"nranks\":2,\"seq\":%d,\"bytes\":4096%s}}", r, i, gpu ? ",\"exposed_ns\":50" : "");
    }
  }
  fputs("\n],\"commlensStats\":{\"final\":true}}\n", f);
  fclose(f);
}

static int contains(const char *h, const char *n) { return h && strstr(h, n) != NULL; }
static int no_raw_controls(const char *t, int json) {
  for (const unsigned char *p = (const unsigned char *)t; *p; p++)
    if ((*p < 0x20 && *p != '\n' && !(json && *p == ' ')) || *p == 0x7f || (p[0] == 0xC2 && p[1] >= 0x80 && p[1] < 0xA0))
      return 0;
  return 1;
}
static int valid_utf8(const char *t) {
  const unsigned char *p = (const unsigned char *)t, *e = p + strlen(t);
  for (size_t l; p < e; p += l) if (!(l = cl_utf8_len(p, e))) return 0;
  return 1;
}
static void spit(const char *path, const char *s) { FILE *f = fopen(path, "wb"); if (f) { fputs(s, f); fclose(f); } }

static void report_text(const char *dir, size_t k, const char *shown) {
  char a[700], *out, *err;
  snprintf(a, sizeof a, "report %s", dir);
  int rc = h_cli_run(a, &out, &err);
  CHECK(rc == 0 && valid_utf8(out) && no_raw_controls(out, 0) && no_raw_controls(err, 0) &&
        contains(out, "2 rank(s) of job \"") && (!shown[0] || contains(out, shown)),
        "name %zu (%zu bytes), report text: rc %d, UTF-8 %d, controls raw %d, job shown %d", k, g_len[k], rc,
        valid_utf8(out), !no_raw_controls(out, 0), contains(out, shown));
  free(out); free(err);
}

static void report_json(const char *dir, size_t k, const char *name) {
  char a[700], *out, *err;
  snprintf(a, sizeof a, "report %s --json", dir);
  int rc = h_cli_run(a, &out, &err);
  json_object *j = json_tokener_parse(out), *rs = h_json_get(j, "ranks");
  int hosts = 0;
  for (size_t i = 0; rs && i < json_object_array_length(rs); i++)
    hosts += !strcmp(json_object_get_string(h_json_get(json_object_array_get_idx(rs, i), "host")), name);
  CHECK(rc == 0 && j && no_raw_controls(out, 1) && !strcmp(json_object_get_string(h_json_get(j, "job")), name) && hosts == 2,
        "name %zu (%zu bytes), report --json: rc %d, parses %d, raw controls %d, %d host(s) kept", k, g_len[k], rc, j != NULL,
        !no_raw_controls(out, 1), hosts);
  if (j) json_object_put(j);
  free(out); free(err);
}

static int python_check(const char *mode, const char *file, const char *expect, const char *n) {
  char a[1800];
  snprintf(a, sizeof a, "python3 test/tools/check_writers.py %s '%s' '%s' %s >&2", mode, file, expect, n ? n : "");
  return system(a);
}

static void report_html(const char *dir, size_t k, const char *shown_file) {
  char a[900], page[700], *out, *err;
  snprintf(page, sizeof page, "%s/r.html", dir);
  snprintf(a, sizeof a, "report %s --html %s", dir, page);
  int rc = h_cli_run(a, &out, &err);
  CHECK(rc == 0 && python_check("html", page, shown_file, NULL) == 0, "name %zu (%zu bytes), report --html: rc %d", k,
        g_len[k], rc);
  free(out); free(err);
  unlink(page);
}

static int count_named(json_object *evs, const char *cat, const char *name, int *comm_ok) {
  int n = 0;
  for (size_t i = 0; evs && i < json_object_array_length(evs); i++) {
    json_object *e = json_object_array_get_idx(evs, i), *c = h_json_get(e, "cat");
    if (!c || strcmp(json_object_get_string(c), cat)) continue;
    n += !strcmp(json_object_get_string(h_json_get(e, "name")), name);
    *comm_ok &= !strcmp(json_object_get_string(h_json_get(h_json_get(e, "args"), "comm_name")), name);
  }
  return n;
}
static void merge_json(const char *dir, size_t k, const char *name) {
  char a[900], o[700], *out, *err;
  snprintf(o, sizeof o, "%s/m.json", dir);
  snprintf(a, sizeof a, "merge %s -o %s", dir, o);
  int rc = h_cli_run(a, &out, &err);
  json_object *m = json_object_from_file(o), *evs = h_json_get(m, "traceEvents");
  int comm_ok = 1, gpu = count_named(evs, "coll_gpu", name, &comm_ok), enq = count_named(evs, "coll", name, &comm_ok);
  int procs = 0;
  for (size_t i = 0; evs && i < json_object_array_length(evs); i++) {
    json_object *e = json_object_array_get_idx(evs, i);
    procs += !strcmp(json_object_get_string(h_json_get(e, "name")), "process_name") &&
             contains(json_object_get_string(h_json_get(h_json_get(e, "args"), "name")), name);
  }
  CHECK(rc == 0 && m && gpu == 2 * NCOLL && enq == 2 * NCOLL && comm_ok && procs == 2,
        "name %zu (%zu bytes), merge JSON: rc %d, parses %d, %d GPU and %d enqueue slices under the name (want %d), "
        "comm_name kept %d, %d process names: %s", k, g_len[k], rc, m != NULL, gpu, enq, 2 * NCOLL, comm_ok, procs, err);
  if (m) json_object_put(m);
  free(out); free(err);
  unlink(o);
}

typedef struct { int slices; } pft_n;
static void on_pft(const pft_event *e, void *arg) { ((pft_n *)arg)->slices += e->type == 1; }
static void merge_pftrace(const char *dir, size_t k, const char *name) {
  char a[900], o[700], *out, *err;
  snprintf(o, sizeof o, "%s/m.pftrace", dir);
  snprintf(a, sizeof a, "merge %s -o %s", dir, o);
  int rc = h_cli_run(a, &out, &err);
  size_t n = 0;
  char *b = h_read_file(o, &n);
  pft_n cnt = {0};
  pft_check pc = {on_pft, &cnt, 0, 0, 0, ""};
  int ok = b && pft_check_trace(&pc, (const uint8_t *)b, n) == 0;
  CHECK(rc == 0 && ok && cnt.slices == 4 * NCOLL && (!name[0] || memmem(b, n, name, strlen(name))),
        "name %zu (%zu bytes), merge pftrace: rc %d, decodes %d (%s), %d slices (want %d), name whole %d", k, g_len[k], rc, ok,
        pc.err, cnt.slices, 4 * NCOLL, b && name[0] && memmem(b, n, name, strlen(name)) != NULL);
  if (system("command -v protoc >/dev/null 2>&1") == 0) {
    snprintf(a, sizeof a, "protoc --decode=perfetto.protos.Trace tools/commlens/merge/perfetto_min.proto <%s >/dev/null 2>&1", o);
    CHECK(system(a) == 0, "name %zu (%zu bytes): protoc does not decode the pftrace", k, g_len[k]);
  }
  free(b); free(out); free(err);
  unlink(o);
}

static void merge_csv(const char *dir, size_t k, const char *name_file) {
  char a[900], o[700], *out, *err, rows[16];
  snprintf(o, sizeof o, "%s/m.csv", dir);
  snprintf(a, sizeof a, "merge %s -o %s", dir, o);
  int rc = h_cli_run(a, &out, &err);
  snprintf(rows, sizeof rows, "%d", 2 * NCOLL);
  CHECK(rc == 0 && python_check("csv", o, name_file, rows) == 0, "name %zu (%zu bytes), merge CSV: rc %d", k, g_len[k], rc);
  free(out); free(err);
  unlink(o);
}

/* The plugin's exposition with the name (as written: the plugin cleans what it writes) as host,
 * job and function. */
static void prometheus(const char *dir, size_t k, const char *raw, const char *name_file) {
  char path[700], a[900];
  snprintf(path, sizeof path, "%s/w.prom", dir);
  cl_summary *sum = cl_summary_new();
  cl_summary_add(sum, raw, 1 << 20, 2, 1000);
  cl_prom_rank r = {.rank = 0, .gpu = 0, .pid = 42, .host = raw, .job = raw, .version = "0.1.0", .abi = 5, .colls = 1};
  CHECK(cl_prom_write(path, &r, sum) == 0, "write %s", path);
  cl_summary_free(sum);
  CHECK(python_check("prom", path, name_file, NULL) == 0, "name %zu (%zu bytes): the Prometheus labels", k, g_len[k]);
  snprintf(a, sizeof a, "python3 test/tools/check_prom.py '%s' >&2", path);
  CHECK(system(a) == 0, "name %zu (%zu bytes): check_prom.py rejects the exposition", k, g_len[k]);
  if (system("command -v promtool >/dev/null 2>&1") == 0) {
    snprintf(a, sizeof a, "promtool check metrics < '%s' >&2", path);
    CHECK(system(a) == 0, "name %zu (%zu bytes): promtool rejects the exposition", k, g_len[k]);
  }
  unlink(path);
}

TL_TEST(names_of_every_length_and_byte_survive_every_writer) {
  for (size_t k = 0; k < NNAMES; k++) {
    char tmpl[] = "/tmp/commlens_writers_XXXXXX";
    char *dir = mkdtemp(tmpl), nf[700], sf[700];
    REQUIRE(dir, "mkdtemp");
    char *raw = gen_name(k), *name = as_read(raw), *shown = as_shown(name);
    snprintf(nf, sizeof nf, "%s/name", dir);
    snprintf(sf, sizeof sf, "%s/shown", dir);
    spit(nf, name);
    spit(sf, shown);
    for (int r = 0; r < 2; r++) write_rank(dir, r, raw);
    int before = tl_cur_failed;
    tl_cur_failed = 0;
    report_text(dir, k, shown);
    report_json(dir, k, name);
    report_html(dir, k, sf);
    merge_json(dir, k, name);
    merge_pftrace(dir, k, name);
    merge_csv(dir, k, nf);
    prometheus(dir, k, raw, nf);
    if (!tl_cur_failed) h_rm_rf(dir);
    else fprintf(stderr, "  kept %s\n", dir);
    tl_cur_failed |= before;
    free(raw); free(name); free(shown);
  }
}

TL_MAIN("tools/writers")
