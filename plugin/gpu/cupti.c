/* cupti.c: the CUPTI bridge. Loads libcupti at run time (never linked), records kernel activity
 * (with COMMLENS_CUPTI=full also memcpy, memset and kernel-launch API records) into bounded
 * buffers with timestamps on our CLOCK_MONOTONIC base, hands parsed records to the writer
 * thread, and tells NCCL's launching threads the CUPTI id of a launch's stream.
 * It must never disturb another CUPTI client (Nsight, Kineto): it probes the one subscriber slot
 * (subscribe, then unsubscribe at once) and never keeps it; it suspends while another tool holds
 * the slot and re-arms when it is free again, after a backoff when our records stopped with no
 * holder seen (cl_cupti_displaced); it never flushes, disables or finalizes what it did not
 * enable (docs/decisions/0048-cupti-coexistence.md says why, and what was measured).
 * Threads: CUPTI calls buf_requested/buf_completed on its own threads; they only move buffer
 * pointers under cl_cupti_g.mu. Everything else, parsing included, runs on the writer thread
 * (cl_cupti_flush / cl_cupti_drain). */
#include "plugin/gpu/cupti.h"
#include "plugin/gpu/cupti_internal.h"
#include "common/config.h"
#include "common/clock.h"
#include "common/log.h"
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_version.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The record fields we read sit at the same offsets in every layout CUPTI 12.x and 13.x emit
 * (Kernel9 in 12.x, Kernel10 in 13.0/13.1, later versions append). */
_Static_assert(offsetof(CUpti_ActivityKernel10, start) == offsetof(CUpti_ActivityKernel9, start), "kernel layout");
_Static_assert(offsetof(CUpti_ActivityKernel10, streamId) == offsetof(CUpti_ActivityKernel9, streamId), "kernel layout");
_Static_assert(offsetof(CUpti_ActivityKernel10, correlationId) == offsetof(CUpti_ActivityKernel9, correlationId), "kernel layout");
_Static_assert(offsetof(CUpti_ActivityKernel10, name) == offsetof(CUpti_ActivityKernel9, name), "kernel layout");
_Static_assert(offsetof(CUpti_ActivityKernel10, graphNodeId) == offsetof(CUpti_ActivityKernel9, graphNodeId), "kernel layout");
_Static_assert(offsetof(CUpti_ActivityKernel10, graphId) == offsetof(CUpti_ActivityKernel9, graphId), "kernel layout");
_Static_assert(offsetof(CUpti_ActivityMemcpy6, correlationId) == offsetof(CUpti_ActivityMemcpy5, correlationId), "memcpy layout");
_Static_assert(offsetof(CUpti_ActivityMemset4, correlationId) == offsetof(CUpti_ActivityMemset3, correlationId), "memset layout");

#define FN(name) __typeof__(&name) name
static struct {
  FN(cuptiGetVersion); FN(cuptiGetResultString); FN(cuptiSubscribe); FN(cuptiUnsubscribe);
  FN(cuptiActivityRegisterCallbacks); FN(cuptiActivityEnable); FN(cuptiActivityDisable);
  FN(cuptiActivityFlushAll); FN(cuptiActivityGetNextRecord);
  FN(cuptiActivityGetNumDroppedRecords); FN(cuptiGetTimestamp);
  /* optional */
  FN(cuptiSubscribe_v2); FN(cuptiActivityRegisterTimestampCallback);
  FN(cuptiSetThreadIdType); FN(cuptiGetStreamIdEx); FN(cuptiFinalize);
} api;
#undef FN
/* cuptiGetStreamIdEx, set once CUPTI is loaded and bound; read by any thread (NCCL's launching threads). */
static _Atomic(__typeof__(api.cuptiGetStreamIdEx)) g_stream_id_fn;
/* Lets NCCL's launching threads ask for stream ids (on: while CUPTI records for us), or not. */
static void offer_stream_ids(int on) {
  atomic_store_explicit(&g_stream_id_fn, on ? api.cuptiGetStreamIdEx : NULL, memory_order_release);
}

cl_cupti_bridge cl_cupti_g = {.mu = PTHREAD_MUTEX_INITIALIZER};

static const CUpti_CallbackId k_driver_launch[] = {
  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
  CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
  CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
  CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};
static const CUpti_ActivityKind k_kinds[3] = {
  CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};

/* Long paths are cut to fit the status line. */
static void set_status(const char *fmt, const char *a, const char *b) {
  char tmp[2400];
  snprintf(tmp, sizeof tmp, fmt, a ? a : "", b ? b : "");
  size_t n = strlen(tmp);
  if (n >= sizeof cl_cupti_g.status) n = sizeof cl_cupti_g.status - 1;
  memcpy(cl_cupti_g.status, tmp, n);
  cl_cupti_g.status[n] = 0;
}

