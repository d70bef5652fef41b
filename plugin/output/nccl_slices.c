/* slices.c: how each kind of NCCL event is drawn in the trace: its track (family and lane),
 * name, category and args (docs/trace-format.md), and the collective's GPU span with its flow.
 * Called by assemble.c once an event is complete; formatting only, no lifetimes. */
#include "plugin/pipeline/assemble_impl.h"
#include "plugin/output/names.h"
#include "common/nccl.h"
#include "plugin/output/tracks.h"
#include <stdio.h>
#include <string.h>

/* ---- emission helpers ---- */
static void common_args(cl_asm *a, cl_sb *b, int *first, uint32_t comm, uint64_t fallback_hash) {
  comm_cache *c = cl_asm_comm(a, comm);
  sb_key(b, first, "comm");
  sb_puts(b, "\"");
  uint64_t h = c && c->info.d.hash ? c->info.d.hash : fallback_hash;
  sb_hex(b, h);
  sb_puts(b, "\"");
  if (c) {
    sb_key(b, first, "comm_name"); sb_jstr(b, c->info.d.name);
    sb_key(b, first, "rank"); sb_i64(b, c->info.d.rank);
    sb_key(b, first, "nranks"); sb_i64(b, c->info.d.nranks);
  }
}
static const char *label(cl_asm *a, uint32_t comm) {
  comm_cache *c = cl_asm_comm(a, comm);
  return c ? c->label : "comm ?";
}
static uint32_t lane(cl_asm *a, cl_track_family f, uint32_t comm, uint32_t ch, const char *name, uint64_t s, uint64_t e) {
  return cl_track_lane(a->ct, f, comm, ch, name, s, e);
}

const char *cl_slice_coll_func(const ev *c) {
  return c->etype == CL_EV_COLL ? c->p.coll.func : c->etype == CL_EV_P2P ? c->p.p2p.func : NULL;
}

/* ---- per-type emission at stop ---- */
void cl_slice_api(cl_asm *a, ev *e) {
  char fam[64], name[64];
  int grp = e->etype == CL_EV_GROUP_API;
  int tid_os = cl_asm_os_tid(a, e->thread);
  snprintf(fam, sizeof fam, grp ? "NCCL API groups (tid %d)" : "NCCL API (tid %d)", tid_os);
  uint32_t tid = cl_track_lane(a->ct, grp ? CL_TRACK_API_GROUPS : CL_TRACK_API, e->thread, 0, fam,
                               e->start, e->stop);
  if (grp) snprintf(name, sizeof name, "ncclGroup");
  else if (e->etype == CL_EV_KERNEL_LAUNCH) snprintf(name, sizeof name, "KernelLaunch");
  else snprintf(name, sizeof name, "nccl%s", e->p.coll_api.func ? e->p.coll_api.func : "?");
  int first = ct_slice_begin(a->ct, tid, name, "api", e->start, e->stop - e->start);
  cl_sb *b = ct_body(a->ct);
  common_args(a, b, &first, e->comm, 0);
  if (e->etype == CL_EV_COLL_API || e->etype == CL_EV_P2P_API) {
    sb_key(b, &first, "count"); sb_u64(b, e->p.coll_api.count);
    sb_key(b, &first, "datatype"); sb_jstr(b, e->p.coll_api.datatype);
    if (e->etype == CL_EV_COLL_API) { sb_key(b, &first, "root"); sb_i64(b, e->p.coll_api.root); }
    sb_key(b, &first, "stream"); sb_puts(b, "\""); sb_hex(b, e->p.coll_api.stream); sb_puts(b, "\"");
    sb_key(b, &first, "graph_captured"); sb_puts(b, e->p.coll_api.graph_captured ? "true" : "false");
  } else if (e->etype == CL_EV_KERNEL_LAUNCH) {
    sb_key(b, &first, "stream"); sb_puts(b, "\""); sb_hex(b, e->p.kernel_launch.stream); sb_puts(b, "\"");
  } else {
    sb_key(b, &first, "depth"); sb_i64(b, e->p.group_api.depth);
    sb_key(b, &first, "graph_captured"); sb_puts(b, e->p.group_api.graph_captured ? "true" : "false");
  }
  ct_slice_end(a->ct);
}

