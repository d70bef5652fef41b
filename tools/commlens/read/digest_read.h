/* digest_read.h: reader for per-rank digests (docs/digest.md): checks every block's framing and
 * CRC, decodes each column with every index and length bounded, and hands out rows on the
 * rank's own clock (Unix-epoch ns, like the trace reader's ts). Nothing read is trusted: a
 * damaged block costs only its rows (counted), a torn last block is a truncated file. */
#ifndef COMMLENS_CLI_DIGEST_READ_H
#define COMMLENS_CLI_DIGEST_READ_H
#include "tools/commlens/read/trace_read.h"
#include <stdint.h>

/* One collective or p2p row. Strings are valid UTF-8 (NUL-terminated), valid during the call.
 * Times are clamped to +-2^62; exposed_ns and tail_ch are -1 when not known, src is
 * CL_DG_SRC_* (0: no GPU span: gpu_start = gpu_end = enq_start). */
typedef struct {
  uint64_t comm; const char *comm_name; int32_t rank, nranks;
  int p2p; const char *func, *algo, *proto;
  int64_t seq, bytes; int32_t nchannels, peer;
  int64_t enq_start, enq_end, gpu_start, gpu_end, exposed_ns;
  int src, tail_ch;
  int expo_est;   /* exposed_ns is estimated (the src column's CL_DG_SRC_EST flag) */
  int untimed;    /* the timers' sample left it out (version 3's timers column; 0 before) */
} cl_dg_row;
/* A (comm, channel) aggregate of one block (the reader sums them). */
/* peer -1: KernelCh durations (n, sum_dur, max_dur, max_seq); else proxy-step waits with that
 * peer. waits: gpu, peer, send, recv, flush, recv_gpu (ns). */
typedef struct { uint64_t comm; int32_t channel, peer; int64_t n, sum_dur, max_dur, max_seq, nsteps, w[6]; } cl_dg_chan;
typedef struct {
  void (*coll)(const cl_dg_row *r, void *arg);
  void (*chan)(const cl_dg_chan *c, void *arg);
  void (*step)(int64_t id, int64_t start, int64_t end, void *arg);
  /* the header and stats blocks' JSON text as stored (unchecked: parse before use), if wanted */
  void (*json)(int type, const char *text, size_t n, void *arg);
} cl_dg_sink;

/* 1 when the file starts with the digest magic (a quick look; 0 otherwise or unreadable). */
int cl_digest_is(const char *path);
/* Reads `path` like cl_trace_scan: 0 when it is a digest with a header (info filled:
 * n_events rows, truncated for a torn tail, bad and n_skipped for damaged blocks, the stats
 * of the last stats block), -1 otherwise with info->msg: not a digest, or refused (a header
 * cl_info_refused refuses, or a block claiming more rows than the bytes that carry it: the
 * sink may have had rows of earlier blocks, which the caller drops with the file).
 * header_only stops after the header. sink may be NULL. */
int cl_digest_scan(const char *path, const cl_dg_sink *sink, void *arg, cl_info *info, int header_only);
/* Decodes one file image (the fuzz target's entry; cl_digest_scan maps the file and calls it). */
int cl_digest_scan_mem(const uint8_t *data, size_t len, const cl_dg_sink *sink, void *arg, cl_info *info,
                       int header_only);
#endif
