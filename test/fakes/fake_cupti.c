/* fake_cupti.c: a stand-in libcupti for tests without a GPU (COMMLENS_CUPTI_LIB points the
 * plugin at it). Environment variables read at each call pick a failure: FAKE_BUSY (another
 * subscriber holds the slot), FAKE_NOINIT, FAKE_OLD (version 12), FAKE_NOKERNEL (kernel activity
 * refused). Each flush hands over one synthetic buffer: two compute kernels and an NCCL kernel,
 * launch, alloc and memcpy records. A test can hold the next flush until it releases it (a
 * CUPTI flush that hangs, as on a wedged driver): commlens_fake_cupti_hold_next_flush. In
 * scripted mode (commlens_fake_cupti_script, bench/replay_cost.c) flushes carry only the kernel
 * records the program pushed, in buffers filled and handed over as CUPTI does.
 * Another CUPTI client (torch.profiler's Kineto) can be played: commlens_fake_cupti_other_tool
 * takes the subscriber slot and registers its own buffer callbacks (records then go to it), and
 * lets go by finalizing CUPTI (TEARDOWN_CUPTI=1: callbacks forgotten, every kind off, slot free)
 * or by only disabling kernel records and keeping the slot. Records are handed over only while
 * kernel records are on and some client registered callbacks, as CUPTI does. */
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE_API __attribute__((visibility("default")))
#define HOLD_MAX_MS 120000   /* a held flush never outlives this, whatever the test does */

FAKE_API int fake_registered, fake_enabled[64], fake_disabled[64], fake_flushes, fake_subscribed, fake_finalized;
static CUpti_BuffersCallbackRequestFunc rq;
static CUpti_BuffersCallbackCompleteFunc dn;
static CUpti_TimestampCallbackFunc tsf;
static _Atomic int g_hold_armed, g_hold_state, g_hold_release;   /* state: 0 none, 1 held, 2 let go */
static _Atomic int g_kernels_on;       /* CONCURRENT_KERNEL enabled (by anyone) */
static _Atomic int g_other_slot;       /* the other client holds the subscriber slot */
FAKE_API int fake_other_records;       /* kernel records the other client received */

static void CUPTIAPI other_requested(uint8_t **b, size_t *size, size_t *maxr) {
  *b = malloc(1 << 16); *size = *b ? 1 << 16 : 0; *maxr = 0;
}
static void CUPTIAPI other_completed(CUcontext c, uint32_t s, uint8_t *b, size_t size, size_t valid) {
  (void)c; (void)s; (void)size;
  CUpti_Activity *r = NULL;
  while (valid && cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS)
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) fake_other_records++;
  free(b);
}

/* The next flush (from any thread) waits inside CUPTI until commlens_fake_cupti_release. */
FAKE_API void commlens_fake_cupti_hold_next_flush(void) {
  atomic_store(&g_hold_release, 0);
  atomic_store(&g_hold_state, 0);
  atomic_store(&g_hold_armed, 1);
}
/* 0: no flush held yet; 1: a flush is being held now; 2: the held flush went on. */
FAKE_API int commlens_fake_cupti_hold_state(void) { return atomic_load(&g_hold_state); }
FAKE_API void commlens_fake_cupti_release(void) { atomic_store(&g_hold_release, 1); }

static void hold_if_armed(void) {
  int one = 1;
  if (!atomic_compare_exchange_strong(&g_hold_armed, &one, 0)) return;
  atomic_store(&g_hold_state, 1);
  struct timespec ms = {0, 1000000};
  for (int i = 0; i < HOLD_MAX_MS && !atomic_load(&g_hold_release); i++) nanosleep(&ms, NULL);
  atomic_store(&g_hold_state, 2);
}

