/* digest_trace.h: a digest written out as a commlens trace (docs/trace-format.md): its header,
 * each collective's enqueue ("coll") and GPU span ("coll_gpu", with exposure, tail channel and
 * source) on per-communicator lanes that never overlap, its NVTX steps, and its last stats. What
 * `commlens merge` reads where a rank has only a digest. */
#ifndef COMMLENS_CLI_DIGEST_TRACE_H
#define COMMLENS_CLI_DIGEST_TRACE_H
#include <stdint.h>
#include <stdio.h>

/* The tracks (tids) a digest's slices go on, one family per (communicator, kind: 0 enqueue,
 * 1 GPU, 2 NVTX steps), a lane per overlap: the converter draws on them and the loader
 * (model/load.c) records them, placing the same slices in the same order, so merge's cross-rank
 * flows find the slices. */
#define CL_DG_LANES 64
typedef struct { uint64_t comm; int kind, lanes; int64_t end[CL_DG_LANES]; uint32_t tid0; } cl_dg_family;
typedef struct { cl_dg_family *fam; size_t n, cap; uint32_t next_tid; } cl_dg_lanes;
/* The tid of a lane of (comm, kind) free at [s, e]; *lane_no: its lane (0..), *is_new: first use. */
uint32_t cl_dg_lane(cl_dg_lanes *l, uint64_t comm, int kind, int64_t s, int64_t e, int *lane_no, int *is_new);
void cl_dg_lanes_free(cl_dg_lanes *l);

/* Writes the trace of digest `path` to out (streamed: memory grows with communicators and lanes,
 * not with rows). 0, or -1 when the digest cannot be read (msg, n bytes, says why). */
int cl_digest_trace(const char *path, FILE *out, char *msg, size_t n);
#endif
