/* verdict.c: turns the aligned job into the straggler verdict's input (arrivals on the
 * reference clock with their clock error, steps per instance) and runs it, then the per-step
 * verdict. The one place a collective instance's culprit is decided. */
#include "tools/commlens/analyse/verdict.h"
#include "tools/commlens/analyse/phase_evidence.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *cl_steps_source_key(enum cl_steps_source s) {
  return s == CL_STEPS_NVTX ? "nvtx" : s == CL_STEPS_PATTERN ? "pattern" : NULL;
}

/* Whether every rank paired every matched collective with its host enqueue. */
static int all_enqueued(const cl_job *job) {
  int64_t nc = 0, ne = 0;
  for (int i = 0; i < job->n; i++) {
    const cl_rank *r = job->r[i];
    for (size_t k = 0; k < r->colls.n; k++)
      if (r->colls.a[k].inst != UINT32_MAX) { nc++; ne += r->colls.a[k].enq != CL_NO_TIME; }
  }
  return nc && ne == nc;
}

/* First arrival of an instance on the reference clock, by enqueues or GPU starts. */
static int64_t first_arrival(const cl_job *job, const cl_clock_model *m, const cl_inst *in, enum cl_sg_evidence ev) {
  int64_t t = INT64_MAX;
  for (uint32_t j = 0; j < in->count; j++) {
    const cl_member *mb = &job->mem.a[in->first + j];
    const cl_coll *c = &job->r[mb->rank_idx]->colls.a[mb->coll_idx];
    int64_t a = cl_cm_align(m, (int)mb->rank_idx, ev == CL_SG_ENQUEUE ? c->enq : c->start);
    if (a < t) t = a;
  }
  return t;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Issue order: by first arrival (NCCL numbers each function's instances apart, so seq orders
 * only within one function). */
static const int64_t *g_t;
static int cmp_by_time(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  if (g_t[x] != g_t[y]) return g_t[x] < g_t[y] ? -1 : 1;
  return x < y ? -1 : x > y;
}

/* NVTX steps of the reference rank when it has them (its clock is the reference), else the
 * repeating pattern of the communicator with the most instances. */
static void find_steps(const cl_job *job, const cl_clock_model *m, cl_verdict_an *out, const int64_t *t_first) {
  size_t ni = job->inst.n;
  for (size_t k = 0; k < ni; k++) out->inst_step[k] = -1;
  const cl_rank *ref = job->n ? job->r[0] : NULL;
  if (ref && ref->steps.n) {
    out->steps_source = CL_STEPS_NVTX;
    for (size_t k = 0; k < ni; k++)
      for (size_t s = 0; s < ref->steps.n; s++)
        if (t_first[k] >= ref->steps.a[s].start && t_first[k] < ref->steps.a[s].end && ref->steps.a[s].step < INT32_MAX) {
          out->inst_step[k] = (int32_t)ref->steps.a[s].step;
          if ((uint32_t)out->inst_step[k] + 1 > out->nsteps) out->nsteps = (uint32_t)out->inst_step[k] + 1;
          break;
        }
    return;
  }
  (void)m;
  /* the communicator with the most instances on 2+ ranks */
  uint64_t best = 0; size_t bestn = 0, nc = 0;
  uint64_t *comms = cl_xmalloc((ni + 1) * sizeof *comms);
  for (size_t k = 0; k < ni; k++) if (job->inst.a[k].count >= 2) comms[nc++] = job->inst.a[k].comm;
  qsort(comms, nc, sizeof *comms, cmp_u64);
  for (size_t a = 0, e; a < nc; a = e) {
    for (e = a; e < nc && comms[e] == comms[a]; e++) {}
    if (e - a > bestn) { bestn = e - a; best = comms[a]; }
  }
  free(comms);
  if (bestn < 4) return;
  uint32_t *ids = cl_xmalloc(bestn * sizeof *ids);
  size_t n = 0;
  for (size_t k = 0; k < ni; k++) if (job->inst.a[k].comm == best && job->inst.a[k].count >= 2) ids[n++] = (uint32_t)k;
  g_t = t_first;
  qsort(ids, n, sizeof *ids, cmp_by_time);
  cl_st_coll *c = cl_xmalloc(n * sizeof *c);
  for (size_t k = 0; k < n; k++) c[k] = (cl_st_coll){ job->inst.a[ids[k]].func, job->inst.a[ids[k]].bytes, t_first[ids[k]] };
  cl_steps_detect(c, n, &out->st);
  if (out->st.found) {
    out->steps_source = CL_STEPS_PATTERN; out->steps_comm = best; out->nsteps = out->st.nsteps;
    for (size_t k = 0; k < n; k++) out->inst_step[ids[k]] = out->st.step_of[k];
    for (size_t k = 0; k < ni; k++)
      if (job->inst.a[k].comm != best && job->inst.a[k].count >= 2) out->inst_step[k] = cl_steps_at(&out->st, t_first[k]);
  }
  free(c); free(ids);
}

/* The line names ranks as the job numbers them (the verdict's participants are rank indices):
 * a copy of the verdict's named parts with their ranks, printed by cl_sg_verdict_line. */
static void verdict_line(const cl_job *job, const cl_sg_verdict *v, char *buf, size_t n) {
  cl_sg_verdict c = *v;
  c.straggler = cl_xmalloc((v->nstraggler + 1) * sizeof *c.straggler);
  c.stall = cl_xmalloc((v->nstall + 1) * sizeof *c.stall);
  for (int k = 0; k < v->nstraggler; k++) { c.straggler[k] = v->straggler[k]; c.straggler[k].who = job->r[v->straggler[k].who]->rank; }
  for (size_t k = 0; k < v->nstall; k++) { c.stall[k] = v->stall[k]; c.stall[k].who = job->r[v->stall[k].who]->rank; }
  if (v->largest.who >= 0) c.largest.who = job->r[v->largest.who]->rank;
  cl_sg_verdict_line(&c, buf, n);
  free(c.straggler); free(c.stall);
}

/* Whether the instance's aligned arrivals cannot be true: in a collective whose every end
 * depends on every start, one member started after another had ended, beyond both clock errors
 * (seen: GPU spans a replayed rank placed 17 ms after its peer's end, their KernelCh held while
 * its GPU clock was being calibrated). Such times would name a one-off stall that never was. */
static int impossible(const cl_sg_arrival *a, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    for (uint32_t j = 0; j < n; j++) {
      if (i == j || !a[j].end) continue;
      int64_t err = a[i].clock && a[i].clock == a[j].clock ? 0 : a[i].err + a[j].err;
      if (a[i].value > a[j].end && a[i].value - a[j].end > err) return 1;
    }
  return 0;
}

void cl_verdict_compute(const cl_job *job, const cl_clock_model *m, cl_verdict_an *out) {
  memset(out, 0, sizeof *out);
  size_t ni = job->inst.n;
  /* arrivals: GPU starts (a GPU-side straggler shows only there); the issue order and the
   * gaps between steps: host enqueues when every rank has them (a time-shared GPU's starts
   * blur the gaps) */
  enum cl_sg_evidence ev = CL_SG_GPU_START, order_ev = all_enqueued(job) ? CL_SG_ENQUEUE : CL_SG_GPU_START;
  int by_wait = cl_phase_evidence_usable(job);   /* v7: the GPU's own wait, no clock (phase_evidence.h) */
  int64_t *t_first = cl_xmalloc((ni + 1) * sizeof *t_first);
  for (size_t k = 0; k < ni; k++) t_first[k] = first_arrival(job, m, &job->inst.a[k], order_ev);
  out->inst_step = cl_xmalloc((ni + 1) * sizeof *out->inst_step);
  find_steps(job, m, out, t_first);
  free(t_first);
  cl_sg_inst *si = cl_xmalloc((ni + 1) * sizeof *si);
  cl_sg_arrival *sa = cl_xmalloc((job->mem.n + 1) * sizeof *sa);
  out->arrival = cl_xmalloc((job->mem.n + 1) * sizeof *out->arrival);
  const char **hosts = cl_xmalloc(((size_t)job->n + 1) * sizeof *hosts);
  for (int i = 0; i < job->n; i++) hosts[i] = job->r[i]->info.host ? job->r[i]->info.host : "";
  size_t n_mem = 0, n_ce = 0;   /* members, and those that arrive by their enqueue (copy engine) */
  for (size_t k = 0; k < ni; k++) {
    const cl_inst *in = &job->inst.a[k];
    /* the first step found from the pattern is start-up too: first use of buffers, connections
     * and the allocator lands there, in collectives of kinds seen before (FSDP's all-gathers) */
    int first_step = out->steps_source == CL_STEPS_PATTERN && out->inst_step[k] == 0;
    si[k] = (cl_sg_inst){ in->comm, in->seq, in->bytes, in->func, out->inst_step[k], first_step, in->first, in->count };
    for (uint32_t j = 0; j < in->count; j++) {
      const cl_member *mb = &job->mem.a[in->first + j];
      const cl_coll *c = &job->r[mb->rank_idx]->colls.a[mb->coll_idx];
      int ri = (int)mb->rank_idx;
      /* a copy-engine collective's GPU span starts after the peers' sync: its enqueue arrives */
      int by_enq = ev != CL_SG_ENQUEUE && c->ce && c->enq != CL_NO_TIME;
      int64_t t = ev == CL_SG_ENQUEUE || by_enq ? c->enq : c->start;
      n_mem++; n_ce += by_enq;
      double est, lo, hi;
      int64_t err = cl_cm_offset(m, ri, t, &est, &lo, &hi) ? (int64_t)ceil((hi - lo) / 2) : INT64_MAX / 4;
      out->arrival[in->first + j] = cl_cm_align(m, ri, t);
      sa[in->first + j] = (cl_sg_arrival){ ri, out->arrival[in->first + j], err, cl_cm_align(m, ri, c->end),
                                           m->clock_of_rank[ri] + 1 };
      if (by_wait) sa[in->first + j] = cl_phase_arrival(c, ri);
    }
    /* who arrived last makes everyone wait only where every end depends on every start: a
     * Broadcast's root (or a Reduce's peers) may finish before a late receiver starts, so a
     * receiver running behind the root costs nothing (the 2-GPU socket recording: rank 1 up to
     * 1.5 ms behind in 24 Broadcasts, no one waiting). Left out, counted. */
    if (!cl_cm_func_is_causal(cl_func_name(in->func))) { si[k].count = 0; out->n_not_causal++; }
    else if (impossible(&sa[in->first], in->count)) { si[k].count = 0; out->n_impossible++; }
  }
  if (!by_wait && n_mem && n_ce == n_mem) ev = CL_SG_ENQUEUE;   /* copy-engine collectives only */
  cl_sg_input sin = { job->n, hosts, NULL, ni, si, sa, by_wait ? CL_SG_GPU_WAIT : ev, 0, 0,
                      by_wait ? cl_phase_job_ns(job) : 0 };
  cl_sg_analyse(&sin, &out->v);
  verdict_line(job, &out->v, out->line, sizeof out->line);
  free(si); free(sa); free(hosts);
  if (out->nsteps) {   /* per step: who was last, by how much, and the steps that cost the most */
    cl_st_inst *sti = cl_xmalloc((ni + 1) * sizeof *sti);
    size_t n = 0;
    for (size_t k = 0; k < ni; k++) {
      const cl_sg_inst_result *r = &out->v.inst[k];
      if (out->inst_step[k] < 0 || (uint32_t)out->inst_step[k] >= out->nsteps || r->startup || r->last < 0) continue;
      sti[n++] = (cl_st_inst){ out->inst_step[k], r->last, r->called, r->margin_ns, r->wait_ns, r->over_median_ns };
    }
    out->stepv = cl_xmalloc(out->nsteps * sizeof *out->stepv);
    out->step_order = cl_xmalloc(out->nsteps * sizeof *out->step_order);
    cl_steps_attribute(sti, n, out->nsteps, out->stepv, out->step_order);
    free(sti);
  }
}

void cl_verdict_free(cl_verdict_an *out) {
  cl_sg_free(&out->v);
  if (out->steps_source == CL_STEPS_PATTERN) cl_steps_free(&out->st);
  free(out->inst_step); free(out->arrival); free(out->stepv); free(out->step_order);
  memset(out, 0, sizeof *out);
}