static const char *err_str(CUptiResult r) {
  const char *s = NULL;
  if (api.cuptiGetResultString && api.cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
  static char buf[32];
  snprintf(buf, sizeof buf, "CUPTI error %d", (int)r);
  return buf;
}

/* ---- CUPTI's threads: keep these short ---- */
static uint64_t CUPTIAPI ts_monotonic(void) { return cl_now(); }

static void CUPTIAPI buf_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  uint8_t *b = NULL;
  pthread_mutex_lock(&cl_cupti_g.mu);
  if (cl_cupti_g.nfree) b = cl_cupti_g.free_bufs[--cl_cupti_g.nfree];
  else if (cl_cupti_g.nalloc < CL_CUPTI_MAX_BUFS) {
    /* malloc-family memory: if another client re-registers callbacks, CUPTI may hand this
     * buffer to it, and it will free() it */
    if (posix_memalign((void **)&b, 8, CL_CUPTI_BUF_BYTES) == 0) cl_cupti_g.nalloc++;
    else b = NULL;
  }
  if (!b) cl_cupti_g.refused++;   /* CUPTI drops records until a buffer is free; it counts them */
  pthread_mutex_unlock(&cl_cupti_g.mu);
  *buffer = b;
  *size = b ? CL_CUPTI_BUF_BYTES : 0;
  *max_records = 0;
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                   size_t valid) {
  (void)size;
  size_t dropped = 0;
  if (api.cuptiActivityGetNumDroppedRecords)
    api.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped);
  pthread_mutex_lock(&cl_cupti_g.mu);
  cl_cupti_g.dropped += dropped;
  if (!buffer) { pthread_mutex_unlock(&cl_cupti_g.mu); return; }
  cl_cupti_g.buffers++;
  if (valid && cl_cupti_g.ndone < CL_CUPTI_MAX_BUFS) cl_cupti_g.done[cl_cupti_g.ndone++] = (done_buf){buffer, valid};
  else if (cl_cupti_g.nfree < CL_CUPTI_MAX_BUFS) cl_cupti_g.free_bufs[cl_cupti_g.nfree++] = buffer;
  else { free(buffer); cl_cupti_g.nalloc--; }
  pthread_mutex_unlock(&cl_cupti_g.mu);
}

/* ---- loading ---- */
static int find_loaded(struct dl_phdr_info *info, size_t sz, void *arg) {
  (void)sz;
  if (info->dlpi_name && strstr(info->dlpi_name, "libcupti.so")) {
    snprintf((char *)arg, 1024, "%s", info->dlpi_name);
    return 1;
  }
  return 0;
}

/* A libcupti already in the process (Kineto's) is the one to use: two CUPTI copies in one
 * process would fight over the driver's tool hooks. */
static void *load_lib(char *path, size_t n) {
  const char *env = cl_cfg.cupti_lib[0] ? cl_cfg.cupti_lib : NULL;
  if (env && *env) { snprintf(path, n, "%s", env); return dlopen(env, RTLD_NOW | RTLD_LOCAL); }
  char loaded[1024] = "";
  if (dl_iterate_phdr(find_loaded, loaded) && loaded[0]) {
    void *h = dlopen(loaded, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (h) { snprintf(path, n, "%s", loaded); return h; }
  }
  static const char *names[] = {"libcupti.so", "libcupti.so.13", "libcupti.so.12"};
  static const char *dirs[] = {"/usr/local/cuda/extras/CUPTI/lib64", "/usr/local/cuda/lib64"};
  for (size_t i = 0; i < 3; i++) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) { snprintf(path, n, "%s", names[i]); return h; }
  }
  const char *home = getenv("CUDA_HOME");
  for (int d = -1; d < 2; d++) {
    char dir[900];
    if (d < 0) { if (!home || !*home) continue; snprintf(dir, sizeof dir, "%s/extras/CUPTI/lib64", home); }
    else snprintf(dir, sizeof dir, "%s", dirs[d]);
    for (size_t i = 0; i < 3; i++) {
      snprintf(path, n, "%s/%s", dir, names[i]);
      void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (h) return h;
    }
  }
  snprintf(path, n, "libcupti.so");
  return NULL;
}

static const char *bind_symbols(void) {
#define REQ(s) do { *(void **)&api.s = dlsym(cl_cupti_g.lib, #s); if (!api.s) return #s; } while (0)
#define OPT(s) do { *(void **)&api.s = dlsym(cl_cupti_g.lib, #s); } while (0)
  REQ(cuptiGetVersion); REQ(cuptiSubscribe); REQ(cuptiUnsubscribe);
  REQ(cuptiActivityRegisterCallbacks); REQ(cuptiActivityEnable); REQ(cuptiActivityDisable);
  REQ(cuptiActivityFlushAll); REQ(cuptiActivityGetNextRecord);
  REQ(cuptiActivityGetNumDroppedRecords); REQ(cuptiGetTimestamp);
  OPT(cuptiGetResultString); OPT(cuptiSubscribe_v2); OPT(cuptiActivityRegisterTimestampCallback);
  OPT(cuptiSetThreadIdType); OPT(cuptiGetStreamIdEx); OPT(cuptiFinalize);
#undef REQ
#undef OPT
  return NULL;
}

static void CUPTIAPI probe_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId c, const void *p) {
  (void)u; (void)d; (void)c; (void)p;
}

/* Takes the subscriber slot and gives it back at once. Returns CUPTI_SUCCESS when no other
 * tool holds it; `who` gets the holder's name when CUPTI tells it. */
