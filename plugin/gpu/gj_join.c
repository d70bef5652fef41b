/* gj_join.c: see gpu_join.h (and gj_state.h: coverage, the pool, copies and per-participant state
 * are the files beside it). Tables are small open-addressed maps and FIFO windows, bounded
 * by count; what falls out of them is counted, never waited for. Writer thread only. */
#include "plugin/gpu/gj_state.h"
#include "plugin/gpu/gpu_slices.h"
#include "common/grow.h"
#include "common/config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HOLD_NS 300000000ull           /* a kernel whose launch record is missing waits this long */
#define EXPO_LAG_NS 1000000000ull      /* compute records can arrive this late (CUPTI buffers) */
#define SQ_MAX 65536                   /* NCCL kernels of one stream waiting to be joined */
#define SETTLE_NS 500000000ull         /* a stream's kernel records are joined this long after its end */
#define WIN_LAG_NS 300000000ull        /* KernelLaunch events reach the join within this */

static void on_result(void *arg, const cl_expo_result *r) {
  cl_gj *g = arg;
  gj_part *q = r->span.tag & CL_GJ_TAG_ORDER_ONLY ? NULL : cl_gj_dev_state(g, (int)r->span.device);
  if (q) {
    cl_expo_agg_add(q->agg, r);
    if (q->p->trace) cl_draw_exposed(q->p->ct, r);
  }
  if (g->fn) g->fn(g->arg, r);
}

void cl_gj_on_exposed(cl_gj *g, cl_gj_exposed_fn fn, void *arg) {
  g->fn = fn;
  g->arg = arg;
}

cl_gj *cl_gj_new(cl_parts *parts, int by_stream) {
  cl_gj *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->parts = parts;
  g->by_stream = by_stream;
  if (!by_stream) g->hold = malloc(NHOLD * sizeof *g->hold);   /* kernels wait for launch records */
  g->expo = cl_expo_new(NULL, on_result, g);
  g->sq = calloc(NSQ, sizeof *g->sq);
  if ((!by_stream && !g->hold) || !g->expo || !g->sq) { cl_gj_free(g); return NULL; }
  return g;
}

int cl_gj_by_stream(const cl_gj *g) { return g->by_stream; }
void cl_gj_draw_compute(cl_gj *g, int on) { g->draw_compute = on != 0; }

void cl_gj_free(cl_gj *g) {
  if (!g) return;
  cl_expo_free(g->expo);
  for (int i = 0; i < CL_MAX_PARTS; i++) cl_expo_agg_free(g->part[i].agg);
  free(g->hold);
  free(g->ce);
  for (int i = 0; g->sq && i < NSQ; i++) { free(g->sq[i].k); free(g->sq[i].w); }
  free(g->sq);
  free(g);
}

static void queue_window(cl_gj *g, uint64_t seq);

void cl_gj_kernel_launch(cl_gj *g, const cl_gj_launch *l) {
  uint64_t seq = g->nwin_total++;
  int lost = cl_gj_lost(g, l->start);   /* no kernel record will come for it */
  g->win[seq % NWIN] = (kl_win){l->tid, l->start, l->stop, l->group, l->comm, l->dev,
                                l->stream_id, 0, l->captured != 0, 0, (uint8_t)lost};
  /* it waits for a kernel only if CUPTI recorded kernels when it started: one between two
   * sampling windows (or in the lead before one) never gets a record, and waiting, it would
   * take the first kernels recorded after it (a launch without a stream id waits for any of its
   * device's), every later launch then one kernel behind */
  if (!l->captured && cl_gj_covered(g, l->start)) queue_window(g, seq);   /* covered: never lost */
}

void cl_gj_join_check(const cl_gj *g, uint64_t *agree, uint64_t *differ, uint64_t *repaired) {
  *agree = g->check_agree;
  *differ = g->check_differ;
  *repaired = g->repaired;
}

