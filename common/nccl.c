/* nccl.c: see nccl.h. */
#include "common/nccl.h"
#include <string.h>
#include <strings.h>

int cl_datatype_size(const char *dt) {
  /* NCCL's names (ncclDataType_t), by their first letters after "nccl": every collective asks */
  if (!dt || strncmp(dt, "nccl", 4)) return 1;
  const char *n = dt + 4;
  switch (n[0]) {
  case 'I': return !strcmp(n, "Int8") ? 1 : !strcmp(n, "Int32") || !strcmp(n, "Int") ? 4 : !strcmp(n, "Int64") ? 8 : 1;
  case 'U': return !strcmp(n, "Uint8") ? 1 : !strcmp(n, "Uint32") ? 4 : !strcmp(n, "Uint64") ? 8 : 1;
  case 'F':
    if (!strcmp(n, "Float32") || !strcmp(n, "Float")) return 4;
    if (!strcmp(n, "Float16")) return 2;
    return !strcmp(n, "Float64") ? 8 : 1;   /* Float8e4m3, Float8e5m2: 1 */
  case 'B': return !strcmp(n, "Bfloat16") ? 2 : 1;
  case 'H': return !strcmp(n, "Half") ? 2 : 1;
  case 'D': return !strcmp(n, "Double") ? 8 : 1;
  default: return 1;   /* ncclChar, and NCCL's "Unknown" for ncclUint8 */
  }
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
