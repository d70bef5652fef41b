/* test_digest.c: the per-collective digest (docs/digest.md). The real recordings of
 * test/data/real replayed with COMMLENS_OUTPUT=both: `commlens report` reads the digests into
 * the same answers as the traces (the straggler verdict, attribution, slow ranks and channels,
 * collective time, bandwidth), in fewer than 100 bytes per collective; and a digest keeps what
 * it can when damaged: a torn last block costs that block, a corrupt block only its rows. */
#include "harness.h"
#include "exporters/digest.h"
#include "common/digest_codec.h"
#include "tools/commlens/read/digest_read.h"
#include "synth_gen.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DATA "test/data/real"
static const char *const g_runs[] = {"nvlink", "socket", "twonode", "multicomm", "graphsocket", "h200x1-sharedgpu"};

/* Replays both ranks of recording `run` into dir (COMMLENS_OUTPUT=`output`); 0 or -1. */
static int replay_as(const char *run, const char *dir, const char *output) {
  const char *lib = h_lib_path(), *slash = strrchr(lib, '/');
  char cmd[6144], tool[1024], rec[2][512];
  snprintf(tool, sizeof tool, "%.*s%scommlens-replay", slash ? (int)(slash - lib) : 0, lib, slash ? "/" : "");
  for (int r = 0; r < 2; r++)
    snprintf(rec[r], sizeof rec[r], DATA "/nccl2.28.3-%s%s-r%d.rec.gz", strncmp(run, "h200x1", 6) ? "h200x2-" : "", run, r);
  /* COMMLENS_EXIT_WAIT_S: a loaded CI machine may starve the plugin's nice-19 writer for long;
   * the 30 s bound a job's exit needs would end these traces early (the files were missing once,
   * both replays exiting 0, under two CI runs and a busy loop). What the plugin said goes to
   * replay-rN.log beside the files. */
  snprintf(cmd, sizeof cmd,
           "mkdir -p '%s' && export COMMLENS_DIR='%s' COMMLENS_OUTPUT=%s COMMLENS_CUPTI=0 COMMLENS_SUMMARY=off "
           "COMMLENS_GZIP=0 COMMLENS_EXIT_WAIT_S=600; unset COMMLENS_RECORD COMMLENS_WINDOW; "
           "RANK=0 '%s' --virtual-clock '%s' '%s' >'%s/replay-r0.log' 2>&1 & a=$!; "
           "RANK=1 '%s' --virtual-clock '%s' '%s' >'%s/replay-r1.log' 2>&1; b=$?; wait $a && [ $b = 0 ]",
           dir, dir, output, tool, rec[0], lib, dir, tool, rec[1], lib, dir);
  int rc = system(cmd);
  CHECK(rc == 0, "%s: replay failed (%d): %s", run, rc, cmd);
  return rc == 0 ? 0 : -1;
}

static int replay(const char *run, const char *dir) { return replay_as(run, dir, "both"); }

/* report --json over the files of dir ending with `suffix`. */
static json_object *report(const char *dir, const char *suffix) {
  char args[1200];
  snprintf(args, sizeof args, "report --json '%s'/*%s 2>/dev/null", dir, suffix);
  int st;
  char *out = h_run_cli(args, &st);
  CHECK(st == 0, "report %s*%s exited %d", dir, suffix, st);
  json_object *j = out ? json_tokener_parse(out) : NULL;
  CHECK(j, "report --json of %s*%s does not parse", dir, suffix);
  free(out);
  return j;
}

/* The verdict's channel part is the trace's alone: the channel verdict needs each instance's
 * channel ends, which a digest does not keep (it says so); everything else must be equal. */
