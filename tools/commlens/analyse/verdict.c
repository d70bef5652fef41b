/* verdict.c: turns the aligned job into the straggler verdict's input (arrivals on the
 * reference clock with their clock error, steps per instance) and runs it, then the per-step
 * verdict. The one place a collective instance's culprit is decided. */
#include "tools/commlens/analyse/verdict.h"
#include "tools/commlens/analyse/phase_evidence.h"
#include "tools/commlens/analyse/gpu_share.h"
#include "tools/commlens/base/par.h"
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

/* A pass over the members rank by rank in memory order (instance by instance, each member read
 * was a cache miss in another rank's array, and the pass slowed per member as ranks grew), the
 * ranks cut among the job's threads (base/par.h): each member's results go to its own index. */
typedef struct {
  const cl_job *job; const cl_clock_model *m; cl_verdict_an *out;
  enum cl_sg_evidence ev; int64_t *t[CL_PAR_MAX];                    /* first_arrivals */
  cl_sg_arrival *sa; int64_t *se; int by_wait; size_t n_mem[CL_PAR_MAX], n_ce[CL_PAR_MAX];   /* place_members */
} member_pass;

/* Per part: the first arrival of each instance among its ranks (INT64_MAX: none). */
static void first_part(size_t lo, size_t hi, int part, void *arg) {
  member_pass *p = arg;
  int64_t *t = p->t[part];
  for (size_t k = 0; k < p->job->inst.n; k++) t[k] = INT64_MAX;
  for (size_t i = lo; i < hi; i++) {
    const cl_rank *r = p->job->r[i];
    for (size_t k = 0; k < r->colls.n; k++) {
      const cl_coll *c = &r->colls.a[k];
      if (c->inst == UINT32_MAX) continue;
      int64_t a = cl_cm_align(p->m, (int)i, p->ev == CL_SG_ENQUEUE ? c->enq : c->start);
      if (a < t[c->inst]) t[c->inst] = a;
    }
  }
}
/* First arrival of each instance on the reference clock, by enqueues or GPU starts. */
static void first_arrivals(const cl_job *job, const cl_clock_model *m, enum cl_sg_evidence ev, int64_t *t) {
  member_pass p = { .job = job, .m = m, .ev = ev };
  p.t[0] = t;
  int parts = job->threads < job->n ? job->threads : job->n;
  for (int q = 1; q < parts && q < CL_PAR_MAX; q++) p.t[q] = cl_xmalloc((job->inst.n + 1) * sizeof *t);
  parts = cl_par_parts((size_t)job->n, parts, first_part, &p);
  if (!parts) for (size_t k = 0; k < job->inst.n; k++) t[k] = INT64_MAX;
  for (int q = 1; q < parts; q++)
    for (size_t k = 0; k < job->inst.n; k++) if (p.t[q][k] < t[k]) t[k] = p.t[q][k];
  for (int q = 1; q < CL_PAR_MAX && p.t[q]; q++) free(p.t[q]);
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

typedef struct { uint64_t comm; size_t n; int32_t ranks; } comm_rank_count;
static int cmp_comm_count(const void *a, const void *b) {
  const comm_rank_count *x = a, *y = b;
  if (x->ranks != y->ranks) return x->ranks > y->ranks ? -1 : 1;
  if (x->n != y->n) return x->n > y->n ? -1 : 1;
  return x->comm < y->comm ? -1 : x->comm > y->comm;
}

/* The repeating pattern of communicator `comm`'s n instances (in issue order). */
static void steps_of_comm(const cl_job *job, cl_verdict_an *out, const int64_t *t_first, uint64_t comm, size_t n) {
  size_t ni = job->inst.n, k2 = 0;
  uint32_t *ids = cl_xmalloc((n + 1) * sizeof *ids);
  for (size_t k = 0; k < ni && k2 < n; k++) if (job->inst.a[k].comm == comm && job->inst.a[k].count >= 2) ids[k2++] = (uint32_t)k;
  g_t = t_first;
  qsort(ids, k2, sizeof *ids, cmp_by_time);
  cl_st_coll *c = cl_xmalloc((k2 + 1) * sizeof *c);
  for (size_t k = 0; k < k2; k++) c[k] = (cl_st_coll){ job->inst.a[ids[k]].func, job->inst.a[ids[k]].bytes, t_first[ids[k]] };
  cl_steps_detect(c, k2, &out->st);
  if (out->st.found) {
    out->steps_source = CL_STEPS_PATTERN; out->steps_comm = comm; out->nsteps = out->st.nsteps;
    for (size_t k = 0; k < k2; k++) out->inst_step[ids[k]] = out->st.step_of[k];
  }
  free(c); free(ids);
}

/* A member's place in its own rank's program: its enqueue (else its GPU start), on its clock. */
typedef struct { int64_t t; int32_t step; } placed;
static int cmp_placed(const void *a, const void *b) {
  int64_t x = ((const placed *)a)->t, y = ((const placed *)b)->t;
  return (x > y) - (x < y);
}
typedef CL_VEC(placed) placed_vec;
static int64_t own_time(const cl_coll *c) { return c->enq != CL_NO_TIME ? c->enq : c->start; }

/* Whether a rank's collectives of the steps' communicator end its steps (a data-parallel
 * reduction after the tensor-parallel ones) rather than start them: in its own program, the
 * gaps after them (to another communicator's) are longer than the gaps before them (the
 * forward pass, the optimizer and data loading sit between steps). */
static int main_ends_steps(const cl_rank *r, uint64_t comm) {
  size_t n = r->colls.n;
  placed *o = cl_xmalloc((n + 1) * sizeof *o);
  for (size_t k = 0; k < n; k++) o[k] = (placed){ own_time(&r->colls.a[k]), r->colls.a[k].comm == comm };
  qsort(o, n, sizeof *o, cmp_placed);
  int64_t after = 0, before = 0;
  for (size_t k = 1; k < n; k++) {
    if (o[k - 1].step && !o[k].step) after += o[k].t - o[k - 1].t;
    if (!o[k - 1].step && o[k].step) before += o[k].t - o[k - 1].t;
  }
  free(o);
  return after > before;
}

/* Other communicators' instances take the step their first member (of the steps' communicator)
 * was in by its own program order: between that rank's collectives of the steps' communicator,
 * the step of the one before, or (where those end its steps) of the one after. A tensor-
 * parallel group behind a late rank stays in its step; by time it would slide into the next
 * one. Instances with no such member: the step holding their first arrival. */
static void map_other_comms(const cl_job *job, cl_verdict_an *out, const int64_t *t_first) {
  placed_vec *pr = cl_xcalloc((size_t)job->n + 1, sizeof *pr);
  int *ends = cl_xcalloc((size_t)job->n + 1, sizeof *ends);
  for (int i = 0; i < job->n; i++) {
    const cl_rank *r = job->r[i];
    for (size_t k = 0; k < r->colls.n; k++) {
      uint32_t in = r->colls.a[k].inst;
      if (in != UINT32_MAX && job->inst.a[in].comm == out->steps_comm && out->inst_step[in] >= 0)
        CL_PUSH(pr[i], ((placed){ own_time(&r->colls.a[k]), out->inst_step[in] }));
    }
    if (pr[i].n) { qsort(pr[i].a, pr[i].n, sizeof *pr[i].a, cmp_placed); ends[i] = main_ends_steps(r, out->steps_comm); }
  }
  for (size_t k = 0; k < job->inst.n; k++) {
    const cl_inst *in = &job->inst.a[k];
    if (in->comm == out->steps_comm || in->count < 2) continue;
    out->inst_step[k] = cl_steps_at(&out->st, t_first[k]);
    for (uint32_t j = 0; j < in->count; j++) {
      const cl_member *mb = &job->mem.a[in->first + j];
      const placed_vec *v = &pr[mb->rank_idx];
      if (!v->n) continue;
      int64_t t = own_time(&job->r[mb->rank_idx]->colls.a[mb->coll_idx]);
      size_t lo = 0, hi = v->n;   /* the first of the steps' communicator after t */
      while (lo < hi) { size_t mid = (lo + hi) / 2; if (v->a[mid].t <= t) lo = mid + 1; else hi = mid; }
      if (ends[mb->rank_idx]) out->inst_step[k] = lo < v->n ? v->a[lo].step : -1;
      else out->inst_step[k] = lo ? v->a[lo - 1].step : -1;
      break;
    }
  }
  for (int i = 0; i < job->n; i++) free(pr[i].a);
  free(pr); free(ends);
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
  /* the communicators, most ranks first (the data-parallel one, that every rank is in, before
   * a tensor-parallel group with more collectives), then most instances: the first whose
   * collectives repeat gives the steps */
  CL_VEC(comm_rank_count) cc = {0};
  uint64_t *comms = cl_xmalloc((ni + 1) * sizeof *comms);
  size_t nc = 0;
  for (size_t k = 0; k < ni; k++) if (job->inst.a[k].count >= 2) comms[nc++] = job->inst.a[k].comm;
  qsort(comms, nc, sizeof *comms, cmp_u64);
  for (size_t a = 0, e; a < nc; a = e) {
    for (e = a; e < nc && comms[e] == comms[a]; e++) {}
    if (e - a >= 4) CL_PUSH(cc, ((comm_rank_count){ comms[a], e - a, 0 }));
  }
  free(comms);
  for (size_t k = 0; k < ni; k++) {   /* cc is in comm order here */
    size_t lo = 0, hi = cc.n;
    while (lo < hi) { size_t mid = (lo + hi) / 2; if (cc.a[mid].comm < job->inst.a[k].comm) lo = mid + 1; else hi = mid; }
    if (lo < cc.n && cc.a[lo].comm == job->inst.a[k].comm && (int32_t)job->inst.a[k].count > cc.a[lo].ranks)
      cc.a[lo].ranks = (int32_t)job->inst.a[k].count;
  }
  if (cc.n) qsort(cc.a, cc.n, sizeof *cc.a, cmp_comm_count);
  for (size_t c = 0; c < cc.n && c < 4 && !out->st.found; c++) {
    if (c) cl_steps_free(&out->st);
    steps_of_comm(job, out, t_first, cc.a[c].comm, cc.a[c].n);
  }
  free(cc.a);
  if (out->st.found) map_other_comms(job, out, t_first);
  else if (cc.n) cl_steps_free(&out->st);
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
/* The two largest of key over the members (of want >= 0: its clock only; ends: those known),
 * so that a pair of two different members is always found. */
typedef struct { int64_t v[2]; int64_t i[2]; } top2;
static void top_put(top2 *t, int64_t v, int64_t i) {
  if (t->i[0] < 0 || v > t->v[0]) { t->v[1] = t->v[0]; t->i[1] = t->i[0]; t->v[0] = v; t->i[0] = i; }
  else if (t->i[1] < 0 || v > t->v[1]) { t->v[1] = v; t->i[1] = i; }
}
/* Whether some member's start (less, across clocks, its error) is after another's end (plus,
 * across clocks, its error): the latest such start against the earliest such end, over two
 * different members. On one clock no error is added: there the condition is weaker, and a
 * pair that meets the across-clocks one meets it too. */
static int start_after_end(const cl_sg_arrival *a, const uint32_t *idx, uint32_t n, int with_err) {
  top2 late = { {0, 0}, {-1, -1} }, early = { {0, 0}, {-1, -1} };   /* early: of minus the end */
  for (uint32_t k = 0; k < n; k++) {
    const cl_sg_arrival *x = &a[idx[k]];
    top_put(&late, x->value - (with_err ? x->err : 0), k);
    if (x->end) top_put(&early, -(x->end + (with_err ? x->err : 0)), k);
  }
  for (int p = 0; p < 2; p++)
    for (int q = 0; q < 2; q++)
      if (late.i[p] >= 0 && early.i[q] >= 0 && late.i[p] != early.i[q] && late.v[p] > -early.v[q]) return 1;
  return 0;
}
static const cl_sg_arrival *g_arr;
static int cmp_clock(const void *x, const void *y) {
  int32_t a = g_arr[*(const uint32_t *)x].clock, b = g_arr[*(const uint32_t *)y].clock;
  return (a > b) - (a < b);
}
/* Whether the instance's aligned arrivals cannot be true: in a collective whose every end
 * depends on every start, one member started after another had ended, beyond both clock errors
 * (seen: GPU spans a replayed rank placed 17 ms after its peer's end, their KernelCh held while
 * its GPU clock was being calibrated). Such times would name a one-off stall that never was.
 * Linear in the members after a sort by clock (4,096 ranks: no pair is compared). */
int cl_verdict_impossible(const cl_sg_arrival *a, uint32_t n, uint32_t *idx) {
  for (uint32_t k = 0; k < n; k++) idx[k] = k;
  if (start_after_end(a, idx, n, 1)) return 1;
  g_arr = a;
  qsort(idx, n, sizeof *idx, cmp_clock);
  for (uint32_t s = 0, e; s < n; s = e) {
    for (e = s + 1; e < n && a[idx[e]].clock == a[idx[s]].clock; e++) {}
    if (a[idx[s]].clock && e - s >= 2 && start_after_end(a, idx + s, e - s, 0)) return 1;
  }
  return 0;
}

/* One member's arrival on the reference clock, its clock error at time t, and its end. */
static cl_sg_arrival arrival_at(const cl_job *job, const cl_clock_model *m, int ri, int64_t t, int64_t end, int64_t res) {
  double est, lo, hi;
  int64_t err = cl_cm_offset(m, ri, t, &est, &lo, &hi) ? (int64_t)ceil((hi - lo) / 2) : INT64_MAX / 4;
  (void)job;
  return (cl_sg_arrival){ .who = ri, .clock = m->clock_of_rank[ri] + 1, .value = cl_cm_align(m, ri, t), .err = err,
                          .end = cl_cm_align(m, ri, end), .res = res };
}

/* Per part: each member's arrival (sa), its aligned enqueue (se, when given) and out->arrival;
 * its members, and those that arrive by their enqueue (copy engine), counted in its slots. */
static void place_part(size_t lo, size_t hi, int part, void *arg) {
  member_pass *p = arg;
  size_t n_mem = 0, n_ce = 0;
  for (size_t ri = lo; ri < hi; ri++) {
    const cl_rank *r = p->job->r[ri];
    int64_t res = cl_gpu_share_res(&p->out->share, (int)ri);
    for (size_t k = 0; k < r->colls.n; k++) {
      const cl_coll *c = &r->colls.a[k];
      if (c->inst == UINT32_MAX) continue;
      size_t at = c->mem;
      /* a copy-engine collective's GPU span starts after the peers' sync: its enqueue arrives */
      int by_enq = c->ce && c->enq != CL_NO_TIME;
      n_mem++; n_ce += by_enq;
      p->sa[at] = arrival_at(p->job, p->m, (int)ri, by_enq ? c->enq : c->start, c->end, by_enq ? 0 : res);
      p->out->arrival[at] = p->sa[at].value;
      if (p->se) p->se[at] = cl_cm_align(p->m, (int)ri, c->enq);   /* its clock error and end: the start's (within a step) */
      if (p->by_wait) p->sa[at] = cl_phase_arrival(r, k, (int)ri);
    }
  }
  p->n_mem[part] = n_mem; p->n_ce[part] = n_ce;
}
static size_t place_members(const cl_job *job, const cl_clock_model *m, cl_verdict_an *out, cl_sg_arrival *sa,
                            int64_t *se, int by_wait, size_t *n_ce) {
  member_pass p = { .job = job, .m = m, .out = out, .sa = sa, .se = se, .by_wait = by_wait };
  int parts = cl_par_parts((size_t)job->n, job->threads, place_part, &p);
  size_t n_mem = 0;
  for (int q = 0; q < parts; q++) { n_mem += p.n_mem[q]; *n_ce += p.n_ce[q]; }
  return n_mem;
}

/* The verdict's input: per instance, each member's GPU start (on a time-shared GPU with the
 * scheduler's slices as its resolution) and, when every rank paired its collectives with their
 * enqueues, its host enqueue as the second evidence; or the GPU's own wait (v7). */
static void build_input(const cl_job *job, const cl_clock_model *m, cl_verdict_an *out, cl_sg_inst *si,
                        cl_sg_arrival *sa, int64_t *se, int by_wait, enum cl_sg_evidence *ev) {
  size_t n_ce = 0, n_mem = place_members(job, m, out, sa, se, by_wait, &n_ce);
  uint32_t maxc = 1;
  for (size_t k = 0; k < job->inst.n; k++) if (job->inst.a[k].count > maxc) maxc = job->inst.a[k].count;
  uint32_t *scratch = cl_xmalloc(maxc * sizeof *scratch);
  for (size_t k = 0; k < job->inst.n; k++) {
    const cl_inst *in = &job->inst.a[k];
    /* the first step found from the pattern is start-up too: first use of buffers, connections
     * and the allocator lands there, in collectives of kinds seen before (FSDP's all-gathers) */
    int first_step = out->steps_source == CL_STEPS_PATTERN && out->inst_step[k] == 0;
    si[k] = (cl_sg_inst){ in->comm, in->seq, in->bytes, in->func, out->inst_step[k], first_step, in->first, in->count };
    /* who arrived last makes everyone wait only where every end depends on every start: a
     * Broadcast's root (or a Reduce's peers) may finish before a late receiver starts, so a
     * receiver running behind the root costs nothing (the 2-GPU socket recording: rank 1 up to
     * 1.5 ms behind in 24 Broadcasts, no one waiting). Left out, counted. */
    if (!cl_cm_func_is_causal(cl_func_name(in->func))) { si[k].count = 0; out->n_not_causal++; }
    else if (cl_verdict_impossible(&sa[in->first], in->count, scratch)) { si[k].count = 0; out->n_impossible++; }
  }
  free(scratch);
  *ev = by_wait ? CL_SG_GPU_WAIT : n_mem && n_ce == n_mem ? CL_SG_ENQUEUE : CL_SG_GPU_START;
}

void cl_verdict_compute(const cl_job *job, const cl_clock_model *m, cl_verdict_an *out) {
  memset(out, 0, sizeof *out);
  size_t ni = job->inst.n;
  /* the issue order and the gaps between steps: host enqueues when every rank has them (a
   * time-shared GPU's starts blur the gaps) */
  int enq = all_enqueued(job);
  enum cl_sg_evidence order_ev = enq ? CL_SG_ENQUEUE : CL_SG_GPU_START;
  int by_wait = cl_phase_evidence_usable(job);   /* v7: the GPU's own wait, no clock (phase_evidence.h) */
  int64_t *t_first = cl_xmalloc((ni + 1) * sizeof *t_first);
  first_arrivals(job, m, order_ev, t_first);
  out->inst_step = cl_xmalloc((ni + 1) * sizeof *out->inst_step);
  find_steps(job, m, out, t_first);
  free(t_first);
  cl_gpu_share_find(job, &out->share);
  cl_sg_inst *si = cl_xmalloc((ni + 1) * sizeof *si);
  cl_sg_arrival *sa = cl_xmalloc((job->mem.n + 1) * sizeof *sa);
  int64_t *se = enq && !by_wait ? cl_xmalloc((job->mem.n + 1) * sizeof *se) : NULL;
  out->arrival = cl_xmalloc((job->mem.n + 1) * sizeof *out->arrival);
  const char **hosts = cl_xmalloc(((size_t)job->n + 1) * sizeof *hosts);
  for (int i = 0; i < job->n; i++) hosts[i] = job->r[i]->info.host ? job->r[i]->info.host : "";
  enum cl_sg_evidence ev;
  build_input(job, m, out, si, sa, se, by_wait, &ev);
  /* the host enqueue beside the GPU start: a rank late to enqueue shows there at the host's
   * resolution where a time-shared GPU's slices hide it, a rank slow on the GPU in its starts */
  int second = se && ev == CL_SG_GPU_START;
  cl_sg_input sin = { job->n, hosts, NULL, ni, si, sa, ev, 0, 0, by_wait ? cl_phase_job_ns(job) : 0,
                      second ? se : NULL, CL_SG_ENQUEUE, 0 };
  cl_sg_analyse(&sin, &out->v);
  verdict_line(job, &out->v, out->line, sizeof out->line);
  free(si); free(sa); free(se); free(hosts);
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
  cl_gpu_share_free(&out->share);
  if (out->steps_source == CL_STEPS_PATTERN) cl_steps_free(&out->st);
  free(out->inst_step); free(out->arrival); free(out->stepv); free(out->step_order);
  memset(out, 0, sizeof *out);
}
