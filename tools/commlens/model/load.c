/* load.c: finds and validates per-rank traces and reduces each to the compact per-rank
 * model of load.h in one streaming pass (two threads, one file each at a time), counting
 * the pass's progress (progress.h).
 * Must never keep events themselves: only the aggregates the analyses need. */
#include "tools/commlens/model/load.h"
#include "tools/commlens/read/progress.h"
#include "tools/commlens/read/digest_read.h"
#include "tools/commlens/read/digest_trace.h"
#include <ctype.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- interned function names and communicator names (shared by the scan threads) ---- */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
/* g_func entries never change once published; g_nfunc is published with release order, so
 * readers need no lock. */
static char *g_func[1024]; static _Atomic int g_nfunc;
static CL_VEC(cl_commname) g_comms;

const char *cl_func_name(int id) {
  return id >= 0 && id < atomic_load_explicit(&g_nfunc, memory_order_acquire) ? g_func[id] : "?";
}

/* Invalid UTF-8 replaced in the names kept here (all files of the load). */
static _Atomic int64_t g_utf8;
/* A name from an event (still JSON-escaped) as the text every output shows: unescaped, whole,
 * valid UTF-8 (replacements counted). Caller frees. */
static char *clean_name(cl_str_t s, int count) {
  size_t n = (size_t)(s.n > 0 ? s.n : 0) + 1;   /* unescaped: at most its escaped length */
  char *u = cl_xmalloc(n);
  cl_str_unescape(s, u, n);
  int64_t bad = 0;
  char *c = cl_utf8_dup(u, strlen(u), &bad);
  free(u);
  if (count && bad) atomic_fetch_add(&g_utf8, bad);
  return c;
}

/* The id of an interned name; `name` (owned, valid UTF-8) is kept (*kept = 1) or freed. */
static int intern(char *name, int *kept);
static int func_id(const char *s, int n) {
  int kept = 0, id = intern(clean_name((cl_str_t){ s, n }, 0), &kept);
  if (kept) free(clean_name((cl_str_t){ s, n }, 1));   /* its invalid UTF-8 counted once, when kept */
  return id;
}
static int intern(char *name, int *kept) {
  pthread_mutex_lock(&g_mu);
  int id = -1;
  int nf = atomic_load_explicit(&g_nfunc, memory_order_relaxed);
  for (int i = 0; i < nf; i++)
    if (!strcmp(g_func[i], name)) { id = i; break; }
  if (id < 0 && nf < 1024) {
    g_func[nf] = name; name = NULL; *kept = 1;
    id = nf;
    atomic_store_explicit(&g_nfunc, nf + 1, memory_order_release);
  }
  if (id < 0) id = 1023;
  pthread_mutex_unlock(&g_mu);
  free(name);
  return id;
}

/* A communicator's name (owned, valid UTF-8: kept or freed). */
static void note_comm_clean(uint64_t comm, char *name) {
  pthread_mutex_lock(&g_mu);
  size_t i;
  for (i = 0; i < g_comms.n; i++) if (g_comms.a[i].comm == comm) break;
  if (i == g_comms.n) { CL_PUSH(g_comms, ((cl_commname){ comm, name })); name = NULL; }
  else if (!g_comms.a[i].name[0] && name[0]) { free(g_comms.a[i].name); g_comms.a[i].name = name; name = NULL; }
  pthread_mutex_unlock(&g_mu);
  free(name);
}
static void note_comm(uint64_t comm, cl_str_t name) { note_comm_clean(comm, clean_name(name, 1)); }
const char *cl_comm_name(uint64_t comm) {
  for (size_t i = 0; i < g_comms.n; i++) if (g_comms.a[i].comm == comm) return g_comms.a[i].name;
  return "";
}
int cl_comm_by_name(const char *name, uint64_t *out) {
  for (size_t i = 0; i < g_comms.n; i++)
    if (g_comms.a[i].name[0] && !strcmp(g_comms.a[i].name, name)) { *out = g_comms.a[i].comm; return 0; }
  return -1;
}

/* ---- per-rank scratch: (comm, func, seq) -> latest-finishing channel ------------------ */
typedef struct { uint64_t comm; int64_t seq; int64_t end; int32_t func, ch; int used; } tail_ent;
typedef struct { tail_ent *t; size_t cap, n; } tail_map;

static size_t tail_slot(tail_map *m, uint64_t comm, int func, int64_t seq) {
  size_t h = (size_t)cl_hash64(comm ^ ((uint64_t)seq * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)func << 56));
  for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    tail_ent *t = &m->t[i];
    if (!t->used || (t->comm == comm && t->seq == seq && t->func == func)) return i;
  }
}
static void tail_put(tail_map *m, uint64_t comm, int func, int64_t seq, int64_t end, int ch) {
  if (2 * (m->n + 1) > m->cap) {
    tail_map nm = { cl_xcalloc(m->cap ? m->cap * 2 : 1024, sizeof(tail_ent)), m->cap ? m->cap * 2 : 1024, 0 };
    for (size_t i = 0; i < m->cap; i++)
      if (m->t[i].used) { nm.t[tail_slot(&nm, m->t[i].comm, m->t[i].func, m->t[i].seq)] = m->t[i]; nm.n++; }
    free(m->t); *m = nm;
  }
  tail_ent *t = &m->t[tail_slot(m, comm, func, seq)];
  if (!t->used) { *t = (tail_ent){ comm, seq, end, func, ch, 1 }; m->n++; return; }
  if (end > t->end) { t->end = end; t->ch = ch; }
}