/* The KernelLaunch window holding this launch API record, if any. */
static kl_win *find_window(cl_gj *g, const cl_gpu_activity *l) {
  uint32_t n = g->nwin_total < NWIN ? (uint32_t)g->nwin_total : NWIN;
  for (uint32_t k = 0; k < n; k++) {          /* newest first: launches are recent */
    kl_win *w = &g->win[(g->nwin_total - 1 - k) % NWIN];
    if (l->start_ns > w->stop + LAUNCH_KEEP_NS) break;
    if ((int)l->thread == w->tid && l->start_ns >= w->start && l->end_ns <= w->stop) return w;
  }
  return NULL;
}

/* The slot of (group, comm): its own, or with `make` an empty one or the oldest of its set
 * (spans are read within seconds; at 100k launches a second a set of 8 holds them). NULL: none. */
static span_ent *span_slot(cl_gj *g, uint64_t group, uint32_t comm, int make) {
  uint32_t h = (uint32_t)((group * 0x9E3779B97F4A7C15ull + comm) >> 40) % NSPAN & ~(uint32_t)(SPAN_WAYS - 1);
  span_ent *set = &g->span[h], *old = set;
  for (int i = 0; i < SPAN_WAYS; i++) {
    if (set[i].group == group && set[i].comm == comm && group) return &set[i];
    if (set[i].seq < old->seq) old = &set[i];
  }
  if (!make) return NULL;
  for (int i = 0; i < SPAN_WAYS; i++) if (!set[i].group) return &set[i];
  return old;
}

/* Fallback only (CUDA-graph replays, ABI < v5, the join by stream order): NCCL's kernel names
 * (cupti.h), told once per distinct name by the bridge when it can. */
static int is_nccl_name(const cl_gpu_activity *k) {
  return k->name_class ? k->name_class == CL_GPU_NAME_NCCL : cl_gpu_is_nccl_name(k->name);
}

/* A launch group's kernel span: the union of its kernels'. */
static void set_span(cl_gj *g, uint64_t group, uint32_t comm, const cl_gpu_activity *k) {
  span_ent *s = span_slot(g, group, comm, 1);
  if (s->group != group || s->comm != comm) *s = (span_ent){group, comm, k->device, k->start_ns, k->end_ns, ++g->nspan};
  else { if (k->start_ns < s->s) s->s = k->start_ns; if (k->end_ns > s->e) s->e = k->end_ns; }
}

/* ---- the join by stream and launch order ---- */
/* The queue of stream `sid` on `dev` (DEV_ANY: whatever device it has; a queue whose device is
 * not known yet takes the first it is asked with), made if `make`; NULL when all NSQ are used. */
static stream_q *stream_of(cl_gj *g, uint32_t dev, uint32_t sid, int make) {
  stream_q *q = g->sq, *e = g->sq + NSQ;
  for (; q < e && q->sid; q++) {
    if (q->sid != sid) continue;
    if (dev == DEV_ANY || q->dev == dev) return q;
    if (q->dev == DEV_ANY) { q->dev = dev; return q; }
  }
  if (q == e || !make) return NULL;
  q->sid = sid;
  q->dev = dev;
  return q;
}

/* Room for one more at the end of the queue arr[*head..*n) (capacity *cap, at most `max`
 * waiting, an array of at most `max_cap`): the consumed front is reused before the array grows.
 * 0, or -1 when full. */
static int queue_room(void *arr, size_t *head, size_t *n, size_t *cap, size_t elem, size_t max, size_t max_cap) {
  char *a = *(char **)arr;
  if (*head && *n == *cap) {
    memmove(a, a + *head * elem, (*n - *head) * elem);
    *n -= *head;
    *head = 0;
  }
  if (*n - *head >= max) return -1;
  return cl_grow(arr, cap, *n + 1, elem, 256, max_cap);
}

/* A launch into its stream's queue, in start order (a stream's launches can come from several
 * threads, so not always in arrival order). Too many waiting: the oldest is given up. */
