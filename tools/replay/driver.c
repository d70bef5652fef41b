/* driver.c: calls the plugin the way NCCL does, through the ncclProfiler_vN table the library
 * exports (dlopen, RTLD_LOCAL): loading, the logger NCCL passes (capturing every message),
 * init and finalize, start, stop and state with each version's signature. The replay engine
 * (replay.c) and the tests' harness (test/lib/harness.c) drive the plugin through it. */
#include "tools/replay/driver.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int h_mask;
int h_bad_rc;

/* ---- loading ------------------------------------------------------------------------- */
const char *h_lib_path(void) {
  const char *p = getenv("COMMLENS_LIB");
  return p && *p ? p : "build/libnccl-profiler-commlens.so";
}

int h_cuda_set_device(const char *lib, int dev) {
  /* the threads of one job (a thread per GPU) make their GPUs current at once: one loads */
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static void (*set)(int);
  pthread_mutex_lock(&mu);
  if (!set) {
    char path[1200];
    const char *env = getenv("COMMLENS_FAKE_CUDA");
    if (env && *env) snprintf(path, sizeof path, "%s", env);
    else h_fake_path(lib, "libcommlens-fakecuda.so", path, sizeof path);
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);   /* global: found by its soname, libcuda.so.1 */
    if (h) *(void **)&set = dlsym(h, "commlens_fake_cuda_set_device");
    if (!set) fprintf(stderr, "  h_cuda_set_device: cannot load %s: %s\n", path, dlerror());
  }
  void (*fn)(int) = set;
  pthread_mutex_unlock(&mu);
  if (!fn) return -1;
  fn(dev);
  return 0;
}

void h_fake_path(const char *lib, const char *name, char *path, size_t n) {
  const char *l = lib ? lib : h_lib_path(), *slash = strrchr(l, '/');
  snprintf(path, n, "%.*s%s%s", slash ? (int)(slash - l) : 0, l, slash ? "/" : "", name);
}

int h_open(h_plugin *p, const char *lib, int abi) {
  memset(p, 0, sizeof *p);
  /* Tests and replays read the Chrome trace: ask for it unless the caller chose (the plugin's
   * default is the digest; COMMLENS_OUTPUT=digest or both still apply). The plugin reads its
   * settings at the first init, after this. */
  setenv("COMMLENS_OUTPUT", "trace", 0);
  /* "" : the running program's own tables (a fuzz target links the plugin in) */
  p->dl = lib && !lib[0] ? dlopen(NULL, RTLD_NOW) : dlopen(lib ? lib : h_lib_path(), RTLD_NOW | RTLD_LOCAL);
  if (!p->dl) { fprintf(stderr, "  h_open: dlopen: %s\n", dlerror()); return -1; }
  char sym[32];
  snprintf(sym, sizeof sym, "ncclProfiler_v%d", abi);
  p->table = dlsym(p->dl, sym);
  if (!p->table) {
    fprintf(stderr, "  h_open: %s not found\n", sym);
    dlclose(p->dl);
    p->dl = NULL;
    return -1;
  }
  p->abi = abi;
  p->name = *(const char *const *)p->table;   /* every table starts with `name` */
  return 0;
}

void h_close(h_plugin *p) {
  if (p->dl) dlclose(p->dl);
  p->dl = NULL;
  p->table = NULL;
}

/* ---- logger ------------------------------------------------------------------------- */
static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
void (*h_log_hook)(int level, const char *msg);
static char *g_log;
static size_t g_log_len, g_log_cap;

