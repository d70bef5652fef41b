/* labels.c: how the report names things in every output form (text, JSON, HTML). */
#include "tools/commlens/render/report.h"
#include <stdio.h>
#include <string.h>

/* "host" or "host:GPU" (a process may drive several GPUs: each is a rank of its own). */
const char *cl_rank_host(const cl_rank *r) {
  const char *h = r->info.host ? r->info.host : "?";
  size_t n = strlen(h) + 16;   /* whole, however long the host's name */
  char *b = cl_ring_buf(n);
  if (r->device >= 0) snprintf(b, n, "%s:%d", h, r->device);
  else snprintf(b, n, "%s", h);
  return b;
}
