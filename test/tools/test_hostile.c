/* test_hostile.c: the CLI on a shared machine and on hostile traces: outputs never
 * written through planted links or over an input, FIFOs among the inputs, damaged and torn
 * gzip traces (single and multi-member), flow ids and ranks at the edges of their ranges,
 * invalid UTF-8 and terminal escapes in trace strings, and numeric options out of range. */
#include "tl.h"
#include "harness.h"
#include "synth_gen.h"
#include <json-c/json.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tools/commlens/read/trace_read.h"
#include "tools/commlens/base/util.h"
#include "common/utf8.h"
#include "../../fuzz/pft_check.h"

static char *slurp(const char *path, size_t *len) { return h_read_file(path, len); }
static void spit(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb"); if (f) { fwrite(b, 1, n, f); fclose(f); }
}

static int run_cli(const char *args, char **out, char **err) { return h_cli_run(args, out, err); }
static char *mkdir_tmp(void) { char t[] = "/tmp/commlens_hostile_XXXXXX"; return strdup(mkdtemp(t)); }
static void rm_rf(const char *d) { h_rm_rf(d); }
static int contains(const char *hay, const char *needle) { return hay && strstr(hay, needle) != NULL; }

/* A synthetic job of nranks plain-JSON ranks in a fresh directory. Caller frees. */
static char *job_dir(int nranks, int ncoll) {
  char *d = mkdir_tmp(); synth_cfg c; synth_defaults(&c);
  c.nranks = nranks; c.ncoll = ncoll; c.nch = 2; c.nsteps = 1; c.dir = d;
  char p[600];
  for (int r = 0; r < nranks; r++) synth_write_rank(&c, r, p, sizeof p);
  return d;
}
static void rank_path(const char *d, int r, char *p, size_t n) {
  snprintf(p, n, "%s/commlens-r%d-node0-%d.trace.json", d, r, 1000 + r);
}

/* ---- item 1: outputs are new files renamed into place, never written through a link ---- */
TL_TEST(outputs_never_written_through_a_planted_link) {
  char *d = job_dir(2, 10), *o = mkdir_tmp();
  char victim[700], a[2400], link[700], *out, *err;
  snprintf(victim, sizeof victim, "%s/victim", o);
  spit(victim, "precious\n", 9);
  /* report --html F with F.tmp planted (the old fixed temporary name), and F itself a link */
  snprintf(link, sizeof link, "%s/page.html.tmp", o);
  CHECK(symlink(victim, link) == 0, "symlink");
  snprintf(a, sizeof a, "report %s --html %s/page.html", d, o);
  int rc = run_cli(a, &out, &err);
  char *v = slurp(victim, NULL);
  CHECK(rc == 0 && v && !strcmp(v, "precious\n"), "report --html: rc %d, victim now '%.40s': %s", rc, v ? v : "", err);
  free(v); free(out); free(err);
  snprintf(a, sizeof a, "%s/page.html", o);
  char *page = slurp(a, NULL);
  CHECK(page && !strncmp(page, "<!DOCTYPE html>", 15), "the page was not written");
  free(page);
  /* merge -o OUT where OUT (each format) and OUT.tmp are links to the victim */
  static const char *const names[] = { "m.json", "m.json.gz", "m.pftrace", "m.pftrace.gz" };
  for (int i = 0; i < 4; i++) {
    char t[800]; snprintf(link, sizeof link, "%s/%s", o, names[i]); snprintf(t, sizeof t, "%s.tmp", link);
    CHECK(symlink(victim, link) == 0 && symlink(victim, t) == 0, "symlinks");
    snprintf(a, sizeof a, "merge %s -o %s", d, link);
    rc = run_cli(a, &out, &err);
    v = slurp(victim, NULL);
    struct stat st;
    CHECK(rc == 0 && v && !strcmp(v, "precious\n"), "merge -o %s: rc %d, victim now '%.40s': %s", names[i], rc, v ? v : "", err);
    CHECK(lstat(link, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0, "merge -o %s: the output is not a new file", names[i]);
    free(v); free(out); free(err);
  }
  /* no temporaries left behind */
  snprintf(a, sizeof a, "ls %s | grep -c '\\.tmp$' | grep -qx 5", o);   /* the 5 planted links only */
  CHECK(system(a) == 0, "temporaries left in %s", o);
  rm_rf(d); rm_rf(o); free(d); free(o);
}

/* ---- item 2: an output that is one of the inputs is refused (by inode, not by name) ---- */
TL_TEST(merge_refuses_an_input_as_its_output) {
  char *d = job_dir(2, 10);
  char in[700], alias[700], a[2400], *out, *err;
  rank_path(d, 1, in, sizeof in);
  size_t n0; char *before = slurp(in, &n0);
  snprintf(alias, sizeof alias, "%s/alias.json", d);
  CHECK(link(in, alias) == 0, "hard link");
  const char *outs[] = { in, alias };
  for (int i = 0; i < 2; i++) {
    snprintf(a, sizeof a, "merge %s -o %s", d, outs[i]);
    int rc = run_cli(a, &out, &err);
    CHECK(rc == 2 && contains(err, "one of the inputs"), "-o %s: rc %d: %s", outs[i], rc, err);
    free(out); free(err);
    size_t n1; char *after = slurp(in, &n1);
    CHECK(after && n1 == n0 && !memcmp(before, after, n0), "-o %s: the input changed", outs[i]);
    free(after);
  }
  snprintf(a, sizeof a, "report %s --html %s", d, alias);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 2 && contains(err, "one of the inputs"), "--html onto an input: rc %d: %s", rc, err);
  free(out); free(err);
  free(before); rm_rf(d); free(d);
}

