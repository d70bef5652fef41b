/* clex.cu: the commlens example job, an nccl-tests-style sweep of NCCL collectives, one process
 * per GPU, with optional compute (hidden or exposed communication), a straggler rank and several
 * communicators, so the profiler has something realistic to look at. C-style CUDA; run --help. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ errors */

static int g_rank = -1;

static void die(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "clex[rank %d]: error: ", g_rank);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stdout);
  exit(1);
}

#define CUDA_CHECK(call)                                                                   \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess)                                                                 \
      die("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_));             \
  } while (0)

#define NCCL_CHECK(call)                                                                   \
  do {                                                                                     \
    ncclResult_t r_ = (call);                                                              \
    if (r_ != ncclSuccess)                                                                 \
      die("%s:%d: %s: %s (%s)", __FILE__, __LINE__, #call, ncclGetErrorString(r_),         \
          ncclGetLastError(NULL));                                                         \
  } while (0)

/* ------------------------------------------------------------------ options */

enum { OP_ALLREDUCE, OP_ALLGATHER, OP_REDUCESCATTER, OP_BROADCAST, OP_SENDRECV, OP_COUNT };
static const char *const op_names[OP_COUNT] = {"allreduce", "allgather", "reducescatter",
                                               "broadcast", "sendrecv"};
enum { COMPUTE_NONE, COMPUTE_OVERLAP, COMPUTE_SERIAL };
static const char *const compute_names[] = {"none", "overlap", "serial"};

struct options {
  int rank, nranks, device;
  const char *id_file;
  int ops[OP_COUNT], nops;
  size_t min_bytes, max_bytes;
  int factor;
  int iters, warmup, min_iters;
  size_t iter_bytes; /* 0: every size runs `iters`; else iters*size <= iter_bytes (>= min_iters) */
  int compute;
  double compute_us;
  int delay_rank;
  long delay_us;
  int comms;
  const char *csv;
  long abort_after; /* -1: never */
  int graph;        /* 1: each step is captured once into a CUDA graph and replayed */
};

static void usage(FILE *f) {
  fprintf(f,
    "usage: clex --rank R --nranks N --id-file PATH [options]\n"
    "  --device D           CUDA device (default: R %% visible device count)\n"
    "  --ops LIST           allreduce,allgather,reducescatter,broadcast,sendrecv (default allreduce)\n"
    "  --min-bytes S        smallest size, suffixes K M G (default 8)\n"
    "  --max-bytes S        largest size (default 256M)\n"
    "  --factor F           size multiplier (default 2)\n"
    "  --iters N            timed iterations per size (default 20)\n"
    "  --warmup W           untimed iterations per size (default 5; capped at iters/4, >= 1)\n"
    "  --iter-bytes S       cap iterations so iters*size <= S, but at least --min-iters\n"
    "  --min-iters N        floor for --iter-bytes (default 5)\n"
    "  --compute MODE       none | overlap (second stream, hides comm) | serial (same stream,\n"
    "                       exposes comm) (default none)\n"
    "  --compute-us U       compute kernel length per step in us (default 500)\n"
    "  --delay-rank R       this rank sleeps before issuing each collective (a straggler)\n"
    "  --delay-us U         how long (default 0)\n"
    "  --comms K            K communicators (1 + K-1 ncclCommSplit), round-robin (default 1)\n"
    "  --csv PATH           per-iteration latencies op,bytes,iter,us,step_us ('%%r' -> rank)\n"
    "  --abort-after N      ncclCommAbort every communicator once N collectives have completed\n"
    "                       (0: right after init), then exit 0 without destroying them\n"
    "  --graph 0|1          1: capture each size's step (compute + collective) once into a CUDA\n"
    "                       graph and replay it every iteration; time(us) is then the whole step\n"
    "size means total buffer bytes as in nccl-tests: allgather receives it, reducescatter sends it.\n");
}

static size_t parse_size(const char *opt, const char *s) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) die("%s: bad size '%s'", opt, s);
  switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
  }
  if (*end == 'B' || *end == 'b') end++;
  if (*end) die("%s: bad size '%s'", opt, s);
  return (size_t)v;
}

static long parse_long(const char *opt, const char *s, long lo, long hi) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi)
    die("%s: expected an integer in [%ld, %ld], got '%s'", opt, lo, hi, s);
  return v;
}

