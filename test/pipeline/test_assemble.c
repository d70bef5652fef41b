/* test_assemble.c: the assembler and the drawing behind it, without loading the plugin: records
 * are fed to cl_asm_feed as the format thread would (starts, stops and states of several
 * threads, out of order), CUPTI records go to the GPU join, and the Chrome-trace body is read
 * back as JSON. Communicators are registered in the real registry (capture/contexts.c). */
#include "tl.h"
#include "common/loghist.h"
#include "plugin/pipeline/asm_state.h"   /* cl_asm_open_event: an open event's bookkeeping */
#include "tr_load.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/grow.h"
#include "common/log.h"
#include "common/nccl.h"
#include "exporters/chrome_trace.h"
#include "exporters/strbuf.h"
#include "exporters/summary.h"
#include "plugin/capture/contexts.h"
#include "plugin/capture/ring.h"
#include "plugin/gpu/exposure.h"
#include "plugin/gpu/gpu_clock.h"
#include "plugin/gpu/gpu_join.h"
#include "plugin/output/names.h"
#include "plugin/output/nccl_slices.h"
#include "plugin/output/participants.h"
#include "plugin/gpu/gpu_slices.h"
#include "plugin/output/tracks.h"
#include "plugin/pipeline/assemble.h"
#include "plugin/pipeline/format.h"
#include "plugin/pipeline/self_stats.h"
#include "common/utf8.h"
#include <json-c/json.h>
#include <math.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
  cl_parts *ps;                 /* the communicators' GPU is not known: one participant */
  cl_ct *ct;                    /* ... its trace body and summary */
  cl_summary *sum;
  cl_gj *gj;
  cl_asm *a;
  uint64_t seq;
} fixture;

static void fx_open_out(fixture *f, int with_gpu, unsigned output) {
  memset(f, 0, sizeof *f);
  cl_config_load();
  cl_cfg.mask = CL_MASK_FULL;
  cl_cfg.output = output;
  static const cl_parts_deps pd = {.comm_count = cl_comm_count, .comm_lookup = cl_comm_lookup,
                                   .env_rank = -1, .env_source = "", .forced_rank = -1};
  f->ps = cl_parts_new(&pd);
  cl_part *p = cl_parts_of_dev(f->ps, -1);
  f->ct = p->ct;
  f->sum = p->sum;
  f->gj = with_gpu ? cl_gj_new(f->ps, with_gpu == 2) : NULL;   /* 2: the join by stream order */
  static const cl_asm_deps deps = {cl_comm_lookup, cl_comm_learn, cl_ring_os_tid};
  f->a = cl_asm_new(f->ps, f->gj, &deps);
}
/* these tests read what is drawn (the default is the digest) */
static void fx_open(fixture *f, int with_gpu) { fx_open_out(f, with_gpu, CL_OUT_TRACE); }
static void fx_close(fixture *f) {
  cl_asm_free(f->a);
  cl_gj_free(f->gj);
  cl_parts_free(f->ps);
}

/* Registers a 2-rank communicator in the registry; returns its serial. */
static uint32_t add_comm(uint64_t hash, int rank) {
  cl_comm_desc d = {.hash = hash, .nnodes = 1, .nranks = 2, .rank = rank, .abi = 5};
  void *ctx;
  uint32_t serial;
  int first;
  return cl_contexts_add(&d, -1, &ctx, &serial, &first) == 0 ? serial : 0;
}

static cl_payload coll_payload(uint64_t seq, uint8_t nchannels) {
  cl_payload p;
  memset(&p, 0, sizeof p);
  p.coll = (cl_coll){.seq = seq, .func = "AllReduce", .datatype = "ncclFloat32", .algo = "RING", .proto = "LL",
                     .count = 1024, .nchannels = nchannels, .nwarps = 4};
  return p;
}

/* A record of thread `thr`: ids are (thread serial << CL_ID_SEQ_BITS) | sequence, as the hot
 * path makes them. */
static uint64_t ev_id(uint32_t thr, uint64_t n) { return ((uint64_t)thr << CL_ID_SEQ_BITS) | n; }

static void t_start(fixture *f, uint64_t id, unsigned etype, uint32_t comm, uint64_t parent,
                       uint64_t ts, const cl_payload *p, unsigned flags) {
  cl_start_rec r;
  memset(&r, 0, sizeof r);
  r.hdr.kind = CL_REC_START;
  r.hdr.nslots = 4;
  r.hdr.etype = (uint8_t)etype;
  r.hdr.flags = (uint8_t)flags;
  r.hdr.aux = comm;
  r.hdr.id = id;
  r.hdr.ts = ts;
  r.hdr.arg = parent;
  if (p) r.p = *p;
  cl_asm_feed(f->a, &r.hdr);
}
static void t_small(fixture *f, unsigned kind, uint64_t id, uint64_t ts, uint32_t aux, uint64_t arg) {
  cl_rec r;
  memset(&r, 0, sizeof r);
  r.kind = (uint8_t)kind;
  r.nslots = 1;
  r.aux = aux;
  r.id = id;
  r.ts = ts;
  r.arg = arg;
  cl_asm_feed(f->a, &r);
}
static void t_stop(fixture *f, uint64_t id, uint64_t ts) { t_small(f, CL_REC_STOP, id, ts, 0, 0); }

