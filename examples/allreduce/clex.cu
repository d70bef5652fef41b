/* clex.cu: the commlens example job, an nccl-tests-style sweep of NCCL collectives with optional
 * compute (hidden or exposed communication), a straggler rank and several communicators, so the
 * profiler has something realistic to look at. Three ways to run it: one process per GPU
 * (--rank/--nranks/--id-file), or one process driving several GPUs (--devices) from one thread
 * or from one thread per GPU. This file sets up the ranks in each mode and owns main; the steps
 * are in step.cu, the command line in options.cu. C-style CUDA; run --help. */
#include "clex.h"

#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ ID exchange */

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

/* ------------------------------------------------------------------ setup and teardown */

__global__ void fill_kernel(float *buf, size_t n, int rank) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    buf[i] = (float)value_of(rank, i);
}

/* Opens --csv for `rank` ('%r' in the path -> the rank) and writes its header; the caller owns
 * the file. With --devices the rows start with the rank. */
static FILE *open_csv(const struct options *o, int rank) {
  char path[PATH_MAX];
  size_t k = 0;
  for (const char *p = o->csv; *p && k + 16 < sizeof path; p++) {
    if (p[0] == '%' && p[1] == 'r') { k += (size_t)snprintf(path + k, sizeof path - k, "%d", rank); p++; }
    else path[k++] = *p;
  }
  path[k] = '\0';
  FILE *f = fopen(path, "w");
  if (!f) die("cannot open --csv %s: %s", path, strerror(errno));
  fprintf(f, "%sop,bytes,iter,us,step_us\n", o->ndevices ? "rank," : "");
  return f;
}

static int device_count(void) {
  int ndev = 0;
  CUDA_CHECK(cudaGetDeviceCount(&ndev));
  if (ndev < 1) die("no CUDA device visible");
  return ndev;
}

/* Selects the rank's device (j->device), learns its SM count, and makes room for its
 * communicators. */
static void setup_device(struct job *j, int ndev) {
  if (j->device >= ndev) die("device %d is not visible (%d device(s))", j->device, ndev);
  CUDA_CHECK(cudaSetDevice(j->device));
  CUDA_CHECK(cudaGetDeviceProperties(&j->prop, j->device));
  j->sms = j->prop.multiProcessorCount;
  j->comms = (ncclComm_t *)calloc((size_t)j->o.comms, sizeof(ncclComm_t));
  if (!j->comms) die("out of memory");
}

/* The communicators past the first, split from it; one group for the team's ranks. */
static void split_comms(struct team *t) {
  for (int c = 1; c < t->j[0].o.comms; c++) {
    team_group_start(t);
    FOR_EACH_RANK(t, j) NCCL_CHECK(ncclCommSplit(j->comms[0], 0, j->o.rank, &j->comms[c], NULL));
    team_group_end(t);
  }
}

/* Streams, events and buffers of one rank (its device selected), its send buffer filled. */
static void setup_buffers(struct job *j) {
  CUDA_CHECK(cudaStreamCreateWithFlags(&j->stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&j->compute_stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreate(&j->ev_start));
  CUDA_CHECK(cudaEventCreate(&j->ev_stop));
  CUDA_CHECK(cudaEventCreateWithFlags(&j->fork, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&j->join, cudaEventDisableTiming));
  const size_t elems = j->o.max_bytes / sizeof(float) + 1;
  CUDA_CHECK(cudaMalloc((void **)&j->send, elems * sizeof(float)));
  CUDA_CHECK(cudaMalloc((void **)&j->recv, elems * sizeof(float)));
  CUDA_CHECK(cudaMalloc((void **)&j->sink, 256 * sizeof(float)));
  CUDA_CHECK(cudaMalloc((void **)&j->wrong_dev, sizeof *j->wrong_dev));
  fill_kernel<<<j->sms * 4, 256, 0, j->stream>>>(j->send, elems, j->o.rank);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaStreamSynchronize(j->stream));
}

