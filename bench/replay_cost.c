/* replay_cost.c: what the plugin costs on the CPU per collective and per compute-kernel record,
 * in the default mode. Recorded real NCCL event streams (test/data/real/, .rec.gz) are replayed
 * as fast as possible through the exported ncclProfiler_vN table (tools/replay/replay.c), filtered to
 * the events NCCL sends for the default mask and repeated so that per-run costs (start, files,
 * summary) fall out of a slope between two lengths. The stand-in libcupti (test/fakes/fake_cupti.c,
 * scripted) hands the plugin a kernel record for every NCCL launch and, on request, compute-kernel
 * records beside each: the GPU join, exposure and the trace writer do their whole default work.
 * Each measurement is a fresh process. Timings are medians of replays as fast as possible, and
 * of long replays spread evenly over SPAN_S seconds (the steady state, past the warm-up);
 * `--callgrind` adds instruction counts (valgrind) of replays whose calls are spread evenly over
 * SPAN_S seconds (cg_run says why), compared with bench/replay_cost.baseline: 10% more is flagged
 * as a regression. The writer's CPU per second of such a spread replay is printed beside them.
 * It asserts nothing else; the numbers are for docs/performance.md. */
#include "commlens/nccl_profiler_abi.h"
#include "tools/replay/replay.h"
#include "rc_stream.h"
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

/* The events NCCL sends the default: CL_MASK_DEFAULT | CL_MASK_KERNEL_LAUNCH, and KernelCh
 * (0x40) for COMMLENS_CUPTI=sampled, the default; --cupti kernels prices the
 * previous default (0x0F0F, CUPTI's kernel records all the time). */
static int MASK_DEFAULT = 0x5F4F;
static const char *g_cupti = "sampled";
#define MAX_RUNS 32
#define SPAN_S 8.0   /* callgrind runs: every stream's calls spread evenly over this many seconds */

/* ---------------------------------------------------------------------------------------- */
/* The child: one replay, kernel records pushed from the call hook, one result line at exit. */
typedef int (*push_fn)(uint64_t, uint64_t, uint32_t, uint32_t, uint32_t, const char *);
static push_fn g_push;
static int g_compute;                 /* compute kernels before each NCCL launch */
static uint64_t g_gpu;                /* the GPU's timeline: where the next kernel may start */
static uint32_t g_corr;
static long g_pushed, g_push_fail;
static long long g_launch_ns;         /* event calls' time, preempted calls left out */
static long g_timed, g_preempted;
/* A hot-path call never takes this long on its own: on a busy 2-core machine such a call was
 * preempted (counted, left out of the sum; a thread's first call, which sets up its buffer,
 * goes too, as a per-run cost). */
#define PREEMPTED_NS 20000
static rp_stats g_st;
static long long g_main_pre;

