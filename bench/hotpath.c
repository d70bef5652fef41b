/* hotpath.c: what the plugin costs NCCL per call, through the exported ncclProfiler_v5 table
 * exactly as NCCL calls it (dlopen, init, start/state/stop), and the sustained event rate one
 * process can push without losing records. Each measurement runs in a fresh process (the
 * plugin's configuration and statistics are per process); drops come from the trace's
 * commlensStats. Usage: bench-hotpath [plugin.so] (default: $COMMLENS_LIB, then the LIB the
 * Makefile was given). Prints a small table; it asserts nothing. */
#include "commlens/nccl_profiler_abi.h"
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef BENCH_DEFAULT_LIB
#define BENCH_DEFAULT_LIB "build/libnccl-profiler-commlens.so"
#endif
#define BATCH 64                 /* calls timed together: 16 x (start, state, state, stop) */
#define NBATCH 20000             /* batches per thread in the latency runs */
#define RATE_SECONDS 3.0

static const clabi_profiler_v5 *g_tab;
static void *g_ctx;
static int g_mask;

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
static void quiet_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)level; (void)flags; (void)file; (void)line; (void)fmt;
}
static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int load(const char *lib) {
  void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!dl) { fprintf(stderr, "dlopen %s: %s\n", lib, dlerror()); return -1; }
  g_tab = dlsym(dl, "ncclProfiler_v5");
  if (!g_tab) { fprintf(stderr, "no ncclProfiler_v5 in %s\n", lib); return -1; }
  if (g_tab->init(&g_ctx, 0xbe9c4ull, &g_mask, "bench", 1, 2, 0, quiet_logger) != 0 || !g_ctx) {
    fprintf(stderr, "init failed\n");
    return -1;
  }
  return 0;
}

/* A ProxyOp parent and ProxyStep descriptors: the highest-rate events NCCL emits. */
static void *start_op(void) {
  clabi_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = CLABI_EV_PROXY_OP;
  d.proxyOp.pid = getpid();
  d.proxyOp.nSteps = 1 << 30;
  d.proxyOp.chunkSize = 131072;
  d.proxyOp.isSend = 1;
  void *h = NULL;
  g_tab->startEvent(g_ctx, &h, &d);
  return h;
}

/* ---- latency: per-call ns from timed batches -------------------------------------------- */
typedef struct { uint64_t *per_call_x100; } lat_arg;   /* ns per call x 100 per batch */
static atomic_int g_go;
static uint64_t g_pace_ns;       /* latency: idle time after each batch (0 = flat out) */
static double g_target;          /* rate: events/s to hold (0 = flat out) */

/* One proxy step as NCCL reports it: start, two states, stop (four calls); d is a ProxyStep
 * descriptor under its op, prepared once (step_descr), as NCCL keeps its own. */
static void step_descr(clabi_descr_v5 *d, void *op) {
  memset(d, 0, sizeof *d);
  d->type = CLABI_EV_PROXY_STEP;
  d->parentObj = op;
}
static void one_step(clabi_descr_v5 *d, int step) {
  static const clabi_state_args_v4 sa = {.proxyStep = {131072}};
  void *h = NULL;
  d->proxyStep.step = step;
  g_tab->startEvent(g_ctx, &h, d);
  g_tab->recordEventState(h, CLABI_ST_STEP_SEND_GPU_WAIT, (clabi_state_args_v4 *)&sa);
  g_tab->recordEventState(h, CLABI_ST_STEP_SEND_WAIT, (clabi_state_args_v4 *)&sa);
  g_tab->stopEvent(h);
}

static void *lat_thread(void *arg) {
  lat_arg *a = arg;
  void *op = start_op();
  clabi_descr_v5 d;
  step_descr(&d, op);
  while (!atomic_load(&g_go)) {}
  int step = 0;
  for (int b = 0; b < NBATCH; b++) {
    uint64_t t0 = now_ns();
    for (int i = 0; i < BATCH / 4; i++) one_step(&d, step++);
    uint64_t t1 = now_ns();
    a->per_call_x100[b] = (t1 - t0) * 100 / BATCH;
    while (g_pace_ns && now_ns() - t1 < g_pace_ns) {}
  }
  g_tab->stopEvent(op);
  return NULL;
}

