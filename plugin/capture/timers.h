/* timers.h: which collectives NCCL's kernel-channel timers (KernelCh) time, when they are
 * sampled (COMMLENS_TIMERS=sampled, gate.h cl_gate_sampling). NCCL copies its process-global
 * mask into each operation at the operation's API call, before the plugin hears of that call:
 * so each API call decides the mask the next one will see, predicted as the communicator and
 * kind that followed this one last time on this thread. What an operation got is said to its
 * Coll or P2p event through the API event's handle (event.h CL_ID_QUIET_API_*), or for a
 * recorded API event through cl_timers_untimed_id.
 *
 * The rule: a communicator's collective calls (and apart, its p2p calls) are counted; call k is
 * timed when its run of 4 calls (k / 4) hashes, with the communicator's hash, to a multiple of
 * 2^level. Every rank counts the same calls of a communicator, so every rank times the same
 * instances without talking; a higher level times a subset of a lower one's. The level is set
 * again every 1024 calls from their rate: the timed ones' cost (timers_cost_ns each) at most
 * timers_budget_ppm of wall time, split between the communicators of one GPU that have calls.
 * A lower level waits until the higher one has gone unconfirmed for CL_TIMERS_HOLD_NS
 * (cl_timers_hold): an epoch in which one rank stalled reads a lower rate there only.
 * Level 0, every call timed, until then and while the calls are few. A CUDA graph's capture is
 * timed from its second call on (the first follows the rule: the plugin hears of a capture only
 * at its first call): NCCL fixes a captured call's mask at the capture, and without KernelCh an
 * intra-node collective's replays give no event at all. Captured-ness is predicted per
 * communicator, like the rest, so that ranks driven by one thread decide alike. */
#ifndef COMMLENS_TIMERS_H
#define COMMLENS_TIMERS_H
#include <stdint.h>

#define CL_TIMERS_RUN_BITS 2     /* calls are timed in runs of 4 */
#define CL_TIMERS_EPOCH 1024     /* calls of a communicator and kind between two level choices */
#define CL_TIMERS_MAX_LEVEL 10     /* 1 run in 1024: past 500,000 collectives/s at the default budget */
#define CL_TIMERS_HOLD_NS 500000000ull   /* how long a level holds against lower rates */
enum { CL_TIMERS_COLL = 0, CL_TIMERS_P2P = 1 };

/* A communicator's init (its context `ctx`, commHash, CUDA device): its counts start at 0. */
void cl_timers_attach(void *ctx, uint64_t hash, int dev);
/* Its finalize: its calls stop counting against its GPU's budget. */
void cl_timers_detach(void *ctx);
/* Hot path, at each CollApi or P2pApi start (`kind` CL_TIMERS_*; `captured`: into a CUDA graph):
 * counts the call, moves the level at an epoch's end, asks for the next call's mask; returns 1
 * when this call's operation is timed (its snapshot had KernelCh), 0 when not. */
int cl_timers_call(void *ctx, int kind, int captured);
/* Whether call `k` of a communicator with hash `hash` and kind `kind` is timed at `level`. */
int cl_timers_rule(uint64_t hash, int kind, uint64_t k, unsigned level);
/* The level that keeps `calls` calls in `dt_ns` within the budget, shared by `nshare`
 * communicators of the GPU. */
unsigned cl_timers_level(uint64_t calls, uint64_t dt_ns, unsigned nshare);
/* The level an epoch ending at `now` takes, at `cur` and reading `want` from its rate: a higher
 * or the same level at once, which holds it until now + CL_TIMERS_HOLD_NS (*hold_until); a lower
 * one once that has passed. Two ranks of one job read the same rate but in an epoch where one of
 * them stalled (CUPTI's attach, a preempted thread), whose lower level would time instances the
 * others do not; a rate that has really fallen is followed within the hold and an epoch. */
unsigned cl_timers_hold(unsigned cur, unsigned want, uint64_t now, uint64_t *hold_until);
/* A recorded API event whose operation is not timed (cl_timers_note_untimed), so that its Coll or
 * P2p event says so: a small table by id; 0 for any other id (forgotten ones: taken as timed). */
void cl_timers_note_untimed(uint64_t api_id);
int cl_timers_untimed_id(uint64_t api_id);

/* What the writer reports (summed over every communicator since the process started). */
typedef struct {
  uint64_t calls, timed;         /* API calls seen, and of those the ones timed */
  uint64_t level_changes;        /* epochs whose level differed from the one before */
  unsigned max_level;            /* the highest level any communicator reached */
} cl_timers_stats;
void cl_timers_get_stats(cl_timers_stats *s);
/* Fork child: no communicator of the parent's exists here. */
void cl_timers_reset_after_fork(void);
#endif
