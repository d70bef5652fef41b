/* ring.c: the ring pool: claiming a ring for a new thread, releasing it when the thread
 * exits (pthread key destructor), and the consumer side used by the writer thread. Rings are
 * never freed while the process lives, so a late record from a dying thread is always safe. */
#include "plugin/capture/ring.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/log.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

_Thread_local cl_ring *cl_t_ring;
cl_ring cl_rings[CL_MAX_RINGS];
_Atomic uint64_t cl_rings_unclaimed_drops;

static pthread_mutex_t g_ring_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_ring_key;
static _Atomic int g_nrings;              /* entries ever used */
static uint64_t g_bytes;                  /* ring memory allocated */
static uint32_t g_next_serial = 1;

static void ring_thread_exit(void *p) {
  cl_ring *r = p;
  if (!r) return;
  if (r->kch)                            /* KernelCh whose stop never came: their starts */
    for (int i = 0; i < CL_KCH_OPEN; i++)
      if (r->kch[i].id && r->kch[i].id != r->kst_id) cl_ring_kch_out(r, &r->kch[i], NULL, 0);
  if (r->kst_id) cl_ring_kst_flush(r);   /* a KernelChStop state whose stop never came on this thread */
  atomic_store_explicit(&r->state, CL_RING_DEAD, memory_order_release);
}
static void make_key(void) { pthread_key_create(&g_ring_key, ring_thread_exit); }

/* Slots of a new thread's ring: COMMLENS_RING_KB rounded down to a power of two. */
static uint64_t default_cap(void) {
  uint64_t want = cl_cfg.ring_bytes ? cl_cfg.ring_bytes : (2u << 20);
  uint64_t cap = 1;
  while (cap * 2 * CL_SLOT_BYTES <= want) cap *= 2;
  return cap < 64 ? 64 : cap;
}
static uint64_t rings_budget(void) { return cl_cfg.rings_bytes; }

/* A pooled ring of `cap` slots among the first n, or NULL (caller holds g_ring_mu). */
static cl_ring *free_ring(int n, uint64_t cap) {
  for (int i = 0; i < n; i++)
    if (atomic_load(&cl_rings[i].state) == CL_RING_FREE && cl_rings[i].cap == cap) return &cl_rings[i];
  return NULL;
}

/* A ring's table of held-back KernelCh and of collectives timed lately, empty (allocated at its
 * first claim, 4 KiB, inside the budget; without room or memory none is held back). The caller
 * owns the ring's producer side and holds g_ring_mu. */
static void kch_table(cl_ring *r) {
  size_t bytes = CL_KCH_OPEN * sizeof *r->kch + CL_KCH_TIMED * sizeof(cl_kch_timed);   /* cl_ring_kch_timed */
  if (r->kch) { memset(r->kch, 0, bytes); return; }
  if (g_bytes + bytes > rings_budget()) return;
  if ((r->kch = calloc(1, bytes))) g_bytes += bytes;
}

