/* asm_finish.c: a collective's end (asm_state.h): which GPU span times it (CUPTI's kernel, else
 * its KernelCh, else its proxy ops), its exposure (measured, or estimated outside CUPTI's
 * windows), and what each consumer gets of it: counts, summary, Prometheus, digest, channel
 * spread, lost-marking, drawing. Never frees an event: the table is asm_feed.c's. */
#include "plugin/pipeline/asm_state.h"
#include "common/config.h"
#include "common/digest_codec.h"
#include "common/nccl.h"
#include "plugin/output/nccl_slices.h"

/* Bytes a unit of `count` moves: the datatype's size, times the ranks for AllGather and
 * ReduceScatter (`func`; NULL for p2p), as cl_coll_bytes reckons it. Every finished collective
 * asks, with a few distinct names: NCCL's are static strings (its ABI; the shims give the old
 * ABIs' the same), so a name's address stands for its text here, and the answer is remembered
 * by the two addresses, direct-mapped. */
static uint64_t bytes_per(cl_asm *a, const char *func, const char *dt, int nranks) {
  struct size_memo *m = &a->sizes[(((uintptr_t)func >> 4) ^ ((uintptr_t)dt >> 4) * 7u) % SIZE_MEMO];
  if (!m->known || m->func != func || m->dt != dt) {
    *m = (struct size_memo){func, dt, (uint32_t)cl_datatype_size(dt), (uint8_t)cl_coll_bytes_per_rank(func), 1};
  }
  return (uint64_t)m->size * (m->per_rank && nranks > 0 ? (uint64_t)nranks : 1);
}

/* A collective or p2p operation the timers' sample left out (CL_F_UNTIMED) and that got no
 * KernelCh anyway: its host times are all NCCL's events give of it (CUPTI's inside a window). */
static int sample_untimed(const cl_asm_ev *c) { return (c->d.flags & CL_F_UNTIMED) && !c->kch_done; }

/* The digest's row of a finished collective (exporters/digest.h). Its names are NCCL's static
 * strings (bytes_per), so the digest and the summary find them by address. */
static void digest_coll(const comm_cache *cc, cl_part *p, const cl_asm_ev *c, uint64_t s, uint64_t e, int code,
                        int64_t exposed_ns, int est, uint64_t bytes) {
  int coll = c->d.etype == CL_EV_COLL;
  cl_dg_coll r = {.comm_hash = cc && cc->info.d.hash ? cc->info.d.hash : coll ? c->d.p.coll.comm_hash : c->d.p.p2p.comm_hash,
                  .comm_name = cc ? cc->f.name : "", .rank = cc ? cc->f.rank : -1, .nranks = cc ? cc->f.nranks : -1,
                  .p2p = !coll, .func = cl_nccl_ev_func(&c->d), .algo = coll ? c->d.p.coll.algo : NULL,
                  .proto = coll ? c->d.p.coll.proto : NULL, .seq = coll ? c->d.p.coll.seq : 0, .bytes = bytes,
                  .nchannels = coll ? c->d.p.coll.nchannels : c->d.p.p2p.nchannels, .peer = coll ? 0 : c->d.p.p2p.peer,
                  .enq_start = c->d.start, .enq_stop = c->d.stop, .src = code,
                  .gpu_start = code ? s : c->d.start, .gpu_end = code ? e : c->d.start,
                  .exposed_ns = exposed_ns, .tail_ch = c->d.tail_ch, .expo_est = est, .static_names = 1,
                  .untimed = sample_untimed(c)};
  cl_digest_coll(p->dg, &r);
}

/* A finished collective or p2p operation as its consumers read it: GPU span [s, e] from
 * source `code` (CL_DG_SRC_NONE: none); exposed_ns < 0 when exposure is not known; est: it is
 * estimated (sampled mode, outside the windows). */
typedef struct {
  const cl_asm_ev *c;
  comm_cache *cc;
  cl_part *p;                 /* its participant (NULL: none) */
  const char *func;
  uint64_t s, e, bytes;
  int code, timed, est, nranks;
  int64_t exposed_ns;
} coll_end;