static void queue_window(cl_gj *g, uint64_t seq) {
  const kl_win *nw = &g->win[seq % NWIN];
  stream_q *q = stream_of(g, nw->dev < 0 ? DEV_ANY : (uint32_t)nw->dev, nw->sid ? nw->sid : SID_ANY, 1);
  if (!q) return;
  if (q->wn - q->wh >= NWIN) q->wh++;
  if (queue_room(&q->w, &q->wh, &q->wn, &q->wcap, sizeof *q->w, NWIN, NWIN + 1) != 0) return;
  size_t j = q->wn++;
  while (j > q->wh && g->win[q->w[j - 1] % NWIN].start > nw->start) { q->w[j] = q->w[j - 1]; j--; }
  q->w[j] = seq;
}

/* The first waiting launch of queue q (dropping what was joined, passed or overwritten), or NULL. */
static kl_win *first_window(cl_gj *g, stream_q *q) {
  uint64_t lo = g->nwin_total > NWIN ? g->nwin_total - NWIN : 0;
  while (q && q->wh < q->wn) {
    uint64_t seq = q->w[q->wh];
    kl_win *w = &g->win[seq % NWIN];
    if (seq >= lo && !w->joined && !w->passed) return w;
    q->wh++;
  }
  if (q && q->wh == q->wn) q->wh = q->wn = 0;
  return NULL;
}

/* q's waiting launch that started first: its own, or one whose stream id is unknown (same or
 * unknown device). */
static kl_win *oldest_window(cl_gj *g, stream_q *q) {
  kl_win *w = first_window(g, q);
  stream_q *any = stream_of(g, q->dev, SID_ANY, 0);
  kl_win *a = any && any != q ? first_window(g, any) : NULL;
  return !w || (a && a->start < w->start) ? a : w;
}

/* An NCCL kernel no launch is known for: pooled like a graph replay (gpu_join.h). */
static void no_launch(cl_gj *g, const pend_k *k) {
  cl_gpu_activity a = {.start_ns = k->s, .end_ns = k->e, .device = k->dev, .name = k->name, .kind = CL_GPU_KERNEL};
  cl_gj_pool_kernel(g, &a, 0);
}

/* Correlation ids in call order, across the 2^32 wrap. */
static int corr_before(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }

/* Counts a join against the correlation's (check mode), +1 or -1. */
static void check_join(cl_gj *g, const join_ent *j, int sign) {
  if (!j->k.known) return;
  uint64_t *c = j->k.group == j->group && j->k.comm == j->comm ? &g->check_agree : &g->check_differ;
  *c += (uint64_t)(int64_t)sign;
}

/* A launch group's span from its joins (a group whose work took several launches has several). */
static void respan(cl_gj *g, stream_q *q, uint64_t group, uint32_t comm) {
  span_ent *sp = span_slot(g, group, comm, 0);
  if (sp) sp->group = 0;
  uint64_t lo = q->nhist > NHIST ? q->nhist - NHIST : 0;
  for (uint64_t i = lo; i < q->nhist; i++) {
    const join_ent *j = &q->hist[i % NHIST];
    if (j->group != group || j->comm != comm) continue;
    cl_gpu_activity a = {.start_ns = j->k.s, .end_ns = j->k.e, .device = j->k.dev};
    set_span(g, group, comm, &a);
  }
}

static void join(cl_gj *g, stream_q *q, kl_win *w, const pend_k *k) {
  w->joined = 1;
  if (g->by_stream) w->matched = 1;
  join_ent *j = &q->hist[q->nhist++ % NHIST];
  *j = (join_ent){w->group, w->comm, *k};
  if (!g->by_stream) { check_join(g, j, 1); return; }
  cl_gpu_activity a = {.start_ns = k->s, .end_ns = k->e, .device = k->dev};
  set_span(g, w->group, w->comm, &a);
  gj_part *p = cl_gj_dev_state(g, (int)k->dev);
  if (p) p->by_stream++;
}

static void queue_pending(stream_q *q, const pend_k *pk, cl_gj *g);

