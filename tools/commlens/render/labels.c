/* labels.c: how the report names things in every output form (text, JSON, HTML). */
#include "tools/commlens/render/report.h"
#include <stdio.h>

/* "host" or "host:GPU" (a process may drive several GPUs: each is a rank of its own). */
const char *cl_rank_host(const cl_rank *r) {
  static _Thread_local char buf[4][160];
  static _Thread_local int k;
  char *b = buf[k++ % 4];
  if (r->device >= 0) snprintf(b, sizeof buf[0], "%s:%d", r->info.host ? r->info.host : "?", r->device);
  else snprintf(b, sizeof buf[0], "%s", r->info.host ? r->info.host : "?");
  return b;
}