void h_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)file; (void)line;
  /* NCCL prints a message only if its flags meet NCCL_DEBUG_SUBSYS (default INIT,BOOTSTRAP,ENV):
   * a warning must carry every subsystem bit, as NCCL's own do, or nobody sees it. A warning
   * that would be hidden is kept as level 8, so tests counting warnings (level 2) miss it. */
  if (level == 2 && flags != ~0UL) level = 8;
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof msg) n = sizeof msg - 1;
  for (int i = 0; i < n; i++) if (msg[i] == '\n') msg[i] = ' ';
  pthread_mutex_lock(&g_log_mu);
  if (g_log_len + (size_t)n + 8 > g_log_cap) {
    size_t cap = g_log_cap ? g_log_cap * 2 : 8192;
    while (cap < g_log_len + (size_t)n + 8) cap *= 2;
    char *nb = realloc(g_log, cap);
    if (!nb) { pthread_mutex_unlock(&g_log_mu); return; }
    g_log = nb;
    g_log_cap = cap;
  }
  g_log_len += (size_t)sprintf(g_log + g_log_len, "%d ", level % 10);
  memcpy(g_log + g_log_len, msg, (size_t)n);
  g_log_len += (size_t)n;
  g_log[g_log_len++] = '\n';
  g_log[g_log_len] = 0;
  pthread_mutex_unlock(&g_log_mu);
  if (getenv("H_VERBOSE")) fprintf(stderr, "  [log %d] %s\n", level, msg);
  if (h_log_hook) h_log_hook(level, msg);
}

void h_log_reset(void) {
  pthread_mutex_lock(&g_log_mu);
  g_log_len = 0;
  if (g_log) g_log[0] = 0;
  pthread_mutex_unlock(&g_log_mu);
}

/* A copy taken under the lock: the plugin's threads may log (and grow the buffer) meanwhile. */
const char *h_log_text(void) {
  static _Thread_local char *snap;
  static _Thread_local size_t snap_cap;
  pthread_mutex_lock(&g_log_mu);
  size_t n = g_log ? g_log_len : 0;
  if (n + 1 > snap_cap) {
    char *nb = realloc(snap, n + 1);
    if (!nb) { pthread_mutex_unlock(&g_log_mu); return ""; }
    snap = nb;
    snap_cap = n + 1;
  }
  if (n) memcpy(snap, g_log, n);
  snap[n] = 0;
  pthread_mutex_unlock(&g_log_mu);
  return snap;
}

int h_log_count(int level, const char *needle) {
  int n = 0;
  pthread_mutex_lock(&g_log_mu);
  for (const char *l = g_log; l && *l;) {
    const char *e = strchr(l, '\n');
    size_t len = e ? (size_t)(e - l) : strlen(l);
    char buf[2100];
    if (len >= sizeof buf) len = sizeof buf - 1;
    memcpy(buf, l, len);
    buf[len] = 0;
    if ((level < 0 || buf[0] - '0' == level) && (!needle || strstr(buf + 2, needle))) n++;
    l = e ? e + 1 : l + len;
  }
  pthread_mutex_unlock(&g_log_mu);
  return n;
}

/* ---- init / finalize -------------------------------------------------------------- */
#define T(V) ((const clabi_profiler_##V *)p->table)

int h_init_ex(h_plugin *p, void **ctx, int *mask_ptr, const h_comm_info *info) {
  static const h_comm_info def = {0x1234, "test-comm", 1, 2, 0};
  if (!info) info = &def;
  switch (p->abi) {
  case 1: return T(v1)->init(ctx, mask_ptr);
  case 2: return T(v2)->init(ctx, mask_ptr);
  case 3: return T(v3)->init(ctx, mask_ptr);
  case 4: return T(v4)->init(ctx, mask_ptr, info->name, info->hash, info->nnodes, info->nranks,
                             info->rank, h_logger);
  case 5: return T(v5)->init(ctx, info->hash, mask_ptr, info->name, info->nnodes, info->nranks,
                             info->rank, h_logger);
  case 6: return T(v6)->init(ctx, info->hash, mask_ptr, info->name, info->nnodes, info->nranks,
                             info->rank, h_logger);
  case 7: return T(v7)->init(ctx, info->hash, mask_ptr, info->name, info->nnodes, info->nranks,
                             info->rank, h_logger);
  }
  return -1;
}

int h_init(h_plugin *p, void **ctx, const h_comm_info *info) {
  return h_init_ex(p, ctx, &h_mask, info);
}