/* A record that comes after a later launch's record was joined: the joins from the first
 * later one on each took the kernel of the launch before theirs. Each gets its own again, and
 * the newest joined kernel waits for the next launch. Collectives already drawn keep what they
 * got (see SETTLE_NS for how rarely). */
static void repair(cl_gj *g, stream_q *q, const pend_k *late) {
  uint64_t lo = q->nhist > NHIST ? q->nhist - NHIST : 0, p = q->nhist;
  while (p > lo && corr_before(late->corr, q->hist[(p - 1) % NHIST].k.corr)) p--;
  if (p == lo && p > 0) { if (g->by_stream) no_launch(g, late); return; }   /* too far back */
  pend_k carry = *late;
  for (uint64_t i = p; i < q->nhist; i++) {
    join_ent *j = &q->hist[i % NHIST];
    if (!g->by_stream) check_join(g, j, -1);
    pend_k old = j->k;
    j->k = carry;
    carry = old;
    if (!g->by_stream) check_join(g, j, 1);
    else respan(g, q, j->group, j->comm);
  }
  g->repaired++;
  queue_pending(q, &carry, g);   /* the newest kernel, without its launch again */
}

/* Joins q's settled kernels with its launches, first with first: kernels on one stream run in
 * launch order. Settled: SETTLE_NS after its end (its stream's earlier records have come, but
 * see repair()), and every launch before it has reached the join (WIN_LAG_NS). A kernel that
 * started before the oldest waiting launch is not that launch's (its own is unknown); a launch
 * whose kernel would have started LAUNCH_KEEP_NS after it never got one (its record was lost).
 * With launch records on, joins are only compared with the correlation's. */
static void pump(cl_gj *g, stream_q *q, uint64_t now, int final) {
  while (q->head < q->n) {
    const pend_k *k = &q->k[q->head];
    if (!final && (k->e + SETTLE_NS > now || k->s + WIN_LAG_NS > now)) break;
    kl_win *w = oldest_window(g, q);
    /* its kernel never came: too long ago, or before CUPTI last started recording (the end of a
     * sampling window: CUPTI's records were all handed over before it detached) */
    const cover_t *kc = w ? cl_gj_cover_of(g, k->s) : NULL;
    if (w && (k->s > w->stop + LAUNCH_KEEP_NS || (kc && w->start < kc->s))) { w->passed = 1; continue; }
    q->head++;
    if (!w || k->s < w->start) { if (g->by_stream) no_launch(g, k); continue; }
    join(g, q, w, k);
  }
  if (q->head == q->n) q->head = q->n = 0;
}

/* Into the waiting list, in launch order. */
static void queue_pending(stream_q *q, const pend_k *pk, cl_gj *g) {
  /* full: not joined */
  if (queue_room(&q->k, &q->head, &q->n, &q->cap, sizeof *q->k, SQ_MAX, SQ_MAX) != 0) {
    if (g->by_stream) no_launch(g, pk);
    return;
  }
  size_t j = q->n++;
  while (j > q->head && corr_before(pk->corr, q->k[j - 1].corr)) { q->k[j] = q->k[j - 1]; j--; }
  q->k[j] = *pk;
}

/* An NCCL kernel record (not a replay) for its stream's join. */
static void queue_kernel(cl_gj *g, const cl_gpu_activity *k, const corr_ent *known) {
  stream_q *q = stream_of(g, k->device, k->stream + 1, 1);
  pend_k pk = {k->start_ns, k->end_ns, known ? known->group : 0, k->name, k->device, known ? known->comm : 0,
               k->correlation, known != NULL};
  if (!q) { if (g->by_stream) no_launch(g, &pk); return; }   /* too many streams */
  if (q->nhist && corr_before(pk.corr, q->hist[(q->nhist - 1) % NHIST].k.corr)) repair(g, q, &pk);
  else queue_pending(q, &pk, g);
}