static cl_chan *chan_get(cl_rank *r, uint64_t comm, int ch) {
  if (r->chans.n * 2 + 2 > r->chan_cap) {
    size_t cap = r->chan_cap ? r->chan_cap * 2 : 256;
    free(r->chan_idx); r->chan_idx = cl_xcalloc(cap, sizeof(uint32_t)); r->chan_cap = cap;
    for (size_t k = 0; k < r->chans.n; k++) {
      size_t i = (size_t)cl_hash64(r->chans.a[k].comm + (uint64_t)r->chans.a[k].channel) & (cap - 1);
      while (r->chan_idx[i]) i = (i + 1) & (cap - 1);
      r->chan_idx[i] = (uint32_t)k + 1;
    }
  }
  size_t i = (size_t)cl_hash64(comm + (uint64_t)ch) & (r->chan_cap - 1);
  for (; r->chan_idx[i]; i = (i + 1) & (r->chan_cap - 1)) {
    cl_chan *c = &r->chans.a[r->chan_idx[i] - 1];
    if (c->comm == comm && c->channel == ch) return c;
  }
  CL_GROW(r->chans);
  cl_chan *c = &r->chans.a[r->chans.n];
  memset(c, 0, sizeof *c); c->comm = comm; c->channel = ch;
  r->chan_idx[i] = (uint32_t)++r->chans.n;
  return c;
}

/* Host enqueue slices ("coll") of one rank, paired with its GPU spans after the scan. */
typedef struct { uint64_t comm; int64_t seq, ts; int32_t func; uint32_t order; } host_coll;
typedef struct { CL_VEC(host_coll) v; } host_colls;

static int cmp_host_coll(const void *a, const void *b) {
  const host_coll *x = a, *y = b;
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->func != y->func) return x->func < y->func ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* The k-th GPU span of a (comm, func, seq) is the k-th enqueue of it (a graph replays all
 * share one seq, in one order): both lists sorted by key then file order, walked together. */
static void pair_enqueues(cl_rank *r) {
  host_colls *hc = r->enq_scratch;
  if (!hc) return;
  host_coll *g = cl_xmalloc((r->colls.n + 1) * sizeof *g);
  size_t ng = 0;
  for (size_t k = 0; k < r->colls.n; k++) {
    const cl_coll *c = &r->colls.a[k];
    if (c->seq >= 0 && !c->p2p) g[ng++] = (host_coll){ c->comm, c->seq, 0, c->func, (uint32_t)k };
  }
  qsort(g, ng, sizeof *g, cmp_host_coll);
  qsort(hc->v.a, hc->v.n, sizeof *hc->v.a, cmp_host_coll);
  size_t i = 0, j = 0;
  while (i < ng && j < hc->v.n) {
    host_coll a = g[i], b = hc->v.a[j];
    a.order = b.order = 0;
    int c = cmp_host_coll(&a, &b);
    if (c < 0) i++;
    else if (c > 0) j++;
    else { r->colls.a[g[i].order].enq = hc->v.a[j].ts; r->n_enq++; i++; j++; }
  }
  free(g); free(hc->v.a); free(hc); r->enq_scratch = NULL;
}

typedef struct {
  cl_rank *r; const char *last_f; int last_fn, last_id; uint64_t last_comm; int comm_seen;
  cl_progress_batch prog;
  cl_dg_lanes lanes;                 /* digests: the tids merge's conversion gives their slices */
} scan_ctx;

static int func_of(scan_ctx *c, cl_str_t s) {
  if (!s.p) s = (cl_str_t){"", 0};   /* an event without the field: memcmp(NULL) is undefined */
  if (c->last_f && c->last_fn == s.n && !memcmp(c->last_f, s.p, (size_t)s.n) && !memchr(s.p, '\\', (size_t)s.n))
    return c->last_id;
  int id = func_id(s.p, s.n);
  /* the slice points into the reader's buffer: cache the interned copy instead */
  c->last_f = cl_func_name(id); c->last_fn = (int)strlen(c->last_f); c->last_id = id;   /* a hit: raw text equal to the clean name */
  return id;
}

/* Sums of values read from a file saturate at +-2^61: the reader bounds each value (+-2^62),
 * not a sum of many (fuzz_pftrace found two proxy-step waits of 2^62 overflowing a channel's
 * total), and the analyses may still add two sums. */
#define SUM_LIM ((int64_t)1 << 61)
static inline void add_sat(int64_t *acc, int64_t v) {
  int64_t s;
  if (__builtin_add_overflow(*acc, v, &s)) s = v > 0 ? SUM_LIM : -SUM_LIM;
  *acc = s > SUM_LIM ? SUM_LIM : s < -SUM_LIM ? -SUM_LIM : s;
}