static CUptiResult probe_slot(char *who, size_t n) {
  CUpti_SubscriberHandle h = NULL;
  CUptiResult r;
  who[0] = 0;
  if (api.cuptiSubscribe_v2) {
    CUpti_SubscriberParams p;
    char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 64];
    memset(&p, 0, sizeof p);
    memset(old, 0, sizeof old);
    p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    p.subscriberName = "commlens";
    p.oldSubscriberName = old;
    p.oldSubscriberSize = sizeof old;
    r = api.cuptiSubscribe_v2(&h, probe_cb, NULL, &p);
    /* a holder that gave no name reads "CUPTI for <not provided>" (Kineto does so): say what
     * it probably is instead */
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && old[0] && !strstr(old, "not provided"))
      snprintf(who, n, "%s", old);
  } else {
    r = api.cuptiSubscribe(&h, probe_cb, NULL);
  }
  if (r == CUPTI_SUCCESS) api.cuptiUnsubscribe(h);
  return r;
}

/* Measures cuptiGetTimestamp - CLOCK_MONOTONIC (used only without the timestamp callback). */
static int read_cupti_ts(void *arg, int64_t *ns) {
  (void)arg;
  uint64_t t = 0;
  if (api.cuptiGetTimestamp(&t) != CUPTI_SUCCESS) return -1;
  *ns = (int64_t)t;
  return 0;
}
static int64_t measure_ts_offset(void) { return cl_clock_best_offset(read_cupti_ts, NULL, 16, NULL); }

static void disable_ours(void) {
  for (int i = 0; i < 3; i++)
    if (cl_cupti_g.kinds_on[i]) { api.cuptiActivityDisable(k_kinds[i]); cl_cupti_g.kinds_on[i] = 0; }
  if (cl_cupti_g.kinds_on[3]) { api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER); cl_cupti_g.kinds_on[3] = 0; }
  if (cl_cupti_g.kinds_on[4]) { api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MARKER); cl_cupti_g.kinds_on[4] = 0; }
}

/* Registers our callbacks and enables our kinds. Returns 0, or -1 (message logged, status
 * set, whatever we enabled disabled again). */
static int arm(void) {
  CUptiResult r;
  if (api.cuptiSetThreadIdType) api.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  cl_cupti_g.ts_offset = 0;
  if (cl_cfg.cupti_clock_offset || !api.cuptiActivityRegisterTimestampCallback ||
      api.cuptiActivityRegisterTimestampCallback(ts_monotonic) != CUPTI_SUCCESS)
    cl_cupti_g.ts_offset = measure_ts_offset();
  r = api.cuptiActivityRegisterCallbacks(buf_requested, buf_completed);
  if (r != CUPTI_SUCCESS) {
    set_status("CUPTI refused buffer callbacks (%s)", err_str(r), NULL);
    cl_log_once("cupti-arm", CL_LOG_WARN, "%s; continuing without GPU kernel data", cl_cupti_g.status);
    return -1;
  }
  int full = cl_cfg.cupti == CL_CUPTI_FULL;
  /* kernels, memcpy (copy-engine collectives' copies: a record per copy the application or NCCL
   * makes, not per kernel launch), and with full memset too */
  for (int i = 0; i < (full ? 3 : 2); i++) {
    r = api.cuptiActivityEnable(k_kinds[i]);
    if (r == CUPTI_SUCCESS) { cl_cupti_g.kinds_on[i] = 1; continue; }
    if (i == 0) {   /* without kernels there is nothing worth keeping */
      set_status("CUPTI kernel activity unavailable (%s): another profiler may own CUPTI",
                 err_str(r), NULL);
      cl_log_once("cupti-arm", CL_LOG_WARN, "%s; continuing without GPU kernel data", cl_cupti_g.status);
      disable_ours();
      return -1;
    }
  }
  /* Launch API records (full only: one record per driver call is most of CUPTI's cost per
   * collective): all driver API calls, filtered to launches in convert(). The per-API
   * switches (cuptiActivityEnableDriverApi) produced no records at all on CUPTI 13.0 with NCCL
   * 2.28 (measured on H200), so they are not used. NCCL launches through the driver API
   * (cuLaunchKernelEx), which is what the correlation needs. */
  if (cl_cfg.cupti == CL_CUPTI_SAMPLED) {   /* the first window opens now (cl_cupti_first_collective) */
    uint64_t now = cl_now();
    cl_cupti_g.win_end = now + cl_cfg.sample_on_ns;
    cl_cupti_g.win_next = now + cl_cfg.sample_period_ns;
    if (!cl_cupti_g.first_cap) cl_cupti_g.first_cap = now + cl_cfg.sample_period_ns;
  }
  if (full) {
    if (api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER) == CUPTI_SUCCESS) cl_cupti_g.kinds_on[3] = 1;
    else cl_log_once("cupti-driver", CL_LOG_INFO, "CUPTI refused driver API records: NCCL kernels "
                     "are matched by stream and launch order");
  }
  /* NVTX ranges (per-step exposure): CUPTI only sees them when the job was started with
   * NVTX_INJECTION64_PATH=<libcupti>; enabling the kind is harmless otherwise. */
  if (api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER) == CUPTI_SUCCESS) cl_cupti_g.kinds_on[4] = 1;
  return 0;
}

/* NVTX ranges reach CUPTI's marker records only through NVTX's injection, which each module's
 * NVTX reads from NVTX_INJECTION64_PATH at its first NVTX call. The plugin does not set it
 * (setenv while the job's threads call getenv is a use-after-free; docs/decisions/0046-nvtx-steps.md): it says,
 * once, what to set, naming the libcupti it loaded. */
