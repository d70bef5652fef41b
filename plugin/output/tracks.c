/* tracks.c: see tracks.h. Owns where each family's track sits (track_sort) and which detail
 * shares a track past the budget (cl_track_async). */
#include "plugin/output/tracks.h"
#include <stdio.h>
#include <string.h>

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
  case CL_TRACK_GROUPS: case CL_TRACK_ENQUEUE: case CL_TRACK_COMM_GPU:   /* the shared ones last */
    return 1000 + comm * 4 + (int)(f - CL_TRACK_GROUPS);
  case CL_TRACK_CUDA_LAUNCH: return 300000;
  case CL_TRACK_GPU_STREAM: return 300001 + (int)(b & 0xFF);       /* by device */
  default:   /* detail (async in JSON: the viewer orders those), per communicator and channel */
    return 400000 + comm * 4000 + (int)(f - CL_TRACK_CHANNEL_GPU) * 256 + (int)(b & 0xFF);
  }
}

/* A communicator's enqueue and GPU tracks carry the flows, so they stay thread tracks; what
 * would multiply them is bounded instead. Each communicator gets one lane of each (made while
 * the rank has room for it and for the shared tracks below); a slice that overlaps its lane
 * goes to the kind's one shared track of overlaps (lanes there as needed: how many collectives
 * of any communicator overlap at once), and a communicator past the budget draws on the kind's
 * one shared track of further communicators (its slices name their communicator in args). */
#define SHARED_FOLD 0xFFFFFFFEu
#define SHARED_OVERLAP 0xFFFFFFFFu
static uint32_t core_lane(cl_ct *ct, cl_track_family f, uint32_t a, const char *name, uint64_t start, uint64_t end) {
  const char *kind = f == CL_TRACK_ENQUEUE ? "enqueue" : "GPU";
  char nm[96];
  uint64_t key = track_key(f, a, 0);
  int made = ct_lane_made(ct, key);
  int room = made || ct_track_count(ct) + 1 + CL_TRACK_SHARED < CL_TRACK_BUDGET;   /* +1: its pair */
  uint32_t tid = ct_lane_bounded(ct, key, name, track_sort(f, a, 0), start, end, 1, room);
  if (tid && !made) {
    /* the communicator's other track is made with it, empty, so that detail drawn before its
     * first slice cannot take its place ("comm X: enqueue" -> "comm X: GPU") */
    cl_track_family g = f == CL_TRACK_ENQUEUE ? CL_TRACK_COMM_GPU : CL_TRACK_ENQUEUE;
    char pair[112];
    size_t n = strlen(name), k = strlen(kind);
    if (n >= k && !strcmp(name + n - k, kind))
      snprintf(pair, sizeof pair, "%.*s%s", (int)(n - k), name, g == CL_TRACK_ENQUEUE ? "enqueue" : "GPU");
    else
      snprintf(pair, sizeof pair, "%s (%s)", name, g == CL_TRACK_ENQUEUE ? "enqueue" : "GPU");
    if (!ct_lane_made(ct, track_key(g, a, 0))) ct_lane_bounded(ct, track_key(g, a, 0), pair, track_sort(g, a, 0), 0, 0, 1, 1);
  }
  if (tid) return tid;
  if (!made) {
    snprintf(nm, sizeof nm, "%s: more communicators (past the track budget)", kind);
    tid = ct_lane_bounded(ct, track_key(f, SHARED_FOLD, 0), nm, track_sort(f, SHARED_FOLD, 0), start, end, 1, 1);
    if (tid) return tid;
  }
  snprintf(nm, sizeof nm, "%s: overlapping collectives (every communicator)", kind);
  return ct_lane(ct, track_key(f, SHARED_OVERLAP, 0), nm, track_sort(f, SHARED_OVERLAP, 0), start, end);
}

uint32_t cl_track_lane(cl_ct *ct, cl_track_family f, uint32_t a, uint32_t b, const char *name,
                       uint64_t start, uint64_t end) {
  if (f == CL_TRACK_ENQUEUE || f == CL_TRACK_COMM_GPU) return core_lane(ct, f, a, name, start, end);
  return ct_lane(ct, track_key(f, a, b), name, track_sort(f, a, b), start, end);
}

const char *cl_track_async(cl_ct *ct, cl_track_family f, uint32_t a, uint32_t b, const char *name, char *buf,
                           size_t n) {
  /* one shared track for all detail past the budget, its slot kept free below the budget; its
   * key has all top bits set, which no family's has */
  const char *t = ct_async_track(ct, track_key(f, a, b), name, 0xFFull << 56, CL_TRACK_FOLD_NAME,
                                 CL_TRACK_BUDGET - 1 - CL_TRACK_RESERVE);
  snprintf(buf, n, "%s", t);
  return buf;
}