/* The v7 fields of the collective just pushed (the last of colls); the array starts, zeroed for
 * the collectives before, at the first that has any. */
static void put_v7(cl_rank *r, cl_coll_v7 v) {
  if (r->v7_cap < r->colls.cap) {
    r->v7 = cl_xrealloc(r->v7, r->colls.cap * sizeof *r->v7);
    memset(r->v7 + r->v7_cap, 0, (r->colls.cap - r->v7_cap) * sizeof *r->v7);
    r->v7_cap = r->colls.cap;
  }
  r->v7[r->colls.n - 1] = v;
}

/* A "coll" slice the timers' sample left out (its args say "gpu_timers":"left out"). */
static int left_out(cl_str_t args) {
  static const char k[] = "\"gpu_timers\":\"left out\"";
  return args.p && args.n >= (int)sizeof k - 1 && memmem(args.p, (size_t)args.n, k, sizeof k - 1) != NULL;
}

static void on_event(const cl_ev *ev, void *arg) {
  scan_ctx *c = arg; cl_rank *r = c->r;
  cl_progress_count(&c->prog, ev->end - ev->beg);
  if (ev->ph == 'M') {
    if (!r->pname && cl_str_eq(ev->name, "process_name") && ev->arg_name.n) {
      r->pname = clean_name(ev->arg_name, 1);
    }
    return;
  }
  if (!ev->has_ts) return;
  int64_t end = ev->ts_ns + (ev->has_dur ? ev->dur_ns : 0);
  if (ev->ts_ns < r->t_min) r->t_min = ev->ts_ns;
  if (end > r->t_max) r->t_max = end;
  /* a slice: complete (X), or the "b" of an async one, which carries its dur (chrome_trace.h) */
  if (ev->ph != 'X' && !(ev->ph == 'b' && ev->has_dur)) return;
  switch (ev->cat) {
  case CAT_COLL_GPU: {
    cl_coll k;
    memset(&k, 0, sizeof k);
    k.comm = ev->comm; k.seq = ev->has_seq ? ev->seq : -1; k.start = ev->ts_ns; k.end = end; k.enq = CL_NO_TIME;
    k.bytes = ev->bytes; k.nranks = ev->nranks; k.tid = (int32_t)ev->tid; k.tid_ok = (uint8_t)ev->tid_is_num;
    k.func = (uint16_t)func_of(c, ev->name); k.inst = UINT32_MAX;
    k.exposed = ev->has_exposed && ev->exposed_ns >= 0 ? ev->exposed_ns : -1;
    k.p2p = (uint8_t)(ev->has_p2p_peer || cl_str_eq(ev->name, "Send") || cl_str_eq(ev->name, "Recv"));
    k.has_tag = (uint8_t)ev->has_tag; k.has_phase = (uint8_t)ev->has_phase;
    k.has_exposed = (uint8_t)(ev->has_exposed && ev->exposed_ns >= 0);
    k.ce = (uint8_t)ev->ce;
    CL_PUSH(r->colls, k);
    if (r->v7 || k.has_tag || k.has_phase)
      put_v7(r, (cl_coll_v7){ ev->user_tag, ev->sync_wait_ns, ev->compute_ns > 0 ? ev->compute_ns : 0 });
    if (ev->has_exposed) { add_sat(&r->exposed_args, ev->exposed_ns); r->has_exposed_args = 1; }
    if (ev->has_comm && (!c->comm_seen || c->last_comm != ev->comm)) {
      c->comm_seen = 1; c->last_comm = ev->comm; note_comm(ev->comm, ev->comm_name);
    }
    break;
  }
  case CAT_COLL: {
    if (!ev->has_seq) break;
    cl_tmarks_note(&r->tmarks, ev->comm, func_of(c, ev->name), ev->seq, left_out(ev->args));
    if (!r->enq_scratch) r->enq_scratch = cl_xcalloc(1, sizeof(host_colls));
    host_colls *hc = r->enq_scratch;
    CL_PUSH(hc->v, ((host_coll){ ev->comm, ev->seq, ev->ts_ns, func_of(c, ev->name), (uint32_t)hc->v.n }));
    break;
  }
  case CAT_KERNEL_CH: {
    if (!ev->has_channel) break;
    if (ev->implausible) { r->n_kch_implausible++; break; }
    cl_chan *ch = chan_get(r, ev->comm, ev->channel);
    ch->n++; add_sat(&ch->sum_dur, ev->dur_ns);
    if (ev->dur_ns > ch->max_dur) { ch->max_dur = ev->dur_ns; ch->max_seq = ev->has_seq ? ev->seq : -1; }
    if (ev->has_seq) {
      int f = ev->func.n ? func_of(c, ev->func) : -1;
      if (!r->tail_map) r->tail_map = cl_xcalloc(1, sizeof(tail_map));
      tail_put(r->tail_map, ev->comm, f, ev->seq, end, ev->channel);
      if (r->chends.n < CL_CHEND_MAX) CL_PUSH(r->chends, ((cl_chend){ ev->comm, ev->seq, end, f, ev->channel }));
      else r->n_chend_over++;
    }
    break;
  }
  case CAT_PROXY_STEP: {
    if (!ev->has_channel) break;
    cl_chan *ch = chan_get(r, ev->comm, ev->channel);
    ch->nsteps++;
    add_sat(&ch->w_gpu, ev->w_gpu); add_sat(&ch->w_peer, ev->w_peer); add_sat(&ch->w_send, ev->w_send);
    add_sat(&ch->w_recv, ev->w_recv); add_sat(&ch->w_flush, ev->w_flush); add_sat(&ch->w_recv_gpu, ev->w_recv_gpu);
    int64_t pw = ev->w_peer;
    add_sat(&pw, ev->w_recv);
    if (pw > 0 && ev->has_peer) {
      size_t i;
      for (i = 0; i < ch->peers.n; i++) if (ch->peers.a[i].peer == ev->peer) break;
      if (i == ch->peers.n) CL_PUSH(ch->peers, ((cl_peerwait){ ev->peer, 0 }));
      add_sat(&ch->peers.a[i].wait, pw);
    }
    break;
  }
  case CAT_EXPOSED:
    add_sat(&r->exposed_evs, ev->dur_ns); r->has_exposed_evs = 1;
    break;
  case CAT_GPU_KERNEL:
    if (r->device < 0 && ev->has_device) r->device = ev->device;   /* traces before the header said it */
    break;
  case CAT_PROXY_STATE: case CAT_PROXY_OP: case CAT_PROXY_CTRL: case CAT_NET:
    break;
  default: {
    long s = cl_step_number(ev->name);
    if (s >= 0) CL_PUSH(r->steps, ((cl_step){ s, ev->ts_ns, end }));
  }
  }
}