/* An output that is any file found among the inputs, read or not (a digest left out because the
 * directory holds traces, a second file of a rank that was skipped), is refused like one that
 * was read: before, the digest was replaced by the merged JSON and the skipped file by the page. */
TL_TEST(outputs_refuse_every_file_found_among_the_inputs) {
  char *d = job_dir(2, 10);
  char dg[700], dup[700], in[700], a[2400], *out, *err;
  snprintf(dg, sizeof dg, "%s/commlens-r0-node0-1000.digest", d);
  spit(dg, "CLDIGEST\2\0\0\0not read", 20);
  rank_path(d, 1, in, sizeof in);
  snprintf(dup, sizeof dup, "%s/commlens-r1-node0-9999.trace.json", d);
  size_t n0; char *before = slurp(in, &n0);
  spit(dup, before, n0);
  struct { const char *what, *path; } cases[] = {{"merge -o", dg}, {"--html", dup}};
  for (int i = 0; i < 2; i++) {
    size_t nb; char *b0 = slurp(cases[i].path, &nb);
    if (i == 0) snprintf(a, sizeof a, "merge %s -o %s", d, dg);
    else snprintf(a, sizeof a, "report %s --html %s", d, dup);
    int rc = run_cli(a, &out, &err);
    size_t na; char *b1 = slurp(cases[i].path, &na);
    CHECK(rc == 2 && contains(err, "among the inputs") && b1 && na == nb && !memcmp(b0, b1, nb),
          "%s onto a file found among the inputs: rc %d, %s: %s", cases[i].what, rc,
          b1 && na == nb && !memcmp(b0, b1, nb) ? "kept" : "replaced", err);
    free(b0); free(b1); free(out); free(err);
  }
  free(before); rm_rf(d); free(d);
}

/* ---- item 3: a FIFO named like a trace is skipped with one message, never waited on ---- */
TL_TEST(fifo_among_the_inputs_is_skipped) {
  char *d = job_dir(2, 10);
  char f[700], a[2400], *out, *err;
  snprintf(f, sizeof f, "%s/evil.trace.json", d);
  REQUIRE(mkfifo(f, 0600) == 0, "mkfifo");
  snprintf(a, sizeof a, "report %s --json", d);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 0 && contains(err, "evil.trace.json: not a regular file (a FIFO)"), "report: rc %d: %s", rc, err);
  CHECK(!contains(strstr(err, "evil.trace.json") + 1, "evil.trace.json"), "more than one message: %s", err);
  free(out); free(err);
  snprintf(a, sizeof a, "merge %s -o %s/m.json", d, d);
  rc = run_cli(a, &out, &err);
  CHECK(rc == 0 && contains(err, "evil.trace.json: not a regular file (a FIFO)") && contains(err, "2 rank(s)"),
        "merge: rc %d: %s", rc, err);
  free(out); free(err);
  rm_rf(d); free(d);
}

/* A link is judged by what it points at: a link to a trace is read (users link traces from
 * several job directories into one), a link to a FIFO is skipped like the FIFO. */
TL_TEST(linked_inputs_are_read_and_a_linked_fifo_skipped) {
  char *d = job_dir(2, 10), *l = mkdir_tmp();
  char f[700], t[700], a[2400], *out, *err;
  rank_path(d, 1, t, sizeof t);
  snprintf(f, sizeof f, "%s/commlens-r1-linked.trace.json", l);
  REQUIRE(symlink(t, f) == 0, "symlink to a trace");
  snprintf(f, sizeof f, "%s/evil.fifo", d);
  REQUIRE(mkfifo(f, 0600) == 0, "mkfifo");
  snprintf(t, sizeof t, "%s/commlens-r7-evil.trace.json", l);
  REQUIRE(symlink(f, t) == 0, "symlink to a FIFO");
  snprintf(a, sizeof a, "report %s --json", l);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 0 && contains(out, "\"rank\":1") && contains(err, "not a regular file (a FIFO)"),
        "report over links: rc %d: %s", rc, err);
  free(out); free(err);
  rm_rf(l); free(l);
  rm_rf(d); free(d);
}

