/* tags.h: the report by the application's v7 user tag (a gradient bucket, a layer, a pipeline
 * stage): per tag, its collectives' GPU time, exposure split into waiting for peers and
 * transferring, the GPU's own wait (initial_sync), and the waits its instances caused (the
 * verdict's); plus each rank's exposure split. The number of tags named is capped
 * (CL_TAG_LABELS_MAX); the digest and the Prometheus labels take their tag labels from this
 * table (cl_tags.row) so the cap and its message are one rule. No I/O but the cap's one line. */
#ifndef COMMLENS_ANALYSE_TAGS_H
#define COMMLENS_ANALYSE_TAGS_H
#include "tools/commlens/model/load.h"
#include "tools/commlens/analyse/verdict.h"
#include <stdio.h>

/* Tags named at most (the rows with the most wait caused, then the most GPU time); the
 * rest are folded into one "other" row, and the cap is said once. Bounds every label set
 * made from tags (digest, Prometheus). */
#define CL_TAG_LABELS_MAX 32

typedef struct {
  uint64_t tag;                 /* 0: untagged collectives */
  int other;                    /* 1: the row of the tags past the cap (tag unused) */
  int64_t n_colls, n_inst;      /* collective spans over ranks; matched instances */
  double gpu_ns, exposed_ns;    /* Σ over ranks of span lengths, of exposed_ns */
  double exposed_wait_ns, exposed_xfer_ns;   /* exposure split (phases known only) */
  double sync_wait_ns, compute_ns;           /* Σ of the kernel phases (v7) */
  double wait_caused_ns;        /* Σ over its instances of the others' wait for the last */
  int64_t n_called;             /* instances whose last arrival stood out (called) */
} cl_tag_row;

typedef struct {
  cl_tag_row *row; size_t n;    /* most wait caused first; "other" last; n = 0: no tags */
  int64_t n_distinct;           /* distinct tags seen (untagged included) */
  int capped;                   /* n_distinct > CL_TAG_LABELS_MAX */
  double *exp_wait, *exp_xfer;  /* per rank (like cl_job.r): exposed waiting for peers,
                                   transferring (-1: no phases on that rank) */
} cl_tags;

/* Fills *t from the job and its verdict (vd->v.inst by job instance). `note`, if not NULL,
 * receives the cap's one line when it is hit. Free with cl_tags_free. */
void cl_tags_compute(const cl_job *job, const cl_verdict_an *vd, cl_tags *t, FILE *note);
void cl_tags_free(cl_tags *t);
/* The row's label: "untagged", "other (N tags)" or the tag in decimal (buf, caller's). */
const char *cl_tag_label(const cl_tags *t, const cl_tag_row *r, char *buf, size_t n);
#endif