void cl_slice_enqueue(cl_asm *a, ev *e) {
  char fam[96];
  const char *lab = label(a, e->comm);
  cl_sb *b = ct_body(a->ct);
  if (e->etype == CL_EV_GROUP) {
    snprintf(fam, sizeof fam, "%s: groups", lab);
    uint32_t tid = lane(a, CL_TRACK_GROUPS, e->comm, 0, fam, e->start, e->stop);
    int first = ct_slice_begin(a->ct, tid, "Group", "group", e->start, e->stop - e->start);
    common_args(a, b, &first, e->comm, 0);
    ct_slice_end(a->ct);
    return;
  }
  snprintf(fam, sizeof fam, "%s: enqueue", lab);
  uint32_t tid = lane(a, CL_TRACK_ENQUEUE, e->comm, 0, fam, e->start, e->stop);
  e->enq_tid = tid;
  e->enq_ts = e->start;
  comm_cache *c = cl_asm_comm(a, e->comm);
  int nranks = c ? c->info.d.nranks : -1;
  if (e->etype == CL_EV_COLL) {
    const cl_coll *k = &e->p.coll;
    int first = ct_slice_begin(a->ct, tid, k->func ? k->func : "?", "coll", e->start, e->stop - e->start);
    common_args(a, b, &first, e->comm, k->comm_hash);
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
  } else if (e->etype == CL_EV_P2P) {
    const cl_p2p *k = &e->p.p2p;
    int first = ct_slice_begin(a->ct, tid, k->func ? k->func : "?", "p2p", e->start, e->stop - e->start);
    common_args(a, b, &first, e->comm, k->comm_hash);
    sb_key(b, &first, "peer"); sb_i64(b, k->peer);
    sb_key(b, &first, "count"); sb_u64(b, k->count);
    sb_key(b, &first, "datatype"); sb_jstr(b, k->datatype);
    sb_key(b, &first, "nchannels"); sb_u64(b, k->nchannels);
    sb_key(b, &first, "bytes"); sb_u64(b, (uint64_t)k->count * (uint64_t)cl_datatype_size(k->datatype));
  }
  ct_slice_end(a->ct);
}

/* Draws a collective's GPU span; exposed_ns < 0 when exposure is not known (no CUPTI). */
void cl_slice_coll_gpu(cl_asm *a, ev *c, uint64_t s, uint64_t e, const char *src, int64_t exposed_ns) {
  comm_cache *cc = cl_asm_comm(a, c->comm);
  int nranks = cc ? cc->info.d.nranks : -1;
  const char *func = cl_slice_coll_func(c);
  uint64_t bytes = c->etype == CL_EV_COLL
                   ? cl_coll_bytes(func, c->p.coll.count, c->p.coll.datatype, nranks)
                   : (uint64_t)c->p.p2p.count * (uint64_t)cl_datatype_size(c->p.p2p.datatype);
  a->stats.colls_done++;
  cl_summary_add(a->sum, func, bytes, c->etype == CL_EV_COLL ? nranks : 2, src ? e - s : 0);
  if (!src) return;
  a->stats.colls_timed++;
  char fam[96];
  snprintf(fam, sizeof fam, "%s: GPU", label(a, c->comm));
  uint32_t tid = lane(a, CL_TRACK_COMM_GPU, c->comm, 0, fam, s, e);
  cl_sb *b = ct_body(a->ct);
  int first = ct_slice_begin(a->ct, tid, func ? func : "?", "coll_gpu", s, e - s);
  common_args(a, b, &first, c->comm, c->etype == CL_EV_COLL ? c->p.coll.comm_hash : c->p.p2p.comm_hash);
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
  ct_slice_end(a->ct);
  if (c->enq_tid) ct_flow(a->ct, c->id, c->enq_tid, c->enq_ts, tid, s);
  if (exposed_ns > 0 && c->etype == CL_EV_COLL)    /* the most exposed collectives, for the summary */
    cl_asm_top_add(a, func, c->p.coll.seq, cc ? cc->info.d.hash : c->p.coll.comm_hash, (uint64_t)exposed_ns, e - s);
}

