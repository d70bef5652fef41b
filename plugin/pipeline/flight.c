/* flight.c: see flight.h. Owns the triggers and their limits: a signal dump at most every
 * SIGNAL_GAP_NS (signals in between are coalesced, said once), one hang dump per stuck
 * collective, one lateness dump per episode and at most every LATE_GAP_NS. The signal
 * handler only sets an atomic flag. */
#include "plugin/pipeline/flight.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/log.h"
#include "plugin/capture/ring.h"
#include "plugin/output/identity.h"
#include "plugin/pipeline/flight_dump.h"
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define SIGNAL_GAP_NS 2000000000ull
#define SIGNAL_WAIT_NS 10000000000ull
#define LATE_GAP_NS 60000000000ull
#define HANG_CHECK_NS 250000000ull
/* Of COMMLENS_FLIGHT_MB, what the window does not take: the watch's tables (about 1.4 MiB) and a
 * dump's own memory (about 3 MiB at its peak over a full window: bench/flight_memory.c). */
#define DUMP_ROOM (5ull << 20)

static cl_fring *g_ring;
static cl_watch *g_watch;
static _Atomic int g_sig_asked;             /* set by the handler, taken by the format thread */
static int g_sig;                           /* the signal installed (0: none) */
static int g_dumps;
static uint64_t g_last_signal, g_last_late, g_last_hang_check, g_hang_id;
static uint64_t g_sig_since;   /* a signal taken, its dump waiting for the records before it */
/* What the signal's dump waits for: the records committed before the signal, until they are
 * read into the window (cl_read_mark_unread). Records the plugin lost (a full ring, a thread
 * without one, an unreadable spill) never come: they are counted from the previous signal dump
 * on, and a dump that lacks any says so. */
static cl_read_mark g_mark;
static uint64_t g_lost_at_mark, g_lost_base, g_stage_lost_base;

static uint64_t events_lost(void) {
  cl_ring_totals t;
  cl_rings_totals(&t);
  return t.dropped + t.dropped_children + t.unclaimed;
}
static uint64_t stage_lost(const cl_stage *st) { return st ? cl_stage_dropped(st) : 0; }

/* async-signal-safe: a lock-free atomic store, nothing else */
static void on_signal(int sig) { (void)sig; atomic_store(&g_sig_asked, 1); }