static void same(const char *run, json_object *t, json_object *d, const char *key) {
  json_object *x = NULL, *y = NULL;
  json_object_deep_copy(h_json_get(t, key), &x, NULL);
  json_object_deep_copy(h_json_get(d, key), &y, NULL);
  if (!strcmp(key, "verdict")) { json_object_object_del(x, "channels"); json_object_object_del(y, "channels"); }
  const char *a = json_object_to_json_string_ext(x, JSON_C_TO_STRING_PLAIN);
  const char *b = json_object_to_json_string_ext(y, JSON_C_TO_STRING_PLAIN);
  CHECK(x && !strcmp(a, b), "%s: \"%s\" differs:\n  trace:  %.600s\n  digest: %.600s", run, key, a, b);
  json_object_put(x); json_object_put(y);
}

/* merge of the traces and of the digests: the same CSV table, and JSON with the same GPU spans
 * and cross-rank flows (the digest's is a subset of the trace's events otherwise). */
static void count_cats(const char *path, int *gpu, int *flows) {
  json_object *j = json_object_from_file(path), *ev = h_json_get(j, "traceEvents");
  *gpu = *flows = -1;
  CHECK(ev && json_object_is_type(ev, json_type_array), "%s: no traceEvents", path);
  if (ev) {
    *gpu = *flows = 0;
    for (size_t i = 0; i < json_object_array_length(ev); i++) {
      const char *cat = json_object_get_string(h_json_get(json_object_array_get_idx(ev, i), "cat"));
      if (cat && !strcmp(cat, "coll_gpu")) ++*gpu;
      if (cat && !strcmp(cat, "coll_instance")) ++*flows;
    }
  }
  json_object_put(j);
}
static void merges_agree(const char *run, const char *dir) {
  static const char *const kinds[] = {".trace.json", ".digest"};
  char args[1200], out[2][2][500];
  int st;
  for (int k = 0; k < 2; k++)
    for (int f = 0; f < 2; f++) {
      snprintf(out[k][f], sizeof out[k][f], "%s/merged-%d.%s", dir, k, f ? "csv" : "json");
      snprintf(args, sizeof args, "merge '%s'/*%s -o '%s' 2>/dev/null", dir, kinds[k], out[k][f]);
      free(h_run_cli(args, &st));
      CHECK(st == 0, "%s: %s exited %d", run, args, st);
    }
  size_t la, lb;
  char *a = h_read_file(out[0][1], &la), *b = h_read_file(out[1][1], &lb);
  CHECK(a && b && la == lb && !memcmp(a, b, la) && la > 200, "%s: the CSV of the digests differs from the traces'", run);
  free(a); free(b);
  int g[2], fl[2];
  count_cats(out[0][0], &g[0], &fl[0]);
  count_cats(out[1][0], &g[1], &fl[1]);
  CHECK(g[0] == g[1] && fl[0] == fl[1] && g[1] > 0 && fl[1] > 0, "%s: merged JSON: %d/%d GPU spans, %d/%d flows (trace/digest)",
        run, g[0], g[1], fl[0], fl[1]);
}

static void count_row(const cl_dg_row *r, void *arg) { (void)r; ++*(long *)arg; }