/* ---- item 4: damaged and torn gzip traces keep what precedes the damage ---- */
/* text compressed as one gzip member */
static unsigned char *gz_member(const char *t, size_t n, size_t *outn) {
  z_stream z; memset(&z, 0, sizeof z);
  deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
  size_t cap = deflateBound(&z, n) + 64;
  unsigned char *o = malloc(cap);
  z.next_in = (Bytef *)t; z.avail_in = (uInt)n; z.next_out = o; z.avail_out = (uInt)cap;
  deflate(&z, Z_FINISH);
  *outn = cap - z.avail_out;
  deflateEnd(&z);
  return o;
}
typedef struct { int colls; int64_t max_seq; } coll_count;
static void count_colls(const cl_ev *ev, void *arg) {
  coll_count *c = arg;
  if (ev->cat == CAT_COLL_GPU) { c->colls++; if (ev->seq > c->max_seq) c->max_seq = ev->seq; }
}
static int count_in(const char *t, size_t n, const char *needle) {
  int k = 0; size_t l = strlen(needle);
  for (const char *p = t; (p = memmem(p, (size_t)(t + n - p), needle, l)); p += l) k++;
  return k;
}

TL_TEST(gz_damage_keeps_the_events_before_it) {
  char *d = job_dir(1, 450);
  char in[700], gzp[800];
  rank_path(d, 0, in, sizeof in);
  size_t n; char *t = slurp(in, &n);
  int total = count_in(t, n, "\"cat\":\"coll_gpu\"");
  size_t zn; unsigned char *z = gz_member(t, n, &zn);
  snprintf(gzp, sizeof gzp, "%s.gz", in);
  unlink(in);
  z[zn * 2 / 3] ^= 0x10;   /* one flipped byte two thirds in */
  spit(gzp, z, zn);
  coll_count c = { 0, -1 }; cl_info info;
  int rc = cl_trace_scan(gzp, count_colls, &c, &info, 0);
  CHECK(rc == 0, "the rank is discarded: %s", info.msg);
  /* what precedes the damage: two thirds less a deflate block or two */
  CHECK(c.colls >= total / 2 && c.colls <= total, "%d of %d collectives kept", c.colls, total);
  CHECK(contains(info.msg, "compressed byte") && contains(info.msg, "uncompressed byte") && info.bad,
        "message: '%s'", info.msg);
  cl_info_free(&info);
  /* the CLI says which file, where and what, and reports the rank */
  char a[1600], *out, *err;
  snprintf(a, sizeof a, "report %s --json", d);
  int crc = run_cli(a, &out, &err);
  CHECK(crc == 0 && contains(err, gzp) && contains(err, "gzip data damaged at compressed byte"), "report: rc %d: %s", crc, err);
  free(out); free(err);
  /* torn: the same file cut two thirds in keeps the events before the tear */
  z[zn * 2 / 3] ^= 0x10;
  spit(gzp, z, zn * 2 / 3);
  c = (coll_count){ 0, -1 };
  rc = cl_trace_scan(gzp, count_colls, &c, &info, 0);
  CHECK(rc == 0 && c.colls >= total / 2 && info.truncated && contains(info.msg, "cut short"),
        "torn: rc %d, %d of %d, '%s'", rc, c.colls, total, info.msg);
  cl_info_free(&info);
  free(z); free(t); rm_rf(d); free(d);
}

/* A file of four gzip members, each starting at an event line (the plugin's writer), with a
 * byte flipped inside the second: the first, third and fourth members' events are all read. */
