/* timers.c: see timers.h. The API calls run on the application's threads: no allocation, no
 * lock, no system call but the vDSO clock (once an epoch); a communicator's counts are one cache
 * line, written by the thread that drives it. Never reads NCCL's memory but its mask. */
#include "plugin/capture/timers.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/hash.h"
#include "plugin/capture/contexts.h"
#include "plugin/capture/gate.h"
#include <stdatomic.h>
#include <string.h>

#define MAX_DEV 64                /* GPUs whose communicators share a budget apart (one more: unknown) */
#define UNTIMED_IDS 4096          /* recorded API events remembered as not timed */

/* One communicator's calls of one kind. */
typedef struct {
  _Alignas(64) _Atomic uint64_t calls;
  _Atomic uint64_t timed;
  _Atomic uint64_t epoch_t0;        /* when the epoch's first call came */
  _Atomic uint32_t level;
  _Atomic uint32_t next;            /* the key that followed this one last on its thread, + 1 (0: none) */
  _Atomic uint64_t hash;
  _Atomic int32_t dev;              /* index into g_active */
  _Atomic int32_t counted;          /* counted in g_active (it had a call) */
  _Atomic int32_t captured;         /* its last call was captured into a CUDA graph */
  _Atomic uint64_t hold_until;      /* its level holds against lower rates until then (cl_timers_hold) */
} tm_key;
_Static_assert(sizeof(tm_key) == 64, "a communicator's counts are one cache line");

static tm_key g_keys[CL_MAX_COMMS][2];
static _Atomic uint32_t g_active[MAX_DEV + 1];   /* keys with calls, per GPU */
static _Atomic uint64_t g_untimed[UNTIMED_IDS];
static _Atomic uint64_t g_retired_calls, g_retired_timed, g_level_changes;
static _Atomic uint32_t g_max_level;
static __thread uint32_t t_prev;                 /* the key of this thread's last call, + 1 */

static inline uint32_t key_of(int slot, int kind) { return (uint32_t)(slot * 2 + kind); }
static inline tm_key *key_at(uint32_t k) { return &g_keys[k / 2][k % 2]; }

void cl_timers_attach(void *ctx, uint64_t hash, int dev) {
  int slot = cl_ctx_index(ctx);
  if (slot < 0) return;
  for (int kind = 0; kind < 2; kind++) {
    tm_key *k = &g_keys[slot][kind];
    atomic_store(&k->calls, 0);
    atomic_store(&k->timed, 0);
    atomic_store(&k->epoch_t0, 0);
    atomic_store(&k->level, 0);
    atomic_store(&k->next, 0);
    atomic_store(&k->hash, hash ^ (kind ? 0x9E3779B97F4A7C15ull : 0));
    atomic_store(&k->dev, dev >= 0 && dev < MAX_DEV ? dev : MAX_DEV);
    atomic_store(&k->counted, 0);
    atomic_store(&k->captured, 0);
    atomic_store(&k->hold_until, 0);
  }
}

void cl_timers_detach(void *ctx) {
  int slot = cl_ctx_index(ctx);
  if (slot < 0) return;
  for (int kind = 0; kind < 2; kind++) {
    tm_key *k = &g_keys[slot][kind];
    atomic_fetch_add(&g_retired_calls, atomic_exchange(&k->calls, 0));
    atomic_fetch_add(&g_retired_timed, atomic_exchange(&k->timed, 0));
    if (atomic_exchange(&k->counted, 0)) atomic_fetch_sub(&g_active[atomic_load(&k->dev)], 1);
  }
}

int cl_timers_rule(uint64_t hash, int kind, uint64_t k, unsigned level) {
  if (!level) return 1;
  if (level > CL_TIMERS_MAX_LEVEL) level = CL_TIMERS_MAX_LEVEL;
  uint64_t run = k >> CL_TIMERS_RUN_BITS;
  uint64_t h = cl_hash64(hash ^ cl_hash64(run * 2 + (uint64_t)kind + 1));
  return (h & ((1ull << level) - 1)) == 0;
}

unsigned cl_timers_level(uint64_t calls, uint64_t dt_ns, unsigned nshare) {
  if (!dt_ns) dt_ns = 1;
  if (!nshare) nshare = 1;
  /* the share of wall time every call timed would take, over the GPU's share of the budget */
  double x = (double)calls * (double)cl_cfg.timers_cost_ns * nshare * 1e6 /
             ((double)dt_ns * (double)(cl_cfg.timers_budget_ppm ? cl_cfg.timers_budget_ppm : 1));
  unsigned level = 0;
  for (double cap = 1.0; x > cap && level < CL_TIMERS_MAX_LEVEL; cap *= 2) level++;
  return level;
}

unsigned cl_timers_hold(unsigned cur, unsigned want, uint64_t now, uint64_t *hold_until) {
  if (want >= cur || now >= *hold_until) {
    *hold_until = now + CL_TIMERS_HOLD_NS;
    return want;
  }
  return cur;
}

