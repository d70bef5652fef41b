/* hotpath.h: the hot path the ABI shims call (plugin/capture/hotpath.c), for every event NCCL
 * starts, stops or updates. */
#ifndef COMMLENS_HOTPATH_H
#define COMMLENS_HOTPATH_H
#include "commlens/event.h"
#include <stdint.h>

/* ---- hot path: no allocation, no lock, no system call but the vDSO clock ---- */
/* Starts an event; returns the handle for NCCL (never NULL unless disabled). payload_bytes
 * counts the union member used (rank/pad come on top). */
void *cl_event_start(uint32_t comm_serial, unsigned etype, unsigned flags, uint64_t parent,
                     const cl_payload *p, unsigned payload_bytes);
/* cl_event_start for a KernelCh (CL_EV_KERNEL_CH; its payload's fields as arguments). */
void *cl_event_kch_start(uint32_t comm_serial, unsigned flags, uint64_t parent, int32_t rank, unsigned channel,
                         uint64_t ptimer);
/* An API or KernelLaunch event not recorded (gate.h cl_skip_launch_events): counted; returns
 * the handle NCCL gets, NULL. */
void *cl_event_skipped(void);
/* An event nothing reads but whose handle NCCL tests (a Group: gate.h cl_digest_only): counted
 * with the skipped ones; returns CL_ID_QUIET. */
void *cl_event_quiet(void);
void cl_event_stop(void *handle);
void cl_event_state(void *handle, int state, uint64_t arg);
#endif
