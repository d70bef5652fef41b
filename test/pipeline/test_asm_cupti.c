/* test_asm_cupti.c: the assembler's edge records and its CUPTI side, without loading the plugin:
 * proxy step phases, stale stops, kernels and copies joined to their collectives, CUPTI taken by
 * another tool, exposure in sampled mode. Records are fed as in test_assemble.c (asm_fixture.h). */
#include "asm_fixture.h"
#include <sys/wait.h>
#include <unistd.h>

/* A proxy step's phases are drawn on its async id inside it, one after another, whatever their
 * times say: a state read on another thread can be timed before the step's start or after its
 * stop (that thread's ring drained before the stop's), and states can arrive out of time order.
 * Regression: the phases were drawn as timed, partly outside their step or with a negative
 * duration, and the per-phase args summed to more than the step. */
TL_TEST(proxy_step_phases_nest_in_their_step) {
  fixture f;
  fx_open(&f, 0);
  uint32_t comm = add_comm(0x2222333344445555ull, 0);
  uint64_t op = ev_id(1, 1), step = ev_id(1, 2), late = ev_id(1, 3);
  cl_payload p;
  memset(&p, 0, sizeof p);
  p.proxy_op = (cl_proxy_op){.pid = 1, .peer = 1, .nsteps = 2, .chunk_size = 64, .channel = 0, .is_send = 1};
  t_start(&f, op, CL_EV_PROXY_OP, comm, 0, 1000, &p, 0);
  memset(&p, 0, sizeof p);
  t_start(&f, step, CL_EV_PROXY_STEP, comm, op, 2000, &p, 0);          /* step 0: [2000, 3000] */
  t_small(&f, CL_REC_STATE, step, 1900, CL_ST_STEP_SEND_GPU_WAIT, 0);  /* before the start */
  t_small(&f, CL_REC_STATE, step, 2600, CL_ST_STEP_SEND_WAIT, 4096);
  t_small(&f, CL_REC_STATE, step, 2400, CL_ST_STEP_SEND_PEER_WAIT, 0); /* out of order */
  t_small(&f, CL_REC_STATE, step, 3500, CL_ST_STEP_SEND_WAIT, 4096);   /* after the stop */
  p.proxy_step.step = 1;                                               /* in flight at once */
  t_start(&f, late, CL_EV_PROXY_STEP, comm, op, 2500, &p, 0);
  t_small(&f, CL_REC_STATE, late, 2500, CL_ST_STEP_SEND_GPU_WAIT, 0);
  t_small(&f, CL_REC_STATE, late, 2700, CL_ST_STEP_SEND_WAIT, 4096);
  t_stop(&f, step, 3000);
  t_stop(&f, late, 3900);
  t_stop(&f, op, 4000);
  cl_asm_tick(f.a, 5000, 1);
  json_object *arr = body_json(&f);                    /* checks that every slice nests */
  REQUIRE(arr, "body is not JSON");
  /* async (chrome_trace.h): steps and their phases share cat and id; a phase says so */
  json_object *st[2] = {NULL, NULL};
  int nphase = 0, nstep = 0;
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    json_object *e = json_object_array_get_idx(arr, i);
    int64_t k;
    if (tr_ph(e) != 'X' || !tr_cat(e) || strcmp(tr_cat(e), "proxy_step")) continue;
    if (tr_arg_bool(e, "phase")) { nphase++; continue; }
    nstep++;
    if (tr_arg_i64(e, "step", &k) == 0 && k >= 0 && k < 2) st[k] = e;
  }
  CHECK(nstep == 2 && nphase == 6, "steps %d phases %d", nstep, nphase);
  json_object *s0 = st[0], *s1 = st[1];
  REQUIRE(s0 && s1, "steps not drawn");
  char t0[256], t1[256], te[256];
  tr_tid_key(s0, t0, sizeof t0);
  tr_tid_key(s1, t1, sizeof t1);
  CHECK(strcmp(t0, t1) != 0, "concurrent steps share one async id (%s)", t0);
  CHECK(!strcmp(tr_name(s0), tr_name(s1)) && strstr(tr_name(s0), "ch 0 send steps"), "steps on tracks \"%s\", \"%s\"",
        tr_name(s0), tr_name(s1));
  int64_t sum = 0, v;
  static const char *args[] = {"gpu_wait_ns", "peer_wait_ns", "send_wait_ns"};
  for (int i = 0; i < 3; i++) if (tr_arg_i64(s0, args[i], &v) == 0) sum += v;
  CHECK(sum == 1000, "step 0's phases add up to %lld ns, the step lasts 1000", (long long)sum);
  int on[2] = {0, 0};
  for (size_t i = 0; i < json_object_array_length(arr); i++) {     /* each phase inside its step */
    json_object *e = json_object_array_get_idx(arr, i);
    int64_t ts, dur, ss, sd;
    if (tr_ph(e) != 'X' || !tr_arg_bool(e, "phase") || tr_ts_ns(e, &ts) || tr_dur_ns(e, &dur)) continue;
    tr_tid_key(e, te, sizeof te);
    int k = !strcmp(te, t0) ? 0 : !strcmp(te, t1) ? 1 : -1;
    REQUIRE(k >= 0, "%s drawn on %s, not on a step's id", tr_name(e), te);
    on[k]++;
    REQUIRE(tr_ts_ns(k ? s1 : s0, &ss) == 0 && tr_dur_ns(k ? s1 : s0, &sd) == 0, "step times");
    CHECK(ts >= ss && ts + dur <= ss + sd, "%s [%lld, %lld] outside step %d [%lld, %lld]", tr_name(e), (long long)ts,
          (long long)(ts + dur), k, (long long)ss, (long long)(ss + sd));
  }
  CHECK(on[0] == 4 && on[1] == 2, "phases on step 0's id %d, on step 1's %d", on[0], on[1]);
  json_object_put(arr);
  fx_close(&f);
}