TL_TEST(report_from_digests_equals_report_from_traces) {
  char base[256];
  h_fresh_dir(base, sizeof base);
  REQUIRE(base[0], "no temp dir");
  for (size_t i = 0; i < sizeof g_runs / sizeof g_runs[0]; i++) {
    char dir[400];
    snprintf(dir, sizeof dir, "%s/%s", base, g_runs[i]);
    if (replay(g_runs[i], dir)) continue;
    json_object *t = report(dir, ".trace.json"), *d = report(dir, ".digest");
    if (!t || !d) { json_object_put(t); json_object_put(d); continue; }
    static const char *const keys[] = {"verdict", "clock_model", "steps", "instances_matched", "attribution",
                                       "slow_ranks", "collective_time", "slow_channels", "low_bandwidth"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) same(g_runs[i], t, d, keys[k]);
    CHECK(json_object_get_int(h_json_get(d, "instances_matched")) > 0, "%s: nothing matched", g_runs[i]);
    json_object_put(t); json_object_put(d);
    merges_agree(g_runs[i], dir);
    /* bytes per collective on disk, header and stats included */
    char *paths[4];
    int n = h_find_files(dir, ".digest", paths, 4);
    CHECK(n == 2, "%s: %d digests", g_runs[i], n);
    for (int k = 0; k < n; k++) {
      struct stat sb;
      cl_info info;
      long rows = 0;
      cl_dg_sink sink = {.coll = count_row};
      CHECK(cl_digest_scan(paths[k], &sink, &rows, &info, 0) == 0 && !info.bad && !info.truncated && info.final,
            "%s: %s: %s", g_runs[i], paths[k], info.msg);
      if (stat(paths[k], &sb) == 0 && rows) {
        printf("  %s: %s: %ld collectives in %lld bytes: %.1f B per collective\n", g_runs[i], strrchr(paths[k], '/') + 1,
               rows, (long long)sb.st_size, (double)sb.st_size / (double)rows);
        CHECK(sb.st_size <= 100 * rows, "%s: %.1f bytes per collective", g_runs[i], (double)sb.st_size / (double)rows);
      }
      cl_info_free(&info);
      free(paths[k]);
    }
  }
  if (!tl_cur_failed) h_rm_rf(base);
  else fprintf(stderr, "  kept %s\n", base);
}

/* The KernelCh rows of two communicators: asked for alternately (the remembered communicator's
 * channels change at every call) and grouped by communicator (they stay), after the same first
 * calls, make the same channel block: each (communicator, channel) got its own counts. */
static void chan_call(cl_digest *d, int k, int ch, int i) {
  static const uint64_t comm[2] = {0x1111, 0x2222};
  cl_digest_chan(d, comm[k], ch, 1000 + (uint64_t)((i * 37 + ch * 11 + k * 5) % 97), i);
}
static void chan_calls(cl_digest *d, int grouped, cl_dg_buf *out) {
  for (int k = 0; k < 2; k++)
    for (int ch = 0; ch < 4; ch++) chan_call(d, k, ch, 0);
  if (grouped) {
    for (int k = 0; k < 2; k++)
      for (int i = 1; i < 40; i++)
        for (int ch = 0; ch < 4; ch++) chan_call(d, k, ch, i);
  } else {
    for (int i = 1; i < 40; i++)
      for (int ch = 0; ch < 4; ch++)
        for (int k = 0; k < 2; k++) chan_call(d, k, ch, i);
  }
  REQUIRE(cl_digest_take(d, out) == 0, "take");
}
TL_TEST(kernel_channel_rows_keep_each_communicators_counts) {
  cl_digest *a = cl_digest_new(), *b = cl_digest_new();
  REQUIRE(a && b, "out of memory");
  cl_dg_buf x = {0}, y = {0};
  chan_calls(a, 0, &x);
  chan_calls(b, 1, &y);
  CHECK(x.len > 40 && x.len == y.len && !memcmp(x.p, y.p, x.len), "channel blocks differ: %zu and %zu bytes", x.len, y.len);
  free(x.p); free(y.p);
  cl_digest_free(a); cl_digest_free(b);
}

/* COMMLENS_OUTPUT=digest formats no JSON: no trace file, and the digest's stats count as events
 * exactly its own rows (the count adds the Chrome-trace events formatted, which must be none). */
TL_TEST(digest_mode_formats_no_trace) {
  char base[256], dir[300];
  h_fresh_dir(base, sizeof base);
  snprintf(dir, sizeof dir, "%s/socket", base);
  REQUIRE(replay_as("socket", dir, "digest") == 0, "replay");
  char *paths[4];
  CHECK(h_find_traces(dir, paths, 4) == 0, "a trace was written in digest mode");
  int n = h_find_files(dir, ".digest", paths, 4);
  CHECK(n == 2, "%d digests", n);
  for (int k = 0; k < n; k++) {
    cl_info info;
    CHECK(cl_digest_scan(paths[k], NULL, NULL, &info, 0) == 0 && info.has_stats && info.final && info.n_events > 100 &&
          info.st_events == info.n_events, "%s: %lld rows, stats say %lld events (%s)", paths[k], (long long)info.n_events,
          (long long)info.st_events, info.msg);
    cl_info_free(&info);
    free(paths[k]);
  }
  if (!tl_cur_failed) h_rm_rf(base);
}