/* The trace body as a JSON array, held to the track rules like every trace the tests load
 * (tr_load.h: its slices nest on their tracks); and the names of its tracks. */
static json_object *body_json(fixture *f) {
  cl_sb *b = ct_body(f->ct);
  cl_sb t = {0};
  sb_puts(&t, "[");
  sb_put(&t, b->p, b->len);
  sb_puts(&t, "]");
  json_object *j = json_tokener_parse(t.p);
  if (!j) fprintf(stderr, "body: %.*s\n", (int)t.len, t.p);
  sb_free(&t);
  char msg[512];
  int bad = j ? tr_check_events(j, msg, sizeof msg) : 0;
  CHECK(bad == 0, "%d slices of the body break the track rules; first: %s", bad, msg);
  if (j && !bad) tr_async_as_slices(j);
  return j;
}
static const char *track_name(json_object *arr, int tid) {
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    json_object *e = json_object_array_get_idx(arr, i), *v;
    if (!json_object_object_get_ex(e, "name", &v) || strcmp(json_object_get_string(v), "thread_name")) continue;
    if (!json_object_object_get_ex(e, "tid", &v) || json_object_get_int(v) != tid) continue;
    json_object *args, *n;
    if (json_object_object_get_ex(e, "args", &args) && json_object_object_get_ex(args, "name", &n))
      return json_object_get_string(n);
  }
  return NULL;
}
/* The first slice with this cat (and name, if given); NULL if none. */
/* The next slice of category `cat` (and `name`, unless NULL) from index *i on, *i then past it;
 * NULL when there is none. */
static json_object *next_slice(json_object *arr, size_t *i, const char *cat, const char *name) {
  for (; *i < json_object_array_length(arr); (*i)++) {
    json_object *e = json_object_array_get_idx(arr, *i), *v;
    if (!json_object_object_get_ex(e, "cat", &v) || strcmp(json_object_get_string(v), cat)) continue;
    if (name && (!json_object_object_get_ex(e, "name", &v) || strcmp(json_object_get_string(v), name))) continue;
    (*i)++;
    return e;
  }
  return NULL;
}
static json_object *find_slice(json_object *arr, const char *cat, const char *name) {
  size_t i = 0;
  return next_slice(arr, &i, cat, name);
}
static int slice_tid(json_object *e) { json_object *v; return json_object_object_get_ex(e, "tid", &v) ? json_object_get_int(v) : -1; }
/* The track a slice is on: its thread track's name, or for an async slice (tid "async ...",
 * tr_async_as_slices) the name it carries, which names its track. */
static const char *slice_track(json_object *arr, json_object *e) {
  char tid[256];
  tr_tid_key(e, tid, sizeof tid);
  return strncmp(tid, "async ", 6) ? track_name(arr, slice_tid(e)) : tr_name(e);
}
static const char *slice_arg(json_object *e, const char *k) {
  json_object *a, *v;
  return json_object_object_get_ex(e, "args", &a) && json_object_object_get_ex(a, k, &v) ? json_object_get_string(v) : NULL;
}
static int count_cat(json_object *arr, const char *cat) {   /* slices: an async slice's "e" is not one */
  int n = 0;
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    json_object *v, *e = json_object_array_get_idx(arr, i);
    if (tr_ph(e) == 'e') continue;
    if (json_object_object_get_ex(e, "cat", &v) && !strcmp(json_object_get_string(v), cat)) n++;
  }
  return n;
}

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

/* The summary's GPU timing line for the fixture's one participant, `colls` collectives all timed. */
static void gpu_line(fixture *f, uint64_t colls, char *line, size_t n) {
  cl_format_deps run;
  memset(&run, 0, sizeof run);
  run.gj = f->gj;
  cl_run_stats rs;
  memset(&rs, 0, sizeof rs);
  rs.colls_done = rs.colls_timed = colls;
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
  gpu_line(&f, 2, line, sizeof line);
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
  gpu_line(&f, 1, line, sizeof line);
  CHECK(strstr(line, "1 more outside them") && strstr(line, "exposure not known") && !strstr(line, "ms estimated"),
        "summary line: %s", line);
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

TL_MAIN("pipeline/assemble")