/* ---- sustained rate: start/stop pairs as fast as possible ----------------------------- */
typedef struct { uint64_t pairs; } rate_arg;
static atomic_int g_stop;

static void *rate_thread(void *arg) {
  rate_arg *a = arg;
  void *op = start_op();
  clabi_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.type = CLABI_EV_PROXY_STEP;
  d.parentObj = op;
  uint64_t n = 0;
  while (!atomic_load(&g_go)) {}
  uint64_t t0 = now_ns();
  while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
    if (g_target > 0 && (double)n > g_target * (double)(now_ns() - t0) / 1e9) continue;
    for (int i = 0; i < 256; i++) {
      void *h = NULL;
      d.proxyStep.step = (int)n++;
      g_tab->startEvent(g_ctx, &h, &d);
      g_tab->stopEvent(h);
    }
  }
  g_tab->stopEvent(op);
  a->pairs = n;
  return NULL;
}

/* commlensStats.<key> from the one trace in dir (the tail holds the stats). */
static long long trace_stat(const char *dir, const char *key) {
  DIR *dd = opendir(dir);
  if (!dd) return -1;
  char path[1024] = "";
  for (struct dirent *e; (e = readdir(dd));) {
    size_t l = strlen(e->d_name);
    if (l > 11 && !strcmp(e->d_name + l - 11, ".trace.json")) snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
  }
  closedir(dd);
  FILE *f = path[0] ? fopen(path, "r") : NULL;
  if (!f) return -1;
  char buf[8192];
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, sz > (long)sizeof buf - 1 ? sz - (long)sizeof buf + 1 : 0, SEEK_SET);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  char *s = strstr(buf, "\"commlensStats\"");
  s = s ? strstr(s, pat) : NULL;
  return s ? atoll(s + strlen(pat)) : -1;
}

static void rm_dir(const char *dir) {
  DIR *dd = opendir(dir);
  if (!dd) return;
  char p[1200];
  for (struct dirent *e; (e = readdir(dd));) {
    if (e->d_name[0] == '.') continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    unlink(p);
  }
  closedir(dd);
  rmdir(dir);
}

/* ---- sparse calls: what the plugin's own figure sees in a real job ----------------------
 * NCCL calls the plugin between stretches of its own work, so each call finds the ring's lines
 * and the plugin's code colder than a tight loop does. Between calls of a step (start, two
 * states, stop: timed together), `pollute` bytes are written, as other work would. Prints the
 * bench's median and p99 per call and the plugin's in-situ figure (commlensStats). */
#define SPARSE_STEPS 100000
static int sparse(size_t pollute) {
  unsigned char *junk = pollute ? malloc(pollute) : NULL;
  if (pollute && !junk) return 1;
  if (junk) memset(junk, 1, pollute);
  uint64_t *per = calloc(SPARSE_STEPS, sizeof *per);
  void *op = start_op();
  clabi_descr_v5 d;
  step_descr(&d, op);
  for (int i = 0; i < SPARSE_STEPS; i++) {
    uint64_t t0 = now_ns();
    one_step(&d, i);
    per[i] = (now_ns() - t0) * 100 / 4;
    for (size_t k = 0; k < pollute; k += 64) junk[k]++;
  }
  g_tab->stopEvent(op);
  qsort(per, SPARSE_STEPS, sizeof *per, cmp_u64);
  g_tab->finalize(g_ctx);
  printf("RESULT sparse %.1f %.1f %lld\n", per[SPARSE_STEPS / 2] / 100.0, per[SPARSE_STEPS * 99 / 100] / 100.0,
         trace_stat(getenv("COMMLENS_DIR"), "overhead_ns_per_call"));
  free(per);
  free(junk);
  return 0;
}

