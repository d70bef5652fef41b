/* gj_copy.c: copy-engine collectives (NCCL 2.28+) timed by their copies (gpu_join.h
 * cl_gj_ce_enqueue, cl_gj_ce_span): CUPTI's memcpy records assigned, in stream order, to the
 * collectives enqueued before them. Never touches the kernel joins. */
#include "plugin/gpu/gj_state.h"
#include <stdlib.h>

#define NCEREQ 8192                    /* recent copy-engine collectives: ~40,000 a second at
                                          CUPTI's 100 ms flushes (seen: 19,000 a second, 1 MiB
                                          AllGathers on 2 H200s) */
#define CE_SCAN 512                    /* recent copies a newly read collective looks through */
#define CE_STALE_NS 2000000000ull     /* a collective enqueued this long before a copy began has all
                                          its copies, or they went unrecorded (CUPTI was off) */
#define CE_QUIET_NS 300000000ull      /* no copy of a collective comes this long after its last one */
#define CE_SLACK_NS 2000               /* a copy may read as starting this much before its enqueue
                                          (the GPU's timestamps mapped to the host clock) */

/* A copy-engine collective's copies, assigned as CUPTI hands them over. A stream runs its work in
 * order, so the copies of one collective all come before those of the next; a copy can only be
 * a collective's that was enqueued before it began. How many memcpy records one collective
 * makes is not NCCL's op count (NCCL 2.30's AllGather on 2 H200s: CeBatch says 2 ops, CUPTI
 * recorded 1 copy per collective on each GPU), so it is learned per stream: when a copy begins
 * after the next collective was enqueued and the current one already has copies, the current
 * one is complete, and what it got is the stream's count from then on. */
static uint32_t *ce_per(cl_gj *g, uint32_t dev, uint32_t stream) {
  uint32_t k = (dev * 31u + stream) % NCELEARN;
  for (uint32_t i = 0; i < NCELEARN; i++) {
    ce_learn *l = &g->learn[(k + i) % NCELEARN];
    if (l->stream == stream && l->dev == dev) return &l->per;
    if (!l->stream) { l->dev = dev; l->stream = stream; l->per = 0; return &l->per; }
  }
  ce_learn *l = &g->learn[k];            /* full: the slot is reused */
  l->dev = dev; l->stream = stream; l->per = 0;
  return &l->per;
}
static void ce_assign(ce_req *r, cp_ent *c) {
  c->claimed = 1;
  if (!r->got || c->s < r->s) r->s = c->s;
  if (c->e > r->e) r->e = c->e;
  r->got++;
}
static void ce_place(cl_gj *g, cp_ent *c) {
  ce_req *r = NULL, *r2 = NULL;
  if (!g->ce) return;
  if (g->ce_head + NCEREQ < g->nce) g->ce_head = g->nce - NCEREQ;    /* overwritten: gone */
  while (g->ce_head < g->nce && g->ce[g->ce_head % NCEREQ].done) g->ce_head++;
  for (uint64_t i = g->ce_head; i < g->nce && !r2; i++) {
    ce_req *x = &g->ce[i % NCEREQ];
    if (x->done) continue;
    /* enqueued this long before a copy of any stream began: it has all its copies, or its copies
     * were not recorded (CUPTI was off then); either way it takes no more */
    if (c->s > x->after + CE_STALE_NS) { x->done = 1; continue; }
    if (x->dev != c->dev || x->stream != c->stream + 1) continue;
    if (x->after > c->s + CE_SLACK_NS) break;   /* enqueued after the copy began: nor the ones after it */
    if (!r) r = x; else r2 = x;
  }
  if (!r) return;                               /* its collective is not read yet */
  uint32_t *per = ce_per(g, c->dev, c->stream);
  if (r->got && r2 && (!*per || r->got >= *per)) {   /* the next one's first copy */
    if (!*per) *per = r->got;
    r->done = 1;
    r = r2;
  }
  ce_assign(r, c);
  if (*per && r->got >= *per) r->done = 1;
}
static int cmp_copy_start(const void *a, const void *b) {
  const cp_ent *x = *(cp_ent *const *)a, *y = *(cp_ent *const *)b;
  return (x->s > y->s) - (x->s < y->s);
}

void cl_gj_copy_record(cl_gj *g, const cl_gpu_activity *a) {
  cp_ent *c = &g->copy[g->ncopy++ % NCOPY];
  *c = (cp_ent){a->start_ns, a->end_ns < a->start_ns ? a->start_ns : a->end_ns, a->device, a->stream, 0};
  ce_place(g, c);
}

uint64_t cl_gj_ce_enqueue(cl_gj *g, uint64_t id, uint32_t dev, uint32_t stream, uint64_t after) {
  if (!id || !stream) return 0;
  if (!g->ce && !(g->ce = calloc(NCEREQ, sizeof *g->ce))) return 0;   /* made for the first one */
  uint64_t ticket = ++g->nce;
  g->ce[(ticket - 1) % NCEREQ] = (ce_req){.id = id, .after = after, .dev = dev, .stream = stream};
  /* copies of its stream recorded before it (or an earlier one) was read, in start order */
  cp_ent *list[256];
  size_t n = 0;
  /* the recent ones only: a copy recorded before its collective was read is at most a CUPTI
   * flush old (100 ms), and the scan stays bounded per collective */
  uint64_t from = g->ncopy > CE_SCAN ? g->ncopy - CE_SCAN : 0;
  for (uint64_t i = from; i < g->ncopy && n < 256; i++) {
    cp_ent *c = &g->copy[i % NCOPY];
    if (!c->claimed && c->dev == dev && c->stream + 1 == stream) list[n++] = c;
  }
  qsort(list, n, sizeof *list, cmp_copy_start);
  for (size_t i = 0; i < n; i++) ce_place(g, list[i]);
  return ticket;
}

int cl_gj_ce_span(cl_gj *g, uint64_t ticket, uint64_t id, int settle, uint64_t *s, uint64_t *e) {
  if (!g->ce || !ticket || ticket > g->nce || ticket + NCEREQ <= g->nce) return 0;   /* none, or overwritten */
  ce_req *r = &g->ce[(ticket - 1) % NCEREQ];
  if (r->id != id) return 0;
  if (settle) r->done = 1;                    /* asked for the last time: it takes no more copies */
  /* the last collective of its stream so far: complete once CUPTI has handed over what ran
   * well after its last copy (its buffers are flushed every 100 ms) */
  if (r->got && g->now > r->e + CE_QUIET_NS) r->done = 1;
  if (!r->done || !r->got) return 0;
  *s = r->s; *e = r->e;
  return 1;
}
