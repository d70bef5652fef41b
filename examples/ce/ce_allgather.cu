// ce_allgather.cu: copy-engine collectives (NCCL 2.28+, CE collectives) on every GPU of
// one process: communicators with CTAPolicy NCCL_CTA_POLICY_ZERO, buffers from ncclMemAlloc
// registered as symmetric windows, then ITERS AllGathers of BYTES per rank. NCCL runs them on
// the copy engines where it can (NVLink between all ranks, symmetric support); elsewhere, as
// kernels. Prints one line "RESULT {json}" with the median iteration time. --kernel: the default
// CTA policy and unregistered buffers (kernel AllGathers), for comparison.
//   nvcc -O2 -std=c++17 -o ce_allgather examples/ce/ce_allgather.cu -I$NCCL/include -L$NCCL/lib -lnccl
//   ./ce_allgather [BYTES] [ITERS] [--kernel]
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "ce_allgather: %s: %s\n", #x, cudaGetErrorString(e_)); exit(3); } } while (0)
#define NK(x) do { ncclResult_t r_ = (x); if (r_ != ncclSuccess) { \
  fprintf(stderr, "ce_allgather: %s: %s\n", #x, ncclGetErrorString(r_)); exit(3); } } while (0)

static double now_ms() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  size_t bytes = argc > 1 ? strtoull(argv[1], nullptr, 10) : (1u << 20);
  int iters = argc > 2 ? atoi(argv[2]) : 50, kernel = 0;
  for (int i = 1; i < argc; i++) kernel |= !strcmp(argv[i], "--kernel");
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  if (n < 2) { fprintf(stderr, "ce_allgather: needs 2 or more GPUs, found %d\n", n); return 2; }
  if (n > 8) n = 8;
  if (bytes < 4 || iters < 1) { fprintf(stderr, "ce_allgather: bad BYTES or ITERS\n"); return 2; }
  size_t count = bytes / sizeof(float);
  ncclUniqueId id;
  NK(ncclGetUniqueId(&id));
  std::vector<ncclComm_t> comm(n);
  std::vector<void *> send(n), recv(n);
  std::vector<ncclWindow_t> sw(n), rw(n);
  std::vector<cudaStream_t> st(n);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  if (!kernel) cfg.CTAPolicy = NCCL_CTA_POLICY_ZERO;
  NK(ncclGroupStart());
  for (int r = 0; r < n; r++) {
    CK(cudaSetDevice(r));
    NK(ncclCommInitRankConfig(&comm[r], n, id, r, &cfg));
  }
  NK(ncclGroupEnd());
  for (int r = 0; r < n; r++) {
    CK(cudaSetDevice(r));
    CK(cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking));
    if (kernel) {
      CK(cudaMalloc(&send[r], count * sizeof(float)));
      CK(cudaMalloc(&recv[r], count * sizeof(float) * n));
    } else {
      NK(ncclMemAlloc(&send[r], count * sizeof(float)));
      NK(ncclMemAlloc(&recv[r], count * sizeof(float) * n));
    }
    CK(cudaMemset(send[r], 0, count * sizeof(float)));
  }
  if (!kernel) {
    NK(ncclGroupStart());
    for (int r = 0; r < n; r++) {
      NK(ncclCommWindowRegister(comm[r], send[r], count * sizeof(float), &sw[r], NCCL_WIN_COLL_SYMMETRIC));
      NK(ncclCommWindowRegister(comm[r], recv[r], count * sizeof(float) * n, &rw[r], NCCL_WIN_COLL_SYMMETRIC));
    }
    NK(ncclGroupEnd());
  }
  std::vector<double> ms;
  for (int it = 0; it < iters + 5; it++) {
    double t0 = now_ms();
    NK(ncclGroupStart());
    for (int r = 0; r < n; r++) NK(ncclAllGather(send[r], recv[r], count, ncclFloat, comm[r], st[r]));
    NK(ncclGroupEnd());
    for (int r = 0; r < n; r++) { CK(cudaSetDevice(r)); CK(cudaStreamSynchronize(st[r])); }
    if (it >= 5) ms.push_back(now_ms() - t0);
  }
  std::sort(ms.begin(), ms.end());
  printf("RESULT {\"gpus\":%d,\"bytes\":%zu,\"iters\":%d,\"mode\":\"%s\",\"median_ms\":%.4f}\n", n, bytes, iters,
         kernel ? "kernel" : "ce", ms[ms.size() / 2]);
  if (!kernel) {
    NK(ncclGroupStart());
    for (int r = 0; r < n; r++) { NK(ncclCommWindowDeregister(comm[r], sw[r])); NK(ncclCommWindowDeregister(comm[r], rw[r])); }
    NK(ncclGroupEnd());
  }
  for (int r = 0; r < n; r++) {
    CK(cudaSetDevice(r));
    if (kernel) { CK(cudaFree(send[r])); CK(cudaFree(recv[r])); }
    else { NK(ncclMemFree(send[r])); NK(ncclMemFree(recv[r])); }
    NK(ncclCommDestroy(comm[r]));
  }
  return 0;
}
