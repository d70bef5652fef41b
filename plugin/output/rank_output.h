/* rank_output.h: one participant's (one GPU's) output files. The trace file gets the header first, then the
 * slices the formatter accumulates in the Chrome-trace body, each flush ending with the
 * stats tail (plugin/pipeline/self_stats.c: so the file is valid JSON after every flush); at exit the summary files. The
 * callers decide what a failure means (rank_output only reports it). Writer threads only. */
#ifndef COMMLENS_RANK_OUTPUT_H
#define COMMLENS_RANK_OUTPUT_H
#include "exporters/chrome_trace.h"
#include "exporters/summary.h"
#include "exporters/trace_file.h"
#include <stdint.h>

/* Whose files these are: the participant's world rank, where it came from, its CUDA device. */
typedef struct { int rank; char rank_source[48]; int dev; } cl_out_who;

typedef struct {
  cl_tfile *file;           /* NULL until created, and after close */
  char base[1200];          /* <dir>/commlens-r<rank>-<host>-<pid>[-g<dev>] */
  char path[1400];          /* the trace file */
  cl_out_who who;
  size_t head_len;          /* the header's bytes at the front of the body, until they are out */
  int dfd, dfd_open;        /* the digest file (append only), when dfd_open */
  char dpath[1400];
} cl_rank_output;

/* Names the files after the participant and this process (rank, host, pid, GPU when known)
 * under `dir`. */
void cl_out_name(cl_rank_output *o, const char *dir, int gzip, const cl_out_who *w);
/* Creates the directory (0, or -1 with errno and *what); staging makes its nameless spill
 * file there. */
int cl_out_prepare(const char *dir, const char **what);
/* Creates the directory and the trace file (exclusively, never through a symlink). 0, or -1
 * with errno, *what (what failed) and *where (the path it failed on). */
int cl_out_create(cl_rank_output *o, const char *dir, int gzip, const char **what, const char **where);
/* Puts the trace header and the process metadata in front of ct's body. */
void cl_out_header(cl_rank_output *o, cl_ct *ct);
/* Appends ct's body and rewrites the tail; the body is emptied either way. 0, or the errno
 * of a failed write (the file is then failed for good). */
int cl_out_flush(cl_rank_output *o, cl_ct *ct, const cl_sb *tail);
/* The summary: <base>.summary.txt and .summary.json (only beside a trace or digest file), and the
 * table on stderr when `print`. `head` is its first line (the self-measure: self_stats.c),
 * `gpu` one line saying what was timed on the GPU and how; `exposure` is JSON or NULL. */
void cl_out_summary(const cl_rank_output *o, const char *head, uint64_t events, uint64_t dropped,
                    const cl_summary *sum, const char *gpu, const char *exposure, int print);
/* The one line a job prints at exit (rank 0's process, COMMLENS_SUMMARY line or print): where
 * the files are (`dir`, made absolute) and the command that reads them, the path quoted as one
 * shell word; one write to stderr, so the line stays whole beside other processes' output. */
void cl_out_pointer(const char *dir);
void cl_out_close(cl_rank_output *o);
/* The digest: creates <base>.digest (new, never through a link) and writes its magic and
 * header block (the trace header's object). 0, or -1 with errno and *what. */
int cl_out_create_digest(cl_rank_output *o, const char **what);
/* Appends whole digest blocks. 0, or the errno of a failed write (a short write leaves a torn
 * last block, which a reader counts and skips). */
int cl_out_append_digest(cl_rank_output *o, const void *p, size_t n);
#endif