/* Timed on the one channel its sample recorded (COMMLENS_CHANNELS=sampled): no spread. */
static int one_channel(const coll_end *f) {
  const cl_asm_ev *c = f->c;
  return c->kch_first && f->timed && c->gmax > c->gmin && f->s == c->gmin && f->e == c->gmax;
}

/* The assembler's counts and its participant's: how the operation was timed and estimated. */
static void count_done(cl_asm *a, const coll_end *f) {
  const cl_asm_ev *c = f->c;
  cl_part *p = f->p;
  a->stats.colls_done++;
  if (f->est) a->stats.colls_expo_est++;
  if (!p) return;
  p->colls_done++;
  if (sample_untimed(c)) p->colls_untimed++;
  else if (c->kch_done) p->colls_kch++;
  if (one_channel(f)) p->colls_one_ch++;
  if (f->est) {
    p->colls_expo_est++;
    if (f->timed && f->e > f->s) p->est_comm_ns += f->e - f->s;
    if (f->exposed_ns > 0) p->est_expo_ns += (uint64_t)f->exposed_ns;
    if (f->exposed_ns < 0) p->colls_expo_unknown++;
  }
}

/* Its channels' spread (first start to last start, first end to last end) in the participant's
 * histogram; a collective timed on one channel has none. */
static void spread_done(const coll_end *f) {
  const cl_asm_ev *c = f->c;
  if (one_channel(f)) return;
  if (c->kch_done >= 2 && c->gtmin && c->gmax >= c->gtmin && c->gsmax >= c->gmin)
    cl_part_spread_add(f->p, c->gsmax - c->gmin, c->gmax - c->gtmin);
}

/* CUPTI taken by another tool at its end: counted, and said on the counter track (its reason,
 * NULL when not lost). Sampled mode: NCCL's kernel-channel timers time it whoever holds CUPTI
 * (not lost; its exposure is estimated). */
static const char *lost_done(cl_asm *a, const coll_end *f, const cl_draw *dr) {
  int kch_timed = cl_cfg.cupti == CL_CUPTI_SAMPLED && f->code == CL_DG_SRC_KERNEL_CH;
  int cupti = f->code == CL_DG_SRC_CUPTI || f->code == CL_DG_SRC_CUPTI_GRAPH || f->code == CL_DG_SRC_CUPTI_CE;
  if (!a->gj || kch_timed || cupti || !cl_gj_lost(a->gj, f->c->d.stop)) return NULL;
  a->stats.colls_gpu_lost++;
  if (f->p) {
    f->p->colls_gpu_lost++;
    if (dr) cl_draw_gpu_lost(dr, &f->c->d, CL_GPU_LOST_WHY, f->p->colls_gpu_lost);
  }
  return CL_GPU_LOST_WHY;
}

/* Timed: counted, drawn with its GPU span, and among the participant's most exposed. */
static void timed_done(cl_asm *a, const coll_end *f, const cl_draw *dr, const char *lost) {
  const cl_asm_ev *c = f->c;
  a->stats.colls_timed++;
  if (f->p) f->p->colls_timed++;
  if (dr) cl_draw_coll_gpu(dr, &c->d, f->s, f->e, cl_dg_src_name(f->code), f->exposed_ns, f->est, f->bytes, lost);
  if (f->p && f->exposed_ns > 0 && c->d.etype == CL_EV_COLL)
    cl_part_top_add(f->p, f->func, c->d.p.coll.seq, f->cc ? f->cc->info.d.hash : c->d.p.coll.comm_hash,
                    (uint64_t)f->exposed_ns, f->e - f->s);
}

/* The operation is finished: each consumer gets it in turn (counts, summary, Prometheus,
 * digest, channel spread, lost-marking, drawing). */