static void parse_ops(struct options *o, const char *list) {
  char buf[256];
  if (strlen(list) >= sizeof buf) die("--ops: list too long");
  strcpy(buf, list);
  o->nops = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int k;
    for (k = 0; k < OP_COUNT && strcmp(t, op_names[k]) != 0; k++) {}
    if (k == OP_COUNT) die("--ops: unknown op '%s'", t);
    if (o->nops == OP_COUNT) die("--ops: too many ops");
    o->ops[o->nops++] = k;
  }
  if (o->nops == 0) die("--ops: empty list");
}

static void parse_args(int argc, char **argv, struct options *o) {
  memset(o, 0, sizeof *o);
  o->rank = -1; o->nranks = -1; o->device = -1;
  o->ops[0] = OP_ALLREDUCE; o->nops = 1;
  o->min_bytes = 8; o->max_bytes = (size_t)256 << 20; o->factor = 2;
  o->iters = 20; o->warmup = 5; o->min_iters = 5;
  o->compute = COMPUTE_NONE; o->compute_us = 500;
  o->delay_rank = -1; o->comms = 1; o->abort_after = -1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); exit(0); }
    if (i + 1 >= argc) die("%s needs a value (see --help)", a);
    const char *v = argv[++i];
    if (!strcmp(a, "--rank")) o->rank = (int)parse_long(a, v, 0, INT_MAX);
    else if (!strcmp(a, "--nranks")) o->nranks = (int)parse_long(a, v, 1, INT_MAX);
    else if (!strcmp(a, "--id-file")) o->id_file = v;
    else if (!strcmp(a, "--device")) o->device = (int)parse_long(a, v, 0, 1023);
    else if (!strcmp(a, "--ops")) parse_ops(o, v);
    else if (!strcmp(a, "--min-bytes")) o->min_bytes = parse_size(a, v);
    else if (!strcmp(a, "--max-bytes")) o->max_bytes = parse_size(a, v);
    else if (!strcmp(a, "--factor")) o->factor = (int)parse_long(a, v, 2, 1024);
    else if (!strcmp(a, "--iters")) o->iters = (int)parse_long(a, v, 1, 10000000);
    else if (!strcmp(a, "--warmup")) o->warmup = (int)parse_long(a, v, 0, 10000000);
    else if (!strcmp(a, "--min-iters")) o->min_iters = (int)parse_long(a, v, 1, 10000000);
    else if (!strcmp(a, "--iter-bytes")) o->iter_bytes = parse_size(a, v);
    else if (!strcmp(a, "--compute")) {
      int k;
      for (k = 0; k < 3 && strcmp(v, compute_names[k]) != 0; k++) {}
      if (k == 3) die("--compute: expected none, overlap or serial, got '%s'", v);
      o->compute = k;
    }
    else if (!strcmp(a, "--compute-us")) o->compute_us = (double)parse_long(a, v, 1, 100000000);
    else if (!strcmp(a, "--delay-rank")) o->delay_rank = (int)parse_long(a, v, -1, INT_MAX);
    else if (!strcmp(a, "--delay-us")) o->delay_us = parse_long(a, v, 0, 100000000);
    else if (!strcmp(a, "--comms")) o->comms = (int)parse_long(a, v, 1, 64);
    else if (!strcmp(a, "--csv")) o->csv = v;
    else if (!strcmp(a, "--abort-after")) o->abort_after = parse_long(a, v, 0, LONG_MAX);
    else if (!strcmp(a, "--graph")) o->graph = (int)parse_long(a, v, 0, 1);
    else die("unknown option '%s' (see --help)", a);
  }
  if (o->rank < 0 || o->nranks < 1 || !o->id_file) die("--rank, --nranks and --id-file are required");
  if (o->rank >= o->nranks) die("--rank %d is not below --nranks %d", o->rank, o->nranks);
  if (o->min_bytes < 1 || o->min_bytes > o->max_bytes) die("need 1 <= --min-bytes <= --max-bytes");
}