/* ---- digests (read/digest_read.h): the same model from compact rows ---- */
static int digest_func(scan_ctx *c, const char *name) {
  if (c->last_f && !strcmp(c->last_f, name)) return c->last_id;
  char *dup = strdup(name);
  if (!dup) return 1023;
  int kept = 0, id = intern(dup, &kept);
  c->last_f = cl_func_name(id); c->last_id = id;
  return id;
}
static void span(cl_rank *r, int64_t s, int64_t e) {
  if (s < r->t_min) r->t_min = s;
  if (e > r->t_max) r->t_max = e;
}
static void on_dg_coll(const cl_dg_row *d, void *arg) {
  scan_ctx *c = arg; cl_rank *r = c->r;
  cl_progress_count(&c->prog, 24);
  span(r, d->enq_start, d->enq_end);
  int lane, fresh;
  cl_dg_lane(&c->lanes, d->comm, 0, d->enq_start, d->enq_end, &lane, &fresh);   /* as merge draws it */
  if (!d->p2p) cl_tmarks_note(&r->tmarks, d->comm, digest_func(c, d->func), d->seq, d->untimed);
  if (!d->src) return;              /* not GPU-timed: the trace draws no span for it either */
  span(r, d->gpu_start, d->gpu_end);
  cl_coll k;
  memset(&k, 0, sizeof k);
  k.comm = d->comm; k.seq = d->p2p ? -1 : d->seq; k.start = d->gpu_start; k.end = d->gpu_end;
  k.enq = d->p2p ? CL_NO_TIME : d->enq_start;
  k.bytes = d->bytes; k.nranks = d->nranks; k.func = (uint16_t)digest_func(c, d->func); k.inst = UINT32_MAX;
  k.p2p = (uint8_t)d->p2p;
  k.exposed = d->exposed_ns;
  k.has_exposed = d->exposed_ns >= 0;
  k.tid = (int32_t)cl_dg_lane(&c->lanes, d->comm, 1, d->gpu_start, d->gpu_end, &lane, &fresh); k.tid_ok = 1;
  CL_PUSH(r->colls, k);
  if (!d->p2p) r->n_enq++;
  if (d->exposed_ns >= 0) { add_sat(&r->exposed_args, d->exposed_ns); r->has_exposed_args = 1; }
  if (d->tail_ch >= 0 && !d->p2p) chan_get(r, d->comm, d->tail_ch)->tail++;   /* as the trace: collectives only */
  if (!c->comm_seen || c->last_comm != d->comm) {
    c->comm_seen = 1; c->last_comm = d->comm;
    char *name = strdup(d->comm_name);
    if (name) note_comm_clean(d->comm, name);
  }
}
static void on_dg_chan(const cl_dg_chan *d, void *arg) {
  scan_ctx *c = arg;
  cl_chan *ch = chan_get(c->r, d->comm, d->channel);
  add_sat(&ch->n, d->n); add_sat(&ch->sum_dur, d->sum_dur);
  if (d->n && d->max_dur > ch->max_dur) { ch->max_dur = d->max_dur; ch->max_seq = d->max_seq; }
  add_sat(&ch->nsteps, d->nsteps);
  add_sat(&ch->w_gpu, d->w[0]); add_sat(&ch->w_peer, d->w[1]); add_sat(&ch->w_send, d->w[2]);
  add_sat(&ch->w_recv, d->w[3]); add_sat(&ch->w_flush, d->w[4]); add_sat(&ch->w_recv_gpu, d->w[5]);
  int64_t pw = d->w[1];
  add_sat(&pw, d->w[3]);
  if (pw > 0 && d->peer >= 0) {   /* as the trace's steps: peer and recv waits per peer */
    size_t i;
    for (i = 0; i < ch->peers.n; i++) if (ch->peers.a[i].peer == d->peer) break;
    if (i == ch->peers.n) CL_PUSH(ch->peers, ((cl_peerwait){ d->peer, 0 }));
    add_sat(&ch->peers.a[i].wait, pw);
  }
}
static void on_dg_step(int64_t id, int64_t start, int64_t end, void *arg) {
  scan_ctx *c = arg;
  int lane, fresh;
  cl_dg_lane(&c->lanes, 0, 2, start, end, &lane, &fresh);
  span(c->r, start, end);
  CL_PUSH(c->r->steps, ((cl_step){ (long)id, start, end }));
}
static const cl_dg_sink g_dg_sink = { .coll = on_dg_coll, .chan = on_dg_chan, .step = on_dg_step };