cl_ring *cl_ring_claim(void) {
  pthread_once(&g_key_once, make_key);
  pthread_mutex_lock(&g_ring_mu);
  int n = atomic_load(&g_nrings);
  uint64_t cap = default_cap();
  cl_ring *r = free_ring(n, cap);        /* reuse a recycled ring of the right size */
  if (g_next_serial >= CL_SERIAL_LIMIT) { pthread_mutex_unlock(&g_ring_mu); return NULL; }  /* ids are spent */
  /* A budget too full for another default ring gives a smaller one (said once): a thread that
   * records some is better than one that records nothing. */
  uint64_t left = rings_budget() > g_bytes ? rings_budget() - g_bytes : 0;
  int smaller = 0;
  while (!r && cap > CL_RING_MIN_SLOTS && cap * CL_SLOT_BYTES > left) { cap /= 2; smaller = 1; }
  if (!r && smaller) r = free_ring(n, cap);
  if (!r && n < CL_MAX_RINGS && g_bytes + cap * CL_SLOT_BYTES <= rings_budget()) {
    cl_rec *mem = aligned_alloc(64, cap * CL_SLOT_BYTES);
    if (mem) {
      memset(mem, 0, cap * CL_SLOT_BYTES);   /* touch the pages now, not on the hot path */
      r = &cl_rings[n];
      r->slots = mem;
      r->cap = cap;
      g_bytes += cap * CL_SLOT_BYTES;
      atomic_store(&g_nrings, n + 1);
    }
  }
  if (r) {
    /* A reused ring changes owner: the serial is withdrawn first, the new owner's OS thread
     * id written, then the new serial published, so a reader never pairs one thread's serial
     * with another's id. */
    uint32_t serial = g_next_serial++;
    kch_table(r);
    atomic_store_explicit(&r->serial, 0, memory_order_seq_cst);
    r->id_base = (uint64_t)serial << CL_ID_SEQ_BITS;
    r->seq = 0;
    atomic_store(&r->head, 0);
    atomic_store(&r->tail, 0);
    r->tail_cache = 0;
    atomic_store(&r->next, NULL);
    atomic_store(&r->waiting, 0);
    atomic_store_explicit(&r->os_tid, (int)syscall(SYS_gettid), memory_order_seq_cst);
    atomic_store_explicit(&r->serial, serial, memory_order_seq_cst);
    atomic_store_explicit(&r->state, CL_RING_LIVE, memory_order_release);
  }
  pthread_mutex_unlock(&g_ring_mu);
  if (!r || smaller) {
    cl_log_once("ring-budget", CL_LOG_WARN,
                "event buffer budget exhausted (COMMLENS_BUFFER_MB=%llu, %d threads recording): further "
                "threads get smaller rings, then none; what does not fit is dropped and counted",
                (unsigned long long)(cl_cfg.buffer_bytes >> 20), n);
    if (!r) return NULL;
  }
  pthread_setspecific(g_ring_key, r);
  cl_t_ring = r;
  return r;
}

cl_ring *cl_ring_move(cl_ring *r) {
  cl_ring *nx = atomic_load_explicit(&r->next, memory_order_acquire);
  nx->id_base = r->id_base;
  nx->seq = r->seq;
  nx->kst_id = r->kst_id;                       /* a folded state goes on with its thread */
  nx->kst_ts = r->kst_ts;
  nx->kst_arg = r->kst_arg;
  r->kst_id = 0;
  cl_kch_open *k = nx->kch;                     /* held-back KernelCh too (nx's table is empty) */
  nx->kch = r->kch;
  r->kch = k;
  uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
  cl_rec *m = &r->slots[head & (r->cap - 1)];   /* the slot cl_ring_reserve always keeps free */
  m->kind = CL_REC_MOVED;
  m->nslots = 1;
  atomic_store_explicit(&r->head, head + 1, memory_order_release);
  pthread_setspecific(g_ring_key, nx);          /* the exit destructor marks the ring in use */
  cl_t_ring = nx;
  return nx;
}

/* Drain: prepares a successor 4x larger for a ring found a quarter full, if the budget keeps
 * CL_RING_SPARE default rings for new threads. Pages come on first use (huge pages where the
 * kernel gives them): touching megabytes here would stall the drain when it is needed most. */
