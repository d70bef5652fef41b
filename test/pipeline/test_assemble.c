/* test_assemble.c: the assembler and the drawing behind it, without loading the plugin: records
 * are fed to cl_asm_feed as the format thread would (starts, stops and states of several
 * threads, out of order), CUPTI records go to the GPU join, and the Chrome-trace body is read
 * back as JSON. Communicators are registered in the real registry (capture/contexts.c). */
#include "asm_fixture.h"

/* Regression: an NCCL event without a communicator (comm serial 0: a PXN or stale context) in
 * a per-channel family used to share its track key with CUPTI's kernels of GPU 0 on the stream
 * whose id equals the channel (proxy recv and GPU streams were both family 8), and was drawn
 * on that GPU stream track under its name. */
TL_TEST(commless_event_and_gpu_kernels_get_their_own_tracks) {
  fixture f;
  fx_open(&f, 1);
  cl_gj_draw_compute(f.gj, 1);                 /* COMMLENS_CUPTI=full: compute kernels drawn */
  cl_gpu_activity k = {.start_ns = 1000000, .end_ns = 2000000, .correlation = 1, .device = 0, .stream = 7,
                       .kind = CL_GPU_KERNEL, .name = "computeKernel"};
  cl_gj_activity(f.gj, &k);                    /* no KernelLaunch seen: classified by name, drawn */
  cl_payload p;
  memset(&p, 0, sizeof p);
  p.proxy_op = (cl_proxy_op){.pid = 1, .peer = 1, .nsteps = 2, .chunk_size = 64, .channel = 7, .is_send = 0};
  uint64_t id = ev_id(1, 1);
  t_start(&f, id, CL_EV_PROXY_OP, 0, 0, 1500000, &p, CL_F_NO_COMM);
  t_stop(&f, id, 1600000);
  json_object *arr = body_json(&f);
  REQUIRE(arr, "body is not JSON");
  json_object *ker = find_slice(arr, "gpu_kernel", NULL), *op = find_slice(arr, "proxy_op", NULL);
  REQUIRE(ker && op, "kernel %p proxy op %p", (void *)ker, (void *)op);
  const char *kn = slice_track(arr, ker), *on = slice_track(arr, op);
  CHECK(tr_ph(op) == 'X' && on && kn && strcmp(on, kn), "proxy op drawn on the kernel's track (\"%s\")", kn ? kn : "?");
  CHECK(on && strstr(on, "proxy recv"), "proxy op track is \"%s\"", on ? on : "(none)");
  CHECK(kn && strstr(kn, "GPU 0 stream 7"), "kernel track is \"%s\"", kn ? kn : "(none)");
  json_object_put(arr);
  fx_close(&f);
}

/* A collective timed by its proxy ops: one op's start is read before its parent's (another
 * thread's ring was drained first): it waits as an orphan and is adopted at its stop. */
/* The collective (seq 5, `nch` channels) and its two proxy ops op1 (channel 1, read first:
 * started at 2 us, still open) and op2 (2.5-9 us); the collective stopped at 1.5 us. */
static const uint64_t early_coll = 1ull << CL_ID_SEQ_BITS | 1, early_op1 = 2ull << CL_ID_SEQ_BITS | 1,
                      early_op2 = 2ull << CL_ID_SEQ_BITS | 2;
static void early_op_first(fixture *f, uint8_t nch) {
  uint32_t comm = add_comm(0x1111222233334444ull, 0);
  REQUIRE(comm, "registry");
  cl_payload c = coll_payload(5, nch), p;
  memset(&p, 0, sizeof p);
  p.proxy_op = (cl_proxy_op){.pid = 1, .peer = 1, .nsteps = 1, .chunk_size = 64, .channel = 1, .is_send = 1};
  t_start(f, early_op1, CL_EV_PROXY_OP, comm, early_coll, 2000, &p, 0);     /* parent not seen yet */
  t_start(f, early_coll, CL_EV_COLL, comm, 0, 1000, &c, 0);
  p.proxy_op.channel = 0;
  t_start(f, early_op2, CL_EV_PROXY_OP, comm, early_coll, 2500, &p, 0);
  t_stop(f, early_coll, 1500);
  t_stop(f, early_op2, 9000);
}
/* The one collective finished, timed by its proxy ops from op1's start to `last_stop`: the
 * trace body (the caller's to put), or NULL. */