FAKE_API CUptiResult cuptiGetVersion(uint32_t *v) {
  *v = getenv("FAKE_OLD") ? 12 : 130001;
  return CUPTI_SUCCESS;
}
FAKE_API CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *u) {
  (void)cb; (void)u;
  if (getenv("FAKE_BUSY") || atomic_load(&g_other_slot)) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  if (getenv("FAKE_NOINIT")) return CUPTI_ERROR_NOT_INITIALIZED;
  __atomic_add_fetch(&fake_subscribed, 1, __ATOMIC_RELAXED);
  *h = (CUpti_SubscriberHandle)1;
  return CUPTI_SUCCESS;
}
FAKE_API CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle h) {
  (void)h;
  __atomic_sub_fetch(&fake_subscribed, 1, __ATOMIC_RELAXED);
  return CUPTI_SUCCESS;
}
FAKE_API CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc a, CUpti_BuffersCallbackCompleteFunc b) {
  rq = a; dn = b;
  fake_registered++;
  return CUPTI_SUCCESS;
}
FAKE_API CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f) {
  tsf = f;
  return CUPTI_SUCCESS;
}
FAKE_API CUptiResult cuptiActivityEnable(CUpti_ActivityKind k) {
  if (getenv("FAKE_NOKERNEL") && k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) return CUPTI_ERROR_NOT_COMPATIBLE;
  fake_enabled[k & 63]++;
  if (k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) atomic_store(&g_kernels_on, 1);
  return CUPTI_SUCCESS;
}
FAKE_API CUptiResult cuptiActivityDisable(CUpti_ActivityKind k) {
  fake_disabled[k & 63]++;
  if (k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) atomic_store(&g_kernels_on, 0);
  return CUPTI_SUCCESS;
}

/* The other client: on (1) takes the slot, registers its callbacks and turns kernel records
 * on; off with teardown (0) finalizes CUPTI; off without (2) turns kernel records off and keeps
 * the slot (torch.profiler without TEARDOWN_CUPTI=1), until called with 0. */
FAKE_API void commlens_fake_cupti_other_tool(int what) {
  if (what == 1) {
    atomic_store(&g_other_slot, 1);
    rq = other_requested; dn = other_completed;
    atomic_store(&g_kernels_on, 1);
  } else if (what == 2) {
    atomic_store(&g_kernels_on, 0);
  } else {   /* cuptiFinalize: callbacks, kinds and the slot all go */
    rq = NULL; dn = NULL; tsf = NULL;
    atomic_store(&g_kernels_on, 0);
    atomic_store(&g_other_slot, 0);
  }
}
FAKE_API CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId c, uint8_t e) { (void)c; (void)e; return CUPTI_SUCCESS; }
FAKE_API CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId c, uint8_t e) { (void)c; (void)e; return CUPTI_SUCCESS; }
/* A stream's id: its handle's value / 16 (tests pick handles to get the ids they want). */
FAKE_API CUptiResult cuptiGetStreamIdEx(CUcontext c, CUstream s, uint8_t pt, uint32_t *id) {
  (void)c; (void)pt;
  if (!s) return CUPTI_ERROR_INVALID_STREAM;
  *id = (uint32_t)((uintptr_t)s >> 4);
  return CUPTI_SUCCESS;
}
FAKE_API CUptiResult cuptiGetTimestamp(uint64_t *t) {
  *t = tsf ? tsf() : 0;
  return CUPTI_SUCCESS;
}
static _Atomic int g_script;   /* scripted mode: only pushed records */

FAKE_API CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t *d) {
  (void)c; (void)s;
  *d = atomic_load(&g_script) ? 0 : 3;
  return CUPTI_SUCCESS;
}

