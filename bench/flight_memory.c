/* flight_memory.c: what the flight recorder holds and what a dump of a full window takes, through
 * the exported ncclProfiler_v5 as NCCL calls it. One process per run: the plugin loaded with the
 * recorder's default (COMMLENS_FLIGHT_S unset: light) or as the environment says, collectives
 * driven until the recorder's ring has been full for a while (a network proxy op per channel, and
 * NCCL's kernel-channel timers where its mask asks for them), then SIGUSR2 and the peak of the process's resident
 * memory while the dump is made (VmHWM, after /proc/self/clear_refs reset it), beside the ring's
 * bound. Usage: bench-flight-memory [plugin.so] [collectives]. Prints; it asserts nothing. */
#include "commlens/nccl_profiler_abi.h"
#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef BENCH_DEFAULT_LIB
#define BENCH_DEFAULT_LIB "build/libnccl-profiler-commlens.so"
#endif

static const clabi_profiler_v5 *g_tab;
static void *g_ctx;
static int g_mask;
static char g_dumped[4096];

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)level; (void)flags; (void)file; (void)line;
  char msg[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (strstr(msg, "dump written")) snprintf(g_dumped, sizeof g_dumped, "%s", msg);
}

static long status_kb(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t n = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, key, n)) v = strtol(line + n + 1, NULL, 10);
  if (f) fclose(f);
  return v;
}

static uint64_t cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void *start(uint64_t type, void *parent, clabi_descr_v5 *d) {
  d->type = type;
  d->parentObj = parent;
  void *h = NULL;
  g_tab->startEvent(g_ctx, &h, d);
  return h;
}

/* One collective as NCCL gives it: API events, its Coll, and per channel a KernelCh (with its
 * stop timer) and a network ProxyOp. */
static void collective(uint64_t seq, int nch) {
  static char buf[64];
  int snap = __atomic_load_n(&g_mask, __ATOMIC_RELAXED);   /* NCCL's snapshot at the API call */
  clabi_descr_v5 d;
  memset(&d, 0, sizeof d);
  d.collApi.func = "AllReduce";
  d.collApi.datatype = "ncclFloat32";
  d.collApi.count = 1024;
  void *api = start(CLABI_EV_COLL_API, NULL, &d);
  g_tab->stopEvent(api);
  memset(&d, 0, sizeof d);
  d.coll.seqNumber = seq;
  d.coll.func = "AllReduce";
  d.coll.sendBuff = buf;
  d.coll.recvBuff = buf;
  d.coll.count = 1024;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = (uint8_t)nch;
  d.coll.nWarps = 16;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  void *coll = start(CLABI_EV_COLL, api, &d);
  g_tab->stopEvent(coll);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t gpu = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  for (int ch = 0; ch < nch; ch++) {
    memset(&d, 0, sizeof d);
    d.proxyOp = (struct clabi_proxy_op){.pid = getpid(), .channelId = (uint8_t)ch, .peer = 1, .nSteps = 1,
                                        .chunkSize = 131072, .isSend = 1};
    void *op = start(CLABI_EV_PROXY_OP, coll, &d);
    if (snap & CLABI_EV_KERNEL_CH) {   /* NCCL's timers: only where the snapshot asked for them */
      memset(&d, 0, sizeof d);
      d.kernelCh.channelId = (uint8_t)ch;
      d.kernelCh.pTimer = gpu;
      void *k = start(CLABI_EV_KERNEL_CH, coll, &d);
      clabi_state_args_v4 a = {.kernelCh = {.pTimer = gpu + 5000}};
      if (k) g_tab->recordEventState(k, CLABI_ST_KERNEL_CH_STOP, &a);
      if (k) g_tab->stopEvent(k);
    }
    g_tab->stopEvent(op);
  }
}

int main(int argc, char **argv) {
  const char *lib = argc > 1 ? argv[1] : getenv("COMMLENS_LIB") ? getenv("COMMLENS_LIB") : BENCH_DEFAULT_LIB;
  long ncoll = argc > 2 ? atol(argv[2]) : 400000;
  char dir[] = "/tmp/commlens-flightmem-XXXXXX";
  if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
  setenv("COMMLENS_DIR", dir, 0);
  setenv("COMMLENS_SUMMARY", "off", 0);
  void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!dl || !(g_tab = dlsym(dl, "ncclProfiler_v5"))) { fprintf(stderr, "cannot load %s\n", lib); return 1; }
  if (g_tab->init(&g_ctx, 0xf11e5ull, &g_mask, "bench", 2, 2, 0, logger) != 0 || !g_ctx) return 1;
  long rss0 = status_kb("VmRSS:");
  /* 2,000 collectives then 20 ms: the window spans seconds, as a job's does (the GPU clock's
   * calibration wants its samples over 100 ms at least) */
  for (long i = 0; i < ncoll; i++) {
    collective((uint64_t)i, 4);
    if (i % 2000 == 1999) usleep(20000);
  }
  /* the writer (at nice 19) reads what is left: until the process takes under 2% of a core */
  for (uint64_t last = cpu_ns(), now;; last = now) {
    sleep(2);
    if ((now = cpu_ns()) - last < 40000000ull) break;
  }
  long rss1 = status_kb("VmRSS:");
  FILE *cr = fopen("/proc/self/clear_refs", "w");
  if (cr) { fputs("5", cr); fclose(cr); }   /* VmHWM := VmRSS from here */
  long base = status_kb("VmHWM:");
  kill(getpid(), SIGUSR2);
  for (int i = 0; i < 600 && !g_dumped[0]; i++) usleep(100000);
  long peak = status_kb("VmHWM:");
  printf("flight recorder (COMMLENS_FLIGHT_S=%s, COMMLENS_FLIGHT_MB=%s): %ld collectives of 4 channels\n",
         getenv("COMMLENS_FLIGHT_S") ? getenv("COMMLENS_FLIGHT_S") : "unset",
         getenv("COMMLENS_FLIGHT_MB") ? getenv("COMMLENS_FLIGHT_MB") : "unset", ncoll);
  printf("  resident before the job: %ld KiB, after it (rings, staging, the recorder's window): %ld KiB\n", rss0, rss1);
  printf("  while the dump was made: peak %ld KiB over the %ld KiB before it (+%ld KiB)%s\n", peak, base, peak - base,
         g_dumped[0] ? "" : "; no dump seen");
  if (g_dumped[0]) printf("  %s\n", g_dumped);
  g_tab->finalize(g_ctx);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return 0;
}