static json_object *proxy_timed(fixture *f, uint64_t last_stop) {
  cl_asm_stats st;
  cl_asm_get_stats(f->a, &st);
  CHECK(st.colls_done == 1 && st.colls_timed == 1, "done %llu timed %llu", (unsigned long long)st.colls_done,
        (unsigned long long)st.colls_timed);
  json_object *v, *arr = body_json(f), *g = arr ? find_slice(arr, "coll_gpu", "AllReduce") : NULL;
  char want[32];
  cl_fmt_us(want, (int64_t)(last_stop - 2000));
  int ok = g && !strcmp(slice_arg(g, "source"), "proxy") && json_object_object_get_ex(g, "ts", &v) &&
           !strcmp(json_object_get_string(v), "2.000") && json_object_object_get_ex(g, "dur", &v) &&
           !strcmp(json_object_get_string(v), want);
  CHECK(ok, "GPU span %s", g ? json_object_to_json_string(g) : "not drawn");
  if (!ok && arr) { json_object_put(arr); arr = NULL; }
  return arr;
}
TL_TEST(collective_timed_by_proxy_ops_with_an_orphan) {
  fixture f;
  fx_open(&f, 0);
  early_op_first(&f, 2);
  uint64_t op1 = early_op1;
  t_stop(&f, op1, 12000);
  cl_asm_tick(f.a, 12000, 1);
  cl_asm_stats st;
  cl_asm_get_stats(f.a, &st);
  CHECK(st.orphans == 1, "orphans %llu", (unsigned long long)st.orphans);
  json_object *arr = proxy_timed(&f, 12000);
  REQUIRE(arr, "not timed by its proxy ops");
  CHECK(count_cat(arr, "proxy_op") == 2 && count_cat(arr, "coll") == 1, "ops %d colls %d",
        count_cat(arr, "proxy_op"), count_cat(arr, "coll"));
  CHECK(count_cat(arr, "flow") == 2, "enqueue->gpu flow");
  json_object_put(arr);
  fx_close(&f);
}

/* The same, but the early op outlives the collective's grace: read before its parent, it still
 * holds the collective open once the parent is read (a slow recv op on NCCL's proxy thread,
 * drained before the thread that launched the collective: PyTorch DDP's autograd thread), and
 * is drawn as the collective's, inside its span. */
TL_TEST(an_early_child_holds_its_collective_open) {
  fixture f;
  fx_open(&f, 0);
  const uint64_t late = 2000 + 3 * CL_ASM_GRACE_NS / 2;
  early_op_first(&f, 0);   /* no channels to wait for: done at the grace */
  uint64_t op1 = early_op1;
  cl_asm_tick(f.a, 9000 + CL_ASM_GRACE_NS + 1000, 0);            /* past the grace; op1 still open */
  cl_asm_stats st;
  cl_asm_get_stats(f.a, &st);
  CHECK(st.colls_done == 0, "finished while a child it had was open");
  t_stop(&f, op1, late);
  cl_asm_tick(f.a, late + 2 * CL_ASM_GRACE_NS, 0);
  json_object *v, *arr = proxy_timed(&f, late);
  REQUIRE(arr, "not timed by its proxy ops");
  int ops = 0, linked = 0;
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    json_object *e = json_object_array_get_idx(arr, i);
    if (tr_ph(e) == 'e' || !json_object_object_get_ex(e, "cat", &v) || strcmp(json_object_get_string(v), "proxy_op"))
      continue;
    ops++;
    linked += slice_arg(e, "seq") && !strcmp(slice_arg(e, "seq"), "5");
  }
  CHECK(ops == 2 && linked == 2, "%d proxy ops, %d drawn as the collective's", ops, linked);
  json_object_put(arr);
  fx_close(&f);
}

/* KernelCh children give the span (host clock through the GPU clock estimate) and the tail
 * channel: the one that finished last. */
/* The trace of one AllReduce over two channels, channel 1 finishing last: its GPU span comes
 * from the channels, and both are drawn. */
static void check_two_channels(fixture *f) {
  json_object *arr = body_json(f);
  REQUIRE(arr, "body is not JSON");
  json_object *g = find_slice(arr, "coll_gpu", "AllReduce");
  REQUIRE(g, "no GPU span drawn");
  CHECK(!strcmp(slice_arg(g, "source"), "kernel_ch"), "source %s", slice_arg(g, "source"));
  CHECK(!strcmp(slice_arg(g, "tail_channel"), "1"), "tail channel %s", slice_arg(g, "tail_channel"));
  CHECK(count_cat(arr, "kernel_ch") == 2, "channel slices %d", count_cat(arr, "kernel_ch"));
  json_object_put(arr);
}

