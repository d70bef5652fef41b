/* tracks.c: see tracks.h. Owns where each family's track sits (track_sort) and which detail
 * shares a track past the budget (cl_track_async). */
#include "plugin/output/tracks.h"
#include <stdio.h>

static uint64_t track_key(cl_track_family f, uint32_t a, uint32_t b) {
  return ((uint64_t)f << 56) | ((uint64_t)a << 24) | (b & 0xFFFFFFu);
}

/* Top down per rank: the step and exposure summary, the collectives (API calls, then each
 * communicator's groups, enqueue and GPU), the GPU (CUDA launches, kernels per stream), then
 * the detail; numbers grow with the channel or device, so `ch 2` sorts before `ch 10`. */
static int track_sort(cl_track_family f, uint32_t a, uint32_t b) {
  int comm = (int)(a & 0xFFFF);
  switch (f) {
  case CL_TRACK_STEPS: return 1;
  case CL_TRACK_EXPOSED: return 2 + (int)(a & 0xFF);                /* by device */
  case CL_TRACK_API: return 300;
  case CL_TRACK_API_GROUPS: return 301;
  case CL_TRACK_GROUPS: case CL_TRACK_ENQUEUE: case CL_TRACK_COMM_GPU:
    return 1000 + comm * 4 + (int)(f - CL_TRACK_GROUPS);
  case CL_TRACK_CUDA_LAUNCH: return 300000;
  case CL_TRACK_GPU_STREAM: return 300001 + (int)(b & 0xFF);       /* by device */
  default:   /* detail (async in JSON: the viewer orders those), per communicator and channel */
    return 400000 + comm * 4000 + (int)(f - CL_TRACK_CHANNEL_GPU) * 256 + (int)(b & 0xFF);
  }
}

uint32_t cl_track_lane(cl_ct *ct, cl_track_family f, uint32_t a, uint32_t b, const char *name,
                       uint64_t start, uint64_t end) {
  return ct_lane(ct, track_key(f, a, b), name, track_sort(f, a, b), start, end);
}

const char *cl_track_async(cl_ct *ct, cl_track_family f, uint32_t a, uint32_t b, const char *name, char *buf,
                           size_t n) {
  /* one shared track for all detail past the budget, its slot kept free below the budget; its
   * key has all top bits set, which no family's has */
  const char *t = ct_async_track(ct, track_key(f, a, b), name, 0xFFull << 56, CL_TRACK_FOLD_NAME, CL_TRACK_BUDGET - 1);
  snprintf(buf, n, "%s", t);
  return buf;
}