static void ring_grow(cl_ring *r) {
  uint64_t cap = r->cap * 4, max = CL_RING_MAX_BYTES / CL_SLOT_BYTES;
  if (cap > max) cap = max;
  if (cap <= r->cap || atomic_load_explicit(&r->next, memory_order_relaxed)) return;
  pthread_mutex_lock(&g_ring_mu);
  int n = atomic_load(&g_nrings);
  uint64_t bytes = cap * CL_SLOT_BYTES, spare = CL_RING_SPARE * default_cap() * CL_SLOT_BYTES;
  cl_ring *nx = free_ring(n, cap);       /* a grown ring whose thread has ended */
  void *mem = NULL;
  if (!nx && n < CL_MAX_RINGS && g_bytes + bytes + spare <= rings_budget() &&
      posix_memalign(&mem, bytes >= (2u << 20) ? (2u << 20) : 64, bytes) == 0) {
    (void)madvise(mem, bytes, MADV_HUGEPAGE);   /* best effort */
    nx = &cl_rings[n];
    nx->slots = mem;
    nx->cap = cap;
    g_bytes += bytes;
    atomic_store(&g_nrings, n + 1);
  }
  if (nx) {
    kch_table(nx);
    nx->tail_cache = 0;
    atomic_store(&nx->head, 0);
    atomic_store(&nx->tail, 0);
    atomic_store(&nx->next, NULL);
    atomic_store(&nx->waiting, 1);
    atomic_store(&nx->os_tid, atomic_load(&r->os_tid));
    atomic_store(&nx->serial, atomic_load(&r->serial));
    atomic_store(&nx->state, CL_RING_LIVE);
    atomic_store_explicit(&r->next, nx, memory_order_release);
  }
  pthread_mutex_unlock(&g_ring_mu);
}

/* Drain: the producer left `r` for r->next (MOVED read, everything before it drained). */
static void ring_retire(cl_ring *r) {
  cl_ring *nx = atomic_load_explicit(&r->next, memory_order_acquire);
  pthread_mutex_lock(&g_ring_mu);
  atomic_store(&r->serial, 0);
  atomic_store(&r->next, NULL);
  atomic_store(&r->state, CL_RING_FREE);
  pthread_mutex_unlock(&g_ring_mu);
  if (nx) atomic_store_explicit(&nx->waiting, 0, memory_order_release);
}

uint64_t cl_ring_now(void) { return cl_now(); }

int cl_rings_count(void) { return atomic_load_explicit(&g_nrings, memory_order_acquire); }

/* A contiguous run of committed slots [*out, *out + n) not yet consumed. */
static size_t ring_peek(cl_ring *r, const cl_rec **out) {
  uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
  uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
  if (head == tail) return 0;
  uint64_t idx = tail & (r->cap - 1);
  const cl_rec *rec = &r->slots[idx];
  if (rec->kind == CL_REC_PAD && rec->nslots == 0) {   /* skip to the start */
    tail += r->cap - idx;
    atomic_store_explicit(&r->tail, tail, memory_order_release);
    if (head == tail) return 0;
    idx = 0;
  }
  uint64_t run = head - tail;
  if (idx + run > r->cap) run = r->cap - idx;
  *out = &r->slots[idx];
  return (size_t)run;
}

static void ring_consume(cl_ring *r, size_t nslots) {
  atomic_store_explicit(&r->tail, atomic_load_explicit(&r->tail, memory_order_relaxed) + nslots,
                        memory_order_release);
}

/* A DEAD ring that is empty goes back to the pool (its memory is kept), and with it a successor
 * its thread never moved to (it ended first). */
static void ring_recycle_if_done(cl_ring *r) {
  if (atomic_load_explicit(&r->state, memory_order_acquire) != CL_RING_DEAD) return;
  if (atomic_load(&r->head) != atomic_load(&r->tail)) return;
  pthread_mutex_lock(&g_ring_mu);
  cl_ring *nx = atomic_load(&r->next);
  if (nx) {
    atomic_store(&nx->serial, 0);
    atomic_store(&nx->waiting, 0);
    atomic_store(&nx->state, CL_RING_FREE);
    atomic_store(&r->next, NULL);
  }
  atomic_store(&r->state, CL_RING_FREE);
  pthread_mutex_unlock(&g_ring_mu);
}

/* The rings are read a window of PREFETCH_SLOTS ahead: every cache line of it asked for at
 * once. The producer wrote them on its own core; read one record after another, each line's
 * transfer waited for the one before (a record's place is known from the record before it).
 * The window (8 KiB) stays in the core's first cache; a copy to staging can read megabytes in
 * one pass. What it saved on a GPU host's CPU: docs/decisions/0017-ring-read-ahead-no-pinning.md. */
