/* core.h: the version-free interface between the ABI shims and the rest of the plugin:
 * communicator contexts (init/finalize), the hot path (start/stop/state), and the process
 * facts the writer needs. Shims call only what is declared here. */
#ifndef COMMLENS_CORE_H
#define COMMLENS_CORE_H
#include "commlens/event.h"
#include "log.h"
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#define CL_MAX_COMMS 4096

/* What NCCL told us about a communicator at init. Strings are copied. */
typedef struct {
  uint64_t hash;            /* commHash (v4) / commId (v5+); 0 before v4 until an event says */
  char name[64];            /* commName (v4+), "" if none */
  int nnodes, nranks, rank; /* -1 when the ABI does not say (v1..v3) */
  int abi;                  /* the profiler ABI version NCCL drives us with */
  cl_logger_fn logfn;
} cl_comm_desc;

/* The writer's view of a communicator, by serial (serials are never reused). */
typedef struct {
  uint32_t serial;
  cl_comm_desc d;
  int cuda_dev;             /* CUDA device current at init, -1 if unknown */
  uint64_t init_ns, fini_ns;/* monotonic; fini_ns = 0 while alive */
} cl_comm_info;

/* Facts about this process, fixed at the first init. */
typedef struct {
  pid_t pid;
  char host[128];
  int rank;                 /* global rank */
  char rank_source[32];
  char job[128];
  int abi;                  /* first ABI version seen */
  int64_t realtime_offset_ns, offset_err_ns;
  uint64_t start_ns;        /* monotonic time of the first init */
  int cuda_dev;
} cl_process_info;

extern cl_process_info cl_proc;
extern _Atomic int cl_enabled;        /* 0 in a fork child that has not re-initialised */

/* ---- lifecycle (not hot) ---- */
/* Registers a communicator; *ctx receives our context, *mask our event mask. Returns 0, or
 * -1 when profiling cannot run for this communicator (a message was logged). */
int cl_comm_init(void **ctx, int *mask, const cl_comm_desc *d);
void cl_comm_finalize(void *ctx);
/* Writer: copy of a communicator's facts; 0 on success, -1 for an unknown serial. */
int cl_comm_lookup(uint32_t serial, cl_comm_info *out);
/* Writer: v1..v3 learn commHash/rank from events; the writer records them here. */
void cl_comm_learn(uint32_t serial, uint64_t hash, int rank);
/* Writer: the time-based capture window is opened and closed from here. */
void cl_window_tick(uint64_t now_ns);
/* Stops profiling for the rest of the process: nothing more is recorded and NCCL is asked
 * for no events (the writer calls this when output cannot be written). */
void cl_disable(void);
/* Total collectives seen (window counting and stats). */
uint64_t cl_coll_count(void);

/* ---- hot path: no allocation, no lock, no system call but the vDSO clock ---- */
/* Serial of a context we handed out, 0 if ctx is NULL, foreign or stale (never dereferenced
 * unless it lies inside our own context table). */
uint32_t cl_ctx_serial(void *ctx);
/* Starts an event; returns the handle for NCCL (never NULL unless disabled). payload_bytes
 * counts the union member used (rank/pad come on top). */
void *cl_event_start(uint32_t comm_serial, unsigned etype, unsigned flags, uint64_t parent,
                     const cl_payload *p, unsigned payload_bytes);
void cl_event_stop(void *handle);
void cl_event_state(void *handle, int state, uint64_t arg);
#endif