static uint64_t mono_ns(int clk) {
  struct timespec t;
  clock_gettime(clk, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* What a launch-bound PyTorch step runs (names as CUPTI gives them once demangled). */
static const char *const k_compute_names[] = {
  "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
  "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
  "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, "
  "float const*, float const*, float const*, float*, float*, float*)",
  "ampere_sgemm_32x32_sliced1x4_nn",
  "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4>"
  "(cutlass_80_tensorop_s1688gemm_64x64_16x6_tn_align4::Params)",
  "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
  "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> > >"
  "(at::TensorIteratorBase&, at::native::BinaryFunctor<float, float, float, "
  "at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1}>(int, "
  "at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, "
  "at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, at::native::BinaryFunctor<"
  "float, float, float, at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1})",
};
#define NCOMPUTE_NAMES (sizeof k_compute_names / sizeof *k_compute_names)
#define COMPUTE_NS 10000ull   /* a compute kernel: 10 us, then 1 us idle */
#define NCCL_NS 20000ull

static void push(uint64_t s, uint64_t e, uint32_t stream, const char *name) {
  if (g_push(s, e, 0, stream, ++g_corr, name) == 0) g_pushed++;
  else g_push_fail++;
}

/* A KernelLaunch: `g_compute` compute kernels on stream 13, then the NCCL kernel on the launch's
 * stream (the stand-in's stream id: handle / 16), overlapping the last compute kernel by half. */
static void on_call(const rp_call_view *v) {
  if (v->kind == 'S' || v->kind == 'E' || v->kind == 'T') {
    if (v->ns > PREEMPTED_NS) g_preempted++;
    else { g_launch_ns += v->ns; g_timed++; }
  }
  if (v->kind != 'S' || v->type != CLABI_EV_KERNEL_LAUNCH || !g_push) return;
  uint64_t stream;
  memcpy(&stream, v->descr + offsetof(clabi_descr_v5, kernelLaunch.stream), 8);
  uint64_t now = mono_ns(CLOCK_MONOTONIC);
  if (g_gpu < now) g_gpu = now;
  for (int i = 0; i < g_compute; i++, g_gpu += COMPUTE_NS + 1000)
    push(g_gpu, g_gpu + COMPUTE_NS, 13, k_compute_names[g_corr % NCOMPUTE_NAMES]);
  uint64_t s = g_compute ? g_gpu - 1000 - COMPUTE_NS / 2 : g_gpu;
  push(s, s + NCCL_NS, (uint32_t)(stream >> 4), "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  g_gpu = s + NCCL_NS + 1000;
}

static long long thread_cpu(void) { return (long long)mono_ns(CLOCK_THREAD_CPUTIME_ID); }

/* Registered before the plugin is loaded, so it runs after the plugin's exit handler. */
static void child_report(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  long long total = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
                    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
  char line[512];
  int l = snprintf(line, sizeof line,
                   "RESULT calls %ld plugin_ns %lld preempted %ld threads_cpu_ns %lld total_cpu_ns %lld main_pre_ns %lld "
                   "main_final_ns %lld pushed %ld push_fail %ld bad %ld\n",
                   g_timed, g_launch_ns, g_preempted, g_st.threads_cpu_ns, total,
                   g_main_pre, thread_cpu(), g_pushed, g_push_fail, g_st.bad_rc);
  if (write(3, line, (size_t)l) != l) { /* the parent sees no result */ }
}

static int child_main(const char *lib, const char *stream, const char *cupti, int compute, double span_s) {
  atexit(child_report);
  g_compute = compute;
  void *fc = cupti && *cupti ? dlopen(cupti, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (fc) {
    void (*script)(void) = (void (*)(void))dlsym(fc, "commlens_fake_cupti_script");
    g_push = (push_fn)dlsym(fc, "commlens_fake_cupti_push_kernel");
    if (!script || !g_push) { fprintf(stderr, "%s: not the scripted stand-in libcupti\n", cupti); return 2; }
    script();
  }
  rp_set_call_hook(on_call);
  rp_set_follow_mask(1);   /* NCCL's KernelCh only for operations whose snapshot of the mask had it */
  if (span_s > 0) rp_set_uniform_span((uint64_t)(span_s * 1e9));   /* paced: evenly over span_s seconds */
  if (rp_replay_paced(stream, lib, span_s > 0 ? 1.0 : 0, &g_st) != 0) { fprintf(stderr, "replay: %s\n", g_st.err); return 2; }
  /* The replay freed its stream (~100 small chunks a collective) into the main arena's fastbins:
   * the first large malloc on this thread, the plugin's exit path, would coalesce them all
   * (malloc_consolidate: 0.9 us a collective on this VM, 1.25 on an H200 host's CPU, counted
   * as the writer's). Coalesced here, before the exit path's clock starts, they stay the
   * replay's. The callgrind runs turn fastbins off instead (run_child). */
  malloc_trim(0);
  g_main_pre = thread_cpu();
  return 0;   /* exit(): the plugin's exit handler finishes the trace, then child_report */
}

/* ---------------------------------------------------------------------------------------- */
/* The parent: runs children, reads their results, takes medians and slopes. */
typedef struct {
  int ok;
  long calls;
  double launch_ns;    /* inside startEvent/stopEvent/recordEventState, timer cost removed */
  double writer_ns;    /* the plugin's threads + the exit path */
  double bytes;        /* the run's output files */
  long pushed, push_fail, bad, preempted;
  long colls, timed;   /* collectives in the run's summaries, and how many were GPU-timed */
} run_result;

static const char *g_self, *g_fake_cupti, *g_tmp;
static double g_pair_ns;   /* one timed call's clock reads */

static const char *g_output = "digest";   /* COMMLENS_OUTPUT priced (--output): the default */
/* COMMLENS_TIMERS priced (--timers): "all" by default, every collective timed by NCCL's timers
 * whatever the stream's rate. Sampled, the share timed follows each stream's rate (a level a
 * stream), which the slope between two streams of different rates cannot take apart: a timed
 * and a left-out collective are priced apart ("sampled:0.001:10000": left out past the first
 * 1,024 calls, in both streams alike), and a job's cost is their mix at its level. */
static const char *g_timers = "all";
static long g_sum_count, g_sum_timed;   /* collectives in the summaries read, and GPU-timed */

/* Adds a summary's per-collective counts ("count":N,"timed":M) to the sums above. */
static void read_summary(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return;
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  for (const char *p = buf; (p = strstr(p, "\"count\":")); p++) {
    long c, t;
    if (sscanf(p, "\"count\":%ld,\"timed\":%ld", &c, &t) == 2) { g_sum_count += c; g_sum_timed += t; }
  }
}

/* The bytes of the files under `dir`, which it removes (summaries read first). */
static double du_bytes(const char *dir) {
  double sum = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    struct stat st;
    size_t l = strlen(e->d_name);
    if (lstat(p, &st) == 0 && S_ISREG(st.st_mode)) {
      if (l > 13 && !strcmp(e->d_name + l - 13, ".summary.json")) read_summary(p);
      sum += (double)st.st_size;
      unlink(p);
    }
    else if (S_ISDIR(st.st_mode)) { sum += du_bytes(p); rmdir(p); }
  }
  closedir(d);
  return sum;
}

/* The CUPTI window the children get (sampled mode): a first one of 50 ms, then none for the
 * rest of the replay, so the steady state outside the windows is what is priced; a compute
 * kernel's records are taken inside windows only, so they are priced in a window as long as
 * the run (g_window). FIRST_WINDOW is the default. */
#define FIRST_WINDOW "0.05:3600"
/* Paced children hold every call after the first operation's start back by this much: the
 * first window closes (50 ms after the writer saw that start, at its next tick) while nothing
 * else happens, so it holds the same calls in a short stream and a long one. Without it, a
 * window of 50 ms plus the writer's lag held more of a denser stream's collectives, and the
 * slope priced their in-window work (the join, exposure) as if every eighth collective had it
 * (136 of the 1,152 operations of the 8-copy stream under callgrind, none of the 2-copy one's). */
#define FIRST_PAUSE_NS 1000000000ull
/* COMMLENS_CUPTI_SAMPLE's default (common/config.c): a window of 1 s in every 30 */
#define DEFAULT_WINDOW_NS 1000000000ull
#define DEFAULT_PERIOD_NS 30000000000ull
/* A per-collective cost at that duty: the windows hold a thirtieth of a steady job's collectives. */
static double at_duty(double between, double inside) {
  double duty = (double)DEFAULT_WINDOW_NS / (double)DEFAULT_PERIOD_NS;
  return between * (1 - duty) + inside * duty;
}
static const char *const g_window = "600:3600";
static const char *g_sample = FIRST_WINDOW;
static uint64_t g_burst_ns;   /* paced children: bursts kept whole (rp_set_burst); 0: none */

/* One child: `valgrind` (NULL: none) runs it under callgrind into `cg_out`; span_s > 0 paces the
 * replay, its calls spread evenly over span_s seconds; 0 replays as fast as possible. */
static run_result run_child(const char *lib, const char *stream, int with_cupti, int compute,
                            const char *cg_out, double span_s) {
  run_result r;
  memset(&r, 0, sizeof r);
  char dir[4200], comp[16], sp[64];
  snprintf(dir, sizeof dir, "%s/out", g_tmp);
  mkdir(dir, 0700);
  snprintf(comp, sizeof comp, "%d", compute);
  snprintf(sp, sizeof sp, "%g:%llu", span_s, (unsigned long long)g_burst_ns);
  int pfd[2];
  if (pipe(pfd) != 0) return r;
  pid_t pid = fork();
  if (pid == 0) {
    if (pfd[0] != 3) close(pfd[0]);   /* else dup2 closes it */
    dup2(pfd[1], 3);
    if (pfd[1] != 3) close(pfd[1]);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1); dup2(null, 2);
    setenv("COMMLENS_DIR", dir, 1);
    setenv("COMMLENS_OUTPUT", g_output, 1);   /* the replay driver would ask for the trace */
    setenv("COMMLENS_TIMERS", g_timers, 1);
    if (with_cupti) {
      setenv("COMMLENS_CUPTI_LIB", g_fake_cupti, 1);
      setenv("COMMLENS_CUPTI", g_cupti, 1);
      setenv("COMMLENS_CUPTI_SAMPLE", g_sample, 1);
    } else {
      setenv("COMMLENS_CUPTI", "off", 1);
    }
    const char *cupti = with_cupti ? g_fake_cupti : "";
    if (cg_out) {
      char of[4300];
      snprintf(of, sizeof of, "--callgrind-out-file=%s", cg_out);
      /* no fastbins: the replay frees ~100 small chunks per collective, and the first large
       * malloc of a plugin thread would coalesce them all (glibc's malloc_consolidate), a cost
       * of the replay's counted as the plugin's */
      setenv("GLIBC_TUNABLES", "glibc.malloc.mxfast=0", 1);
      execlp("valgrind", "valgrind", "--tool=callgrind", of, "--dump-instr=no", g_self, "--child", lib,
             stream, cupti, comp, sp, (char *)NULL);
    } else {
      execl(g_self, g_self, "--child", lib, stream, cupti, comp, sp, (char *)NULL);
    }
    _exit(127);
  }
  close(pfd[1]);
  char buf[1024];
  ssize_t got = 0, k;
  while ((k = read(pfd[0], buf + got, sizeof buf - 1 - (size_t)got)) > 0) got += k;
  buf[got > 0 ? got : 0] = 0;
  close(pfd[0]);
  int status;
  waitpid(pid, &status, 0);
  g_sum_count = g_sum_timed = 0;
  r.bytes = du_bytes(dir);
  r.colls = g_sum_count;
  r.timed = g_sum_timed;
  long long plugin_ns, threads, total, pre, fin;
  if (sscanf(buf, "RESULT calls %ld plugin_ns %lld preempted %ld threads_cpu_ns %lld total_cpu_ns %lld main_pre_ns %lld "
                  "main_final_ns %lld pushed %ld push_fail %ld bad %ld",
             &r.calls, &plugin_ns, &r.preempted, &threads, &total, &pre, &fin, &r.pushed, &r.push_fail,
             &r.bad) == 10 &&
      WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    r.ok = 1;
    /* the calls left out (preempted) are priced at the mean of the others */
    r.launch_ns = r.calls ? ((double)plugin_ns / (double)r.calls - g_pair_ns) * (double)(r.calls + r.preempted) : 0;
    /* everything not on the main thread or the replaying threads is the plugin's threads' */
    r.writer_ns = (double)(total - fin - threads) + (double)(fin - pre);
  } else {
    fprintf(stderr, "child failed (status %#x): %s\n", status, buf);
  }
  return r;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0;
}

/* What the clock reads add to each timed call (replay.c's TIMED): the span from one read to the
 * next holds about one read's cost besides the call. */
static double read_cost(void) {
  double v[15];
  for (int k = 0; k < 15; k++) {
    struct timespec a;
    uint64_t t0 = mono_ns(CLOCK_MONOTONIC_RAW);
    for (int i = 0; i < 20000; i++) clock_gettime(CLOCK_MONOTONIC_RAW, &a);
    v[k] = (double)(mono_ns(CLOCK_MONOTONIC_RAW) - t0) / 20000.0;
  }
  return median(v, 15);
}

typedef struct { double launch, writer, bytes; long colls, timed; } unit_cost;

/* Per unit: the slope between `k1` and `k2` copies (or compute counts), median over runs. The
 * unit count of each length is `u1`, `u2`. */
static unit_cost slope_paced(const char *lib, const char *s1, const char *s2, int cupti, int c1, int c2,
                             double u1, double u2, int runs, double span_s) {
  double l[MAX_RUNS], w[MAX_RUNS], b[MAX_RUNS];
  int n = 0;
  run_result last = {0};
  for (int i = 0; i < runs; i++) {
    run_result a = run_child(lib, s1, cupti, c1, NULL, span_s), z = run_child(lib, s2, cupti, c2, NULL, span_s);
    if (!a.ok || !z.ok) continue;
    last = z;
    /* paced, the stand-in takes kernel records inside the first CUPTI window only (by design) */
    if (span_s <= 0 && (a.push_fail || z.push_fail))
      fprintf(stderr, "  (%ld kernel records refused)\n", a.push_fail + z.push_fail);
    l[n] = (z.launch_ns - a.launch_ns) / (u2 - u1);
    w[n] = (z.writer_ns - a.writer_ns) / (u2 - u1);
    b[n] = (z.bytes - a.bytes) / (u2 - u1);
    n++;
  }
  unit_cost u = {median(l, n), median(w, n), median(b, n), last.colls, last.timed};
  return u;
}
static unit_cost slope(const char *lib, const char *s1, const char *s2, int cupti, int c1, int c2,
                       double u1, double u2, int runs) {
  return slope_paced(lib, s1, s2, cupti, c1, c2, u1, u2, runs, 0);
}

/* ---- callgrind: inclusive instructions of the plugin's entry points and threads ---- */
typedef struct { double launch, writer; } ir_split;
static const char *k_launch_fns[] = {"v5_start", "v5_stop", "v5_state", "v6_start", "v6_stop", "v6_state", NULL};
static const char *k_writer_fns[] = {"drain_main", "format_main", "cl_writer_finish", NULL};
/* once per thread, inside its first call: a per-run cost, left out of the per-call count */
static const char *k_once_fns[] = {"cl_ring_claim", "cl_ring_move", NULL};

static int fn_is(const char *fn, const char **set) {
  for (int i = 0; set[i]; i++) if (!strcmp(fn, set[i])) return 1;
  return 0;
}

static ir_split callgrind_split(const char *cg_out) {
  ir_split s = {0, 0};
  char cmd[4400];
  /* from /: inside the source tree callgrind_annotate shortens paths and then splits a function
   * whose code is partly inlined from a header into entries per file, and the inclusive count
   * of the function's own entry shrinks to what its own file holds */
  snprintf(cmd, sizeof cmd, "cd / && callgrind_annotate --inclusive=yes --threshold=100 '%s' 2>/dev/null", cg_out);
  FILE *p = popen(cmd, "r");
  if (!p) return s;
  char line[8192];
  while (fgets(line, sizeof line, p)) {
    /* "  1,234,567 (12.34%)  SOURCE:FUNCTION [OBJECT]" */
    char *q = line;
    while (*q == ' ') q++;
    if (*q < '0' || *q > '9') continue;
    double v = 0;
    for (; (*q >= '0' && *q <= '9') || *q == ','; q++) if (*q != ',') v = v * 10 + (*q - '0');
    char *colon = strrchr(q, ':'), *br = strstr(q, " [");
    if (!colon || !br || colon > br) continue;
    char fn[256];
    size_t n = (size_t)(br - colon - 1);
    if (n >= sizeof fn) continue;
    memcpy(fn, colon + 1, n);
    fn[n] = 0;
    if (fn_is(fn, k_launch_fns)) s.launch += v;
    if (fn_is(fn, k_writer_fns)) s.writer += v;
    if (fn_is(fn, k_once_fns)) s.launch -= v;
  }
  pclose(p);
  return s;
}

/* The smallest count of three runs, per side. The replays are paced, their calls spread evenly over
 * `span_s` seconds: the writer's threads also do work paced by the clock (polls, flushes with
 * their fixed costs, exposure's lag, the GPU clock's calibration), and an unpaced replay under
 * valgrind lasts as long as valgrind takes, so that work, and which collectives meet it,
 * changed from run to run. Two streams spread over the same span do the same timed work, every
 * flush with rows in both: their difference is what the extra collectives cost. */
static ir_split cg_run(const char *lib, const char *stream, int compute, const char *tag, double span_s) {
  ir_split best = {0, 0};
  for (int k = 0; k < 3; k++) {
    char out[4200];
    snprintf(out, sizeof out, "%s/callgrind.%s.%d", g_tmp, tag, k);
    run_result r = run_child(lib, stream, 1, compute, out, span_s);
    if (!r.ok) continue;
    ir_split s = callgrind_split(out);
    unlink(out);
    if (!best.writer || s.writer < best.writer) best.writer = s.writer;
    if (!best.launch || s.launch < best.launch) best.launch = s.launch;
  }
  return best;
}

/* ---- the baseline file: "name value" lines ---- */
typedef struct { char name[64]; double v; } metric;
static metric g_metrics[32];
static int g_nmetrics;
static void add_metric(const char *name, double v) {
  if (g_nmetrics < 32) { snprintf(g_metrics[g_nmetrics].name, 64, "%s", name); g_metrics[g_nmetrics++].v = v; }
}
static int compare_baseline(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) { printf("no baseline at %s: run with --update-baseline to make one\n", path); return 0; }
  char name[64];
  double v;
  int regressions = 0;
  while (fscanf(f, "%63s %lf", name, &v) == 2)
    for (int i = 0; i < g_nmetrics; i++) {
      if (strcmp(name, g_metrics[i].name)) continue;
      double ch = v > 0 ? (g_metrics[i].v - v) / v * 100 : 0;
      int bad = ch >= 10.0;
      regressions += bad;
      printf("  %-38s %12.0f instr  baseline %12.0f  %+6.1f%%%s\n", name, g_metrics[i].v, v, ch,
             bad ? "   <== REGRESSION (>= 10% more instructions)" : "");
    }
  fclose(f);
  return regressions;
}
static void write_baseline(const char *path) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) { perror(tmp); return; }
  for (int i = 0; i < g_nmetrics; i++) fprintf(f, "%s %.0f\n", g_metrics[i].name, g_metrics[i].v);
  fclose(f);
  rename(tmp, path);
  printf("baseline written to %s\n", path);
}