#define PREFETCH_SLOTS 256
static void prefetch_slots(const cl_rec *recs, size_t from, size_t to) {
  if (to > from + PREFETCH_SLOTS) to = from + PREFETCH_SLOTS;
  const char *p = (const char *)(recs + from), *e = (const char *)(recs + to);
  for (; p < e; p += 64) __builtin_prefetch(p);
  if (to > from) __builtin_prefetch(e - 1);
}

/* Hands `r`'s records to `fn` while they fit in *budget slots (taken off it). */
static uint64_t ring_drain(cl_ring *r, cl_ring_sink fn, void *arg, uint64_t *budget) {
  uint64_t total = 0;
  uint64_t used = atomic_load_explicit(&r->head, memory_order_acquire) - atomic_load_explicit(&r->tail, memory_order_relaxed);
  if (used > r->cap / 4) ring_grow(r);
  while (*budget) {
    const cl_rec *recs;
    size_t run = ring_peek(r, &recs), k = 0;
    if (!run) break;
    size_t fit = run < *budget ? run : (size_t)*budget, ahead = 0;
    while (k < fit) {   /* whole records, up to padding, a move or the budget */
      if (k >= ahead) { prefetch_slots(recs, k, fit); ahead = k + PREFETCH_SLOTS; }
      const cl_rec *h = &recs[k];
      if (h->kind == CL_REC_PAD || h->kind == CL_REC_MOVED || !h->nslots || k + h->nslots > fit) break;
      k += h->nslots;
      total++;
    }
    if (k) fn(arg, recs, k);
    *budget -= k;
    if (k < run && recs[k].kind == CL_REC_MOVED) {   /* the thread went on in r->next */
      ring_consume(r, k + 1);
      ring_retire(r);
      return total;
    }
    if (k < fit || fit == run) {
      ring_consume(r, k < run && (recs[k].kind == CL_REC_PAD || !recs[k].nslots) ? run : k);
      if (k == 0 && run) break;
    } else {
      ring_consume(r, k);   /* the budget ends inside the run: the rest waits */
      return total;
    }
  }
  ring_recycle_if_done(r);
  return total;
}

uint64_t cl_rings_drain_max(cl_ring_sink fn, void *arg, uint64_t max_slots) {
  uint64_t total = 0, budget = max_slots;
  int n = cl_rings_count();
  for (int i = 0; i < n && budget; i++) {
    cl_ring *r = &cl_rings[i];
    if (atomic_load_explicit(&r->state, memory_order_acquire) == CL_RING_FREE) continue;
    if (atomic_load_explicit(&r->waiting, memory_order_acquire)) continue;   /* its predecessor first */
    total += ring_drain(r, fn, arg, &budget);
  }
  return total;
}

uint64_t cl_rings_drain(cl_ring_sink fn, void *arg) { return cl_rings_drain_max(fn, arg, UINT64_MAX); }

int cl_rings_idle(void) {
  int n = cl_rings_count();
  for (int i = 0; i < n; i++) {
    cl_ring *r = &cl_rings[i];
    if (atomic_load_explicit(&r->state, memory_order_acquire) == CL_RING_FREE) continue;
    if (atomic_load_explicit(&r->head, memory_order_acquire) != atomic_load_explicit(&r->tail, memory_order_acquire)) return 0;
  }
  return 1;
}

int cl_rings_filling(unsigned shift) {
  int n = cl_rings_count();
  for (int i = 0; i < n; i++) {
    cl_ring *r = &cl_rings[i];
    if (atomic_load_explicit(&r->state, memory_order_acquire) == CL_RING_FREE) continue;
    uint64_t used = atomic_load_explicit(&r->head, memory_order_acquire) - atomic_load_explicit(&r->tail, memory_order_acquire);
    if (used > (r->cap >> shift)) return 1;
  }
  return 0;
}

