/* test_timers.c: which collectives NCCL's kernel-channel timers time when they are sampled
 * (COMMLENS_TIMERS=sampled, plugin/capture/timers.h), through ncclProfiler_v5 as NCCL drives it:
 * NCCL copies its process-global mask into each operation at the operation's API call, before
 * the plugin hears of it, and emits KernelCh only for operations whose copy had it. Every rank
 * (a process of its own, or one GPU of a process driving two) drives the same calls on two
 * communicators, with p2p calls and CUDA-graph captures among them; each rank's digest must
 * mark the same collective instances left out, and `commlens report` must say so. A budget far
 * below the rate holds the sample at its highest level, so that the level does not depend on
 * how fast a loaded machine runs the calls. */
#include "tl.h"
#include "harness.h"
#include "common/config.h"
#include "plugin/capture/timers.h"
#include "tools/commlens/analyse/timers.h"
#include "tools/commlens/read/digest_read.h"
#include <stdlib.h>
#include <string.h>

#define STEPS 1500
#define NCH 2
enum { F_ALLREDUCE = 0, F_ALLGATHER = 1, F_NFUNC };
static const char *const k_func[F_NFUNC] = {"AllReduce", "AllGather"};

/* ---- the rule and the level, as functions ---- */
TL_TEST(rule_is_nested_deterministic_and_samples_its_share) {
  const uint64_t hash = 0x5eed5eedull;
  long timed[CL_TIMERS_MAX_LEVEL + 1] = {0};
  for (uint64_t k = 0; k < (1u << 20); k++) {
    int prev = 1;
    for (unsigned l = 0; l <= CL_TIMERS_MAX_LEVEL; l++) {
      int t = cl_timers_rule(hash, CL_TIMERS_COLL, k, l);
      if (t && !prev) { CHECK(0, "call %llu timed at level %u but not at %u", (unsigned long long)k, l, l - 1); return; }
      timed[l] += t;
      prev = t;
    }
    /* runs of 4 calls: a call is timed with the others of its run */
    if (k & 3) CHECK(cl_timers_rule(hash, CL_TIMERS_COLL, k, 3) == cl_timers_rule(hash, CL_TIMERS_COLL, k & ~3ull, 3),
                     "call %llu apart from its run", (unsigned long long)k);
  }
  for (unsigned l = 0; l <= CL_TIMERS_MAX_LEVEL; l++) {   /* about 2^-l of the calls, within 25% */
    double want = (double)(1u << 20) / (double)(1u << l), got = (double)timed[l];
    CHECK(got > want * 0.75 && got < want * 1.25, "level %u: %.0f timed of 2^20, want about %.0f", l, got, want);
  }
}

TL_TEST(level_keeps_the_budget) {
  cl_cfg.timers_budget_ppm = 5000;   /* 0.5% */
  cl_cfg.timers_cost_ns = 10000;     /* 10 us */
  /* 1024 calls in 10 s: 100/s x 10 us = 0.1% of wall time, every call timed */
  CHECK(cl_timers_level(1024, 10000000000ull, 1) == 0, "a slow communicator keeps every call");
  /* 1024 calls in 10 ms: 100,000/s would take 100% of wall time: 1 in 256 (0.39%) */
  CHECK(cl_timers_level(1024, 10000000ull, 1) == 8, "level %u at 100,000 calls/s", cl_timers_level(1024, 10000000ull, 1));
  /* shared by two communicators of the GPU: each gets half the budget */
  CHECK(cl_timers_level(1024, 10000000ull, 2) == 9, "level %u shared by two", cl_timers_level(1024, 10000000ull, 2));
  for (uint64_t dt = 1000000; dt < 100000000000ull; dt *= 3) {
    unsigned l = cl_timers_level(1024, dt, 1);
    double share = 1024.0 / ((double)dt / 1e9) * 10e-6 / (double)(1u << l);
    CHECK(share <= 0.005 || l == CL_TIMERS_MAX_LEVEL, "1024 calls in %llu ns: level %u leaves %.4f of wall time",
          (unsigned long long)dt, l, share);
    CHECK(l == 0 || share > 0.0025, "1024 calls in %llu ns: level %u samples more thinly than the budget needs",
          (unsigned long long)dt, l);
  }
}

