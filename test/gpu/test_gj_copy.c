/* test_gj_copy.c: copy-engine collectives timed by their copies (plugin/gpu/gj_copy.c), and
 * CUPTI's memcpy and memset records drawn in full mode, counted as no compute in any mode. */
#include "tl.h"
#include "gj_fixture.h"
#include "exporters/chrome_trace.h"
#include <string.h>

/* Full mode draws CUPTI's memcpy and memset records on their stream's track (the copies of a
 * copy-engine collective: NCCL 2.30's AllGather on 2 H200s showed two peer-to-peer copies per
 * collective), named by copy kind with their bytes; the default draws none. Neither is compute
 * (exposure counts none of them). Before, every memcpy record was dropped, in full mode too. */
TL_TEST(full_mode_draws_copies_on_their_stream) {
  const uint64_t T = 10 * SEC;
  for (int full = 0; full < 2; full++) {
    cl_parts *ps;
    cl_gj *g = stream_join(&ps, T);
    REQUIRE(g, "alloc");
    cl_gj_draw_compute(g, full);
    cl_gpu_activity m = act(CL_GPU_MEMCPY, T + 1000, T + 9000, 11, NULL);
    m.copy_kind = 10; m.bytes = 2097152; m.stream = 13;
    cl_gpu_activity z = act(CL_GPU_MEMSET, T + 9500, T + 9800, 12, NULL);
    z.bytes = 4096; z.stream = 13;
    cl_gj_activity(g, &m);
    cl_gj_activity(g, &z);
    cl_gj_advance(g, T + 3 * SEC, 1);
    const char *body = ct_body(cl_parts_of_dev(ps, -1)->ct)->p;
    body = body ? body : "";
    int copy = strstr(body, "\"cat\":\"gpu_memcpy\",\"name\":\"memcpy PtoP\"") != NULL,
        set = strstr(body, "\"cat\":\"gpu_memset\"") != NULL, bytes = strstr(body, "\"bytes\":2097152") != NULL,
        track = strstr(body, "GPU 0 stream 13") != NULL;
    if (full) CHECK(copy && set && bytes && track, "full: memcpy %d memset %d bytes %d track %d: %.600s", copy, set, bytes,
                    track, body);
    else CHECK(!copy && !set, "default: a copy drawn: %.600s", body);
    cl_gj_counts n;
    cl_gj_totals(g, cl_parts_at(ps, 0), &n);
    CHECK(n.compute_kernels == 0, "%s: %llu compute kernels counted", full ? "full" : "default",
          (unsigned long long)n.compute_kernels);
    done(g, ps);
  }
}

/* Copy-engine collectives at the rate a real job makes them (NCCL 2.30.7, 1 MiB AllGathers on 2
 * H200s: 19,000 a second), their copies handed over in CUPTI's 100 ms flushes, so 2,000
 * collectives are read before the first of their copies comes: every one gets its own copy
 * (seen before the ring held 8,192: 512 of 500,005 timed, the rest overwritten unplaced). */
TL_TEST(copy_engine_collectives_at_a_real_rate) {
  const uint64_t T = 10 * SEC;
  cl_parts *ps;
  cl_gj *g = stream_join(&ps, T);
  REQUIRE(g, "alloc");
  enum { N = 6000, FLUSH = 2000 };
  static uint64_t ticket[N];
  int timed = 0, right = 0;
  for (int b = 0; b < N; b += FLUSH) {
    for (int i = b; i < b + FLUSH; i++) ticket[i] = cl_gj_ce_enqueue(g, 1000 + (uint64_t)i, 0, 5, T + (uint64_t)i * 50000);
    for (int i = b; i < b + FLUSH; i++) {   /* each one's copy 14 us after its enqueue, 1.1 us long */
      cl_gpu_activity m = act(CL_GPU_MEMCPY, T + (uint64_t)i * 50000 + 14000, T + (uint64_t)i * 50000 + 15100, 0, NULL);
      m.stream = 4; m.bytes = 1048576; m.copy_kind = 8;
      cl_gj_activity(g, &m);
    }
  }
  cl_gj_advance(g, T + (uint64_t)N * 50000 + SEC, 0);
  for (int i = 0; i < N; i++) {
    uint64_t s, e;
    if (!cl_gj_ce_span(g, ticket[i], 1000 + (uint64_t)i, 1, &s, &e)) continue;
    timed++;
    right += s == T + (uint64_t)i * 50000 + 14000 && e == s + 1100;
  }
  CHECK(timed == N && right == N, "%d of %d timed, %d from their own copy", timed, N, right);
  done(g, ps);
}

TL_MAIN("gpu/gj_copy")