/* Buffer layout: [uint64 size][record], 8-aligned, one after another. */
static uint8_t *put(uint8_t *p, const void *r, size_t n) {
  uint64_t s = (n + 7) & ~7ull;
  memcpy(p, &s, 8);
  memcpy(p + 8, r, n);
  return p + 8 + s;
}
FAKE_API CUptiResult cuptiActivityGetNextRecord(uint8_t *b, size_t valid, CUpti_Activity **rec) {
  uint8_t *p = *rec ? (uint8_t *)*rec + *(uint64_t *)((uint8_t *)*rec - 8) : b;
  if (p + 8 > b + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *rec = (CUpti_Activity *)(p + 8);
  return CUPTI_SUCCESS;
}

/* ---- scripted mode: the buffer being filled, handed over when full or at a flush ---- */
static pthread_mutex_t g_smu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *g_sbuf;
static size_t g_ssize, g_sused;

static void script_complete(void) {   /* g_smu held */
  if (g_sbuf) dn(0, 0, g_sbuf, g_ssize, g_sused);
  g_sbuf = NULL;
  g_sused = 0;
}

/* Our own finalize (COMMLENS_CUPTI=sampled detaches CUPTI between windows): the callbacks, the
 * kinds and the buffer being filled all go, as they do for the other client's. */
FAKE_API CUptiResult cuptiFinalize(void) {
  fake_finalized++;
  pthread_mutex_lock(&g_smu);   /* a buffer being filled goes with CUPTI, never to a callback */
  g_sbuf = NULL;
  g_sused = 0;
  rq = NULL; dn = NULL; tsf = NULL;
  pthread_mutex_unlock(&g_smu);
  atomic_store(&g_kernels_on, 0);
  return CUPTI_SUCCESS;
}

FAKE_API void commlens_fake_cupti_script(void) { atomic_store(&g_script, 1); }

/* Appends one CONCURRENT_KERNEL record (times on the timestamp callback's clock; `name` must
 * live until the program exits). 0, or -1 when no client has buffers for it (the caller counts). */
FAKE_API int commlens_fake_cupti_push_kernel(uint64_t start, uint64_t end, uint32_t device, uint32_t stream,
                                             uint32_t corr, const char *name) {
  CUpti_ActivityKernel10 k;
  memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start; k.end = end; k.deviceId = device; k.contextId = 1; k.streamId = stream;
  k.correlationId = corr; k.name = name;
  size_t need = 8 + ((sizeof k + 7) & ~(size_t)7);
  pthread_mutex_lock(&g_smu);
  if (g_sbuf && g_sused + need > g_ssize) script_complete();
  if (!g_sbuf && rq) {
    size_t maxr = 0;
    rq(&g_sbuf, &g_ssize, &maxr);
    if (g_sbuf && g_ssize < need) script_complete();
  }
  int rc = -1;
  if (g_sbuf) { put(g_sbuf + g_sused, &k, sizeof k); g_sused += need; rc = 0; }
  pthread_mutex_unlock(&g_smu);
  return rc;
}

FAKE_API CUptiResult cuptiActivityFlushAll(uint32_t f) {
  (void)f;
  hold_if_armed();
  __atomic_add_fetch(&fake_flushes, 1, __ATOMIC_RELAXED);
  if (atomic_load(&g_script)) {
    pthread_mutex_lock(&g_smu);
    if (g_sused) script_complete();
    pthread_mutex_unlock(&g_smu);
    return CUPTI_SUCCESS;
  }
  if (!rq || !dn || !atomic_load(&g_kernels_on)) return CUPTI_SUCCESS;   /* nothing recorded */
  uint8_t *b = 0;
  size_t size = 0, maxr = 0;
  rq(&b, &size, &maxr);
  if (!b) return CUPTI_SUCCESS;
  static char n1[] = "_Z6myGemmPfS_", n3[] = "_Z6myGemmPfS_", n2[] = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  uint8_t *p = b;
  CUpti_ActivityKernel10 k;
  memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL; k.start = 1000; k.end = 2000; k.deviceId = 1; k.contextId = 2;
  k.streamId = 7; k.correlationId = 42; k.name = n1; p = put(p, &k, sizeof k);
  k.start = 1500; k.end = 4000; k.streamId = 9; k.correlationId = 43; k.name = n2; k.graphNodeId = 5; p = put(p, &k, sizeof k);
  k.start = 5000; k.end = 6000; k.correlationId = 44; k.graphNodeId = 0; k.name = n3; p = put(p, &k, sizeof k);
  CUpti_ActivityAPI a;
  memset(&a, 0, sizeof a);
  a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  a.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx; a.start = 900; a.end = 950; a.threadId = 1234; a.correlationId = 43;
  p = put(p, &a, sizeof a);
  a.cbid = CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2; a.correlationId = 45; p = put(p, &a, sizeof a);
  CUpti_ActivityMemcpy6 m;
  memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY; m.start = 7000; m.end = 7100;
  m.deviceId = 1; m.streamId = 3; m.correlationId = 46; p = put(p, &m, sizeof m);
  dn(0, 0, b, size, (size_t)(p - b));
  return CUPTI_SUCCESS;
}
