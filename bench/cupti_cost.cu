/* cupti_cost.cu: what each way of timing kernels with CUPTI costs the application, per kernel
 * launch, with no NCCL in the way (one GPU is enough): a loop of tiny kernels launched back to
 * back, timed on the host, in one of these modes (one per process: CUPTI attaches per process):
 *   none      no CUPTI at all
 *   kernel    CONCURRENT_KERNEL activity records only
 *   driver    CONCURRENT_KERNEL + DRIVER API activity records (what COMMLENS_CUPTI=on uses)
 *   runtime   CONCURRENT_KERNEL + RUNTIME API activity records
 *   callback  CONCURRENT_KERNEL + a driver callback on cuLaunchKernel only (no API records)
 *   tscb      CONCURRENT_KERNEL + a timestamp callback (clock_gettime(CLOCK_MONOTONIC)), as the
 *             plugin registers to get records on its own clock; prints how often CUPTI called it
 *   marker    MARKER activity only (NVTX ranges): what COMMLENS_CUPTI=sampled keeps on between
 *             its windows
 *   after     CONCURRENT_KERNEL + MARKER, a window of launches, then CONCURRENT_KERNEL disabled
 *             before the timed launches: the cost between two sampling windows
 *   detach    as after, but the window ends with cuptiFinalize (CUPTI detached until the next
 *             window re-attaches it): what COMMLENS_CUPTI=sampled does between windows
 *   streamid  CONCURRENT_KERNEL + cuptiGetStreamIdEx before each launch (what the default,
 *             COMMLENS_CUPTI=kernels, adds at each NCCL launch); it also checks that every
 *             kernel record carries the stream id the call returned
 *   cycle     what one sampling window costs beyond its launches: K distinct kernel functions
 *             (argument 2, up to 512; a training step launches hundreds) launched round-robin,
 *             then CYCLES times: attach (callbacks, CONCURRENT_KERNEL), one pass over the K
 *             kernels, steady launches, the window's end (disable, forced flush, cuptiFinalize),
 *             one pass again, steady launches. Prints each phase's ns per launch and the
 *             attach and end calls' ms, medians over the cycles, and the window's extra time.
 * Prints "mode ns_per_launch" as the median of ROUNDS batches. Part of issue "always-on": which
 * mechanism can give every collective a GPU span for ~1 us.
 *   nvcc -O2 -std=c++17 -o cupti_cost bench/cupti_cost.cu -I$CUDA/include -L$CUDA/lib64 -lcupti -lcuda
 *   ./cupti_cost MODE [LAUNCHES_PER_BATCH] [ROUNDS] */
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <utility>
#include <vector>

__global__ void tiny(int *p) { if (threadIdx.x == 0 && p) p[blockIdx.x] += 1; }

/* cycle mode: 512 distinct kernel functions */
template <int N> __global__ void kfn(int *p) { if (threadIdx.x == 0 && p) p[N % 1024] += N; }
typedef void (*kptr)(int *);
enum { KMAX = 512 };
template <int... I> static void fill_kernels(kptr *t, std::integer_sequence<int, I...>) { ((t[I] = kfn<I>), ...); }

