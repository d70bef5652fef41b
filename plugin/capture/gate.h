/* gate.h: whether an event is recorded at all. Profiling is enabled by the first init and
 * disabled for good when output cannot be written; the capture window (COMMLENS_WINDOW)
 * opens and closes recording by collective count (on the hot path) or by time (from the
 * writer's tick). Opening and closing also changes the event mask NCCL reads, so NCCL stops
 * producing events we would throw away. */
#ifndef COMMLENS_GATE_H
#define COMMLENS_GATE_H
#include <stdatomic.h>
#include <stdint.h>

extern _Atomic int cl_enabled;         /* 0 before the first init and in a fork child */
extern _Atomic int cl_capturing;       /* the capture window is open */
extern _Atomic int cl_window_by_coll;  /* the window counts collectives (hot path calls the gate) */
/* NCCL's API events (GroupApi, CollApi, P2pApi) and KernelLaunch serve three readers only: the
 * trace's API slices, the detailed flight recorder's dumps (config.h cl_flight_detailed), and
 * the CUPTI join (a collective's launch group, a launch's stream). When none needs them (no
 * trace written, no detailed flight recorder, CUPTI detached between two sampling windows or
 * off), the ABI shims answer them with no handle, so NCCL neither stops them nor records their
 * states: a third of a collective's calls and records
 * (docs/decisions/0023-launch-events-without-handles.md); a CollApi or P2pApi gets a quiet handle
 * that says whether its operation is timed (event.h CL_ID_QUIET_API_*). The writer sets it
 * (cl_gate_launch_events); every other event is recorded as before. */
extern _Atomic int cl_skip_launch_events;
/* Only a digest is written (no trace, no detailed flight recorder), for the whole run, and NCCL's
 * KernelCh events stop (ABI v4+; v3's never do): NCCL's Group events (ABI v5+, where no event
 * names one as its parent) get a handle that records nothing, and a KernelCh travels as one
 * record written at its stop (hotpath.c). Set with the gate. */
extern _Atomic int cl_digest_only;
/* COMMLENS_CHANNELS=sampled, while only a digest is written and CUPTI is between two sampling
 * windows: a KernelCh is recorded only for the first channel of its collective that NCCL's
 * proxy thread sees start; the others get no handle (hotpath.c), and the recorded one says so
 * (CL_F_KCH_FIRST). Inside the windows every channel is recorded, so the error of the one
 * channel's span is measured there (plugin/pipeline/asm_feed.c). Set by the writer
 * (cl_gate_channels). */
extern _Atomic int cl_kch_first;

/* Hot path, only while cl_window_by_coll: counts collectives, opens and closes the window;
 * 1 if an event of type `etype` is inside it. */
int cl_gate_coll(unsigned etype);
/* After the configuration is loaded: the window's initial state; `abi` the profiler ABI NCCL
 * drives. */
void cl_gate_setup(int abi);
/* NCCL's process-global mask at a communicator's init: remembered (window changes rewrite it)
 * and set to what the window wants now. */
void cl_gate_attach_mask(int *mask);
/* Writer: opens and closes a time window; `since_start_ns` is the time since the first init. */
void cl_window_tick(uint64_t since_start_ns);
/* Writer: whether the API and KernelLaunch events are needed now (see cl_skip_launch_events). */
void cl_gate_launch_events(int needed);
/* Writer: whether one channel of each collective is enough now (cl_kch_first); no effect
 * unless only a digest is written. */
void cl_gate_channels(int one);
/* Whether the timers are sampled (COMMLENS_TIMERS=sampled, KernelCh asked for, ABI v5+): NCCL's
 * mask then has KernelCh only while the next operation's snapshot should (cl_gate_timers). */
int cl_gate_sampling(void);
/* Hot path, at an API call (plugin/capture/timers.c): whether NCCL's snapshot for that call had
 * KernelCh (the mask as it is now: another thread may have written it since, rarely). */
int cl_gate_timers_now(void);
/* Then: asks for KernelCh in the next snapshot, or not (`timed`), storing the mask only when
 * that changes it and only while the window wants KernelCh at all. */
void cl_gate_timers(int timed);
/* Stops profiling for the rest of the process: nothing more is recorded and NCCL is asked
 * for no events (when output cannot be written, or the writer cannot start). */
void cl_disable(void);
#endif