/* Child: one measurement; prints one "RESULT ..." line. */
static int child(const char *lib, const char *mode, int nthreads, double param) {
  if (load(lib)) return 1;
  g_pace_ns = !strcmp(mode, "lat") ? (uint64_t)param : 0;
  g_target = !strcmp(mode, "rate") ? param / nthreads : 0;
  pthread_t t[64];
  if (!strcmp(mode, "sparse")) return sparse((size_t)param << 10);
  if (!strcmp(mode, "lat")) {
    lat_arg a[64];
    for (int i = 0; i < nthreads; i++) {
      a[i].per_call_x100 = calloc(NBATCH, sizeof(uint64_t));
      pthread_create(&t[i], NULL, lat_thread, &a[i]);
    }
    atomic_store(&g_go, 1);
    for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
    size_t n = (size_t)nthreads * NBATCH;
    uint64_t *all = malloc(n * sizeof *all);
    for (int i = 0; i < nthreads; i++) memcpy(all + (size_t)i * NBATCH, a[i].per_call_x100, NBATCH * sizeof(uint64_t));
    qsort(all, n, sizeof *all, cmp_u64);
    double med = all[n / 2] / 100.0, p99 = all[n * 99 / 100] / 100.0;
    g_tab->finalize(g_ctx);
    printf("RESULT lat %d %.1f %.1f %lld %llu %lld\n", nthreads, med, p99,
           trace_stat(getenv("COMMLENS_DIR"), "dropped"), (unsigned long long)n * BATCH,
           trace_stat(getenv("COMMLENS_DIR"), "overhead_ns_per_call"));
  } else {
    rate_arg a[64];
    for (int i = 0; i < nthreads; i++) pthread_create(&t[i], NULL, rate_thread, &a[i]);
    uint64_t t0 = now_ns();
    atomic_store(&g_go, 1);
    usleep((useconds_t)((g_target > 0 ? 2.0 : RATE_SECONDS) * 1e6));
    atomic_store(&g_stop, 1);
    uint64_t pairs = 0;
    for (int i = 0; i < nthreads; i++) { pthread_join(t[i], NULL); pairs += a[i].pairs; }
    double secs = (double)(now_ns() - t0) / 1e9;
    uint64_t f0 = now_ns();
    g_tab->finalize(g_ctx);
    double fin = (double)(now_ns() - f0) / 1e9;
    printf("RESULT rate %d %.0f %lld %llu %.2f %lld\n", nthreads, (double)pairs / secs,
           trace_stat(getenv("COMMLENS_DIR"), "dropped"), (unsigned long long)pairs, fin,
           trace_stat(getenv("COMMLENS_DIR"), "events"));
  }
  fflush(stdout);
  return 0;
}