/* A digest of three collectives blocks (the plugin's encoder, exporters/digest.c): cut inside
 * its last block, then with a byte flipped inside the middle block, then in its header. */
TL_TEST(a_damaged_digest_keeps_its_whole_blocks) {
  cl_dg_buf f = {0};
  const char *hdr = "{\"format\":1,\"rank\":3,\"host\":\"h\",\"job\":\"j\",\"clock\":{\"realtime_offset_ns\":1000}}";
  REQUIRE(cl_digest_file_head(&f, hdr, strlen(hdr)) == 0, "head");
  cl_digest *dg = cl_digest_new();
  size_t at[3];
  for (int b = 0; b < 3; b++) {
    for (int i = 0; i < 10; i++) {
      cl_dg_coll c = {.comm_hash = 0xabc, .comm_name = "c", .rank = 3, .nranks = 4, .func = "AllReduce", .algo = "Ring",
                      .proto = "Simple", .seq = (uint64_t)(b * 10 + i), .bytes = 4096, .nchannels = 2,
                      .enq_start = 5000000ull * (uint64_t)(b * 10 + i), .enq_stop = 5000000ull * (uint64_t)(b * 10 + i) + 900,
                      .src = CL_DG_SRC_KERNEL_CH, .gpu_start = 5000000ull * (uint64_t)(b * 10 + i) + 2000,
                      .gpu_end = 5000000ull * (uint64_t)(b * 10 + i) + 9000, .exposed_ns = -1, .tail_ch = 1};
      cl_digest_coll(dg, &c);
    }
    at[b] = f.len;
    REQUIRE(cl_digest_take(dg, &f) == 0, "take");
  }
  cl_digest_free(dg);
  REQUIRE(!f.oom, "oom");
  long all = 0, rows = 0;
  cl_dg_sink sink = {.coll = count_row};
  cl_info info;
  memset(&info, 0, sizeof info);
  CHECK(cl_digest_scan_mem(f.p, f.len, &sink, &all, &info, 0) == 0 && !info.bad && !info.truncated && all == 30 &&
        info.rank == 3, "whole: %ld rows, rank %d (%s)", all, info.rank, info.msg);
  cl_info_free(&info);
  /* torn: the last block loses its last byte */
  memset(&info, 0, sizeof info);
  CHECK(cl_digest_scan_mem(f.p, f.len - 1, &sink, &rows, &info, 0) == 0 && info.truncated && !info.bad && rows == 20,
        "torn: truncated %d bad %d rows %ld (%s)", info.truncated, info.bad, rows, info.msg);
  cl_info_free(&info);
  /* a byte flipped in the middle block: its 10 rows are lost, counted; the others kept */
  f.p[at[1] + CL_DG_BLOCK_HEAD + 3] ^= 0x40;
  rows = 0;
  memset(&info, 0, sizeof info);
  CHECK(cl_digest_scan_mem(f.p, f.len, &sink, &rows, &info, 0) == 0 && info.bad && info.n_skipped == 1 && rows == 20,
        "flipped: bad %d skipped %lld rows %ld (%s)", info.bad, (long long)info.n_skipped, rows, info.msg);
  cl_info_free(&info);
  /* and the header's: no digest at all, said so */
  f.p[CL_DG_FILE_HEAD + CL_DG_BLOCK_HEAD + 2] ^= 0x40;
  memset(&info, 0, sizeof info);
  CHECK(cl_digest_scan_mem(f.p, f.len, &sink, &rows, &info, 0) == -1 && strstr(info.msg, "header"), "header: %s", info.msg);
  cl_info_free(&info);
  free(f.p);
}