/* Classifies and uses one kernel record; returns 0 if its launch record is not known yet. */
static int use_kernel(cl_gj *g, const cl_gpu_activity *k, int force) {
  corr_ent *c = &g->corr[k->correlation % NCORR];
  int known = !g->by_stream && !k->graph_node && c->cls && c->corr == k->correlation;
  int nccl;
  if (known) nccl = c->cls == 1;
  else if (g->by_stream || k->graph_node || force || !g->nwin_total) {
    /* no launch record of its own (a graph replay carries the graph launch's correlation id;
     * a runtime launch; no KernelLaunch events): by name */
    nccl = is_nccl_name(k);
  }
  else return 0;
  gj_part *q = cl_gj_dev_state(g, (int)k->device);   /* the kernel's GPU's trace */
  if (!q) return 1;
  if (nccl && !known) q->by_name++;
  /* compute kernels: a slice each only when asked (COMMLENS_CUPTI=full); the default keeps
   * them as exposure's compute intervals and a count (a slice cost more CPU than all the rest
   * of a record's work: docs/decisions/0045-compute-kernels-not-drawn.md) */
  if ((nccl || g->draw_compute) && q->p->trace) cl_draw_gpu_kernel(q->p->ct, k, nccl);
  if (!nccl) {
    q->compute_kernels++;
    cl_expo_add_compute(g->expo, k->device, k->start_ns, k->end_ns);
    return 1;
  }
  q->nccl_kernels++;
  if (k->graph_node) { cl_gj_pool_kernel(g, k, 1); return 1; }
  if (known) set_span(g, c->group, c->comm, k);
  else if (!g->by_stream) cl_gj_pool_kernel(g, k, 0);   /* its launch record never came */
  queue_kernel(g, k, known ? c : NULL);                 /* the join, or its check */
  return 1;
}

/* NVTX ranges named "step..." (any case; a number in the name becomes the step id) are the
 * application's steps: exposure is also reported per step. */
static int step_name(const char *n, uint64_t *id, uint64_t *next) {
  if (!n || strncasecmp(n, "step", 4) != 0) return 0;
  const char *d = n + 4;
  while (*d && (*d < '0' || *d > '9')) d++;
  *id = *d ? strtoull(d, NULL, 10) : (*next)++;
  return 1;
}

static void on_mark(cl_gj *g, const cl_gpu_activity *a) {
  uint32_t slot = a->correlation % NMARK;
  if (a->kind == CL_GPU_MARK_START) {
    g->marks[slot].id = a->correlation;
    g->marks[slot].s = a->start_ns;
    g->marks[slot].name = a->name;
    return;
  }
  if (g->marks[slot].id != a->correlation || !g->marks[slot].name) return;
  uint64_t id;
  if (step_name(g->marks[slot].name, &id, &g->next_step_id) && a->start_ns > g->marks[slot].s) {
    /* a step is the process's (its threads mark it): every GPU's exposure is cut by it */
    g->stepkeep[g->nsteps_seen++ % NSTEPKEEP] = (kept_step){g->marks[slot].s, a->start_ns, id};
    for (int i = 0; i < CL_MAX_PARTS; i++)
      if (g->part[i].agg) cl_expo_add_step(g->part[i].agg, g->marks[slot].s, a->start_ns, id);
  }
  g->marks[slot].name = NULL;
}