static void coll_done(cl_asm *a, const cl_asm_ev *c, uint64_t s, uint64_t e, int code, int64_t exposed_ns, int est) {
  comm_cache *cc = comm_of(a, c->d.comm);
  coll_end f = {.c = c, .cc = cc, .p = part_cc(a, cc, c->d.comm), .func = cl_nccl_ev_func(&c->d), .s = s, .e = e,
                .code = code, .timed = code != CL_DG_SRC_NONE, .est = est, .nranks = cc ? cc->info.d.nranks : -1,
                .exposed_ns = exposed_ns};
  f.bytes = c->d.etype == CL_EV_COLL ? c->d.p.coll.count * bytes_per(a, f.func, c->d.p.coll.datatype, f.nranks)
                                     : c->d.p.p2p.count * bytes_per(a, NULL, c->d.p.p2p.datatype, 0);
  const cl_draw *dr = draw_part(a, f.p);
  count_done(a, &f);
  if (f.p) {
    cl_summary_add_static(f.p->sum, f.func, f.bytes, c->d.etype == CL_EV_COLL ? f.nranks : 2, f.timed ? e - s : 0);
    if (cl_cfg.prom[0])                    /* enqueue to GPU start: 0 when the GPU was there first */
      cl_prom_comms_add(&f.p->prom, cc ? cc->info.d.hash : 0, f.bytes, f.timed, f.timed ? e - s : 0,
                        f.timed && s > c->d.start ? s - c->d.start : 0);
    if (f.p->dg) digest_coll(cc, f.p, c, s, e, code, exposed_ns, est, f.bytes);
    spread_done(&f);
  }
  const char *lost = lost_done(a, &f, dr);
  if (f.timed) timed_done(a, &f, dr, lost);
}

/* The collective's own span from its children: KernelCh (GPU timer), else proxy ops; its source
 * (CL_DG_SRC_NONE: neither). */
static int child_span(const cl_asm_ev *c, uint64_t *s, uint64_t *e) {
  if (c->gmax > c->gmin && c->gmin) { *s = c->gmin; *e = c->gmax; return CL_DG_SRC_KERNEL_CH; }
  if (c->pmax > c->pmin && c->pmin) { *s = c->pmin; *e = c->pmax; return CL_DG_SRC_PROXY; }
  return CL_DG_SRC_NONE;
}

int cl_asm_cupti_span(cl_asm *a, cl_asm_ev *c, int settle, uint64_t *s, uint64_t *e, uint32_t *dev) {
  if (!a->gj) return CL_DG_SRC_NONE;
  if (c->ce) {                   /* its copies ("cupti_ce"); settle: the last time it asks */
    if (!cl_gj_ce_span(a->gj, c->ce_ticket, c->d.id, settle, s, e)) return CL_DG_SRC_NONE;
    *dev = comm_dev(a, c->d.comm);
    return CL_DG_SRC_CUPTI_CE;
  }
  if (cl_gj_span(a->gj, c->api_group, c->d.comm, s, e, dev)) return CL_DG_SRC_CUPTI;
  if (!cl_gj_graph_any(a->gj)) return CL_DG_SRC_NONE;
  uint32_t d = comm_dev(a, c->d.comm);
  uint64_t cs, ce;
  if (cl_gj_graph_seen(a->gj, d) && child_span(c, &cs, &ce) && cl_gj_graph_claim(a->gj, d, cs, ce, s, e)) {
    *dev = d;
    return CL_DG_SRC_CUPTI_GRAPH;
  }
  return CL_DG_SRC_NONE;
}

/* Whether a CUPTI span agrees with the collective's own KernelCh span: both are the GPU's times,
 * and NCCL's channels start and end inside its kernel. One further off is not its kernel (a join
 * that gave it another launch's, seen with FSDP's two streams in sampled mode) or is on a clock
 * CUPTI mapped elsewhere; NCCL's timers then time it. No KernelCh span: nothing to check. */
static int cupti_agrees(const cl_asm_ev *c, uint64_t s, uint64_t e) {
  if (!(c->gmax > c->gmin && c->gmin)) return 1;
  uint64_t ds = s > c->gmin ? s - c->gmin : c->gmin - s, de = e > c->gmax ? e - c->gmax : c->gmax - e;
  return ds <= CL_ASM_CUPTI_KCH_TOL_NS && de <= CL_ASM_CUPTI_KCH_TOL_NS;
}


/* Sampled mode: a span outside CUPTI's windows (or in a window's first quarter, at most 250 ms,
 * where kernels launched before it opened still run unrecorded) has no measured exposure. */