/* Names in the digest: NCCL's static ones found by address (cl_dg_coll.static_names), two
 * addresses with one text one string, and a name lent for one call compared by its text
 * (the same buffer holds another name next). Each row decodes with its own names. */
typedef struct { long n; char func[8][16], proto[8][16]; } names_seen;
static void see_names(const cl_dg_row *r, void *arg) {
  names_seen *v = arg;
  if (v->n < 8) {
    snprintf(v->func[v->n], sizeof v->func[0], "%s", r->func);
    snprintf(v->proto[v->n], sizeof v->proto[0], "%s", r->proto);
  }
  v->n++;
}
TL_TEST(digest_names_static_by_address_lent_by_text) {
  static const char ar1[] = "AllReduce", ar2[] = "AllReduce", ll[] = "LL", simple[] = "Simple";
  cl_dg_buf f = {0};
  const char *hdr = "{\"format\":1,\"rank\":0,\"host\":\"h\",\"job\":\"j\",\"clock\":{\"realtime_offset_ns\":0}}";
  REQUIRE(cl_digest_file_head(&f, hdr, strlen(hdr)) == 0, "head");
  cl_digest *dg = cl_digest_new();
  char lent[16];
  const char *want_func[6] = {"AllReduce", "AllReduce", "Broadcast", "AllReduce", "AllGather", "AllReduce"};
  const char *want_proto[6] = {"LL", "Simple", "LL", "LL", "Simple", "Simple"};
  for (int i = 0; i < 6; i++) {
    int is_static = i == 0 || i == 5;
    if (!is_static) snprintf(lent, sizeof lent, "%s", want_func[i]);
    cl_dg_coll c = {.comm_hash = 0xabc, .comm_name = "c", .rank = 0, .nranks = 2,
                    .func = is_static ? (i == 5 ? ar2 : ar1) : lent, .algo = "Ring",
                    .proto = i == 1 || i == 4 || i == 5 ? simple : ll, .seq = (uint64_t)i, .bytes = 4096,
                    .nchannels = 1, .enq_start = 1000000ull * (uint64_t)(i + 1), .enq_stop = 1000000ull * (uint64_t)(i + 1) + 500,
                    .exposed_ns = -1, .tail_ch = -1, .static_names = is_static};
    cl_digest_coll(dg, &c);
  }
  REQUIRE(cl_digest_take(dg, &f) == 0, "take");
  cl_digest_free(dg);
  names_seen v = {0};
  cl_dg_sink sink = {.coll = see_names};
  cl_info info;
  memset(&info, 0, sizeof info);
  CHECK(cl_digest_scan_mem(f.p, f.len, &sink, &v, &info, 0) == 0 && v.n == 6, "%ld rows (%s)", v.n, info.msg);
  for (int i = 0; i < 6 && i < v.n; i++)
    CHECK(!strcmp(v.func[i], want_func[i]) && !strcmp(v.proto[i], want_proto[i]), "row %d: %s %s (want %s %s)", i,
          v.func[i], v.proto[i], want_func[i], want_proto[i]);
  cl_info_free(&info);
  free(f.p);
}

/* Each column is written raw or in runs, whichever is shorter for its block (exporters/digest.c):
 * blocks whose patterns change from one to the next (constant, alternating, every row new, runs
 * of varied length), in every column, decode to their rows. */
typedef struct { long n; cl_dg_row r[400]; char names[400][3][16]; } rows_seen;
static void keep_row(const cl_dg_row *r, void *arg) {   /* the names live as long as the call */
  rows_seen *v = arg;
  if (v->n < 400) {
    v->r[v->n] = *r;
    const char *nm[3] = {r->func, r->algo, r->proto};
    for (int k = 0; k < 3; k++) snprintf(v->names[v->n][k], sizeof v->names[0][0], "%s", nm[k] ? nm[k] : "");
  }
  v->n++;
}
/* Row i of block b: pattern (b + field) % 4 in each field, so that every field changes its
 * pattern from block to block. */