/* Two ranks of one job, epoch by epoch (about 40 ms each, as at 24,000 all_reduces a second):
 * the same rate but for one epoch of rank 1's in which it stalled for 40 ms (a CUPTI window's attach
 * and first launches, a preempted thread).
 * They keep one level throughout: the stalled epoch's lower level waits out the hold, which the
 * next epoch renews. A rate that has really fallen is followed once the hold has passed, by
 * both alike; a higher one at once. */
TL_TEST(level_holds_through_one_ranks_stalled_epoch) {
  cl_cfg.timers_budget_ppm = 5000;
  cl_cfg.timers_cost_ns = 10000;
  const uint64_t ep = 42000000ull;   /* 1024 calls at 24,000/s */
  unsigned lv[2] = {0, 0};
  uint64_t hold[2] = {0, 0}, t[2] = {0, 0};
  for (int e = 1; e <= 60; e++)
    for (int r = 0; r < 2; r++) {
      uint64_t dt = e >= 40 ? 4 * ep : ep;                  /* from epoch 40 on, a quarter of the rate */
      if (r == 1 && e == 10) dt += 40000000ull;             /* rank 1 stalled in epoch 10 */
      t[r] += dt;
      unsigned want = cl_timers_level(CL_TIMERS_EPOCH, dt, 1);
      if (r == 1 && e == 10) CHECK(want < lv[1], "the stalled epoch reads a lower level (%u, at %u)", want, lv[1]);
      lv[r] = cl_timers_hold(lv[r], want, t[r], &hold[r]);
      if (r == 1) CHECK(lv[0] == lv[1], "epoch %d: levels %u and %u", e, lv[0], lv[1]);
    }
  unsigned fast = cl_timers_level(CL_TIMERS_EPOCH, ep, 1), slow = cl_timers_level(CL_TIMERS_EPOCH, 4 * ep, 1);
  CHECK(fast == 6 && slow == 4 && lv[0] == slow, "levels %u at speed, %u once slower; ended at %u", fast, slow, lv[0]);
  uint64_t h = 0;   /* a lower level within the hold is refused, past it taken; a higher one at once */
  CHECK(cl_timers_hold(6, 4, 1000, &h) == 4 && h == 1000 + CL_TIMERS_HOLD_NS, "an expired hold: lower at once");
  CHECK(cl_timers_hold(4, 2, 1000 + CL_TIMERS_HOLD_NS - 1, &h) == 4, "a lower level inside the hold");
  CHECK(cl_timers_hold(4, 7, 1001, &h) == 7 && h == 1001 + CL_TIMERS_HOLD_NS, "a higher level at once, held anew");
}

/* ---- driving NCCL's calls, its snapshot included ---- */
typedef struct {
  h_plugin *p;
  void *ctx;
  uint64_t seq[F_NFUNC];     /* NCCL's comm->seqNumber per function */
} comm_t;

static void *start_if(h_plugin *p, void *ctx, int snap, const h_event *e) {
  return h_mask_wants(snap, e->type) ? h_start(p, ctx, e, NULL) : NULL;
}
/* The GPU's part of an operation whose snapshot had KernelCh: each channel's timers. */
static void channels(comm_t *c, void *parent) {
  uint64_t t0 = h_realtime_ns();
  for (int ch = 0; ch < NCH; ch++) {
    h_event k = {.type = CLABI_EV_KERNEL_CH, .parent = parent, .channel = (uint8_t)ch, .ptimer = t0};
    void *h = h_start(c->p, c->ctx, &k, NULL);
    if (!h) continue;   /* as NCCL: no state or stop for a KernelCh answered with no handle */
    h_state(c->p, h, CLABI_ST_KERNEL_CH_STOP, t0 + 3000);
    h_stop(c->p, h);
  }
}
/* What NCCL's host callback does for a plan: its Group, the task's Coll (seq: the function's
 * counter now), its channels if its snapshot had KernelCh. */
