/* test_robust.c: the plugin never breaks or hangs a job. Each case runs in a fresh process
 * (configuration is read at a process's first init) driving the exported symbols as NCCL
 * does: stale and NULL handles, NULL contexts, foreign PXN pointers, unknown event types,
 * unload/reload cycles, bad configuration, unwritable output, many communicators from many
 * threads, the capture window, and a full ring. Every call but init must return success. */
#include "harness.h"
#include "tr_load.h"
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers for children ---------------------------------------------------------- */
static int64_t stat_of(const tr_trace *t, const char *key) {
  int64_t v = -1;
  CHECK(tr_stats_i64(t, key, &v) == 0, "commlensStats.%s missing", key);
  return v;
}

/* ---- stale handles -------------------------------------------------------------------- */
H_CHILD(stale_handles) {
  h_plugin p;
  void *ctx;
  h_open_init(&p, 5, &ctx);
  int full = h_mask;
  h_event ga = {.type = CLABI_EV_GROUP_API, .group_depth = 1};
  void *g = h_start(&p, ctx, &ga, NULL);
  h_event ca = {.type = CLABI_EV_COLL_API, .parent = g, .func = "AllReduce", .count = 8, .datatype = "ncclFloat32"};
  void *capi = h_start(&p, ctx, &ca, NULL);
  h_stop(&p, capi);
  h_stop(&p, capi);                                        /* NCCL re-stops the CollApi handle */
  h_state(&p, capi, CLABI_ST_GROUP_END_API_START, 0);     /* state on a stopped handle */
  h_stop(&p, g);
  h_stop(&p, g);
  h_state(&p, g, CLABI_ST_GROUP_END_API_START, 0);
  h_mask = full & ~CLABI_EV_COLL_API;                      /* a mask change: CollApi off */
  h_stop(&p, capi);                                        /* ... and the stale handle again */
  h_mask = full;
  h_drive_coll(&p, ctx, NULL, 0, NULL);
  h_finalize(&p, ctx);
  h_close(&p);
  CHECK(h_bad_rc == 0, "%d calls did not return ncclSuccess", h_bad_rc);
  tr_trace t;
  if (h_load_one_trace(getenv("COMMLENS_DIR"), &t, NULL, 0)) return;
  CHECK(tr_count(&t, 'X', "coll") == 1, "coll %zu", tr_count(&t, 'X', "coll"));
  /* one CollApi of the stale sequence + the driven collective's */
  size_t api_coll = 0;
  for (size_t i = 0; i < t.n; i++) {
    const char *n = tr_name(tr_event(&t, i));
    if (n && !strcmp(n, "ncclAllReduce")) api_coll++;
  }
  CHECK(api_coll == 2, "%zu ncclAllReduce api slices, want 2 (no duplicates from re-stops)", api_coll);
  int64_t stale = stat_of(&t, "stale_handles");
  CHECK(stale >= 4, "stale_handles = %lld, want >= 4 (3 re-stops, states on stopped handles)", (long long)stale);
  CHECK(stat_of(&t, "dropped") == 0, "drops");
  tr_free(&t);
}