/* A CUPTI kernel record whose end is before its start is drawn as an instant at its start, on a
 * lane of its stream. Regression: it was drawn with a negative duration. */
TL_TEST(kernel_ending_before_it_starts_is_an_instant) {
  fixture f;
  fx_open(&f, 1);
  cl_gj_draw_compute(f.gj, 1);                 /* COMMLENS_CUPTI=full: compute kernels drawn */
  cl_gpu_activity k = {.start_ns = 2000000, .end_ns = 1000000, .correlation = 1, .device = 0, .stream = 3,
                       .kind = CL_GPU_KERNEL, .name = "computeKernel"};
  cl_gj_activity(f.gj, &k);
  k = (cl_gpu_activity){.start_ns = 1500000, .end_ns = 2500000, .correlation = 2, .device = 0, .stream = 3,
                        .kind = CL_GPU_KERNEL, .name = "computeKernel"};
  cl_gj_activity(f.gj, &k);
  json_object *arr = body_json(&f);
  REQUIRE(arr, "body is not JSON");
  CHECK(count_cat(arr, "gpu_kernel") == 2, "kernels %d", count_cat(arr, "gpu_kernel"));
  json_object_put(arr);
  fx_close(&f);
}

/* A stop for an id never started (or stopped twice) is counted, not drawn; a collective with
 * no children is finished after the grace time with no GPU span, and the summary counts it. */
TL_TEST(stale_stop_and_childless_collective) {
  fixture f;
  fx_open(&f, 0);
  cl_cfg.mask = CL_MASK_DEFAULT;                  /* no KernelCh to wait for */
  uint32_t comm = add_comm(0x9999aaaabbbbccccull, 0);
  uint64_t coll = ev_id(1, 1);
  cl_payload c = coll_payload(9, 1);
  t_stop(&f, ev_id(3, 42), 500);                 /* never started */
  t_start(&f, coll, CL_EV_COLL, comm, 0, 1000, &c, 0);
  t_stop(&f, coll, 2000);
  t_stop(&f, coll, 2500);                         /* NCCL re-stops a handle */
  cl_asm_tick(f.a, 2000 + CL_ASM_GRACE_NS / 2, 0);
  cl_asm_stats st;
  cl_asm_get_stats(f.a, &st);
  CHECK(st.stale == 2, "stale %llu", (unsigned long long)st.stale);
  CHECK(st.colls_done == 0, "finished before the grace time");
  cl_asm_tick(f.a, 2000 + CL_ASM_GRACE_NS + 1, 0);
  cl_asm_get_stats(f.a, &st);
  CHECK(st.colls_done == 1 && st.colls_timed == 0 && st.open_now == 0, "done %llu timed %llu open %llu",
        (unsigned long long)st.colls_done, (unsigned long long)st.colls_timed, (unsigned long long)st.open_now);
  char buf[1024] = {0};
  FILE *m = fmemopen(buf, sizeof buf - 1, "w");
  cl_summary_json(f.sum, m);
  fclose(m);
  CHECK(strstr(buf, "\"func\":\"AllReduce\"") && strstr(buf, "\"count\":1,\"timed\":0"), "summary %s", buf);
  fx_close(&f);
}

/* Regression (found by a helper's review): with CUPTI on, a collective whose kernel record
 * never came and whose KernelCh is still missing is finished by the tick's first check once
 * the CUPTI wait is over; the tick then finished it a second time from its freed slot and
 * searched the table for it forever (the format thread hung). Run in a child with an alarm
 * so a regression fails instead of hanging the suite. */
