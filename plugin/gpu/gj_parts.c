/* gj_parts.c: what the GPU join keeps per participant (one GPU's trace): its exposure aggregator
 * (made on first use, with the NVTX steps it missed), its windows' slices and digest steps, and
 * its counts. Never joins a kernel. */
#include "plugin/gpu/gj_state.h"
#include "plugin/gpu/gpu_slices.h"
#include <string.h>

/* A window of a participant's exposure closed: an NVTX step (a slice, a digest row, the worst
 * step) or a 100 ms bucket (the counter track). */
static void on_window(void *arg, const cl_expo_window *w) {
  gj_part *q = arg;
  if (w->kind == CL_EXPO_WIN_STEP) {       /* one slice per NVTX step with its exposure */
    if (q->p->trace) cl_draw_step(q->p->ct, w);
    cl_digest_step(q->p->dg, w->id, w->start_ns, w->end_ns);
    q->steps++;
    q->step_exposed_sum += w->exposed_ns;
    q->step_comm_sum += w->comm_ns;
    if (w->exposed_ns >= q->worst_step_exposed) { q->worst_step_exposed = w->exposed_ns; q->worst_step_id = w->id; }
    return;
  }
  if (w->kind != CL_EXPO_WIN_BUCKET) return;
  if (q->p->trace) cl_draw_window_counters(q->p->ct, w);   /* exposed communication per 100 ms bucket */
}

gj_part *cl_gj_part_new(cl_gj *g, cl_part *p) {
  gj_part *q = &g->part[p->index];
  q->g = g;
  q->p = p;
  q->agg = cl_expo_agg_new(100000000ull, 2000000000ull, on_window, q);
  if (!q->agg) return NULL;
  uint64_t first = g->nsteps_seen > NSTEPKEEP ? g->nsteps_seen - NSTEPKEEP : 0;
  for (uint64_t i = first; i < g->nsteps_seen; i++) {     /* the steps it missed */
    const kept_step *k = &g->stepkeep[i % NSTEPKEEP];
    cl_expo_add_step(q->agg, k->s, k->e, k->id);
  }
  return q;
}

void cl_gj_steps(cl_gj *g, cl_part *p, uint64_t *n, uint64_t *exposed_sum, uint64_t *comm_sum,
                 uint64_t *worst_id, uint64_t *worst_exposed) {
  const gj_part *q = &g->part[p->index];
  *n = q->steps;
  *exposed_sum = q->step_exposed_sum;
  *comm_sum = q->step_comm_sum;
  *worst_id = q->worst_step_id;
  *worst_exposed = q->worst_step_exposed;
}

void cl_gj_totals(cl_gj *g, cl_part *p, cl_gj_counts *c) {
  const gj_part *q = &g->part[p->index];
  memset(c, 0, sizeof *c);
  if (q->agg) cl_expo_agg_totals(q->agg, &c->t);
  c->launches_nccl = g->launches_matched;
  c->launches_other = g->launches_other;
  c->nccl_kernels = q->nccl_kernels;
  c->compute_kernels = q->compute_kernels;
  c->by_name = q->by_name;
  c->by_stream = q->by_stream;
  c->no_launch = q->no_launch;
  c->graph_kernels = q->graph_kernels;
  c->graph_claimed = q->graph_claimed;
}

size_t cl_gj_comms(cl_gj *g, cl_part *p, cl_expo_comm_totals *out, size_t max) {
  const gj_part *q = &g->part[p->index];
  return q->agg ? cl_expo_agg_comms(q->agg, out, max) : 0;
}