static unsigned long long g_records, g_kernels, g_sid_mismatch;
static uint32_t g_sid = ~0u;   /* the stream id cuptiGetStreamIdEx gave (streamid mode) */
static void CUPTIAPI buf_request(uint8_t **b, size_t *size, size_t *max) {
  *size = 8 << 20;
  *b = (uint8_t *)aligned_alloc(8, *size);
  *max = 0;
}
static void CUPTIAPI buf_complete(CUcontext, uint32_t, uint8_t *b, size_t, size_t valid) {
  CUpti_Activity *r = NULL;
  while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) {
    g_records++;
    if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || g_sid == ~0u) continue;
    g_kernels++;
    if (((CUpti_ActivityKernel10 *)r)->streamId != g_sid) g_sid_mismatch++;
  }
  free(b);
}
static unsigned long long g_ts_calls;
static uint64_t CUPTIAPI ts_cb(void) {
  struct timespec t;
  __atomic_add_fetch(&g_ts_calls, 1, __ATOMIC_RELAXED);
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
static void CUPTIAPI on_callback(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *) {}

#define CK(x) do { CUptiResult r_ = (x); if (r_ != CUPTI_SUCCESS) { const char *s; cuptiGetResultString(r_, &s); \
  fprintf(stderr, "%s: %s\n", #x, s); exit(1); } } while (0)

static double now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }

static void CUPTIAPI buf_request(uint8_t **b, size_t *size, size_t *max);
static void CUPTIAPI buf_complete(CUcontext, uint32_t, uint8_t *b, size_t, size_t valid);
static double now_ns(void);
static double med(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

/* ns per launch of `n` launches round-robin over the first k kernels (from kernel `from`) */
static double launches(kptr *t, int k, int n, cudaStream_t s, int *p) {
  double t0 = now_ns();
  for (int i = 0; i < n; i++) t[i % k]<<<1, 32, 0, s>>>(p);
  cudaStreamSynchronize(s);
  return (now_ns() - t0) / n;
}

static int cycle_mode(int k, int cycles) {
  static kptr t[KMAX];
  fill_kernels(t, std::make_integer_sequence<int, KMAX>{});
  if (k < 1 || k > KMAX) { fprintf(stderr, "cycle: 1..%d kernels\n", KMAX); return 2; }
  int *p;
  cudaMalloc(&p, 1024 * sizeof(int));
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  const int steady = 20000;
  for (int r = 0; r < 10; r++) launches(t, k, k, s, p);          /* every module loaded */
  std::vector<double> base, att_call, att_first, in_win, end_call, det_first, after;
  for (int r = 0; r < 5; r++) base.push_back(launches(t, k, steady, s, p));
  for (int c = 0; c < cycles; c++) {
    double t0 = now_ns();
    CK(cuptiActivityRegisterCallbacks(buf_request, buf_complete));
    CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    att_call.push_back((now_ns() - t0) / 1e6);
    att_first.push_back(launches(t, k, k, s, p));
    in_win.push_back(launches(t, k, steady, s, p));
    t0 = now_ns();
    CK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    CK(cuptiActivityFlushAll(1));
    CK(cuptiFinalize());
    end_call.push_back((now_ns() - t0) / 1e6);
    det_first.push_back(launches(t, k, k, s, p));
    after.push_back(launches(t, k, steady, s, p));
  }
  double b = med(base);
  double extra_ms = med(att_call) + med(end_call) + k * (med(att_first) - b) / 1e6 + k * (med(det_first) - b) / 1e6;
  printf("cycle %d kernels: base %.1f ns/launch; attach %.2f ms, first pass %.1f ns/launch, in window %.1f ns/launch; "
         "end %.2f ms, first pass after %.1f ns/launch, after %.1f ns/launch; a window costs %.2f ms beyond its "
         "launches' %.1f ns each (%d cycles, %llu records)\n", k, b, med(att_call), med(att_first), med(in_win),
         med(end_call), med(det_first), med(after), extra_ms, med(in_win) - b, cycles, g_records);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "none";
  if (!strcmp(mode, "cycle")) { cudaFree(0); return cycle_mode(argc > 2 ? atoi(argv[2]) : 256, argc > 3 ? atoi(argv[3]) : 5); }
  int n = argc > 2 ? atoi(argv[2]) : 20000, rounds = argc > 3 ? atoi(argv[3]) : 15;
  cudaFree(0);
  if (strcmp(mode, "none")) {
    if (!strcmp(mode, "tscb")) CK(cuptiActivityRegisterTimestampCallback(ts_cb));
    CK(cuptiActivityRegisterCallbacks(buf_request, buf_complete));
    if (!strcmp(mode, "marker") || !strcmp(mode, "after") || !strcmp(mode, "detach"))
      CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER));
    if (strcmp(mode, "marker")) CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    if (!strcmp(mode, "driver")) CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER));
    else if (!strcmp(mode, "runtime")) CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
    else if (!strcmp(mode, "callback")) {
      CUpti_SubscriberHandle sub;
      CK(cuptiSubscribe(&sub, (CUpti_CallbackFunc)on_callback, NULL));
      CK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
    } else if (strcmp(mode, "kernel") && strcmp(mode, "streamid") && strcmp(mode, "tscb") && strcmp(mode, "marker") &&
               strcmp(mode, "after") && strcmp(mode, "detach")) { fprintf(stderr, "unknown mode %s\n", mode); return 2; }
  }
  int *p;
  cudaMalloc(&p, 1024 * sizeof(int));
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  int sid_each = !strcmp(mode, "streamid");
  if (sid_each) CK(cuptiGetStreamIdEx(NULL, (CUstream)s, 0, &g_sid));
  for (int i = 0; i < 2000; i++) tiny<<<1, 32, 0, s>>>(p);   /* warm-up */
  cudaStreamSynchronize(s);
  if (!strcmp(mode, "after") || !strcmp(mode, "detach")) {   /* the window ends: kernel records off */
    CK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    CK(cuptiActivityFlushAll(1));
    if (!strcmp(mode, "detach")) CK(cuptiFinalize());   /* ... and CUPTI detached */
  }
  std::vector<double> per;
  uint32_t sid = 0, bad = 0;
  for (int r = 0; r < rounds; r++) {
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
      if (sid_each && (cuptiGetStreamIdEx(NULL, (CUstream)s, 0, &sid) != CUPTI_SUCCESS || sid != g_sid)) bad++;
      tiny<<<1, 32, 0, s>>>(p);
    }
    cudaStreamSynchronize(s);
    per.push_back((now_ns() - t0) / n);
  }
  std::sort(per.begin(), per.end());
  if (strcmp(mode, "none") && strcmp(mode, "detach")) cuptiActivityFlushAll(1);
  cudaError_t e = cudaGetLastError();
  printf("%-9s %8.1f ns/launch (min %.1f, max %.1f; %d x %d launches; %llu CUPTI records; %s)\n", mode,
         per[per.size() / 2], per.front(), per.back(), rounds, n, g_records, cudaGetErrorString(e));
  if (!strcmp(mode, "tscb"))
    printf("tscb: %llu timestamp callbacks, %.2f per launch\n", g_ts_calls,
           (double)g_ts_calls / ((double)n * rounds + 2000));
  if (sid_each)
    printf("streamid: stream id %u; %u lookups failed or differed; %llu of %llu kernel records on another stream id\n",
           g_sid, bad, g_sid_mismatch, g_kernels);
  return e == cudaSuccess && !bad && !g_sid_mismatch ? 0 : 1;
}
