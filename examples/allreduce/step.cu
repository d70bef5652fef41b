/* step.cu: what a team of ranks does once set up: the kernels (check, compute, straggler spin), one
 * step (eager or a CUDA-graph replay), one size timed and checked, and the sweep over ops and
 * sizes. A team of one issues exactly what one process per GPU always did; a larger team selects
 * each rank's device before its CUDA calls and groups its NCCL calls. */
#include "clex.h"

#include <nvtx3/nvToolsExt.h>

#include <stdlib.h>

/* ------------------------------------------------------------------ kernels */

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

/* The straggler on the GPU: one thread busy-waits `ns` on the global nanosecond timer, holding back
 * whatever follows on its stream. For one process driving several GPUs from one thread, which
 * cannot sleep for one GPU alone. */
__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

/* ------------------------------------------------------------------ sizes */

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

/* ------------------------------------------------------------------ one step */

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

/* Every rank of the team issues `op`: one NCCL group when one thread drives several GPUs. */
static void issue_all(struct team *t, int op, size_t count) {
  team_group_start(t);
  FOR_EACH_RANK(t, j) issue(j, op, count);
  team_group_end(t);
}

static void launch_busy(struct job *j, cudaStream_t s) {
  busy_kernel<<<(j->sms + 1) / 2, 256, 0, s>>>(j->sink, j->compute_loops);
  CUDA_CHECK(cudaGetLastError());
}

/* The straggler: rank --delay-rank starts each collective --delay-us late, by sleeping the thread
 * that issues it (host) or by a spin kernel ahead of it on its stream (stream: the GPU is late,
 * the host is not). Its own collective time (ev_start after this) leaves the delay out. */
static void delay_if_straggler(struct job *j) {
  if (j->o.delay_us <= 0 || j->o.rank != j->o.delay_rank) return;
  if (j->o.delay_how == DELAY_HOST) {
    sleep_us(j->o.delay_us);
    return;
  }
  spin_kernel<<<1, 1, 0, j->stream>>>((unsigned long long)j->o.delay_us * 1000ull);
  CUDA_CHECK(cudaGetLastError());
}

/* Times the busy kernel once to turn --compute-us into a loop count. */
void calibrate_compute(struct job *j) {
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
  char who[32] = "";
  if (j->o.ndevices) snprintf(who, sizeof who, " (rank %d)", j->o.rank);
  printf("# compute: %s, %.0f us per step = %ld loops (calibrated %.1f loops/us)%s\n",
         compute_names[j->o.compute], j->o.compute_us, j->compute_loops, loops_per_us, who);
}

/* Aborts every communicator of the team and exits 0. With a thread per GPU, each thread aborts
 * its own; the first rank's thread exits once all have. */
void abort_and_exit(struct team *t) {
  FOR_EACH_RANK(t, j) {
    team_use(t, j);
    CUDA_CHECK(cudaStreamSynchronize(j->stream));
  }
  printf("# abort: ncclCommAbort after %ld collectives\n", t->j[0].ncoll);
  fflush(stdout);
  team_group_start(t);
  FOR_EACH_RANK(t, j)
    for (int c = j->o.comms - 1; c >= 0; c--) NCCL_CHECK(ncclCommAbort(j->comms[c]));
  team_group_end(t);
  FOR_EACH_RANK(t, j)
    if (j->csv && !j->csv_shared) fclose(j->csv);
  team_wait(t);
  if (t->barrier && t->j[0].o.rank != 0) pthread_exit(NULL);
  exit(0);
}

/* --graph: captures one step (compute as --compute says, then the collective) into a CUDA graph,
 * once per (op, count). The overlap compute is a branch forked from and joined back to the
 * collective's stream, so the replay runs both at once as the eager step does. Every rank of the
 * team is captured at once, their collectives in one group. */
static void capture_step(struct team *t, int op, size_t count) {
  if (t->j[0].gexec && t->j[0].g_op == op && t->j[0].g_count == count) return;
  FOR_EACH_RANK(t, j) {
    team_use(t, j);
    if (j->gexec) CUDA_CHECK(cudaGraphExecDestroy(j->gexec));
    CUDA_CHECK(cudaStreamBeginCapture(j->stream, t->capture_mode));
    if (j->o.compute == COMPUTE_SERIAL) launch_busy(j, j->stream);
    if (j->o.compute == COMPUTE_OVERLAP) {
      CUDA_CHECK(cudaEventRecord(j->fork, j->stream));
      CUDA_CHECK(cudaStreamWaitEvent(j->compute_stream, j->fork, 0));
      launch_busy(j, j->compute_stream);
      CUDA_CHECK(cudaEventRecord(j->join, j->compute_stream));
    }
  }
  issue_all(t, op, count);
  FOR_EACH_RANK(t, j) {
    team_use(t, j);
    if (j->o.compute == COMPUTE_OVERLAP) CUDA_CHECK(cudaStreamWaitEvent(j->stream, j->join, 0));
    cudaGraph_t g;
    CUDA_CHECK(cudaStreamEndCapture(j->stream, &g));
    CUDA_CHECK(cudaGraphInstantiate(&j->gexec, g, 0));
    CUDA_CHECK(cudaGraphDestroy(g));
    j->g_op = op;
    j->g_count = count;
  }
}