static void rm_tree(const char *dir) { du_bytes(dir); rmdir(dir); }

/* A recording given by name (under `data`, without .rec.gz) or by path. */
static void rec_path(char *out, size_t n, const char *data, const char *rec) {
  if (strchr(rec, '/') || strstr(rec, ".rec.gz")) snprintf(out, n, "%s", rec);
  else snprintf(out, n, "%s/%s.rec.gz", data, rec);
}

/* The two streams of a slope, `k1` and `k2` copies of recording `rec` (a.rec.gz, b.rec.gz). */
static int make_pair(const char *data, const char *rec, int k1, int k2, int abi, char *s1, char *s2, size_t n,
                     stream_counts *c1, stream_counts *c2) {
  char src[4200];
  rec_path(src, sizeof src, data, rec);
  snprintf(s1, n, "%s/a.rec.gz", g_tmp);
  snprintf(s2, n, "%s/b.rec.gz", g_tmp);
  return make_stream(src, s1, k1, MASK_DEFAULT, abi, c1) || make_stream(src, s2, k2, MASK_DEFAULT, abi, c2);
}

static int usage(void) {
  fprintf(stderr,
          "usage: bench-replay-cost [--runs N] [--callgrind] [--update-baseline] [--baseline FILE]\n"
          "                         [--lib PLUGIN.so] [--null NULL.so] [--fake-cupti LIBCUPTI.so] [--data DIR]\n"
          "                         [--output digest|trace|both]   (COMMLENS_OUTPUT priced; default digest)\n"
          "                         [--cupti sampled|kernels]      (COMMLENS_CUPTI priced; default sampled)\n"
          "                         [--timers all|SPEC]            (COMMLENS_TIMERS priced; default all)\n"
          "                         [RECORDING ...]   (a name under --data, or a .rec.gz path; ABI v5/v6)\n"
          "       bench-replay-cost --make-stream REC.rec.gz OUT.rec.gz COPIES ABI   (the stream it replays)\n"
          "       bench-replay-cost --split CALLGRIND.OUT   (its launch-side and writer-side instructions)\n"
          "       bench-replay-cost --child PLUGIN.so STREAM.rec.gz LIBCUPTI.so COMPUTE (one replay: result on fd 3)\n");
  return 2;
}

