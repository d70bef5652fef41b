/* clex.h: what the example job's files share: the options, one rank's job, and the team of ranks
 * one host thread drives. options.cu parses the command line, step.cu runs the steps and the sweep,
 * clex.cu sets up the ranks in each mode and owns main. */
#ifndef CLEX_H
#define CLEX_H

#include <cuda_runtime.h>
#include <nccl.h>

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

/* ------------------------------------------------------------------ errors */

extern thread_local int g_rank; /* the rank this thread drives, for messages (-1: several) */

/* Prints "clex[rank R]: error: ..." and exits 1. */
__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);

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
extern const char *const op_names[OP_COUNT];
enum { COMPUTE_NONE, COMPUTE_OVERLAP, COMPUTE_SERIAL };
extern const char *const compute_names[];
enum { DELAY_UNSET = -1, DELAY_HOST, DELAY_STREAM };
enum { INIT_UNSET = -1, INIT_ALL, INIT_GROUP };
enum { MAX_DEVICES = 64 };

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
  int delay_how;    /* DELAY_HOST: the issuing thread sleeps; DELAY_STREAM: a spin kernel */
  int comms;
  const char *csv;
  long abort_after; /* -1: never */
  int graph;        /* 1: each step is captured once into a CUDA graph and replayed */
  int ndevices;     /* --devices: the GPUs this one process drives; 0: one process per GPU */
  int devices[MAX_DEVICES];
  int threads;      /* with --devices: 1 = one pthread per GPU, 0 = one thread issues for all */
  int init;         /* with --devices --threads 0: ncclCommInitAll or grouped ncclCommInitRank */
};


/* Fills *o from the command line and the mode's defaults, or dies saying why; --help prints the
 * usage and exits 0. */
void parse_args(int argc, char **argv, struct options *o);

/* ------------------------------------------------------------------ host clock */

static inline double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static inline void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* The value rank r contributes at element i: small integers, so every sum is exact in float. */
__host__ __device__ static inline int value_of(int r, size_t i) { return r + 1 + (int)(i % 7); }

/* ------------------------------------------------------------------ the job */

/* One rank: its GPU, communicators, streams and buffers. */
struct job {
  struct options o; /* this rank's copy: o.rank is its own */
  int device, sms;
  cudaDeviceProp prop;
  ncclComm_t *comms;
  cudaStream_t stream, compute_stream;
  cudaEvent_t ev_start, ev_stop;
  float *send, *recv, *sink;
  unsigned long long *wrong_dev;
  long compute_loops;
  long ncoll; /* collectives issued so far, for round-robin and --abort-after */
  cudaGraphExec_t gexec;      /* --graph: the captured step, for (g_op, g_count) */
  int g_op;
  size_t g_count;
  cudaEvent_t fork, join;     /* --graph overlap: the compute branch of the captured step */
  FILE *csv;
  int csv_shared;             /* csv is every rank's one file, closed by whoever opened it */
  double last_us, last_step_us; /* the last step: collective GPU time, host wall time */
};

/* The ranks one host thread drives: one (a process or a thread per GPU), or every GPU of this
 * process (--devices --threads 0), whose NCCL calls are then grouped and whose CUDA calls each
 * select their device first. With one rank, no call is added: that is the one-process-per-GPU job
 * as it always was. */
struct team {
  struct job *j;
  int n;
  long step;                          /* NVTX step number */
  pthread_barrier_t *barrier;         /* --threads 1: the threads meet here before every step */
  const ncclUniqueId *id;             /* --threads 1: the one id every thread's rank joins */
  cudaStreamCaptureMode capture_mode; /* --graph: global for one process per GPU (as it always
                                         was), thread-local with --devices, as nccl-tests does */
};

#define FOR_EACH_RANK(t, j) for (struct job *j = (t)->j; j < (t)->j + (t)->n; j++)

static inline void team_use(const struct team *t, const struct job *j) {
  if (t->n > 1) CUDA_CHECK(cudaSetDevice(j->device));
}
static inline void team_group_start(const struct team *t) {
  if (t->n > 1) NCCL_CHECK(ncclGroupStart());
}
static inline void team_group_end(const struct team *t) {
  if (t->n > 1) NCCL_CHECK(ncclGroupEnd());
}
static inline void team_wait(const struct team *t) {
  if (t->barrier) pthread_barrier_wait(t->barrier);
}
static inline int multi_gpu(const struct team *t) { return t->j[0].o.ndevices > 0; }

/* ------------------------------------------------------------------ step.cu */

/* Times the busy kernel once to turn --compute-us into a loop count (the rank's device selected). */
void calibrate_compute(struct job *j);
/* Aborts every communicator of the team and exits 0 (see step.cu). */
__attribute__((noreturn)) void abort_and_exit(struct team *t);
/* The result table's two header lines. */
void print_header(const struct options *o);
/* Every op and size in turn, a result row per rank and size; returns the number of wrong elements. */
unsigned long long sweep(struct team *t);

#endif
