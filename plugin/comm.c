/* comm.c: communicator contexts and the plugin's process lifecycle: first-init setup
 * (configuration, clock offset, global rank), init/finalize bookkeeping, the capture window,
 * process exit and fork. Holds the only mutex in the plugin; nothing here is on the hot path
 * except cl_ctx_serial() and the collective-count window gate. */
#include "config.h"
#include "clock.h"
#include "core.h"
#include "ring.h"
#include "writer.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The contexts handed to NCCL are addresses inside this table, so a context can be checked
 * by its address alone before anything is read through it (PXN passes foreign pointers). */
typedef struct { _Alignas(64) _Atomic uint32_t serial; } cl_ctx_slot;
static cl_ctx_slot g_ctx[CL_MAX_COMMS];

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static cl_comm_info *g_infos;          /* by serial - 1 */
static uint32_t g_ninfos, g_cap_infos;
static int g_active;                   /* live communicators */
static int g_proc_ready;
static _Atomic(int *) g_mask_ptr;      /* NCCL's process-global mask (NCCL reads it relaxed) */
cl_process_info cl_proc;

_Atomic int cl_capturing = 1;
_Atomic int cl_window_by_coll;
static _Atomic uint64_t g_colls;
static int g_window_state;             /* 0 before, 1 inside, 2 after */

uint32_t cl_ctx_serial(void *ctx) {
  uintptr_t p = (uintptr_t)ctx, base = (uintptr_t)g_ctx;
  if (p - base >= sizeof g_ctx || (p - base) % sizeof(cl_ctx_slot)) return 0;
  return atomic_load_explicit(&((cl_ctx_slot *)ctx)->serial, memory_order_relaxed);
}

uint64_t cl_coll_count(void) { return atomic_load(&g_colls); }

static void set_mask(uint32_t m);
void cl_disable(void) {
  atomic_store(&cl_enabled, 0);
  atomic_store(&cl_capturing, 0);
  set_mask(0);
}

static void set_mask(uint32_t m) {
  int *p = atomic_load_explicit(&g_mask_ptr, memory_order_relaxed);
  if (p) __atomic_store_n(p, (int)m, __ATOMIC_RELAXED);
}

/* Outside the window NCCL still reports collectives (cheap), so they can be counted. */
static uint32_t mask_outside_window(void) {
  return cl_cfg.window == CL_WIN_COLL ? (1u << CL_EV_COLL) : 0;
}

int cl_window_coll_gate(unsigned etype) {
  if (etype != CL_EV_COLL) return atomic_load_explicit(&cl_capturing, memory_order_relaxed);
  uint64_t n = atomic_fetch_add_explicit(&g_colls, 1, memory_order_relaxed);
  if (n == cl_cfg.win_start) { atomic_store(&cl_capturing, 1); set_mask(cl_cfg.mask); }
  if (n >= cl_cfg.win_stop) {
    if (n == cl_cfg.win_stop) { atomic_store(&cl_capturing, 0); set_mask(mask_outside_window()); }
    return 0;
  }
  return n >= cl_cfg.win_start;
}

void cl_window_tick(uint64_t now) {
  if (cl_cfg.window != CL_WIN_TIME || !cl_proc.start_ns) return;
  uint64_t t = now - cl_proc.start_ns;
  int want = t < cl_cfg.win_start ? 0 : t < cl_cfg.win_stop ? 1 : 2;
  if (want == g_window_state) return;
  g_window_state = want;
  atomic_store(&cl_capturing, want == 1);
  set_mask(want == 1 ? cl_cfg.mask : 0);
  cl_log(CL_LOG_INFO, "capture window %s", want == 1 ? "opened" : "closed");
}

static void on_exit_handler(void) { cl_writer_finish(); }

static void fork_child(void) {
  /* The child keeps none of the parent's threads: start over at its next init. */
  atomic_store(&cl_enabled, 0);
  cl_rings_reset_after_fork();
  cl_writer_after_fork_child();
  pthread_mutex_init(&g_mu, NULL);
  memset(g_ctx, 0, sizeof g_ctx);
  g_active = 0;
  g_proc_ready = 0;
  g_ninfos = 0;
  cl_log_reset_once();
}

static void detect_rank(int comm_rank) {
  static const char *vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMIX_RANK",
                               "PMI_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    char *end;
    if (!v || !*v) continue;
    long r = strtol(v, &end, 10);
    if (*end || r < 0 || r > 1 << 24) continue;
    cl_proc.rank = (int)r;
    snprintf(cl_proc.rank_source, sizeof cl_proc.rank_source, "%s", vars[i]);
    return;
  }
  if (comm_rank >= 0) {
    cl_proc.rank = comm_rank;
    snprintf(cl_proc.rank_source, sizeof cl_proc.rank_source, "comm");
  } else {
    cl_proc.rank = (int)cl_proc.pid;
    snprintf(cl_proc.rank_source, sizeof cl_proc.rank_source, "pid");
  }
}

/* The device current on this thread at init, from the CUDA driver NCCL already loaded. */
static int current_cuda_device(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h) return -1;
  int (*get)(int *) = (int (*)(int *))dlsym(h, "cuCtxGetDevice");
  int dev = -1;
  if (!get || get(&dev) != 0) dev = -1;
  dlclose(h);
  return dev;
}

