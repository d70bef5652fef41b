/* gj_cover.c: when CUPTI recorded kernels for us (gpu_join.h cl_gj_start .. cl_gj_launches_lost):
 * intervals opened and closed by the sampling windows or by another tool taking CUPTI, and
 * whether a time lies inside one. Reads the KernelLaunch windows; joins nothing. */
#include "plugin/gpu/gj_state.h"
#include <string.h>

#define LOST_AFTER_NS 2000000000ull    /* a KernelLaunch with no launch record this old is missed */
#define LOST_STREAK 8                  /* ... this many in a row: CUPTI's records go elsewhere */

void cl_gj_start(cl_gj *g, uint64_t now) {
  if (g->ncover && !g->cover[g->ncover - 1].e) return;      /* already open */
  if (g->ncover == NCOVER) {                                 /* full: merge the two oldest */
    g->cover[0].e = g->cover[1].e;
    memmove(&g->cover[1], &g->cover[2], (NCOVER - 2) * sizeof g->cover[0]);
    g->ncover--;
  }
  g->cover[g->ncover].s = now;
  g->cover[g->ncover].gap = 0;
  g->cover[g->ncover++].e = 0;
}

void cl_gj_stop_window(cl_gj *g, uint64_t t) {
  if (!g->ncover || g->cover[g->ncover - 1].e) return;
  cl_gj_stop(g, t);
  g->cover[g->ncover - 1].gap = 1;
}

/* Whether t is past every coverage: none yet, or t at or after the end of the last (they are in
 * time order and apart, so no earlier one holds it). Between sampled windows every collective
 * asks a few times: answered without walking the NCOVER kept. */
static int past_all(const cl_gj *g, uint64_t t) {
  return !g->ncover || (g->cover[g->ncover - 1].e && t >= g->cover[g->ncover - 1].e);
}

int cl_gj_covered_for(const cl_gj *g, uint64_t s, uint64_t e, uint64_t guard) {
  if (past_all(g, s)) return 0;
  for (uint32_t i = g->ncover; i-- > 0;)
    if (s >= g->cover[i].s && (!g->cover[i].e || e < g->cover[i].e)) return s - g->cover[i].s >= guard;
  return 0;
}

void cl_gj_stop(cl_gj *g, uint64_t t) {
  if (!g->ncover || g->cover[g->ncover - 1].e) return;
  if (t <= g->cover[g->ncover - 1].s) t = g->cover[g->ncover - 1].s + 1;
  g->cover[g->ncover - 1].e = t;
  g->cover[g->ncover - 1].gap = 0;
  /* launches from t on get no kernel record: waiting, they would take the first kernels
   * recorded after CUPTI comes back (the join by stream order goes first with first) */
  uint32_t n = g->nwin_total < NWIN ? (uint32_t)g->nwin_total : NWIN;
  for (uint32_t k = 0; k < n; k++) {
    kl_win *w = &g->win[(g->nwin_total - 1 - k) % NWIN];
    if (w->start < t) break;
    w->passed = 1;
  }
}

const cover_t *cl_gj_cover_of(const cl_gj *g, uint64_t t) {
  if (past_all(g, t)) return NULL;
  for (uint32_t i = g->ncover; i-- > 0;)
    if (t >= g->cover[i].s && (!g->cover[i].e || t < g->cover[i].e)) return &g->cover[i];
  return NULL;
}

int cl_gj_covered(const cl_gj *g, uint64_t t) { return cl_gj_cover_of(g, t) != NULL; }

int cl_gj_lost(const cl_gj *g, uint64_t t) {
  if (!g->ncover || t < g->cover[0].s || cl_gj_covered(g, t)) return 0;
  for (uint32_t i = g->ncover; i-- > 0;)   /* the coverage before t: ended by a window, not taken */
    if (g->cover[i].s <= t) return !g->cover[i].gap;
  return 0;
}

uint64_t cl_gj_covered_ns(const cl_gj *g, uint64_t now) {
  uint64_t sum = 0;
  for (uint32_t i = 0; i < g->ncover; i++) {
    uint64_t e = g->cover[i].e ? g->cover[i].e : now;
    if (e > g->cover[i].s) sum += e - g->cover[i].s;
  }
  return sum;
}

int cl_gj_launches_lost(cl_gj *g, uint64_t now, uint64_t *last_ok) {
  if (!g->ncover || g->cover[g->ncover - 1].e) return 0;
  uint64_t since = g->cover[g->ncover - 1].s, oldest_miss = 0;
  uint32_t n = g->nwin_total < NWIN ? (uint32_t)g->nwin_total : NWIN, misses = 0;
  for (uint32_t k = 0; k < n; k++) {            /* newest first, back to the last matched one */
    const kl_win *w = &g->win[(g->nwin_total - 1 - k) % NWIN];
    if (w->start < since) break;
    if (w->captured) continue;                  /* its kernel runs at replays */
    if (w->stop + LOST_AFTER_NS > now) continue;  /* its record may still be on its way */
    if (w->matched) {
      if (misses < LOST_STREAK) return 0;
      /* joined by stream: kernel records that still come mean the launches went unjoined for
       * another reason (a kernel name we do not know), not that CUPTI's records go elsewhere */
      if (g->by_stream && g->last_kernel_end >= oldest_miss) return 0;
      *last_ok = w->stop;
      return 1;
    }
    misses++;
    oldest_miss = w->start;
  }
  /* no launch record at all in this coverage (the driver API kind refused): launches say
   * nothing about where records go */
  return 0;
}