/* A digest or a trace, by the file's first bytes (or its name, for a file that is neither). */
static int is_digest_name(const char *n);
static int any_scan(cl_rank *r, scan_ctx *c, int header_only) {
  if (cl_digest_is(r->path) || is_digest_name(r->path)) return cl_digest_scan(r->path, c ? &g_dg_sink : NULL, c, &r->info, header_only);
  return cl_trace_scan(r->path, c ? on_event : NULL, c, &r->info, header_only);
}

static void rank_scan(cl_rank *r) {
  scan_ctx c = { .r = r };
  cl_info_free(&r->info);
  r->t_min = INT64_MAX; r->t_max = INT64_MIN;
  r->refused = any_scan(r, &c, 0) != 0;
  cl_dg_lanes_free(&c.lanes);
  cl_progress_flush(&c.prog);
  cl_progress_file_done();
  if (r->tail_map) {
    tail_map *m = r->tail_map;
    for (size_t i = 0; i < m->cap; i++)
      if (m->t[i].used) chan_get(r, m->t[i].comm, m->t[i].ch)->tail++;
    free(m->t); free(m); r->tail_map = NULL;
  }
  free(r->chan_idx); r->chan_idx = NULL; r->chan_cap = 0;
  pair_enqueues(r);
  if (r->t_min == INT64_MAX) r->t_min = r->t_max = 0;
  /* kept for the whole report: no room past what the rank has (doubling left up to half spare) */
  if (r->colls.n) { r->colls.a = cl_xrealloc(r->colls.a, r->colls.n * sizeof *r->colls.a); r->colls.cap = r->colls.n; }
  if (r->v7) { r->v7 = cl_xrealloc(r->v7, (r->colls.n + 1) * sizeof *r->v7); r->v7_cap = r->colls.n + 1; }
  if (r->chans.n) { r->chans.a = cl_xrealloc(r->chans.a, r->chans.n * sizeof *r->chans.a); r->chans.cap = r->chans.n; }
}

typedef struct { cl_rank **r; int n; int next; pthread_mutex_t mu; } work_q;
static void *scan_worker(void *arg) {
  work_q *q = arg;
  for (;;) {
    pthread_mutex_lock(&q->mu);
    int i = q->next++;
    pthread_mutex_unlock(&q->mu);
    if (i >= q->n) return NULL;
    rank_scan(q->r[i]);
  }
}

static int is_trace_name(const char *n) {
  return strstr(n, ".trace.json") != NULL;
}
static int is_digest_name(const char *n) {
  size_t l = strlen(n);
  return l > 7 && !strcmp(n + l - 7, ".digest");
}

/* Remembers a file found among the inputs (a copy of its path). */
static void note_found(cl_job *job, const char *path) {
  struct stat st;
  if (stat(path, &st) == 0) CL_PUSH(job->found, ((cl_found){ (uint64_t)st.st_dev, (uint64_t)st.st_ino, strdup(path) }));
}
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
/* A flight-recorder dump's place among one rank's files, from its name (plugin/pipeline/
 * flight_dump.c names it <base>.<trigger>-<number>.trace.json[.gz]): the kind first (a hang
 * dump, then one the job asked for by signal, then any other), then the newest (the highest
 * number). 0 when the name is no dump's; the name only orders, nothing else trusts it. */
static int dump_order(const char *path, long *number) {
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  const char *end = strstr(b, ".trace.json");
  if (!end) return 0;
  const char *dash = end;
  while (dash > b && isdigit((unsigned char)dash[-1])) dash--;
  if (dash == end || dash <= b || dash[-1] != '-') return 0;
  const char *kind = dash - 1;
  while (kind > b && kind[-1] != '.') kind--;
  if (kind == b) return 0;
  size_t kl = (size_t)(dash - 1 - kind);
  *number = strtol(dash, NULL, 10);
  if (kl == 4 && !strncmp(kind, "hang", 4)) return 1;
  if (kl == 6 && !strncmp(kind, "signal", 6)) return 2;
  return 3;
}
static void rank_free(cl_rank *r);
/* A rank's files in the order they are chosen: its trace or digest before its flight dumps (a
 * file whose commlensFlight was read), dumps by kind then newest (dump_order). */
