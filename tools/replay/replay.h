/* replay.h: drives the plugin with a COMMLENS_RECORD recording (plugin/abi/recorder.c format):
 * one thread per recorded thread, the recorded global order reproduced exactly by a
 * sequencer, recorded contexts and handles mapped to the ones the library hands out now,
 * strings and blobs the descriptors pointed to restored from their recorded bytes, and
 * ProxyOp pids of the recorded process rewritten to ours (others stay foreign, as PXN). */
#ifndef COMMLENS_REPLAY_H
#define COMMLENS_REPLAY_H
#include <stdint.h>

typedef struct {
  long calls, inits, starts, stops, states, finalizes;
  long mapped_parents;   /* parentObj / parentGroup values rewritten to live handles */
  long foreign_passed;   /* pointer values not recorded as ours, passed through unchanged */
  long bad_rc;           /* calls (other than init) that did not return ncclSuccess */
  long unmade;           /* stops and states of events the library answered with no handle: NCCL
                            makes none, so neither does the replay (not in `calls`) */
  int nthreads;
  int abi;               /* the last ABI version seen */
  long long max_late_ns; /* paced: the most a call ran after its due time */
  long long plugin_ns;   /* time inside startEvent, stopEvent and recordEventState, summed
                            (a CLOCK_MONOTONIC_RAW read on each side: their cost is included) */
  long long lifecycle_ns;   /* ... inside init and finalize (the last finalize stops the writer) */
  long long threads_cpu_ns; /* CPU time of the replaying threads, all of it (their calls too) */
  char err[256];         /* why rp_replay failed */
} rp_stats;

/* Replays `rec_path` (.rec.gz) into the library `lib` (NULL: h_lib_path(); "": the tables
 * linked into the running program, as fuzz/fuzz_replay.c does). Loads
 * ncclProfiler_vN for each N the recording uses; dlcloses them at the end. 0 on success,
 * -1 if the recording could not be read or parsed (st->err says why). */
int rp_replay(const char *rec_path, const char *lib, rp_stats *st);
/* Same, paced: each call waits until its recorded time (since the first call) divided by
 * `speed` has passed, so host timestamps, gaps and the GPU timer calibration look like the
 * recorded run's (speed 1 = real time). speed <= 0 replays as fast as possible. */
int rp_replay_paced(const char *rec_path, const char *lib, double speed, rp_stats *st);
/* Called before each replayed call with the call's recorded time (ns since the recording's
 * first call), on the thread about to make it; NULL: none. commlens-replay --virtual-clock
 * uses it to make the plugin's clock read the recorded times. */
typedef void (*rp_clock_hook)(uint64_t recorded_ns);
void rp_set_clock_hook(rp_clock_hook fn);
/* Called after each replayed call, on the thread that made it, outside the timed part
 * (bench/replay_cost.c hands CUPTI a kernel record for each KernelLaunch): the call's kind
 * ('I' 'S' 'E' 'T' 'F'), its ABI version, its time, and for 'S' the event type and the
 * descriptor as passed (valid during the hook only). NULL: none. */
typedef struct { char kind; int abi; uint64_t type; const unsigned char *descr;
                 long long ns; /* the time the call took, as added to plugin_ns or lifecycle_ns */ } rp_call_view;
typedef void (*rp_call_hook)(const rp_call_view *c);
void rp_set_call_hook(rp_call_hook fn);
/* Paced replays (speed > 0) only: ns > 0 spreads the calls evenly over ns instead of at their
 * recorded times (bench/replay_cost.c: streams of different lengths over one span of time,
 * every flush interval holding collectives), the GPU timers a call carries (KernelCh and
 * kernel-phase starts, KernelChStop and KernelPhaseStop states) mapped onto the spread as the
 * recorded times around them were, so each stays before its observation and in order;
 * 0, the default: recorded times. */
void rp_set_uniform_span(uint64_t ns);
/* With an even spread only: ns > 0 keeps bursts whole, a call recorded less than ns after the
 * one before it following at once (a collective's calls come microseconds apart; spread out,
 * each would find the caches cold, as no real job has them); 0, the default: every call on its
 * own place in the spread. */
void rp_set_burst(uint64_t ns);
/* With an even spread only: ns > 0 holds every call after the first collective's or p2p's start
 * back by ns, so that what a time window opened at the job's first operation holds (the plugin's
 * first CUPTI window, COMMLENS_CUPTI=sampled) is the same in streams of any length (bench/
 * replay_cost.c); 0, the default: no pause. */
void rp_set_first_pause(uint64_t ns);
/* on: KernelCh (and their kernel phases) follow the library's mask as NCCL's do from 2.28 (ABI
 * v5+): made only for an operation whose API call found KernelCh in the mask (the library's
 * sample of NCCL's timers, COMMLENS_TIMERS=sampled); the others, their states and stops are not
 * made (counted in `unmade`). Off, the default: every recorded call is made, and the library
 * is asked to time every collective (COMMLENS_TIMERS=all, unless the environment says). */
void rp_set_follow_mask(int on);
#endif