TL_TEST(collective_timed_by_kernel_channels) {
  fixture f;
  fx_open(&f, 0);
  uint32_t comm = add_comm(0x5555666677778888ull, 1);
  uint64_t coll = ev_id(1, 1);
  cl_payload c = coll_payload(7, 2), k;
  t_start(&f, coll, CL_EV_COLL, comm, 0, 1000000, &c, 0);
  t_stop(&f, coll, 1001000);
  const uint64_t gpu0 = 500000000;                /* GPU timer = host - 499 ms */
  for (int ch = 0; ch < 2; ch++) {
    memset(&k, 0, sizeof k);
    k.kernel_ch = (cl_kernel_ch){.ptimer = gpu0 + 1000000 + 10000u * (unsigned)ch, .channel = (uint8_t)ch};
    uint64_t id = ev_id(2, (uint64_t)ch + 1);
    /* the host sees each timer 2 us after the GPU wrote it */
    t_start(&f, id, CL_EV_KERNEL_CH, comm, coll, 1000000 + 10000u * (unsigned)ch + 2000, &k, 0);
    uint64_t stop_gpu = gpu0 + 1000000 + 50000u + 30000u * (unsigned)ch;
    t_small(&f, CL_REC_STATE, id, stop_gpu - gpu0 + 2000, CL_ST_KERNEL_CH_STOP, stop_gpu);
    t_stop(&f, id, stop_gpu - gpu0 + 3000);
  }
  cl_asm_tick(f.a, 2000000, 1);
  check_two_channels(&f);
  fx_close(&f);
}

/* A KernelCh as one record (CL_F_SPAN: the header and a cl_kch_tail; hotpath.c holds it back
 * when only a digest is written): `st` is its folded KernelChStop timer, seen `st_before` ns
 * before the stop. `nslots` other than 2 makes a broken span, which is not taken. */
static void t_span(fixture *f, uint64_t id, uint32_t comm, uint64_t parent, uint64_t ts, const cl_payload *p,
                   uint64_t stop_ts, uint64_t st, uint32_t st_before, unsigned nslots) {
  cl_rec r[3];
  memset(r, 0, sizeof r);
  r[0] = (cl_rec){.kind = CL_REC_START, .nslots = (uint8_t)nslots, .etype = CL_EV_KERNEL_CH, .flags = CL_F_SPAN,
                  .aux = comm, .id = id, .ts = ts, .arg = parent};
  cl_kch_tail t = {.ptimer = p->kernel_ch.ptimer, .stop_ts = stop_ts, .stop_arg = st, .stop_aux = st_before,
                   .channel = p->kernel_ch.channel, .stop_flags = CL_F_STOP_KCH_STATE};
  memcpy(&r[1], &t, sizeof t);
  cl_asm_feed(f->a, r);
}

/* The same collective with its channels as spans, one arriving before the collective's start
 * (its thread drained first): the same GPU span and tail channel, every channel drawn; a broken
 * span is counted as stale and draws nothing. */
TL_TEST(collective_timed_by_kernel_channel_spans) {
  fixture f;
  fx_open(&f, 0);
  uint32_t comm = add_comm(0x5555666677778899ull, 1);
  uint64_t coll = ev_id(1, 1);
  cl_payload c = coll_payload(7, 2), k[2];
  const uint64_t gpu0 = 500000000;
  for (int ch = 0; ch < 2; ch++) {
    memset(&k[ch], 0, sizeof k[ch]);
    k[ch].kernel_ch = (cl_kernel_ch){.ptimer = gpu0 + 1000000 + 10000u * (unsigned)ch, .channel = (uint8_t)ch};
  }
  uint64_t stop1 = gpu0 + 1000000 + 80000u;
  t_span(&f, ev_id(2, 2), comm, coll, 1012000, &k[1], stop1 - gpu0 + 3000, stop1, 1000, 2);
  t_start(&f, coll, CL_EV_COLL, comm, 0, 1000000, &c, 0);
  t_stop(&f, coll, 1001000);
  uint64_t stop0 = gpu0 + 1000000 + 50000u;
  t_span(&f, ev_id(2, 1), comm, coll, 1002000, &k[0], stop0 - gpu0 + 3000, stop0, 1000, 2);
  t_span(&f, ev_id(2, 3), comm, coll, 1002000, &k[0], stop0 - gpu0 + 3000, stop0, 1000, 3);
  cl_asm_tick(f.a, 2000000, 1);
  cl_asm_stats st;
  cl_asm_get_stats(f.a, &st);
  CHECK(st.stale == 1 && st.open_now == 0, "stale %llu (want 1), open %llu (want 0)", (unsigned long long)st.stale,
        (unsigned long long)st.open_now);
  check_two_channels(&f);
  fx_close(&f);
}

