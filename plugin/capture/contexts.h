/* contexts.h: the communicator registry. The context NCCL holds for a communicator is an
 * address inside our own slot table, so any pointer NCCL passes back can be checked by its
 * address alone (PXN hands us other processes' pointers). Communicators get serials that are
 * never reused; their facts stay readable by serial after finalize. */
#ifndef COMMLENS_CONTEXTS_H
#define COMMLENS_CONTEXTS_H
#include "common/log.h"
#include <stdatomic.h>
#include <stdint.h>

#define CL_MAX_COMMS 4096

/* What NCCL told us about a communicator at init. Strings are copied. */
typedef struct {
  uint64_t hash;            /* commHash (v4) / commId (v5+); 0 before v4 until an event says */
  char name[64];            /* commName (v4+), "" if none */
  int nnodes, nranks, rank; /* -1 when the ABI does not say (v1..v3) */
  int abi;                  /* the profiler ABI version NCCL drives us with */
  cl_logger_fn logfn;
} cl_comm_desc;

/* The registry's view of a communicator, by serial. */
typedef struct {
  uint32_t serial;
  cl_comm_desc d;
  int cuda_dev;             /* CUDA device current at init, -1 if unknown */
  uint64_t init_ns, fini_ns;/* monotonic; fini_ns = 0 while alive */
} cl_comm_info;

/* The slots contexts point into (contexts.c owns them; cl_ctx_serial reads them inline). */
typedef struct { _Alignas(64) _Atomic uint32_t serial; } cl_ctx_slot;
extern cl_ctx_slot cl_ctx_slots[CL_MAX_COMMS];

/* Hot path: the slot index of a context we handed out, -1 if ctx is NULL or foreign. */
static inline int cl_ctx_index(void *ctx) {
  uintptr_t p = (uintptr_t)ctx, base = (uintptr_t)cl_ctx_slots;
  if (p - base >= sizeof cl_ctx_slots || (p - base) % sizeof(cl_ctx_slot)) return -1;
  return (int)((p - base) / sizeof(cl_ctx_slot));
}
/* Hot path: serial of a context we handed out, 0 if ctx is NULL, foreign or stale (never
 * dereferenced unless it lies inside our own slot table). Inline: every event's start asks. */
static inline uint32_t cl_ctx_serial(void *ctx) {
  if (cl_ctx_index(ctx) < 0) return 0;
  return atomic_load_explicit(&((cl_ctx_slot *)ctx)->serial, memory_order_relaxed);
}
/* Registers a communicator; *ctx receives its slot, *serial its serial, *first whether it is
 * the only live one. Returns 0, or -1 (logged) when the table or memory is exhausted. */
int cl_contexts_add(const cl_comm_desc *d, int cuda_dev, void **ctx, uint32_t *serial, int *first);
/* Unregisters a context; returns 1 if that was the last live communicator, 0 otherwise
 * (also for NULL, foreign or already-finalized contexts, which are ignored). */
int cl_contexts_remove(void *ctx);
/* A copy of a communicator's facts; 0 on success, -1 for an unknown serial. */
int cl_comm_lookup(uint32_t serial, cl_comm_info *out);
/* How many serials have been handed out (serials are 1..count, never reused). */
uint32_t cl_comm_count(void);
/* v1..v3 learn commHash/rank from events: the assembler records them here. */
void cl_comm_learn(uint32_t serial, uint64_t hash, int rank);
/* Fork child: no communicator of the parent's exists here. */
void cl_contexts_reset_after_fork(void);
#endif