static int cmp_rank(const void *a, const void *b) {
  const cl_rank *x = *(cl_rank *const *)a, *y = *(cl_rank *const *)b;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  int fx = x->info.flight != NULL, fy = y->info.flight != NULL;
  if (fx != fy) return fx - fy;
  long nx = 0, ny = 0;
  int ox = dump_order(x->path, &nx), oy = dump_order(y->path, &ny);
  if (ox && oy && ox != oy) return ox < oy ? -1 : 1;
  if (ox && oy && nx != ny) return nx > ny ? -1 : 1;
  return strcmp(x->path, y->path);
}

typedef CL_VEC(char *) path_vec;
typedef CL_VEC(cl_rank *) rank_vec;

/* The trace (or digest) files under the given paths, sorted, into *files (owned). */
static void find_files(cl_job *job, char **paths, int npaths, path_vec *files) {
  for (int i = 0; i < npaths; i++) {
    struct stat st;
    if (stat(paths[i], &st) != 0) { fprintf(stderr, "commlens: %s: no such file or directory\n", cl_show(paths[i])); continue; }
    if (!S_ISDIR(st.st_mode)) { CL_PUSH(*files, strdup(paths[i])); continue; }
    DIR *d = opendir(paths[i]);
    if (!d) { fprintf(stderr, "commlens: %s: cannot read directory\n", cl_show(paths[i])); continue; }
    /* traces when the directory holds any (COMMLENS_OUTPUT=both writes both for each rank:
     * the trace is the richer), else digests */
    struct dirent *de; size_t before = files->n; int others = 0;
    path_vec digests = {0};
    while ((de = readdir(d))) {
      if (de->d_name[0] == '.') continue;
      int dg = is_digest_name(de->d_name);
      if (!dg && !is_trace_name(de->d_name)) { others++; continue; }
      char *p = cl_xmalloc(strlen(paths[i]) + strlen(de->d_name) + 2);
      sprintf(p, "%s/%s", paths[i], de->d_name);
      if (dg) CL_PUSH(digests, p); else CL_PUSH(*files, p);
    }
    closedir(d);
    if (files->n == before) for (size_t k = 0; k < digests.n; k++) CL_PUSH(*files, digests.a[k]);
    else {
      if (digests.n)
        fprintf(stderr, "commlens: %s: reading the traces; its %zu digest(s) (*.digest) are left out (name them to read them)\n",
                cl_show(paths[i]), digests.n);
      for (size_t k = 0; k < digests.n; k++) { note_found(job, digests.a[k]); free(digests.a[k]); }
    }
    free(digests.a);
    if (files->n == before)
      fprintf(stderr, "commlens: %s: no commlens traces (*.trace.json[.gz]) or digests (*.digest) in this directory%s\n",
              cl_show(paths[i]), others ? " (other files ignored)" : "");
  }
  if (files->n) qsort(files->a, files->n, sizeof(char *), cmp_str);   /* qsort(NULL, 0) is undefined */
}

/* The header of the file at path (owned: kept or freed), read to decide which files belong
 * together before the expensive pass; a file named like a flight dump is read whole (its
 * commlensFlight says when it was written and what it saw; dumps are small). NULL, said and
 * counted, when the file is not usable. */
static cl_rank *read_header(cl_job *job, char *path) {
  cl_rank *r = cl_xcalloc(1, sizeof *r);
  r->path = path; r->device = -1;
  long n;
  const char *why = NULL;
  if (any_scan(r, NULL, dump_order(path, &n) == 0) != 0) why = r->info.msg;
  else if (r->info.format != 1)
    fprintf(stderr, "commlens: %s: trace format %d is not supported (this commlens reads format 1); skipped\n",
            cl_show(r->path), r->info.format);
  else if (r->info.rank < 0 && r->info.rank_bad)
    fprintf(stderr, "commlens: %s: header rank %s is not an integer in 0..%d; skipped\n", cl_show(r->path),
            r->info.rank_text, CL_RANK_MAX);
  else if (r->info.rank < 0) why = "header has no rank";
  else {
    r->rank = r->info.rank;
    r->device = r->info.cuda_dev;        /* the participant's GPU (-1: not said) */
    return r;
  }
  if (why) fprintf(stderr, "commlens: %s: %s; skipped\n", cl_show(r->path), why);
  rank_free(r);
  job->n_files_skipped++;
  return NULL;
}

/* The job most files belong to wins (ties: the job of the lowest rank, then the one met first);
 * the others' files are said, freed and taken out of cand. Grouped by a sort of the files by
 * job (a count per file over every file was quadratic in ranks). */