static void nvtx_hint(const char *loaded) {
  const char *inj = getenv("NVTX_INJECTION64_PATH");
  if (inj && *inj) return;
  Dl_info di;
  const char *lib = dladdr(*(void **)&api.cuptiGetVersion, &di) && di.dli_fname ? di.dli_fname : loaded;
  cl_log_once("nvtx-hint", CL_LOG_INFO, "NVTX ranges (\"step ...\") reach commlens only when the job starts with "
              "NVTX_INJECTION64_PATH=%s; without it, `commlens report` finds steps from the repeating pattern "
              "of collectives", lib);
}

static void find_demangler(void) {
  *(void **)&cl_cupti_g.demangle = dlsym(RTLD_DEFAULT, "__cxa_demangle");
  if (!cl_cupti_g.demangle) {   /* loaded privately (e.g. by a Python extension): use it if present */
    void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD);
    if (cxx) *(void **)&cl_cupti_g.demangle = dlsym(cxx, "__cxa_demangle");
  }
}

int cl_cupti_start(void) {
  if (cl_cupti_g.state == CUPTI_ACTIVE || cl_cupti_g.state == CUPTI_SUSPENDED) return 0;
  if (cl_cupti_g.state == CUPTI_FAILED) return -1;
  cl_cupti_g.state = CUPTI_FAILED;
  char path[1100];
  cl_cupti_g.lib = load_lib(path, sizeof path);
  if (!cl_cupti_g.lib) {
    set_status("libcupti not found (%s)", path, NULL);
    cl_log_once("cupti-load", CL_LOG_WARN,
                "%s; set COMMLENS_CUPTI_LIB to its path. Continuing without GPU kernel data",
                cl_cupti_g.status);
    return -1;
  }
  const char *missing = bind_symbols();
  if (missing) {
    set_status("libcupti at %s lacks %s", path, missing);
    cl_log_once("cupti-load", CL_LOG_WARN, "%s; continuing without GPU kernel data", cl_cupti_g.status);
    return -1;
  }
  uint32_t v = 0;
  if (api.cuptiGetVersion(&v) != CUPTI_SUCCESS || v < CL_CUPTI_MIN_VERSION) {
    char vs[16];
    snprintf(vs, sizeof vs, "%u", v);
    set_status("CUPTI API version %s is too old (need CUDA 12.0 or later: %s)", vs, path);
    cl_log_once("cupti-load", CL_LOG_WARN, "%s; continuing without GPU kernel data", cl_cupti_g.status);
    return -1;
  }
  cl_cupti_g.version = v;
  char who[128];
  CUptiResult r = probe_slot(who, sizeof who);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    /* a torch.profiler window open when NCCL starts: wait for it to let go (reprobe), armed
     * with nothing meanwhile */
    set_status("suspended: CUPTI in use by %s", who[0] ? who : "another tool (torch.profiler, Nsight, a sanitizer)", NULL);
    cl_log_once("cupti-busy", CL_LOG_WARN, "%s; commlens leaves it alone, continues without GPU kernel data "
                "and takes it up when that tool lets go", cl_cupti_g.status);
    find_demangler();
    cl_cupti_g.state = CUPTI_SUSPENDED;
    cl_cupti_g.next_probe = cl_now() + CL_CUPTI_REPROBE_NS;
    return 0;
  }
  if (r != CUPTI_SUCCESS) {
    set_status("CUPTI could not start (%s)", err_str(r), NULL);
    cl_log_once("cupti-init", CL_LOG_WARN, "%s; continuing without GPU kernel data", cl_cupti_g.status);
    return -1;
  }
  if (arm() != 0) return -1;
  find_demangler();
  cl_cupti_g.state = CUPTI_ACTIVE;
  offer_stream_ids(1);   /* the join by stream order (with launch records: its check) */
  cl_cupti_g.free_at = cl_now();
  cl_cupti_g.next_probe = cl_cupti_g.free_at + CL_CUPTI_REPROBE_NS;
  snprintf(cl_cupti_g.status, sizeof cl_cupti_g.status, "active (CUPTI %u%s)", v,
           cl_cupti_g.ts_offset ? ", timestamps by offset" : "");
  nvtx_hint(path);
  return 0;
}

/* Arms again after another tool had CUPTI; 0 when recording for us again. */
static int resume(void) {
  if (arm() != 0) return -1;
  cl_cupti_g.state = CUPTI_ACTIVE;
  cl_cupti_g.resumed++;
  cl_cupti_g.free_at = cl_now();
  offer_stream_ids(1);
  snprintf(cl_cupti_g.status, sizeof cl_cupti_g.status, "active (CUPTI %u, resumed)", cl_cupti_g.version);
  cl_log(CL_LOG_INFO, "CUPTI is free again; GPU kernel data resumes");
  return 0;
}

/* Forgets what we enabled and the buffers CUPTI held: they are the other tool's now (disabling
 * a kind would switch it off for it too; our buffers may go to its callbacks, which free them). */
static void leave_to_other(void) {
  for (int i = 0; i < 5; i++) cl_cupti_g.kinds_on[i] = 0;
  offer_stream_ids(0);   /* no join meanwhile */
  pthread_mutex_lock(&cl_cupti_g.mu);
  cl_cupti_g.nalloc = cl_cupti_g.nfree + cl_cupti_g.ndone + (cl_cupti_g.cur != NULL);
  pthread_mutex_unlock(&cl_cupti_g.mu);
}