void cl_rings_mark_now(cl_rings_mark *m) {
  m->n = cl_rings_count();
  for (int i = 0; i < m->n; i++) {
    cl_ring *r = &cl_rings[i];
    /* serial before head: a ring changing hands shows serial 0 first (cl_ring_claim) */
    uint32_t s = atomic_load(&r->serial);
    int live = atomic_load_explicit(&r->state, memory_order_acquire) != CL_RING_FREE;
    m->serial[i] = live ? s : 0;
    m->head[i] = live && s ? atomic_load_explicit(&r->head, memory_order_acquire) : 0;
  }
}

uint64_t cl_rings_behind(const cl_rings_mark *m) {
  uint64_t behind = 0;
  for (int i = 0; i < m->n; i++) {
    cl_ring *r = &cl_rings[i];
    if (!m->serial[i] || atomic_load(&r->serial) != m->serial[i]) continue;   /* read empty, then reused */
    if (atomic_load_explicit(&r->state, memory_order_acquire) == CL_RING_FREE) continue;
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (atomic_load(&r->serial) != m->serial[i]) continue;   /* changed hands while looked at */
    if (tail < m->head[i]) behind += m->head[i] - tail;
  }
  return behind;
}

void cl_rings_totals(cl_ring_totals *t) {
  memset(t, 0, sizeof *t);
  int n = cl_rings_count();
  for (int i = 0; i < n; i++) {
    t->dropped += atomic_load_explicit(&cl_rings[i].dropped, memory_order_relaxed);
    t->dropped_children += atomic_load_explicit(&cl_rings[i].dropped_children, memory_order_relaxed);
    t->calls += atomic_load_explicit(&cl_rings[i].calls, memory_order_relaxed);
    t->skipped += atomic_load_explicit(&cl_rings[i].skipped, memory_order_relaxed);
    t->kch_untimed += atomic_load_explicit(&cl_rings[i].kch_untimed, memory_order_relaxed);
    t->sampled_ns += atomic_load_explicit(&cl_rings[i].sampled_ns, memory_order_relaxed);
    t->nsampled += atomic_load_explicit(&cl_rings[i].nsampled, memory_order_relaxed);
    for (int b = 0; b < CL_SAMPLE_BUCKETS; b++)
      t->hist[b] += atomic_load_explicit(&cl_rings[i].sample_hist[b], memory_order_relaxed);
  }
  t->unclaimed = atomic_load_explicit(&cl_rings_unclaimed_drops, memory_order_relaxed);
}

uint64_t cl_rings_median_ns(const cl_ring_totals *t) {
  uint64_t n = 0, seen = 0;
  for (int b = 0; b < CL_SAMPLE_BUCKETS; b++) n += t->hist[b];
  for (int b = 0; b < CL_SAMPLE_BUCKETS && n; b++) {
    seen += t->hist[b];
    if (2 * seen >= n) return b + 1 < CL_SAMPLE_BUCKETS ? (cl_sample_floor((unsigned)b) + cl_sample_floor((unsigned)b + 1)) / 2
                                                        : cl_sample_floor((unsigned)b);
  }
  return 0;
}

int cl_ring_os_tid(uint32_t serial) {
  int n = cl_rings_count();
  for (int i = 0; i < n; i++) {
    if (atomic_load(&cl_rings[i].serial) != serial) continue;
    int tid = atomic_load(&cl_rings[i].os_tid);
    return atomic_load(&cl_rings[i].serial) == serial ? tid : 0;   /* not handed over meanwhile */
  }
  return 0;
}

void cl_rings_reset_after_fork(void) {
  /* The child has one thread, the forking one; its ring belongs to the parent's writer. */
  int n = atomic_load(&g_nrings);
  for (int i = 0; i < n; i++) {
    atomic_store(&cl_rings[i].state, CL_RING_FREE);
    atomic_store(&cl_rings[i].next, NULL);
    atomic_store(&cl_rings[i].waiting, 0);
    atomic_store(&cl_rings[i].head, 0);
    atomic_store(&cl_rings[i].tail, 0);
  }
  pthread_mutex_init(&g_ring_mu, NULL);
  cl_t_ring = NULL;
}