/* 20 collectives of one channel 10 ms apart from 1 ms: the GPU clock (host - 499 ms) calibrates. */
static const uint64_t cal_gpu0 = 500000000;
static void calibrate(fixture *f, uint32_t comm) {
  for (uint64_t i = 0; i < 20; i++) {
    uint64_t t0 = 1000000 + i * 10000000, coll = ev_id(3, i + 1), stop = cal_gpu0 + t0 + 50000;
    cl_payload c = coll_payload(100 + i, 1), k;
    memset(&k, 0, sizeof k);
    k.kernel_ch = (cl_kernel_ch){.ptimer = cal_gpu0 + t0, .channel = 0};
    t_start(f, coll, CL_EV_COLL, comm, 0, t0, &c, 0);
    t_stop(f, coll, t0 + 1000);
    t_span(f, ev_id(4, i + 1), comm, coll, t0 + 2000, &k, stop - cal_gpu0 + 3000, stop, 1000, 2);
  }
  cl_asm_tick(f->a, 300000000, 0);
}
/* One channel of the collective `coll` started at host time t0 (10 ms, calibrated), as a span. */
static void late_span(fixture *f, uint32_t comm, uint64_t coll, uint64_t t0) {
  cl_payload k;
  memset(&k, 0, sizeof k);
  k.kernel_ch = (cl_kernel_ch){.ptimer = cal_gpu0 + t0, .channel = 0};
  uint64_t stop = cal_gpu0 + t0 + 50000;
  t_span(f, ev_id(2, 1), comm, coll, t0 + 2000, &k, stop - cal_gpu0 + 3000, stop, 1000, 2);
}
static uint64_t timed_of(fixture *f, uint64_t *done) {
  cl_asm_stats st;
  cl_asm_get_stats(f->a, &st);
  *done = st.colls_done;
  return st.colls_timed;
}

/* A format thread starved for seconds on a busy machine (the lowest priority) reads a channel's
 * span from one ring, and only seconds later the collective's start from another (or the
 * other way round): the waits are measured to how far the rings were read (cl_asm_read_until),
 * not to the clock, so the two still meet. One collective and its channel, 1 s in: the first
 * read (the span when `span_first`), then the reader says it has read up to `read` (0: it never
 * says), a tick at `tick`, then the other. Returns whether the collective was GPU-timed. */
static const uint64_t late_t0 = 1000000000;
static int late_case(int span_first, uint64_t read, uint64_t tick) {
  fixture f;
  fx_open_out(&f, 0, CL_OUT_DIGEST);
  uint32_t comm = add_comm(0x5555666677779900ull + (uint64_t)span_first, 1);
  calibrate(&f, comm);
  uint64_t coll = ev_id(1, 1), done0, done;
  uint64_t timed0 = timed_of(&f, &done0);
  cl_payload c = coll_payload(7, 1);
  for (int k = 0; k < 2; k++) {
    if (k == span_first) {   /* the collective */
      t_start(&f, coll, CL_EV_COLL, comm, 0, late_t0 - 1000, &c, 0);
      t_stop(&f, coll, late_t0);
    } else {
      late_span(&f, comm, coll, late_t0);
    }
    if (k) break;
    if (read) cl_asm_read_until(f.a, read);
    cl_asm_tick(f.a, tick, 0);
  }
  cl_asm_tick(f.a, tick + 1000, 1);
  uint64_t timed = timed_of(&f, &done) - timed0;
  CHECK(timed0 == 20 && done - done0 == 1, "calibrating: %llu timed; then %llu done", (unsigned long long)timed0,
        (unsigned long long)(done - done0));
  fx_close(&f);
  return (int)timed;
}
TL_TEST(a_starved_reader_does_not_give_up_on_unread_parents) {
  const uint64_t later = late_t0 + 2000000000ull;   /* 2 s after the span */
  CHECK(late_case(1, late_t0 - 1000000, later) == 1, "the channel gave up on a parent not read yet");
  /* read past it, or never said: the orphan's 1 s is over, and its parent is not waited for */
  CHECK(late_case(1, later, later) == 0, "an orphan waited past its time with everything read");
  CHECK(late_case(1, 0, later) == 0, "an orphan waited past its time by the clock");
  /* a reader more than 30 s behind is waited for no longer */
  CHECK(late_case(1, late_t0 - 1000000, late_t0 + 32000000000ull) == 0, "waited on a reader 32 s behind");
}