TL_TEST(collective_given_up_on_cupti_is_finished_once) {
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork");
  if (pid == 0) {
    alarm(10);
    fixture f;
    fx_open(&f, 1);                            /* KernelCh expected (full mask) and CUPTI on */
    cl_gj_start(f.gj, 0);
    uint32_t comm = add_comm(0x1234123412341234ull, 0);
    uint64_t grp = ev_id(1, 1), api = ev_id(1, 2), coll = ev_id(1, 3);
    cl_payload p;
    memset(&p, 0, sizeof p);
    t_start(&f, grp, CL_EV_GROUP_API, comm, 0, 1000, &p, 0);
    p.coll_api = (cl_coll_api){.func = "AllReduce", .datatype = "ncclFloat32", .count = 8};
    t_start(&f, api, CL_EV_COLL_API, comm, grp, 1100, &p, 0);
    cl_payload c = coll_payload(3, 1);
    t_start(&f, coll, CL_EV_COLL, comm, api, 1200, &c, 0);   /* in launch group `grp` */
    t_stop(&f, coll, 2000);
    t_stop(&f, api, 2100);
    t_stop(&f, grp, 2200);
    cl_asm_tick(f.a, 2000 + CL_ASM_CUPTI_WAIT_NS + 1, 0);          /* no kernel record, no KernelCh */
    cl_asm_stats st;
    cl_asm_get_stats(f.a, &st);
    _exit(st.colls_done == 1 ? 0 : 3);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x (a SIGALRM is the old hang; 3: counted twice)", status);
}

/* Two seconds on, then four: the kernel records are joined to their launches, the collectives
 * take their spans, their exposure is known and they are drawn. */
static void settle_cupti(fixture *f) {
  uint64_t now = 2000000000ull;
  cl_gj_advance(f->gj, now, 0);           /* the joins */
  cl_asm_tick(f->a, now, 0);              /* the collectives take their spans */
  cl_gj_advance(f->gj, 2 * now, 0);       /* their exposure, then they are drawn */
  cl_asm_tick(f->a, 2 * now, 0);
}

/* The default's fixture (COMMLENS_CUPTI=kernels: the join by stream order, KernelLaunch events),
 * CUPTI recording from 0, and a communicator of `hash`; returns its serial. */
static uint32_t fx_open_default(fixture *f, uint64_t hash) {
  fx_open(f, 2);
  cl_cfg.mask = CL_MASK_DEFAULT | CL_MASK_KERNEL_LAUNCH;
  cl_gj_start(f->gj, 0);
  return add_comm(hash, 0);
}

/* One collective of a launch group: its events from b on, its KernelLaunch on CUPTI stream 7;
 * with proxy, a ProxyOp child (its span then comes from NCCL's own events). */
static void one_launch(fixture *f, uint32_t comm, uint64_t i, uint64_t b, int proxy) {
  uint64_t grp = ev_id(1, 10 * i + 1), api = ev_id(1, 10 * i + 2), coll = ev_id(1, 10 * i + 3);
  uint64_t kl = ev_id(1, 10 * i + 4), op = ev_id(2, 10 * i + 5);
  cl_payload p;
  memset(&p, 0, sizeof p);
  t_start(f, grp, CL_EV_GROUP_API, comm, 0, b, &p, 0);
  p.coll_api = (cl_coll_api){.func = "AllReduce", .datatype = "ncclFloat32", .count = 8};
  t_start(f, api, CL_EV_COLL_API, comm, grp, b + 100, &p, 0);
  cl_payload c = coll_payload(i, 1);
  t_start(f, coll, CL_EV_COLL, comm, api, b + 200, &c, 0);
  if (proxy) {
    memset(&p, 0, sizeof p);
    p.proxy_op = (cl_proxy_op){.pid = 1, .peer = 1, .nsteps = 1, .chunk_size = 64, .channel = 0, .is_send = 1};
    t_start(f, op, CL_EV_PROXY_OP, comm, coll, b + 250, &p, 0);
    t_stop(f, op, b + 900);
  }
  t_stop(f, coll, b + 300);
  t_stop(f, api, b + 400);
  memset(&p, 0, sizeof p);
  p.kernel_launch = (cl_kernel_launch){.stream = 0xabc0, .stream_id = 7 + 1};
  t_start(f, kl, CL_EV_KERNEL_LAUNCH, comm, grp, b + 500, &p, 0);
  t_stop(f, kl, b + 600);
  t_stop(f, grp, b + 700);
}


/* The default (COMMLENS_CUPTI=kernels): a collective's launch carries CUPTI's stream id; the
 * NCCL kernel on that stream, from kernel records alone (no launch record), gives the collective
 * its GPU span ("cupti"). A second launch group's kernel on the same stream goes to it, not to
 * the first. */
TL_TEST(collective_timed_from_its_kernel_by_stream_order) {
  fixture f;
  uint32_t comm = fx_open_default(&f, 0x5678567856785678ull);
  for (uint64_t i = 0; i < 2; i++) one_launch(&f, comm, i, 1000 + i * 100000, 0);
  for (uint32_t i = 0; i < 2; i++) {   /* their kernels, the second's record first */
    uint64_t b = 1000 + (1 - i) * 100000;
    cl_gpu_activity k = {.kind = CL_GPU_KERNEL, .start_ns = b + 5000, .end_ns = b + 9000 + 1000 * (1 - i),
                         .correlation = 50 + (1 - i), .stream = 7, .name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"};
    cl_gj_activity(f.gj, &k);
  }
  settle_cupti(&f);
  json_object *arr = body_json(&f);
  REQUIRE(arr, "body");
  int seen = 0;
  json_object *e;
  for (size_t i = 0; (e = next_slice(arr, &i, "coll_gpu", NULL));) {
    REQUIRE(slice_arg(e, "seq"), "seq");
    int64_t seq = atoll(slice_arg(e, "seq"));
    json_object *dur;
    REQUIRE(json_object_object_get_ex(e, "dur", &dur), "dur");
    double want = seq == 0 ? 4.0 : 5.0;   /* us: 4000 ns for the first, 5000 for the second */
    CHECK(!strcmp(slice_arg(e, "source"), "cupti") && json_object_get_double(dur) == want,
          "collective %lld: source %s, %.3f us, want cupti and %.1f us", (long long)seq, slice_arg(e, "source"),
          json_object_get_double(dur), want);
    seen++;
  }
  CHECK(seen == 2, "%d collectives timed on the GPU, want 2", seen);
  json_object_put(arr);
  fx_close(&f);
}

/* Copy-engine collectives (NCCL 2.30's AllGather on 2 H200s with CTAPolicy ZERO: per collective a
 * CeColl, a CeSync, a CeBatch, a CeSync) are collectives: drawn on the enqueue track (algo "CE"),
 * GPU-timed from their copies' memcpy records on their stream ("cupti_ce"), in exposure. Here a
 * collective makes 2 copies. The first one's copies run before the next is enqueued (the stream
 * teaches that a collective makes 2); then three are enqueued ahead of the GPU, so later
 * collectives were enqueued before earlier ones' copies began: each still gets its own two, in
 * stream order. One on another stream gets that stream's copies; one whose copies never came is
 * counted, not timed. Before, a CE collective was detail only: no coll slice, never timed. */
TL_TEST(copy_engine_collectives_are_timed_from_their_copies) {
  fixture f;
  uint32_t comm = fx_open_default(&f, 0x0ce0ce0ce0ce0ce0ull);
  cl_cfg.cupti = CL_CUPTI_KERNELS;             /* CUPTI records throughout: every exposure measured */
  const uint32_t sid[6] = {4, 4, 4, 4, 9, 4};    /* CUPTI stream ids plus one */
  const uint64_t enq[6] = {1000000, 1010000, 1020000, 1030000, 1040000, 1050000};
  for (uint64_t i = 0; i < 6; i++) {
    uint64_t b = enq[i];
    uint64_t ce = ev_id(1, 10 * i + 1), sy = ev_id(1, 10 * i + 2), ba = ev_id(1, 10 * i + 3), sy2 = ev_id(1, 10 * i + 4);
    cl_payload p;
    memset(&p, 0, sizeof p);
    p.ce_coll = (cl_ce_coll){.seq = i, .func = "AllGather", .datatype = "ncclInt8", .sync_strategy = "UC",
                             .count = 1048576, .stream = 0x1000 + sid[i], .stream_id = sid[i]};
    t_start(&f, ce, CL_EV_CE_COLL, comm, 0, b, &p, 0);
    memset(&p, 0, sizeof p);
    p.ce_sync = (cl_ce_sync){.nranks = 2};
    t_start(&f, sy, CL_EV_CE_SYNC, comm, ce, b + 100, &p, 0);
    t_stop(&f, sy, b + 500);
    memset(&p, 0, sizeof p);
    p.ce_batch = (cl_ce_batch){.total_bytes = 2097152, .num_ops = 2};
    t_start(&f, ba, CL_EV_CE_BATCH, comm, ce, b + 600, &p, 0);
    t_stop(&f, ba, b + 900);
    memset(&p, 0, sizeof p);
    p.ce_sync = (cl_ce_sync){.nranks = 2, .is_complete = 1};
    t_start(&f, sy2, CL_EV_CE_SYNC, comm, ce, b + 1000, &p, 0);
    t_stop(&f, sy2, b + 1400);
    t_stop(&f, ce, b + 1500);
  }
  /* stream 3: collective 0's two copies at once; collectives 1..3's from 1.04 ms on, 5 + k us
   * each, back to back; stream 8: collective 4's two; collective 5's never come */
  uint32_t corr = 100;
  for (uint64_t c = 0; c < 2; c++) {
    cl_gpu_activity m = {.kind = CL_GPU_MEMCPY, .start_ns = 1002000 + 2000 * c, .end_ns = 1004000 + 2000 * c,
                         .stream = 3, .bytes = 1048576, .copy_kind = 8, .correlation = corr++};
    cl_gj_activity(f.gj, &m);
  }
  uint64_t t = 1040000;
  for (uint64_t k = 1; k <= 3; k++)
    for (int c = 0; c < 2; c++) {
      cl_gpu_activity m = {.kind = CL_GPU_MEMCPY, .start_ns = t, .end_ns = t + (5 + k) * 1000, .stream = 3,
                           .bytes = 1048576, .copy_kind = 8, .correlation = corr++};
      cl_gj_activity(f.gj, &m);
      t += (5 + k) * 1000;
    }
  for (uint64_t c = 0; c < 2; c++) {
    cl_gpu_activity m = {.kind = CL_GPU_MEMCPY, .start_ns = 1045000 + 1000 * c, .end_ns = 1045500 + 1000 * c,
                         .stream = 8, .bytes = 1048576, .copy_kind = 10, .correlation = corr++};
    cl_gj_activity(f.gj, &m);
  }
  /* compute: a GEMM hides the first 5 us of collective 1's copies; a later kernel */
  cl_gpu_activity k1 = {.kind = CL_GPU_KERNEL, .start_ns = 1040000, .end_ns = 1045000, .stream = 5, .correlation = 7,
                        .name = "gemm"};
  cl_gpu_activity k2 = {.kind = CL_GPU_KERNEL, .start_ns = 3000000, .end_ns = 3001000, .stream = 5, .correlation = 8,
                        .name = "gemm"};
  cl_gj_activity(f.gj, &k1);
  cl_gj_activity(f.gj, &k2);
  settle_cupti(&f);
  cl_asm_tick(f.a, 10000000000ull, 1);
  cl_gj_advance(f.gj, 10000000000ull, 1);
  json_object *arr = body_json(&f);
  REQUIRE(arr, "body");
  int enq_n = 0, timed = 0;
  const double want_us[5] = {4, 12, 14, 16, 1.5};
  const int64_t hidden[5] = {0, 5000, 0, 0, 0};
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    json_object *e = json_object_array_get_idx(arr, i), *v, *dur;
    if (!json_object_object_get_ex(e, "cat", &v)) continue;
    const char *cat = json_object_get_string(v);
    if (!strcmp(cat, "coll") && slice_arg(e, "algo") && !strcmp(slice_arg(e, "algo"), "CE")) enq_n++;
    if (strcmp(cat, "coll_gpu")) continue;
    int64_t seq = atoll(slice_arg(e, "seq") ? slice_arg(e, "seq") : "-1");
    REQUIRE(json_object_object_get_ex(e, "dur", &dur), "dur");
    REQUIRE(seq >= 0 && seq < 5, "collective %lld GPU-timed (its copies never came)", (long long)seq);
    int64_t exposed = slice_arg(e, "exposed_ns") ? atoll(slice_arg(e, "exposed_ns")) : -1;
    CHECK(slice_arg(e, "source") && !strcmp(slice_arg(e, "source"), "cupti_ce") &&
          fabs(json_object_get_double(dur) - want_us[seq]) < 0.0005 &&
          exposed == (int64_t)(want_us[seq] * 1000) - hidden[seq],
          "seq %lld: source %s, %.3f us exposed %lld ns (want cupti_ce, %.1f us, %lld ns)", (long long)seq,
          slice_arg(e, "source"), json_object_get_double(dur), (long long)exposed, want_us[seq],
          (long long)((int64_t)(want_us[seq] * 1000) - hidden[seq]));
    timed++;
  }
  CHECK(enq_n == 6 && timed == 5, "%d CE collectives on the enqueue track (want 6), %d GPU-timed (want 5)", enq_n, timed);
  cl_asm_stats st;
  cl_asm_get_stats(f.a, &st);
  CHECK(st.colls_done == 6 && st.colls_timed == 5, "stats: %llu done, %llu timed", (unsigned long long)st.colls_done,
        (unsigned long long)st.colls_timed);
  json_object_put(arr);
  fx_close(&f);
}

/* A thread per GPU (nccl-tests -t N, clex --threads, JAX's device threads): the threads run in
 * lockstep, so their events carry the same per-thread sequence numbers, and the drain can hand
 * the assembler one thread's API event between another's API event and its collective. Each
 * collective must still find its own launch group (found on 2xH200: nccl-tests -t 2 lost the
 * GPU span of up to 13 of 648 collectives per GPU, JAX 3 of 42, when the API-to-group links were
 * indexed by the sequence number alone). */
TL_TEST(lockstep_threads_keep_their_own_launch_groups) {
  fixture f;
  fx_open(&f, 2);
  cl_cfg.mask = CL_MASK_DEFAULT | CL_MASK_KERNEL_LAUNCH;
  cl_gj_start(f.gj, 0);
  uint32_t comm[2] = {add_comm(0x7777000077770000ull, 0), add_comm(0x7777000077770000ull, 1)};
  uint64_t b = 1000;
  for (uint32_t t = 0; t < 2; t++) {          /* each thread: its group and API call ... */
    cl_payload p;
    memset(&p, 0, sizeof p);
    t_start(&f, ev_id(t + 1, 1), CL_EV_GROUP_API, comm[t], 0, b + t, &p, 0);
    p.coll_api = (cl_coll_api){.func = "AllReduce", .datatype = "ncclFloat32", .count = 8};
    t_start(&f, ev_id(t + 1, 2), CL_EV_COLL_API, comm[t], ev_id(t + 1, 1), b + 100 + t, &p, 0);
    t_stop(&f, ev_id(t + 1, 2), b + 200 + t);
  }
  for (uint32_t t = 0; t < 2; t++) {          /* ... then, at group end, its collective and launch */
    cl_payload c = coll_payload(0, 1), p;
    t_start(&f, ev_id(t + 1, 3), CL_EV_COLL, comm[t], ev_id(t + 1, 2), b + 300 + t, &c, 0);
    t_stop(&f, ev_id(t + 1, 3), b + 400 + t);
    memset(&p, 0, sizeof p);
    p.kernel_launch = (cl_kernel_launch){.stream = 0xabc0 + 0x100 * t, .stream_id = 7 + 2 * t + 1};
    t_start(&f, ev_id(t + 1, 4), CL_EV_KERNEL_LAUNCH, comm[t], ev_id(t + 1, 1), b + 500 + t, &p, 0);
    t_stop(&f, ev_id(t + 1, 4), b + 600 + t);
    t_stop(&f, ev_id(t + 1, 1), b + 700 + t);
  }
  for (uint32_t t = 0; t < 2; t++) {
    cl_gpu_activity k = {.kind = CL_GPU_KERNEL, .start_ns = b + 5000, .end_ns = b + 9000 + 1000 * t,
                         .correlation = 50 + t, .stream = 7 + 2 * t, .name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"};
    cl_gj_activity(f.gj, &k);
  }
  settle_cupti(&f);
  json_object *arr = body_json(&f);
  REQUIRE(arr, "body");
  int timed[2] = {0, 0};
  json_object *e;
  for (size_t i = 0; (e = next_slice(arr, &i, "coll_gpu", NULL));) {
    json_object *dur;
    REQUIRE(json_object_object_get_ex(e, "dur", &dur), "dur");
    int t = json_object_get_double(dur) == 5.0 ? 1 : json_object_get_double(dur) == 4.0 ? 0 : -1;
    CHECK(t >= 0 && !strcmp(slice_arg(e, "source"), "cupti"), "a span of %.3f us from %s",
          json_object_get_double(dur), slice_arg(e, "source"));
    if (t >= 0) timed[t]++;
  }
  CHECK(timed[0] == 1 && timed[1] == 1, "GPU spans from their own kernels: thread 1 %d, thread 2 %d (want 1 each)",
        timed[0], timed[1]);
  json_object_put(arr);
  fx_close(&f);
}

/* One thread's group of thousands of p2p calls (an all-to-all over thousands of ranks) while a
 * second thread in lockstep makes as many: every p2p operation, started at the group's end,
 * still finds its group. */
TL_TEST(large_groups_of_two_threads_keep_every_link) {
  fixture f;
  fx_open(&f, 0);
  uint32_t comm = add_comm(0x8888000088880000ull, 0);
  enum { N = 20000 };
  cl_payload p;
  memset(&p, 0, sizeof p);
  for (uint32_t t = 1; t <= 2; t++) t_start(&f, ev_id(t, 1), CL_EV_GROUP_API, comm, 0, 1000, &p, 0);
  for (uint64_t i = 0; i < N; i++)
    for (uint32_t t = 1; t <= 2; t++) {
      t_start(&f, ev_id(t, 2 + i), CL_EV_P2P_API, comm, ev_id(t, 1), 2000 + i, &p, 0);
      t_stop(&f, ev_id(t, 2 + i), 2000 + i);
    }
  int lost = 0;
  for (uint64_t i = 0; i < N; i++)
    for (uint32_t t = 1; t <= 2; t++) {
      uint64_t id = ev_id(t, 2 + N + i);
      t_start(&f, id, CL_EV_P2P, comm, ev_id(t, 2 + i), 100000 + i, &p, 0);
      const cl_asm_ev *e = cl_asm_open_event(f.a, id);
      if (!e || e->api_group != ev_id(t, 1)) lost++;
    }
  CHECK(lost == 0, "%d of %d p2p operations lost their group", lost, 2 * N);
  fx_close(&f);
}

/* Another tool (torch.profiler) holds CUPTI from 50 us to 200 us: the collective in between gets
 * no kernel record. It is counted, its slice (timed by its proxy op) says why CUPTI did not time
 * it, and the counter track steps; the collectives before and after are CUPTI's and say nothing. */
TL_TEST(collective_while_cupti_taken_is_marked_lost) {
  fixture f;
  uint32_t comm = fx_open_default(&f, 0x9abc9abc9abc9abcull);
  uint64_t at[3] = {1000, 100000, 300000};
  one_launch(&f, comm, 0, at[0], 0);
  cl_gj_stop(f.gj, 50000);                 /* taken */
  one_launch(&f, comm, 1, at[1], 1);
  cl_gj_start(f.gj, 200000);               /* given back */
  one_launch(&f, comm, 2, at[2], 0);
  for (int i = 0; i < 3; i += 2) {         /* the kernels CUPTI recorded for us */
    cl_gpu_activity k = {.kind = CL_GPU_KERNEL, .start_ns = at[i] + 5000, .end_ns = at[i] + 9000,
                         .correlation = 50 + (uint32_t)i, .stream = 7, .name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"};
    cl_gj_activity(f.gj, &k);
  }
  settle_cupti(&f);
  cl_asm_tick(f.a, 3 * 2000000000ull, 1);
  cl_asm_stats st;
  cl_asm_get_stats(f.a, &st);
  CHECK(st.colls_done == 3 && st.colls_gpu_lost == 1, "done %llu, lost %llu (want 3, 1)",
        (unsigned long long)st.colls_done, (unsigned long long)st.colls_gpu_lost);
  CHECK(cl_parts_of_dev(f.ps, -1)->colls_gpu_lost == 1, "participant's count %llu",
        (unsigned long long)cl_parts_of_dev(f.ps, -1)->colls_gpu_lost);
  json_object *arr = body_json(&f);
  REQUIRE(arr, "body");
  int cupti = 0, lost = 0, counter = 0;
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    json_object *e = json_object_array_get_idx(arr, i), *v;
    if (json_object_object_get_ex(e, "ph", &v) && !strcmp(json_object_get_string(v), "C") &&
        json_object_object_get_ex(e, "name", &v) && strstr(json_object_get_string(v), "CUPTI taken by another tool")) {
      json_object *a, *n;
      counter += json_object_object_get_ex(e, "args", &a) && json_object_object_get_ex(a, "collectives", &n) &&
                 json_object_get_int(n) == 1;
      continue;
    }
    if (!json_object_object_get_ex(e, "cat", &v) || strcmp(json_object_get_string(v), "coll_gpu")) continue;
    const char *src = slice_arg(e, "source"), *why = slice_arg(e, "gpu_timing");
    if (!strcmp(src, "cupti")) { cupti++; CHECK(!why, "a CUPTI-timed collective says %s", why); }
    else { lost++; CHECK(why && !strcmp(why, "lost (CUPTI taken by another tool)"), "source %s, gpu_timing %s", src, why ? why : "(none)"); }
  }
  CHECK(cupti == 2 && lost == 1 && counter == 1, "timed by CUPTI %d (want 2), marked lost %d (want 1), counter samples %d (want 1)",
        cupti, lost, counter);
  json_object_put(arr);
  fx_close(&f);
}

/* The summary's GPU timing line for the fixture's one participant, `colls` collectives all timed,
 * `lost` of them without CUPTI's timing. */
static void gpu_line(fixture *f, uint64_t colls, uint64_t lost, char *line, size_t n) {
  cl_format_deps run;
  memset(&run, 0, sizeof run);
  run.gj = f->gj;
  cl_run_stats rs;
  memset(&rs, 0, sizeof rs);
  rs.colls_done = rs.colls_timed = colls;
  rs.colls_gpu_lost = lost;
  cl_stats_gpu_line(&run, cl_parts_of_dev(f->ps, -1), &rs, line, n);
}

/* COMMLENS_CUPTI=sampled: CUPTI records kernels in a window (here [0, 1 s)); a collective inside
 * it, past the window's first quarter, is timed by its kernel and its exposure measured (a
 * compute kernel covers half of it); one after the window is timed by NCCL's own events, not
 * marked lost, and its exposure estimated from the measured one's share (half), marked
 * "estimated" on its slice and counted. */
TL_TEST(sampled_mode_estimates_exposure_outside_the_windows) {
  fixture f;
  uint32_t comm = fx_open_default(&f, 0x5a5a5a5a5a5a5a5aull);
  cl_cfg.cupti = CL_CUPTI_SAMPLED;
  cl_cfg.sample_on_ns = 1000000000ull;
  uint64_t in = 400000000ull, out = 1500000000ull;
  one_launch(&f, comm, 0, in, 0);
  cl_gpu_activity k = {.kind = CL_GPU_KERNEL, .start_ns = in + 5000, .end_ns = in + 9000, .correlation = 50,
                       .stream = 7, .name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"};
  cl_gj_activity(f.gj, &k);
  cl_gpu_activity comp = {.kind = CL_GPU_KERNEL, .start_ns = in + 3000, .end_ns = in + 7000, .correlation = 49,
                          .stream = 9, .name = "computeKernel"};
  cl_gj_activity(f.gj, &comp);
  cl_gj_stop_window(f.gj, 1000000000ull);   /* the window closes */
  settle_cupti(&f);
  one_launch(&f, comm, 1, out, 1);          /* outside: its span from its proxy op, 650 ns */
  cl_asm_tick(f.a, 3 * 2000000000ull, 0);   /* it waits behind the measured ones ... */
  cl_gj_advance(f.gj, 4 * 2000000000ull, 1);  /* ... and is estimated in their order */
  cl_asm_tick(f.a, 4 * 2000000000ull, 1);
  cl_asm_stats st;
  cl_asm_get_stats(f.a, &st);
  CHECK(st.colls_done == 2 && st.colls_gpu_lost == 0 && st.colls_expo_est == 1,
        "done %llu, lost %llu, estimated %llu (want 2, 0, 1)", (unsigned long long)st.colls_done,
        (unsigned long long)st.colls_gpu_lost, (unsigned long long)st.colls_expo_est);
  cl_gj_counts n;   /* the measured totals hold the measured one only: the estimate is said apart */
  cl_gj_totals(f.gj, cl_parts_of_dev(f.ps, -1), &n);
  CHECK(n.t.spans == 1 && n.t.comm_ns == 4000 && n.t.exposed_ns == 2000, "totals: %llu span(s), comm %llu, exposed %llu "
        "(want 1, 4000, 2000)", (unsigned long long)n.t.spans, (unsigned long long)n.t.comm_ns,
        (unsigned long long)n.t.exposed_ns);
  char line[1024];   /* the summary's GPU line says which figures are the windows' */
  gpu_line(&f, 2, 0, line, sizeof line);
  CHECK(strstr(line, "in CUPTI's sampling windows; 1 more outside them") && strstr(line, "ms estimated"),
        "summary line: %s", line);
  json_object *arr = body_json(&f);
  REQUIRE(arr, "body");
  int seen = 0;
  json_object *e;
  for (size_t i = 0; (e = next_slice(arr, &i, "coll_gpu", NULL));) {
    json_object *a, *x;
    REQUIRE(json_object_object_get_ex(e, "args", &a) && json_object_object_get_ex(a, "exposed_ns", &x), "exposed_ns");
    const char *src = slice_arg(e, "source"), *how = slice_arg(e, "exposure"), *why = slice_arg(e, "gpu_timing");
    int64_t ex = json_object_get_int64(x);
    if (!strcmp(src, "cupti"))
      CHECK(ex == 2000 && !how, "in the window: exposed %lld ns (want 2000, measured), exposure %s", (long long)ex,
            how ? how : "(measured)");
    else
      CHECK(!strcmp(src, "proxy") && ex == 325 && how && !strcmp(how, "estimated") && !why,
            "outside: source %s, exposed %lld ns (want proxy, 325 estimated), exposure %s, gpu_timing %s", src,
            (long long)ex, how ? how : "(measured)", why ? why : "(none)");
    seen++;
  }
  CHECK(seen == 2, "%d collectives timed, want 2", seen);
  json_object_put(arr);
  fx_close(&f);
}

/* COMMLENS_CUPTI=sampled with nothing measured yet (a window that timed no collective: a job
 * shorter than its first quarter, or CUPTI busy): a collective outside it has no ratio to be
 * estimated from. It is counted as estimated but not known, and the summary line says "not
 * known" instead of an exposed time of 0. */
TL_TEST(sampled_mode_says_exposure_not_known_before_anything_was_measured) {
  fixture f;
  uint32_t comm = fx_open_default(&f, 0x5b5b5b5b5b5b5b5bull);
  cl_cfg.cupti = CL_CUPTI_SAMPLED;
  cl_cfg.sample_on_ns = 1000000000ull;
  cl_gj_stop_window(f.gj, 1000000000ull);   /* the window closes, nothing measured */
  one_launch(&f, comm, 1, 1500000000ull, 1);
  settle_cupti(&f);
  cl_gj_advance(f.gj, 4 * 2000000000ull, 1);
  cl_asm_tick(f.a, 4 * 2000000000ull, 1);
  cl_part *p = cl_parts_of_dev(f.ps, -1);
  CHECK(p->colls_expo_est == 1 && p->colls_expo_unknown == 1 && p->est_expo_ns == 0,
        "estimated %llu, not known %llu, exposed %llu (want 1, 1, 0)", (unsigned long long)p->colls_expo_est,
        (unsigned long long)p->colls_expo_unknown, (unsigned long long)p->est_expo_ns);
  char line[1024];
  gpu_line(&f, 1, 0, line, sizeof line);
  CHECK(strstr(line, "1 more outside them") && strstr(line, "exposure not known") && !strstr(line, "ms estimated"),
        "summary line: %s", line);
  fx_close(&f);
}

/* The summary's GPU line with every part said at once and its counts at their widest (the
 * windows' figures, the estimate with some not known, one channel with its spread, the timers'
 * sample, CUPTI lost): whole in CL_GPU_LINE_MAX, its last part there to the end. A sampled run's
 * line once ended in "level up to 7 (" (a 768-byte buffer). */
TL_TEST(gpu_line_with_every_part_fits_whole) {
  fixture f;
  fx_open_default(&f, 0x5c5c5c5c5c5c5c5cull);
  cl_cfg.cupti = CL_CUPTI_SAMPLED;
  cl_cfg.timers = CL_TIMERS_SAMPLED;
  cl_part *p = cl_parts_of_dev(f.ps, -1);
  const uint64_t big = 18446744073709551615ull;
  p->colls_expo_est = big; p->colls_expo_unknown = big - 1; p->est_comm_ns = big; p->est_expo_ns = big;
  p->colls_one_ch = big; p->ch_spread_hist[CL_SPREAD_BUCKETS - 1] = 4294967295u;
  p->colls_kch = big; p->colls_untimed = big;
  char line[CL_GPU_LINE_MAX];
  gpu_line(&f, big, big, line, sizeof line);
  size_t n = strlen(line), tail = strlen(CL_GPU_LOST_WHY);
  CHECK(n + 1 < sizeof line && n > tail && !strcmp(line + n - tail, CL_GPU_LOST_WHY) &&
        strstr(line, "exposure not known") == NULL && strstr(line, "not known for") && strstr(line, "95th percentile") &&
        strstr(line, "calls in "), "%zu bytes: %s", n, line);
  fx_close(&f);
}

/* A collective with both a CUPTI kernel span and NCCL's KernelCh span: CUPTI's is taken where
 * the two agree, and left for KernelCh's where they lie milliseconds apart (another launch's
 * kernel: a join by stream order gone wrong), counted. GPU timer = host + 1 s; the host reads
 * each channel timer 2 us after the GPU wrote it. */
TL_TEST(cupti_span_taken_only_where_it_agrees_with_kernel_channels) {
  fixture f;
  uint32_t comm = fx_open_default(&f, 0x7171717171717171ull);
  cl_cfg.mask |= 1u << CL_EV_KERNEL_CH;
  const uint64_t GPU = 1000000000ull, b0 = 1000000, b1 = 200000000;
  for (uint64_t i = 0; i < 2; i++) {
    uint64_t b = i ? b1 : b0, coll = ev_id(1, 10 * i + 3);
    one_launch(&f, comm, i, b, 0);
    for (int ch = 0; ch < 2; ch++) {            /* channels run [b+5100, b+8900] */
      cl_payload k;
      memset(&k, 0, sizeof k);
      k.kernel_ch = (cl_kernel_ch){.ptimer = GPU + b + 5100, .channel = (uint8_t)ch};
      uint64_t id = ev_id(2, 10 * i + (uint64_t)ch + 1);
      t_start(&f, id, CL_EV_KERNEL_CH, comm, coll, b + 5100 + 2000, &k, 0);
      t_small(&f, CL_REC_STATE, id, b + 8900 + 2000, CL_ST_KERNEL_CH_STOP, GPU + b + 8900);
      t_stop(&f, id, b + 8900 + 3000);
    }
    /* the first's kernel where its channels ran; the second got one 3 ms later */
    uint64_t ks = b + 5000 + (i ? 3000000 : 0);
    cl_gpu_activity kr = {.kind = CL_GPU_KERNEL, .start_ns = ks, .end_ns = ks + 4000, .correlation = 50 + (uint32_t)i,
                          .stream = 7, .name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"};
    cl_gj_activity(f.gj, &kr);
  }
  cl_gj_advance(f.gj, 2000000000ull, 0);
  cl_asm_tick(f.a, 2000000000ull, 1);          /* the channels, held for the clock, then both */
  cl_gj_advance(f.gj, 4000000000ull, 1);
  cl_asm_tick(f.a, 4000000000ull, 1);
  cl_asm_stats st;
  cl_asm_get_stats(f.a, &st);
  CHECK(st.colls_done == 2 && st.cupti_rejected == 1, "done %llu, CUPTI spans rejected %llu (want 2, 1)",
        (unsigned long long)st.colls_done, (unsigned long long)st.cupti_rejected);
  json_object *arr = body_json(&f);
  REQUIRE(arr, "body");
  int seen = 0;
  json_object *e;
  for (size_t j = 0; (e = next_slice(arr, &j, "coll_gpu", NULL));) {
    REQUIRE(slice_arg(e, "seq"), "seq");
    int64_t seq = atoll(slice_arg(e, "seq"));
    const char *src = slice_arg(e, "source");
    CHECK(!strcmp(src, seq == 0 ? "cupti" : "kernel_ch"), "collective %lld: source %s (want %s)", (long long)seq, src,
          seq == 0 ? "cupti" : "kernel_ch");
    seen++;
  }
  CHECK(seen == 2, "%d collectives timed, want 2", seen);
  json_object_put(arr);
  fx_close(&f);
}

TL_MAIN("pipeline/asm_cupti")