static void plan(comm_t *c, int snap, void *capi, int f) {
  h_event g = {.type = CLABI_EV_GROUP};
  void *grp = start_if(c->p, c->ctx, snap, &g);
  h_event ce = {.type = CLABI_EV_COLL, .parent = capi, .parent_group = grp, .func = k_func[f], .datatype = "ncclFloat32",
                .algo = "RING", .proto = "LL", .seq = c->seq[f], .count = 1024, .nchannels = NCH, .nwarps = 8};
  void *coll = start_if(c->p, c->ctx, snap, &ce);
  if (h_mask_wants(snap, CLABI_EV_COLL)) h_stop(c->p, coll);
  if (h_mask_wants(snap, CLABI_EV_GROUP)) h_stop(c->p, grp);
  if (snap & CLABI_EV_KERNEL_CH) channels(c, coll);
}
/* One collective call (ncclAllReduce ...): NCCL's snapshot of the mask, its API events, then
 * eagerly its plan; captured into a CUDA graph, its plan runs at each of `replays` replays when
 * the snapshot had KernelCh (the seq advancing each time), else once at the capture, the seq
 * not advancing (NCCL 2.28: src/enqueue.cc, src/plugin/profiler.cc). */
static void collective(comm_t *c, int f, int captured, int replays) {
  int snap = __atomic_load_n(&h_mask, __ATOMIC_RELAXED);
  h_event ga = {.type = CLABI_EV_GROUP_API, .group_depth = 1, .graph_captured = captured};
  void *gapi = start_if(c->p, c->ctx, snap, &ga);
  h_event ca = {.type = CLABI_EV_COLL_API, .parent = gapi, .func = k_func[f], .count = 256, .datatype = "ncclFloat32",
                .stream = (void *)0x5700, .graph_captured = captured};
  void *capi = start_if(c->p, c->ctx, snap, &ca);
  if (capi) h_stop(c->p, capi);
  h_event kl = {.type = CLABI_EV_KERNEL_LAUNCH, .parent = gapi, .stream = (void *)0x5700};
  void *k = start_if(c->p, c->ctx, snap, &kl);
  if (k) h_stop(c->p, k);
  if (gapi) h_stop(c->p, gapi);
  if (!captured) { plan(c, snap, capi, f); c->seq[f]++; return; }
  if (!(snap & CLABI_EV_KERNEL_CH)) { plan(c, snap, capi, f); return; }
  for (int r = 0; r < replays; r++) { plan(c, snap, capi, f); c->seq[f]++; }
}
/* A Send and a Recv in one group: a snapshot at each call. */
static void sendrecv(comm_t *c, int peer) {
  void *api[2], *p2p[2];
  int snap[2];
  for (int i = 0; i < 2; i++) {
    snap[i] = __atomic_load_n(&h_mask, __ATOMIC_RELAXED);
    h_event a = {.type = CLABI_EV_P2P_API, .func = i ? "Recv" : "Send", .count = 64, .datatype = "ncclFloat32",
                 .stream = (void *)0x5700};
    api[i] = start_if(c->p, c->ctx, snap[i], &a);
    if (api[i]) h_stop(c->p, api[i]);
  }
  for (int i = 0; i < 2; i++) {
    h_event e = {.type = CLABI_EV_P2P, .parent = api[i], .func = i ? "Recv" : "Send", .datatype = "ncclFloat32",
                 .count = 64, .peer = peer, .nchannels = 1};
    p2p[i] = start_if(c->p, c->ctx, snap[i], &e);
    if (p2p[i]) h_stop(c->p, p2p[i]);
    if (snap[i] & CLABI_EV_KERNEL_CH) channels(c, p2p[i]);
  }
}

/* One step of the job every rank runs: tensor-parallel all-reduces (comm tp), a p2p exchange
 * on tp, a data-parallel all-gather (comm dp); every 50th step a CUDA graph of two tp
 * all-reduces is captured and replayed three times. */
static void step(comm_t *tp, comm_t *dp, int s, int rank) {
  for (int i = 0; i < 6; i++) collective(tp, F_ALLREDUCE, 0, 0);
  sendrecv(tp, 1 - rank);
  collective(dp, F_ALLGATHER, 0, 0);
  if (s % 50 == 25) { collective(tp, F_ALLREDUCE, 1, 3); collective(tp, F_ALLREDUCE, 1, 3); }
}

static void init_comm(h_plugin *p, comm_t *c, uint64_t hash, const char *name, int rank) {
  memset(c, 0, sizeof *c);
  c->p = p;
  h_comm_info info = {hash, name, 1, 2, rank};
  REQUIRE(h_init(p, &c->ctx, &info) == 0 && c->ctx, "init %s", name);
}