/* Another tool holds the subscriber slot (probe_slot named it in `who`): suspended, saying who;
 * what we had on is that tool's now. */
static void suspend_for(const char *who) {
  int was_active = cl_cupti_g.state == CUPTI_ACTIVE;
  cl_cupti_g.state = CUPTI_SUSPENDED;
  cl_cupti_g.detach_due = 0;
  snprintf(cl_cupti_g.status, sizeof cl_cupti_g.status, "suspended: CUPTI taken by %s",
           who[0] ? who : "another tool (torch.profiler, Nsight, a sanitizer)");
  if (was_active) leave_to_other();
}

/* About once a second (one subscribe and unsubscribe): another tool may take the subscriber
 * slot while we run (Nsight, torch.profiler) and give it back; after our records stopped
 * coming (displaced), a free slot is how we learn the other client is gone. */
static void reprobe(void) {
  uint64_t now = cl_now();
  if (now < cl_cupti_g.next_probe) return;
  if (cl_cupti_sampling_gap()) return;   /* detached between two windows: the next one asks */
  cl_cupti_g.next_probe = now + CL_CUPTI_REPROBE_NS;
  char who[128];
  CUptiResult r = probe_slot(who, sizeof who);
  if (r == CUPTI_SUCCESS && cl_cupti_g.state == CUPTI_ACTIVE) cl_cupti_g.free_at = now;
  if (cl_cupti_g.state == CUPTI_ACTIVE && cl_cupti_g.ts_offset) cl_cupti_g.ts_offset = measure_ts_offset();
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && cl_cupti_g.state != CUPTI_SUSPENDED) {
    suspend_for(who);
    cl_log(CL_LOG_WARN, "%s; commlens leaves CUPTI to it and its GPU kernel data pauses until it "
           "lets go (torch.profiler: with TEARDOWN_CUPTI=1 at the end of its window, else at exit); "
           "collectives keep NCCL's own timing", cl_cupti_g.status);
  } else if (r == CUPTI_SUCCESS && cl_cupti_g.state == CUPTI_SUSPENDED) {
    if (resume() == 0) cl_cupti_g.retry_ns = 0;   /* it let go as it should: no backoff */
  } else if (r == CUPTI_SUCCESS && cl_cupti_g.state == CUPTI_DISPLACED && now >= cl_cupti_g.retry_at) {
    resume();
  }
}

/* Our records stopped coming while we recorded (gpu_join.h cl_gj_launches_lost): another client
 * registered its own buffer callbacks, or finalized CUPTI or disabled our kinds. We touch
 * nothing of CUPTI's until the slot is seen free after a backoff (1 s, doubling to 64 s each
 * time it happens again): a client that finalized is gone by then; one that keeps its callbacks
 * without the slot (rare: Kineto, Nsight, JAX and sanitizers all subscribe) loses its records
 * for a moment at each retry, less and less often. */
void cl_cupti_displaced(void) {
  if (cl_cupti_g.state != CUPTI_ACTIVE) return;
  cl_cupti_g.state = CUPTI_DISPLACED;
  leave_to_other();
  cl_cupti_g.retry_ns = cl_cupti_g.retry_ns ? cl_cupti_g.retry_ns * 2 : CL_CUPTI_RETRY_NS;
  if (cl_cupti_g.retry_ns > CL_CUPTI_RETRY_MAX_NS) cl_cupti_g.retry_ns = CL_CUPTI_RETRY_MAX_NS;
  cl_cupti_g.retry_at = cl_now() + cl_cupti_g.retry_ns;
  snprintf(cl_cupti_g.status, sizeof cl_cupti_g.status, "displaced: another CUPTI client (e.g. torch.profiler) took "
           "the activity records");
  cl_log_once("cupti-displaced", CL_LOG_WARN, "CUPTI's activity records stopped reaching commlens (another "
              "client such as torch.profiler registered its own buffers, or finalized CUPTI): commlens leaves "
              "CUPTI to it and resumes when CUPTI is free again; meanwhile collectives keep their NCCL "
              "timing and are marked " CL_GPU_LOST_WHY);
}

/* Sampled mode, before touching CUPTI at a window's edge (`when`): arming, disabling our kinds or
 * finalizing would end another tool's session too. Probes the subscriber slot; if a tool took it
 * since the last probe (torch.profiler starting inside our window or between two), CUPTI is left
 * to it (suspended) and the probe's result says so. */
static CUptiResult probe_at_window(const char *when) {
  char who[128];
  CUptiResult r = probe_slot(who, sizeof who);
  if (r != CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) return r;
  suspend_for(who);
  cl_log_once("cupti-window-busy", CL_LOG_WARN, "%s %s; commlens leaves CUPTI to it (collectives keep NCCL's "
              "kernel-channel timing) and samples again when it lets go", cl_cupti_g.status, when);
  return r;
}

/* COMMLENS_CUPTI=sampled: closes the kernel-record window when its time is up, opens the next
 * one when due (writer thread, from cl_cupti_flush). Stream ids are offered only while kernels
 * are recorded, and withdrawn before the kind is disabled: a launch that got a stream id for the
 * join always has its kernel record.
 * A window ends by detaching CUPTI (cuptiFinalize, after a forced flush hands back every record):
 * disabling the kernel kind alone leaves most of CUPTI's cost on every launch (measured on H200,
 * bench/cupti_cost.cu: 3.07 us a launch without CUPTI, 3.83 with kernel records, 3.57 after they
 * were disabled, 3.03 after cuptiFinalize). The next window attaches it again (arm), after
 * asking the subscriber slot whether another tool took CUPTI meanwhile. NVTX ranges reach CUPTI
 * only inside the windows then. Without cuptiFinalize (older CUPTI), the kind is disabled only. */
