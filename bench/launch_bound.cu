// launch_bound.cu: a launch-bound training step without PyTorch, for bench/launch_bound.sh. One
// process per rank (ranks may share a GPU as emulated nodes: the driver sets NCCL_HOSTID). A step
// is --kernels tiny kernels on the compute stream (what an optimizer without foreach launches)
// and --colls small all_reduces on a second stream, then a wait for both, as a training loop
// waits for its loss. Prints one line "RESULT {json}" with every timed step's milliseconds; the
// driver takes medians, and when each began ("t_ms": CLOCK_MONOTONIC ms since just before the
// communicator was made; the plugin starts its first CUPTI sampling window between 0 and
// "init_ms"). --seconds S times steps for S seconds instead of --steps. Never touches the
// profiler: the environment picks it (NCCL_PROFILER_PLUGIN).
#define BENCH_PROG "launch_bound"
#include "ranks.h"

#include <algorithm>
#include <ctime>
#include <vector>

__global__ void tiny(float *x, float a) { x[threadIdx.x] = x[threadIdx.x] * a + 1.0f; }

static double now_ms() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  int rank = (int)arg(argc, argv, "--rank", 0), nranks = (int)arg(argc, argv, "--nranks", 1);
  int dev = (int)arg(argc, argv, "--device", 0);
  long kernels = arg(argc, argv, "--kernels", 2000), colls = arg(argc, argv, "--colls", 2);
  long steps = arg(argc, argv, "--steps", 40), warmup = arg(argc, argv, "--warmup", 10);
  long count = arg(argc, argv, "--count", 1024);   // floats per all_reduce (4 KiB)
  long seconds = arg(argc, argv, "--seconds", 0);  // time steps for this long instead of --steps
  const char *id_file = sarg(argc, argv, "--id-file");
  if (nranks > 1 && !id_file) { fprintf(stderr, "launch_bound: --id-file is needed with --nranks > 1\n"); return 2; }
  if (rank >= nranks || steps < 1) { fprintf(stderr, "launch_bound: bad --rank/--nranks/--steps\n"); return 2; }

  CK(cudaSetDevice(dev));
  cudaStream_t compute, comm;
  CK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&comm, cudaStreamNonBlocking));
  float *x, *buf;
  CK(cudaMalloc(&x, 32 * sizeof(float)));
  CK(cudaMalloc(&buf, count * sizeof(float)));
  CK(cudaMemset(x, 0, 32 * sizeof(float)));
  CK(cudaMemset(buf, 0, count * sizeof(float)));
  ncclUniqueId id;
  if (nranks > 1) share_id(&id, rank, id_file, 120);
  else NK(ncclGetUniqueId(&id));
  ncclComm_t nc;
  double t_init = now_ms();
  NK(ncclCommInitRank(&nc, nranks, id, rank));   // one rank too: NCCL loads the profiler either way
  double init_ms = now_ms() - t_init;
  cudaEvent_t done;
  CK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));

  std::vector<double> ms, t_ms;
  double t_all = now_ms(), t_stop = 0;
  if (seconds) steps = 1L << 40;
  for (long s = 0; s < warmup + steps; s++) {
    double t0 = now_ms();
    if (s == warmup && seconds) t_stop = t0 + seconds * 1e3;
    if (seconds && s >= warmup && t0 >= t_stop) break;
    for (long c = 0; c < colls; c++) {
      // the collective waits for the compute so far, as a gradient bucket does
      CK(cudaEventRecord(done, compute));
      CK(cudaStreamWaitEvent(comm, done, 0));
      for (long k = 0; k < kernels / (colls + 1); k++) tiny<<<1, 32, 0, compute>>>(x, 0.5f);
      NK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, nc, comm));
    }
    for (long k = colls * (kernels / (colls + 1)); k < kernels; k++) tiny<<<1, 32, 0, compute>>>(x, 0.5f);
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(comm));
    CK(cudaStreamSynchronize(compute));
    if (s >= warmup) { ms.push_back(now_ms() - t0); t_ms.push_back(t0 - t_init); }
  }
  double total = now_ms() - t_all;
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  printf("RESULT {\"rank\":%d,\"nranks\":%d,\"kernels_per_step\":%ld,\"colls_per_step\":%ld,\"median_ms\":%.4f,"
         "\"total_ms\":%.1f,\"init_ms\":%.3f,\"step_ms\":[", rank, nranks, kernels, colls, sorted[sorted.size() / 2], total,
         init_ms);
  for (size_t i = 0; i < ms.size(); i++) printf("%s%.4f", i ? "," : "", ms[i]);
  printf("],\"t_ms\":[");
  for (size_t i = 0; i < t_ms.size(); i++) printf("%s%.3f", i ? "," : "", t_ms[i]);
  printf("]}\n");
  fflush(stdout);
  NK(ncclCommFinalize(nc));
  NK(ncclCommDestroy(nc));
  CK(cudaFree(x));
  CK(cudaFree(buf));
  return 0;
}