/* The same for a collective whose channel is not read yet: it is not finished untimed while the
 * reader is behind, even past the 10 s a collective waits for its channels. */
TL_TEST(a_starved_reader_does_not_give_up_on_unread_channels) {
  const uint64_t later = late_t0 + 11000000000ull;
  CHECK(late_case(0, late_t0, later) == 1, "the collective gave up on a channel not read yet");
  CHECK(late_case(0, later, later) == 0, "the collective waited past its 10 s with everything read");
  CHECK(late_case(0, 0, later) == 0, "the collective waited past its 10 s by the clock");
}

/* 200 collectives of three channels 10 ms apart (the GPU clock calibrates on the way), each
 * channel fed as START, KernelChStop state and STOP records, or as one span; the digest's
 * bytes into *out, the events started into *starts. */
static void digest_of(int spans, cl_dg_buf *out, uint64_t *starts, uint64_t *folded) {
  fixture f;
  fx_open_out(&f, 0, CL_OUT_DIGEST);
  uint32_t comm = add_comm(0x5555666677770001ull, 0);
  const uint64_t gpu0 = 500000000;
  uint64_t n = 1;
  for (uint64_t i = 0; i < 200; i++) {
    uint64_t t0 = 1000000 + i * 10000000, coll = ev_id(1, n++);
    cl_payload c = coll_payload(i, 3), k;
    t_start(&f, coll, CL_EV_COLL, comm, 0, t0, &c, 0);
    t_stop(&f, coll, t0 + 1000);
    for (unsigned ch = 0; ch < 3; ch++) {
      memset(&k, 0, sizeof k);
      k.kernel_ch = (cl_kernel_ch){.ptimer = gpu0 + t0 + 1000 * ch, .channel = (uint8_t)ch};
      uint64_t id = ev_id(2, n++), start = t0 + 1000 * ch + 2000 + (i % 7) * 100;   /* the host late by 2-2.6 us */
      uint64_t stop_gpu = gpu0 + t0 + 50000 + 7000 * ch + (i % 5) * 3000, st = stop_gpu - gpu0 + 2000 + (i % 3) * 200;
      if (spans) {
        t_span(&f, id, comm, coll, start, &k, st + 1000, stop_gpu, 1000, 2);
      } else {
        t_start(&f, id, CL_EV_KERNEL_CH, comm, coll, start, &k, 0);
        t_small(&f, CL_REC_STATE, id, st, CL_ST_KERNEL_CH_STOP, stop_gpu);
        t_stop(&f, id, st + 1000);
      }
    }
    cl_asm_tick(f.a, t0 + 200000, 0);
  }
  cl_asm_tick(f.a, 3000000000ull, 1);
  cl_asm_stats st;
  cl_asm_get_stats(f.a, &st);
  *starts = st.starts;
  *folded = st.spans_folded;
  cl_part *p = cl_parts_of_dev(f.ps, -1);
  REQUIRE(p && p->dg && cl_digest_take(p->dg, out) == 0, "no digest");
  fx_close(&f);
}

/* COMMLENS_CHANNELS=sampled between CUPTI's windows: a collective of three channels whose one
 * recorded channel says so (CL_F_KCH_FIRST) is finished with that channel's span as soon as it
 * is read, not after waiting for the two never asked for, and counted; one with all three
 * channels measures how far one channel's span can be from the collective's (starts 1 us
 * apart, ends 7 us apart: 14 us); neither has a tail channel it does not know. */
