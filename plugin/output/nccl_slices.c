/* nccl_slices.c: see nccl_slices.h. Formatting only: no lifetimes, no totals. */
#include "plugin/output/nccl_slices.h"
#include "plugin/output/names.h"
#include "common/nccl.h"
#include "plugin/output/tracks.h"
#include <stdio.h>
#include <string.h>

/* ---- emission helpers ---- */
static const cl_comm_facts *facts_of(const cl_draw *d, uint32_t comm) {
  return comm ? d->comm(d->arg, comm) : NULL;
}
static void common_args(const cl_draw *d, cl_sb *b, int *first, uint32_t comm, uint64_t fallback_hash) {
  const cl_comm_facts *c = facts_of(d, comm);
  sb_key(b, first, "comm");
  sb_puts(b, "\"");
  uint64_t h = c && c->hash ? c->hash : fallback_hash;
  sb_hex(b, h);
  sb_puts(b, "\"");
  if (c) {
    sb_key(b, first, "comm_name"); sb_jstr(b, c->name);
    sb_key(b, first, "rank"); sb_i64(b, c->rank);
    sb_key(b, first, "nranks"); sb_i64(b, c->nranks);
  }
}
static const char *label(const cl_draw *d, uint32_t comm) {
  const cl_comm_facts *c = facts_of(d, comm);
  return c ? c->label : "comm ?";
}
static uint32_t lane(const cl_draw *d, cl_track_family f, uint32_t comm, uint32_t ch, const char *name, uint64_t s, uint64_t e) {
  return cl_track_lane(d->ct, f, comm, ch, name, s, e);
}

/* An async slice of the detail family f (tracks.h: cl_track_async): opened with its args to
 * follow, closed by ct_slice_end and then aslice_close (after any children on its id). */
typedef struct { uint64_t id; const char *cat; char track[112]; } aslice;
static int aslice_open(const cl_draw *d, aslice *a, cl_track_family f, uint32_t comm, uint32_t ch, const char *fam,
                       const char *cat, uint64_t s, uint64_t e) {
  cl_track_async(d->ct, f, comm, ch, fam, a->track, sizeof a->track);
  a->id = ct_async_id(d->ct);
  a->cat = cat;
  return ct_async_begin(d->ct, a->id, a->track, cat, s, e - s);
}
static void aslice_close(const cl_draw *d, const aslice *a, uint64_t s, uint64_t e) {
  ct_async_end(d->ct, a->id, a->cat, e < s ? s : e);
}

/* The application's v7 tag (0: untagged, not written), as a decimal string: JSON readers that
 * hold numbers as doubles would round tags past 2^53. */
static void tag_arg(cl_sb *b, int *first, uint64_t tag) {
  if (!tag) return;
  sb_key(b, first, "user_tag"); sb_puts(b, "\""); sb_u64(b, tag); sb_puts(b, "\"");
}

const char *cl_nccl_ev_func(const cl_nccl_ev *c) {
  return c->etype == CL_EV_COLL ? c->p.coll.func : c->etype == CL_EV_P2P ? c->p.p2p.func : NULL;
}

