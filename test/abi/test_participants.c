/* test_participants.c: one process driving several GPUs, through the exported ABI as NCCL
 * drives it: each communicator's init runs with its GPU current (the stand-in libcuda,
 * test/fakes/fake_cuda.c), and every (communicator rank, GPU) participant must get its own
 * trace file, world rank, GPU and events, whatever the layout: one thread for all GPUs
 * (ncclCommInitAll, nccl-tests -g N, JAX), a thread per GPU, sub-communicators of different
 * sizes, a launcher's RANK or COMMLENS_RANK. `commlens report` must count participants. */
#include "harness.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCOLL 6
#define HASH 0xfeed0001ull

typedef struct { int dev; void *ctx; } gpu;

/* Inits a communicator of `nranks` with `rank` on GPU `dev` (made current first). */
static void init_on(h_plugin *p, gpu *g, int dev, uint64_t hash, int nranks, int rank) {
  REQUIRE(h_cuda_set_device(NULL, dev) == 0, "no stand-in libcuda");
  g->dev = dev;
  h_comm_info info = {hash, "", 1, nranks, rank};
  REQUIRE(h_init(p, &g->ctx, &info) == 0, "init on GPU %d", dev);
}

/* ncclCommInitAll + N collectives issued by one thread for every GPU (nccl-tests -g N). */
static void one_thread(int ngpu) {
  h_plugin p;
  REQUIRE(h_open(&p, NULL, 5) == 0, "open");
  gpu g[4];
  for (int d = 0; d < ngpu; d++) init_on(&p, &g[d], d, HASH, ngpu, d);
  h_opts o = {.nchannels = 2, .network = 1, .same_thread_proxy = 1};
  for (int s = 0; s < NCOLL; s++)
    for (int d = 0; d < ngpu; d++) h_drive_coll(&p, g[d].ctx, &o, (uint64_t)s, NULL);
  for (int d = 0; d < ngpu; d++) h_finalize(&p, g[d].ctx);
  h_close(&p);
}
H_CHILD(one_thread_2gpu) { one_thread(2); }
H_CHILD(one_thread_4gpu) { one_thread(4); }