/* ---- NULL handles and contexts ----------------------------------------------------- */
static void null_calls(int abi) {
  h_plugin p;
  REQUIRE(h_open(&p, NULL, abi) == 0, "load v%d", abi);
  void *ctx = (void *)0x1;
  int rc = h_init_ex(&p, &ctx, NULL, NULL);                /* NULL mask */
  CHECK(rc == 0, "v%d init with a NULL mask returned %d", abi, rc);
  rc = h_init_ex(&p, NULL, &h_mask, NULL);                 /* NULL context pointer */
  CHECK(rc == 0, "v%d init with a NULL ctx returned %d", abi, rc);
  h_stop(&p, NULL);
  h_state(&p, NULL, CLABI_ST_KERNEL_CH_STOP, 123);
  h_state_noargs(&p, NULL, CLABI_ST_PROXY_OP_IN_PROGRESS);
  h_finalize(&p, NULL);
  uint64_t types[] = {CLABI_EV_GROUP, CLABI_EV_COLL, CLABI_EV_P2P, CLABI_EV_PROXY_OP, CLABI_EV_PROXY_STEP,
                      CLABI_EV_PROXY_CTRL, CLABI_EV_KERNEL_CH, CLABI_EV_NET_PLUGIN, CLABI_EV_GROUP_API,
                      CLABI_EV_COLL_API, CLABI_EV_P2P_API, CLABI_EV_KERNEL_LAUNCH, CLABI_EV_CE_COLL,
                      CLABI_EV_CE_SYNC, CLABI_EV_CE_BATCH};
  for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
    h_event e = {.type = types[i], .func = "AllReduce", .datatype = "ncclFloat32", .algo = "RING",
                 .proto = "SIMPLE", .pid = getpid(), .nsteps = 1, .comm_name = "x"};
    void *h = h_start(&p, NULL, &e, NULL);                 /* NULL context */
    h_state(&p, h, CLABI_ST_PROXY_OP_IN_PROGRESS, 0);
    h_state_noargs(&p, h, CLABI_ST_STEP_SEND_WAIT);        /* NULL args */
    h_stop(&p, h);
  }
  void *hh;
  CHECK(h_start_raw(&p, NULL, &hh, NULL) == 0, "NULL descriptor");
  unsigned char d[128];
  h_event e = {.type = CLABI_EV_GROUP};
  h_encode(abi, &e, d);
  CHECK(h_start_raw(&p, NULL, NULL, d) == 0, "NULL eHandle pointer");
  /* a real communicator still works after all that */
  void *real = NULL;
  REQUIRE(h_init(&p, &real, NULL) == 0 && real, "init");
  h_counts c;
  memset(&c, 0, sizeof c);
  h_drive_coll(&p, real, NULL, 0, &c);
  h_finalize(&p, real);
  h_finalize(&p, real);                                    /* twice */
  h_close(&p);
  CHECK(h_bad_rc == 0, "%d calls did not return ncclSuccess", h_bad_rc);
  tr_trace t;
  if (h_load_one_trace(getenv("COMMLENS_DIR"), &t, NULL, 0)) return;
  CHECK((long)tr_count(&t, 'X', "coll") == c.started[1], "coll %zu, driven %ld", tr_count(&t, 'X', "coll"), c.started[1]);
  tr_free(&t);
}
H_CHILD(null_v1) { null_calls(1); }
H_CHILD(null_v4) { null_calls(4); }
H_CHILD(null_v5) { null_calls(5); }
H_CHILD(null_v6) { null_calls(6); }

/* ---- foreign PXN events -------------------------------------------------------------- */
static void foreign(int abi) {
  h_plugin p;
  void *ctx;
  h_open_init(&p, abi, &ctx);
  void *garbage_ctx = (void *)0x1234, *garbage_parent = (void *)0xdeadbeef;
  h_event op = {.type = CLABI_EV_PROXY_OP, .parent = garbage_parent, .pid = getpid() + 1,
                .channel = 3, .peer = 2, .nsteps = 2, .chunk_size = 65536, .is_send = 1};
  void *h = h_start(&p, garbage_ctx, &op, NULL);
  h_state(&p, h, CLABI_ST_PROXY_OP_IN_PROGRESS, 0);
  for (int s = 0; s < 2; s++) {
    h_event st = {.type = CLABI_EV_PROXY_STEP, .parent = h, .step = s};
    void *sh = h_start(&p, garbage_ctx, &st, NULL);
    h_state(&p, sh, CLABI_ST_STEP_SEND_GPU_WAIT, 0);
    h_state(&p, sh, CLABI_ST_STEP_SEND_WAIT, 65536);
    h_stop(&p, sh);
  }
  h_stop(&p, h);
  /* a ProxyStep whose parent and context are both foreign pointers */
  h_event st = {.type = CLABI_EV_PROXY_STEP, .parent = garbage_parent, .step = 7};
  void *sh = h_start(&p, (void *)0x7fff00001000ull, &st, NULL);
  h_state(&p, sh, CLABI_ST_STEP_RECV_WAIT, 0);
  h_stop(&p, sh);
  /* our pid but a garbage context and parent */
  op.pid = getpid();
  h = h_start(&p, garbage_ctx, &op, NULL);
  h_stop(&p, h);
  /* KernelCh with a foreign context */
  h_event kc = {.type = CLABI_EV_KERNEL_CH, .parent = garbage_parent, .channel = 0, .ptimer = h_realtime_ns()};
  h = h_start(&p, garbage_ctx, &kc, NULL);
  h_state(&p, h, CLABI_ST_KERNEL_CH_STOP, h_realtime_ns());
  h_stop(&p, h);
  h_drive_coll(&p, ctx, &(h_opts){.network = 1, .nsteps = 1}, 0, NULL);
  h_finalize(&p, ctx);
  h_close(&p);
  CHECK(h_bad_rc == 0, "%d calls did not return ncclSuccess", h_bad_rc);
  tr_trace t;
  if (h_load_one_trace(getenv("COMMLENS_DIR"), &t, NULL, 0)) return;
  CHECK(stat_of(&t, "foreign") >= 1, "foreign = 0 after a PXN proxy op");
  CHECK(tr_count(&t, 'X', "coll") == 1, "coll %zu", tr_count(&t, 'X', "coll"));
  tr_free(&t);
}
H_CHILD(foreign_v5) { foreign(5); }
H_CHILD(foreign_v4) { foreign(4); }
H_CHILD(foreign_v2) { foreign(2); }

