/* gj_graph.c: the pool of NCCL kernels with no launch to join them by (gpu_join.h: CUDA-graph
 * replays, and kernels whose launch is unknown): a collective claims the one its own span
 * overlaps; one unclaimed in time counts as communication on its own. Never joins by launch. */
#include "plugin/gpu/gj_state.h"

#define GRAPH_HOLD_NS 1500000000ull    /* a pooled kernel waits this long after its end for a claim */
#define GRAPH_TOL_NS 50000ull          /* GPU-timer spans mapped to the host clock are this close */

/* Counts a replayed kernel no collective claimed as communication on its own. Its tag carries
 * the interned name (names live until exit), so the report can name the collective. */
static void release_graph(cl_gj *g, gk_ent *k) {
  if (k->claimed) return;
  cl_expo_span sp = {.start_ns = k->s, .end_ns = k->e, .tag = CL_GJ_TAG_GRAPH | (uint64_t)(uintptr_t)k->name,
                     .comm = 0, .device = k->dev};
  cl_expo_add_span(g->expo, &sp);
}

void cl_gj_pool_kernel(cl_gj *g, const cl_gpu_activity *k, int replay) {
  if (g->ngk - g->gk_next == NGK) release_graph(g, &g->gk[g->gk_next++ % NGK]);   /* pool full */
  g->gk[g->ngk++ % NGK] = (gk_ent){k->start_ns, k->end_ns, k->name, k->device, 0};
  if (k->end_ns > g->gk_max_e) g->gk_max_e = k->end_ns;
  if (replay) g->graph_kernels++;
  gj_part *q = cl_gj_dev_state(g, (int)k->device);
  if (q) { if (replay) q->graph_kernels++; else q->no_launch++; }
  if (k->device < 64) g->graph_devs |= 1ull << k->device;
}

void cl_gj_pool_release(cl_gj *g, uint64_t now, int final) {
  while (g->gk_next < g->ngk && (final || g->gk[g->gk_next % NGK].e + GRAPH_HOLD_NS < now))
    release_graph(g, &g->gk[g->gk_next++ % NGK]);
}

int cl_gj_graph_seen(const cl_gj *g, uint32_t device) {
  return device < 64 ? (int)(g->graph_devs >> device & 1) : g->graph_kernels != 0;
}
int cl_gj_graph_any(const cl_gj *g) { return g->graph_devs != 0 || g->graph_kernels != 0; }

int cl_gj_graph_claim(cl_gj *g, uint32_t device, uint64_t s, uint64_t e, uint64_t *ks, uint64_t *ke) {
  gk_ent *best = NULL;
  uint64_t best_ov = 0, best_gap = GRAPH_TOL_NS + 1;   /* most overlap; else the nearest, within TOL */
  /* starts past every pooled kernel's end and tolerance: none overlaps, none is near (the
   * common case between sampling windows, with the window's unjoined kernels still pooled) */
  if (g->gk_max_e <= UINT64_MAX - GRAPH_TOL_NS && s > g->gk_max_e + GRAPH_TOL_NS) return 0;
  for (uint64_t i = g->ngk; i > g->gk_next; i--) {      /* newest first */
    gk_ent *k = &g->gk[(i - 1) % NGK];
    if (k->e + LAUNCH_KEEP_NS < s) break;
    if (k->dev != device) continue;
    uint64_t lo = k->s > s ? k->s : s, hi = k->e < e ? k->e : e;
    if (hi > lo) {
      if (hi - lo > best_ov) { best_ov = hi - lo; best = k; }
    } else if (!best_ov) {
      uint64_t gap = k->e <= s ? s - k->e : k->s - e;
      if (gap < best_gap) { best_gap = gap; best = k; }
    }
  }
  if (!best) return 0;
  if (!best->claimed) {
    best->claimed = 1;
    gj_part *q = cl_gj_dev_state(g, (int)device);
    if (q) q->graph_claimed++;
  }
  *ks = best->s;
  *ke = best->e;
  return 1;
}

const char *cl_gj_graph_name(uint64_t tag) {
  return (tag & CL_GJ_TAG_GRAPH) ? (const char *)(uintptr_t)(tag & ~CL_GJ_TAG_GRAPH) : NULL;
}