/* A rank in a process of its own (RANK says which). */
H_CHILD(rank_process) {
  int rank = atoi(getenv("RANK"));
  h_plugin p;
  REQUIRE(h_open(&p, NULL, 5) == 0, "load v5");
  comm_t tp, dp;
  init_comm(&p, &tp, 0x7070aaaa1ull, "tp", rank);
  init_comm(&p, &dp, 0xd0d0bbbb2ull, "dp", rank);
  for (int s = 0; s < STEPS; s++) step(&tp, &dp, s, rank);
  h_finalize(&p, dp.ctx);
  h_finalize(&p, tp.ctx);
  h_close(&p);
}

/* Two GPUs of one process, ranks 0 and 1 of both communicators, driven from one thread as a
 * single-process job does: each call on GPU 0's communicator, then the same on GPU 1's. */
H_CHILD(two_gpu_process) {
  h_plugin p;
  REQUIRE(h_open(&p, NULL, 5) == 0, "load v5");
  comm_t tp[2], dp[2];
  for (int g = 0; g < 2; g++) {
    REQUIRE(h_cuda_set_device(NULL, g) == 0, "no stand-in libcuda");
    init_comm(&p, &tp[g], 0x7070aaaa1ull, "tp", g);
    init_comm(&p, &dp[g], 0xd0d0bbbb2ull, "dp", g);
  }
  for (int s = 0; s < STEPS; s++) {
    for (int i = 0; i < 6; i++)
      for (int g = 0; g < 2; g++) collective(&tp[g], F_ALLREDUCE, 0, 0);
    for (int g = 0; g < 2; g++) collective(&dp[g], F_ALLGATHER, 0, 0);
    if (s % 50 == 25)
      for (int g = 0; g < 2; g++) collective(&tp[g], F_ALLREDUCE, 1, 3);
  }
  for (int g = 0; g < 2; g++) { h_finalize(&p, dp[g].ctx); h_finalize(&p, tp[g].ctx); }
  h_close(&p);
}

/* ---- what each rank's digest says ---- */
typedef struct { uint64_t comm; int64_t seq; int func, out; } mark;
typedef struct { mark *m; size_t n, cap; long p2p, out; int64_t dropped; } marks;
static void on_row(const cl_dg_row *r, void *arg) {
  marks *ms = arg;
  if (r->p2p) { ms->p2p++; return; }
  if (ms->n == ms->cap) { ms->cap = ms->cap ? 2 * ms->cap : 1024; ms->m = realloc(ms->m, ms->cap * sizeof *ms->m); }
  ms->m[ms->n++] = (mark){r->comm, r->seq, !strcmp(r->func, "AllGather"), r->untimed};
  ms->out += r->untimed;
}
static int cmp_mark(const void *a, const void *b) {
  const mark *x = a, *y = b;
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->func != y->func) return x->func - y->func;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  return x->out - y->out;
}
static int read_marks(const char *path, marks *ms) {
  memset(ms, 0, sizeof *ms);
  cl_info info;
  cl_dg_sink sink = {.coll = on_row};
  int rc = cl_digest_scan(path, &sink, ms, &info, 0);
  ms->dropped = info.st_dropped;
  cl_info_free(&info);
  if (ms->n) qsort(ms->m, ms->n, sizeof *ms->m, cmp_mark);
  return rc;
}

/* Every digest in dir marks the same instances left out, the sample is a real one (timed and
 * left out both, the captured collectives timed), and the report says so. */
