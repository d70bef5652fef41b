/* digest.h: the per-collective digest of one participant (docs/digest.md): finished
 * collectives, channel aggregates and NVTX steps kept as compact rows, and encoded into
 * independent, compressed blocks at each flush. Writer threads only; nothing here formats
 * JSON per collective or touches a file. */
#ifndef COMMLENS_DIGEST_H
#define COMMLENS_DIGEST_H
#include "common/digest_codec.h"
#include <stdint.h>

/* Rows held at most between two flushes; past it a row is counted lost (cl_digest_lost). */
#define CL_DG_MAX_ROWS CL_DG_BLOCK_ROWS

/* One finished collective or p2p operation (times: monotonic ns). Strings are borrowed for
 * the call; exposed_ns < 0 and tail_ch < 0 when not known; src: CL_DG_SRC_*. static_names:
 * func, algo and proto are strings whose text never changes (NCCL's names are, by its ABI), so
 * an address met before in the block stands for its text; 0: each is compared in full. */
typedef struct {
  uint64_t comm_hash; const char *comm_name; int rank, nranks;
  int p2p; const char *func, *algo, *proto;
  uint64_t seq, bytes; int nchannels, peer;
  uint64_t enq_start, enq_stop;
  int src; uint64_t gpu_start, gpu_end;
  int64_t exposed_ns; int tail_ch;
  int expo_est;   /* exposed_ns estimated (sampled mode): written as src | CL_DG_SRC_EST */
  int static_names;
  int untimed;    /* left out by the timers' sample (COMMLENS_TIMERS=sampled): the timers column */
} cl_dg_coll;

typedef struct cl_digest cl_digest;
cl_digest *cl_digest_new(void);
void cl_digest_free(cl_digest *d);
void cl_digest_coll(cl_digest *d, const cl_dg_coll *c);
/* One channel's share of a collective (a KernelCh on the host clock): its duration, for the
 * (comm, channel) aggregates; seq -1 when its collective is not known. */
void cl_digest_chan(cl_digest *d, uint64_t comm_hash, int channel, uint64_t dur_ns, int64_t seq);
/* One proxy step of (comm, channel) with peer (-1 unknown): its time in each wait phase
 * (gpu, peer, send, recv, flush, recv_gpu: CL_DG_NWAITS of them). */
#define CL_DG_NWAITS 6
void cl_digest_proxy_step(cl_digest *d, uint64_t comm_hash, int channel, int peer, const uint64_t w[CL_DG_NWAITS]);
/* One NVTX step window [start, end]. */
void cl_digest_step(cl_digest *d, uint64_t id, uint64_t start, uint64_t end);
/* Rows that did not fit (CL_DG_MAX_ROWS) or whose encoding ran out of memory. */
uint64_t cl_digest_lost(const cl_digest *d);
/* Rows encoded so far (the digest's "events"). */
uint64_t cl_digest_taken(const cl_digest *d);
/* Appends the waiting rows to out as framed blocks (collectives, channels, steps) and forgets
 * them. 0, or -1 when out of memory (the rows are counted lost). */
int cl_digest_take(cl_digest *d, cl_dg_buf *out);
/* The file's start: the magic and version, then the header block holding `json` (the same
 * header object the trace starts with). */
int cl_digest_file_head(cl_dg_buf *out, const char *json, size_t n);
#endif
