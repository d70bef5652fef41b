/* test_digest_bounds.c: digests that lie, read as a hostile neighbour would leave them: blocks
 * with valid CRCs whose columns claim far more rows than their bytes can carry (refused, the
 * file named), names of any length and bytes (every row survives merge to JSON and pftrace),
 * and header clocks outside any Unix time (refused, never wrapped into an offset). */
#include "tl.h"
#include "harness.h"
#include "exporters/digest.h"
#include "tools/commlens/read/digest_read.h"
#include "../../fuzz/pft_check.h"
#include <json-c/json.h>
#include <unistd.h>

static void spit(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb"); if (f) { fwrite(b, 1, n, f); fclose(f); }
}
static char *fresh_dir(void) { char t[] = "/tmp/commlens_dgb_XXXXXX"; return strdup(mkdtemp(t)); }
static int contains(const char *hay, const char *needle) { return hay && strstr(hay, needle) != NULL; }

/* The header of rank `rank` (offset: clock.realtime_offset_ns as JSON text) into f. */
static void head(cl_dg_buf *f, int rank, const char *offset) {
  char h[512];
  snprintf(h, sizeof h, "{\"format\":1,\"version\":\"0.1.0\",\"abi\":5,\"host\":\"vm\",\"os_pid\":%d,\"rank\":%d,"
           "\"job\":\"j\",\"cuda_device\":0,\"clock\":{\"realtime_offset_ns\":%s,\"offset_error_ns\":25}}",
           100 + rank, rank, offset);
  cl_digest_file_head(f, h, strlen(h));
}

/* n collectives of one communicator, 1 ms apart, each GPU-timed (names as given). */
static void rows(cl_dg_buf *f, int n, const char *func, const char *algo, const char *comm_name, int rank) {
  cl_digest *d = cl_digest_new();
  for (int i = 0; i < n; i++) {
    uint64_t t = 1000000000ull + (uint64_t)i * 1000000u + (uint64_t)rank * 7000u;
    cl_dg_coll c = {.comm_hash = 0xabcdef, .comm_name = comm_name, .rank = rank, .nranks = 2, .func = func,
                    .algo = algo, .proto = "SIMPLE", .seq = (uint64_t)i, .bytes = 4096, .nchannels = 2,
                    .enq_start = t, .enq_stop = t + 5000, .src = CL_DG_SRC_KERNEL_CH, .gpu_start = t + 9000,
                    .gpu_end = t + 30000 + (uint64_t)(i % 7) * 1000, .exposed_ns = -1, .tail_ch = i % 2};
    cl_digest_coll(d, &c);
  }
  cl_digest_take(d, f);
  cl_digest_free(d);
}

/* An R block of n rows whose 16 columns are each one run: a few dozen bytes claiming n rows. */
static void claiming_block(cl_dg_buf *f, uint64_t n) {
  cl_dg_buf b = {0};
  static const char *const strs[] = {"AllReduce", "RING", "SIMPLE", "world"};
  cl_dg_varint(&b, n);
  cl_dg_varint(&b, 4);
  for (int i = 0; i < 4; i++) { cl_dg_varint(&b, strlen(strs[i])); cl_dg_put(&b, strs[i], strlen(strs[i])); }
  cl_dg_varint(&b, 1);
  cl_dg_varint(&b, 0x1234); cl_dg_varint(&b, 3); cl_dg_varint(&b, cl_dg_zz(0)); cl_dg_varint(&b, cl_dg_zz(2));
  static const uint64_t vals[16] = {0, 0, 0, 1, 2, 2, 1024, 4, 0, 2000, 200, 1, 100, 500, 1, 1};
  for (int c = 0; c < 16; c++) { cl_dg_varint(&b, CL_DG_COL_RUNS); cl_dg_varint(&b, n); cl_dg_varint(&b, vals[c]); }
  cl_dg_block_stored(f, CL_DG_COLLS_RUNS, b.p, b.len);
  free(b.p);
}
static void count_row(const cl_dg_row *r, void *arg) { (void)r; ++*(long *)arg; }

/* Sixteen blocks of 262,144 claimed rows in 2.5 KB: before, report held every row (1.26 GB
 * at 1.5 KB); now the file is refused, named, and the other rank still reports. */
TL_TEST(rows_claimed_past_their_bytes_are_refused) {
  cl_dg_buf f = {0};
  head(&f, 1, "1700000000000000000");
  for (int k = 0; k < 16; k++) claiming_block(&f, CL_DG_BLOCK_ROWS);
  long n = 0;
  cl_dg_sink sink = {.coll = count_row};
  cl_info info;
  memset(&info, 0, sizeof info);
  int rc = cl_digest_scan_mem(f.p, f.len, &sink, &n, &info, 0);
  CHECK(rc != 0 && n == 0 && contains(info.msg, "rows"), "%zu bytes claiming %d rows: rc %d, %ld rows delivered: %s",
        f.len, 16 * (int)CL_DG_BLOCK_ROWS, rc, n, info.msg);
  CHECK((size_t)n <= f.len, "%ld rows from %zu bytes", n, f.len);
  cl_info_free(&info);
  char *d = fresh_dir(), p[600], a[1400], *out, *err;
  snprintf(p, sizeof p, "%s/r1.digest", d);
  spit(p, f.p, f.len);
  cl_dg_buf g = {0};
  head(&g, 0, "1700000000000000000");
  rows(&g, 20, "AllReduce", "RING", "world", 0);
  snprintf(p, sizeof p, "%s/r0.digest", d);
  spit(p, g.p, g.len);
  snprintf(a, sizeof a, "report %s --json", d);
  rc = h_cli_run(a, &out, &err);
  CHECK(rc == 0 && contains(err, "r1.digest") && contains(err, "rows") && contains(err, "skipped"),
        "report: rc %d: %s", rc, err);
  json_object *j = json_tokener_parse(out), *rs = h_json_get(j, "ranks");
  CHECK(rs && json_object_array_length(rs) == 1, "ranks: %.300s", out);
  if (j) json_object_put(j);
  free(out); free(err); free(f.p); free(g.p);
  h_rm_rf(d); free(d);
}