/* Each rank's step ends: its collective's GPU time between the two events, and the team's host
 * wall time since t0. */
static void finish_step(struct team *t, double t0) {
  FOR_EACH_RANK(t, j) CUDA_CHECK(cudaEventSynchronize(j->ev_stop));
  FOR_EACH_RANK(t, j)
    if (j->o.compute == COMPUTE_OVERLAP && !j->o.graph) CUDA_CHECK(cudaStreamSynchronize(j->compute_stream));
  const double step_us = now_us() - t0;
  FOR_EACH_RANK(t, j) {
    float ms;
    CUDA_CHECK(cudaEventElapsedTime(&ms, j->ev_start, j->ev_stop));
    j->last_us = (double)ms * 1000.0;
    j->last_step_us = step_us;
  }
}

/* One replay of the captured step, timed between two events. */
static void run_graph_step(struct team *t, int op, size_t count) {
  capture_step(t, op, count);
  team_wait(t);
  const double t0 = now_us();
  FOR_EACH_RANK(t, j) {
    team_use(t, j);
    delay_if_straggler(j);
    CUDA_CHECK(cudaEventRecord(j->ev_start, j->stream));
    CUDA_CHECK(cudaGraphLaunch(j->gexec, j->stream));
    CUDA_CHECK(cudaEventRecord(j->ev_stop, j->stream));
  }
  finish_step(t, t0);
}

/* One step: straggler delay, compute, the collective between two events, then a full sync so the
 * step (and its NVTX range) really ends. Each rank's last_us gets its collective's GPU time,
 * last_step_us the host wall time of the whole step. */