/* ------------------------------------------------------------------ host clock and ID exchange */

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* Rank 0 writes the id to a temporary name and renames it, so a reader sees all of it or none. */
static void write_id(const char *path, const ncclUniqueId *id) {
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp)
    die("--id-file path too long");
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("cannot create %s: %s", tmp, strerror(errno));
  if (write(fd, id, sizeof *id) != (ssize_t)sizeof *id) die("cannot write %s: %s", tmp, strerror(errno));
  if (close(fd) != 0) die("cannot close %s: %s", tmp, strerror(errno));
  if (rename(tmp, path) != 0) die("cannot rename %s to %s: %s", tmp, path, strerror(errno));
}

static void read_id(const char *path, ncclUniqueId *id) {
  const double deadline = now_us() + 60e6;
  for (;;) {
    int fd = open(path, O_RDONLY);
    if (fd >= 0) {
      ssize_t n = read(fd, id, sizeof *id);
      close(fd);
      if (n == (ssize_t)sizeof *id) return;
    }
    if (now_us() > deadline)
      die("timed out after 60 s waiting for the NCCL id in %s (is rank 0 running, with the "
          "same --id-file?)", path);
    sleep_us(10000);
  }
}

/* ------------------------------------------------------------------ kernels */

/* The value rank r contributes at element i: small integers, so every sum is exact in float. */
__host__ __device__ static inline int value_of(int r, size_t i) { return r + 1 + (int)(i % 7); }

__global__ void fill_kernel(float *buf, size_t n, int rank) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    buf[i] = (float)value_of(rank, i);
}

/* Counts the elements of `out` that differ from what op `op` must have produced on `rank`. */
__global__ void check_kernel(const float *out, size_t n, int op, int rank, int nranks,
                             size_t count, unsigned long long *wrong) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    int want = 0;
    switch (op) {
      case OP_ALLREDUCE:
        for (int r = 0; r < nranks; r++) want += value_of(r, i);
        break;
      case OP_REDUCESCATTER:
        for (int r = 0; r < nranks; r++) want += value_of(r, (size_t)rank * count + i);
        break;
      case OP_ALLGATHER: want = value_of((int)(i / count), i % count); break;
      case OP_BROADCAST: want = value_of(0, i); break;
      case OP_SENDRECV: want = value_of((rank + nranks - 1) % nranks, i); break;
    }
    if (out[i] != (float)want) atomicAdd(wrong, 1ULL);
  }
}

/* A dependent FMA chain: pure SM time, no memory traffic. It runs on half of the SMs (one block
 * of 256 threads each): measured on H200, a block on every SM kept NCCL's blocks from being
 * scheduled until it ended, so the "overlap" mode serialised; with whole SMs free, NCCL's
 * kernel and this one really run at the same time. */
__global__ void busy_kernel(float *sink, long loops) {
  float x = (float)threadIdx.x, y = 1.0f;
  for (long k = 0; k < loops; k++) {
    x = fmaf(x, 0.999999f, 1e-7f);
    y = fmaf(y, 1.000001f, -1e-7f);
  }
  if (x + y == -1.0f) sink[threadIdx.x] = x; /* never true; keeps the loop alive */
}

/* ------------------------------------------------------------------ the job */

struct job {
  struct options o;
  int device, sms;
  ncclComm_t *comms;
  cudaStream_t stream, compute_stream;
  cudaEvent_t ev_start, ev_stop;
  float *send, *recv, *sink;
  unsigned long long *wrong_dev;
  long compute_loops;
  long ncoll; /* collectives issued so far, for round-robin and --abort-after */
  long step;  /* NVTX step number */
  cudaGraphExec_t gexec;      /* --graph: the captured step, for (g_op, g_count) */
  int g_op;
  size_t g_count;
  cudaEvent_t fork, join;     /* --graph overlap: the compute branch of the captured step */
  FILE *csv;
};

/* nccl-tests' bus bandwidth factor, as busbw_num / n: 2(n-1)/n for allreduce, (n-1)/n for
 * allgather and reducescatter, 1 for broadcast and sendrecv. */
static int busbw_num(int op, int n) {
  if (op == OP_ALLREDUCE) return 2 * (n - 1);
  if (op == OP_BROADCAST || op == OP_SENDRECV) return n;
  return n - 1;
}

/* Element counts for a size: `count` is per rank as NCCL takes it, `nout` what we verify. */
static void counts_for(int op, size_t bytes, int nranks, size_t *count, size_t *nout) {
  size_t elems = bytes / sizeof(float);
  if (op == OP_ALLGATHER || op == OP_REDUCESCATTER) {
    *count = elems / (size_t)nranks;
    *nout = op == OP_ALLGATHER ? *count * (size_t)nranks : *count;
  } else {
    *count = elems;
    *nout = elems;
  }
}