static void sample_tick(uint64_t now) {
  if (cl_cfg.cupti != CL_CUPTI_SAMPLED || cl_cupti_g.state != CUPTI_ACTIVE) return;
  if (cl_cupti_g.detach_due) {   /* the window's records were parsed since: detach now */
    cl_cupti_g.detach_due = 0;
    if (probe_at_window("at the end of a sampling window") == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) return;
    if (api.cuptiFinalize && api.cuptiFinalize() == CUPTI_SUCCESS) {
      cl_cupti_g.detached = 1;
      pthread_mutex_lock(&cl_cupti_g.mu);   /* buffers CUPTI still held are gone with it */
      cl_cupti_g.nalloc = cl_cupti_g.nfree + cl_cupti_g.ndone + (cl_cupti_g.cur != NULL);
      pthread_mutex_unlock(&cl_cupti_g.mu);
    }
    return;
  }
  if (cl_cupti_g.kinds_on[0] && now >= cl_cupti_g.win_end && (cl_cupti_g.first_coll || now >= cl_cupti_g.first_cap)) {
    if (probe_at_window("during a sampling window") == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) return;
    /* a first window that waited for the first collective keeps the gap between windows */
    uint64_t gap = cl_cfg.sample_period_ns - cl_cfg.sample_on_ns;
    if (cl_cupti_g.win_next < now + gap) cl_cupti_g.win_next = now + gap;
    offer_stream_ids(0);
    /* kinds off first, then the forced flush: no record can ask for a buffer after it, so CUPTI
     * holds none of ours when it is finalized (a buffer it held then would be lost: 2 MiB a
     * window) */
    disable_ours();
    api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    cl_cupti_g.detach_due = 1;   /* at the next tick, once the writer parsed what the flush handed over */
  } else if (!cl_cupti_g.kinds_on[0] && now >= cl_cupti_g.win_next) {
    cl_cupti_g.win_next = now + cl_cfg.sample_period_ns;   /* arm sets it again; this one holds if it fails */
    CUptiResult r = probe_at_window("between two sampling windows");
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) return;
    if (r != CUPTI_SUCCESS || arm() != 0) {   /* arm said why, once */
      cl_log_once("cupti-window", CL_LOG_WARN, "CUPTI refused a sampling window; collectives keep NCCL's "
                  "kernel-channel timing, their exposure estimated from earlier windows");
      return;
    }
    cl_cupti_g.detached = 0;
    offer_stream_ids(1);
  }
}

void cl_cupti_first_collective(uint64_t now) {
  if (cl_cupti_g.first_coll) return;
  cl_cupti_g.first_coll = 1;
  if (cl_cfg.cupti != CL_CUPTI_SAMPLED || cl_cupti_g.state != CUPTI_ACTIVE) return;
  if (cl_cupti_g.kinds_on[0]) cl_cupti_g.win_end = now + cl_cfg.sample_on_ns;   /* the first window, still open */
  else if (!cl_cupti_g.detach_due) cl_cupti_g.win_next = now;   /* it ran a period with none: the next at once */
}

int cl_cupti_recording(void) {
  return cl_cupti_g.state == CUPTI_ACTIVE && (cl_cfg.cupti != CL_CUPTI_SAMPLED || cl_cupti_g.kinds_on[0]);
}

int cl_cupti_sampling_gap(void) {
  return cl_cupti_g.state == CUPTI_ACTIVE && cl_cfg.cupti == CL_CUPTI_SAMPLED && !cl_cupti_g.kinds_on[0];
}

int cl_cupti_wants_launches(uint64_t now, uint64_t lead_ns) {
  switch (cl_cupti_g.state) {
  case CUPTI_ACTIVE:
    if (cl_cfg.cupti != CL_CUPTI_SAMPLED || cl_cupti_g.kinds_on[0] || cl_cupti_g.detach_due) return 1;
    return now + lead_ns >= cl_cupti_g.win_next;
  case CUPTI_SUSPENDED: case CUPTI_DISPLACED: return 1;
  default: return 0;   /* untried (CUPTI off) or failed */
  }
}

uint64_t cl_cupti_taken_after(void) { return cl_cupti_g.state == CUPTI_SUSPENDED ? cl_cupti_g.free_at : 0; }

int cl_cupti_launch_records(void) { return cl_cupti_g.kinds_on[3]; }


uint32_t cl_cupti_stream_id(uint64_t stream) {
  __typeof__(api.cuptiGetStreamIdEx) fn = atomic_load_explicit(&g_stream_id_fn, memory_order_acquire);
  uint32_t id = 0;
  if (!fn || fn(NULL, (CUstream)(uintptr_t)stream, 0, &id) != CUPTI_SUCCESS) return 0;
  return id + 1;
}