static uint64_t pat(int b, int field, int i) {
  switch ((b + field) % 4) {
  case 0: return 7;                                   /* constant */
  case 1: return (uint64_t)(i & 1) * 3 + 1;           /* alternating */
  case 2: return (uint64_t)i * 977 + (uint64_t)field; /* every row new */
  default: {                                          /* runs growing from 1 to 5 or so */
    uint64_t r = 0;
    while ((r + 1) * (r + 1) <= (uint64_t)i * 8) r++;
    return r;
  }
  }
}
static cl_dg_coll pat_row(int b, int i, uint64_t *enq) {
  static const char *const fn[4] = {"AllReduce", "AllGather", "Broadcast", "ReduceScatter"};
  *enq += 1000 + pat(b, 9, i);
  return (cl_dg_coll){.comm_hash = 0x100 + pat(b, 1, i) % 3, .comm_name = "c", .rank = 0, .nranks = 4,
                      .p2p = (int)(pat(b, 0, i) & 1), .func = fn[pat(b, 2, i) % 4], .algo = fn[pat(b, 3, i) % 4],
                      .proto = fn[pat(b, 4, i) % 4], .seq = 50 + pat(b, 5, i), .bytes = pat(b, 6, i) << 10,
                      .nchannels = (int)(pat(b, 7, i) % 33), .peer = (int)(pat(b, 8, i) % 9) - 1, .enq_start = *enq,
                      .enq_stop = *enq + pat(b, 10, i), .src = (int)(pat(b, 11, i) % 5), .gpu_start = *enq + 50 + pat(b, 12, i),
                      .gpu_end = *enq + 50 + pat(b, 12, i) + pat(b, 13, i),
                      .exposed_ns = pat(b, 14, i) % 3 == 0 ? -1 : (int64_t)pat(b, 14, i), .tail_ch = (int)(pat(b, 15, i) % 40) - 1,
                      .static_names = 1};
}
TL_TEST(digest_columns_decode_as_their_patterns_change) {
  const char *hdr = "{\"format\":1,\"rank\":0,\"host\":\"h\",\"job\":\"j\",\"clock\":{\"realtime_offset_ns\":0}}";
  cl_digest *dg = cl_digest_new();
  REQUIRE(dg, "digest");
  uint64_t enq = 1000000;
  for (int b = 0; b < 8; b++) {
    int n = 40 + 37 * b;
    cl_dg_buf f = {0};
    REQUIRE(cl_digest_file_head(&f, hdr, strlen(hdr)) == 0, "head");
    uint64_t enq0 = enq;
    for (int i = 0; i < n; i++) { cl_dg_coll c = pat_row(b, i, &enq); cl_digest_coll(dg, &c); }
    REQUIRE(cl_digest_take(dg, &f) == 0, "take %d", b);
    static rows_seen v;
    v.n = 0;
    cl_dg_sink sink = {.coll = keep_row};
    cl_info info;
    memset(&info, 0, sizeof info);
    CHECK(cl_digest_scan_mem(f.p, f.len, &sink, &v, &info, 0) == 0 && !info.bad && v.n == n, "block %d: %ld of %d rows, bad %d (%s)",
          b, v.n, n, info.bad, info.msg);
    enq = enq0;
    for (int i = 0; i < n && i < v.n; i++) {
      cl_dg_coll c = pat_row(b, i, &enq);
      const cl_dg_row *r = &v.r[i];
      /* a row with no GPU source reads with no GPU span (the reader's rule) */
      int ok = r->comm == c.comm_hash && r->p2p == c.p2p && !strcmp(v.names[i][0], c.func) &&
               !strcmp(v.names[i][1], c.algo) && !strcmp(v.names[i][2], c.proto) && r->seq == (int64_t)c.seq &&
               r->bytes == (int64_t)c.bytes && r->nchannels == c.nchannels && r->peer == c.peer &&
               r->enq_start == (int64_t)c.enq_start && r->enq_end == (int64_t)c.enq_stop && r->src == c.src &&
               (!c.src || (r->gpu_start == (int64_t)c.gpu_start && r->gpu_end == (int64_t)c.gpu_end)) &&
               r->exposed_ns == (c.exposed_ns < 0 ? -1 : c.exposed_ns) && r->tail_ch == c.tail_ch;
      CHECK(ok, "block %d row %d decodes to other values (seq %lld/%llu, bytes %lld/%llu, tail %d/%d)", b, i,
            (long long)r->seq, (unsigned long long)c.seq, (long long)r->bytes, (unsigned long long)c.bytes, r->tail_ch, c.tail_ch);
      if (!ok) break;
    }
    cl_info_free(&info);
    free(f.p);
  }
  cl_digest_free(dg);
}