static int run_child(const char *self, const char *lib, const char *mode, int nthreads, double param,
                     char *out, size_t outn) {
  char dir[] = "/tmp/commlens-bench-XXXXXX";
  if (!mkdtemp(dir)) return -1;
  int fds[2];
  if (pipe(fds)) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    setenv("COMMLENS_DIR", dir, 1);
    setenv("COMMLENS_SUMMARY", "off", 1);
    unsetenv("COMMLENS_EVENTS");
    char nt[16], pa[32];
    snprintf(nt, sizeof nt, "%d", nthreads);
    snprintf(pa, sizeof pa, "%.0f", param);
    execl(self, self, "--child", lib, mode, nt, pa, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  size_t n = 0;
  ssize_t r;
  while (n + 1 < outn && (r = read(fds[0], out + n, outn - 1 - n)) > 0) n += (size_t)r;
  out[n] = 0;
  close(fds[0]);
  int st;
  waitpid(pid, &st, 0);
  rm_dir(dir);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc == 6 && !strcmp(argv[1], "--child")) return child(argv[2], argv[3], atoi(argv[4]), atof(argv[5]));
  const char *lib = argc > 1 ? argv[1] : getenv("COMMLENS_LIB") ? getenv("COMMLENS_LIB") : BENCH_DEFAULT_LIB;
  char self[4096];
  ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
  if (l <= 0) return 1;
  self[l] = 0;
  printf("commlens hot path through ncclProfiler_v5 (%s), %ld CPUs\n", lib, sysconf(_SC_NPROCESSORS_ONLN));
  printf("%-34s %10s %10s %14s %12s %8s\n", "measurement", "median", "p99", "calls", "dropped", "in-situ");
  char out[4096];
  int lat_threads[] = {1, 8, 1, 8};
  double lat_pace[] = {0, 0, 50000, 400000};   /* paced: ~1.3M calls/s in total, below the writer's rate */
  for (int i = 0; i < 4; i++) {
    int nt = lat_threads[i];
    double med, p99;
    long long dropped, insitu;
    unsigned long long calls;
    if (run_child(self, lib, "lat", nt, lat_pace[i], out, sizeof out) ||
        sscanf(strstr(out, "RESULT") ? strstr(out, "RESULT") : "", "RESULT lat %*d %lf %lf %lld %llu %lld", &med, &p99, &dropped, &calls, &insitu) != 5) {
      printf("latency, %d thread(s): failed: %s\n", nt, out);
      continue;
    }
    char label[64];
    snprintf(label, sizeof label, "ns/call, %d thread%s%s", nt, nt > 1 ? "s" : "", lat_pace[i] > 0 ? ", paced" : "");
    printf("%-34s %10.1f %10.1f %14llu %12lld %8lld\n", label, med, p99, calls, dropped, insitu);
  }
  /* The plugin's own figure against the bench's, as calls get sparser and caches colder. */
  size_t kib[] = {0, 256, 4096};
  for (int i = 0; i < 3; i++) {
    double med, p99;
    long long insitu;
    if (run_child(self, lib, "sparse", 1, (double)kib[i], out, sizeof out) ||
        sscanf(strstr(out, "RESULT") ? strstr(out, "RESULT") : "", "RESULT sparse %lf %lf %lld", &med, &p99, &insitu) != 3) {
      printf("sparse: failed: %s\n", out);
      continue;
    }
    char label[64];
    snprintf(label, sizeof label, "ns/call, a step, %zu KiB between", kib[i]);
    printf("%-34s %10.1f %10.1f %14d %12s %8lld\n", label, med, p99, SPARSE_STEPS * 4, "", insitu);
  }
  printf("\n%-34s %14s %14s %12s %10s\n", "sustained, start+stop pairs", "events/s", "written", "dropped", "drain s");
  double targets[] = {0, 0, 10e6, 5e6, 2e6, 1e6, 5e5, 2.5e5};
  int tthreads[] = {1, 2, 1, 1, 1, 1, 1, 1};
  for (int k = 0; k < 8; k++) {
    int nt = tthreads[k];
    double rate, fin;
    long long dropped, events;
    unsigned long long pairs;
    if (run_child(self, lib, "rate", nt, targets[k], out, sizeof out) ||
        sscanf(strstr(out, "RESULT") ? strstr(out, "RESULT") : "", "RESULT rate %*d %lf %lld %llu %lf %lld", &rate, &dropped, &pairs, &fin, &events) != 5) {
      printf("rate, %d producer(s): failed: %s\n", nt, out);
      continue;
    }
    char label[64];
    if (targets[k] > 0) snprintf(label, sizeof label, "%d producer, held at %.2gM/s, 2 s", nt, targets[k] / 1e6);
    else snprintf(label, sizeof label, "%d producer thread%s, flat out, %.0f s", nt, nt > 1 ? "s" : "", RATE_SECONDS);
    printf("%-34s %14.0f %14lld %12lld %10.2f\n", label, rate, events, dropped, fin);
  }
  printf("\n(lossless rate = the highest held rate with 0 dropped; events = start+stop pairs of ProxyStep; written = events in the trace; dropped = records lost, "
         "from commlensStats; in-situ = the plugin's own sampled figure, commlensStats.overhead_ns_per_call, which times one call in 1024 "
         "from inside the call; targets: median <= 50 ns/call, >= 10M events/s lossless)\n");
  return 0;
}