static void process_setup(const cl_comm_desc *d) {
  static int atexit_done, atfork_done;
  cl_config_load();
  memset(&cl_proc, 0, sizeof cl_proc);
  cl_proc.pid = getpid();
  if (gethostname(cl_proc.host, sizeof cl_proc.host - 1) != 0) snprintf(cl_proc.host, sizeof cl_proc.host, "unknown");
  snprintf(cl_proc.job, sizeof cl_proc.job, "%s", cl_cfg.job);
  detect_rank(d->rank);
  cl_proc.abi = d->abi;
  cl_proc.realtime_offset_ns = cl_clock_measure_offset(&cl_proc.offset_err_ns);
  cl_proc.start_ns = cl_now();
  cl_proc.cuda_dev = current_cuda_device();
  int windowed = cl_cfg.window != CL_WIN_NONE;
  atomic_store(&cl_window_by_coll, cl_cfg.window == CL_WIN_COLL);
  atomic_store(&cl_capturing, !windowed || (cl_cfg.window == CL_WIN_COLL && cl_cfg.win_start == 0));
  g_window_state = 0;
  atomic_store(&g_colls, 0);
  if (!atexit_done) { atexit(on_exit_handler); atexit_done = 1; }
  if (!atfork_done) { pthread_atfork(NULL, NULL, fork_child); atfork_done = 1; }
  atomic_store(&cl_enabled, 1);
  g_proc_ready = 1;
}

static const char *abi_limits(int abi) {
  switch (abi) {
  case 1: case 2: return "no kernel-channel (GPU) events, no network-plugin events, no proxy transfer sizes";
  case 3: return "kernel-channel events carry no GPU timestamps and never stop; no proxy transfer sizes";
  case 4: return "no API events (no CUDA stream per call), no copy-engine events";
  case 5: return "no copy-engine collective events";
  default: return "none";
  }
}

int cl_comm_init(void **ctx, int *mask, const cl_comm_desc *d) {
  *ctx = NULL;
  cl_log_set_logger(d->logfn);
  pthread_mutex_lock(&g_mu);
  if (!g_proc_ready) process_setup(d);
  if (g_infos == NULL || g_ninfos == g_cap_infos) {
    uint32_t cap = g_cap_infos ? g_cap_infos * 2 : 64;
    cl_comm_info *n = realloc(g_infos, cap * sizeof *n);
    if (!n) {
      pthread_mutex_unlock(&g_mu);
      cl_log(CL_LOG_WARN, "out of memory registering a communicator; not profiling it");
      return -1;
    }
    g_infos = n;
    g_cap_infos = cap;
  }
  int slot = -1;
  for (int i = 0; i < CL_MAX_COMMS && slot < 0; i++)
    if (atomic_load(&g_ctx[i].serial) == 0) slot = i;
  if (slot < 0) {
    pthread_mutex_unlock(&g_mu);
    cl_log_once("too-many-comms", CL_LOG_WARN, "more than %d live communicators; not profiling the rest", CL_MAX_COMMS);
    return -1;
  }
  cl_comm_info *ci = &g_infos[g_ninfos];
  memset(ci, 0, sizeof *ci);
  ci->serial = ++g_ninfos;
  ci->d = *d;
  ci->cuda_dev = current_cuda_device();
  ci->init_ns = cl_now();
  atomic_store(&g_ctx[slot].serial, ci->serial);
  int first = g_active++ == 0;
  atomic_store_explicit(&g_mask_ptr, mask, memory_order_relaxed);
  uint32_t m = atomic_load(&cl_capturing) ? cl_cfg.mask : mask_outside_window();
  __atomic_store_n(mask, (int)m, __ATOMIC_RELAXED);   /* the writer may be storing it too */
  *ctx = &g_ctx[slot];
  uint32_t serial = ci->serial;
  pthread_mutex_unlock(&g_mu);

  if (first && cl_writer_start() != 0) {
    cl_log(CL_LOG_WARN, "could not start the writer thread; profiling is off for this process");
    atomic_store(&cl_enabled, 0);
    *mask = 0;
  }
  cl_log_once("abi", CL_LOG_INFO, "commlens %s: NCCL drives profiler ABI v%d (limits of this version: %s); "
              "events=%s (0x%x), output in %s", COMMLENS_VERSION, d->abi, abi_limits(d->abi),
              cl_cfg.events_name, cl_cfg.mask, cl_cfg.dir);
  cl_log(CL_LOG_INFO, "communicator %u: hash 0x%llx name \"%s\" rank %d of %d", serial,
         (unsigned long long)d->hash, d->name, d->rank, d->nranks);
  return 0;
}

void cl_comm_finalize(void *ctx) {
  uint32_t serial = cl_ctx_serial(ctx);
  if (!serial) return;                       /* NULL, foreign, or already finalized */
  pthread_mutex_lock(&g_mu);
  uintptr_t i = ((uintptr_t)ctx - (uintptr_t)g_ctx) / sizeof(cl_ctx_slot);
  if (atomic_load(&g_ctx[i].serial) != serial) { pthread_mutex_unlock(&g_mu); return; }
  atomic_store(&g_ctx[i].serial, 0);
  g_infos[serial - 1].fini_ns = cl_now();
  int last = --g_active == 0;
  pthread_mutex_unlock(&g_mu);
  if (last) cl_writer_stop();
}

int cl_comm_lookup(uint32_t serial, cl_comm_info *out) {
  int rc = -1;
  pthread_mutex_lock(&g_mu);
  if (serial >= 1 && serial <= g_ninfos) { *out = g_infos[serial - 1]; rc = 0; }
  pthread_mutex_unlock(&g_mu);
  return rc;
}

void cl_comm_learn(uint32_t serial, uint64_t hash, int rank) {
  pthread_mutex_lock(&g_mu);
  if (serial >= 1 && serial <= g_ninfos) {
    cl_comm_info *ci = &g_infos[serial - 1];
    if (!ci->d.hash && hash) ci->d.hash = hash;
    if (ci->d.rank < 0 && rank >= 0) ci->d.rank = rank;
  }
  pthread_mutex_unlock(&g_mu);
}
