/* plugin.h: the version-free interface the ABI shims (plugin/abi/) call, and nothing else
 * does: a communicator's init and finalize (plugin/process.c) and the hot path
 * (plugin/capture/hotpath.c). */
#ifndef COMMLENS_PLUGIN_H
#define COMMLENS_PLUGIN_H
#include "commlens/event.h"
#include "plugin/capture/contexts.h"
#include <stdint.h>

/* ---- lifecycle (not hot) ---- */
/* Registers a communicator; *ctx receives our context, *mask our event mask. Returns 0, or
 * -1 when profiling cannot run for this communicator (a message was logged). */
int cl_comm_init(void **ctx, int *mask, const cl_comm_desc *d);
void cl_comm_finalize(void *ctx);

/* ---- hot path: no allocation, no lock, no system call but the vDSO clock ---- */
/* Starts an event; returns the handle for NCCL (never NULL unless disabled). payload_bytes
 * counts the union member used (rank/pad come on top). */
void *cl_event_start(uint32_t comm_serial, unsigned etype, unsigned flags, uint64_t parent,
                     const cl_payload *p, unsigned payload_bytes);
void cl_event_stop(void *handle);
void cl_event_state(void *handle, int state, uint64_t arg);
#endif
