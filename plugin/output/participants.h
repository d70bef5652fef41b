/* participants.h: who the trace is about. A participant is one GPU of the process (a
 * communicator rank on its CUDA device), not the process: one process may drive several GPUs
 * (JAX, nccl-tests -g N, ncclCommInitAll, a thread per GPU), and each gets its own world rank,
 * its own Chrome-trace body and file, summary, counts and most exposed collectives. Events are
 * routed by their communicator's device; CUPTI records by their device. Format thread only
 * (and the exit path once it has stopped). */
#ifndef COMMLENS_PARTICIPANTS_H
#define COMMLENS_PARTICIPANTS_H
#include "exporters/chrome_trace.h"
#include "exporters/digest.h"
#include "exporters/summary.h"
#include "exporters/prom.h"
#include "plugin/capture/contexts.h"
#include "plugin/output/rank_output.h"
#include <stdint.h>

#define CL_MAX_PARTS 64     /* participants of one process; more GPUs share the last */
#define CL_NTOP 10          /* most exposed collectives kept per participant */

typedef struct { const char *func; uint64_t seq, comm, exposed, dur; } cl_top;

#define CL_SPREAD_BUCKETS 96   /* up to 2^25 ns (33 ms); longer in the last */

typedef struct cl_part {
  int index;                /* 0.. in creation order */
  int dev;                  /* CUDA device, -1 unknown */
  int rank;                 /* world rank (cl_parts_settle_rank), -1 before */
  char rank_source[48];     /* where the rank came from ("RANK", "comm", "COMMLENS_RANK", ...) */
  int comm_rank_max;        /* nranks of the largest communicator the rank was taken from */
  cl_ct *ct;                /* its trace body; its pid is the rank guessed at creation */
  int trace;                /* ct is drawn (COMMLENS_OUTPUT has trace): else nothing formats JSON */
  cl_digest *dg;            /* its digest rows (COMMLENS_OUTPUT has digest), else NULL */
  cl_summary *sum;
  uint64_t colls_done, colls_timed;
  uint64_t colls_gpu_lost;  /* ... of them without CUPTI's timing: another tool held CUPTI */
  uint64_t colls_expo_est;  /* ... of them with exposure estimated (outside CUPTI's sampling windows) */
  uint64_t est_comm_ns, est_expo_ns;   /* their GPU time and estimated exposed time (sums) */
  uint64_t colls_expo_unknown;   /* ... of them before any was measured: exposure not known, not in est_expo_ns */
  uint64_t est_check_n, est_check_pred_ns, est_check_meas_ns;   /* estimate vs measured, in windows */
  uint64_t colls_one_ch;    /* ... GPU-timed on one channel (COMMLENS_CHANNELS=sampled, between windows) */
  uint64_t colls_kch;       /* ... timed by NCCL's kernel-channel timers (a KernelCh came) */
  uint64_t colls_untimed;   /* ... left out by the timers' sample (COMMLENS_TIMERS=sampled): host times only */
  /* collectives with every channel timed, by how far one channel's span can be from theirs: the
   * larger of latest start - earliest start and latest end - earliest end (common/loghist.h) */
  uint32_t ch_spread_hist[CL_SPREAD_BUCKETS];
  cl_top top[CL_NTOP];      /* most exposed first */
  cl_prom_comms prom;       /* per communicator, for COMMLENS_PROM */
  /* ---- the writer's ---- */
  cl_rank_output out;
  int out_state;            /* 0: no file yet, 1: open, -1: failed or off */
  uint64_t dg_stats_at;     /* when the digest's stats block was last written */
} cl_part;

/* What the participants need from outside: the communicator registry (count of serials
 * handed out, facts by serial), the launcher's rank for this process (-1: none) and its
 * variable's name, the forced rank (COMMLENS_RANK, -1: none), the process's id and the clock
 * offset for the trace bodies. */
typedef struct {
  uint32_t (*comm_count)(void);
  int (*comm_lookup)(uint32_t serial, cl_comm_info *out);
  int env_rank;
  const char *env_source;
  int forced_rank;
  int os_pid;
  int64_t epoch_offset_ns;
  unsigned output;           /* CL_OUT_* the participants write; 0: COMMLENS_OUTPUT's (a flight
                                dump is a trace whatever the run writes) */
} cl_parts_deps;

typedef struct cl_parts cl_parts;

cl_parts *cl_parts_new(const cl_parts_deps *deps);
/* Frees every participant's body and summary (not its file: the writer closes those). */
void cl_parts_free(cl_parts *ps);
/* The participant of communicator `serial` (by its device), created on first use. Never NULL
 * but when out of memory with no participant at all. */
cl_part *cl_parts_of_comm(cl_parts *ps, uint32_t serial);
/* The participant of CUDA device `dev`: the existing one, or one made for a registered
 * communicator on `dev`; a device no communicator uses (a compute-only GPU, -1) goes to the
 * first participant. */
cl_part *cl_parts_of_dev(cl_parts *ps, int dev);
/* Makes a participant for every device a registered communicator uses (so files exist for
 * GPUs whose events have not come yet). */
void cl_parts_discover(cl_parts *ps);
size_t cl_parts_count(const cl_parts *ps);
cl_part *cl_parts_at(cl_parts *ps, size_t i);
/* Settles a participant's world rank from what is registered now (the writer calls it
 * before naming the file): COMMLENS_RANK (plus the GPU's place among the process's GPUs);
 * the launcher's rank when the process has one GPU; else the GPU's rank in its largest
 * communicator; else the launcher's rank plus the GPU's place; else the OS pid. */
void cl_parts_settle_rank(cl_parts *ps, cl_part *p);
/* Bytes formatted and not yet written, over all participants. */
size_t cl_parts_pending_bytes(cl_parts *ps);
/* Keeps the CL_NTOP most exposed collectives of `p` (func is static or interned). */
void cl_part_top_add(cl_part *p, const char *func, uint64_t seq, uint64_t comm, uint64_t exposed, uint64_t dur);
/* A collective with every channel timed, in ch_spread_hist: its channels' starts span
 * `start_spread` ns and their ends `end_spread`. */
void cl_part_spread_add(cl_part *p, uint64_t start_spread, uint64_t end_spread);
#endif