static uint64_t clamp(uint64_t v, uint64_t lo, uint64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ---- per-type emission at stop ---- */
void cl_draw_api(const cl_draw *d, const cl_nccl_ev *e) {
  char fam[64], name[64];
  int grp = e->etype == CL_EV_GROUP_API;
  int tid_os = d->os_tid(d->arg, e->thread);
  snprintf(fam, sizeof fam, grp ? "NCCL API groups (tid %d)" : "NCCL API (tid %d)", tid_os);
  uint32_t tid = cl_track_lane(d->ct, grp ? CL_TRACK_API_GROUPS : CL_TRACK_API, e->thread, 0, fam,
                               e->start, e->stop);
  if (grp) snprintf(name, sizeof name, "ncclGroup");
  else if (e->etype == CL_EV_KERNEL_LAUNCH) snprintf(name, sizeof name, "KernelLaunch");
  else snprintf(name, sizeof name, "nccl%s", e->p.coll_api.func ? e->p.coll_api.func : "?");
  int first = ct_slice_begin(d->ct, tid, name, "api", e->start, e->stop - e->start);
  cl_sb *b = ct_body(d->ct);
  common_args(d, b, &first, e->comm, 0);
  if (e->etype == CL_EV_COLL_API || e->etype == CL_EV_P2P_API) {
    sb_key(b, &first, "count"); sb_u64(b, e->p.coll_api.count);
    sb_key(b, &first, "datatype"); sb_jstr(b, e->p.coll_api.datatype);
    if (e->etype == CL_EV_COLL_API) { sb_key(b, &first, "root"); sb_i64(b, e->p.coll_api.root); }
    sb_key(b, &first, "stream"); sb_puts(b, "\""); sb_hex(b, e->p.coll_api.stream); sb_puts(b, "\"");
    sb_key(b, &first, "graph_captured"); sb_puts(b, e->p.coll_api.graph_captured ? "true" : "false");
    tag_arg(b, &first, e->p.coll_api.user_tag);
  } else if (e->etype == CL_EV_KERNEL_LAUNCH) {
    sb_key(b, &first, "stream"); sb_puts(b, "\""); sb_hex(b, e->p.kernel_launch.stream); sb_puts(b, "\"");
  } else {
    sb_key(b, &first, "depth"); sb_i64(b, e->p.group_api.depth);
    sb_key(b, &first, "graph_captured"); sb_puts(b, e->p.group_api.graph_captured ? "true" : "false");
  }
  ct_slice_end(d->ct);
}

uint32_t cl_draw_enqueue(const cl_draw *d, const cl_nccl_ev *e) {
  char fam[96];
  const char *lab = label(d, e->comm);
  cl_sb *b = ct_body(d->ct);
  if (e->etype == CL_EV_GROUP) {
    snprintf(fam, sizeof fam, "%s: groups", lab);
    aslice a;
    int first = aslice_open(d, &a, CL_TRACK_GROUPS, e->comm, 0, fam, "group", e->start, e->stop);
    sb_key(b, &first, "event"); sb_puts(b, "\"Group\"");
    common_args(d, b, &first, e->comm, 0);
    ct_slice_end(d->ct);
    aslice_close(d, &a, e->start, e->stop);
    return 0;
  }
  snprintf(fam, sizeof fam, "%s: enqueue", lab);
  uint32_t tid = lane(d, CL_TRACK_ENQUEUE, e->comm, 0, fam, e->start, e->stop);
  const cl_comm_facts *c = facts_of(d, e->comm);
  int nranks = c ? c->nranks : -1;
  if (e->etype == CL_EV_COLL) {
    const cl_coll *k = &e->p.coll;
    int first = ct_slice_begin(d->ct, tid, k->func ? k->func : "?", "coll", e->start, e->stop - e->start);
    common_args(d, b, &first, e->comm, k->comm_hash);
    sb_key(b, &first, "seq"); sb_u64(b, k->seq);
    sb_key(b, &first, "count"); sb_u64(b, k->count);
    sb_key(b, &first, "datatype"); sb_jstr(b, k->datatype);
    sb_key(b, &first, "root"); sb_i64(b, k->root);
    sb_key(b, &first, "algo"); sb_jstr(b, k->algo);
    sb_key(b, &first, "proto"); sb_jstr(b, k->proto);
    sb_key(b, &first, "nchannels"); sb_u64(b, k->nchannels);
    sb_key(b, &first, "nwarps"); sb_u64(b, k->nwarps);
    sb_key(b, &first, "bytes"); sb_u64(b, cl_coll_bytes(k->func, k->count, k->datatype, nranks));
    sb_key(b, &first, "Collective name"); sb_jstr(b, k->func);
    sb_key(b, &first, "In msg nelems"); sb_u64(b, k->count);
    sb_key(b, &first, "Group size"); sb_i64(b, nranks);
    sb_key(b, &first, "Seq"); sb_u64(b, k->seq);
    tag_arg(b, &first, k->user_tag);
    if (e->flags & CL_F_UNTIMED) { sb_key(b, &first, "gpu_timers"); sb_puts(b, "\"left out\""); }
  } else if (e->etype == CL_EV_P2P) {
    const cl_p2p *k = &e->p.p2p;
    int first = ct_slice_begin(d->ct, tid, k->func ? k->func : "?", "p2p", e->start, e->stop - e->start);
    common_args(d, b, &first, e->comm, k->comm_hash);
    sb_key(b, &first, "peer"); sb_i64(b, k->peer);
    sb_key(b, &first, "count"); sb_u64(b, k->count);
    sb_key(b, &first, "datatype"); sb_jstr(b, k->datatype);
    sb_key(b, &first, "nchannels"); sb_u64(b, k->nchannels);
    sb_key(b, &first, "bytes"); sb_u64(b, (uint64_t)k->count * (uint64_t)cl_datatype_size(k->datatype));
    tag_arg(b, &first, k->user_tag);
  }
  ct_slice_end(d->ct);
  return tid;
}

void cl_draw_coll_gpu(const cl_draw *d, const cl_nccl_ev *c, uint64_t s, uint64_t e, const char *src,
                      int64_t exposed_ns, int expo_est, uint64_t bytes, const char *gpu_timing) {
  const char *func = cl_nccl_ev_func(c);
  char fam[96];
  snprintf(fam, sizeof fam, "%s: GPU", label(d, c->comm));
  uint32_t tid = lane(d, CL_TRACK_COMM_GPU, c->comm, 0, fam, s, e);
  cl_sb *b = ct_body(d->ct);
  int first = ct_slice_begin(d->ct, tid, func ? func : "?", "coll_gpu", s, e - s);
  common_args(d, b, &first, c->comm, c->etype == CL_EV_COLL ? c->p.coll.comm_hash : c->p.p2p.comm_hash);
  if (c->etype == CL_EV_COLL) {
    sb_key(b, &first, "seq"); sb_u64(b, c->p.coll.seq);
    sb_key(b, &first, "algo"); sb_jstr(b, c->p.coll.algo);
    sb_key(b, &first, "proto"); sb_jstr(b, c->p.coll.proto);
    sb_key(b, &first, "nchannels"); sb_u64(b, c->p.coll.nchannels);
  } else {
    sb_key(b, &first, "p2p_peer"); sb_i64(b, c->p.p2p.peer);
    sb_key(b, &first, "nchannels"); sb_u64(b, c->p.p2p.nchannels);
  }
  sb_key(b, &first, "bytes"); sb_u64(b, bytes);
  sb_key(b, &first, "source"); sb_jstr(b, src);
  if (c->tail_ch >= 0) { sb_key(b, &first, "tail_channel"); sb_i64(b, c->tail_ch); }
  if (exposed_ns >= 0) { sb_key(b, &first, "exposed_ns"); sb_i64(b, exposed_ns); }
  if (expo_est) { sb_key(b, &first, "exposure"); sb_jstr(b, "estimated"); }
  if (gpu_timing) { sb_key(b, &first, "gpu_timing"); sb_jstr(b, gpu_timing); }
  tag_arg(b, &first, c->user_tag);
  if (c->ph_n) {   /* v7 kernel phases: per phase, the longest any channel spent in it */
    sb_key(b, &first, "sync_wait_ns"); sb_u64(b, c->ph_ns[0]);
    sb_key(b, &first, "compute_ns"); sb_u64(b, c->ph_ns[1]);
    sb_key(b, &first, "final_sync_ns"); sb_u64(b, c->ph_ns[2]);
    sb_key(b, &first, "phase_channels"); sb_u64(b, c->ph_n);
  }
  ct_slice_end(d->ct);
  if (c->enq_tid) ct_flow(d->ct, c->id, c->enq_tid, c->enq_ts, tid, s);
}

void cl_draw_gpu_lost(const cl_draw *d, const cl_nccl_ev *c, const char *why, uint64_t nlost) {
  char name[128];
  snprintf(name, sizeof name, "GPU timing %s", why);
  ct_counter(d->ct, name, c->stop, "collectives", (int64_t)nlost);
}

/* The v7 phases of a KernelCh drawn on host clock [s, t], nested in it on its lane: each placed
 * by its GPU timers relative to the channel's start (one offset, so no clock error between
 * them), clipped to the channel and to the next phase (async times are each read on their own).
 * Children of the channel's async slice: its id and cat (so a viewer nests them), "phase". */
static void draw_phases(const cl_draw *d, const cl_nccl_ev *e, const aslice *a, uint64_t s, uint64_t t) {
  static const char *const names[3] = {"initial_sync", "compute", "final_sync"};
  uint64_t ps[3], pt[3], at = s;
  for (int i = 0; i < 3; i++) {
    ps[i] = pt[i] = at;
    if (!e->ph_t[i] || e->ph_s[i] < e->p.kernel_ch.ptimer) continue;
    ps[i] = clamp(s + (e->ph_s[i] - e->p.kernel_ch.ptimer), at, t);
    pt[i] = clamp(s + (e->ph_t[i] - e->p.kernel_ch.ptimer), ps[i], t);
    at = pt[i];
  }
  for (int i = 0; i < 3; i++) {
    if (!e->ph_t[i] || pt[i] == ps[i]) continue;
    cl_sb *b = ct_body(d->ct);
    int first = ct_async_begin(d->ct, a->id, names[i], a->cat, ps[i], pt[i] - ps[i]);
    sb_key(b, &first, "phase"); sb_puts(b, "true");   /* no channel arg: readers take it for a channel */
    sb_key(b, &first, "gpu_start_ns"); sb_u64(b, e->ph_s[i]);
    sb_key(b, &first, "gpu_stop_ns"); sb_u64(b, e->ph_t[i]);
    ct_slice_end(d->ct);
    ct_async_end(d->ct, a->id, a->cat, pt[i]);
  }
}

void cl_draw_kernel_ch(const cl_draw *d, const cl_nccl_ev *e, const cl_nccl_ev *parent, uint64_t s, uint64_t t,
                       uint64_t stop_pt, int implausible) {
  char fam[96];
  snprintf(fam, sizeof fam, "%s: ch %u GPU", label(d, e->comm), e->p.kernel_ch.channel);
  aslice a;
  cl_sb *b = ct_body(d->ct);
  int first = aslice_open(d, &a, CL_TRACK_CHANNEL_GPU, e->comm, e->p.kernel_ch.channel, fam, "kernel_ch", s, t);
  common_args(d, b, &first, e->comm, 0);
  sb_key(b, &first, "channel"); sb_u64(b, e->p.kernel_ch.channel);
  if (parent) {
    if (parent->etype == CL_EV_COLL) { sb_key(b, &first, "seq"); sb_u64(b, parent->p.coll.seq); }
    sb_key(b, &first, "func"); sb_jstr(b, cl_nccl_ev_func(parent));
  }
  if (parent) tag_arg(b, &first, parent->user_tag);
  sb_key(b, &first, "gpu_start_ns"); sb_u64(b, e->p.kernel_ch.ptimer);
  sb_key(b, &first, "gpu_stop_ns"); sb_u64(b, stop_pt);
  if (implausible) { sb_key(b, &first, "implausible"); sb_puts(b, "true"); }
  ct_slice_end(d->ct);
  if (!implausible) draw_phases(d, e, &a, s, t);
  aslice_close(d, &a, s, t);
}

void cl_draw_proxy_op(const cl_draw *d, const cl_nccl_ev *e, const cl_nccl_ev *parent) {
  const cl_proxy_op *op = &e->p.proxy_op;
  char fam[112];
  snprintf(fam, sizeof fam, "%s: ch %u proxy %s", label(d, e->comm), op->channel, op->is_send ? "send" : "recv");
  aslice a;
  cl_sb *b = ct_body(d->ct);
  /* the slice carries its track's name (ct_async_track says why); "op" says what it is */
  int first = aslice_open(d, &a, op->is_send ? CL_TRACK_PROXY_SEND : CL_TRACK_PROXY_RECV, e->comm, op->channel, fam,
                          "proxy_op", e->start, e->stop);
  sb_key(b, &first, "op"); sb_puts(b, op->is_send ? "\"send\"" : "\"recv\"");
  common_args(d, b, &first, e->comm, 0);
  sb_key(b, &first, "channel"); sb_u64(b, op->channel);
  sb_key(b, &first, "peer"); sb_i64(b, op->peer);
  sb_key(b, &first, "nsteps"); sb_i64(b, op->nsteps);
  sb_key(b, &first, "chunk_size"); sb_i64(b, op->chunk_size);
  sb_key(b, &first, "bytes"); sb_u64(b, e->bytes);
  if (parent) {
    if (parent->etype == CL_EV_COLL) { sb_key(b, &first, "seq"); sb_u64(b, parent->p.coll.seq); }
    sb_key(b, &first, "func"); sb_jstr(b, cl_nccl_ev_func(parent));
  }
  if (e->flags & CL_F_FOREIGN) { sb_key(b, &first, "pxn_pid"); sb_i64(b, op->pid); }
  ct_slice_end(d->ct);
  aslice_close(d, &a, e->start, e->stop);
}


/* Where a step's phases are drawn: phase i runs from its state's time to the next state's (the
 * last to the step's stop), clipped to the step and to the end of the phase before it. So the
 * phases nest in their step and follow one another whatever their times say (a state read on
 * another thread can be timed outside the step, or arrive out of order). */
static void step_phases(const cl_nccl_ev *e, uint64_t s[], uint64_t t[]) {
  uint64_t at = e->start;
  for (int i = 0; i < e->nst; i++) {
    s[i] = clamp(e->st[i].ts, at, e->stop);
    t[i] = clamp(i + 1 < e->nst ? e->st[i + 1].ts : e->stop, s[i], e->stop);
    at = t[i];
  }
}

void cl_step_waits(const cl_nccl_ev *e, uint64_t w[CL_STEP_NWAITS]) {
  uint64_t ns[CL_ST__MAX + 1] = {0}, ps[sizeof e->st / sizeof e->st[0]], pt[sizeof e->st / sizeof e->st[0]];
  step_phases(e, ps, pt);
  for (int i = 0; i < e->nst; i++)
    if (e->st[i].st <= CL_ST__MAX) ns[e->st[i].st] += pt[i] - ps[i];
  static const uint8_t which[CL_STEP_NWAITS] = {CL_ST_STEP_SEND_GPU_WAIT, CL_ST_STEP_SEND_PEER_WAIT, CL_ST_STEP_SEND_WAIT,
                                                CL_ST_STEP_RECV_WAIT, CL_ST_STEP_RECV_FLUSH_WAIT, CL_ST_STEP_RECV_GPU_WAIT};
  for (int k = 0; k < CL_STEP_NWAITS; k++) w[k] = ns[which[k]];
}

void cl_draw_proxy_step(const cl_draw *d, const cl_nccl_ev *e, const cl_nccl_ev *op, uint64_t bytes) {
  int send = op ? op->p.proxy_op.is_send : 0;
  unsigned ch = op ? op->p.proxy_op.channel : 0;
  uint64_t ps[sizeof e->st / sizeof e->st[0]], pt[sizeof e->st / sizeof e->st[0]], w[CL_STEP_NWAITS];
  step_phases(e, ps, pt);
  cl_step_waits(e, w);
  char fam[112];
  snprintf(fam, sizeof fam, "%s: ch %u %s steps", label(d, e->comm), ch, send ? "send" : "recv");
  aslice a;
  cl_sb *b = ct_body(d->ct);
  int first = aslice_open(d, &a, send ? CL_TRACK_STEPS_SEND : CL_TRACK_STEPS_RECV, e->comm, ch, fam, "proxy_step",
                          e->start, e->stop);
  common_args(d, b, &first, e->comm, 0);
  sb_key(b, &first, "channel"); sb_u64(b, ch);
  if (op) { sb_key(b, &first, "peer"); sb_i64(b, op->p.proxy_op.peer); }
  sb_key(b, &first, "step"); sb_i64(b, e->p.proxy_step.step);
  sb_key(b, &first, "bytes"); sb_u64(b, bytes);
  sb_key(b, &first, "gpu_wait_ns"); sb_u64(b, w[CL_STEP_W_GPU]);
  sb_key(b, &first, "peer_wait_ns"); sb_u64(b, w[CL_STEP_W_PEER]);
  sb_key(b, &first, "send_wait_ns"); sb_u64(b, w[CL_STEP_W_SEND]);
  sb_key(b, &first, "recv_wait_ns"); sb_u64(b, w[CL_STEP_W_RECV]);
  sb_key(b, &first, "flush_wait_ns"); sb_u64(b, w[CL_STEP_W_FLUSH]);
  sb_key(b, &first, "recv_gpu_wait_ns"); sb_u64(b, w[CL_STEP_W_RECV_GPU]);
  ct_slice_end(d->ct);
  /* the phases: children of the step on its async track (same id and cat, so Perfetto nests
   * them there), one after another; async times are each read on their own, so a viewer's
   * rounding keeps their order (no duration is added to a rounded start) */
  for (int i = 0; i < e->nst; i++) {
    ct_async_begin(d->ct, a.id, cl_state_name(e->st[i].st), a.cat, ps[i], pt[i] - ps[i]);
    sb_puts(b, "\"phase\":true");
    ct_slice_end(d->ct);
    ct_async_end(d->ct, a.id, a.cat, pt[i]);
  }
  aslice_close(d, &a, e->start, e->stop);
}

void cl_draw_other(const cl_draw *d, const cl_nccl_ev *e) {
  char fam[112];
  cl_sb *b = ct_body(d->ct);
  int first;
  switch (e->etype) {
  case CL_EV_PROXY_CTRL: {
    const char *nm = e->nst ? cl_state_name(e->st[0].st) : "ProxyCtrl";
    int appended = -1;
    for (int i = 0; i < e->nst; i++) if (e->st[i].st == CL_ST_CTRL_APPEND_END) appended = (int)(uint32_t)e->st[i].arg;
    snprintf(fam, sizeof fam, "%s: proxy progress", label(d, e->comm));
    aslice a;
    first = aslice_open(d, &a, CL_TRACK_PROXY_CTRL, e->comm, 0, fam, "proxy_ctrl", e->start, e->stop);
    sb_key(b, &first, "state"); sb_jstr(b, nm);
    common_args(d, b, &first, e->comm, 0);
    if (appended >= 0) { sb_key(b, &first, "appended_ops"); sb_i64(b, appended); }
    ct_slice_end(d->ct);
    aslice_close(d, &a, e->start, e->stop);
    break;
  }
  case CL_EV_NET_PLUGIN: {
    uint32_t type = (uint32_t)e->p.net.id & 0xFFFF0000u;
    snprintf(fam, sizeof fam, "%s: net", label(d, e->comm));
    aslice a;
    first = aslice_open(d, &a, CL_TRACK_NET, e->comm, 0, fam, "net", e->start, e->stop);
    sb_key(b, &first, "transport"); sb_puts(b, type == 0x10000u ? "\"ib\"" : type == 0x20000u ? "\"socket\"" : "\"net\"");
    common_args(d, b, &first, e->comm, 0);
    sb_key(b, &first, "plugin_id"); sb_puts(b, "\""); sb_hex(b, (uint64_t)e->p.net.id); sb_puts(b, "\"");
    cl_net_args(b, &first, &e->p.net);
    ct_slice_end(d->ct);
    aslice_close(d, &a, e->start, e->stop);
    break;
  }
  case CL_EV_CE_COLL: case CL_EV_CE_SYNC: case CL_EV_CE_BATCH: {
    snprintf(fam, sizeof fam, "%s: copy engine", label(d, e->comm));
    aslice a;
    first = aslice_open(d, &a, CL_TRACK_COPY_ENGINE, e->comm, 0, fam, "ce", e->start, e->stop);
    sb_key(b, &first, "event"); sb_jstr(b, cl_event_name(e->etype));
    common_args(d, b, &first, e->comm, 0);
    if (e->etype == CL_EV_CE_COLL) {
      sb_key(b, &first, "func"); sb_jstr(b, e->p.ce_coll.func);
      sb_key(b, &first, "seq"); sb_u64(b, e->p.ce_coll.seq);
      sb_key(b, &first, "count"); sb_u64(b, e->p.ce_coll.count);
      sb_key(b, &first, "datatype"); sb_jstr(b, e->p.ce_coll.datatype);
      sb_key(b, &first, "sync"); sb_jstr(b, e->p.ce_coll.sync_strategy);
      sb_key(b, &first, "batches"); sb_u64(b, e->p.ce_coll.num_batches);
      tag_arg(b, &first, e->p.ce_coll.user_tag);
    } else if (e->etype == CL_EV_CE_BATCH) {
      sb_key(b, &first, "ops"); sb_i64(b, e->p.ce_batch.num_ops);
      sb_key(b, &first, "bytes"); sb_u64(b, e->p.ce_batch.total_bytes);
    } else {
      sb_key(b, &first, "nranks"); sb_i64(b, e->p.ce_sync.nranks);
    }
    ct_slice_end(d->ct);
    aslice_close(d, &a, e->start, e->stop);
    break;
  }
  default: break;
  }
}

