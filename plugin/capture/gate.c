/* gate.c: see gate.h. Only cl_gate_coll() runs on NCCL's threads (one atomic add per
 * collective while a count window is set); the time window is moved by the writer thread. */
#include "plugin/capture/gate.h"
#include "common/config.h"
#include "common/log.h"
#include "commlens/event.h"

typedef enum { WIN_BEFORE = 0, WIN_INSIDE, WIN_AFTER } win_state;

_Atomic int cl_enabled;
_Atomic int cl_capturing = 1;
_Atomic int cl_window_by_coll;
_Atomic int cl_skip_launch_events;
_Atomic int cl_digest_only;
_Atomic int cl_kch_first;
static _Atomic uint64_t g_colls;
static win_state g_window_state;       /* time window; writer thread only */
static _Atomic(int *) g_mask_ptr;      /* NCCL's process-global mask (NCCL reads it relaxed) */
/* The mask the window wants now; with the timers sampled (cl_gate_sampling) its KernelCh bit is
 * the timers' to clear, call by call (cl_gate_timers). */
static _Atomic uint32_t g_want;
static int g_sampling;                 /* set up once per process (cl_gate_setup) */
#define KCH_BIT (1u << CL_EV_KERNEL_CH)

static void set_mask(uint32_t m) {
  atomic_store_explicit(&g_want, m, memory_order_relaxed);
  int *p = atomic_load_explicit(&g_mask_ptr, memory_order_relaxed);
  if (p) __atomic_store_n(p, (int)m, __ATOMIC_RELAXED);
}

int cl_gate_sampling(void) { return g_sampling; }

int cl_gate_timers_now(void) {
  int *p = atomic_load_explicit(&g_mask_ptr, memory_order_relaxed);
  return !p || (__atomic_load_n(p, __ATOMIC_RELAXED) & (int)KCH_BIT) != 0;
}

void cl_gate_timers(int timed) {
  int *p = atomic_load_explicit(&g_mask_ptr, memory_order_relaxed);
  uint32_t want = atomic_load_explicit(&g_want, memory_order_relaxed);
  if (!p || !(want & KCH_BIT)) return;
  int m = (int)(timed ? want : want & ~KCH_BIT);
  if (m != __atomic_load_n(p, __ATOMIC_RELAXED)) __atomic_store_n(p, m, __ATOMIC_RELAXED);   /* only a change */
}

/* Outside the window NCCL still reports collectives (cheap), so they can be counted. */
static uint32_t mask_outside_window(void) {
  return cl_cfg.window == CL_WIN_COLL ? (1u << CL_EV_COLL) : 0;
}

void cl_disable(void) {
  atomic_store(&cl_enabled, 0);
  atomic_store(&cl_capturing, 0);
  set_mask(0);
}

void cl_gate_launch_events(int needed) {
  if (atomic_load_explicit(&cl_skip_launch_events, memory_order_relaxed) == !needed) return;
  atomic_store_explicit(&cl_skip_launch_events, !needed, memory_order_relaxed);
}

void cl_gate_channels(int one) {
  one = one && atomic_load_explicit(&cl_digest_only, memory_order_relaxed);
  if (atomic_load_explicit(&cl_kch_first, memory_order_relaxed) == one) return;
  atomic_store_explicit(&cl_kch_first, one, memory_order_relaxed);
}

void cl_gate_setup(int abi) {
  int windowed = cl_cfg.window != CL_WIN_NONE;
  atomic_store(&cl_window_by_coll, cl_cfg.window == CL_WIN_COLL);
  atomic_store(&cl_capturing, !windowed || (cl_cfg.window == CL_WIN_COLL && cl_cfg.win_start == 0));
  g_window_state = WIN_BEFORE;
  atomic_store(&g_colls, 0);
  atomic_store(&cl_skip_launch_events, 0);   /* the writer says when they can go */
  atomic_store(&cl_kch_first, 0);            /* and when one channel is enough */
  atomic_store(&cl_digest_only, !(cl_cfg.output & CL_OUT_TRACE) && !cl_flight_detailed() && abi >= 4);
  /* the timers are sampled call by call from the API events (ABI v5+), where they are asked for */
  g_sampling = cl_cfg.timers == CL_TIMERS_SAMPLED && abi >= 5 && (cl_cfg.mask & KCH_BIT);
}

void cl_gate_attach_mask(int *mask) {
  atomic_store_explicit(&g_mask_ptr, mask, memory_order_relaxed);
  set_mask(atomic_load(&cl_capturing) ? cl_cfg.mask : mask_outside_window());   /* the writer may be storing it too */
}

int cl_gate_coll(unsigned etype) {
  if (etype != CL_EV_COLL) return atomic_load_explicit(&cl_capturing, memory_order_relaxed);
  uint64_t n = atomic_fetch_add_explicit(&g_colls, 1, memory_order_relaxed);
  if (n == cl_cfg.win_start) { atomic_store(&cl_capturing, 1); set_mask(cl_cfg.mask); }
  if (n >= cl_cfg.win_stop) {
    if (n == cl_cfg.win_stop) { atomic_store(&cl_capturing, 0); set_mask(mask_outside_window()); }
    return 0;
  }
  return n >= cl_cfg.win_start;
}

void cl_window_tick(uint64_t t) {
  if (cl_cfg.window != CL_WIN_TIME) return;
  win_state want = t < cl_cfg.win_start ? WIN_BEFORE : t < cl_cfg.win_stop ? WIN_INSIDE : WIN_AFTER;
  if (want == g_window_state) return;
  g_window_state = want;
  atomic_store(&cl_capturing, want == WIN_INSIDE);
  set_mask(want == WIN_INSIDE ? cl_cfg.mask : 0);
  cl_log(CL_LOG_INFO, "capture window %s", want == WIN_INSIDE ? "opened" : "closed");
}