static void issue(struct job *j, int op, size_t count) {
  ncclComm_t comm = j->comms[j->ncoll % j->o.comms];
  const int r = j->o.rank, n = j->o.nranks;
  switch (op) {
    case OP_ALLREDUCE:
      NCCL_CHECK(ncclAllReduce(j->send, j->recv, count, ncclFloat, ncclSum, comm, j->stream));
      break;
    case OP_ALLGATHER:
      NCCL_CHECK(ncclAllGather(j->send, j->recv, count, ncclFloat, comm, j->stream));
      break;
    case OP_REDUCESCATTER:
      NCCL_CHECK(ncclReduceScatter(j->send, j->recv, count, ncclFloat, ncclSum, comm, j->stream));
      break;
    case OP_BROADCAST:
      NCCL_CHECK(ncclBroadcast(j->send, j->recv, count, ncclFloat, 0, comm, j->stream));
      break;
    case OP_SENDRECV:
      NCCL_CHECK(ncclGroupStart());
      NCCL_CHECK(ncclSend(j->send, count, ncclFloat, (r + 1) % n, comm, j->stream));
      NCCL_CHECK(ncclRecv(j->recv, count, ncclFloat, (r + n - 1) % n, comm, j->stream));
      NCCL_CHECK(ncclGroupEnd());
      break;
  }
  j->ncoll++;
}

static void launch_busy(struct job *j, cudaStream_t s) {
  busy_kernel<<<(j->sms + 1) / 2, 256, 0, s>>>(j->sink, j->compute_loops);
  CUDA_CHECK(cudaGetLastError());
}

/* Times the busy kernel once to turn --compute-us into a loop count. */
static void calibrate_compute(struct job *j) {
  const long probe = 200000;
  float best_ms = 1e30f;
  j->compute_loops = probe;
  for (int k = 0; k < 3; k++) {
    CUDA_CHECK(cudaEventRecord(j->ev_start, j->stream));
    launch_busy(j, j->stream);
    CUDA_CHECK(cudaEventRecord(j->ev_stop, j->stream));
    CUDA_CHECK(cudaEventSynchronize(j->ev_stop));
    float ms;
    CUDA_CHECK(cudaEventElapsedTime(&ms, j->ev_start, j->ev_stop));
    if (ms < best_ms) best_ms = ms;
  }
  double loops_per_us = (double)probe / ((double)best_ms * 1000.0);
  j->compute_loops = (long)(j->o.compute_us * loops_per_us);
  if (j->compute_loops < 1) j->compute_loops = 1;
  printf("# compute: %s, %.0f us per step = %ld loops (calibrated %.1f loops/us)\n",
         compute_names[j->o.compute], j->o.compute_us, j->compute_loops, loops_per_us);
}

static void abort_and_exit(struct job *j) {
  CUDA_CHECK(cudaStreamSynchronize(j->stream));
  printf("# abort: ncclCommAbort after %ld collectives\n", j->ncoll);
  fflush(stdout);
  for (int c = j->o.comms - 1; c >= 0; c--) NCCL_CHECK(ncclCommAbort(j->comms[c]));
  if (j->csv) fclose(j->csv);
  exit(0);
}

/* --graph: captures one step (compute as --compute says, then the collective) into a CUDA graph,
 * once per (op, count). The overlap compute is a branch forked from and joined back to the
 * collective's stream, so the replay runs both at once as the eager step does. */
