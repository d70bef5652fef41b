/* test_cupti.c: the CUPTI bridge without a GPU. A fake libcupti is compiled at run time from
 * the string below (cc -shared); environment variables pick its behaviour: busy subscriber
 * slot, too old, kernel activity refused, or a synthetic activity buffer on flush. */
#include "tl.h"
#include "../../plugin/gpu/cupti.c"
#include "../../common/log.c"
#include "../../common/clock.c"
#include "../../common/config.c"   /* COMMLENS_CUPTI_LIB comes through the variable table */
#include <stdarg.h>
#include <unistd.h>

#ifndef CL_CUDA_INC
#define CL_CUDA_INC "/usr/local/cuda/include"
#endif

static const char *fake_src =
  "#include <cupti_activity.h>\n#include <cupti_callbacks.h>\n#include <cupti_driver_cbid.h>\n#include <stdlib.h>\n#include <string.h>\n"
  "int fake_registered, fake_enabled[64], fake_disabled[64], fake_flushes, fake_subscribed;\n"
  "static CUpti_BuffersCallbackRequestFunc rq; static CUpti_BuffersCallbackCompleteFunc dn;\n"
  "static CUpti_TimestampCallbackFunc tsf;\n"
  "CUptiResult cuptiGetVersion(uint32_t *v) { *v = getenv(\"FAKE_OLD\") ? 12 : 130001; return CUPTI_SUCCESS; }\n"
  "CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *u) {\n"
  "  (void)cb; (void)u; if (getenv(\"FAKE_BUSY\")) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;\n"
  "  if (getenv(\"FAKE_NOINIT\")) return CUPTI_ERROR_NOT_INITIALIZED;\n"
  "  fake_subscribed++; *h = (CUpti_SubscriberHandle)1; return CUPTI_SUCCESS; }\n"
  "CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle h) { (void)h; fake_subscribed--; return CUPTI_SUCCESS; }\n"
  "CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc a, CUpti_BuffersCallbackCompleteFunc b) {\n"
  "  rq = a; dn = b; fake_registered++; return CUPTI_SUCCESS; }\n"
  "CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f) { tsf = f; return CUPTI_SUCCESS; }\n"
  "CUptiResult cuptiActivityEnable(CUpti_ActivityKind k) {\n"
  "  if (getenv(\"FAKE_NOKERNEL\") && k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) return CUPTI_ERROR_NOT_COMPATIBLE;\n"
  "  fake_enabled[k & 63]++; return CUPTI_SUCCESS; }\n"
  "CUptiResult cuptiActivityDisable(CUpti_ActivityKind k) { fake_disabled[k & 63]++; return CUPTI_SUCCESS; }\n"
  "CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId c, uint8_t e) { (void)c; (void)e; return CUPTI_SUCCESS; }\n"
  "CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId c, uint8_t e) { (void)c; (void)e; return CUPTI_SUCCESS; }\n"
  "CUptiResult cuptiGetStreamIdEx(CUcontext c, CUstream s, uint8_t pt, uint32_t *id) {\n"
  "  (void)c; (void)pt; if (!s) return CUPTI_ERROR_INVALID_STREAM; *id = (uint32_t)((uintptr_t)s >> 4); return CUPTI_SUCCESS; }\n"
  "CUptiResult cuptiGetTimestamp(uint64_t *t) { *t = tsf ? tsf() : 0; return CUPTI_SUCCESS; }\n"
  "CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t *d) { (void)c; (void)s; *d = 3; return CUPTI_SUCCESS; }\n"
  /* records: [uint64 size][record], 8-aligned */
  "static uint8_t *put(uint8_t *p, const void *r, size_t n) { uint64_t s = (n + 7) & ~7ull; memcpy(p, &s, 8); memcpy(p + 8, r, n); return p + 8 + s; }\n"
  "CUptiResult cuptiActivityGetNextRecord(uint8_t *b, size_t valid, CUpti_Activity **rec) {\n"
  "  uint8_t *p = *rec ? (uint8_t *)*rec + *(uint64_t *)((uint8_t *)*rec - 8) : b;\n"
  "  if (p + 8 > b + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;\n"
  "  *rec = (CUpti_Activity *)(p + 8); return CUPTI_SUCCESS; }\n"
  "CUptiResult cuptiActivityFlushAll(uint32_t f) {\n"
  "  (void)f; fake_flushes++; uint8_t *b = 0; size_t size = 0, maxr = 0; rq(&b, &size, &maxr);\n"
  "  if (!b) return CUPTI_SUCCESS;\n"
  "  static char n1[] = \"_Z6myGemmPfS_\", n3[] = \"_Z6myGemmPfS_\", n2[] = \"ncclDevKernel_AllReduce_Sum_f32_RING_LL\";\n"
  "  uint8_t *p = b; CUpti_ActivityKernel10 k; memset(&k, 0, sizeof k);\n"
  "  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL; k.start = 1000; k.end = 2000; k.deviceId = 1; k.contextId = 2;\n"
  "  k.streamId = 7; k.correlationId = 42; k.name = n1; p = put(p, &k, sizeof k);\n"
  "  k.start = 1500; k.end = 4000; k.streamId = 9; k.correlationId = 43; k.name = n2; k.graphNodeId = 5; p = put(p, &k, sizeof k);\n"
  "  k.start = 5000; k.end = 6000; k.correlationId = 44; k.graphNodeId = 0; k.name = n3; p = put(p, &k, sizeof k);\n"
  "  CUpti_ActivityAPI a; memset(&a, 0, sizeof a); a.kind = CUPTI_ACTIVITY_KIND_DRIVER;\n"
  "  a.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx; a.start = 900; a.end = 950; a.threadId = 1234; a.correlationId = 43;\n"
  "  p = put(p, &a, sizeof a);\n"
  "  a.cbid = CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2; a.correlationId = 45; p = put(p, &a, sizeof a);\n"
  "  CUpti_ActivityMemcpy6 m; memset(&m, 0, sizeof m); m.kind = CUPTI_ACTIVITY_KIND_MEMCPY; m.start = 7000; m.end = 7100;\n"
  "  m.deviceId = 1; m.streamId = 3; m.correlationId = 46; p = put(p, &m, sizeof m);\n"
  "  dn(0, 0, b, size, (size_t)(p - b)); return CUPTI_SUCCESS; }\n";

