/* csv.c: see csv.h. Every string is quoted (a quote doubled) and written whole, every number
 * plain; a row goes out in pieces, so no name is cut and no row dropped for its length. */
#include "tools/commlens/merge/csv.h"
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char *cl_csv_header(void) {
  return "rank,host,gpu,comm,comm_name,func,p2p,seq,bytes,nranks,enqueue_ns,gpu_start_ns,gpu_end_ns,gpu_ns,exposed_ns,instance\n";
}

/* s as one quoted field, whole (a quote doubled), handed to put in pieces. */
typedef void (*put_fn)(void *arg, const char *s, size_t n);
static void quoted(put_fn put, void *arg, const char *s) {
  put(arg, "\"", 1);
  for (const char *q; s && (q = strchr(s, '"'));) {
    put(arg, s, (size_t)(q - s) + 1);   /* through the quote, then the quote again */
    put(arg, "\"", 1);
    s = q + 1;
  }
  if (s && *s) put(arg, s, strlen(s));
  put(arg, "\"", 1);
}
static void text(put_fn put, void *arg, const char *s) { put(arg, s, strlen(s)); }

int64_t cl_csv_rank(const cl_rank *r, int has_comm, uint64_t comm, int64_t ws, int64_t we, put_fn put, void *arg) {
  char seq[24], enq[24], exp[24], inst[16], num[200];
  int64_t n = 0;
  for (size_t i = 0; i < r->colls.n; i++) {
    const cl_coll *c = &r->colls.a[i];
    if (has_comm && c->comm != comm) continue;
    int64_t s = cl_aligned(r, c->start), e = cl_aligned(r, c->end);
    if (e < ws || s > we) continue;
    seq[0] = enq[0] = exp[0] = inst[0] = 0;   /* empty: not known (a p2p operation has no seq) */
    if (c->seq >= 0) snprintf(seq, sizeof seq, "%" PRId64, c->seq);
    if (c->enq != CL_NO_TIME) snprintf(enq, sizeof enq, "%" PRId64, cl_aligned(r, c->enq));
    if (c->exposed >= 0) snprintf(exp, sizeof exp, "%" PRId64, c->exposed);
    if (c->inst != UINT32_MAX) snprintf(inst, sizeof inst, "%" PRIu32, c->inst);
    snprintf(num, sizeof num, "%d,", r->rank);
    text(put, arg, num);
    quoted(put, arg, r->info.host ? r->info.host : "");
    snprintf(num, sizeof num, ",%d,\"0x%" PRIx64 "\",", r->device, c->comm);
    text(put, arg, num);
    quoted(put, arg, cl_comm_name(c->comm));
    text(put, arg, ",");
    quoted(put, arg, cl_func_name(c->func));
    snprintf(num, sizeof num, ",%d,%s,%" PRId64 ",%d,%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%s,%s\n", c->p2p, seq, c->bytes,
             c->nranks, enq, s, e, e - s, exp, inst);
    text(put, arg, num);
    n++;
  }
  return n;
}