/* Format 1 (C blocks, every column raw) still reads: a digest the plugin wrote before format 2.
 * And an R block is whole or damage: runs that fill the column exactly, else the block is
 * skipped and counted, never read past. Format 2's R blocks (16 columns) read as format 3's
 * (17: the timers column last), whose timers value is 0 or 1. */
static void r_block(cl_dg_buf *f, uint64_t run_of_rows, int ncols, uint64_t timers) {
  cl_dg_buf b = {0};
  cl_dg_varint(&b, 3);                                   /* rows */
  const char *strs[] = {"", "AllReduce", "c"};
  cl_dg_varint(&b, 3);
  for (int i = 0; i < 3; i++) { cl_dg_varint(&b, strlen(strs[i])); cl_dg_put(&b, strs[i], strlen(strs[i])); }
  cl_dg_varint(&b, 1);                                   /* one communicator: hash, name, rank, nranks */
  cl_dg_varint(&b, 0xabc); cl_dg_varint(&b, 2); cl_dg_varint(&b, cl_dg_zz(0)); cl_dg_varint(&b, cl_dg_zz(2));
  for (int col = 0; col < ncols; col++) {
    if (col == 2) { cl_dg_varint(&b, CL_DG_COL_RUNS); cl_dg_varint(&b, run_of_rows); cl_dg_varint(&b, 1); continue; }
    cl_dg_varint(&b, CL_DG_COL_RAW);                    /* func above: "AllReduce" in one run */
    for (int i = 0; i < 3; i++)
      cl_dg_varint(&b, col == 9 ? cl_dg_zz(1000) : col == 11 ? CL_DG_SRC_KERNEL_CH : col == 16 ? timers : 0);
  }
  cl_dg_block(f, CL_DG_COLLS_RUNS, b.p, b.len);
  free(b.p);
}

TL_TEST(format_1_reads_and_runs_must_fill_their_column) {
  long rows = 0;
  cl_dg_sink sink = {.coll = count_row};
  cl_info info;
  memset(&info, 0, sizeof info);
  CHECK(cl_digest_scan("fuzz/corpus/digest/real0.digest", &sink, &rows, &info, 0) == 0 && !info.bad && rows > 10,
        "a format-1 digest: %ld rows, bad %d (%s)", rows, info.bad, info.msg);
  cl_info_free(&info);
  const char *hdr = "{\"format\":1,\"rank\":1,\"host\":\"h\",\"job\":\"j\",\"clock\":{\"realtime_offset_ns\":0}}";
  for (uint64_t run = 2; run <= 4; run++) {               /* 3 fills the column; 2 and 4 do not */
    cl_dg_buf f = {0};
    REQUIRE(cl_digest_file_head(&f, hdr, strlen(hdr)) == 0, "head");
    r_block(&f, run, 17, 1);
    rows = 0;
    memset(&info, 0, sizeof info);
    CHECK(cl_digest_scan_mem(f.p, f.len, &sink, &rows, &info, 0) == 0 && rows == (run == 3 ? 3 : 0) &&
          info.bad == (run != 3), "a run of %llu for 3 rows: %ld rows, bad %d", (unsigned long long)run, rows, info.bad);
    cl_info_free(&info);
    free(f.p);
  }
  /* format 2: its 16 columns read, every row timed; format 3 with a timers value past 1: damage */
  for (int v = 2; v <= 3; v++) {
    cl_dg_buf f = {0};
    uint8_t head[CL_DG_FILE_HEAD] = {0};
    memcpy(head, CL_DG_MAGIC, CL_DG_MAGIC_LEN);
    head[CL_DG_MAGIC_LEN] = (uint8_t)v;
    cl_dg_put(&f, head, sizeof head);
    REQUIRE(cl_dg_block(&f, CL_DG_HEADER, (const uint8_t *)hdr, strlen(hdr)) == 0, "header block");
    r_block(&f, 3, v == 2 ? 16 : 17, 2);
    rows = 0;
    memset(&info, 0, sizeof info);
    CHECK(cl_digest_scan_mem(f.p, f.len, &sink, &rows, &info, 0) == 0 && rows == (v == 2 ? 3 : 0) && info.bad == (v == 3),
          "format %d: %ld rows, bad %d", v, rows, info.bad);
    cl_info_free(&info);
    free(f.p);
  }
}

