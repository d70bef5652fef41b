/* gpu_slices.h: how the GPU side is drawn: CUPTI kernels per stream, CUDA launch calls per
 * thread, the exposed pieces of communication per device, NVTX steps with their exposure, and
 * the per-window exposure counters. Drawing only: the GPU join decides what to draw. */
#ifndef COMMLENS_GPU_SLICES_H
#define COMMLENS_GPU_SLICES_H
#include "exporters/chrome_trace.h"
#include "plugin/gpu/cupti.h"
#include "plugin/gpu/exposure.h"

/* A kernel on its stream's track; `nccl`: NCCL's (named so on the track and in args). */
void cl_draw_gpu_kernel(cl_ct *ct, const cl_gpu_activity *k, int nccl);
/* A CUDA launch call under the thread that made it; `nccl`: one of NCCL's launches. */
/* A memcpy or memset record (COMMLENS_CUPTI=full) on its stream's track: copy-engine
 * collectives' copies (NCCL 2.28+), and the application's. */
void cl_draw_gpu_copy(cl_ct *ct, const cl_gpu_activity *c);
void cl_draw_cuda_launch(cl_ct *ct, const cl_gpu_activity *l, int nccl);
/* The exposed pieces of one collective's span on its device's exposure track. */
void cl_draw_exposed(cl_ct *ct, const cl_expo_result *r);
/* One NVTX step with its communication and exposed time. */
void cl_draw_step(cl_ct *ct, const cl_expo_window *w);
/* Exposed and total communication of one window, in microseconds, as counter tracks. */
void cl_draw_window_counters(cl_ct *ct, const cl_expo_window *w);
#endif