/* ---- unknown event types -------------------------------------------------------------- */
static void unknown(int abi, uint64_t type) {
  h_plugin p;
  void *ctx;
  h_open_init(&p, abi, &ctx);
  h_event e = {.type = type, .parent = (void *)0x42};
  void *h = h_start(&p, ctx, &e, NULL);
  h_state(&p, h, 31, 5);
  h_state(&p, h, 999, 5);                                  /* unknown state too */
  h_stop(&p, h);
  h_drive_coll(&p, ctx, NULL, 0, NULL);
  h_finalize(&p, ctx);
  h_close(&p);
  CHECK(h_bad_rc == 0, "%d calls did not return ncclSuccess", h_bad_rc);
  tr_trace t;
  if (h_load_one_trace(getenv("COMMLENS_DIR"), &t, NULL, 0)) return;
  CHECK(tr_count(&t, 'X', "coll") == 1, "coll %zu", tr_count(&t, 'X', "coll"));
  tr_free(&t);
}
H_CHILD(unknown_v5) { unknown(5, 1ull << 20); }
H_CHILD(unknown_v5_high) { unknown(5, 1ull << 40); }
H_CHILD(unknown_v6_kernel_phase) { unknown(6, 1ull << 15); }
H_CHILD(unknown_v4) { unknown(4, 0xFF); }
H_CHILD(unknown_v1) { unknown(1, 0x40); }                  /* KernelCh does not exist in v1 */

/* ---- reload cycles: NCCL dlcloses after the last finalize -------------------------- */
H_CHILD(reload_cycles) {
  for (int cycle = 0; cycle < 20; cycle++) {
    h_plugin p;
    REQUIRE(h_open(&p, NULL, 5) == 0, "load (cycle %d)", cycle);
    void *ctx = NULL;
    REQUIRE(h_init(&p, &ctx, NULL) == 0 && ctx, "init (cycle %d)", cycle);
    h_drive_coll(&p, ctx, &(h_opts){.network = 1, .nsteps = 1}, (uint64_t)cycle, NULL);
    h_finalize(&p, ctx);
    h_close(&p);
    tr_trace t;
    if (h_load_one_trace(getenv("COMMLENS_DIR"), &t, NULL, 0)) return;
    CHECK(tr_count(&t, 'X', "coll") == (size_t)cycle + 1, "cycle %d: %zu collectives in the trace",
          cycle, tr_count(&t, 'X', "coll"));
    tr_free(&t);
  }
  CHECK(h_bad_rc == 0, "%d calls did not return ncclSuccess", h_bad_rc);
}

/* ---- bad configuration ---------------------------------------------------------------- */
H_CHILD(bad_config) {
  h_plugin p;
  void *ctx;
  h_open_init(&p, 5, &ctx);
  const char *vars[] = {"COMMLENS_EVENTS", "COMMLENS_BUFFER_MB", "COMMLENS_WINDOW"};
  for (int i = 0; i < 3; i++)
    CHECK(h_log_count(CLABI_LOG_WARN, vars[i]) == 1, "%d warnings about %s; log:\n%s",
          h_log_count(CLABI_LOG_WARN, vars[i]), vars[i], h_log_text());
  /* the default events, KernelLaunch for the CUPTI join and KernelCh for sampled GPU timing */
  CHECK(h_mask == 0x5F4F, "mask %#x, want the default 0x5f4f", h_mask);
  h_counts c;
  memset(&c, 0, sizeof c);
  for (int i = 0; i < 3; i++) h_drive_coll(&p, ctx, NULL, (uint64_t)i, &c);
  void *ctx2;
  REQUIRE(h_init(&p, &ctx2, NULL) == 0, "second init");
  for (int i = 0; i < 3; i++)
    CHECK(h_log_count(CLABI_LOG_WARN, vars[i]) == 1, "%s warned again at the second init", vars[i]);
  h_finalize(&p, ctx2);
  h_finalize(&p, ctx);
  h_close(&p);
  tr_trace t;
  if (h_load_one_trace(getenv("COMMLENS_DIR"), &t, NULL, 0)) return;
  CHECK(tr_count(&t, 'X', "coll") == 3, "coll %zu", tr_count(&t, 'X', "coll"));
  tr_free(&t);
}

