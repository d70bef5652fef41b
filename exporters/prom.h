/* prom.h: one rank's live metrics in the Prometheus text exposition format, for the
 * node-exporter textfile collector (COMMLENS_PROM): written whole to a temporary file in the
 * same directory, then renamed over the previous one, so a scrape never sees half a file; each
 * process's series carry its pid, and its file lives only as long as it does (cl_prom_remove,
 * and cl_prom_sweep for what a killed one left), so the collector never sees a series twice.
 * Names follow Prometheus' conventions: a commlens_ prefix, base units (seconds, bytes),
 * _total on counters, one HELP and TYPE per family. Writer thread only. */
#ifndef COMMLENS_PROM_H
#define COMMLENS_PROM_H
#include "exporters/summary.h"
#include "exporters/strbuf.h"
#include <stdint.h>

/* ---- per communicator: what a query compares across the ranks of one job ----
 * One rank cannot see who arrived last, but its collective kernels run from their start until
 * every peer has joined: a rank that waits for a late peer has long kernels, the late rank short
 * ones. Each rank counts its kernel time per communicator (a histogram of the time of one
 * collective, start to end on the GPU) and the time from enqueue to GPU start (long on a rank
 * whose GPU was busy with other work); the shipped rules compare the ranks
 * (exporters/prometheus/commlens.rules.yml). Series per rank are bounded: the first
 * CL_PROM_COMMS communicators by their hash, every later one together as comm="other". */
#define CL_PROM_COMMS 16
#define CL_PROM_BUCKETS 13          /* finite bounds of the kernel-time histogram (prom.c) */
typedef struct {
  uint64_t hash;                    /* commHash / commId, the same on every rank */
  uint64_t colls, bytes;            /* operations completed and their bytes (nccl-tests' size) */
  uint64_t timed, kernel_ns, queue_ns;  /* GPU-timed ones: kernel start to end, enqueue to start */
  uint64_t le[CL_PROM_BUCKETS + 1]; /* timed ones by kernel time, per bucket (not cumulative) */
} cl_prom_comm;
typedef struct {
  int n;                            /* communicators with their own series, in c[0..n) */
  cl_prom_comm c[CL_PROM_COMMS];
  cl_prom_comm other;               /* the rest (hash unused) */
} cl_prom_comms;
/* One completed operation of communicator `hash`; kernel_ns and queue_ns only when timed. */
void cl_prom_comms_add(cl_prom_comms *t, uint64_t hash, uint64_t bytes, int timed,
                       uint64_t kernel_ns, uint64_t queue_ns);

/* What one rank (one GPU) reports besides its summary rows. pid: the process writing them, a
 * label of every series (two processes of one rank, a launcher's mistake or a restart, never
 * write the same series; 0 leaves the label out: a simulated exporter). */
typedef struct {
  int rank, gpu, pid;
  const char *host, *job, *version;
  int abi;
  uint64_t events, records, dropped, calls, per_call_ns;
  double overhead_ratio;                  /* the plugin's share of wall time, 0..1 */
  uint64_t colls, colls_timed;
  int has_exposure;                       /* CUPTI: the two below are known */
  uint64_t comm_ns, exposed_ns;
  const cl_prom_comms *comms;             /* NULL: no per-communicator families */
} cl_prom_rank;

/* The whole exposition text into b (reset first). */
void cl_prom_format(cl_sb *b, const cl_prom_rank *r, const cl_summary *sum);
/* The same for n ranks in one exposition (each family once, a sample per rank): a simulated
 * exporter of many ranks (test/exporters/test_prom_live.c, bench/prom_scale.sh). sum[i] may be NULL (no per-function rows). */
void cl_prom_format_ranks(cl_sb *b, const cl_prom_rank *r, const cl_summary *const *sum, size_t n);
/* Formats and replaces `path` atomically (a fresh path.XXXXXX made exclusively, mode 0644,
 * then renamed over it). 0, or an errno. */
int cl_prom_write(const char *path, const cl_prom_rank *r, const cl_summary *sum);
/* Replaces `path` with the text in b, the same way. 0, or an errno. */
int cl_prom_write_text(const char *path, const cl_sb *b);
/* Removes the metrics files that earlier processes of the same participant left in dir: names
 * prefix<pid>suffix (a process's file name with its pid left out) of a process other than
 * self_pid that no longer runs, regular files of this user, never a link (a rank killed before
 * it could remove its own, then started again: its old series must not be served as live).
 * Returns how many it removed. */
int cl_prom_sweep(const char *dir, const char *prefix, const char *suffix, int self_pid);
/* Removes `path` when it is a regular file of this user (never a link, nor someone else's
 * file put there since). 0 when removed. */
int cl_prom_remove(const char *path);
#endif