void cl_asm_top_add(cl_asm *a, const char *func, uint64_t seq, uint64_t comm, uint64_t exposed, uint64_t dur) {
  int k = NTOP - 1;
  if (!exposed || exposed <= a->top[k].exposed) return;
  while (k > 0 && a->top[k - 1].exposed < exposed) { a->top[k] = a->top[k - 1]; k--; }
  a->top[k] = (top_ent){func, seq, comm, exposed, dur};
}

void cl_slice_kch_stop_timer(const ev *e, uint64_t *pt, uint64_t *obs) {
  *pt = 0;
  *obs = e->stop;
  for (int i = 0; i < e->nst; i++)
    if (e->st[i].st == CL_ST_KERNEL_CH_STOP) { *pt = e->st[i].arg; *obs = e->st[i].ts; }
}
void cl_slice_kernel_ch(cl_asm *a, ev *e, ev *parent) {
  uint64_t stop_pt, stop_obs;
  cl_slice_kch_stop_timer(e, &stop_pt, &stop_obs);
  cl_gpu_clock *o = cl_asm_clock(a, e->comm);
  uint64_t s = cl_gpu_clock_to_host(o, e->p.kernel_ch.ptimer, e->start);
  uint64_t t = stop_pt ? cl_gpu_clock_to_host(o, stop_pt, stop_obs) : 0;
  int implausible = !s || !t || stop_pt < e->p.kernel_ch.ptimer;
  if (implausible) { s = e->start; t = stop_obs; a->stats.implausible_gpu++; }
  if (parent && !implausible) {
    if (!parent->gmin || s < parent->gmin) parent->gmin = s;
    if (t > parent->gmax) { parent->gmax = t; parent->tail_ch = e->p.kernel_ch.channel; }
  }
  char fam[96], name[32];
  snprintf(fam, sizeof fam, "%s: ch %u GPU", label(a, e->comm), e->p.kernel_ch.channel);
  snprintf(name, sizeof name, "ch %u", e->p.kernel_ch.channel);
  uint32_t tid = lane(a, CL_TRACK_CHANNEL_GPU, e->comm, e->p.kernel_ch.channel, fam, s, t);
  cl_sb *b = ct_body(a->ct);
  int first = ct_slice_begin(a->ct, tid, name, "kernel_ch", s, t - s);
  common_args(a, b, &first, e->comm, 0);
  sb_key(b, &first, "channel"); sb_u64(b, e->p.kernel_ch.channel);
  if (parent) {
    if (parent->etype == CL_EV_COLL) { sb_key(b, &first, "seq"); sb_u64(b, parent->p.coll.seq); }
    sb_key(b, &first, "func"); sb_jstr(b, cl_slice_coll_func(parent));
  }
  sb_key(b, &first, "gpu_start_ns"); sb_u64(b, e->p.kernel_ch.ptimer);
  sb_key(b, &first, "gpu_stop_ns"); sb_u64(b, stop_pt);
  if (implausible) { sb_key(b, &first, "implausible"); sb_puts(b, "true"); }
  ct_slice_end(a->ct);
}

