/* load.h: the job model the CLI builds from a directory of per-rank traces: which files
 * are usable, and per rank only what the analyses need (collective spans, per-channel
 * aggregates, step markers). Also the cross-rank instance table and the clock alignment. */
#ifndef COMMLENS_CLI_LOAD_H
#define COMMLENS_CLI_LOAD_H
#include "tools/commlens/read/trace_read.h"
#include "tools/commlens/base/util.h"
#include "tools/commlens/model/attempts.h"
#include "tools/commlens/model/timers.h"
#include <stdint.h>

/* One coll_gpu slice on one rank (times in the rank's own clock, ns). enq: the host enqueue of
 * the same collective (its "coll" slice: the k-th (comm, func, seq) of each kind pairs up),
 * CL_NO_TIME when the trace has none. */
#define CL_NO_TIME INT64_MIN
/* v7 (cl_coll_v7): tag = the application's userTag (has_tag); gwait/gwork = the kernel phases'
 * initial_sync (the GPU's own wait for its peers) and compute, the longest channel's (has_phase). */
typedef struct {
  uint64_t comm; int64_t seq, start, end, bytes, enq;
  int64_t exposed;                      /* exposed communication (ns), -1 when not known */
  int32_t tid, nranks; uint32_t inst;   /* inst: index into cl_job.inst, UINT32_MAX if none */
  uint32_t mem;                         /* with inst: its member's index into cl_job.mem, so that a
                                           pass over the members can go rank by rank, in memory order */
  uint16_t func; uint8_t p2p, tid_ok;
  uint8_t has_tag, has_phase, has_exposed;
  uint8_t ce;                           /* a copy-engine collective: its span is its copies, after the
                                           peers' sync, so its start is no arrival (its enqueue is) */
} cl_coll;
/* v7: a collective's tag (has_tag) and kernel phases (has_phase), kept beside colls (cl_rank.v7)
 * only by a rank whose trace has any: 24 bytes a collective the other ranks do not carry. */
typedef struct { uint64_t tag; int64_t gwait, gwork; } cl_coll_v7;

typedef struct { int peer; int64_t wait; } cl_peerwait;
/* Aggregates for one (comm, channel) of one rank. */
typedef struct {
  uint64_t comm; int channel;
  int64_t n, sum_dur, max_dur, max_seq, tail;  /* kernel_ch slices, longest (its seq), tail count */
  int64_t nsteps, w_gpu, w_peer, w_send, w_recv, w_flush, w_recv_gpu;   /* proxy_step */
  CL_VEC(cl_peerwait) peers;                   /* peer + recv wait per peer */
} cl_chan;

typedef struct { long step; int64_t start, end; } cl_step;
/* One kernel_ch slice's end (own clock): the channel verdict's arrivals (analyse/channels.c). */
typedef struct { uint64_t comm; int64_t seq, end; int32_t func, channel; } cl_chend;
#define CL_CHEND_MAX (4u << 20)   /* kept per rank (128 MiB); past it counted in n_chend_over */

typedef struct {
  char *path; cl_info info;
  int rank;                  /* global rank from the header */
  char *pname;               /* the file's process_name, if any (owned) */
  int device;                /* GPU device if known, else -1 */
  int64_t t_min, t_max;      /* first ts and last ts+dur over timed events, own clock */
  CL_VEC(cl_coll) colls;
  cl_coll_v7 *v7; size_t v7_cap;   /* per collective (as colls) where any has a tag or phases; else NULL */
  CL_VEC(cl_chan) chans;
  CL_VEC(cl_step) steps;
  CL_VEC(cl_chend) chends;   /* kernel_ch slices with a seq, in trace order */
  int64_t n_chend_over;      /* kernel_ch slices past CL_CHEND_MAX, not kept */
  int refused;               /* the full read refused the file (info.msg): the rank is dropped */
  int64_t n_enq;             /* collectives whose host enqueue was paired with their GPU span */
  int64_t exposed_args, exposed_evs; int has_exposed_args, has_exposed_evs;
  int64_t n_kch_implausible;
  cl_tmarks tmarks;          /* its collectives, and which the timers' sample left out (model/timers.h) */
  /* clock alignment (analyse/clock_align.c): aligned = own - offset_ns */
  int aligned; int64_t offset_ns, off_err_ns, off_mad_ns; int off_samples, off_via;
  /* scan scratch */
  uint32_t *chan_idx; size_t chan_cap;
  void *enq_scratch;                     /* host "coll" slices until they are paired */   /* hash of (comm, channel) -> chans index + 1 */
  void *tail_map;
} cl_rank;

