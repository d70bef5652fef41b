/* format.c: see format.h. The only thread (besides the exit path, once it has stopped) that
 * touches the assembler, the GPU join and the Chrome-trace body. */
#include "plugin/pipeline/format.h"
#include "plugin/pipeline/drain.h"
#include "plugin/pipeline/flight.h"
#include "plugin/pipeline/pause.h"
#include "common/clock.h"
#include "common/config.h"
#include "plugin/capture/gate.h"
#include "plugin/capture/ring.h"
#include "plugin/gpu/cupti.h"
#include "plugin/output/identity.h"
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BODY_FLUSH_BYTES (8u << 20)   /* the JSON body never grows past this between writes */
#define CUPTI_POLL_NS 100000000ull     /* CUPTI's buffers are taken this often */
#define FORMAT_BATCH 1024              /* records a pass takes that mean more are waiting */
#define FORMAT_PAUSE_US 20000          /* the pause between passes while records keep coming */
#define FORMAT_IDLE_US 50000           /* the longest, once none came for 100 ms */

static pthread_t g_thr;
static _Atomic int g_stop;
static cl_pause g_pause;
static cl_gpu_activity g_act[4096];

static void feed(void *arg, const cl_rec *r) {
  cl_asm_feed(arg, r);
  cl_flight_feed(r);
}
/* Records read from the rings (cl_drain_direct) into the format thread's buffer, then fed one
 * at a time; returns how many. 16 KiB: it stays in the core's cache between passes. */
#define DIRECT_SLOTS 512
static size_t direct_some(const cl_format_deps *d) {
  static cl_rec buf[DIRECT_SLOTS];   /* the format thread's alone (format_some: its stopper reads no ring) */
  size_t n = cl_drain_direct(d->stage, buf, DIRECT_SLOTS), recs = 0;
  for (size_t k = 0; k < n; k += buf[k].nslots, recs++) feed(d->asm_, &buf[k]);
  return recs;
}

/* Formats staged records and, on the format thread, what the rings hold, until `budget_ns` has
 * passed (0: until there is nothing left) or, on the format thread, until it is asked to stop
 * (`stop`, NULL on the stopper's thread). The stopper takes staging alone: the drain's last pass
 * put there everything committed before the stop, and threads that still record while the job
 * exits would keep the rings from ever being empty (a backlog without end: seen in test_stress,
 * a 3 GB trace). */
static uint64_t format_some(const cl_format_deps *d, uint64_t budget_ns, _Atomic int *stop) {
  uint64_t t0 = cl_now(), done = 0;
  size_t got;
  if (!d->stage) return 0;
  while ((!stop || !atomic_load(stop)) &&
         ((got = cl_stage_take(d->stage, 256, feed, d->asm_)) > 0 ||
          (stop && (got = direct_some(d)) > 0))) {
    done += got;
    if (cl_parts_pending_bytes(d->parts) > BODY_FLUSH_BYTES) d->flush(0);
    if (budget_ns && cl_now() - t0 > budget_ns) break;
  }
  return done;
}

/* Takes CUPTI's completed records (forced: also the buffers still being filled). */
static void drain_cupti(cl_format_deps *d, int force) {
  if (!d->gj) return;
  cl_cupti_flush(force);
  size_t n;
  while ((n = cl_cupti_drain(g_act, sizeof g_act / sizeof g_act[0])) > 0)
    for (size_t i = 0; i < n; i++) cl_gj_activity(d->gj, &g_act[i]);
}

/* Keeps the join's CUPTI coverage in step with CUPTI: suspended (another tool holds the slot),
 * resumed, or displaced (our records go to another client: the join sees NCCL launches without
 * launch records). */
static void track_cupti(cl_format_deps *d, uint64_t now) {
  uint64_t last_ok = now;
  int rec = cl_cupti_recording();
  if (rec && cl_gj_launches_lost(d->gj, now, &last_ok)) {
    drain_cupti(d, 1);   /* records still in a partly filled buffer come with a forced flush */
    if (cl_gj_launches_lost(d->gj, now, &last_ok)) { cl_cupti_displaced(); rec = 0; }
  }
  if (rec == d->cupti_rec) return;
  /* suspended: the other tool may have taken our records since the last probe that found the
   * slot free; collectives from then on are marked lost rather than left silently untimed */
  uint64_t taken = rec ? 0 : cl_cupti_taken_after();
  if (taken && taken < last_ok) last_ok = taken;
  /* coverage starts once CUPTI records (a window was armed since `now` was read): a launch
   * before that may have no kernel record, and must not wait for one (gj_join.c) */
  if (rec) cl_gj_start(d->gj, cl_now());
  else if (cl_cupti_sampling_gap()) cl_gj_stop_window(d->gj, now);
  else cl_gj_stop(d->gj, last_ok);
  d->cupti_rec = rec;
}

/* NCCL's API and KernelLaunch events have three readers: the trace, the detailed flight
 * recorder's dumps (COMMLENS_FLIGHT_S set: a rank stuck in ncclGroupEnd before any collective was
 * enqueued shows only there; the default recorder keeps what the digest records) and the CUPTI
 * join; with none, the shims answer them with no handle (gate.h). A sampling window opens
 * at a poll, so they come back two polls ahead of it, and at the latest at the poll that opens
 * it, before CUPTI is armed (a poll late under load); CUPTI taken up again after another tool
 * had it is armed at a poll too, and they are on all the while another tool has it. */