void h_note_rc(int rc, const char *what) {
  if (rc != CLABI_SUCCESS) {
    __atomic_add_fetch(&h_bad_rc, 1, __ATOMIC_RELAXED);
    fprintf(stderr, "  %s returned %d\n", what, rc);
  }
}

int h_finalize(h_plugin *p, void *ctx) {
  int rc = -1;
  switch (p->abi) {
  case 1: rc = T(v1)->finalize(ctx); break;
  case 2: rc = T(v2)->finalize(ctx); break;
  case 3: rc = T(v3)->finalize(ctx); break;
  case 4: rc = T(v4)->finalize(ctx); break;
  case 5: rc = T(v5)->finalize(ctx); break;
  case 6: rc = T(v6)->finalize(ctx); break;
  case 7: rc = T(v7)->finalize(ctx); break;
  }
  h_note_rc(rc, "finalize");
  return rc;
}

/* ---- start / stop / state ------------------------------------------------------------ */
int h_start_raw(h_plugin *p, void *ctx, void **handle, void *descr) {
  switch (p->abi) {
  case 1: return T(v1)->startEvent(ctx, handle, descr);
  case 2: return T(v2)->startEvent(ctx, handle, descr);
  case 3: return T(v3)->startEvent(ctx, handle, descr);
  case 4: return T(v4)->startEvent(ctx, handle, descr);
  case 5: return T(v5)->startEvent(ctx, handle, descr);
  case 6: return T(v6)->startEvent(ctx, handle, descr);
  case 7: return T(v7)->startEvent(ctx, handle, descr);
  }
  return -1;
}

int h_stop(h_plugin *p, void *handle) {
  int rc = -1;
  switch (p->abi) {
  case 1: rc = T(v1)->stopEvent(handle); break;
  case 2: rc = T(v2)->stopEvent(handle); break;
  case 3: rc = T(v3)->stopEvent(handle); break;
  case 4: rc = T(v4)->stopEvent(handle); break;
  case 5: rc = T(v5)->stopEvent(handle); break;
  case 6: rc = T(v6)->stopEvent(handle); break;
  case 7: rc = T(v7)->stopEvent(handle); break;
  }
  h_note_rc(rc, "stopEvent");
  return rc;
}

static int state_call(h_plugin *p, void *handle, int state, void *args) {
  int rc = -1;
  switch (p->abi) {
  case 1: rc = T(v1)->recordEventState(handle, state, args); break;
  case 2: rc = T(v2)->recordEventState(handle, state, args); break;
  case 3: rc = T(v3)->recordEventState(handle, state, args); break;
  case 4: rc = T(v4)->recordEventState(handle, state, args); break;
  case 5: rc = T(v5)->recordEventState(handle, state, args); break;
  case 6: rc = T(v6)->recordEventState(handle, state, args); break;
  case 7: rc = T(v7)->recordEventState(handle, state, args); break;
  }
  h_note_rc(rc, "recordEventState");
  return rc;
}

int h_state(h_plugin *p, void *handle, int state, uint64_t arg) {
  union { clabi_state_args_v1 v1; clabi_state_args_v4 v4; unsigned char b[16]; } a;
  memset(&a, 0, sizeof a);
  if (state == CLABI_ST_CTRL_APPEND_END) {
    /* appendedProxyOps is an int: the bytes after it are whatever NCCL's stack held */
    memset(&a, 0xA5, sizeof a);
    if (p->abi <= 3) a.v1.proxyCtrl.appendedProxyOps = (int)arg;
    else a.v4.proxyCtrl.appendedProxyOps = (int)arg;
  } else {
    memcpy(a.b, &arg, 8);
  }
  return state_call(p, handle, state, &a);
}

int h_state_noargs(h_plugin *p, void *handle, int state) { return state_call(p, handle, state, NULL); }
int h_state_raw(h_plugin *p, void *handle, int state, void *args) { return state_call(p, handle, state, args); }