void cl_cupti_flush(int force) {
  if (cl_cupti_g.state != CUPTI_ACTIVE && cl_cupti_g.state != CUPTI_SUSPENDED && cl_cupti_g.state != CUPTI_DISPLACED) return;
  reprobe();
  sample_tick(cl_now());
  if (cl_cupti_g.state == CUPTI_ACTIVE && !cl_cupti_g.detached)
    api.cuptiActivityFlushAll(force ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
}

/* ---- kernel names: interned copies that live until exit ---- */
static struct { const char *raw, *shown; uint64_t h; uint8_t cls; } g_names[CL_CUPTI_NAMES];
static size_t g_nnames;

/* The entry last found for a name pointer: CUPTI hands the same kernel's name at the same
 * address in record after record, and hashing a long C++ name per record cost more than the
 * rest of a record's parse. A hit is checked against the text, so a reused address is safe. */
#define CL_NAME_CACHE 256
static struct { const char *raw; size_t slot; } g_name_cache[CL_NAME_CACHE];

/* The shown name of `raw` and, in *cls, whether it is NCCL's (cl_gpu_name_class). */
static const char *intern(const char *raw, uint8_t *cls) {
  *cls = CL_GPU_NAME_OTHER;
  if (!raw) return "(unknown)";
  size_t ci = ((uintptr_t)raw >> 4) & (CL_NAME_CACHE - 1);
  if (g_name_cache[ci].raw == raw && strcmp(g_names[g_name_cache[ci].slot].raw, raw) == 0) {
    *cls = g_names[g_name_cache[ci].slot].cls;
    return g_names[g_name_cache[ci].slot].shown;
  }
  uint64_t h = 1469598103934665603ull;
  for (const unsigned char *p = (const unsigned char *)raw; *p; p++) h = (h ^ *p) * 1099511628211ull;
  size_t i = h & (CL_CUPTI_NAMES - 1);
  for (size_t k = 0; k < CL_CUPTI_NAMES; k++, i = (i + 1) & (CL_CUPTI_NAMES - 1)) {
    if (!g_names[i].raw) break;
    if (g_names[i].h == h && strcmp(g_names[i].raw, raw) == 0) {
      g_name_cache[ci].raw = raw; g_name_cache[ci].slot = i;
      *cls = g_names[i].cls;
      return g_names[i].shown;
    }
  }
  if (g_names[i].raw || g_nnames >= CL_CUPTI_NAMES * 3 / 4) {   /* table full */
    *cls = cl_gpu_is_nccl_name(raw) ? CL_GPU_NAME_NCCL : CL_GPU_NAME_OTHER;
    return "(kernel)";
  }
  char *copy = strdup(raw);
  if (!copy) { *cls = cl_gpu_is_nccl_name(raw) ? CL_GPU_NAME_NCCL : CL_GPU_NAME_OTHER; return "(kernel)"; }
  const char *shown = copy;
  if (cl_cupti_g.demangle && raw[0] == '_' && raw[1] == 'Z') {
    int st = -1;
    char *d = cl_cupti_g.demangle(raw, NULL, NULL, &st);
    if (d && st == 0) shown = d; else free(d);
  }
  g_names[i].raw = copy; g_names[i].shown = shown; g_names[i].h = h;
  g_names[i].cls = cl_gpu_is_nccl_name(shown) ? CL_GPU_NAME_NCCL : CL_GPU_NAME_OTHER;
  *cls = g_names[i].cls;
  g_nnames++;
  g_name_cache[ci].raw = raw; g_name_cache[ci].slot = i;
  return shown;
}

static int is_launch_cbid(CUpti_CallbackId cbid) {
  for (size_t i = 0; i < sizeof k_driver_launch / sizeof *k_driver_launch; i++)
    if (k_driver_launch[i] == cbid) return 1;
  return 0;
}

static uint64_t to_mono(uint64_t t) { return t ? (uint64_t)((int64_t)t - cl_cupti_g.ts_offset) : 0; }

/* The fields kernel, memcpy and memset records share (different struct types, same names). */
#define GPU_WORK_FIELDS(o, r) do {                                                         \
    (o)->start_ns = to_mono((r)->start); (o)->end_ns = to_mono((r)->end);                  \
    (o)->correlation = (r)->correlationId;                                                 \
    (o)->device = (r)->deviceId; (o)->context = (r)->contextId; (o)->stream = (r)->streamId; \
    (o)->graph_id = (r)->graphId; (o)->graph_node = (r)->graphNodeId;                      \
  } while (0)