static const char *job_of(const cl_rank *r) { return r->info.job ? r->info.job : ""; }
typedef struct { const cl_rank *r; size_t i; } cand_at;
static int cmp_by_job(const void *a, const void *b) {
  const cand_at *x = a, *y = b;
  int c = strcmp(job_of(x->r), job_of(y->r));
  return c ? c : (x->i > y->i) - (x->i < y->i);
}
static void choose_job(cl_job *job, rank_vec *cand) {
  const char *best = NULL; int bestn = 0, bestrank = 0; size_t bestfirst = 0;
  cand_at *by = cl_xmalloc((cand->n + 1) * sizeof *by);
  for (size_t i = 0; i < cand->n; i++) by[i] = (cand_at){ cand->a[i], i };
  if (cand->n) qsort(by, cand->n, sizeof *by, cmp_by_job);
  for (size_t s = 0, e; s < cand->n; s = e) {   /* by[s].i: where the job's first file is in cand */
    int lo = by[s].r->rank;
    for (e = s; e < cand->n && !strcmp(job_of(by[e].r), job_of(by[s].r)); e++) if (by[e].r->rank < lo) lo = by[e].r->rank;
    int n = (int)(e - s);
    if (!best || n > bestn || (n == bestn && (lo < bestrank || (lo == bestrank && by[s].i < bestfirst)))) {
      best = job_of(by[s].r); bestn = n; bestrank = lo; bestfirst = by[s].i;
    }
  }
  free(by);
  job->job = strdup(best ? best : "");
  size_t kept = 0;
  for (size_t i = 0; i < cand->n; i++) {
    cl_rank *r = cand->a[i];
    const char *j = r->info.job ? r->info.job : "";
    if (!strcmp(j, job->job)) { cand->a[kept++] = r; continue; }
    fprintf(stderr, "commlens: %s: belongs to job \"%s\", not \"%s\" like the other %d trace(s); skipped\n",
            cl_show(r->path), cl_show(j), cl_show(job->job), bestn);
    rank_free(r);
    job->n_files_skipped++;
  }
  cand->n = kept;
}

/* The attempts of the job (model/attempts.h): the newest attempt's files stay in cand; each
 * earlier attempt is said once, noted in job->earlier, and its files freed. */
static void keep_newest_attempt(cl_job *job, rank_vec *cand) {
  const cl_info **info = cl_xmalloc((cand->n + 1) * sizeof *info);
  int *rank = cl_xmalloc((cand->n + 1) * sizeof *rank), *of = cl_xmalloc((cand->n + 1) * sizeof *of);
  for (size_t i = 0; i < cand->n; i++) { info[i] = &cand->a[i]->info; rank[i] = cand->a[i]->rank; }
  cl_attempt *at;
  int na = cl_attempts_of(info, rank, cand->n, of, &at);
  job->attempt_start_ns = na ? at[na - 1].start_ns : -1;
  char newest[40], t[40];
  cl_fmt_utc(newest, sizeof newest, job->attempt_start_ns);
  for (int a = 0; a + 1 < na; a++) {
    const char *first = "?";
    for (size_t i = 0; i < cand->n; i++) if (of[i] == a) { first = cand->a[i]->path; break; }
    fprintf(stderr, "commlens: %d file(s) of an earlier attempt of job \"%s\" left out (%d process(es) from %s; the job "
            "restarted: the report is on its newest attempt, from %s), e.g. %s\n", at[a].nfiles, cl_show(job->job),
            at[a].nproc, cl_fmt_utc(t, sizeof t, at[a].start_ns), newest, cl_show(first));
    CL_PUSH(job->earlier, at[a]);
    job->n_files_skipped += at[a].nfiles;
  }
  size_t kept = 0;
  for (size_t i = 0; i < cand->n; i++) {
    if (of[i] >= 0 && of[i] < na - 1) rank_free(cand->a[i]);
    else cand->a[kept++] = cand->a[i];
  }
  cand->n = kept;
  free(info); free(rank); free(of); free(at);
}

static void keep_dump(cl_job *job, const cl_rank *r) {
  CL_PUSH(job->dumps, ((cl_dump){ strdup(r->path), strdup(r->info.flight), r->rank }));
}
/* One file per rank into *use (cmp_rank's first); a rank's further flight dumps go to
 * job->dumps (the hang analysis reads them all), other further files are skipped. */
static void pick_rank_files(cl_job *job, rank_vec *cand, rank_vec *use) {
  if (cand->n) qsort(cand->a, cand->n, sizeof(cl_rank *), cmp_rank);
  const char *ver = NULL;
  for (size_t i = 0; i < cand->n; i++) {
    cl_rank *r = cand->a[i];
    cl_rank *prev = use->n && use->a[use->n - 1]->rank == r->rank ? use->a[use->n - 1] : NULL;
    if (!prev) {
      if (r->info.version && ver && strcmp(ver, r->info.version))
        fprintf(stderr, "commlens: %s: plugin version %s differs from %s (same format; used)\n", cl_show(r->path),
                cl_show(r->info.version), cl_show(ver));
      if (!ver) ver = r->info.version;
      if (r->info.flight) keep_dump(job, r);
      CL_PUSH(*use, r);
      continue;
    }
    if (r->info.flight) {
      keep_dump(job, r);
      fprintf(stderr, "commlens: %s: a flight dump of rank %d: read for the hang analysis (the rank's events from %s)\n",
              cl_show(r->path), r->rank, cl_show(prev->path));
    } else {
      fprintf(stderr, "commlens: %s: rank %d already read from %s; skipped\n", cl_show(r->path), r->rank,
              cl_show(prev->path));
      job->n_files_skipped++;
    }
    rank_free(r);
  }
}