/* ---- unwritable output directory ------------------------------------------------------ */
H_CHILD(unwritable_dir) {
  const char *dir = getenv("COMMLENS_DIR");
  for (int cycle = 0; cycle < 2; cycle++) h_short_job(3, &(h_opts){.network = 1});
  CHECK(h_bad_rc == 0, "%d calls did not return ncclSuccess", h_bad_rc);
  int n = h_log_count(CLABI_LOG_WARN, dir);
  CHECK(n == 1, "%d warnings naming %s (want exactly one); log:\n%s", n, dir, h_log_text());
}

/* ---- many communicators from 4 threads --------------------------------------------- */
static h_plugin g_p;
static void *comm_churn(void *arg) {
  int idx = (int)(intptr_t)arg;
  for (int i = 0; i < 75; i++) {
    void *ctx = NULL;
    h_comm_info info = {0x100000 + (uint64_t)(idx * 1000 + i), "churn", 1, 4, idx};
    if (h_init(&g_p, &ctx, &info) != 0 || !ctx) { __atomic_add_fetch(&h_bad_rc, 1, __ATOMIC_RELAXED); continue; }
    h_drive_coll(&g_p, ctx, &(h_opts){.nchannels = 1, .same_thread_proxy = 1}, (uint64_t)i, NULL);
    h_finalize(&g_p, ctx);
  }
  return NULL;
}
H_CHILD(many_comms) {
  REQUIRE(h_open(&g_p, NULL, 5) == 0, "load");
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, comm_churn, (void *)(intptr_t)i);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  h_close(&g_p);
  CHECK(h_bad_rc == 0, "%d calls failed", h_bad_rc);
  tr_trace t2;
  if (h_load_one_trace(getenv("COMMLENS_DIR"), &t2, NULL, 0)) return;
  CHECK(tr_count(&t2, 'X', "coll") == 300, "coll %zu, want 300", tr_count(&t2, 'X', "coll"));
  CHECK(stat_of(&t2, "dropped") == 0, "drops");
  tr_free(&t2);
}

/* ---- capture window ---------------------------------------------------------------- */
H_CHILD(capture_window) {
  h_short_job(30, &(h_opts){.network = 1, .nsteps = 1});
  tr_trace t;
  if (h_load_one_trace(getenv("COMMLENS_DIR"), &t, NULL, 0)) return;
  CHECK(tr_count(&t, 'X', "coll") == 10, "coll %zu, want 10", tr_count(&t, 'X', "coll"));
  for (size_t i = 0; i < t.n; i++) {
    json_object *ev = tr_event(&t, i);
    int64_t seq;
    if (!tr_cat(ev) || strcmp(tr_cat(ev), "coll") || tr_arg_i64(ev, "seq", &seq)) continue;
    CHECK(seq >= 10 && seq < 20, "collective seq %lld captured outside coll:10-20", (long long)seq);
  }
  CHECK(tr_count(&t, 'X', "coll_gpu") <= 10, "coll_gpu %zu", tr_count(&t, 'X', "coll_gpu"));
  tr_free(&t);
}