void cl_slice_proxy_op(cl_asm *a, ev *e, ev *parent) {
  const cl_proxy_op *op = &e->p.proxy_op;
  if (parent) {
    if (!parent->pmin || e->start < parent->pmin) parent->pmin = e->start;
    if (e->stop > parent->pmax) parent->pmax = e->stop;
  }
  char fam[112];
  snprintf(fam, sizeof fam, "%s: ch %u proxy %s", label(a, e->comm), op->channel, op->is_send ? "send" : "recv");
  uint32_t tid = lane(a, op->is_send ? CL_TRACK_PROXY_SEND : CL_TRACK_PROXY_RECV, e->comm, op->channel, fam, e->start, e->stop);
  cl_sb *b = ct_body(a->ct);
  int first = ct_slice_begin(a->ct, tid, op->is_send ? "send" : "recv", "proxy_op", e->start, e->stop - e->start);
  common_args(a, b, &first, e->comm, 0);
  sb_key(b, &first, "channel"); sb_u64(b, op->channel);
  sb_key(b, &first, "peer"); sb_i64(b, op->peer);
  sb_key(b, &first, "nsteps"); sb_i64(b, op->nsteps);
  sb_key(b, &first, "chunk_size"); sb_i64(b, op->chunk_size);
  sb_key(b, &first, "bytes"); sb_u64(b, e->bytes);
  if (parent) {
    if (parent->etype == CL_EV_COLL) { sb_key(b, &first, "seq"); sb_u64(b, parent->p.coll.seq); }
    sb_key(b, &first, "func"); sb_jstr(b, cl_slice_coll_func(parent));
  }
  if (e->flags & CL_F_FOREIGN) { sb_key(b, &first, "pxn_pid"); sb_i64(b, op->pid); }
  ct_slice_end(a->ct);
}

void cl_slice_proxy_step(cl_asm *a, ev *e, ev *op) {
  int send = op ? op->p.proxy_op.is_send : 0;
  unsigned ch = op ? op->p.proxy_op.channel : 0;
  uint64_t ns[CL_ST__MAX + 1] = {0}, bytes = 0;
  for (int i = 0; i < e->nst; i++) {
    uint64_t end = i + 1 < e->nst ? e->st[i + 1].ts : e->stop;
    if (e->st[i].st <= CL_ST__MAX) ns[e->st[i].st] += end - e->st[i].ts;
    if (e->st[i].st == CL_ST_STEP_SEND_WAIT || e->st[i].st == CL_ST_STEP_RECV_FLUSH_WAIT ||
        e->st[i].st == CL_ST_STEP_RECV_WAIT) {
      if (e->st[i].arg && e->st[i].arg < (1ull << 40)) bytes = e->st[i].arg;
    }
  }
  if (op) op->bytes += bytes;
  char fam[112], name[32];
  snprintf(fam, sizeof fam, "%s: ch %u %s steps", label(a, e->comm), ch, send ? "send" : "recv");
  snprintf(name, sizeof name, "step %d", e->p.proxy_step.step);
  uint32_t tid = lane(a, send ? CL_TRACK_STEPS_SEND : CL_TRACK_STEPS_RECV, e->comm, ch, fam, e->start, e->stop);
  cl_sb *b = ct_body(a->ct);
  int first = ct_slice_begin(a->ct, tid, name, "proxy_step", e->start, e->stop - e->start);
  common_args(a, b, &first, e->comm, 0);
  sb_key(b, &first, "channel"); sb_u64(b, ch);
  if (op) { sb_key(b, &first, "peer"); sb_i64(b, op->p.proxy_op.peer); }
  sb_key(b, &first, "step"); sb_i64(b, e->p.proxy_step.step);
  sb_key(b, &first, "bytes"); sb_u64(b, bytes);
  sb_key(b, &first, "gpu_wait_ns"); sb_u64(b, ns[CL_ST_STEP_SEND_GPU_WAIT]);
  sb_key(b, &first, "peer_wait_ns"); sb_u64(b, ns[CL_ST_STEP_SEND_PEER_WAIT]);
  sb_key(b, &first, "send_wait_ns"); sb_u64(b, ns[CL_ST_STEP_SEND_WAIT]);
  sb_key(b, &first, "recv_wait_ns"); sb_u64(b, ns[CL_ST_STEP_RECV_WAIT]);
  sb_key(b, &first, "flush_wait_ns"); sb_u64(b, ns[CL_ST_STEP_RECV_FLUSH_WAIT]);
  sb_key(b, &first, "recv_gpu_wait_ns"); sb_u64(b, ns[CL_ST_STEP_RECV_GPU_WAIT]);
  ct_slice_end(a->ct);
  for (int i = 0; i < e->nst; i++) {        /* the phases, nested inside the step */
    uint64_t end = i + 1 < e->nst ? e->st[i + 1].ts : e->stop;
    int f2 = ct_slice_begin(a->ct, tid, cl_state_name(e->st[i].st), "proxy_state", e->st[i].ts, end - e->st[i].ts);
    (void)f2;
    ct_slice_end(a->ct);
  }
}