TL_TEST(gz_damage_resumes_at_the_next_member) {
  char *d = job_dir(1, 400);
  char in[700], gzp[800];
  rank_path(d, 0, in, sizeof in);
  size_t n; char *t = slurp(in, &n);
  int total = count_in(t, n, "\"cat\":\"coll_gpu\"");
  size_t cut[5] = { 0, 0, 0, 0, n };
  for (int k = 1; k < 4; k++) {   /* before the ",\n{" that follows each quarter */
    const char *q = memmem(t + n * (size_t)k / 4, n - n * (size_t)k / 4, ",\n{", 3);
    REQUIRE(q, "no event line");
    cut[k] = (size_t)(q - t);
  }
  unsigned char *all = NULL; size_t alln = 0, start2 = 0, len2 = 0;
  for (int k = 0; k < 4; k++) {
    size_t zn; unsigned char *z = gz_member(t + cut[k], cut[k + 1] - cut[k], &zn);
    if (k == 1) { start2 = alln; len2 = zn; }
    all = realloc(all, alln + zn); memcpy(all + alln, z, zn); alln += zn; free(z);
  }
  all[start2 + len2 / 2] ^= 0x20;
  snprintf(gzp, sizeof gzp, "%s.gz", in);
  unlink(in);
  spit(gzp, all, alln);
  int want = total - count_in(t + cut[1], cut[2] - cut[1], "\"cat\":\"coll_gpu\"");
  coll_count c = { 0, -1 }; cl_info info;
  int rc = cl_trace_scan(gzp, count_colls, &c, &info, 0);
  CHECK(rc == 0 && c.colls >= want && c.colls <= total && c.max_seq == 399,
        "rc %d: %d collectives (last seq %lld), want at least %d of %d: %s", rc, c.colls, (long long)c.max_seq, want, total, info.msg);
  CHECK(info.has_stats && info.final, "the stats after the damage were not read");
  CHECK(contains(info.msg, "gzip data damaged"), "message: '%s'", info.msg);
  cl_info_free(&info);
  /* a damaged gzip header of a member: also resumed at the next */
  all[start2 + len2 / 2] ^= 0x20;
  all[start2 + 2] = 0x07;   /* compression method */
  spit(gzp, all, alln);
  c = (coll_count){ 0, -1 };
  rc = cl_trace_scan(gzp, count_colls, &c, &info, 0);
  CHECK(rc == 0 && c.colls >= want && c.max_seq == 399, "bad member header: %d of %d: %s", c.colls, total, info.msg);
  cl_info_free(&info);
  free(all); free(t); rm_rf(d); free(d);
}

/* ---- item 5: flow ids, ranks, UTF-8, numeric options, the flow writer's buffer ---- */
/* Replaces every `from` in the file by `to`; inserts `events` before the array's end. */
static void edit_trace(const char *path, const char *from, const char *to, const char *events) {
  size_t n; char *t = slurp(path, &n);
  size_t fl = from ? strlen(from) : 0, tl = to ? strlen(to) : 0, el = events ? strlen(events) : 0;
  size_t k = from ? (size_t)count_in(t, n, from) : 0;
  char *o = malloc(n + k * tl + el + 1), *w = o;
  const char *end = strstr(t, "\n],\"commlensStats\"");
  for (const char *p = t; p < t + n;) {
    if (events && p == end) { memcpy(w, events, el); w += el; end = NULL; }
    if (from && !strncmp(p, from, fl)) { memcpy(w, to, tl); w += tl; p += fl; }
    else *w++ = *p++;
  }
  spit(path, o, (size_t)(w - o));
  free(o); free(t);
}
static int all_utf8(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s, *e = p + n;
  for (size_t l; p < e; p += l) if (!(l = cl_utf8_len(p, e))) return 0;
  return 1;
}
/* Four flows of rank 0's file: numeric ids equal in their low 40 bits, string ids equal in
 * their first 30 characters. */
#define FLOW_TS "1763799170001000.000"
#define FLOW_PAIR(id) ",\n{\"ph\":\"s\",\"cat\":\"myflow\",\"name\":\"f\",\"pid\":0,\"tid\":1,\"ts\":" FLOW_TS ",\"id\":" id "}" \
                      ",\n{\"ph\":\"f\",\"cat\":\"myflow\",\"name\":\"f\",\"pid\":0,\"tid\":1,\"ts\":" FLOW_TS ",\"id\":" id ",\"bp\":\"e\"}"
static const char FLOWS[] = FLOW_PAIR("1") FLOW_PAIR("1099511627777")
  FLOW_PAIR("\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaX\"") FLOW_PAIR("\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaY\"");

typedef struct { uint64_t slice[64], inst[64]; int ns, ni; } flow_sets;
static void on_pft_event(const pft_event *e, void *arg) {
  flow_sets *f = arg;
  for (int k = 0; k < e->nflow + e->nterm; k++) {
    uint64_t id = k < e->nflow ? e->flow[k] : e->term[k - e->nflow];
    if (e->type == 1 && f->ns < 64) f->slice[f->ns++] = id;
    if (e->type == 3 && f->ni < 64) f->inst[f->ni++] = id;
  }
}
static int distinct(const uint64_t *v, int n) {
  int d = 0;
  for (int i = 0; i < n; i++) { int seen = 0; for (int j = 0; j < i; j++) seen |= v[j] == v[i]; d += !seen; }
  return d;
}