static char g_fake[512];
static int g_logs;
static char g_last[512];

static void counting_logger(int level, unsigned long flags, const char *file, int line,
                            const char *fmt, ...) {
  (void)level; (void)flags; (void)file; (void)line;
  va_list ap; va_start(ap, fmt); vsnprintf(g_last, sizeof g_last, fmt, ap); va_end(ap);
  g_logs++;
}

static void reset(void) {
  if (g.state == CUPTI_ACTIVE || g.state == CUPTI_SUSPENDED) cl_cupti_stop();
  g.state = CUPTI_UNTRIED;
  g.status[0] = 0;
  g.dropped = g.buffers = g.records = 0;
  cl_log_reset_once();
  g_logs = 0; g_last[0] = 0;
  cl_log_set_logger(counting_logger);
  unsetenv("FAKE_BUSY"); unsetenv("FAKE_OLD"); unsetenv("FAKE_NOKERNEL"); unsetenv("FAKE_NOINIT");
}

static int build_fake(void) {
  if (g_fake[0]) return 0;
  char dir[] = "/tmp/commlens-fakecupti-XXXXXX";
  if (!mkdtemp(dir)) return -1;
  char src[300], cmd[1200];
  snprintf(src, sizeof src, "%s/fake.c", dir);
  snprintf(g_fake, sizeof g_fake, "%s/libcupti.so", dir);
  FILE *f = fopen(src, "w");
  if (!f) return -1;
  fputs(fake_src, f); fclose(f);
  snprintf(cmd, sizeof cmd, "cc -shared -fPIC -O1 -I%s -o %s %s", CL_CUDA_INC, g_fake, src);
  if (system(cmd) != 0) { g_fake[0] = 0; return -1; }
  return 0;
}

static int *fake_int(const char *sym) {
  void *h = dlopen(g_fake, RTLD_NOW | RTLD_NOLOAD);
  int *p = h ? dlsym(h, sym) : NULL;
  if (h) dlclose(h);
  return p;
}