static void capture_step(struct job *j, int op, size_t count) {
  if (j->gexec && j->g_op == op && j->g_count == count) return;
  if (j->gexec) CUDA_CHECK(cudaGraphExecDestroy(j->gexec));
  cudaGraph_t g;
  CUDA_CHECK(cudaStreamBeginCapture(j->stream, cudaStreamCaptureModeGlobal));
  if (j->o.compute == COMPUTE_SERIAL) launch_busy(j, j->stream);
  if (j->o.compute == COMPUTE_OVERLAP) {
    CUDA_CHECK(cudaEventRecord(j->fork, j->stream));
    CUDA_CHECK(cudaStreamWaitEvent(j->compute_stream, j->fork, 0));
    launch_busy(j, j->compute_stream);
    CUDA_CHECK(cudaEventRecord(j->join, j->compute_stream));
  }
  issue(j, op, count);
  if (j->o.compute == COMPUTE_OVERLAP) CUDA_CHECK(cudaStreamWaitEvent(j->stream, j->join, 0));
  CUDA_CHECK(cudaStreamEndCapture(j->stream, &g));
  CUDA_CHECK(cudaGraphInstantiate(&j->gexec, g, 0));
  CUDA_CHECK(cudaGraphDestroy(g));
  j->g_op = op;
  j->g_count = count;
}

/* One replay of the captured step, timed between two events. */
static double run_graph_step(struct job *j, int op, size_t count, double *step_us) {
  capture_step(j, op, count);
  const double t0 = now_us();
  if (j->o.delay_us > 0 && j->o.rank == j->o.delay_rank) sleep_us(j->o.delay_us);
  CUDA_CHECK(cudaEventRecord(j->ev_start, j->stream));
  CUDA_CHECK(cudaGraphLaunch(j->gexec, j->stream));
  CUDA_CHECK(cudaEventRecord(j->ev_stop, j->stream));
  CUDA_CHECK(cudaEventSynchronize(j->ev_stop));
  *step_us = now_us() - t0;
  float ms;
  CUDA_CHECK(cudaEventElapsedTime(&ms, j->ev_start, j->ev_stop));
  return (double)ms * 1000.0;
}

/* One step: straggler delay, compute, the collective between two events, then a full sync so the
 * step (and its NVTX range) really ends. Returns the collective's GPU time in us; *step_us gets
 * the host wall time of the whole step. */