TL_TEST(merge_keeps_distinct_flows_apart) {
  char *d = mkdir_tmp(); synth_cfg c; synth_defaults(&c);
  c.nranks = 2; c.ncoll = 5; c.nch = 1; c.nsteps = 1; c.dir = d;
  char p0[600], p1[600];
  synth_write_rank(&c, 0, p0, sizeof p0);
  synth_write_rank(&c, 4095, p1, sizeof p1);   /* rank 4095: its flows once met the instances' base */
  edit_trace(p0, NULL, NULL, FLOWS);
  edit_trace(p1, NULL, NULL, FLOWS);
  char a[2400], o[700], *out, *err;
  snprintf(o, sizeof o, "%s/m.json", d);
  snprintf(a, sizeof a, "merge %s -o %s", d, o);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 0, "json: rc %d: %s", rc, err);
  free(out); free(err);
  json_object *m = json_object_from_file(o), *evs = NULL;
  REQUIRE(m && json_object_object_get_ex(m, "traceEvents", &evs), "merged JSON does not parse");
  uint64_t s_ids[16]; int ns = 0, pairs = 0;
  for (size_t i = 0; i < json_object_array_length(evs); i++) {
    json_object *e = json_object_array_get_idx(evs, i), *ph, *cat, *id;
    if (!json_object_object_get_ex(e, "cat", &cat) || strcmp(json_object_get_string(cat), "myflow")) continue;
    json_object_object_get_ex(e, "ph", &ph); json_object_object_get_ex(e, "id", &id);
    CHECK(json_object_is_type(id, json_type_int), "flow id not a number: %s", json_object_to_json_string(id));
    uint64_t v = (uint64_t)json_object_get_int64(id);
    CHECK(v < (1ull << 52), "flow id %llu not below the instances' base", (unsigned long long)v);
    if (!strcmp(json_object_get_string(ph), "s") && ns < 16) s_ids[ns++] = v;
    else if (ns && v == s_ids[ns - 1]) pairs++;   /* each f follows its s */
  }
  CHECK(ns == 8 && distinct(s_ids, ns) == 8 && pairs == 8, "json: %d flows, %d distinct, %d paired (want 8, 8, 8)",
        ns, distinct(s_ids, ns), pairs);
  json_object_put(m);
  snprintf(o, sizeof o, "%s/m.pftrace", d);
  snprintf(a, sizeof a, "merge %s -o %s", d, o);
  rc = run_cli(a, &out, &err);
  CHECK(rc == 0, "pftrace: rc %d: %s", rc, err);
  free(out); free(err);
  size_t n; char *b = slurp(o, &n);
  flow_sets f; memset(&f, 0, sizeof f);
  pft_check pc = { on_pft_event, &f, 0, 0, 0, "" };
  REQUIRE(b && pft_check_trace(&pc, (const uint8_t *)b, n) == 0, "pftrace malformed: %s", pc.err);
  int met = 0;
  for (int i = 0; i < f.ni; i++) for (int j = 0; j < f.ns; j++) met += f.inst[i] == f.slice[j];
  CHECK(f.ns == 10 && f.ni == 16 && distinct(f.inst, f.ni) == 8 && met == 0,
        "pftrace: %d slice flow ids, %d flow-step ids (%d distinct, want 8), %d of them also an instance's", f.ns, f.ni,
        distinct(f.inst, f.ni), met);
  free(b);
  rm_rf(d); free(d);
}

/* A rank past int (4294967296 once read as 0) is refused as bad input, with a message. */
TL_TEST(rank_out_of_range_is_refused) {
  char *d = job_dir(2, 5), p[700], a[1600], *out, *err;
  rank_path(d, 1, p, sizeof p);
  edit_trace(p, "\"rank\":1,\"rank_source\"", "\"rank\":4294967296,\"rank_source\"", NULL);
  snprintf(a, sizeof a, "report %s --json", d);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 0 && contains(err, "header rank 4294967296 is not an integer in 0..") && !contains(err, "already read"),
        "rc %d: %s", rc, err);
  json_object *j = json_tokener_parse(out), *rs = NULL;
  CHECK(j && json_object_object_get_ex(j, "ranks", &rs) && json_object_array_length(rs) == 1, "ranks: %s", out);
  if (j) json_object_put(j);
  free(out); free(err); rm_rf(d); free(d);
}

/* Every numeric option has a range: out of it (or not finite) is bad usage, exit 2. */
TL_TEST(numeric_options_are_range_checked) {
  char *d = job_dir(2, 5), a[1600], *out, *err;
  static const char *const bad[] = { "--window 1e300:1e301", "--window nan:1", "--window 0:nan", "--window 0:inf",
                                     "--window -1:5", "--steps 0:9223372036854775807", "--steps -3:2", "--top 0",
                                     "--threads 100000", "--ranks 0-99999999999999999999" };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(a, sizeof a, "%s %s %s%s%s", i < 7 || i == 9 ? "merge" : "report", d, bad[i], i < 7 || i == 9 ? " -o " : "",
             i < 7 || i == 9 ? "/dev/null" : "");
    int rc = run_cli(a, &out, &err);
    CHECK(rc == 2 && (contains(err, "expected") || contains(err, "expects")), "'%s': rc %d: %s", bad[i], rc, err);
    free(out); free(err);
  }
  snprintf(a, sizeof a, "merge %s --window 0:1e10 -o %s/w.json", d, d);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 0, "the largest window: rc %d: %s", rc, err);
  free(out); free(err); rm_rf(d); free(d);
}