TL_TEST(missing_library_one_message) {
  reset();
  setenv("COMMLENS_CUPTI_LIB", "/nonexistent/dir/libcupti.so", 1); cl_config_load();
  CHECK(cl_cupti_start() == -1, "started");
  CHECK(cl_cupti_start() == -1, "second start");
  CHECK(g_logs == 1, "logs=%d", g_logs);
  CHECK(strstr(g_last, "not found") != NULL, "msg: %s", g_last);
  cl_cupti_stats st; cl_cupti_get_stats(&st);
  CHECK(!st.active && strstr(st.status, "libcupti not found"), "status: %s", st.status);
  cl_gpu_activity a[4];
  cl_cupti_flush(1);
  CHECK(cl_cupti_drain(a, 4) == 0, "drained from nothing");
  cl_cupti_stop();
}

TL_TEST(library_without_symbols) {
  reset();
  setenv("COMMLENS_CUPTI_LIB", "libz.so.1", 1); cl_config_load();
  CHECK(cl_cupti_start() == -1, "started");
  CHECK(g_logs == 1 && strstr(g_last, "lacks cuptiGetVersion"), "logs=%d %s", g_logs, g_last);
}

TL_TEST(busy_subscriber_backs_off) {
  reset();
  REQUIRE(build_fake() == 0, "cannot build the fake libcupti (cc, CUDA headers)");
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1); cl_config_load();
  setenv("FAKE_BUSY", "1", 1);
  int *reg = fake_int("fake_registered");
  int before = reg ? *reg : -1;
  CHECK(cl_cupti_start() == -1, "started while busy");
  CHECK(g_logs == 1 && strstr(g_last, "in use"), "logs=%d %s", g_logs, g_last);
  reg = fake_int("fake_registered");
  REQUIRE(reg != NULL, "fake not loaded");
  CHECK(*reg == (before < 0 ? 0 : before), "registered callbacks over another tool");
  int *dis = fake_int("fake_disabled");
  int any = 0;
  for (int i = 0; i < 64; i++) any |= dis[i];
  CHECK(!any, "disabled kinds it never enabled");
}

TL_TEST(not_initialized_and_too_old) {
  reset();
  REQUIRE(build_fake() == 0, "no fake");
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1); cl_config_load();
  setenv("FAKE_NOINIT", "1", 1);
  CHECK(cl_cupti_start() == -1, "started");
  CHECK(g_logs == 1 && strstr(g_last, "could not start"), "logs=%d %s", g_logs, g_last);
  reset();
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1); cl_config_load();
  setenv("FAKE_OLD", "1", 1);
  CHECK(cl_cupti_start() == -1, "started");
  CHECK(g_logs == 1 && strstr(g_last, "too old"), "logs=%d %s", g_logs, g_last);
}

TL_TEST(kernel_activity_refused) {
  reset();
  REQUIRE(build_fake() == 0, "no fake");
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1); cl_config_load();
  setenv("FAKE_NOKERNEL", "1", 1);
  int *dis = fake_int("fake_disabled");
  int d_memcpy = dis ? dis[CUPTI_ACTIVITY_KIND_MEMCPY] : 0;
  CHECK(cl_cupti_start() == -1, "started");
  CHECK(g_logs == 1 && strstr(g_last, "kernel activity unavailable"), "logs=%d %s", g_logs, g_last);
  dis = fake_int("fake_disabled");
  REQUIRE(dis != NULL, "fake not loaded");
  CHECK(dis[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] == 0, "disabled a kind it did not enable");
  CHECK(dis[CUPTI_ACTIVITY_KIND_MEMCPY] == d_memcpy, "memcpy was never enabled here");
}

/* The default (COMMLENS_CUPTI=kernels): kernel records and NVTX ranges only, no launch, memcpy
 * or memset records; NCCL's launching threads get CUPTI's id of a stream (+1; 0 when unknown). */