TL_TEST(a_collective_timed_on_its_one_recorded_channel) {
  fixture f;
  fx_open_out(&f, 0, CL_OUT_DIGEST);
  uint32_t comm = add_comm(0x5555666677770002ull, 0);
  calibrate(&f, comm);
  uint64_t t0 = 400000000, full = ev_id(5, 1), one = ev_id(5, 2);
  cl_payload c = coll_payload(500, 3), k;
  t_start(&f, full, CL_EV_COLL, comm, 0, t0, &c, 0);
  t_stop(&f, full, t0 + 1000);
  for (unsigned ch = 0; ch < 3; ch++) {
    memset(&k, 0, sizeof k);
    k.kernel_ch = (cl_kernel_ch){.ptimer = cal_gpu0 + t0 + 1000 * ch, .channel = (uint8_t)ch};
    uint64_t stop = cal_gpu0 + t0 + 50000 + 7000 * ch;
    t_span(&f, ev_id(6, ch + 1), comm, full, t0 + 2000 + 1000 * ch, &k, stop - cal_gpu0 + 3000, stop, 1000, 2);
  }
  uint64_t t1 = t0 + 10000000;
  c = coll_payload(501, 3);
  t_start(&f, one, CL_EV_COLL, comm, 0, t1, &c, 0);
  t_stop(&f, one, t1 + 1000);
  memset(&k, 0, sizeof k);
  k.kernel_ch = (cl_kernel_ch){.ptimer = cal_gpu0 + t1, .channel = 1};
  uint64_t stop = cal_gpu0 + t1 + 50000;
  cl_rec r[2];
  memset(r, 0, sizeof r);
  r[0] = (cl_rec){.kind = CL_REC_START, .nslots = 2, .etype = CL_EV_KERNEL_CH, .flags = CL_F_SPAN | CL_F_KCH_FIRST,
                  .aux = comm, .id = ev_id(6, 4), .ts = t1 + 2000, .arg = one};
  cl_kch_tail tl = {.ptimer = k.kernel_ch.ptimer, .stop_ts = stop - cal_gpu0 + 3000, .stop_arg = stop, .stop_aux = 1000,
                    .channel = 1, .stop_flags = CL_F_STOP_KCH_STATE};
  memcpy(&r[1], &tl, sizeof tl);
  cl_asm_feed(f.a, r);
  cl_asm_read_until(f.a, t1 + 1000000);
  cl_asm_tick(f.a, t1 + 1000000, 0);   /* 1 ms on: long before a wait for two more channels ends */
  uint64_t done, timed = timed_of(&f, &done);
  CHECK(done == 22 && timed == 22, "done %llu, timed %llu (want 22 each: 20 to calibrate, two here)",
        (unsigned long long)done, (unsigned long long)timed);
  cl_part *p = cl_parts_of_dev(f.ps, -1);
  REQUIRE(p, "no participant");
  uint64_t m = cl_loghist_total(p->ch_spread_hist, CL_SPREAD_BUCKETS);
  uint64_t q = cl_loghist_quantile(p->ch_spread_hist, CL_SPREAD_BUCKETS, 0.5);
  CHECK(p->colls_one_ch == 1 && m == 1 && q > 14000 && q <= 16384,
        "one channel: %llu (want 1); spreads measured %llu (want 1), its bucket's top %llu ns (want 14 us's: 16384)",
        (unsigned long long)p->colls_one_ch, (unsigned long long)m, (unsigned long long)q);
  fx_close(&f);
}

/* Spans (the digest-only path: most folded into their collective with no event made) and
 * START/state/STOP records make the same digest, byte for byte. */
TL_TEST(kernel_channel_spans_make_the_same_digest) {
  cl_dg_buf a = {0}, b = {0};
  uint64_t sa = 0, sb = 0, fa = 0, fb = 0;
  digest_of(0, &a, &sa, &fa);
  digest_of(1, &b, &sb, &fb);
  CHECK(a.len > 400 && a.len == b.len && !memcmp(a.p, b.p, a.len), "digests differ: %zu and %zu bytes", a.len, b.len);
  CHECK(sa == 800 && sb == 800, "events started: %llu and %llu (want 800)", (unsigned long long)sa, (unsigned long long)sb);
  CHECK(fa == 0 && fb > 500, "spans folded straight: %llu and %llu (want 0, most of 600)", (unsigned long long)fa,
        (unsigned long long)fb);
  free(a.p);
  free(b.p);
}

/* The track budget whatever the job (tracks.h): 12 communicators, each with its channels'
 * detail drawn first and then a Send and a Recv of one group overlapping on its enqueue and GPU
 * tracks, several communicators' collectives overlapping in time. The rank stays within the
 * budget, every slice is kept on a track where it nests, the first communicators keep their
 * own enqueue and GPU tracks, overlaps share one track per kind, and the communicators past the
 * budget share one per kind. The shared overlap track has as many lanes as collectives of all
 * communicators overlap at once (here: two communicators at a time). */