/* The cross-rank flows' names are written whole, however long the collective's name (a
 * fixed buffer's snprintf gave its untruncated length to the write). */
TL_TEST(merge_flow_names_of_any_length) {
  char *d = job_dir(2, 3), p[700], a[1600], o[700], *out, *err;
  char *name = malloc(2001); memset(name, 'F', 2000); name[2000] = 0;
  for (int r = 0; r < 2; r++) { rank_path(d, r, p, sizeof p); edit_trace(p, "AllReduce", name, NULL); }
  snprintf(o, sizeof o, "%s/m.json", d);
  snprintf(a, sizeof a, "merge %s -o %s", d, o);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 0 && contains(err, "3 cross-rank flows"), "rc %d: %s", rc, err);
  free(out); free(err);
  json_object *m = json_object_from_file(o), *evs = NULL;
  REQUIRE(m && json_object_object_get_ex(m, "traceEvents", &evs), "merged JSON does not parse");
  int whole = 0; char want[2100]; snprintf(want, sizeof want, "%s #1", name);
  for (size_t i = 0; i < json_object_array_length(evs); i++) {
    json_object *e = json_object_array_get_idx(evs, i), *cat, *nm;
    if (json_object_object_get_ex(e, "cat", &cat) && !strcmp(json_object_get_string(cat), "coll_instance") &&
        json_object_object_get_ex(e, "name", &nm) && !strcmp(json_object_get_string(nm), want)) whole++;
  }
  CHECK(whole == 2, "%d flow steps of instance #1 carry the whole name, want 2", whole);
  json_object_put(m); free(name); rm_rf(d); free(d);
}

/* ---- items 5 and 6: invalid UTF-8 and terminal escapes from a trace ---- */
TL_TEST(hostile_strings_are_shown_never_obeyed) {
  char *d = job_dir(2, 5), p[700], a[2400], o[700], *out, *err;
  rank_path(d, 0, p, sizeof p);
  /* the host: invalid UTF-8, markup, an escape sequence; the communicator's name: invalid
   * UTF-8; the process name: an escape; one event's name: invalid UTF-8 */
  edit_trace(p, "\"host\":\"node0\"", "\"host\":\"bad\xff\xfe<script>alert(1)</script>\\u001b[31m\"", NULL);
  for (int r = 0; r < 2; r++) {   /* the job id (both ranks): shown whole in the text report */
    char q[700]; rank_path(d, r, q, sizeof q);
    edit_trace(q, "\"job\":\"job42\"", "\"job\":\"job\\u001b[31m42\\u009b2J\"", NULL);
  }
  for (int r = 0; r < 2; r++) {   /* both ranks: the name kept is whichever rank is read first */
    char q[700]; rank_path(d, r, q, sizeof q);
    edit_trace(q, "\"comm_name\":\"world\"", "\"comm_name\":\"w\xc3(rld\"", NULL);
  }
  edit_trace(p, "\"args\":{\"name\":\"rank 0 (node0, GPU 0)\"}", "\"args\":{\"name\":\"evil\\u001b]0;pwned\\u0007\"}",
             ",\n{\"ph\":\"X\",\"cat\":\"nvtx\",\"name\":\"x\xc0\xafy\",\"pid\":0,\"tid\":1,\"ts\":" FLOW_TS ",\"dur\":1}");
  snprintf(a, sizeof a, "report %s --json", d);
  int rc = run_cli(a, &out, &err);
  json_object *j = json_tokener_parse(out), *u = NULL;
  CHECK(rc == 0 && j && all_utf8(out, strlen(out)), "report --json: rc %d, not valid UTF-8 JSON", rc);
  CHECK(j && json_object_object_get_ex(j, "utf8_replaced", &u) && json_object_get_int64(u) >= 3,
        "utf8_replaced: %s", u ? json_object_to_json_string(u) : "(none)");
  CHECK(contains(out, "bad\xef\xbf\xbd\xef\xbf\xbd<script>"), "host not shown with U+FFFD: %.300s", out);
  if (j) json_object_put(j);
  free(out); free(err);
  snprintf(a, sizeof a, "report %s --html %s/r.html", d, d);
  rc = run_cli(a, &out, &err);
  CHECK(rc == 0 && !strchr(out, 0x1b) && !strchr(err, 0x1b) && !strchr(out, 0x07), "text report: rc %d, raw ESC/BEL", rc);
  CHECK(contains(out, "job\\x1b[31m42\\xc2\\x9b2J") && contains(out, "bad\xef\xbf\xbd") && all_utf8(out, strlen(out)) &&
        contains(out, "invalid UTF-8 byte(s)"),
        "text report: escape not shown as \\x1b, or invalid UTF-8, or no count:\n%s", out);
  free(out); free(err);
  snprintf(o, sizeof o, "%s/r.html", d);
  size_t n; char *h = slurp(o, &n);
  CHECK(h && !contains(h, "<script>alert") && contains(h, "&lt;script&gt;alert(1)&lt;/script&gt;") && all_utf8(h, n),
        "HTML: the host is not escaped, or the page is not UTF-8");
  free(h);
  for (int f = 0; f < 2; f++) {
    snprintf(o, sizeof o, "%s/m.%s", d, f ? "pftrace" : "json");
    snprintf(a, sizeof a, "merge %s -o %s", d, o);
    rc = run_cli(a, &out, &err);
    /* the event whose name is invalid UTF-8 is kept, its bytes written as U+FFFD */
    CHECK(rc == 0 && contains(err, "invalid UTF-8 byte(s) in the traces'") &&
          contains(err, "2 invalid UTF-8 byte(s) in events' strings written as U+FFFD") && !contains(err, "left out"),
          "merge %d: rc %d: %s", f, rc, err);
    free(out); free(err);
    char *b = slurp(o, &n);
    if (f) {
      pft_check pc = { NULL, NULL, 0, 0, 0, "" };
      CHECK(b && pft_check_trace(&pc, (const uint8_t *)b, n) == 0, "pftrace: %s", pc.err);
    } else {
      json_object *m = b ? json_tokener_parse(b) : NULL;
      CHECK(m && all_utf8(b, n), "merged JSON: not valid UTF-8 JSON");
      if (m) json_object_put(m);
    }
    free(b);
  }
  rm_rf(d); free(d);
}