/* The helper modes: a child replay, a callgrind file's split, a stream for a run by hand.
 * Returns the exit status, or -1 when argv asks for none of them. */
static int helper_mode(int argc, char **argv) {
  if ((argc == 6 || argc == 7) && !strcmp(argv[1], "--child")) {
    char *end = NULL;   /* SPAN_S[:BURST_NS] */
    double span = argc == 7 ? strtod(argv[6], &end) : 0;
    if (end && *end == ':') rp_set_burst(strtoull(end + 1, NULL, 10));
    if (span > 0) rp_set_first_pause(FIRST_PAUSE_NS);
    return child_main(argv[2], argv[3], argv[4], atoi(argv[5]), span);
  }
  if (argc == 3 && !strcmp(argv[1], "--split")) {   /* a callgrind file's launch and writer counts */
    ir_split sp = callgrind_split(argv[2]);
    printf("launch %.0f writer %.0f\n", sp.launch, sp.writer);
    return 0;
  }
  if (argc == 6 && !strcmp(argv[1], "--make-stream")) {   /* for a run by hand (callgrind_annotate) */
    stream_counts c;
    if (make_stream(argv[2], argv[3], atoi(argv[4]), MASK_DEFAULT, atoi(argv[5]), &c)) return 1;
    printf("%ld collectives, %ld p2p, %ld launches, %ld events, %ld calls\n", c.colls, c.p2ps, c.launches, c.events, c.calls);
    return 0;
  }
  return -1;
}