/* The first call of an epoch: the level for this epoch, from the last one's rate. */
static __attribute__((noinline)) void epoch(tm_key *key, uint64_t k) {
  uint64_t now = cl_now(), t0 = atomic_load_explicit(&key->epoch_t0, memory_order_relaxed);
  atomic_store_explicit(&key->epoch_t0, now, memory_order_relaxed);
  int dev = atomic_load_explicit(&key->dev, memory_order_relaxed);
  if (!k) {   /* the communicator's first call: it shares its GPU's budget from now on */
    if (!atomic_exchange(&key->counted, 1)) atomic_fetch_add(&g_active[dev], 1);
    return;
  }
  unsigned share = atomic_load_explicit(&g_active[dev], memory_order_relaxed);
  unsigned cur = atomic_load_explicit(&key->level, memory_order_relaxed);
  uint64_t hold = atomic_load_explicit(&key->hold_until, memory_order_relaxed);
  unsigned level = cl_timers_hold(cur, cl_timers_level(CL_TIMERS_EPOCH, now > t0 ? now - t0 : 1, share), now, &hold);
  atomic_store_explicit(&key->hold_until, hold, memory_order_relaxed);
  if (level != cur) {
    atomic_store_explicit(&key->level, level, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_level_changes, 1, memory_order_relaxed);
    unsigned m = atomic_load_explicit(&g_max_level, memory_order_relaxed);
    while (level > m && !atomic_compare_exchange_weak(&g_max_level, &m, level)) {}
  }
}

int cl_timers_call(void *ctx, int kind, int captured) {
  int slot = cl_ctx_index(ctx);
  if (slot < 0 || !cl_gate_sampling()) return 1;
  uint32_t self = key_of(slot, kind) + 1;
  tm_key *key = key_at(self - 1);
  if (t_prev && t_prev != self && atomic_load_explicit(&key_at(t_prev - 1)->next, memory_order_relaxed) != self)
    atomic_store_explicit(&key_at(t_prev - 1)->next, self, memory_order_relaxed);
  t_prev = self;
  uint64_t k = atomic_fetch_add_explicit(&key->calls, 1, memory_order_relaxed);
  if (__builtin_expect((k & (CL_TIMERS_EPOCH - 1)) == 0, 0)) epoch(key, k);
  if (atomic_load_explicit(&key->captured, memory_order_relaxed) != captured)
    atomic_store_explicit(&key->captured, captured, memory_order_relaxed);
  /* the next call: the key that followed this one last time, else this one again; captured if
   * that key's last call was (a capture's calls come together: its first follows the rule) */
  uint32_t nx = atomic_load_explicit(&key->next, memory_order_relaxed);
  if (!nx) nx = self;
  tm_key *next = key_at(nx - 1);
  uint64_t nk = nx == self ? k + 1 : atomic_load_explicit(&next->calls, memory_order_relaxed);
  uint64_t nhash = atomic_load_explicit(&next->hash, memory_order_relaxed);
  /* what this call got (NCCL's snapshot): what the mask says now, before it is changed */
  int timed = cl_gate_timers_now();
  int want;
  if (nx != self && nhash == atomic_load_explicit(&key->hash, memory_order_relaxed) && nk == k)
    want = timed;   /* the same instance on another GPU of this process (one thread calls each GPU's in turn) */
  else
    want = atomic_load_explicit(&next->captured, memory_order_relaxed) ||
           cl_timers_rule(nhash, (int)((nx - 1) % 2), nk, atomic_load_explicit(&next->level, memory_order_relaxed));
  cl_gate_timers(want);
  if (timed) atomic_store_explicit(&key->timed, atomic_load_explicit(&key->timed, memory_order_relaxed) + 1,
                                   memory_order_relaxed);
  return timed;
}

void cl_timers_note_untimed(uint64_t id) {
  atomic_store_explicit(&g_untimed[cl_hash_slot(id, UNTIMED_IDS)], id, memory_order_relaxed);
}
int cl_timers_untimed_id(uint64_t id) {
  return id && atomic_load_explicit(&g_untimed[cl_hash_slot(id, UNTIMED_IDS)], memory_order_relaxed) == id;
}

void cl_timers_get_stats(cl_timers_stats *s) {
  memset(s, 0, sizeof *s);
  s->calls = atomic_load(&g_retired_calls);
  s->timed = atomic_load(&g_retired_timed);
  for (int i = 0; i < CL_MAX_COMMS; i++)
    for (int kind = 0; kind < 2; kind++) {
      s->calls += atomic_load_explicit(&g_keys[i][kind].calls, memory_order_relaxed);
      s->timed += atomic_load_explicit(&g_keys[i][kind].timed, memory_order_relaxed);
    }
  s->level_changes = atomic_load(&g_level_changes);
  s->max_level = atomic_load(&g_max_level);
}

void cl_timers_reset_after_fork(void) {
  memset(g_keys, 0, sizeof g_keys);
  memset(g_active, 0, sizeof g_active);
  memset(g_untimed, 0, sizeof g_untimed);
  atomic_store(&g_retired_calls, 0);
  atomic_store(&g_retired_timed, 0);
  atomic_store(&g_level_changes, 0);
  atomic_store(&g_max_level, 0);
  t_prev = 0;
}
