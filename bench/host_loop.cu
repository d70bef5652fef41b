// host_loop.cu: a host-bound loop of 8-byte all_reduces, as a framework issues them: its own work
// between two calls (--host-us of spinning on the calling thread), then ncclAllReduce, never
// waiting for the GPU but at a block's end. The loop of bench/allreduce_loop.py without Python:
// there, the interpreter's and the framework's own jitter (a round's median iteration moved
// between 23 and 42 us from one run to the next on the same host) hides a microsecond; here
// the host's work is the same every iteration, and the GPU (about 18 us an 8-byte all_reduce
// over NVLink) keeps up with --host-us 30, so nothing but the calling thread paces the loop.
//
// One process per rank (bench/mask_sampling.sh LOOP=c starts them; ranks sharing a GPU take
// NCCL_HOSTID from it). Each rank prints one line "RESULT {json}": per block, the mean
// iteration ("us": what a latency-bound loop pays), the median iteration ("med_us") and the
// median time inside ncclAllReduce ("call_us": the calling thread's own cost, which the plugin's
// callbacks add to). The profiler is never touched: the environment picks it.
#define BENCH_PROG "host_loop"
#include "ranks.h"

#include <algorithm>
#include <ctime>
#include <vector>

static inline long long now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static double median_us(std::vector<long long> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2] / 1e3;
}

static void print_list(const char *name, const std::vector<double> &v) {
  printf(",\"%s\":[", name);
  for (size_t i = 0; i < v.size(); i++) printf("%s%.3f", i ? "," : "", v[i]);
  printf("]");
}

int main(int argc, char **argv) {
  int rank = (int)arg(argc, argv, "--rank", 0), nranks = (int)arg(argc, argv, "--nranks", 2);
  int dev = (int)arg(argc, argv, "--device", 0);
  long blocks = arg(argc, argv, "--blocks", 6), iters = arg(argc, argv, "--iters", 5000);
  long host_us = arg(argc, argv, "--host-us", 30);
  // iterations before the blocks: the same count on every rank (each call is a collective), set
  // by the driver to outlast the plugin's first CUPTI window
  long warmup = arg(argc, argv, "--warmup", 2000);
  const char *id_file = sarg(argc, argv, "--id-file");
  if (nranks > 1 && !id_file) { fprintf(stderr, "host_loop: --id-file is needed with --nranks > 1\n"); return 2; }
  if (rank >= nranks || blocks < 1 || iters < 1) { fprintf(stderr, "host_loop: bad --rank/--nranks/--blocks/--iters\n"); return 2; }

  CK(cudaSetDevice(dev));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *buf;
  CK(cudaMalloc(&buf, 2 * sizeof(float)));
  CK(cudaMemset(buf, 0, 2 * sizeof(float)));
  ncclUniqueId id;
  if (nranks > 1) share_id(&id, rank, id_file, 120);
  else NK(ncclGetUniqueId(&id));
  ncclComm_t nc;
  long long t_start = now_ns();
  NK(ncclCommInitRank(&nc, nranks, id, rank));

  const long long spin_ns = host_us * 1000;
  std::vector<long long> iter_ns(iters), call_ns(iters);
  std::vector<double> us, med_us, call_us;
  for (long b = -1; b < blocks; b++) {   // block -1: the warm-up, not timed
    long n = b < 0 ? warmup : iters;
    long long t_block = now_ns(), t_prev = t_block;
    for (long i = 0; i < n; i++) {
      while (now_ns() - t_prev < spin_ns) {}   // the framework's own work
      long long t0 = now_ns();
      NK(ncclAllReduce(buf, buf, 2, ncclFloat, ncclSum, nc, s));
      long long t1 = now_ns();
      if (b >= 0) { iter_ns[i] = t1 - t_prev; call_ns[i] = t1 - t0; }
      t_prev = t1;
    }
    CK(cudaStreamSynchronize(s));
    if (b < 0) continue;
    us.push_back((now_ns() - t_block) / 1e3 / iters);
    med_us.push_back(median_us(iter_ns));
    call_us.push_back(median_us(call_ns));
  }
  printf("RESULT {\"rank\":%d,\"nranks\":%d,\"host_us\":%ld,\"iters\":%ld,\"run_s\":%.3f", rank, nranks, host_us, iters,
         (now_ns() - t_start) / 1e9);
  print_list("us", us);
  print_list("med_us", med_us);
  print_list("call_us", call_us);
  printf("}\n");
  fflush(stdout);
  NK(ncclCommFinalize(nc));
  NK(ncclCommDestroy(nc));
  CK(cudaFree(buf));
  return 0;
}