/* Everything after the first communicator: splits, buffers, what the job is, calibration, CSV. */
static void setup_rest(struct team *t) {
  const struct options *o = &t->j[0].o;
  split_comms(t);
  int nccl_version = 0;
  NCCL_CHECK(ncclGetVersion(&nccl_version));
  FOR_EACH_RANK(t, j) {
    team_use(t, j);
    setup_buffers(j);
    char bus[32] = "?";
    cudaDeviceGetPCIBusId(bus, (int)sizeof bus, j->device);
    printf("# clex: rank %d of %d, pid %d, device %d (%s, %s, %d SMs), NCCL %d.%d.%d, %d comm(s)\n",
           j->o.rank, j->o.nranks, (int)getpid(), j->device, j->prop.name, bus, j->sms,
           nccl_version / 10000, nccl_version / 100 % 100, nccl_version % 100, j->o.comms);
  }
  if (o->delay_rank >= 0 && o->delay_us > 0) {
    const char *mine = t->n == 1 && o->rank == o->delay_rank ? " (this rank)" : "";
    if (o->delay_how == DELAY_HOST)
      printf("# straggler: rank %d sleeps %ld us before each collective%s\n", o->delay_rank,
             o->delay_us, mine);
    else
      printf("# straggler: a spin kernel holds rank %d's stream %ld us before each collective%s\n",
             o->delay_rank, o->delay_us, mine);
  }
  if (o->graph) printf("# graph: each size's step is captured once into a CUDA graph and replayed\n");
  FOR_EACH_RANK(t, j) {
    team_use(t, j);
    if (o->compute != COMPUTE_NONE) calibrate_compute(j);
    if (o->csv && !j->csv) j->csv = open_csv(&j->o, j->o.rank);
  }
}

/* One process per GPU: rank 0 makes the NCCL id and hands it over in --id-file. */
static void setup_process(struct team *t) {
  struct job *j = t->j;
  const struct options *o = &j->o;
  ncclUniqueId id;
  if (o->rank != 0) read_id(o->id_file, &id); /* needs no CUDA: fails fast and clearly */
  const int ndev = device_count();
  j->device = o->device >= 0 ? o->device : o->rank % ndev;
  setup_device(j, ndev);
  if (o->rank == 0) {
    NCCL_CHECK(ncclGetUniqueId(&id));
    write_id(o->id_file, &id);
  }
  NCCL_CHECK(ncclCommInitRank(&j->comms[0], o->nranks, id, o->rank));
  /* Every rank has read the id once init returns: remove it so no later run reads a stale one. */
  if (o->rank == 0) unlink(o->id_file);
  setup_rest(t);
}

/* One thread, every GPU of this process: ncclCommInitAll, or one id and a grouped
 * ncclCommInitRank per GPU. */
static void setup_one_thread(struct team *t) {
  const struct options *o = &t->j[0].o;
  const int ndev = device_count();
  FOR_EACH_RANK(t, j) setup_device(j, ndev);
  if (o->init == INIT_ALL) {
    ncclComm_t first[MAX_DEVICES];
    NCCL_CHECK(ncclCommInitAll(first, t->n, o->devices));
    FOR_EACH_RANK(t, j) j->comms[0] = first[j - t->j];
  } else {
    ncclUniqueId id;
    NCCL_CHECK(ncclGetUniqueId(&id));
    NCCL_CHECK(ncclGroupStart());
    FOR_EACH_RANK(t, j) {
      CUDA_CHECK(cudaSetDevice(j->device));
      NCCL_CHECK(ncclCommInitRank(&j->comms[0], t->n, id, j->o.rank));
    }
    NCCL_CHECK(ncclGroupEnd());
  }
  setup_rest(t);
}

static void teardown(struct team *t) {
  FOR_EACH_RANK(t, j) {
    team_use(t, j);
    CUDA_CHECK(cudaDeviceSynchronize());
    if (j->gexec) CUDA_CHECK(cudaGraphExecDestroy(j->gexec));
    CUDA_CHECK(cudaEventDestroy(j->fork));
    CUDA_CHECK(cudaEventDestroy(j->join));
  }
  for (int c = t->j[0].o.comms - 1; c >= 0; c--) {
    team_group_start(t);
    FOR_EACH_RANK(t, j) NCCL_CHECK(ncclCommFinalize(j->comms[c]));
    team_group_end(t);
    team_group_start(t);
    FOR_EACH_RANK(t, j) NCCL_CHECK(ncclCommDestroy(j->comms[c]));
    team_group_end(t);
  }
  FOR_EACH_RANK(t, j) {
    team_use(t, j);
    free(j->comms);
    CUDA_CHECK(cudaFree(j->send));
    CUDA_CHECK(cudaFree(j->recv));
    CUDA_CHECK(cudaFree(j->sink));
    CUDA_CHECK(cudaFree(j->wrong_dev));
    CUDA_CHECK(cudaEventDestroy(j->ev_start));
    CUDA_CHECK(cudaEventDestroy(j->ev_stop));
    CUDA_CHECK(cudaStreamDestroy(j->stream));
    CUDA_CHECK(cudaStreamDestroy(j->compute_stream));
    if (j->csv && !j->csv_shared && fclose(j->csv) != 0) die("writing --csv: %s", strerror(errno));
  }
}