#define LAUNCH_LEAD_NS (2 * CUPTI_POLL_NS)
static void gate_launch_events(const cl_format_deps *d, uint64_t now) {
  int needed = (cl_cfg.output & CL_OUT_TRACE) || cl_flight_detailed() ||
               (d->gj && cl_cupti_wants_launches(now, LAUNCH_LEAD_NS));
  cl_gate_launch_events(needed);
  /* one channel a collective between the windows: every channel inside them, where the one
   * channel's error is measured, and without CUPTI (no windows to measure it in) */
  cl_gate_channels(!needed && d->gj && cl_cfg.cupti == CL_CUPTI_SAMPLED && cl_cfg.channels == CL_CHANNELS_SAMPLED);
}

/* How far the rings have been read (cl_asm_read_until): the records committed before `t`, once
 * all of them were handed to the assembler (this thread is staging's consumer: handed is fed),
 * as the flight recorder waits for a signal's. Then a new mark. */
static struct { cl_read_mark m; uint64_t t; int marked; } g_read;
static void note_read(const cl_format_deps *d) {
  if (!d->stage) return;
  if (g_read.marked) {
    uint64_t ring_slots, staged_slots;
    cl_read_mark_unread(&g_read.m, d->stage, &ring_slots, &staged_slots);
    if (ring_slots || staged_slots) return;
    cl_asm_read_until(d->asm_, g_read.t);
  }
  g_read.t = cl_now();   /* before the mark: a record committed before it is behind the mark */
  cl_read_mark_now(&g_read.m);
  g_read.marked = 1;
}

static void *format_main(void *arg) {
  cl_format_deps *d = arg;
  /* Formatting yields to everything else on the machine, the job and the drain thread first. */
  if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19) != 0) { /* best effort */ }
  uint64_t last_flush = cl_now(), last_busy = last_flush, last_cupti = last_flush;
  int idle_us = FORMAT_PAUSE_US, saw_op = 0;   /* saw_op: the job's first collective was read */
  cl_asm_read_until(d->asm_, 0);   /* from now on the waits count to the reading (note_read) */
  gate_launch_events(d, last_flush);
  while (!atomic_load(&g_stop)) {
    int rings_idle = cl_rings_idle();   /* before staging is read: then "nothing to take" means caught up */
    uint64_t got = format_some(d, 5000000, &g_stop);
    uint64_t now = cl_now();
    if (d->gj && now - last_cupti >= CUPTI_POLL_NS) {
      if (!saw_op) {   /* the first sampling window runs a whole window from it */
        cl_asm_stats as;
        cl_asm_get_stats(d->asm_, &as);
        if ((saw_op = as.ops_started > 0)) cl_cupti_first_collective(now);
      }
      gate_launch_events(d, now);   /* before a window can open, in drain_cupti */
      drain_cupti(d, 0);
      track_cupti(d, now);
      cl_gj_advance(d->gj, now, 0);
      last_cupti = now;
    }
    /* Asked to stop while inside a call that took long (a CUPTI flush, a write): no new work,
     * above all no new write. The stopper either joined us and finishes the run itself, or
     * gave up on us and the trace ends at its last complete flush. */
    if (atomic_load(&g_stop)) break;
    note_read(d);
    cl_asm_tick(d->asm_, now, 0);
    cl_flight_tick(now, rings_idle && got == 0 && cl_stage_empty(d->stage), d->stage, d->asm_);
    cl_window_tick(now - cl_proc.start_ns);
    if (now - last_flush >= (uint64_t)cl_cfg.flush_ms * 1000000ull) { d->flush(0); last_flush = now; }
    if (got) last_busy = now;
    if (got >= FORMAT_BATCH) continue;   /* a backlog: straight on */
    /* records trickle in: let them gather for a while, since every pass and every wake-up has
     * its fixed costs (the ticks above, the staging lock, the timer: in a VM, where arming the
     * timer traps, tens of microseconds). At 5 ms a pass, the format and drain threads' waking
     * alone was 1.6% of a core in a job of a few hundred collectives a second; at 20 ms, 0.5%
     * (bench/replay_cost.c, evenly paced streams). Nothing here waits on the format thread for
     * less than 100 ms but the flush, which is never put off past its interval. */
    idle_us = now - last_busy < 100000000ull ? FORMAT_PAUSE_US : idle_us < FORMAT_IDLE_US ? idle_us * 2 : FORMAT_IDLE_US;
    if (idle_us > cl_cfg.flush_ms * 1000) idle_us = cl_cfg.flush_ms * 1000;
    cl_pause_us(&g_pause, idle_us);
  }
  /* Asked to stop: the backlog is left to the thread that stops us (cl_format_backlog), which
   * runs at the job's priority; at ours, a loaded machine could starve it past its bound. */
  return NULL;
}

void cl_format_backlog(cl_format_deps *d) {
  format_some(d, 0, NULL);
  drain_cupti(d, 1);
  if (d->gj) cl_gj_join_all(d->gj);
  cl_asm_tick(d->asm_, cl_now(), 1);
  d->flush(0);
}

int cl_format_start(cl_format_deps *d) {
  atomic_store(&g_stop, 0);
  cl_pause_init(&g_pause);
  g_read.marked = 0;   /* a run's assembler is new: nothing is known read */
  return pthread_create(&g_thr, NULL, format_main, d) == 0 ? 0 : -1;
}

int cl_format_stop(int timeout_ms) {
  atomic_store(&g_stop, 1);
  cl_pause_wake(&g_pause);
  struct timespec dl = cl_deadline_ms(timeout_ms);
  if (pthread_timedjoin_np(g_thr, NULL, &dl) == 0) return 0;
  pthread_detach(g_thr);
  return -1;
}

void cl_format_final(cl_format_deps *d) {
  drain_cupti(d, 1);
  if (d->gj) {
    cl_gj_join_all(d->gj);
    cl_asm_tick(d->asm_, cl_now(), 1);   /* every collective gets its span queued first */
    cl_gj_advance(d->gj, cl_now(), 1);
  }
  cl_asm_tick(d->asm_, cl_now(), 1);
}
