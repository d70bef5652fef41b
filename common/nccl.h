/* nccl.h: NCCL arithmetic that the plugin's summary and the CLI's report both need: element
 * sizes, nccl-tests' byte counts and bus-bandwidth factors. One copy, so the two can never
 * print different bandwidths for the same collective. */
#ifndef COMMLENS_NCCL_H
#define COMMLENS_NCCL_H
#include <stdint.h>

/* Bytes of one element of an NCCL datatype name ("ncclFloat32"); 1 for unknown names. */
int cl_datatype_size(const char *dt);
/* nccl-tests' size for a task: count * type size, times nranks for AllGather/ReduceScatter. */
uint64_t cl_coll_bytes(const char *func, uint64_t count, const char *dt, int nranks);
/* 1 when cl_coll_bytes multiplies by nranks for this function (AllGather, ReduceScatter). */
int cl_coll_bytes_per_rank(const char *func);
/* nccl-tests' bus-bandwidth factor (busbw = algbw * factor): AllReduce 2(n-1)/n; AllGather,
 * ReduceScatter, AlltoAll (n-1)/n; Broadcast, Reduce, Send, Recv and anything else 1. As in
 * nccl-tests, one rank moves nothing over a bus (0 for the n-dependent ones), and an unknown
 * rank count (n <= 0) gives 0 for those too: no bandwidth rather than a wrong one. Function
 * names match in any case. */
double cl_busbw_factor(const char *func, int nranks);
#endif