/* The expensive pass: every chosen file read into its rank's model (`threads` at once); a
 * file the full read refuses (a digest block claiming more rows than its bytes) is dropped
 * whole, with what it had delivered. The ranks become job->r. */
static void scan_ranks(cl_job *job, rank_vec *use, int threads) {
  double total = 0;
  for (size_t i = 0; i < use->n; i++) total += cl_progress_estimate(use->a[i]->path);
  cl_progress_begin("reading", (int)use->n, total);
  work_q q = { use->a, (int)use->n, 0, PTHREAD_MUTEX_INITIALIZER };
  if (threads < 1) threads = 1;
  if (threads > (int)use->n) threads = (int)use->n;
  pthread_t th[16];
  for (int t = 1; t < threads && t < 16; t++) pthread_create(&th[t], NULL, scan_worker, &q);
  scan_worker(&q);
  for (int t = 1; t < threads && t < 16; t++) pthread_join(th[t], NULL);
  cl_progress_end();
  size_t kept = 0;
  for (size_t i = 0; i < use->n; i++) {
    cl_rank *r = use->a[i];
    if (!r->refused) { use->a[kept++] = r; continue; }
    fprintf(stderr, "commlens: %s: %s; skipped\n", cl_show(r->path), r->info.msg);
    job->n_files_skipped++;
    rank_free(r);
  }
  job->r = use->a; job->n = (int)kept;
}

int cl_job_load(cl_job *job, char **paths, int npaths, int threads) {
  memset(job, 0, sizeof *job);
  job->attempt_start_ns = -1;
  job->threads = threads < 1 ? 1 : threads;
  path_vec files = {0};
  find_files(job, paths, npaths, &files);
  job->n_files_seen = (int)files.n;
  for (size_t i = 0; i < files.n; i++) note_found(job, files.a[i]);
  rank_vec cand = {0}, use = {0};
  for (size_t i = 0; i < files.n; i++) {
    cl_rank *r = read_header(job, files.a[i]);
    if (r) CL_PUSH(cand, r);
  }
  free(files.a);
  choose_job(job, &cand);
  keep_newest_attempt(job, &cand);
  pick_rank_files(job, &cand, &use);
  free(cand.a);
  scan_ranks(job, &use, threads);
  job->n_utf8 = atomic_exchange(&g_utf8, 0);
  for (int i = 0; i < job->n; i++) job->n_utf8 += job->r[i]->info.n_utf8;
  for (int i = 0; i < job->n; i++) {
    cl_rank *r = job->r[i];
    if (r->info.bad)
      fprintf(stderr, "commlens: %s: %s; kept the %lld complete events around it (%lld damaged stretch(es) skipped)\n",
              cl_show(r->path), r->info.msg, (long long)r->info.n_events, (long long)(r->info.n_gz_damage + r->info.n_skipped));
    else if (r->info.truncated)
      fprintf(stderr, "commlens: %s: file ends mid-trace%s%s (rank killed?); using the %lld complete events\n", cl_show(r->path),
              r->info.msg[0] ? ": " : "", r->info.msg, (long long)r->info.n_events);
    if (r->info.n_events == 0) fprintf(stderr, "commlens: %s: no events\n", cl_show(r->path));
  }
  return job->n;
}

int cl_job_refuse_output(const cl_job *job, const char *path, const char *what) {
  struct stat st;
  if (stat(path, &st) != 0) return 0;   /* follows links: what a write to path would reach */
  for (int i = 0; i < job->n; i++)
    if (job->r[i]->info.dev == (uint64_t)st.st_dev && job->r[i]->info.ino == (uint64_t)st.st_ino) {
      fprintf(stderr, "commlens: %s: %s is one of the inputs (the file of rank %d, %s); not overwritten\n", what, cl_show(path),
              job->r[i]->rank, cl_show(job->r[i]->path));
      return -1;
    }
  for (size_t i = 0; i < job->found.n; i++)
    if (job->found.a[i].dev == (uint64_t)st.st_dev && job->found.a[i].ino == (uint64_t)st.st_ino) {
      fprintf(stderr, "commlens: %s: %s is among the inputs (%s, found and not read); not overwritten\n", what, cl_show(path),
              cl_show(job->found.a[i].path));
      return -1;
    }
  return 0;
}


static void rank_free(cl_rank *r) {
  for (size_t k = 0; k < r->chans.n; k++) free(r->chans.a[k].peers.a);
  cl_tmarks_free(&r->tmarks);
  free(r->chans.a); free(r->colls.a); free(r->v7); free(r->steps.a); free(r->chends.a); free(r->pname);
  cl_info_free(&r->info); free(r->path); free(r);
}

void cl_job_free(cl_job *job) {
  for (int i = 0; i < job->n; i++) rank_free(job->r[i]);
  for (size_t i = 0; i < job->found.n; i++) free(job->found.a[i].path);
  for (size_t i = 0; i < job->dumps.n; i++) { free(job->dumps.a[i].path); free(job->dumps.a[i].flight); }
  free(job->r); free(job->inst.a); free(job->mem.a); free(job->job); free(job->found.a); free(job->dumps.a);
  free(job->earlier.a);
  memset(job, 0, sizeof *job);
}
