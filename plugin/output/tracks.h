/* tracks.h: the one registry of trace track families. Every track the plugin draws belongs to
 * a family named here; its key (what exporters/chrome_trace.c groups lanes by) and its place
 * in the viewer come from here and nowhere else, so no two families can ever share a key. */
#ifndef COMMLENS_TRACKS_H
#define COMMLENS_TRACKS_H
#include "exporters/chrome_trace.h"
#include <stddef.h>
#include <stdint.h>

/* Each family's fields (a, b) in brackets; unused fields are 0. */
typedef enum {
  CL_TRACK_API = 1,          /* NCCL API calls of one thread [thread serial] */
  CL_TRACK_API_GROUPS,       /* ncclGroupStart/End of one thread [thread serial] */
  CL_TRACK_GROUPS,           /* a communicator's groups [comm serial] */
  CL_TRACK_ENQUEUE,          /* a communicator's enqueued collectives and p2p [comm] */
  CL_TRACK_COMM_GPU,         /* a communicator's GPU spans [comm] */
  CL_TRACK_CHANNEL_GPU,      /* KernelCh [comm, channel] */
  CL_TRACK_PROXY_SEND,       /* proxy send ops [comm, channel] */
  CL_TRACK_PROXY_RECV,       /* proxy recv ops [comm, channel] */
  CL_TRACK_STEPS_SEND,       /* proxy send steps and their phases [comm, channel] */
  CL_TRACK_STEPS_RECV,       /* proxy recv steps and their phases [comm, channel] */
  CL_TRACK_NET,              /* network plugin events [comm] */
  CL_TRACK_PROXY_CTRL,       /* the proxy progress thread [comm] */
  CL_TRACK_COPY_ENGINE,      /* copy-engine collectives [comm] */
  CL_TRACK_GPU_STREAM,       /* CUPTI kernels of one stream [stream id, device] */
  CL_TRACK_EXPOSED,          /* exposed communication of one GPU [device] */
  CL_TRACK_CUDA_LAUNCH,      /* CUDA launch calls of one thread [OS thread id] */
  CL_TRACK_STEPS,            /* NVTX steps with their exposure [] */
  CL_TRACK_NOT_DONE,         /* flight dumps: collectives not finished at the dump [comm] */
  CL_TRACK__COUNT
} cl_track_family;

/* Top-level tracks per rank that the detail may fill (docs/decisions/0034-track-budget.md):
 * past it, detail not yet drawn goes to one shared track, CL_TRACK_FOLD_NAME. */
#define CL_TRACK_BUDGET 20u
#define CL_TRACK_FOLD_NAME "more detail (past the track budget)"
/* Of the budget, the detail leaves CL_TRACK_RESERVE for what comes later and cannot fold into
 * an async track (another communicator's enqueue and GPU tracks, exposure, steps), and a
 * communicator's own enqueue and GPU tracks leave CL_TRACK_SHARED for the shared ones (the
 * overlaps and the further communicators of each kind: cl_track_lane). */
#define CL_TRACK_RESERVE 4u
#define CL_TRACK_SHARED 4u

/* The lane (tid) of the family's track (a, b) free for [start, end]; `name` names a new track.
 * A communicator's ENQUEUE and COMM_GPU tracks have one lane each; overlaps and communicators
 * past the budget go to shared tracks of their kind (tracks.c).
 * Keys: the family in the top 8 bits, `a` (32 bits) below it, `b` (24 bits, the rest masked
 * off) at the bottom, so distinct (family, a, b) never share a track. */
uint32_t cl_track_lane(cl_ct *ct, cl_track_family f, uint32_t a, uint32_t b, const char *name,
                       uint64_t start, uint64_t end);
/* The detail (GROUPS, CHANNEL_GPU, PROXY_SEND/RECV, STEPS_SEND/RECV, NET, PROXY_CTRL,
 * COPY_ENGINE: what carries no flow) is drawn as async slices: the name of the async track of
 * (f, a, b) into buf: `name` while the rank has room under CL_TRACK_BUDGET when first asked
 * (one slot kept for the shared track), else CL_TRACK_FOLD_NAME. */
const char *cl_track_async(cl_ct *ct, cl_track_family f, uint32_t a, uint32_t b, const char *name, char *buf,
                           size_t n);
#endif