/* ------------------------------------------------------------------ the modes */

static int report(unsigned long long wrong) {
  if (wrong) {
    printf("# correctness: FAILED (%llu wrong elements)\n", wrong);
    return 1;
  }
  printf("# correctness: OK\n");
  return 0;
}

/* Sets up the team's ranks (setup_process, setup_one_thread, or the rank's own thread), then
 * runs the sweep and tears down; returns the wrong element count. */
static unsigned long long run_team(struct team *t, void (*setup)(struct team *)) {
  setup(t);
  if (t->j[0].o.abort_after == 0) abort_and_exit(t);
  team_wait(t);
  if (!t->barrier || t->j[0].o.rank == 0) print_header(&t->j[0].o);
  const unsigned long long wrong = sweep(t);
  teardown(t);
  return wrong;
}

/* --threads 1: each thread is one rank, from the id the main thread made. */
struct rank_thread {
  struct team t;
  unsigned long long wrong;
};

static void setup_own_rank(struct team *t) {
  struct job *j = t->j;
  setup_device(j, device_count());
  NCCL_CHECK(ncclCommInitRank(&j->comms[0], j->o.nranks, *t->id, j->o.rank));
  setup_rest(t);
}

static void *rank_thread_main(void *arg) {
  struct rank_thread *rt = (struct rank_thread *)arg;
  g_rank = rt->t.j->o.rank;
  rt->wrong = run_team(&rt->t, setup_own_rank);
  return NULL;
}

/* One process, several GPUs: the ranks' jobs (o.rank k on --devices' k-th device), one shared
 * CSV file unless the path has %r, then one thread for all or one thread each. */
static int run_devices(const struct options *o) {
  const int n = o->ndevices;
  struct job *jobs = (struct job *)calloc((size_t)n, sizeof *jobs);
  if (!jobs) die("out of memory");
  FILE *shared_csv = o->csv && !strstr(o->csv, "%r") ? open_csv(o, 0) : NULL;
  char list[MAX_DEVICES * 6] = "";
  for (int k = 0; k < n; k++) {
    jobs[k].o = *o;
    jobs[k].o.rank = k;
    jobs[k].device = o->devices[k];
    jobs[k].csv = shared_csv;
    jobs[k].csv_shared = shared_csv != NULL;
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", k ? "," : "", o->devices[k]);
  }
  printf("# clex: one process, %d GPUs (devices %s) as ranks 0..%d of one communicator; %s\n", n, list,
         n - 1, o->threads ? "one thread per GPU, ncclCommInitRank with one id"
                : o->init == INIT_ALL ? "one thread, ncclCommInitAll"
                                      : "one thread, ncclGroupStart + ncclCommInitRank per GPU");
  unsigned long long wrong = 0;
  if (!o->threads) {
    struct team t = {jobs, n, 0, NULL, NULL, cudaStreamCaptureModeThreadLocal};
    wrong = run_team(&t, setup_one_thread);
  } else {
    ncclUniqueId id;
    NCCL_CHECK(ncclGetUniqueId(&id));
    pthread_barrier_t barrier;
    if (pthread_barrier_init(&barrier, NULL, (unsigned)n) != 0) die("pthread_barrier_init failed");
    struct rank_thread *rts = (struct rank_thread *)calloc((size_t)n, sizeof *rts);
    pthread_t *tids = (pthread_t *)calloc((size_t)n, sizeof *tids);
    if (!rts || !tids) die("out of memory");
    for (int k = 0; k < n; k++) {
      rts[k].t = {&jobs[k], 1, 0, &barrier, &id, cudaStreamCaptureModeThreadLocal};
      if (pthread_create(&tids[k], NULL, rank_thread_main, &rts[k]) != 0) die("pthread_create failed");
    }
    for (int k = 0; k < n; k++) {
      pthread_join(tids[k], NULL);
      wrong += rts[k].wrong;
    }
    pthread_barrier_destroy(&barrier);
    free(rts);
    free(tids);
  }
  if (shared_csv && fclose(shared_csv) != 0) die("writing --csv: %s", strerror(errno));
  free(jobs);
  return report(wrong);
}

int main(int argc, char **argv) {
  static struct options o;
  parse_args(argc, argv, &o);
  if (o.ndevices > 0) return run_devices(&o);
  static struct job j;
  j.o = o;
  g_rank = o.rank;
  struct team t = {&j, 1, 0, NULL, NULL, cudaStreamCaptureModeGlobal};
  return report(run_team(&t, setup_process));
}