/* A synthetic 64-rank job on 8 hosts (test/tools/synth_gen.h) with a planted straggler (rank
 * 21, 3 ms late, beyond the cross-host clock error) and a planted slow channel (rank 32's
 * channel 3, twice the work, waiting on its GPU), written as traces and as digests: the report
 * names both from either, and says the same from both (late on every third collective: a
 * rank late on all of them is indistinguishable from its host's clock offset). bench/digest_scale.sh runs it at 4,096. */
TL_TEST(sixty_four_ranks_name_the_planted_straggler_and_slow_channel) {
  char base[256], dir[2][300];
  h_fresh_dir(base, sizeof base);
  REQUIRE(base[0], "no temp dir");
  synth_cfg c;
  synth_defaults(&c);
  c.nranks = 64; c.ncoll = 60; c.nch = 4; c.nsteps = 2; c.nvtx_every = 0; c.period_ns = 10000000;
  c.late_rank = 21; c.late_ns = 3000000; c.late_every = 3; c.slow_rank = 32; c.slow_ch = 3; c.slow_factor = 2.0;
  for (int k = 0; k < 2; k++) {
    snprintf(dir[k], sizeof dir[k], "%s/%s", base, k ? "digest" : "trace");
    REQUIRE(mkdir(dir[k], 0700) == 0, "mkdir %s", dir[k]);
    c.dir = dir[k];
    for (int r = 0; r < c.nranks; r++) {
      char path[600];
      REQUIRE((k ? synth_write_rank_digest : synth_write_rank)(&c, r, path, sizeof path) == 0, "writing %s", path);
    }
  }
  json_object *t = report(dir[0], ".trace.json"), *d = report(dir[1], ".digest");
  REQUIRE(t && d, "reports");
  static const char *const keys[] = {"verdict", "clock_model", "steps", "instances_matched", "attribution",
                                     "slow_ranks", "collective_time", "slow_channels", "low_bandwidth"};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) same("synthetic 64 ranks", t, d, keys[k]);
  json_object *v = h_json_get(d, "verdict"), *st = h_json_get(v, "stragglers");
  CHECK(st && json_object_array_length(st) == 1 && json_object_get_int(h_json_get(json_object_array_get_idx(st, 0), "rank")) == 21,
        "verdict: %s", json_object_to_json_string(v));
  json_object *ch = h_json_get(d, "slow_channels"), *c0 = ch ? json_object_array_get_idx(ch, 0) : NULL;
  CHECK(c0 && json_object_get_int(h_json_get(c0, "rank")) == 32 && json_object_get_int(h_json_get(c0, "channel")) == 3,
        "slow channel: %s", c0 ? json_object_to_json_string(c0) : "none");
  json_object_put(t); json_object_put(d);
  if (!tl_cur_failed) h_rm_rf(base);
  else fprintf(stderr, "  kept %s\n", base);
}

int main(int argc, char **argv) { return h_main("tools/digest", argc, argv); }
