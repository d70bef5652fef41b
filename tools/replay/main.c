/* commlens-replay: plays one COMMLENS_RECORD recording (.rec.gz) through the plugin in this
 * process, exactly as NCCL made the calls and at the recorded pace (tools/replay/replay.c does the
 * work), so a recorded real run becomes a trace again without NCCL or a GPU. One recording per
 * process: the plugin reads its configuration at the first init of a process. */
#include "tools/replay/replay.h"
#include "common/clock.h"
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const char *g_lib_name = "libnccl-profiler-commlens.so";

/* --virtual-clock: the plugin's host timestamps become the recorded run's. This program defines
 * clock_gettime and exports it (mk/replay.mk), so the plugin's calls resolve here before libc:
 * CLOCK_MONOTONIC reads the replay's start plus the recorded time of the call being replayed
 * (it stands still between calls); every other clock, and the replay's own pacing, read the
 * kernel's. Replays stay paced, so the plugin's threads still see time pass as in the run, and
 * two replays of one recording differ only by a constant shift of every timestamp. */
static _Atomic int64_t g_vbase = -1;      /* -1: off; else the real monotonic ns at the start */
static _Atomic uint64_t g_vnow;

typedef int (*clock_fn)(clockid_t, struct timespec *);
static _Atomic(clock_fn) g_libc_clock;      /* libc's (the vDSO read), found on first use */

int clock_gettime(clockid_t id, struct timespec *ts) {
  int64_t base = atomic_load_explicit(&g_vbase, memory_order_relaxed);
  if (id != CLOCK_MONOTONIC || base < 0) {
    clock_fn f = atomic_load_explicit(&g_libc_clock, memory_order_relaxed);
    if (!f) {
      f = (clock_fn)dlsym(RTLD_NEXT, "clock_gettime");
      atomic_store_explicit(&g_libc_clock, f, memory_order_relaxed);
    }
    return f ? f(id, ts) : (int)syscall(SYS_clock_gettime, id, ts);
  }
  uint64_t v = (uint64_t)base + atomic_load_explicit(&g_vnow, memory_order_relaxed);
  ts->tv_sec = (time_t)(v / 1000000000u);
  ts->tv_nsec = (long)(v % 1000000000u);
  return 0;
}

static void set_vclock(uint64_t recorded_ns) { atomic_store_explicit(&g_vnow, recorded_ns, memory_order_relaxed); }

static void virtual_clock_on(void) {
  struct timespec t;
  cl_mono_kernel(&t);
  atomic_store(&g_vnow, 0);
  atomic_store(&g_vbase, (int64_t)t.tv_sec * 1000000000 + t.tv_nsec);
  rp_set_clock_hook(set_vclock);
}

/* The library next to this binary (build/commlens-replay -> build/libnccl-...). Static buffer. */
static const char *lib_next_to_self(void) {
  static char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return NULL;
  path[n] = 0;
  char *slash = strrchr(path, '/');
  if (!slash || (size_t)(slash - path) + 2 + strlen(g_lib_name) > sizeof path) return NULL;
  strcpy(slash + 1, g_lib_name);
  return access(path, R_OK) == 0 ? path : NULL;
}

static int usage(FILE *f) {
  fprintf(f,
          "usage: commlens-replay [--fast | --speed X] [--virtual-clock] [--verbose] FILE.rec.gz [LIB.so]\n"
          "  Replays a COMMLENS_RECORD recording through the profiler plugin LIB.so (default:\n"
          "  $COMMLENS_LIB, else %s next to this program), at the\n"
          "  recorded pace (--speed X: X times faster; --fast: no waiting, but then GPU times\n"
          "  no longer line up with the host's; --virtual-clock: the plugin's monotonic clock reads\n"
          "  the recorded times, so two replays differ only by a constant shift; --verbose: what\n"
          "  was replayed). The plugin's\n"
          "  own COMMLENS_* variables apply (COMMLENS_DIR, COMMLENS_CUPTI, ...); COMMLENS_OUTPUT\n"
          "  defaults to trace, COMMLENS_EVENTS defaults to full (recordings carry every event),\n"
          "  COMMLENS_RECORD is ignored and COMMLENS_CLOCK_ID is set to this replay's own\n"
          "  (replay-PID-NS: a timeline of its own).\n"
          "  Set RANK to choose the rank the trace file is named after.\n",
          g_lib_name);
  return f == stdout ? 0 : 2;
}

int main(int argc, char **argv) {
  double speed = 1.0;
  int i = 1, verbose = 0, vclock = 0;
  for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
    if (!strcmp(argv[i], "--help")) return usage(stdout);
    if (!strcmp(argv[i], "--fast")) { speed = 0; continue; }
    if (!strcmp(argv[i], "--verbose")) { verbose = 1; continue; }
    if (!strcmp(argv[i], "--virtual-clock")) { vclock = 1; continue; }
    char *end = NULL;
    if (!strcmp(argv[i], "--speed") && i + 1 < argc) speed = strtod(argv[++i], &end);
    if (!end || *end || speed <= 0) return usage(stderr);
  }
  if (i < argc && !strcmp(argv[i], "-h")) return usage(stdout);
  if (argc - i < 1 || argc - i > 2) return usage(stderr);
  const char *rec = argv[i], *lib = argc - i == 2 ? argv[i + 1] : NULL;
  if (!lib) { const char *e = getenv("COMMLENS_LIB"); if (e && *e) lib = e; }
  if (!lib) lib = lib_next_to_self();
  if (!lib) {
    fprintf(stderr, "commlens-replay: no plugin library: give LIB.so or set COMMLENS_LIB\n");
    return 2;
  }
  setenv("COMMLENS_EVENTS", "full", 0);
  /* Each replay runs its recording from its own start (paced or virtual), so its timeline is
   * shared with no other process, whatever host and boot it runs on: say so in its trace, and
   * `commlens` aligns replays of several ranks instead of taking them as one clock. */
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  char clock_id[64];
  snprintf(clock_id, sizeof clock_id, "replay-%ld-%lld", (long)getpid(),
           (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
  setenv("COMMLENS_CLOCK_ID", clock_id, 1);
  unsetenv("COMMLENS_RECORD");            /* replaying must not record a recording of itself */
  if (vclock) virtual_clock_on();
  rp_stats st;
  if (rp_replay_paced(rec, lib, speed, &st) != 0) {
    fprintf(stderr, "commlens-replay: %s\n", st.err);
    return 1;
  }
  if (verbose)
    fprintf(stderr,
            "commlens-replay: %s: abi v%d, %d threads, %ld calls (%ld inits, %ld starts, %ld stops, "
            "%ld states, %ld finalizes; %ld stops and states on events it did not record left unmade), "
            "%ld parents mapped, %ld foreign pointers passed, "
            "at most %.3f ms behind the recorded pace\n",
            rec, st.abi, st.nthreads, st.calls, st.inits, st.starts, st.stops, st.states,
            st.finalizes, st.unmade, st.mapped_parents, st.foreign_passed, st.max_late_ns / 1e6);
  if (st.bad_rc) {
    fprintf(stderr, "commlens-replay: %ld calls did not return ncclSuccess\n", st.bad_rc);
    return 1;
  }
  return 0;   /* exit(), not _exit(): the plugin's exit flush writes the final trace */
}
