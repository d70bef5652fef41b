/* nccl.c: see nccl.h. */
#include "common/nccl.h"
#include <string.h>
#include <strings.h>

int cl_datatype_size(const char *dt) {
  if (!dt) return 1;
  static const struct { const char *n; int sz; } t[] = {
    {"ncclInt8", 1}, {"ncclUint8", 1}, {"ncclChar", 1}, {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1},
    {"ncclFloat16", 2}, {"ncclHalf", 2}, {"ncclBfloat16", 2}, {"ncclInt32", 4}, {"ncclUint32", 4},
    {"ncclInt", 4}, {"ncclFloat32", 4}, {"ncclFloat", 4}, {"ncclInt64", 8}, {"ncclUint64", 8},
    {"ncclFloat64", 8}, {"ncclDouble", 8}};
  if (strncmp(dt, "nccl", 4)) return 1;
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)   /* every name asked for, once per collective */
    if (dt[4] == t[i].n[4] && !strcmp(dt + 5, t[i].n + 5)) return t[i].sz;
  return 1;   /* includes NCCL's "Unknown" for ncclUint8 */
}

uint64_t cl_coll_bytes(const char *func, uint64_t count, const char *dt, int nranks) {
  uint64_t b = count * (uint64_t)cl_datatype_size(dt);
  if (func && nranks > 0 && (!strcasecmp(func, "AllGather") || !strcasecmp(func, "ReduceScatter")))
    b *= (uint64_t)nranks;
  return b;
}

double cl_busbw_factor(const char *func, int n) {
  if (!func) return 1.0;
  int all_reduce = !strcasecmp(func, "AllReduce");
  int n_minus_1 = !strcasecmp(func, "AllGather") || !strcasecmp(func, "ReduceScatter") ||
                  !strcasecmp(func, "AlltoAll");
  if (!all_reduce && !n_minus_1) return 1.0;
  if (n <= 1) return 0.0;
  return (all_reduce ? 2.0 : 1.0) * (double)(n - 1) / (double)n;
}