void cl_gj_activity(cl_gj *g, const cl_gpu_activity *a) {
  if (a->kind == CL_GPU_MARK_START || a->kind == CL_GPU_MARK_END) { on_mark(g, a); return; }
  if (a->kind == CL_GPU_LAUNCH) {
    kl_win *w = find_window(g, a);
    if (w) w->matched = 1;
    corr_ent *c = &g->corr[a->correlation % NCORR];
    *c = w ? (corr_ent){a->correlation, 1, w->group, w->comm} : (corr_ent){a->correlation, 2, 0, 0};
    if (w) g->launches_matched++; else g->launches_other++;
    /* under the thread that made it, in NCCL's launch's GPU's trace (a launch record names no
     * device: the application's go to the process's first GPU) */
    cl_part *p = w ? cl_parts_of_comm(g->parts, w->comm) : cl_parts_of_dev(g->parts, -1);
    if (p && p->trace) cl_draw_cuda_launch(p->ct, a, w != NULL);
    return;
  }
  if (a->kind == CL_GPU_MEMCPY) {   /* kept for the copy-engine collectives */
    cl_gj_copy_record(g, a);
  }
  if (a->kind == CL_GPU_MEMCPY || a->kind == CL_GPU_MEMSET) {   /* not compute (exposure.h): drawn in full */
    cl_part *p = g->draw_compute ? cl_parts_of_dev(g->parts, (int)a->device) : NULL;
    if (p && p->trace) cl_draw_gpu_copy(p->ct, a);
    return;
  }
  if (a->kind != CL_GPU_KERNEL) return;
  if (a->end_ns > g->last_kernel_end) g->last_kernel_end = a->end_ns;
  if (use_kernel(g, a, 0)) return;
  if (g->nhold == NHOLD) { use_kernel(g, a, 1); return; }
  g->hold_since[g->nhold] = a->end_ns;
  g->hold[g->nhold++] = *a;
}

int cl_gj_span(cl_gj *g, uint64_t group, uint32_t comm, uint64_t *s, uint64_t *e, uint32_t *dev) {
  if (!group) return 0;   /* no launch group (between sampled windows): none kept, nothing to look up */
  span_ent *x = span_slot(g, group, comm, 0);
  if (!x) return 0;
  *s = x->s;
  *e = x->e;
  *dev = x->dev;
  return 1;
}

void cl_gj_expose(cl_gj *g, uint64_t tag, uint32_t device, uint64_t comm_hash, uint64_t s, uint64_t e) {
  cl_expo_span sp = {.start_ns = s, .end_ns = e, .tag = tag, .comm = comm_hash, .device = device,
                     .order_only = (tag & CL_GJ_TAG_ORDER_ONLY) != 0};
  if (cl_expo_add_span(g->expo, &sp) != 0 && g->fn) {   /* pending cap hit: unknown exposure */
    cl_expo_result r = {.span = sp, .incomplete = 1};
    g->fn(g->arg, &r);
  }
}

int cl_gj_expo_idle(const cl_gj *g) { return cl_expo_pending(g->expo) == 0; }

void cl_gj_advance(cl_gj *g, uint64_t now, int final) {
  if (now > g->now) g->now = now;
  uint32_t k = 0;
  for (uint32_t i = 0; i < g->nhold; i++) {   /* launch records arrive with the kernels, mostly */
    int force = final || now - g->hold_since[i] > HOLD_NS;
    if (!use_kernel(g, &g->hold[i], force)) { g->hold_since[k] = g->hold_since[i]; g->hold[k++] = g->hold[i]; }
  }
  g->nhold = k;
  for (stream_q *q = g->sq; g->sq && q < g->sq + NSQ && q->sid; q++) if (q->sid != SID_ANY) pump(g, q, now, final);
  /* replayed kernels no collective claimed in time count on their own */
  cl_gj_pool_release(g, now, final);
  if (final) {
    cl_expo_finish(g->expo);
    for (int i = 0; i < CL_MAX_PARTS; i++) if (g->part[i].agg) cl_expo_agg_finish(g->part[i].agg);
    return;
  }
  if (now > EXPO_LAG_NS) {
    uint64_t wm = now - EXPO_LAG_NS;          /* not past a replayed kernel still in the pool */
    if (g->gk_next < g->ngk && g->gk[g->gk_next % NGK].s < wm) wm = g->gk[g->gk_next % NGK].s;
    cl_expo_advance(g->expo, wm);
    uint64_t upto = cl_expo_reported_upto(g->expo);
    for (int i = 0; i < CL_MAX_PARTS; i++) if (g->part[i].agg) cl_expo_agg_advance(g->part[i].agg, upto);
  }
}

void cl_gj_join_all(cl_gj *g) {
  for (stream_q *q = g->sq; q < g->sq + NSQ && q->sid; q++) if (q->sid != SID_ANY) pump(g, q, 0, 1);
}