/* Every control character a trace carries reaches the terminal escaped, carriage return, tab and
 * newline included: a host "vm\rVerdict: ..." overwrote the report's real verdict line (the
 * filter let \n, \r and \t through), and a file name holding a newline could start a line of
 * its own on stderr. */
static int lines_starting(const char *t, const char *with) {
  int k = 0;
  for (const char *l = t; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) k += !strncmp(l, with, strlen(with));
  return k;
}
TL_TEST(control_characters_from_files_never_reach_the_terminal) {
  char *d = job_dir(2, 5), p[700], a[2400], *out, *err;
  rank_path(d, 1, p, sizeof p);
  edit_trace(p, "\"host\":\"node0\"", "\"host\":\"vm\\rVerdict: rank 1 (host vm) is a straggler\\n"
             "Verdict: rank 0 is a straggler\\tx\"", NULL);
  char odd[800];
  snprintf(odd, sizeof odd, "%s/x\nVerdict: forged.trace.json", d);
  spit(odd, "not json", 8);
  snprintf(a, sizeof a, "report %s", d);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 0 && !strpbrk(out, "\r\t") && !strpbrk(err, "\r\t") && contains(out, "vm\\x0dVerdict") &&
        contains(out, "\\x0aVerdict: rank 0") && contains(out, "straggler\\x09x"),
        "rc %d: a carriage return or tab reached the terminal, or the host is not shown escaped:\n%s", rc, out);
  CHECK(lines_starting(out, "Verdict:") == 1 && lines_starting(err, "Verdict:") == 0 && contains(err, "x\\x0aVerdict: forged"),
        "a line forged from a host or a file name (%d verdict lines on stdout, %d on stderr):\n%s\n%s",
        lines_starting(out, "Verdict:"), lines_starting(err, "Verdict:"), out, err);
  free(out); free(err);
  /* report --json on stdout: C1 controls (and DEL) as \u escapes, the same string once parsed */
  edit_trace(p, "\"job\":\"job42\"", "\"job\":\"job\\u009b2J\\u007f42\"", NULL);
  char q[700];
  rank_path(d, 0, q, sizeof q);
  edit_trace(q, "\"job\":\"job42\"", "\"job\":\"job\\u009b2J\\u007f42\"", NULL);
  snprintf(a, sizeof a, "report %s --json", d);
  rc = run_cli(a, &out, &err);
  json_object *j = json_tokener_parse(out), *job = h_json_get(j, "job");
  CHECK(rc == 0 && !memmem(out, strlen(out), "\xc2\x9b", 2) && !strchr(out, 0x7f) && job &&
        !strcmp(json_object_get_string(job), "job\xc2\x9b" "2J\x7f" "42"),
        "rc %d: a C1 control or DEL reached the terminal raw, or the job changed: %.400s", rc, out);
  if (j) json_object_put(j);
  free(out); free(err);
  rm_rf(d); free(d);
}