/* What one benchmark run prices: the plugin and the null plugin, the recordings, the runs. */
typedef struct {
  const char *lib, *null_lib, *data, *baseline;
  int runs, callgrind, update, nrecs;
  /* the recordings priced per collective (default: NVLink and sockets, NCCL 2.28.3); the first
   * also prices compute-kernel records and gives the instruction counts */
  const char *recs[9];
} bench_cfg;
enum { K1 = 2, K2 = 8 };   /* the two stream lengths of a slope (copies of a recording) */

/* The options into *b (and the g_ settings); 0, or usage()'s status. */
static int parse_args(int argc, char **argv, bench_cfg *b) {
  *b = (bench_cfg){.lib = getenv("COMMLENS_LIB"), .data = "test/data/real", .baseline = "bench/replay_cost.baseline",
                   .runs = 5};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--runs") && i + 1 < argc) b->runs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--callgrind")) b->callgrind = 1;
    else if (!strcmp(argv[i], "--output") && i + 1 < argc) g_output = argv[++i];
    else if (!strcmp(argv[i], "--cupti") && i + 1 < argc) g_cupti = argv[++i];
    else if (!strcmp(argv[i], "--timers") && i + 1 < argc) g_timers = argv[++i];
    else if (!strcmp(argv[i], "--update-baseline")) b->callgrind = b->update = 1;
    else if (!strcmp(argv[i], "--baseline") && i + 1 < argc) b->baseline = argv[++i];
    else if (!strcmp(argv[i], "--lib") && i + 1 < argc) b->lib = argv[++i];
    else if (!strcmp(argv[i], "--null") && i + 1 < argc) b->null_lib = argv[++i];
    else if (!strcmp(argv[i], "--fake-cupti") && i + 1 < argc) g_fake_cupti = argv[++i];
    else if (!strcmp(argv[i], "--data") && i + 1 < argc) b->data = argv[++i];
    else if (argv[i][0] != '-' && b->nrecs < 8) b->recs[b->nrecs++] = argv[i];   /* NAME.rec.gz or a path */
    else return usage();
  }
  if (b->runs < 1) b->runs = 1;
  if (b->runs > MAX_RUNS) b->runs = MAX_RUNS;
  return 0;
}