void cl_slice_other(cl_asm *a, ev *e) {
  char fam[112];
  cl_sb *b = ct_body(a->ct);
  int first;
  switch (e->etype) {
  case CL_EV_PROXY_CTRL: {
    const char *nm = e->nst ? cl_state_name(e->st[0].st) : "ProxyCtrl";
    int appended = -1;
    for (int i = 0; i < e->nst; i++) if (e->st[i].st == CL_ST_CTRL_APPEND_END) appended = (int)(uint32_t)e->st[i].arg;
    snprintf(fam, sizeof fam, "%s: proxy progress", label(a, e->comm));
    uint32_t tid = lane(a, CL_TRACK_PROXY_CTRL, e->comm, 0, fam, e->start, e->stop);
    first = ct_slice_begin(a->ct, tid, nm, "proxy_ctrl", e->start, e->stop - e->start);
    common_args(a, b, &first, e->comm, 0);
    if (appended >= 0) { sb_key(b, &first, "appended_ops"); sb_i64(b, appended); }
    ct_slice_end(a->ct);
    break;
  }
  case CL_EV_NET_PLUGIN: {
    uint32_t type = (uint32_t)e->p.net.id & 0xFFFF0000u;
    snprintf(fam, sizeof fam, "%s: net", label(a, e->comm));
    uint32_t tid = lane(a, CL_TRACK_NET, e->comm, 0, fam, e->start, e->stop);
    first = ct_slice_begin(a->ct, tid, type == 0x10000u ? "ib" : type == 0x20000u ? "socket" : "net",
                           "net", e->start, e->stop - e->start);
    common_args(a, b, &first, e->comm, 0);
    sb_key(b, &first, "plugin_id"); sb_puts(b, "\""); sb_hex(b, (uint64_t)e->p.net.id); sb_puts(b, "\"");
    cl_net_args(b, &first, &e->p.net);
    ct_slice_end(a->ct);
    break;
  }
  case CL_EV_CE_COLL: case CL_EV_CE_SYNC: case CL_EV_CE_BATCH: {
    snprintf(fam, sizeof fam, "%s: copy engine", label(a, e->comm));
    uint32_t tid = lane(a, CL_TRACK_COPY_ENGINE, e->comm, 0, fam, e->start, e->stop);
    first = ct_slice_begin(a->ct, tid, cl_event_name(e->etype), "ce", e->start, e->stop - e->start);
    common_args(a, b, &first, e->comm, 0);
    if (e->etype == CL_EV_CE_COLL) {
      sb_key(b, &first, "func"); sb_jstr(b, e->p.ce_coll.func);
      sb_key(b, &first, "seq"); sb_u64(b, e->p.ce_coll.seq);
      sb_key(b, &first, "count"); sb_u64(b, e->p.ce_coll.count);
      sb_key(b, &first, "datatype"); sb_jstr(b, e->p.ce_coll.datatype);
      sb_key(b, &first, "sync"); sb_jstr(b, e->p.ce_coll.sync_strategy);
      sb_key(b, &first, "batches"); sb_u64(b, e->p.ce_coll.num_batches);
    } else if (e->etype == CL_EV_CE_BATCH) {
      sb_key(b, &first, "ops"); sb_i64(b, e->p.ce_batch.num_ops);
      sb_key(b, &first, "bytes"); sb_u64(b, e->p.ce_batch.total_bytes);
    } else {
      sb_key(b, &first, "nranks"); sb_i64(b, e->p.ce_sync.nranks);
    }
    ct_slice_end(a->ct);
    break;
  }
  default: break;
  }
}