/* A thread per GPU (nccl-tests -t N -g 1): each makes its GPU current and inits its rank. */
static h_plugin g_plug;
static void *gpu_thread(void *arg) {
  gpu *g = arg;
  init_on(&g_plug, g, g->dev, HASH, 2, g->dev);
  h_opts o = {.nchannels = 2};
  for (int s = 0; s < NCOLL; s++) h_drive_coll(&g_plug, g->ctx, &o, (uint64_t)s, NULL);
  return NULL;
}
H_CHILD(thread_per_gpu) {
  REQUIRE(h_open(&g_plug, NULL, 5) == 0, "open");
  gpu g[2] = {{.dev = 0}, {.dev = 1}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, gpu_thread, &g[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 2; i++) h_finalize(&g_plug, g[i].ctx);
  h_close(&g_plug);
}

/* Tensor/data parallel sub-communicators on two GPUs of a 4-GPU job: GPU 0 is world rank 2
 * (TP pair rank 0, DP pair rank 1), GPU 1 world rank 3: the world communicator comes last. */
H_CHILD(sub_communicators) {
  h_plugin p;
  REQUIRE(h_open(&p, NULL, 5) == 0, "open");
  gpu tp[2], dp[2], world[2];
  for (int d = 0; d < 2; d++) init_on(&p, &tp[d], d, 0x7000ull, 2, d);
  for (int d = 0; d < 2; d++) init_on(&p, &dp[d], d, 0xd000ull + (uint64_t)d, 2, 1);
  for (int d = 0; d < 2; d++) init_on(&p, &world[d], d, 0x3000ull, 4, 2 + d);
  h_opts o = {.nchannels = 1};
  for (int d = 0; d < 2; d++) {
    h_drive_coll(&p, tp[d].ctx, &o, 0, NULL);
    h_drive_coll(&p, dp[d].ctx, &o, 0, NULL);
    h_drive_coll(&p, world[d].ctx, &o, 0, NULL);
  }
  for (int d = 0; d < 2; d++) { h_finalize(&p, tp[d].ctx); h_finalize(&p, dp[d].ctx); h_finalize(&p, world[d].ctx); }
  h_close(&p);
}

/* The trace of world rank `rank` in dir, loaded; -1 (and a failed CHECK) if absent. */
static int load_rank(const char *dir, int rank, tr_trace *t, int ntraces) {
  char *paths[16];
  int n = h_find_traces(dir, paths, 16);
  CHECK(n == ntraces, "%d trace files in %s, want %d (one per GPU)", n, dir, ntraces);
  int found = -1;
  for (int i = 0; i < n; i++) {
    char err[256];
    tr_trace x;
    if (found < 0 && tr_load(&x, paths[i], err, sizeof err) == 0) {
      int64_t r;
      if (tr_header_i64(&x, "rank", &r) == 0 && r == rank) { *t = x; found = i; }
      else tr_free(&x);
    }
    free(paths[i]);
  }
  CHECK(found >= 0, "no trace of rank %d in %s", rank, dir);
  return found >= 0 ? 0 : -1;
}

/* Every slice of the trace is its own GPU's: communicator slices carry the participant's
 * communicator rank `comm_rank` (of the communicator `hash`, 0 = any). */
static void check_own_events(const tr_trace *t, int comm_rank, uint64_t hash, long want_colls) {
  long colls = 0, foreign = 0;
  for (size_t i = 0; i < t->n; i++) {
    json_object *ev = tr_event(t, i);
    const char *cat = tr_cat(ev);
    if (tr_ph(ev) != 'X' || !cat) continue;
    const char *comm = tr_arg_str(ev, "comm");
    int64_t r;
    if (hash && comm && strtoull(comm, NULL, 16) != hash) continue;
    if (tr_arg_i64(ev, "rank", &r) == 0 && r != comm_rank) foreign++;
    if (!strcmp(cat, "coll")) colls++;
  }
  CHECK(foreign == 0, "%ld slices of another GPU's rank in the trace of comm rank %d", foreign, comm_rank);
  CHECK(colls == want_colls, "%ld collectives in the trace of comm rank %d, want %ld", colls, comm_rank, want_colls);
  char msg[256];
  CHECK(tr_check_tracks(t, msg, sizeof msg) == 0, "tracks: %s", msg);
}

static void check_header(const tr_trace *t, int rank, int dev, const char *source, int gpus) {
  int64_t r = -1, d = -2, g = -1;
  tr_header_i64(t, "rank", &r);
  tr_header_i64(t, "cuda_device", &d);
  tr_stats_i64(t, "process_gpus", &g);
  json_object *src = h_json_get(t->header, "rank_source");
  CHECK(r == rank && d == dev, "header: rank %lld GPU %lld, want rank %d GPU %d", (long long)r, (long long)d, rank, dev);
  CHECK(src && !strcmp(json_object_get_string(src), source), "rank %d: rank_source %s, want %s", rank,
        src ? json_object_get_string(src) : "(none)", source);
  CHECK(g == gpus, "rank %d: process_gpus %lld, want %d", rank, (long long)g, gpus);
}

/* Runs a child case in a fresh directory with `extra` environment; returns the directory. */
static const char *run(const char *name, const char *const *extra, char *dir, size_t n) {
  char direnv[300];
  h_fresh_dir(dir, n);
  snprintf(direnv, sizeof direnv, "COMMLENS_DIR=%s", dir);
  const char *env[8] = {direnv, "COMMLENS_SUMMARY=off", "COMMLENS_EVENTS=full"};
  int k = 3;
  for (int i = 0; extra && extra[i] && k < 7; i++) env[k++] = extra[i];
  env[k] = NULL;
  int rc = h_spawn(name, env);
  CHECK(rc == 0, "case %s exited %d (dir %s)", name, rc, dir);
  return dir;
}

/* report --json counts `n` ranks, 0..n-1, and matches every instance on every rank. */
static void check_report(const char *dir, int n, int ninst) {
  json_object *rep = h_report_json(dir);
  json_object *ranks = h_json_get(rep, "ranks");
  CHECK(ranks && (int)json_object_array_length(ranks) == n, "report: %d ranks, want %d",
        ranks ? (int)json_object_array_length(ranks) : -1, n);
  for (int i = 0; ranks && i < (int)json_object_array_length(ranks) && i < n; i++) {
    json_object *r = h_json_get(json_object_array_get_idx(ranks, i), "rank");
    CHECK(r && json_object_get_int(r) == i, "report: rank #%d is %d", i, r ? json_object_get_int(r) : -1);
  }
  json_object *m = h_json_get(rep, "instances_matched");
  CHECK(m && json_object_get_int(m) == ninst, "report: %d instances matched on every rank, want %d",
        m ? json_object_get_int(m) : -1, ninst);
  json_object_put(rep);
}

/* Case `name` drove `n` GPUs as ranks 0..n-1 of one communicator: one trace per GPU, each
 * with its own rank, GPU and events only, and a report of n ranks matching every instance. */
static void check_one_comm(const char *name, const char *const *extra, int n) {
  char dir[256];
  run(name, extra, dir, sizeof dir);
  for (int r = 0; r < n; r++) {
    tr_trace t;
    if (load_rank(dir, r, &t, n)) continue;
    check_header(&t, r, r, "comm", n);
    check_own_events(&t, r, 0, NCOLL);
    tr_free(&t);
  }
  check_report(dir, n, NCOLL);
  if (!tl_cur_failed) h_rm_rf(dir);
}

TL_TEST(one_thread_drives_two_gpus) { check_one_comm("one_thread_2gpu", NULL, 2); }
/* a launcher's RANK is the process's: with four GPUs each takes its communicator rank */
TL_TEST(one_thread_drives_four_gpus_launcher_rank_ignored) {
  check_one_comm("one_thread_4gpu", (const char *const[]){"RANK=0", NULL}, 4);
}
TL_TEST(a_thread_per_gpu) { check_one_comm("thread_per_gpu", NULL, 2); }

TL_TEST(sub_communicators_take_the_largest_ones_rank) {
  char dir[256];
  run("sub_communicators", NULL, dir, sizeof dir);
  for (int d = 0; d < 2; d++) {
    tr_trace t;
    if (load_rank(dir, 2 + d, &t, 2)) continue;
    check_header(&t, 2 + d, d, "comm", 2);
    check_own_events(&t, d, 0x7000ull, 1);        /* TP: comm rank = GPU index */
    check_own_events(&t, 1, 0xd000ull + (uint64_t)d, 1);   /* its own DP pair */
    check_own_events(&t, 2 + d, 0x3000ull, 1);    /* world */
    tr_free(&t);
  }
  if (!tl_cur_failed) h_rm_rf(dir);
}

TL_TEST(commlens_rank_counts_up_over_the_gpus) {
  char dir[256];
  run("one_thread_2gpu", (const char *const[]){"COMMLENS_RANK=6", NULL}, dir, sizeof dir);
  for (int d = 0; d < 2; d++) {
    tr_trace t;
    if (load_rank(dir, 6 + d, &t, 2)) continue;
    check_header(&t, 6 + d, d, "COMMLENS_RANK", 2);
    tr_free(&t);
  }
  if (!tl_cur_failed) h_rm_rf(dir);
}

H_MAIN("abi/participants")