/* A collective instance (comm, func, seq) seen on two or more ranks. */
typedef struct {
  uint64_t comm; int64_t seq, bytes; uint16_t func; int32_t nranks;
  uint32_t first, count;     /* members: cl_job.mem[first .. first+count) */
} cl_inst;
typedef struct { uint32_t rank_idx, coll_idx; } cl_member;

typedef struct { uint64_t comm; char *name; } cl_commname;
/* A file found among the inputs (read or skipped): what an output must never replace. */
typedef struct { uint64_t dev, ino; char *path; } cl_found;
/* A flight-recorder dump of the reported attempt (a file holding a commlensFlight object),
 * whether or not it is its rank's file: the hang analysis reads every one. */
typedef struct { char *path, *flight; int rank; } cl_dump;


typedef struct {
  cl_rank **r; int n;                  /* usable ranks, sorted by rank */
  int threads;                         /* threads a pass over the ranks may use (base/par.h) */
  int n_files_seen, n_files_skipped;
  char *job;                           /* the job id everyone agreed on (may be "") */
  CL_VEC(cl_inst) inst;
  CL_VEC(cl_member) mem;
  int ref_rank;
  int64_t n_utf8;                      /* invalid UTF-8 bytes in the traces' strings, shown as U+FFFD */
  CL_VEC(cl_found) found;              /* every trace or digest found under the paths given */
  CL_VEC(cl_dump) dumps;               /* the reported attempt's flight dumps (all of them) */
  CL_VEC(cl_attempt) earlier;          /* earlier attempts of the job (model/attempts.h), oldest first, left out */
  int64_t attempt_start_ns;            /* when the reported attempt's first process started, -1 not said */
} cl_job;

/* Function names are interned process-wide (by the loader): id -> name. */
const char *cl_func_name(int id);
const char *cl_comm_name(uint64_t comm);   /* "" if none known */
int cl_comm_by_name(const char *name, uint64_t *out);

/* Finds traces under the given paths (directories or files), validates headers (format,
 * job, duplicate ranks), scans the usable ones with `threads` threads. Problems go to
 * stderr naming the file. Returns the number of usable ranks (0: nothing usable). */
int cl_job_load(cl_job *job, char **paths, int npaths, int threads);
/* Builds cl_job.inst from matching (comm, func, seq) across ranks (not p2p; model/instances.c). */
void cl_job_instances(cl_job *job);
void cl_job_free(cl_job *job);
/* An output must never replace an input: 0 when `path` is none of the files found among the
 * inputs, read or skipped (same st_dev and st_ino, links followed); else -1 after saying so on
 * stderr ("commlens: WHAT: PATH is one of the inputs ...; not overwritten"). */
int cl_job_refuse_output(const cl_job *job, const char *path, const char *what);
/* Collective k's v7 fields (zeros where the rank has none). */
static inline cl_coll_v7 cl_coll_v7_of(const cl_rank *r, size_t k) { return r->v7 ? r->v7[k] : (cl_coll_v7){0, 0, 0}; }
/* t on the reference clock, held within +-2^62 so later differences cannot overflow (a
 * hostile trace's time near INT64_MAX minus a negative offset did: fuzz_pftrace). */
static inline int64_t cl_aligned(const cl_rank *r, int64_t t) {
  int64_t v;
  const int64_t lim = INT64_C(1) << 62;
  if (__builtin_sub_overflow(t, r->offset_ns, &v)) return t < 0 ? -lim : lim;
  return v > lim ? lim : v < -lim ? -lim : v;
}
#endif