/* The libraries found, the temporary directory made, the mask set; 0, or 2 after saying why. */
static int setup(bench_cfg *b) {
  static char libp[4096], nullp[4200], cuptip[4200];
  if (!b->lib) b->lib = "build/libnccl-profiler-commlens.so";
  if (!realpath(b->lib, libp)) { fprintf(stderr, "no plugin at %s\n", b->lib); return 2; }
  b->lib = libp;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", b->lib);
  *strrchr(dir, '/') = 0;
  if (!b->null_lib) { snprintf(nullp, sizeof nullp, "%s/libnccl-profiler-null.so", dir); b->null_lib = nullp; }
  if (!g_fake_cupti) { snprintf(cuptip, sizeof cuptip, "%s/libcommlens-fakecupti.so", dir); g_fake_cupti = cuptip; }
  if (access(b->null_lib, R_OK) || access(g_fake_cupti, R_OK)) {
    fprintf(stderr, "need %s and %s (make bench builds them)\n", b->null_lib, g_fake_cupti);
    return 2;
  }
  static char tmpl[] = "/tmp/commlens-bench-XXXXXX";
  if (!mkdtemp(tmpl)) { perror("mkdtemp"); return 2; }
  g_tmp = tmpl;
  if (strcmp(g_cupti, "sampled") && strcmp(g_cupti, "kernels")) { fprintf(stderr, "--cupti: sampled or kernels\n"); return 2; }
  if (!strcmp(g_cupti, "kernels")) MASK_DEFAULT = 0x0F0F;
  char nmask[16];
  snprintf(nmask, sizeof nmask, "0x%04X", MASK_DEFAULT);
  setenv("NULLPROF_MASK", nmask, 1);
  return 0;
}

/* 1a: per collective, per recording, ABI v5 and v6, commlens and the null plugin */
static int per_collective(const bench_cfg *b) {
  char s1[4200], s2[4200];
  printf("%-30s %4s %-9s %9s %12s %12s %12s\n", "recording (per collective)", "abi", "plugin", "ops/run",
         "launch ns", "writer ns", "bytes");
  for (int ri = 0; b->recs[ri]; ri++) {
    for (int abi = 5; abi <= 6; abi++) {
      stream_counts c1, c2;
      if (make_pair(b->data, b->recs[ri], K1, K2, abi, s1, s2, sizeof s1, &c1, &c2)) return 1;
      double u1 = (double)(c1.colls + c1.p2ps), u2 = (double)(c2.colls + c2.p2ps);
      unit_cost cl = slope(b->lib, s1, s2, 1, 0, 0, u1, u2, b->runs);
      unit_cost nl = slope(b->null_lib, s1, s2, 0, 0, 0, u1, u2, b->runs);
      printf("%-30s %4d %-9s %9ld %12.0f %12.0f %12.0f   GPU-timed %ld of %ld\n", b->recs[ri], abi, "commlens",
             c2.colls + c2.p2ps, cl.launch, cl.writer, cl.bytes, cl.timed, cl.colls);
      printf("%-30s %4d %-9s %9s %12.0f %12s %12s\n", "", abi, "null", "", nl.launch, "-", "-");
      if (abi == 5)
        printf("%-30s      (%.1f events, %.1f calls per collective)\n", "",
               (double)(c2.events - c1.events) / (u2 - u1), (double)(c2.calls - c1.calls) / (u2 - u1));
    }
  }
  return 0;
}