static int sampled_out(cl_asm *a, uint64_t s, uint64_t e) {
  if (cl_cfg.cupti != CL_CUPTI_SAMPLED || !a->gj) return 0;
  uint64_t guard = cl_cfg.sample_on_ns / 4 < 250000000ull ? cl_cfg.sample_on_ns / 4 : 250000000ull;
  return !cl_gj_covered_for(a->gj, s, e, guard);
}
/* Its exposure estimated from the measured ones: its communicator's exposed share of GPU time,
 * else every communicator's; -1 before any was measured. */
static int64_t expo_estimate(cl_asm *a, const cl_asm_ev *c, uint64_t s, uint64_t e) {
  comm_cache *cc = comm_of(a, c->d.comm);
  uint64_t sp = cc && cc->m_span ? cc->m_span : a->m_span, ex = cc && cc->m_span ? cc->m_expo : a->m_expo;
  if (!sp || e <= s) return -1;
  return (int64_t)((double)(e - s) * ((double)ex / (double)sp));
}
/* A measured one teaches the estimate; first it checks it (the estimate it would have had
 * against what was measured: the error the report shows beside estimated exposure). */
static void expo_learn(cl_asm *a, const cl_asm_ev *c, uint64_t s, uint64_t e, int64_t exposed) {
  if (cl_cfg.cupti != CL_CUPTI_SAMPLED || exposed < 0 || e <= s) return;
  int64_t guess = expo_estimate(a, c, s, e);
  if (guess >= 0) {
    cl_part *p = part_of(a, c->d.comm);
    if (p) { p->est_check_n++; p->est_check_pred_ns += (uint64_t)guess; p->est_check_meas_ns += (uint64_t)exposed; }
  }
  comm_cache *cc = comm_of(a, c->d.comm);
  if (cc) { cc->m_span += e - s; cc->m_expo += (uint64_t)exposed; }
  a->m_span += e - s;
  a->m_expo += (uint64_t)exposed;
}

int cl_asm_finish_coll(cl_asm *a, cl_asm_ev *c) {
  uint64_t s = 0, e = 0;
  uint32_t dev = 0;
  int src = cl_asm_cupti_span(a, c, 1, &s, &e, &dev);
  if (src && !cupti_agrees(c, s, e)) { a->stats.cupti_rejected++; src = CL_DG_SRC_NONE; }
  if (!src) { src = child_span(c, &s, &e); dev = comm_dev(a, c->d.comm); }
  /* outside the windows: queued like the measured ones (then estimated, in end-time order after
   * them, from what the windows before it taught) */
  c->expo_est = src && a->gj && sampled_out(a, s, e) &&
                (src == CL_DG_SRC_KERNEL_CH || !cl_gj_lost(a->gj, c->d.stop));
  if (src && a->gj && c->expo_est && cl_gj_expo_idle(a->gj)) {
    /* nothing measured waits ahead of it: estimated now, as its report would have been */
    coll_done(a, c, s, e, src, expo_estimate(a, c, s, e), 1);
    return 1;
  }
  if (src && a->gj) {
    comm_cache *cc = comm_of(a, c->d.comm);
    c->gs = s; c->ge = e; c->src = (uint8_t)src; c->awaiting = 1;
    cl_gj_expose(a->gj, c->d.id | (c->expo_est ? CL_GJ_TAG_ORDER_ONLY : 0), dev, cc ? cc->info.d.hash : 0, s, e);
    return 0;
  }
  coll_done(a, c, s, e, src, -1, 0);
  return 1;
}

void cl_asm_exposed(cl_asm *a, cl_asm_ev *c, const cl_expo_result *r) {
  if (c->expo_est) {
    coll_done(a, c, c->gs, c->ge, c->src, expo_estimate(a, c, c->gs, c->ge), 1);
  } else {
    int64_t x = r->incomplete ? -1 : (int64_t)r->exposed_ns;
    expo_learn(a, c, c->gs, c->ge, x);
    coll_done(a, c, c->gs, c->ge, c->src, x, 0);
  }
}