/* ---- names of any length and bytes ---- */
static int count_cat(json_object *evs, const char *cat, const char *name) {
  int k = 0;
  for (size_t i = 0; evs && i < json_object_array_length(evs); i++) {
    json_object *e = json_object_array_get_idx(evs, i), *c = h_json_get(e, "cat"), *nm = h_json_get(e, "name");
    k += c && !strcmp(json_object_get_string(c), cat) && (!name || (nm && !strcmp(json_object_get_string(nm), name)));
  }
  return k;
}
typedef struct { int slices; } pft_count;
static void on_pft(const pft_event *e, void *arg) { if (e->type == 1) ((pft_count *)arg)->slices++; }

/* Function, algorithm and communicator names of 255 bytes of '/' (json-c writes each as "\/")
 * and of control bytes (each "\u00XX"): every row is in the merged JSON (under its whole name)
 * and in the pftrace; before, rows whose escaped text passed a fixed buffer were dropped while
 * merge reported success. */
TL_TEST(long_escaped_names_keep_every_row) {
  char slash[256], ctl[256];
  memset(slash, '/', 255); slash[255] = 0;
  for (int i = 0; i < 255; i++) ctl[i] = (char)(1 + i % 31);
  ctl[255] = 0;
  const char *names[2] = {slash, ctl};
  for (int v = 0; v < 2; v++) {
    char *d = fresh_dir(), p[600], a[1400], o[700], *out, *err;
    for (int r = 0; r < 2; r++) {
      cl_dg_buf f = {0};
      head(&f, r, "1700000000000000000");
      rows(&f, 30, names[v], names[v], names[v], r);
      snprintf(p, sizeof p, "%s/r%d.digest", d, r);
      spit(p, f.p, f.len);
      free(f.p);
    }
    snprintf(o, sizeof o, "%s/m.json", d);
    snprintf(a, sizeof a, "merge %s/r0.digest %s/r1.digest -o %s", d, d, o);
    int rc = h_cli_run(a, &out, &err);
    CHECK(rc == 0, "merge (%s): rc %d: %s", v ? "control bytes" : "slashes", rc, err);
    free(out); free(err);
    json_object *m = json_object_from_file(o), *evs = h_json_get(m, "traceEvents");
    CHECK(m && count_cat(evs, "coll_gpu", names[v]) == 60 && count_cat(evs, "coll", names[v]) == 60,
          "%s: %d GPU and %d enqueue slices under the whole name, want 60 and 60", v ? "control bytes" : "slashes",
          count_cat(evs, "coll_gpu", names[v]), count_cat(evs, "coll", names[v]));
    if (m) json_object_put(m);
    snprintf(o, sizeof o, "%s/m.pftrace", d);
    snprintf(a, sizeof a, "merge %s/r0.digest %s/r1.digest -o %s", d, d, o);
    rc = h_cli_run(a, &out, &err);
    size_t n;
    char *b = h_read_file(o, &n);
    pft_count pc = {0};
    pft_check ck = {on_pft, &pc, 0, 0, 0, ""};
    CHECK(rc == 0 && b && pft_check_trace(&ck, (const uint8_t *)b, n) == 0 && pc.slices == 120,
          "pftrace: rc %d, %d slices (want 120): %s %s", rc, pc.slices, ck.err, err);
    free(b); free(out); free(err);
    h_rm_rf(d); free(d);
  }
}

/* ---- a header clock outside any Unix time ---- */
/* realtime_offset_ns of -9e18 overflowed the clock model (a +6,407,549,096 s offset, 1,601 s of
 * lateness): such a file is refused, named, and the report stands on the other ranks. */
TL_TEST(a_clock_offset_outside_unix_time_is_refused) {
  static const char *const bad[] = {"-9000000000000000000", "9223372036854775807", "-1", "1.5e18", "\"x\""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *d = fresh_dir(), p[600], a[1400], *out, *err;
    for (int r = 0; r < 3; r++) {
      cl_dg_buf f = {0};
      head(&f, r, r == 1 ? bad[i] : "1700000000000000000");
      rows(&f, 40, "AllReduce", "RING", "world", r);
      snprintf(p, sizeof p, "%s/r%d.digest", d, r);
      spit(p, f.p, f.len);
      free(f.p);
    }
    snprintf(a, sizeof a, "report %s --json", d);
    int rc = h_cli_run(a, &out, &err);
    json_object *j = json_tokener_parse(out), *rs = h_json_get(j, "ranks");
    CHECK(rc == 0 && contains(err, "r1.digest") && contains(err, "realtime_offset_ns") && rs &&
          json_object_array_length(rs) == 2, "offset %s: rc %d, %d rank(s): %s", bad[i], rc,
          rs ? (int)json_object_array_length(rs) : -1, err);
    if (j) json_object_put(j);
    free(out); free(err);
    h_rm_rf(d); free(d);
  }
}

TL_MAIN("tools/digest_bounds")