TL_TEST(default_enables_kernel_records_only) {
  reset();
  REQUIRE(build_fake() == 0, "no fake");
  REQUIRE(dlopen(g_fake, RTLD_NOW), "fake not loadable");   /* counters readable before start */
  int *en = fake_int("fake_enabled");
  REQUIRE(en, "fake not loaded");
  int before[64];
  memcpy(before, en, sizeof before);
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1); unsetenv("COMMLENS_CUPTI"); cl_config_load();
  REQUIRE(cl_cfg.cupti == CL_CUPTI_KERNELS, "default level %d", cl_cfg.cupti);
  REQUIRE(cl_cupti_start() == 0, "start failed: %s", g.status);
  CHECK(en[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] > before[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] &&
        en[CUPTI_ACTIVITY_KIND_MARKER] > before[CUPTI_ACTIVITY_KIND_MARKER], "kernel and marker kinds not enabled");
  CHECK(en[CUPTI_ACTIVITY_KIND_DRIVER] == before[CUPTI_ACTIVITY_KIND_DRIVER] &&
        en[CUPTI_ACTIVITY_KIND_MEMCPY] == before[CUPTI_ACTIVITY_KIND_MEMCPY] &&
        en[CUPTI_ACTIVITY_KIND_MEMSET] == before[CUPTI_ACTIVITY_KIND_MEMSET], "driver, memcpy or memset enabled by default");
  CHECK(!cl_cupti_launch_records(), "launch records on by default");
  CHECK(cl_cupti_stream_id(0x1230) == 0x123 + 1 && cl_cupti_stream_id(0) == 0, "stream ids %u %u",
        cl_cupti_stream_id(0x1230), cl_cupti_stream_id(0));
  cl_cupti_stop();
  CHECK(cl_cupti_stream_id(0x1230) == 0, "stream ids asked after stop");
  /* on, 1: the same; full: launch records too (stream ids still: the join by stream checks) */
  setenv("COMMLENS_CUPTI", "on", 1); cl_config_load();
  CHECK(cl_cfg.cupti == CL_CUPTI_KERNELS, "on: level %d", cl_cfg.cupti);
  setenv("COMMLENS_CUPTI", "full", 1); cl_config_load();
  CHECK(cl_cfg.cupti == CL_CUPTI_FULL, "full: level %d", cl_cfg.cupti);
  reset();
  REQUIRE(cl_cupti_start() == 0, "start failed: %s", g.status);
  CHECK(cl_cupti_launch_records() && cl_cupti_stream_id(0x1230) == 0x124, "full: launch records %d stream id %u",
        cl_cupti_launch_records(), cl_cupti_stream_id(0x1230));
  cl_cupti_stop();
  unsetenv("COMMLENS_CUPTI");
}

TL_TEST(delivers_records) {
  reset();
  REQUIRE(build_fake() == 0, "no fake");
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1); setenv("COMMLENS_CUPTI", "full", 1); cl_config_load();
  unsetenv("COMMLENS_CUPTI");
  REQUIRE(cl_cupti_start() == 0, "start failed: %s", g.status);
  CHECK(g_logs == 0, "logged on success: %s", g_last);
  int *en = fake_int("fake_enabled");
  CHECK(en[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] >= 1 && en[CUPTI_ACTIVITY_KIND_KERNEL] == 0 &&
        en[CUPTI_ACTIVITY_KIND_DRIVER] >= 1, "kinds (launch records come from KIND_DRIVER)");
  cl_gpu_activity a[16];
  CHECK(cl_cupti_drain(a, 16) == 0, "records before flush");
  cl_cupti_flush(0);
  size_t n = cl_cupti_drain(a, 2);       /* partial drains keep their place */
  n += cl_cupti_drain(a + n, 16 - n);
  REQUIRE(n == 5, "n=%zu", n);
  CHECK(a[0].kind == CL_GPU_KERNEL && a[0].start_ns == 1000 && a[0].end_ns == 2000 && a[0].device == 1 &&
        a[0].context == 2 && a[0].stream == 7 && a[0].correlation == 42 && !a[0].graph_node, "k0");
  CHECK(a[1].graph_node && a[1].correlation == 43 && strcmp(a[1].name, "ncclDevKernel_AllReduce_Sum_f32_RING_LL") == 0, "k1");
  CHECK(a[2].name == a[0].name, "names not interned");
  CHECK(strcmp(a[0].name, "myGemm(float*, float*)") == 0 || strcmp(a[0].name, "_Z6myGemmPfS_") == 0, "name %s", a[0].name);
  CHECK(a[3].kind == CL_GPU_LAUNCH && a[3].thread == 1234 && a[3].correlation == 43 && a[3].start_ns == 900, "launch");
  CHECK(a[4].kind == CL_GPU_MEMCPY && a[4].stream == 3 && a[4].end_ns == 7100, "memcpy");
  cl_cupti_stats st; cl_cupti_get_stats(&st);
  CHECK(st.active && st.records == 5 && st.dropped == 3 && st.buffers == 1, "stats %llu %llu %llu",
        (unsigned long long)st.records, (unsigned long long)st.dropped, (unsigned long long)st.buffers);
  /* buffers are reused, not leaked: many flushes stay within the cap */
  for (int i = 0; i < 50; i++) { cl_cupti_flush(0); while (cl_cupti_drain(a, 16)) {} }
  CHECK(g.nalloc <= 2, "nalloc=%d", g.nalloc);
  /* the writer does not drain: CUPTI gets no buffer after the cap, and nothing grows */
  for (int i = 0; i < CL_CUPTI_MAX_BUFS + 4; i++) cl_cupti_flush(0);
  CHECK(g.nalloc == CL_CUPTI_MAX_BUFS && g.refused > 0, "cap nalloc=%d", g.nalloc);
  cl_cupti_stop();
  int *dis = fake_int("fake_disabled");
  CHECK(dis[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] >= 1 && dis[CUPTI_ACTIVITY_KIND_DRIVER] >= 1, "stop disables ours only");
  cl_cupti_get_stats(&st);
  CHECK(!st.active, "active after stop");
}