static void check_same(const char *dir, int want_files) {
  char *paths[8];
  int n = h_find_files(dir, ".digest", paths, 8);
  REQUIRE(n == want_files, "%d digests in %s, want %d", n, dir, want_files);
  marks ms[8];
  for (int i = 0; i < n; i++) {
    REQUIRE(read_marks(paths[i], &ms[i]) == 0, "read %s", paths[i]);
    REQUIRE(ms[i].dropped == 0, "%s: %lld events dropped", paths[i], (long long)ms[i].dropped);
  }
  long want_colls = (long)STEPS * 7 + (STEPS / 50) * 2 * 3;   /* the captures' replays, if timed */
  CHECK(ms[0].n > (size_t)(STEPS * 7) && (long)ms[0].n <= want_colls, "%zu collectives on the first rank", ms[0].n);
  CHECK(ms[0].out > 1000 && ms[0].out < (long)ms[0].n - 1000, "a sample: %ld of %zu left out", ms[0].out, ms[0].n);
  for (int i = 1; i < n; i++) {
    size_t same = 0;
    for (size_t k = 0; k < ms[0].n && k < ms[i].n; k++) same += !cmp_mark(&ms[0].m[k], &ms[i].m[k]);
    CHECK(ms[i].n == ms[0].n && same == ms[0].n, "%s and %s: %zu and %zu collectives, %zu the same (timed alike)",
          paths[0], paths[i], ms[0].n, ms[i].n, same);
  }
  char args[600];
  snprintf(args, sizeof args, "report '%s'", dir);
  int st = -1;
  char *rep = h_run_cli(args, &st);
  CHECK(st == 0 && rep && strstr(rep, "the same instances timed on every rank"), "commlens report (exit %d):\n%s", st,
        rep ? rep : "(no output)");
  free(rep);
  for (int i = 0; i < n; i++) { free(ms[i].m); free(paths[i]); }
}

static void run_ranks(const char *child, int nprocs, int files) {
  char dir[256], direnv[600], fake[1200], fakeenv[1300], rankenv[32];
  h_fresh_dir(dir, sizeof dir);
  snprintf(direnv, sizeof direnv, "COMMLENS_DIR=%s", dir);
  h_fake_path(NULL, "libcommlens-fakecupti.so", fake, sizeof fake);
  snprintf(fakeenv, sizeof fakeenv, "COMMLENS_CUPTI_LIB=%s", fake);
  for (int r = 0; r < nprocs; r++) {
    snprintf(rankenv, sizeof rankenv, "RANK=%d", r);
    /* 0.001% of wall time at 10 ms a timed call: past the first 1024 calls of a communicator,
     * the sample's highest level whatever the machine's speed */
    /* a ring that holds the whole job: a record lost to a full ring (the drain starved on a
     * loaded machine) would differ from rank to rank */
    const char *env[] = {direnv, fakeenv, rankenv, "COMMLENS_OUTPUT=digest", "COMMLENS_SUMMARY=off",
                         "COMMLENS_TIMERS=sampled:0.001:10000", "COMMLENS_BUFFER_MB=128", "COMMLENS_RING_KB=16384", NULL};
    int rc = h_spawn(child, env);
    CHECK(rc == 0, "%s %d exited %d (dir %s)", child, r, rc, dir);
  }
  check_same(dir, files);
  if (!tl_cur_failed) h_rm_rf(dir);
}

TL_TEST(two_ranks_in_processes_of_their_own_time_the_same_instances) { run_ranks("rank_process", 2, 2); }
TL_TEST(two_gpus_of_one_process_time_the_same_instances) { run_ranks("two_gpu_process", 1, 2); }

/* ---- the report's check, on marks made by hand: a rank out of step is named ---- */
TL_TEST(report_names_the_rank_that_timed_other_instances) {
  cl_rank r[3];
  cl_rank *rp[3] = {&r[0], &r[1], &r[2]};
  memset(r, 0, sizeof r);
  for (int i = 0; i < 3; i++) {
    r[i].rank = i;
    for (int64_t s = 0; s < 1000; s++) cl_tmarks_note(&r[i].tmarks, 0xabc, 1, s, s % 8 != 0 && !(i == 2 && s == 17));
  }
  cl_job job = {.r = rp, .n = 3};
  cl_timers_an t;
  cl_timers_check(&job, &t);
  CHECK(t.sampled && t.compared == 1000 && t.mixed == 1 && t.timed_all == 125 && t.out_all == 874,
        "compared %lld: timed on every rank %lld, left out on every rank %lld, mixed %lld", (long long)t.compared,
        (long long)t.timed_all, (long long)t.out_all, (long long)t.mixed);
  CHECK(t.differ[0] == 0 && t.differ[1] == 0 && t.differ[2] == 1, "rank 2 named alone: %lld %lld %lld",
        (long long)t.differ[0], (long long)t.differ[1], (long long)t.differ[2]);
  cl_timers_an_free(&t);
  for (int i = 0; i < 3; i++) cl_tmarks_free(&r[i].tmarks);
}

H_MAIN("capture/timers")