/* Fills *o from one record; returns 0 if the record is not one we hand out. */
static int convert(const CUpti_Activity *rec, cl_gpu_activity *o) {
  memset(o, 0, sizeof *o);
  switch (rec->kind) {
  case CUPTI_ACTIVITY_KIND_KERNEL:
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
    const CUpti_ActivityKernel10 *k = (const void *)rec;
    if (!k->start && !k->end) return 0;   /* CUPTI could not time it */
    o->kind = CL_GPU_KERNEL;
    GPU_WORK_FIELDS(o, k);
    o->name = intern(k->name, &o->name_class);
    return 1;
  }
  case CUPTI_ACTIVITY_KIND_MEMCPY: {
    const CUpti_ActivityMemcpy6 *m = (const void *)rec;
    if (!m->start && !m->end) return 0;
    o->kind = CL_GPU_MEMCPY;
    GPU_WORK_FIELDS(o, m);
    o->copy_kind = m->copyKind;
    o->bytes = m->bytes;
    return 1;
  }
  case CUPTI_ACTIVITY_KIND_MEMSET: {
    const CUpti_ActivityMemset4 *m = (const void *)rec;
    if (!m->start && !m->end) return 0;
    o->kind = CL_GPU_MEMSET;
    GPU_WORK_FIELDS(o, m);
    o->bytes = m->bytes;
    return 1;
  }
  case CUPTI_ACTIVITY_KIND_DRIVER: {
    const CUpti_ActivityAPI *a = (const void *)rec;
    if (!is_launch_cbid(a->cbid)) return 0;
    o->kind = CL_GPU_LAUNCH;
    o->start_ns = to_mono(a->start); o->end_ns = to_mono(a->end);
    o->correlation = a->correlationId;
    o->thread = a->threadId;
    return 1;
  }
  case CUPTI_ACTIVITY_KIND_MARKER: {
    const CUpti_ActivityMarker2 *m = (const void *)rec;
    if (!m->timestamp || (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS)) return 0;
    if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
      o->kind = CL_GPU_MARK_START;
      uint8_t cls;
      o->name = intern(m->name, &cls);
    } else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
      o->kind = CL_GPU_MARK_END;
    } else {
      return 0;
    }
    o->start_ns = o->end_ns = to_mono(m->timestamp);
    o->correlation = m->id;
    return 1;
  }
  default:
    return 0;
  }
}

static void release_current(void) {
  if (!cl_cupti_g.cur) return;
  pthread_mutex_lock(&cl_cupti_g.mu);
  if (cl_cupti_g.nfree < CL_CUPTI_MAX_BUFS) cl_cupti_g.free_bufs[cl_cupti_g.nfree++] = cl_cupti_g.cur;
  else { free(cl_cupti_g.cur); cl_cupti_g.nalloc--; }
  pthread_mutex_unlock(&cl_cupti_g.mu);
  cl_cupti_g.cur = NULL; cl_cupti_g.cur_rec = NULL; cl_cupti_g.cur_valid = 0;
}

size_t cl_cupti_drain(cl_gpu_activity *out, size_t max) {
  size_t n = 0;
  while (n < max) {
    if (!cl_cupti_g.cur) {
      pthread_mutex_lock(&cl_cupti_g.mu);
      if (cl_cupti_g.ndone) {
        cl_cupti_g.cur = cl_cupti_g.done[0].buf; cl_cupti_g.cur_valid = cl_cupti_g.done[0].valid;
        memmove(cl_cupti_g.done, cl_cupti_g.done + 1, (size_t)(cl_cupti_g.ndone - 1) * sizeof *cl_cupti_g.done);
        cl_cupti_g.ndone--;
      }
      pthread_mutex_unlock(&cl_cupti_g.mu);
      if (!cl_cupti_g.cur) break;
      cl_cupti_g.cur_rec = NULL;
    }
    if (api.cuptiActivityGetNextRecord(cl_cupti_g.cur, cl_cupti_g.cur_valid, &cl_cupti_g.cur_rec) != CUPTI_SUCCESS) {
      release_current();   /* CUPTI_ERROR_MAX_LIMIT_REACHED: buffer done */
      continue;
    }
    if (convert(cl_cupti_g.cur_rec, &out[n])) { n++; cl_cupti_g.records++; }
  }
  return n;
}

void cl_cupti_get_stats(cl_cupti_stats *s) {
  memset(s, 0, sizeof *s);
  pthread_mutex_lock(&cl_cupti_g.mu);
  s->dropped = cl_cupti_g.dropped;
  s->buffers = cl_cupti_g.buffers;
  pthread_mutex_unlock(&cl_cupti_g.mu);
  s->records = cl_cupti_g.records;
  s->resumed = cl_cupti_g.resumed;
  s->active = cl_cupti_g.state == CUPTI_ACTIVE;
  snprintf(s->status, sizeof s->status, "%s", cl_cupti_g.status[0] ? cl_cupti_g.status : "not started");
}

void cl_cupti_stop(void) {
  if (cl_cupti_g.state != CUPTI_ACTIVE && cl_cupti_g.state != CUPTI_SUSPENDED && cl_cupti_g.state != CUPTI_DISPLACED) return;
  if (cl_cupti_g.state == CUPTI_ACTIVE && !cl_cupti_g.detached) {   /* detached: any call would attach it again */
    api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    disable_ours();
    api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  cl_cupti_g.detached = cl_cupti_g.detach_due = 0;
  offer_stream_ids(0);
  cupti_state was = cl_cupti_g.state;
  cl_cupti_g.state = CUPTI_UNTRIED;   /* a later start (after a new init) may arm again */
  /* buffers still queued are lost: the writer drains before calling stop */
  release_current();
  pthread_mutex_lock(&cl_cupti_g.mu);
  for (int i = 0; i < cl_cupti_g.ndone; i++) { free(cl_cupti_g.done[i].buf); cl_cupti_g.nalloc--; }
  cl_cupti_g.ndone = 0;
  for (int i = 0; i < cl_cupti_g.nfree; i++) { free(cl_cupti_g.free_bufs[i]); cl_cupti_g.nalloc--; }
  cl_cupti_g.nfree = 0;
  pthread_mutex_unlock(&cl_cupti_g.mu);
  if (was == CUPTI_ACTIVE) snprintf(cl_cupti_g.status, sizeof cl_cupti_g.status, "stopped");   /* else keep the reason */
}