static double run_step(struct job *j, int op, size_t count, double *step_us) {
  if (j->o.graph) return run_graph_step(j, op, count, step_us);
  const double t0 = now_us();
  if (j->o.delay_us > 0 && j->o.rank == j->o.delay_rank) sleep_us(j->o.delay_us);
  if (j->o.compute == COMPUTE_SERIAL) launch_busy(j, j->stream);
  if (j->o.compute == COMPUTE_OVERLAP) launch_busy(j, j->compute_stream);
  CUDA_CHECK(cudaEventRecord(j->ev_start, j->stream));
  issue(j, op, count);
  CUDA_CHECK(cudaEventRecord(j->ev_stop, j->stream));
  if (j->o.abort_after >= 0 && j->ncoll >= j->o.abort_after) abort_and_exit(j);
  CUDA_CHECK(cudaEventSynchronize(j->ev_stop));
  if (j->o.compute == COMPUTE_OVERLAP) CUDA_CHECK(cudaStreamSynchronize(j->compute_stream));
  *step_us = now_us() - t0;
  float ms;
  CUDA_CHECK(cudaEventElapsedTime(&ms, j->ev_start, j->ev_stop));
  return (double)ms * 1000.0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_of(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int iters_for(const struct options *o, size_t bytes) {
  if (o->iter_bytes == 0) return o->iters;
  size_t cap = o->iter_bytes / bytes;
  int n = cap < (size_t)o->iters ? (int)cap : o->iters;
  return n < o->min_iters ? o->min_iters : n;
}

/* Runs one (op, size) point; prints its row and returns the number of wrong elements. */
static unsigned long long run_size(struct job *j, int op, size_t bytes, double *busbw_out) {
  size_t count, nout;
  counts_for(op, bytes, j->o.nranks, &count, &nout);
  const int iters = iters_for(&j->o, bytes);
  int warm = j->o.warmup < iters / 4 ? j->o.warmup : iters / 4;
  if (warm < 1 && j->o.warmup > 0) warm = 1;
  double *us = (double *)malloc(sizeof(double) * (size_t)iters * 2);
  if (!us) die("out of memory");
  double *step = us + iters;

  /* NaN-fill the output so a collective that writes nothing cannot pass the check. */
  CUDA_CHECK(cudaMemsetAsync(j->recv, 0xff, nout * sizeof(float), j->stream));
  for (int w = 0; w < warm; w++) {
    double s;
    nvtxRangePushA("warmup");
    run_step(j, op, count, &s);
    nvtxRangePop();
  }
  char name[32];
  for (int it = 0; it < iters; it++) {
    snprintf(name, sizeof name, "step %ld", j->step++);
    nvtxRangePushA(name);
    us[it] = run_step(j, op, count, &step[it]);
    nvtxRangePop();
    if (j->csv) fprintf(j->csv, "%s,%zu,%d,%.3f,%.3f\n", op_names[op], bytes, it, us[it], step[it]);
  }

  CUDA_CHECK(cudaMemsetAsync(j->wrong_dev, 0, sizeof *j->wrong_dev, j->stream));
  check_kernel<<<j->sms * 4, 256, 0, j->stream>>>(j->recv, nout, op, j->o.rank, j->o.nranks,
                                                  count, j->wrong_dev);
  CUDA_CHECK(cudaGetLastError());
  unsigned long long wrong = 0;
  CUDA_CHECK(cudaMemcpyAsync(&wrong, j->wrong_dev, sizeof wrong, cudaMemcpyDeviceToHost, j->stream));
  CUDA_CHECK(cudaStreamSynchronize(j->stream));

  double min_us = us[0];
  for (int it = 1; it < iters; it++) if (us[it] < min_us) min_us = us[it];
  const double med = median_of(us, iters), med_step = median_of(step, iters);
  const double algbw = (double)bytes / (med * 1e-6) / 1e9;
  const double busbw = algbw * busbw_num(op, j->o.nranks) / j->o.nranks;
  *busbw_out = busbw;
  printf("%14s %12zu %12zu  float %11.2f %10.2f %9.2f %9.2f %11.2f %6d %6llu\n", op_names[op], bytes,
         count, med, min_us, algbw, busbw, med_step, iters, wrong);
  fflush(stdout);
  free(us);
  return wrong;
}

static void open_csv(struct job *j) {
  if (!j->o.csv) return;
  char path[PATH_MAX];
  size_t k = 0;
  for (const char *p = j->o.csv; *p && k + 16 < sizeof path; p++) {
    if (p[0] == '%' && p[1] == 'r') { k += (size_t)snprintf(path + k, sizeof path - k, "%d", j->o.rank); p++; }
    else path[k++] = *p;
  }
  path[k] = '\0';
  j->csv = fopen(path, "w");
  if (!j->csv) die("cannot open --csv %s: %s", path, strerror(errno));
  fprintf(j->csv, "op,bytes,iter,us,step_us\n");
}

static void setup(struct job *j) {
  const struct options *o = &j->o;
  ncclUniqueId id;
  if (o->rank != 0) read_id(o->id_file, &id); /* needs no CUDA: fails fast and clearly */
  int ndev = 0;
  CUDA_CHECK(cudaGetDeviceCount(&ndev));
  if (ndev < 1) die("no CUDA device visible");
  j->device = o->device >= 0 ? o->device : o->rank % ndev;
  CUDA_CHECK(cudaSetDevice(j->device));
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, j->device));
  j->sms = prop.multiProcessorCount;

  if (o->rank == 0) {
    NCCL_CHECK(ncclGetUniqueId(&id));
    write_id(o->id_file, &id);
  }
  j->comms = (ncclComm_t *)calloc((size_t)o->comms, sizeof(ncclComm_t));
  if (!j->comms) die("out of memory");
  NCCL_CHECK(ncclCommInitRank(&j->comms[0], o->nranks, id, o->rank));
  /* Every rank has read the id once init returns: remove it so no later run reads a stale one. */
  if (o->rank == 0) unlink(o->id_file);
  for (int c = 1; c < o->comms; c++) NCCL_CHECK(ncclCommSplit(j->comms[0], 0, o->rank, &j->comms[c], NULL));

  CUDA_CHECK(cudaStreamCreateWithFlags(&j->stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&j->compute_stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreate(&j->ev_start));
  CUDA_CHECK(cudaEventCreate(&j->ev_stop));
  CUDA_CHECK(cudaEventCreateWithFlags(&j->fork, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&j->join, cudaEventDisableTiming));
  const size_t elems = o->max_bytes / sizeof(float) + 1;
  CUDA_CHECK(cudaMalloc((void **)&j->send, elems * sizeof(float)));
  CUDA_CHECK(cudaMalloc((void **)&j->recv, elems * sizeof(float)));
  CUDA_CHECK(cudaMalloc((void **)&j->sink, 256 * sizeof(float)));
  CUDA_CHECK(cudaMalloc((void **)&j->wrong_dev, sizeof *j->wrong_dev));
  fill_kernel<<<j->sms * 4, 256, 0, j->stream>>>(j->send, elems, o->rank);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaStreamSynchronize(j->stream));

  int nccl_version = 0;
  NCCL_CHECK(ncclGetVersion(&nccl_version));
  char bus[32] = "?";
  cudaDeviceGetPCIBusId(bus, (int)sizeof bus, j->device);
  printf("# clex: rank %d of %d, pid %d, device %d (%s, %s, %d SMs), NCCL %d.%d.%d, %d comm(s)\n",
         o->rank, o->nranks, (int)getpid(), j->device, prop.name, bus, j->sms,
         nccl_version / 10000, nccl_version / 100 % 100, nccl_version % 100, o->comms);
  if (o->delay_rank >= 0 && o->delay_us > 0)
    printf("# straggler: rank %d sleeps %ld us before each collective%s\n", o->delay_rank,
           o->delay_us, o->delay_rank == o->rank ? " (this rank)" : "");
  if (o->graph) printf("# graph: each size's step is captured once into a CUDA graph and replayed\n");
  if (o->compute != COMPUTE_NONE) calibrate_compute(j);
  open_csv(j);
}

