// ranks.h: what the GPU benchmarks whose ranks are separate processes share (bench/launch_bound.cu,
// bench/host_loop.cu): the CUDA and NCCL error checks, their integer options, and the NCCL unique
// id passed through a file, which rank 0 writes new beside the target and renames in while the
// others wait for it. Define BENCH_PROG (the program's name, for its messages) first.
#ifndef COMMLENS_BENCH_RANKS_H
#define COMMLENS_BENCH_RANKS_H
#include <cuda_runtime.h>
#include <nccl.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, BENCH_PROG ": %s: %s\n", #x, cudaGetErrorString(e_)); exit(3); } } while (0)
#define NK(x) do { ncclResult_t r_ = (x); if (r_ != ncclSuccess) { \
  fprintf(stderr, BENCH_PROG ": %s: %s\n", #x, ncclGetErrorString(r_)); exit(3); } } while (0)

// The value of option `name` (a non-negative integer), else `def`; a bad one ends the program.
static long arg(int argc, char **argv, const char *name, long def) {
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], name)) {
      char *end;
      errno = 0;
      long v = strtol(argv[i + 1], &end, 10);
      if (errno || *end || v < 0) { fprintf(stderr, BENCH_PROG ": bad %s '%s'\n", name, argv[i + 1]); exit(2); }
      return v;
    }
  return def;
}

// The value of option `name`, else NULL.
static const char *sarg(int argc, char **argv, const char *name) {
  for (int i = 1; i + 1 < argc; i++) if (!strcmp(argv[i], name)) return argv[i + 1];
  return nullptr;
}

static void share_id(ncclUniqueId *id, int rank, const char *path, int wait_s) {
  if (rank == 0) {
    NK(ncclGetUniqueId(id));
    std::string tmp = std::string(path) + ".tmp" + std::to_string(getpid());
    FILE *f = fopen(tmp.c_str(), "wbx");
    if (!f || fwrite(id, sizeof *id, 1, f) != 1 || fclose(f) != 0 || rename(tmp.c_str(), path) != 0) {
      fprintf(stderr, BENCH_PROG ": cannot write %s: %s\n", path, strerror(errno));
      exit(3);
    }
    return;
  }
  for (int i = 0; i < wait_s * 100; i++) {
    FILE *f = fopen(path, "rb");
    if (f) {
      size_t got = fread(id, sizeof *id, 1, f);
      fclose(f);
      if (got == 1) return;
    }
    usleep(10000);
  }
  fprintf(stderr, BENCH_PROG ": no NCCL id at %s after %d s\n", path, wait_s);
  exit(3);
}
#endif