static void install_signal(void) {
  if (cl_cfg.flight_signal == CL_FLIGHT_SIGNAL_OFF || g_sig) return;
  int sig = cl_cfg.flight_signal == CL_FLIGHT_SIGUSR1 ? SIGUSR1 : SIGUSR2;
  const char *name = sig == SIGUSR1 ? "SIGUSR1" : "SIGUSR2";
  struct sigaction old;
  if (sigaction(sig, NULL, &old) != 0) return;
  int theirs = (old.sa_flags & SA_SIGINFO) ? old.sa_sigaction != NULL : old.sa_handler != SIG_DFL;
  if (theirs) {
    cl_log_once("flight-signal", CL_LOG_WARN, "flight recorder: %s already has a handler (the application's%s); "
                "not replacing it, so no dumps by signal (COMMLENS_FLIGHT_SIGNAL=%s picks the other one, off says none)",
                name, old.sa_handler == SIG_IGN ? ": ignored" : "", sig == SIGUSR1 ? "usr2" : "usr1");
    return;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (sigaction(sig, &sa, NULL) == 0) g_sig = sig;
}

void cl_flight_setup(void) {
  if (!cl_cfg.flight_s || g_ring) return;
  uint64_t keep = (uint64_t)cl_cfg.flight_s * 1000000000ull;
  int kch = (cl_cfg.mask & (1u << CL_EV_KERNEL_CH)) && cl_proc.abi >= 4;
  uint64_t window = cl_cfg.flight_bytes >= 2 * DUMP_ROOM ? cl_cfg.flight_bytes - DUMP_ROOM : cl_cfg.flight_bytes / 2;
  g_ring = cl_fring_new(window, keep);
  g_watch = g_ring ? cl_watch_new(kch, (uint64_t)cl_cfg.late_ms * 1000000ull) : NULL;
  if (!g_watch) {
    cl_fring_free(g_ring);
    g_ring = NULL;
    cl_log(CL_LOG_WARN, "flight recorder: out of memory for %llu MiB; it is off",
           (unsigned long long)(cl_cfg.flight_bytes >> 20));
    return;
  }
  install_signal();
  g_lost_base = events_lost();
  cl_log(CL_LOG_INFO, "flight recorder: the last %d s (%s; at most %llu MiB with its dumps, %llu KiB of it the "
         "window) kept; dumps into %s/flight on %s%s%s%s%s", cl_cfg.flight_s,
         cl_cfg.flight_light ? "what the digest records, the default" : "every event NCCL gives",
         (unsigned long long)(cl_cfg.flight_bytes >> 20), (unsigned long long)(window >> 10), cl_cfg.dir,
         g_sig == SIGUSR1 ? "SIGUSR1, " : g_sig == SIGUSR2 ? "SIGUSR2, " : "",
         cl_cfg.hang_s ? "a collective not done after COMMLENS_HANG_S" : "",
         cl_cfg.hang_s && cl_cfg.late_ms ? ", " : "", cl_cfg.late_ms ? "a collective longer than COMMLENS_LATE_MS" : "",
         !g_sig && !cl_cfg.hang_s && !cl_cfg.late_ms ? "nothing (no trigger is on)" : "");
  if (cl_cfg.hang_s && !kch)
    cl_log(CL_LOG_INFO, "flight recorder: without KernelCh events (COMMLENS_EVENTS=default+kernelch, NCCL 2.27+) "
           "only collectives with proxy operations (network) can be judged hung");
}

void cl_flight_feed(const cl_rec *r) {
  if (!g_ring) return;
  cl_fring_put(g_ring, r);
  cl_watch_feed(g_watch, r);
}

static const cl_asm *g_clocks;   /* the main assembler during a tick (cl_flight_tick's) */

static void dump(const char *trigger, const char *why, uint64_t now) {
  cl_dump_req req = {trigger, ++g_dumps, why, now};
  char path[1500];
  uint64_t t0 = cl_now();
  int n = cl_flight_dump(g_ring, g_watch, &req, g_clocks, path, sizeof path);
  double ms = (double)(cl_now() - t0) / 1e6;
  cl_fring_stats s;
  cl_fring_get_stats(g_ring, &s);
  if (n) cl_log(CL_LOG_WARN, "flight recorder: %s dump written: %s%s (%llu records of the last %.1f s, in %.1f ms; "
                "%llu evicted by age, %llu by the memory bound)", trigger, path, n > 1 ? " and the other GPUs'" : "",
                (unsigned long long)s.kept, s.oldest_ts ? (double)(s.newest_ts - s.oldest_ts) / 1e9 : 0.0, ms,
                (unsigned long long)s.evicted_age, (unsigned long long)s.evicted_room);
}

static void signal_dump(uint64_t now, const cl_stage *stage, uint64_t ring_slots, uint64_t staged_slots) {
  uint64_t lost = g_lost_at_mark - g_lost_base, slost = stage_lost(stage) - g_stage_lost_base;
  int caught_up = !ring_slots && !staged_slots && !lost && !slost;
  char why[512];
  snprintf(why, sizeof why, "\"signal\":%d,\"caught_up\":%s,\"waited_ms\":%llu,\"missing\":{\"unread_ring_slots\":%llu,"
           "\"unread_staged_slots\":%llu,\"lost_events\":%llu,\"lost_staged_slots\":%llu}", g_sig,
           caught_up ? "true" : "false", (unsigned long long)((now - g_sig_since) / 1000000u),
           (unsigned long long)ring_slots, (unsigned long long)staged_slots, (unsigned long long)lost,
           (unsigned long long)slost);
  g_last_signal = now;
  g_lost_base = g_lost_at_mark;
  g_stage_lost_base += slost;
  if (!caught_up)   /* before the dump's own message, which a reader may wait for */
    cl_log(CL_LOG_WARN, "flight recorder: signal dump %d lacks records from before the signal: %llu events lost "
           "(full ring or no ring), %llu staged slots lost, %llu slots not read within %.0f s",
           g_dumps + 1, (unsigned long long)lost, (unsigned long long)slost,
           (unsigned long long)(ring_slots + staged_slots), SIGNAL_WAIT_NS / 1e9);
  dump("signal", why, now);
}

void cl_flight_tick(uint64_t now, int caught_up, const cl_stage *stage, const cl_asm *clocks) {
  if (!g_ring) return;
  g_clocks = clocks;
  char why[512];
  /* A signal is dumped once every record committed before it has been fed to the window
   * (cl_read_mark_unread), or SIGNAL_WAIT_NS later under a backlog that does not clear, saying
   * what was still missing. Only the signal's records are waited for: on a busy job the
   * rings are never all empty at once. */
  if (g_sig_since) {
    uint64_t ring_slots, staged_slots;
    cl_read_mark_unread(&g_mark, stage, &ring_slots, &staged_slots);
    if ((!ring_slots && !staged_slots) || now - g_sig_since > SIGNAL_WAIT_NS) {
      if (g_last_signal && now - g_last_signal < SIGNAL_GAP_NS)
        cl_log_once("flight-coalesced", CL_LOG_INFO, "flight recorder: a signal within %.0f s of the last signal dump "
                    "is coalesced into it", SIGNAL_GAP_NS / 1e9);
      else
        signal_dump(now, stage, ring_slots, staged_slots);
      g_sig_since = 0;
    }
  }
  if (atomic_exchange(&g_sig_asked, 0) && !g_sig_since) {
    g_sig_since = now ? now : 1;
    cl_read_mark_now(&g_mark);
    g_lost_at_mark = events_lost();
  }
  cl_watch_late late;
  if (cl_cfg.late_ms && cl_watch_take_late(g_watch, &late) && (!g_last_late || now - g_last_late >= LATE_GAP_NS)) {
    g_last_late = now;
    snprintf(why, sizeof why, "\"comm_serial\":%u,\"seq\":%llu,\"dur_ns\":%llu,\"threshold_ms\":%d,\"timed_by\":\"%s\"",
             late.comm, (unsigned long long)late.seq, (unsigned long long)late.dur_ns, cl_cfg.late_ms,
             late.timer ? "gpu_timer" : "host");
    dump("late", why, now);
  }
  if (cl_cfg.hang_s && caught_up && now - g_last_hang_check >= HANG_CHECK_NS) {
    g_last_hang_check = now;
    cl_watch_coll c;
    if (cl_watch_hung(g_watch, now, (uint64_t)cl_cfg.hang_s * 1000000000ull, &c) && c.id != g_hang_id) {
      g_hang_id = c.id;   /* one dump per stuck collective */
      snprintf(why, sizeof why, "\"comm_serial\":%u,\"seq\":%llu,\"age_ms\":%llu,\"threshold_s\":%d", c.comm,
               (unsigned long long)c.seq, (unsigned long long)((now - c.start) / 1000000u), cl_cfg.hang_s);
      dump("hang", why, now);
    }
  }
  g_clocks = NULL;
}

void cl_flight_free(void) {
  cl_watch_free(g_watch);
  cl_fring_free(g_ring);
  g_watch = NULL;
  g_ring = NULL;
}

void cl_flight_after_fork_child(void) {
  cl_flight_free();           /* the child's copy of the parent's window: not the child's to dump */
  atomic_store(&g_sig_asked, 0);
  g_dumps = 0;
  g_last_signal = g_last_late = g_last_hang_check = g_hang_id = g_sig_since = 0;
  g_mark.target_set = 0;
  g_lost_at_mark = g_lost_base = g_stage_lost_base = 0;
}
