/* gj_fixture.h (tests): what the GPU join's tests share: one GPU's participants with no
 * communicator registered, a CUPTI activity record, and a join by stream order started at T. */
#ifndef COMMLENS_TEST_GJ_FIXTURE_H
#define COMMLENS_TEST_GJ_FIXTURE_H
#include "plugin/gpu/gpu_join.h"
#include "plugin/output/participants.h"
#include <stdint.h>

/* No communicator registered: everything goes to one participant (the process's GPU). */
static inline uint32_t no_comms(void) { return 0; }
static inline int no_lookup(uint32_t serial, cl_comm_info *out) { (void)serial; (void)out; return -1; }
static inline cl_parts *one_gpu(void) {
  static const cl_parts_deps d = {.comm_count = no_comms, .comm_lookup = no_lookup, .env_rank = -1,
                                  .env_source = "", .forced_rank = -1};
  return cl_parts_new(&d);
}

static inline cl_gpu_activity act(int kind, uint64_t s, uint64_t e, uint32_t corr, const char *name) {
  cl_gpu_activity a = {0};
  a.kind = (uint8_t)kind; a.start_ns = s; a.end_ns = e; a.correlation = corr; a.name = name;
  a.thread = 42; a.stream = 7;
  return a;
}

#define SEC 1000000000ull
/* A join by stream order on one GPU's participants (*ps), recording from T
 * (COMMLENS_CUPTI=kernels). */
static inline cl_gj *stream_join(cl_parts **ps, uint64_t T) {
  *ps = one_gpu();
  cl_gj *g = *ps ? cl_gj_new(*ps, 1) : NULL;
  if (g) cl_gj_start(g, T);
  return g;
}
static inline void done(cl_gj *g, cl_parts *ps) {
  cl_gj_free(g);
  cl_parts_free(ps);
}
#endif