TL_TEST(many_communicators_fit_the_track_budget) {
  cl_ct *ct = ct_new(0, 0);
  REQUIRE(ct, "ct_new");
  enum { NCOMM = 12, NCH = 6 };
  char name[96], buf[112];
  int slices = 0;
  for (uint32_t c = 1; c <= NCOMM; c++) {
    uint64_t t0 = 1000000 + (uint64_t)c * 3000;            /* two communicators at once */
    for (uint32_t ch = 0; ch < NCH; ch++) {
      snprintf(name, sizeof name, "comm %u: ch %u GPU", c, ch);
      cl_track_async(ct, CL_TRACK_CHANNEL_GPU, c, ch, name, buf, sizeof buf);
      uint64_t id = ct_async_id(ct);
      ct_async_begin(ct, id, buf, "kernel_ch", t0, 500);
      ct_slice_end(ct);
      ct_async_end(ct, id, "kernel_ch", t0 + 500);
    }
    for (int k = 0; k < 2; k++) {                            /* a Send and a Recv, one group */
      cl_track_family fam[2] = {CL_TRACK_ENQUEUE, CL_TRACK_COMM_GPU};
      for (int g = 0; g < 2; g++) {
        snprintf(name, sizeof name, "comm %u: %s", c, g ? "GPU" : "enqueue");
        uint64_t s = t0 + (uint64_t)k * 10 + (uint64_t)g * 100, e = s + 5000;
        uint32_t tid = cl_track_lane(ct, fam[g], c, 0, name, s, e);
        CHECK(tid != 0, "comm %u: no track for its %s", c, g ? "GPU span" : "enqueue");
        ct_slice_begin(ct, tid, k ? "Recv" : "Send", g ? "coll_gpu" : "coll", s, e - s);
        ct_slice_end(ct);
        slices++;
      }
    }
  }
  fixture f = {.ct = ct};
  json_object *arr = body_json(&f);                           /* every slice nests on its track */
  REQUIRE(arr, "body");
  int x = 0, own = 0, over = 0, fold = 0;
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    json_object *e = json_object_array_get_idx(arr, i), *v;
    if (json_object_object_get_ex(e, "cat", &v) && !strncmp(json_object_get_string(v), "coll", 4)) x++;
    if (!json_object_object_get_ex(e, "name", &v) || strcmp(json_object_get_string(v), "thread_name")) continue;
    const char *n = json_object_get_string(json_object_object_get(json_object_object_get(e, "args"), "name"));
    own += !strncmp(n, "comm ", 5);
    over += strstr(n, "overlapping collectives") != NULL;
    fold += strstr(n, "more communicators") != NULL;
  }
  CHECK(x == slices, "%d of %d enqueue and GPU slices drawn", x, slices);
  /* within the budget but for the overlap tracks' lanes past the first of each kind: at most 3
   * slices of a kind overlap at once here (a communicator's pair and the one before it) */
  CHECK(ct_track_count(ct) <= CL_TRACK_BUDGET + (uint32_t)(over - 2), "%u top-level tracks, budget %u + %d overlap lanes",
        ct_track_count(ct), CL_TRACK_BUDGET, over - 2);
  CHECK(own >= 2 && own % 2 == 0 && over >= 2 && over <= 6 && fold == 2,
        "%d own enqueue/GPU tracks (pairs), %d shared overlap tracks, %d shared tracks past the budget", own, over, fold);
  json_object_put(arr);
  ct_free(ct);
}

/* The track check every test runs on every trace it loads (tr_load) and body (body_json) works
 * in exact ns: at today's epoch a double holds microseconds only to 0.25 us, which both hides
 * partial overlaps of 1 ns and makes touching or nested slices look partially overlapping. */