static void run_step(struct team *t, int op, size_t count) {
  if (t->j[0].o.graph) {
    run_graph_step(t, op, count);
    return;
  }
  team_wait(t);
  const double t0 = now_us();
  FOR_EACH_RANK(t, j) {
    team_use(t, j);
    delay_if_straggler(j);
    if (j->o.compute == COMPUTE_SERIAL) launch_busy(j, j->stream);
    if (j->o.compute == COMPUTE_OVERLAP) launch_busy(j, j->compute_stream);
    CUDA_CHECK(cudaEventRecord(j->ev_start, j->stream));
  }
  issue_all(t, op, count);
  FOR_EACH_RANK(t, j) {
    team_use(t, j);
    CUDA_CHECK(cudaEventRecord(j->ev_stop, j->stream));
  }
  if (t->j[0].o.abort_after >= 0 && t->j[0].ncoll >= t->j[0].o.abort_after) abort_and_exit(t);
  finish_step(t, t0);
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

/* Counts the elements of the rank's output that differ from what `op` must have produced. */
static unsigned long long check_output(struct team *t, struct job *j, int op, size_t count, size_t nout) {
  team_use(t, j);
  CUDA_CHECK(cudaMemsetAsync(j->wrong_dev, 0, sizeof *j->wrong_dev, j->stream));
  check_kernel<<<j->sms * 4, 256, 0, j->stream>>>(j->recv, nout, op, j->o.rank, j->o.nranks,
                                                  count, j->wrong_dev);
  CUDA_CHECK(cudaGetLastError());
  unsigned long long wrong = 0;
  CUDA_CHECK(cudaMemcpyAsync(&wrong, j->wrong_dev, sizeof wrong, cudaMemcpyDeviceToHost, j->stream));
  CUDA_CHECK(cudaStreamSynchronize(j->stream));
  return wrong;
}

/* Runs one (op, size) point; prints a row per rank and returns the number of wrong elements.
 * *busbw_out gets the ranks' mean bus bandwidth. */
static unsigned long long run_size(struct team *t, int op, size_t bytes, double *busbw_out) {
  const struct options *o = &t->j[0].o;
  size_t count, nout;
  counts_for(op, bytes, o->nranks, &count, &nout);
  const int iters = iters_for(o, bytes);
  int warm = o->warmup < iters / 4 ? o->warmup : iters / 4;
  if (warm < 1 && o->warmup > 0) warm = 1;
  double *us = (double *)malloc(sizeof(double) * (size_t)iters * 2 * (size_t)t->n);
  if (!us) die("out of memory");
  double *step = us + (size_t)iters * (size_t)t->n; /* rank k's iteration i: [k * iters + i] */

  /* NaN-fill the output so a collective that writes nothing cannot pass the check. */
  FOR_EACH_RANK(t, j) {
    team_use(t, j);
    CUDA_CHECK(cudaMemsetAsync(j->recv, 0xff, nout * sizeof(float), j->stream));
  }
  for (int w = 0; w < warm; w++) {
    nvtxRangePushA("warmup");
    run_step(t, op, count);
    nvtxRangePop();
  }
  char name[32];
  for (int it = 0; it < iters; it++) {
    snprintf(name, sizeof name, "step %ld", t->step++);
    nvtxRangePushA(name);
    run_step(t, op, count);
    nvtxRangePop();
    FOR_EACH_RANK(t, j) {
      const size_t at = (size_t)(j - t->j) * (size_t)iters + (size_t)it;
      us[at] = j->last_us;
      step[at] = j->last_step_us;
      if (!j->csv) continue;
      char who[16] = ""; /* one fprintf per row: threads may share the file */
      if (multi_gpu(t)) snprintf(who, sizeof who, "%d,", j->o.rank);
      fprintf(j->csv, "%s%s,%zu,%d,%.3f,%.3f\n", who, op_names[op], bytes, it, us[at], step[at]);
    }
  }

  unsigned long long wrong_all = 0;
  double busbw_sum = 0;
  FOR_EACH_RANK(t, j) {
    double *mine = us + (size_t)(j - t->j) * (size_t)iters, *mine_step = step + (mine - us);
    const unsigned long long wrong = check_output(t, j, op, count, nout);
    double min_us = mine[0];
    for (int it = 1; it < iters; it++) if (mine[it] < min_us) min_us = mine[it];
    const double med = median_of(mine, iters), med_step = median_of(mine_step, iters);
    const double algbw = (double)bytes / (med * 1e-6) / 1e9;
    const double busbw = algbw * busbw_num(op, o->nranks) / o->nranks;
    busbw_sum += busbw;
    wrong_all += wrong;
    char row[512];
    snprintf(row, sizeof row, "%12zu %12zu  float %11.2f %10.2f %9.2f %9.2f %11.2f %6d %6llu", bytes,
             count, med, min_us, algbw, busbw, med_step, iters, wrong);
    if (multi_gpu(t)) printf("%6d %12s %s\n", j->o.rank, op_names[op], row);
    else printf("%14s %s\n", op_names[op], row);
    fflush(stdout);
  }
  *busbw_out = busbw_sum / t->n;
  free(us);
  return wrong_all;
}

/* ------------------------------------------------------------------ the sweep */

void print_header(const struct options *o) {
  const int multi = o->ndevices > 0; /* rows start with the rank */
  if (multi) printf("#\n# %4s %12s", "rank", "op");
  else printf("#\n# %12s", "op");
  printf(" %12s %12s %6s %11s %10s %9s %9s %11s %6s %6s\n", "size(B)", "count", "type", "time(us)",
         "min(us)", "algbw", "busbw", "step(us)", "iters", "wrong");
  if (multi) printf("# %4s %12s", "", "");
  else printf("# %12s", "");
  printf(" %12s %12s %6s %11s %10s %9s %9s %11s %6s %6s\n", "", "", "", "median", "", "(GB/s)",
         "(GB/s)", "median", "", "");
}

/* Every op and size in turn; returns the number of wrong elements. */
unsigned long long sweep(struct team *t) {
  const struct options *o = &t->j[0].o;
  unsigned long long wrong = 0;
  double busbw_sum = 0;
  int points = 0;
  for (int k = 0; k < o->nops; k++) {
    const int op = o->ops[k];
    for (size_t bytes = o->min_bytes; bytes <= o->max_bytes; bytes *= (size_t)o->factor) {
      size_t count, nout;
      counts_for(op, bytes, o->nranks, &count, &nout);
      if (count == 0) continue; /* smaller than one element per rank */
      double busbw;
      wrong += run_size(t, op, bytes, &busbw);
      busbw_sum += busbw;
      points++;
      if (bytes > o->max_bytes / (size_t)o->factor) break; /* next step would overflow max */
    }
  }
  char who[32] = "";
  if (t->barrier) snprintf(who, sizeof who, " (rank %d)", o->rank);
  printf("# avg busbw: %.2f GB/s over %d sizes%s\n", points ? busbw_sum / points : 0.0, points, who);
  return wrong;
}