static void teardown(struct job *j) {
  CUDA_CHECK(cudaDeviceSynchronize());
  if (j->gexec) CUDA_CHECK(cudaGraphExecDestroy(j->gexec));
  CUDA_CHECK(cudaEventDestroy(j->fork));
  CUDA_CHECK(cudaEventDestroy(j->join));
  for (int c = j->o.comms - 1; c >= 0; c--) {
    NCCL_CHECK(ncclCommFinalize(j->comms[c]));
    NCCL_CHECK(ncclCommDestroy(j->comms[c]));
  }
  free(j->comms);
  CUDA_CHECK(cudaFree(j->send));
  CUDA_CHECK(cudaFree(j->recv));
  CUDA_CHECK(cudaFree(j->sink));
  CUDA_CHECK(cudaFree(j->wrong_dev));
  CUDA_CHECK(cudaEventDestroy(j->ev_start));
  CUDA_CHECK(cudaEventDestroy(j->ev_stop));
  CUDA_CHECK(cudaStreamDestroy(j->stream));
  CUDA_CHECK(cudaStreamDestroy(j->compute_stream));
  if (j->csv && fclose(j->csv) != 0) die("writing --csv: %s", strerror(errno));
}

int main(int argc, char **argv) {
  static struct job j;
  parse_args(argc, argv, &j.o);
  g_rank = j.o.rank;
  setup(&j);
  if (j.o.abort_after == 0) abort_and_exit(&j);

  printf("#\n# %12s %12s %12s %6s %11s %10s %9s %9s %11s %6s %6s\n", "op", "size(B)", "count",
         "type", "time(us)", "min(us)", "algbw", "busbw", "step(us)", "iters", "wrong");
  printf("# %12s %12s %12s %6s %11s %10s %9s %9s %11s %6s %6s\n", "", "", "", "", "median", "",
         "(GB/s)", "(GB/s)", "median", "", "");
  unsigned long long wrong = 0;
  double busbw_sum = 0;
  int points = 0;
  for (int k = 0; k < j.o.nops; k++) {
    const int op = j.o.ops[k];
    for (size_t bytes = j.o.min_bytes; bytes <= j.o.max_bytes; bytes *= (size_t)j.o.factor) {
      size_t count, nout;
      counts_for(op, bytes, j.o.nranks, &count, &nout);
      if (count == 0) continue; /* smaller than one element per rank */
      double busbw;
      wrong += run_size(&j, op, bytes, &busbw);
      busbw_sum += busbw;
      points++;
      if (bytes > j.o.max_bytes / (size_t)j.o.factor) break; /* next step would overflow max */
    }
  }
  printf("# avg busbw: %.2f GB/s over %d sizes\n", points ? busbw_sum / points : 0.0, points);
  teardown(&j);
  if (wrong) {
    printf("# correctness: FAILED (%llu wrong elements)\n", wrong);
    return 1;
  }
  printf("# correctness: OK\n");
  return 0;
}
