/* nccl.c: see nccl.h. */
#include "common/nccl.h"

/* a == b, b a constant; inline rather than libc's calls: the writer asks for every collective
 * (bench/replay_cost.c: about 190 instructions a collective with strcmp and strcasecmp) */
static inline int same(const char *a, const char *b) {
  for (; *b; a++, b++) if (*a != *b) return 0;
  return *a == 0;
}
/* The same in any case, as strcasecmp in the C locale: b is letters only, and a byte ORed with
 * 0x20 equals a lower-case letter only if it is that letter in either case. */
static inline int same_nocase(const char *a, const char *b) {
  for (; *b; a++, b++) if ((*a | 0x20) != (*b | 0x20)) return 0;
  return *a == 0;
}

int cl_datatype_size(const char *dt) {
  /* NCCL's names (ncclDataType_t), by their first letters after "nccl": every collective asks */
  if (!dt || dt[0] != 'n' || dt[1] != 'c' || dt[2] != 'c' || dt[3] != 'l') return 1;
  const char *n = dt + 4;
  switch (n[0]) {
  case 'I': return same(n, "Int8") ? 1 : same(n, "Int32") || same(n, "Int") ? 4 : same(n, "Int64") ? 8 : 1;
  case 'U': return same(n, "Uint8") ? 1 : same(n, "Uint32") ? 4 : same(n, "Uint64") ? 8 : 1;
  case 'F':
    if (same(n, "Float32") || same(n, "Float")) return 4;
    if (same(n, "Float16")) return 2;
    return same(n, "Float64") ? 8 : 1;   /* Float8e4m3, Float8e5m2: 1 */
  case 'B': return same(n, "Bfloat16") ? 2 : 1;
  case 'H': return same(n, "Half") ? 2 : 1;
  case 'D': return same(n, "Double") ? 8 : 1;
  default: return 1;   /* ncclChar, and NCCL's "Unknown" for ncclUint8 */
  }
}

int cl_coll_bytes_per_rank(const char *func) {
  return func && (same_nocase(func, "AllGather") || same_nocase(func, "ReduceScatter"));
}
uint64_t cl_coll_bytes(const char *func, uint64_t count, const char *dt, int nranks) {
  uint64_t b = count * (uint64_t)cl_datatype_size(dt);
  if (nranks > 0 && cl_coll_bytes_per_rank(func)) b *= (uint64_t)nranks;
  return b;
}

double cl_busbw_factor(const char *func, int n) {
  if (!func) return 1.0;
  int all_reduce = same_nocase(func, "AllReduce");
  int n_minus_1 = same_nocase(func, "AllGather") || same_nocase(func, "ReduceScatter") ||
                  same_nocase(func, "AlltoAll");
  if (!all_reduce && !n_minus_1) return 1.0;
  if (n <= 1) return 0.0;
  return (all_reduce ? 2.0 : 1.0) * (double)(n - 1) / (double)n;
}