/* 1a': the writer's CPU per second of a job: the first recording's two streams, each spread
 * evenly over SPAN_S seconds (what the threads' waking and clock-paced work cost, beside the
 * per-collective work: at these rates, most of it) */
static int writer_per_second(const bench_cfg *b) {
  char s1[4200], s2[4200];
  stream_counts c1, c2;
  if (make_pair(b->data, b->recs[0], K1, K2, 5, s1, s2, sizeof s1, &c1, &c2)) return 1;
  printf("\nwriter CPU over %g s, the calls spread evenly (%s, ABI v5):\n", SPAN_S, b->recs[0]);
  for (int k = 0; k < 2; k++) {
    const stream_counts *c = k ? &c2 : &c1;
    run_result r = run_child(b->lib, k ? s2 : s1, 1, 0, NULL, SPAN_S);
    if (r.ok)
      printf("  %5.0f collectives a second: %6.1f ms of CPU a second, %.2f%% of a core\n",
             (double)(c->colls + c->p2ps) / SPAN_S, r.writer_ns / SPAN_S / 1e6, r.writer_ns / SPAN_S / 1e7);
  }
  return 0;
}

/* 1a'': the steady state: two long streams, each spread evenly over SPAN_S seconds (both pay
 * the same waking and clock-paced work), their lengths past the plugin's warm-up (its tables'
 * first touch, its heap's growth: the first few thousand collectives of a process), each
 * burst of calls (recorded less than BURST_NS apart: a collective's launch, its proxy ops)
 * kept whole, as NCCL makes them. The slopes above take short streams replayed as fast as
 * possible: the warm-up and a writer always behind (staging and heap growing) are in them;
 * a spread of single calls would find every call's caches cold. The null plugin's launch
 * figure is what the replay's own timing leaves in (cold clock reads). */
static int steady_state(const bench_cfg *b) {
  char s1[4200], s2[4200];
  for (int abi = 5; abi <= 6; abi++) {
    const int W1 = 32, W2 = 160;
    const uint64_t BURST_NS = 20000;
    stream_counts c1, c2;
    if (make_pair(b->data, b->recs[0], W1, W2, abi, s1, s2, sizeof s1, &c1, &c2)) return 1;
    double u1 = (double)(c1.colls + c1.p2ps), u2 = (double)(c2.colls + c2.p2ps);
    g_burst_ns = BURST_NS;
    unit_cost st = slope_paced(b->lib, s1, s2, 1, 0, 0, u1, u2, b->runs, SPAN_S);
    unit_cost nl = slope_paced(b->null_lib, s1, s2, 0, 0, 0, u1, u2, b->runs, SPAN_S);
    unit_cost in = st;
    if (abi == 5) {   /* inside a CUPTI window all the run: the join, exposure */
      g_sample = g_window;
      in = slope_paced(b->lib, s1, s2, 1, 0, 0, u1, u2, b->runs, SPAN_S);
      g_sample = FIRST_WINDOW;
    }
    g_burst_ns = 0;
    if (abi == 5)
      printf("\nsteady state (%s x%d and x%d, each spread evenly over %g s: %.0f and %.0f a second,\n"
             "bursts of calls under %.0f us apart kept whole):\n", b->recs[0], W1, W2, SPAN_S, u1 / SPAN_S,
             u2 / SPAN_S, BURST_NS / 1e3);
    printf("  ABI v%d, per collective: launch %.0f ns (null plugin %.0f), writer %.0f ns between CUPTI windows "
           "(GPU-timed %ld of %ld)\n", abi, st.launch, nl.launch, st.writer, st.timed, st.colls);
    if (abi == 5)
      printf("           inside a window: launch %.0f ns, writer %.0f ns; at the default's duty (%g s in %g): "
             "launch %.0f ns over null, writer %.0f ns\n", in.launch, in.writer, DEFAULT_WINDOW_NS / 1e9,
             DEFAULT_PERIOD_NS / 1e9, at_duty(st.launch, in.launch) - nl.launch, at_duty(st.writer, in.writer));
  }
  return 0;
}

enum { C_PER_LAUNCH = 100 };   /* compute kernels beside each NCCL launch, where priced */

/* 1b: per compute-kernel record */
static int per_compute_kernel(const bench_cfg *b) {
  const int KC = 4, C = C_PER_LAUNCH;
  char s1[4200], src[4200];
  stream_counts cc;
  rec_path(src, sizeof src, b->data, b->recs[0]);
  snprintf(s1, sizeof s1, "%s/c.rec.gz", g_tmp);
  if (make_stream(src, s1, KC, MASK_DEFAULT, 5, &cc)) return 1;
  g_sample = g_window;
  unit_cost ck = slope(b->lib, s1, s1, 1, 0, C, 0, (double)C * (double)cc.launches, b->runs);
  g_sample = FIRST_WINDOW;
  printf("\nper compute-kernel record (%s x%d, %d compute kernels per NCCL launch, %ld launches):\n"
         "  writer %.0f ns, trace %.0f bytes (launch-side plugin time per compute kernel: %.1f ns; "
         "GPU-timed %ld of %ld collectives)\n", b->recs[0], KC, C, cc.launches, ck.writer, ck.bytes, ck.launch,
         ck.timed, ck.colls);
  return 0;
}

