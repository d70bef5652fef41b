/* driver.h: calls the plugin the way NCCL does (tools/replay/driver.c), through the
 * ncclProfiler_vN table the library exports: what the replay engine and the tests' harness
 * share. */
#ifndef COMMLENS_REPLAY_DRIVER_H
#define COMMLENS_REPLAY_DRIVER_H
#include "commlens/nccl_profiler_abi.h"
#include <stddef.h>
#include <stdint.h>

/* ---- loading -------------------------------------------------------------------------- */
typedef struct {
  void *dl;            /* dlopen handle */
  int abi;             /* 1..7: which ncclProfiler_vN this table is */
  const void *table;   /* the clabi_profiler_vN the library exports */
  const char *name;    /* table->name */
} h_plugin;

/* Path of the plugin under test: $COMMLENS_LIB, else build/libnccl-profiler-commlens.so. */
const char *h_lib_path(void);
/* dlopen(RTLD_NOW|RTLD_LOCAL) + dlsym("ncclProfiler_v<abi>"). 0 on success; on failure -1 and
 * a message on stderr. */
int h_open(h_plugin *p, const char *lib, int abi);
/* dlclose, as NCCL does after the last finalize. */
void h_close(h_plugin *p);

/* Path of the stand-in library `name` (test/fakes/, e.g. libcommlens-fakecupti.so): next to
 * `lib`, or to the library under test when `lib` is NULL. */
void h_fake_path(const char *lib, const char *name, char *path, size_t n);
/* Makes CUDA device `dev` current on the calling thread, as a job driving several GPUs does
 * before each communicator's init: through the stand-in libcuda (test/fakes/fake_cuda.c,
 * $COMMLENS_FAKE_CUDA, else libcommlens-fakecuda.so next to `lib` or the library under test),
 * loaded on first use. 0, or -1 (message on stderr) when the stand-in cannot be loaded. */
int h_cuda_set_device(const char *lib, int dev);

/* ---- the logger NCCL would pass (v4+): captures every message ----------------------- */
void h_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);
void h_log_reset(void);
/* Called (if set) with each message after it is captured, on the plugin's calling thread. Set
 * it before the plugin is loaded. */
extern void (*h_log_hook)(int level, const char *msg);
/* Number of captured messages of `level` (-1: any) containing `needle` (NULL: any). */
int h_log_count(int level, const char *needle);
/* All captured text, one message per line, "<level> <text>": a copy owned by the harness,
 * valid until the calling thread's next call. */
const char *h_log_text(void);

/* ---- init / finalize ------------------------------------------------------------------ */
typedef struct {
  uint64_t hash;       /* commHash (v4) / commId (v5+) */
  const char *name;    /* commName (v4+) */
  int nnodes, nranks, rank;
} h_comm_info;

/* One process-global activation mask, as NCCL has (ncclProfilerEventMask). */
extern int h_mask;
/* Calls init with the version's signature; *ctx receives the context. NULL info means
 * "rank 0 of 2, hash 0x1234". Passing mask_ptr NULL tests the NULL-mask path. */
int h_init_ex(h_plugin *p, void **ctx, int *mask_ptr, const h_comm_info *info);
int h_init(h_plugin *p, void **ctx, const h_comm_info *info);
int h_finalize(h_plugin *p, void *ctx);

/* ---- start / stop / state ------------------------------------------------------------ */
/* startEvent with a raw, already encoded descriptor (replay, NULL descriptors). */
int h_start_raw(h_plugin *p, void *ctx, void **handle, void *descr);
int h_stop(h_plugin *p, void *handle);
/* recordEventState with the version's args layout; arg goes into the first 8 bytes
 * (transSize / appendedProxyOps / pTimer). v1..v3 get the 16-byte union. */
int h_state(h_plugin *p, void *handle, int state, uint64_t arg);
int h_state_noargs(h_plugin *p, void *handle, int state);
/* recordEventState with raw, already encoded args (replay). */
int h_state_raw(h_plugin *p, void *handle, int state, void *args);
/* Counts a call that did not return ncclSuccess (h_bad_rc) and says so on stderr. */
void h_note_rc(int rc, const char *what);
/* Number of calls that returned non-zero since the last reset (every call but init must
 * return ncclSuccess). */
extern int h_bad_rc;

#endif
