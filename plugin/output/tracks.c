/* tracks.c: see tracks.h. The sort order: API tracks of threads first, then CUDA launches and
 * the NVTX steps, the GPU streams and exposure per device, then each communicator's tracks
 * (groups, enqueue, GPU, per-channel GPU, proxy and steps, net, progress, copy engine). */
#include "plugin/output/tracks.h"

static uint64_t track_key(cl_track_family f, uint32_t a, uint32_t b) {
  return ((uint64_t)f << 56) | ((uint64_t)a << 24) | (b & 0xFFFFFFu);
}

static int track_sort(cl_track_family f, uint32_t a, uint32_t b) {
  switch (f) {
  case CL_TRACK_API: return 1;
  case CL_TRACK_API_GROUPS: return 2;
  case CL_TRACK_CUDA_LAUNCH: return 3;
  case CL_TRACK_STEPS: return 4;
  case CL_TRACK_GPU_STREAM: return 80 + (int)b;      /* by device */
  case CL_TRACK_EXPOSED: return 90;
  default:   /* per communicator, in this enum's order, then by channel */
    return 100 + (int)a * 1000 + (int)(f - CL_TRACK_GROUPS) * 70 + (int)b;
  }
}

uint32_t cl_track_lane(cl_ct *ct, cl_track_family f, uint32_t a, uint32_t b, const char *name,
                       uint64_t start, uint64_t end) {
  return ct_lane(ct, track_key(f, a, b), name, track_sort(f, a, b), start, end);
}
