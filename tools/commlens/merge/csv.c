/* csv.c: see csv.h. Every string is quoted (a quote doubled), every number plain. */
#include "tools/commlens/merge/csv.h"
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char *cl_csv_header(void) {
  return "rank,host,gpu,comm,comm_name,func,p2p,seq,bytes,nranks,enqueue_ns,gpu_start_ns,gpu_end_ns,gpu_ns,exposed_ns,instance\n";
}

static void quoted(char *b, size_t n, const char *s) {
  size_t k = 0;
  if (n < 3) { if (n) b[0] = 0; return; }
  b[k++] = '"';
  for (; s && *s && k + 3 < n; s++) {
    if (*s == '"') b[k++] = '"';
    b[k++] = *s;
  }
  b[k++] = '"';
  b[k] = 0;
}

int64_t cl_csv_rank(const cl_rank *r, int has_comm, uint64_t comm, int64_t ws, int64_t we,
                    void (*put)(void *arg, const char *s, size_t n), void *arg) {
  char host[600], cname[600], func[600], seq[24], enq[24], exp[24], inst[16], line[2400];
  quoted(host, sizeof host, r->info.host ? r->info.host : "");
  int64_t n = 0;
  for (size_t i = 0; i < r->colls.n; i++) {
    const cl_coll *c = &r->colls.a[i];
    if (has_comm && c->comm != comm) continue;
    int64_t s = cl_aligned(r, c->start), e = cl_aligned(r, c->end);
    if (e < ws || s > we) continue;
    quoted(cname, sizeof cname, cl_comm_name(c->comm));
    quoted(func, sizeof func, cl_func_name(c->func));
    seq[0] = enq[0] = exp[0] = inst[0] = 0;   /* empty: not known (a p2p operation has no seq) */
    if (c->seq >= 0) snprintf(seq, sizeof seq, "%" PRId64, c->seq);
    if (c->enq != CL_NO_TIME) snprintf(enq, sizeof enq, "%" PRId64, cl_aligned(r, c->enq));
    if (c->exposed >= 0) snprintf(exp, sizeof exp, "%" PRId64, c->exposed);
    if (c->inst != UINT32_MAX) snprintf(inst, sizeof inst, "%" PRIu32, c->inst);
    int k = snprintf(line, sizeof line, "%d,%s,%d,\"0x%" PRIx64 "\",%s,%s,%d,%s,%" PRId64 ",%d,%s,%" PRId64 ",%" PRId64
                     ",%" PRId64 ",%s,%s\n", r->rank, host, r->device, c->comm, cname, func, c->p2p, seq,
                     c->bytes, c->nranks, enq, s, e, e - s, exp, inst);
    if (k > 0 && (size_t)k < sizeof line) { put(arg, line, (size_t)k); n++; }
  }
  return n;
}