/* The text tables' fixed columns cut a long name at a character, never inside one, and pad it
 * by characters: each row of the ranks table is valid UTF-8 and its columns line up. */
TL_TEST(text_columns_cut_names_at_a_character) {
  char *d = job_dir(2, 5), p[700], a[2400], *out, *err;
  for (int r = 0; r < 2; r++) {
    rank_path(d, r, p, sizeof p);
    edit_trace(p, "\"host\":\"node0\"", r ? "\"host\":\"n\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\"" :
               "\"host\":\"abcdefghijklmn\u00e9\u00e9\u00e9\u00e9\"", NULL);
  }
  snprintf(a, sizeof a, "report %s", d);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 0 && all_utf8(out, strlen(out)), "rc %d: the text report is not valid UTF-8:\n%s", rc, out);
  /* in the ranks table ("  %5d  " then the 16-character host column) each host's cell is its
   * first 16 characters, padded by characters */
  static const char *const cell[2] = {"abcdefghijklmn\xc3\xa9\xc3\xa9", "n\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                                      "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9      "};
  const char *tab = strstr(out, "Ranks (");
  for (int r = 0; r < 2; r++) {
    const char *l = tab ? strstr(tab, r ? "\n      1  " : "\n      0  ") : NULL;
    char got[200] = "";
    if (l) {   /* characters 9 .. 24 of the row */
      const unsigned char *c = (const unsigned char *)l + 1, *e = c + strlen((const char *)c);
      for (int k = 0; k < 9 && c < e; k++) c += cl_utf8_len(c, e) ? cl_utf8_len(c, e) : 1;
      const unsigned char *from = c;
      for (int k = 0; k < 16 && c < e; k++) c += cl_utf8_len(c, e) ? cl_utf8_len(c, e) : 1;
      snprintf(got, sizeof got, "%.*s", (int)(c - from), (const char *)from);
    }
    CHECK(!strcmp(got, cell[r]), "rank %d's host cell is '%s', want '%s':\n%s", r, got, cell[r], out);
  }
  free(out); free(err);
  rm_rf(d); free(d);
}

/* An output that is a pipe or a character device is written through, never replaced: renaming
 * the temporary onto `-o /dev/null` replaced the device node with a regular file when run as
 * root (found on the build VM: /dev/null had become a file). Checked with a FIFO (a reader takes
 * the merged JSON through it) and a directory (refused, left as it was). */
TL_TEST(merge_into_a_pipe_writes_through_it) {
  char *d = job_dir(2, 3), fifo[700], got[700], a[2000], *out, *err;
  snprintf(fifo, sizeof fifo, "%s/pipe", d);
  snprintf(got, sizeof got, "%s/got.json", d);
  REQUIRE(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
  pid_t rd = fork();
  if (rd == 0) {   /* the reader: the FIFO's contents into a file */
    int in = open(fifo, O_RDONLY), o = open(got, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char buf[65536];
    ssize_t k;
    while (in >= 0 && o >= 0 && (k = read(in, buf, sizeof buf)) > 0)
      if (write(o, buf, (size_t)k) != k) _exit(1);
    _exit(in >= 0 && o >= 0 ? 0 : 1);
  }
  snprintf(a, sizeof a, "merge %s -o %s", d, fifo);
  int rc = run_cli(a, &out, &err);
  struct stat sb;
  int kept = lstat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode);
  if (!kept) kill(rd, SIGKILL);   /* replaced: nothing will ever open the old FIFO to write */
  int st = 0;
  waitpid(rd, &st, 0);
  CHECK(kept, "the FIFO was replaced by a file (rc %d)", rc);
  CHECK(rc == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "merge into a FIFO: rc %d, reader %d: %s", rc, st, err);
  json_object *j = json_object_from_file(got);
  CHECK(j && json_object_object_get_ex(j, "traceEvents", NULL), "what came through the FIFO is not the merged trace");
  if (j) json_object_put(j);
  free(out); free(err);
  snprintf(a, sizeof a, "merge %s -o %s", d, d);   /* a directory: refused, kept */
  rc = run_cli(a, &out, &err);
  CHECK(rc != 0 && contains(err, "a directory, not replaced") && lstat(d, &sb) == 0 && S_ISDIR(sb.st_mode),
        "merge -o DIR: rc %d: %s", rc, err);
  free(out); free(err); rm_rf(d); free(d);
}

TL_MAIN("tools/hostile")