/* ---- full ring ---------------------------------------------------------------------------- */
static void *burst(void *arg) {
  h_plugin *p = arg;
  for (int i = 0; i < 2000; i++) {
    h_event e = {.type = CLABI_EV_GROUP};
    void *h = h_start(p, NULL, &e, NULL);
    h_stop(p, h);
  }
  return NULL;
}
H_CHILD(full_ring) {
  h_plugin p;
  void *ctx;
  h_open_init(&p, 5, &ctx);
  h_event e = {.type = CLABI_EV_GROUP};
  for (int i = 0; i < 10000; i++) {                        /* one thread, far more than 16 KiB */
    void *h = h_start(&p, ctx, &e, NULL);
    h_stop(&p, h);
  }
  pthread_t t[80];                                         /* more threads than 1 MiB / 16 KiB rings */
  pthread_attr_t small;                 /* small stacks: a sanitizer maps and clears each one */
  pthread_attr_init(&small);
  pthread_attr_setstacksize(&small, 256 << 10);
  for (int i = 0; i < 80; i++) pthread_create(&t[i], &small, burst, &p);
  pthread_attr_destroy(&small);
  for (int i = 0; i < 80; i++) pthread_join(t[i], NULL);
  h_finalize(&p, ctx);
  h_close(&p);
  CHECK(h_bad_rc == 0, "%d calls did not return ncclSuccess", h_bad_rc);
  tr_trace t2;
  if (h_load_one_trace(getenv("COMMLENS_DIR"), &t2, NULL, 0)) return;
  int64_t dropped = stat_of(&t2, "dropped");
  CHECK(dropped > 0, "no drops counted after a burst into 16 KiB rings");
  CHECK(tr_count(&t2, 'X', "group") > 0, "nothing recorded");
  tr_free(&t2);
}

/* ---- the parent side: one fresh process per case ---------------------------------- */
static void run_case(const char *name, const char *const *extra) { h_run_case(name, NULL, extra, NULL); }
#define FULL ((const char *const[]){"COMMLENS_EVENTS=full", NULL})

TL_TEST(stale_handles_are_safe) { run_case("stale_handles", FULL); }
TL_TEST(null_handles_and_contexts) {
  run_case("null_v1", FULL); run_case("null_v4", FULL); run_case("null_v5", FULL); run_case("null_v6", FULL);
}
TL_TEST(foreign_pxn_pointers) { run_case("foreign_v5", FULL); run_case("foreign_v4", FULL); run_case("foreign_v2", FULL); }
TL_TEST(unknown_event_types) {
  run_case("unknown_v5", FULL); run_case("unknown_v5_high", FULL); run_case("unknown_v6_kernel_phase", FULL);
  run_case("unknown_v4", FULL); run_case("unknown_v1", FULL);
}
TL_TEST(reload_20_cycles) {
  /* ThreadSanitizer does not support unloading an instrumented library and loading it again
   * ("dup thread with used id"); the plain and ASan runs cover this case. */
  const char *san = getenv("COMMLENS_SANITIZED");
  if (san && !strcmp(san, "tsan")) { fprintf(stderr, "  skip under tsan: dlclose/reload\n"); return; }
  run_case("reload_cycles", FULL);
}
TL_TEST(bad_configuration_warns_once_each) {
  run_case("bad_config", (const char *const[]){"COMMLENS_EVENTS=bogus", "COMMLENS_BUFFER_MB=-5",
                                                "COMMLENS_WINDOW=junk", NULL});
}
TL_TEST(unwritable_directory) {
  /* run_case sets COMMLENS_DIR first; a later entry overrides it */
  run_case("unwritable_dir", (const char *const[]){"COMMLENS_DIR=/proc/nonexistent/commlens", NULL});
  run_case("unwritable_dir", (const char *const[]){"COMMLENS_DIR=/dev/null/commlens", NULL});
  char ro[256], kv[300];
  const char *tmp = getenv("TMPDIR");
  snprintf(ro, sizeof ro, "%s/commlens-ro-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  REQUIRE(mkdtemp(ro), "mkdtemp");
  chmod(ro, 0555);
  if (geteuid() != 0) {                                    /* root writes anywhere */
    snprintf(kv, sizeof kv, "COMMLENS_DIR=%s/sub", ro);
    run_case("unwritable_dir", (const char *const[]){kv, NULL});
  }
  rmdir(ro);
}
TL_TEST(many_communicators_from_4_threads) { run_case("many_comms", NULL); }
TL_TEST(capture_window_coll_10_20) {
  run_case("capture_window", (const char *const[]){"COMMLENS_EVENTS=full", "COMMLENS_WINDOW=coll:10-20", NULL});
}
TL_TEST(full_ring_drops_never_blocks) {
  run_case("full_ring", (const char *const[]){"COMMLENS_BUFFER_MB=1", "COMMLENS_RING_KB=16", NULL});
}

H_MAIN("faults/robust")