TL_TEST(track_check_is_exact_to_the_ns) {
  char path[] = "/tmp/commlens-nest-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0, "mkstemp");
  FILE *fp = fdopen(fd, "w");
  REQUIRE(fp, "fdopen");
  fputs("{\"traceEvents\":[\n"   /* track 1 nests; in doubles "inner" ends 0.25 us after "outer" */
        "{\"ph\":\"X\",\"pid\":0,\"tid\":1,\"ts\":1795451710109491.516,\"dur\":1.000,\"cat\":\"a\",\"name\":\"outer\"},\n"
        "{\"ph\":\"X\",\"pid\":0,\"tid\":1,\"ts\":1795451710109491.640,\"dur\":0.876,\"cat\":\"a\",\"name\":\"inner\"},\n"
        "{\"ph\":\"X\",\"pid\":0,\"tid\":1,\"ts\":1795451710109492.516,\"dur\":0.001,\"cat\":\"a\",\"name\":\"next\"},\n"
        /* track 2: "second" ends 1 ns after "first" (in doubles both start and end together) */
        "{\"ph\":\"X\",\"pid\":0,\"tid\":2,\"ts\":1795451710109491.516,\"dur\":1.000,\"cat\":\"b\",\"name\":\"first\"},\n"
        "{\"ph\":\"X\",\"pid\":0,\"tid\":2,\"ts\":1795451710109491.517,\"dur\":1.000,\"cat\":\"b\",\"name\":\"second\"}\n"
        "]}\n", fp);
  fclose(fp);
  tr_trace t;
  char err[1024];
  int rc = tr_load(&t, path, err, sizeof err);
  unlink(path);
  CHECK(rc == -1 && strstr(err, "1 slices") && strstr(err, "\"second\" [1795451710109491517, 1795451710109492517)") &&
        strstr(err, "\"first\""), "tr_load: %d, %s", rc, err);
  if (rc == 0) tr_free(&t);
}

/* The async half of the track check (Perfetto's importer rules for b/e, per (pid, cat, id)):
 * ids matched, every "b" closed, no "e" without its "b", a child closed before its parent, a
 * "b"'s dur equal to its "e"; overlapping slices on other ids are fine. */
static int async_problem(const char *events, char *msg, size_t n) {
  char text[2048];
  snprintf(text, sizeof text, "[%s]", events);
  json_object *j = json_tokener_parse(text);
  if (!j) { snprintf(msg, n, "not JSON"); return -1; }
  int bad = tr_check_events(j, msg, n);
  json_object_put(j);
  return bad;
}
#define B(id, name, ts, dur) "{\"ph\":\"b\",\"pid\":0,\"cat\":\"c\",\"name\":\"" name "\",\"id2\":{\"local\":\"" id "\"},\"ts\":" ts ",\"dur\":" dur "}"
#define E(id, name, ts) "{\"ph\":\"e\",\"pid\":0,\"cat\":\"c\",\"name\":\"" name "\",\"id2\":{\"local\":\"" id "\"},\"ts\":" ts "}"
TL_TEST(async_check_pairs_ids_per_pid_cat_and_id) {
  char msg[512];
  /* two overlapping slices on ids 1 and 2, a child nested in 1 */
  CHECK(async_problem(B("0x1", "t", "1.000", "3.000") "," B("0x2", "t", "2.000", "3.000") "," B("0x1", "k", "1.500", "1.000") ","
                      E("0x1", "k", "2.500") "," E("0x1", "t", "4.000") "," E("0x2", "t", "5.000"), msg, sizeof msg) == 0,
        "overlapping async slices refused: %s", msg);
  CHECK(async_problem(E("0x1", "t", "4.000"), msg, sizeof msg) == 1 && strstr(msg, "without its \"b\""), "lone e: %s", msg);
  CHECK(async_problem(B("0x1", "t", "1.000", "3.000"), msg, sizeof msg) == 1 && strstr(msg, "never closed"), "lone b: %s", msg);
  CHECK(async_problem(B("0x1", "t", "1.000", "3.000") "," B("0x1", "k", "2.000", "3.000") "," E("0x1", "t", "4.000") ","
                      E("0x1", "k", "5.000"), msg, sizeof msg) >= 1 && strstr(msg, "not nested"), "child past parent: %s", msg);
  CHECK(async_problem(B("0x1", "t", "1.000", "2.000") "," E("0x1", "t", "4.000"), msg, sizeof msg) == 1 &&
        strstr(msg, "dur 2000 ns"), "dur unlike its e: %s", msg);
  /* the same id in another cat or pid is another track: its e closes nothing here */
  CHECK(async_problem(B("0x1", "t", "1.000", "3.000") "," E("0x1", "t", "4.000") ","
                      "{\"ph\":\"e\",\"pid\":1,\"cat\":\"c\",\"name\":\"t\",\"id2\":{\"local\":\"0x1\"},\"ts\":5.000}",
                      msg, sizeof msg) == 1, "e of another pid: %s", msg);
}
#undef B
#undef E

TL_MAIN("pipeline/assemble")
