/* assemble.h: turns ring records into finished events. Pairs starts with stops (across
 * threads, out of order), keeps parents until their children finish, derives a collective's
 * completion and GPU span from its children, maps GPU timers onto the host clock, keeps the
 * totals (stats, summary, most exposed), and hands finished events to plugin/output/ to be
 * drawn. Its only links to the stages above it are the lookups it is given. Format thread
 * only. */
#ifndef COMMLENS_ASSEMBLE_H
#define COMMLENS_ASSEMBLE_H
#include "commlens/event.h"
#include "exporters/chrome_trace.h"
#include "exporters/summary.h"
#include "exporters/strbuf.h"
#include "plugin/capture/contexts.h"   /* cl_comm_info, the type the lookup fills */
#include "plugin/gpu/gpu_join.h"
#include "plugin/output/nccl_slices.h"
#include "plugin/output/participants.h"
#include <stdint.h>

typedef struct cl_asm cl_asm;

typedef struct {
  uint64_t records, starts, stale, foreign, orphans, open_now, writer_drops;
  uint64_t colls_done, colls_timed, implausible_gpu;
  uint64_t ops_started;      /* collectives (kernel and copy-engine) and point-to-points begun */
  uint64_t colls_gpu_lost;   /* finished while another tool held CUPTI (cl_gj_lost) */
  uint64_t spans_folded;     /* KernelCh spans folded into their collective with no event made */
  uint64_t cupti_rejected;   /* CUPTI spans left for the collective's own KernelCh span, the two
                                more than CL_ASM_CUPTI_KCH_TOL_NS apart */
  uint64_t phases_lost;      /* v7 kernel phases with no KernelCh to nest under, or unusable */
  uint64_t colls_expo_est;   /* exposure estimated: outside CUPTI's sampling windows */
} cl_asm_stats;

/* What the assembler needs to know from outside: a communicator's facts by serial (0 on
 * success), what v1..v3 events taught about one (hash, rank), and the OS thread id of a ring's
 * thread serial (0 unknown; CUPTI's launch records carry OS thread ids). */
typedef struct {
  int (*comm_lookup)(uint32_t serial, cl_comm_info *out);
  void (*comm_learn)(uint32_t serial, uint64_t hash, int rank);
  int (*os_tid)(uint32_t thread_serial);
} cl_asm_deps;

/* Draws each event into its communicator's participant (one GPU's trace) of `parts`, with
 * that participant's summary, counts and most exposed collectives; gj: the CUPTI join
 * (borrowed; NULL without CUPTI): collectives take their kernel's span from it and wait for
 * their exposure. */
cl_asm *cl_asm_new(cl_parts *parts, cl_gj *gj, const cl_asm_deps *deps);
/* Frees the assembler and every event still open (not the participants or join it was lent). */
void cl_asm_free(cl_asm *a);
/* Feeds one record (header + payload slots). Records of one thread arrive in order; across
 * threads, a child may arrive before its parent (tolerated). */
void cl_asm_feed(cl_asm *a, const cl_rec *r);
/* How long a collective waits: for its KernelCh counts when it has none, and for its kernel's
 * CUPTI record when one is expected. */
#define CL_ASM_GRACE_NS 200000000ull
#define CL_ASM_CUPTI_WAIT_NS 2500000000ull
/* How far a CUPTI kernel span may lie from the collective's own KernelCh span (each end) and
 * still be taken as its kernel's (asm_finish.c cupti_agrees). */
#define CL_ASM_CUPTI_KCH_TOL_NS 500000ull
/* Finishes collectives whose children are done or who waited longer than the grace time. */
void cl_asm_tick(cl_asm *a, uint64_t now, int final);
/* Every record committed to a ring before `t` has been fed (the format thread, after a pass
 * that read that far). The waits for records not read yet (a child's parent; a collective's
 * channels, children and kernel) are then measured to it, not to the tick's `now`: a reader
 * starved on a busy machine does not give up on records still in the rings. Never said (tests,
 * streams fed whole): they run to `now`. */
void cl_asm_read_until(cl_asm *a, uint64_t t);
void cl_asm_get_stats(const cl_asm *a, cl_asm_stats *s);
/* `dst` starts from the GPU clocks `src` has calibrated so far (a flight dump's assembler, from
 * the main one's: its KernelCh are placed at once instead of held until it calibrates its own). */
void cl_asm_clocks_from(cl_asm *dst, const cl_asm *src);
/* The participant's GPU clock offset as a JSON array (for its trace tail). */
void cl_asm_offsets_json(const cl_asm *a, const cl_part *p, cl_sb *b);
/* A participant's exposure totals and most exposed collectives, as JSON ("null" without
 * CUPTI). */
void cl_asm_exposure_json(cl_asm *a, cl_part *p, cl_sb *b);
#endif