TL_TEST(takeover_suspends_and_resumes) {
  reset();
  REQUIRE(build_fake() == 0, "no fake");
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1); cl_config_load();
  REQUIRE(cl_cupti_start() == 0, "start failed: %s", g.status);
  int *flushes = fake_int("fake_flushes");
  setenv("FAKE_BUSY", "1", 1);           /* Nsight Systems attaches */
  g.next_probe = 0;
  int f0 = *flushes;
  cl_cupti_flush(0);
  CHECK(g.state == CUPTI_SUSPENDED && *flushes == f0, "flushed another tool's session");
  CHECK(cl_cupti_stream_id(0x1230) == 0, "stream ids asked of CUPTI while another tool has it");
  cl_cupti_stats st; cl_cupti_get_stats(&st);
  CHECK(!st.active && strstr(st.status, "suspended"), "status %s", st.status);
  unsetenv("FAKE_BUSY");                 /* and ends */
  g.next_probe = 0;
  cl_cupti_flush(0);
  CHECK(g.state == CUPTI_ACTIVE && *flushes == f0 + 1, "not resumed");
  CHECK(cl_cupti_stream_id(0x1230) == 0x124, "no stream ids after resuming");
  cl_cupti_stop();
}

/* torch.profiler does not take the slot: it registers its own buffer callbacks. Once the join
 * sees our records gone (displaced), nothing of CUPTI's is touched again: no flush (it would go
 * to the other client), no re-arm when the slot is free, no disable at exit (the kinds are
 * global: disabling CONCURRENT_KERNEL would stop the other client's kernel records). */
TL_TEST(displaced_leaves_cupti_alone) {
  reset();
  REQUIRE(build_fake() == 0, "no fake");
  setenv("COMMLENS_CUPTI_LIB", g_fake, 1); cl_config_load();
  REQUIRE(cl_cupti_start() == 0, "start failed: %s", g.status);
  CHECK(cl_cupti_recording(), "not recording after start");
  int *flushes = fake_int("fake_flushes"), *reg = fake_int("fake_registered"), *dis = fake_int("fake_disabled");
  int f0 = *flushes, r0 = *reg, d0 = dis[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL];
  cl_cupti_displaced();
  CHECK(!cl_cupti_recording(), "still recording");
  CHECK(cl_cupti_stream_id(0x1230) == 0, "stream ids asked of CUPTI after displacement");
  CHECK(g_logs == 1 && strstr(g_last, "another client"), "message: %d '%s'", g_logs, g_last);
  cl_cupti_displaced();
  CHECK(g_logs == 1, "said twice");
  for (int i = 0; i < 3; i++) { g.next_probe = 0; cl_cupti_flush(i == 2); }
  CHECK(*flushes == f0 && *reg == r0, "touched CUPTI after displacement: flushes %d->%d registered %d->%d",
        f0, *flushes, r0, *reg);
  cl_cupti_stats st; cl_cupti_get_stats(&st);
  CHECK(!st.active && strstr(st.status, "displaced"), "status %s", st.status);
  cl_cupti_stop();
  CHECK(dis[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] == d0 && *flushes == f0, "stop disabled or flushed");
  cl_cupti_get_stats(&st);
  CHECK(strstr(st.status, "displaced"), "the reason is gone after stop: %s", st.status);
}

TL_MAIN("core/cupti")