/* The instruction counts under callgrind, compared with (or written to) the baseline. Returns
 * the regressions found, or -1 when a stream could not be made. */
static int instructions(const bench_cfg *b) {
  const int C = C_PER_LAUNCH;
  char s1[4200], s2[4200];
  printf("\ninstructions (valgrind --tool=callgrind, inclusive; slopes as above, but each stream's calls spread\n"
         "evenly over %g s, so both do the same clock-paced work, flushes included):\n", SPAN_S);
  stream_counts c1, c2;
  if (make_pair(b->data, b->recs[0], K1, K2, 5, s1, s2, sizeof s1, &c1, &c2)) return -1;
  double u1 = (double)(c1.colls + c1.p2ps), u2 = (double)(c2.colls + c2.p2ps);
  ir_split a = cg_run(b->lib, s1, 0, "k1", SPAN_S), z = cg_run(b->lib, s2, 0, "k2", SPAN_S);
  double il = (z.launch - a.launch) / (u2 - u1), iw = (z.writer - a.writer) / (u2 - u1);
  g_sample = g_window;        /* inside a window (all of the run): collectives, compute kernels */
  ir_split aw = cg_run(b->lib, s1, 0, "k1w", SPAN_S), zw = cg_run(b->lib, s2, 0, "kw", SPAN_S);
  ir_split cn = cg_run(b->lib, s2, C, "cn", SPAN_S);
  g_sample = FIRST_WINDOW;
  double ic = (cn.writer - zw.writer) / ((double)C * (double)c2.launches);
  double iww = (zw.writer - aw.writer) / (u2 - u1), iwd = at_duty(iw, iww);
  if (make_pair(b->data, b->recs[0], K1, K2, 6, s1, s2, sizeof s1, &c1, &c2)) return -1;
  ir_split a6 = cg_run(b->lib, s1, 0, "k1v6", SPAN_S), z6 = cg_run(b->lib, s2, 0, "k2v6", SPAN_S);
  double il6 = (z6.launch - a6.launch) / (u2 - u1), iw6 = (z6.writer - a6.writer) / (u2 - u1);
  printf("  per collective (%s): launch %.0f, writer %.0f between windows, %.0f inside one;\n"
         "    at the default's duty (%g s in %g): writer %.0f (ABI v6 between windows: launch %.0f, writer %.0f)\n"
         "  per compute-kernel record: writer %.0f\n", b->recs[0], il, iw, iww, DEFAULT_WINDOW_NS / 1e9,
         DEFAULT_PERIOD_NS / 1e9, iwd, il6, iw6, ic);
  add_metric("launch_instr_per_collective", il);
  add_metric("writer_instr_per_collective", iw);
  add_metric("writer_instr_per_collective_in_window", iww);
  add_metric("launch_instr_per_collective_v6", il6);
  add_metric("writer_instr_per_compute_kernel", ic);
  int regressions = 0;
  if (b->nrecs) printf("  (recordings given: not compared with %s, which prices the default ones)\n", b->baseline);
  else if (b->update) write_baseline(b->baseline);
  else regressions = compare_baseline(b->baseline);
  if (regressions) printf("%d REGRESSION(S): instructions grew by 10%% or more over %s\n", regressions, b->baseline);
  return regressions;
}

int main(int argc, char **argv) {
  int rc = helper_mode(argc, argv);
  if (rc >= 0) return rc;
  g_self = argv[0];
  bench_cfg b;
  if ((rc = parse_args(argc, argv, &b)) != 0) return rc;
  if ((rc = setup(&b)) != 0) return rc;
  g_pair_ns = read_cost();

  printf("commlens CPU replay benchmark: default mode (COMMLENS_CUPTI=%s, mask 0x%04x, COMMLENS_OUTPUT=%s,\n"
         "COMMLENS_TIMERS=%s), recorded NCCL 2.28.3 streams replayed as fast as possible, a kernel record per NCCL\n"
         "launch from the stand-in libcupti; medians of %d runs; slopes between two stream lengths (per-run costs\n"
         "cancel). launch = inside NCCL's calls (clock reads of %.0f ns per call removed);\n"
         "writer = the plugin's own threads and its exit path (CPU time).\n\n", g_cupti, MASK_DEFAULT, g_output, g_timers,
         b.runs, g_pair_ns);
  if (!b.nrecs) { b.recs[0] = "nccl2.28.3-h200x2-nvlink-r0"; b.recs[1] = "nccl2.28.3-h200x2-socket-r0"; }
  if (per_collective(&b) || writer_per_second(&b) || steady_state(&b) || per_compute_kernel(&b)) return 1;
  int regressions = 0;
  if (b.callgrind && (regressions = instructions(&b)) < 0) return 1;
  rm_tree(g_tmp);
  return regressions ? 1 : 0;
}
