/* cupti.h: the CUPTI bridge. CUPTI is loaded at run time (dlopen), so the plugin works
 * without it. It records CONCURRENT_KERNEL (never KERNEL, which serialises kernels) and NVTX
 * ranges; with COMMLENS_CUPTI=full also MEMCPY and MEMSET activity and the driver API records
 * of kernel launches (for correlation ids). Timestamps are on the plugin's CLOCK_MONOTONIC
 * base. Never adds work to the app's streams. Buffers are bounded; records that do not fit
 * are counted. Only the writer thread drains. */
#ifndef COMMLENS_CUPTI_H
#define COMMLENS_CUPTI_H
#include <stdint.h>
#include <stddef.h>
#include <string.h>

/* MARK_START/MARK_END: NVTX ranges (push/pop, start/end), recorded by CUPTI when the job runs
 * with NVTX_INJECTION64_PATH pointing at libcupti; `correlation` is the range id, `name` is set
 * on the start, `start_ns` is the time of either. */
typedef enum { CL_GPU_KERNEL = 1, CL_GPU_MEMCPY = 2, CL_GPU_MEMSET = 3, CL_GPU_LAUNCH = 4,
               CL_GPU_MARK_START = 5, CL_GPU_MARK_END = 6 } cl_gpu_kind;

typedef struct {
  uint64_t start_ns, end_ns;  /* CLOCK_MONOTONIC ns (same base as event records) */
  uint32_t correlation;       /* CUPTI correlation id (kernel <-> its launch API record) */
  uint32_t device, context, stream;   /* stream = CUPTI stream id */
  uint32_t thread;            /* LAUNCH: OS thread id that made the call */
  uint8_t kind;               /* cl_gpu_kind */
  uint32_t graph_id;          /* KERNEL, MEMCPY, MEMSET: CUDA graph id (0: not from a graph) */
  uint64_t graph_node;        /* KERNEL, MEMCPY, MEMSET: graph node id (0: not from a graph) */
  const char *name;           /* KERNEL: demangled-or-raw name, interned, lives until exit */
  uint8_t name_class;         /* KERNEL: cl_gpu_name_class of `name` (0: not told) */
  uint8_t copy_kind;          /* MEMCPY: CUPTI's CUpti_ActivityMemcpyKind (10: peer to peer) */
  uint64_t bytes;             /* MEMCPY, MEMSET: bytes copied or set */
} cl_gpu_activity;

/* Whether a kernel's name is NCCL's, told once per distinct name when the bridge interns it
 * (a compute kernel's long C++ name is not searched again in every record). */
typedef enum { CL_GPU_NAME_UNTOLD = 0, CL_GPU_NAME_NCCL = 1, CL_GPU_NAME_OTHER = 2 } cl_gpu_name_class;

/* NCCL's kernel names, demangled or not ("ncclDevKernel_...", "_Z39ncclDevKernel_...",
 * "ncclSymkDevKernel_..."): one of these within the first 47 characters. The one rule: the
 * join falls back on it (graph replays, ABI < v5, the join by stream order). */
static inline int cl_gpu_is_nccl_name(const char *n) {
  static const struct { const char *s; size_t n; } pat[] = {{"ncclDevKernel", 13}, {"ncclKernel", 10}, {"ncclSymk", 8}};
  for (size_t i = 0; n && i < 47 && n[i]; i++) {
    if (n[i] != 'n') continue;
    for (size_t k = 0; k < sizeof pat / sizeof *pat; k++)
      if (i + pat[k].n <= 47 && !strncmp(n + i, pat[k].s, pat[k].n)) return 1;
  }
  return 0;
}

/* What the trace and the summary say of a collective that CUPTI did not time because another
 * tool had it (its "gpu_timing" arg; gpu_join.h cl_gj_lost says which). */
#define CL_GPU_LOST_WHY "lost (CUPTI taken by another tool)"

typedef struct {
  uint64_t records, dropped, buffers;
  uint64_t resumed;           /* times recording came back after another tool had CUPTI */
  int active;                 /* 1 if CUPTI is recording */
  char status[160];           /* why not, when inactive ("libcupti not found", ...) */
} cl_cupti_stats;

/* Loads CUPTI and enables the activity kinds. Returns 0 if active, or if another tool holds
 * CUPTI now (suspended: cl_cupti_flush takes it up when that tool lets go; cl_cupti_recording
 * says which). Logs once on failure or suspension. */
int cl_cupti_start(void);
/* Asks CUPTI to hand over completed buffers (cuptiActivityFlushAll); writer thread only. */
void cl_cupti_flush(int force);
/* Moves up to max completed records to out; returns how many. Writer thread only. */
size_t cl_cupti_drain(cl_gpu_activity *out, size_t max);
void cl_cupti_get_stats(cl_cupti_stats *s);
/* 1 while CUPTI records kernels for us (not suspended, displaced or failed; with
 * COMMLENS_CUPTI=sampled, inside a window). */
int cl_cupti_recording(void);
/* COMMLENS_CUPTI=sampled: the job's first collective (or point-to-point) was seen at `now`. The
 * first window opens with CUPTI, at NCCL's init, and stays open until a whole window after the
 * first collective, a period at most (a job builds its model between the two: a window timed from
 * init alone could close before any collective, leaving every estimate nothing to learn from).
 * A job with none for a whole period gets its next window at once. Once per process; writer
 * thread only. */
void cl_cupti_first_collective(uint64_t now);
/* 1 between two sampling windows (COMMLENS_CUPTI=sampled, CUPTI ours but kernels not recorded):
 * collectives then are not "lost", their exposure is estimated. */
int cl_cupti_sampling_gap(void);
/* 1 while the CUPTI join may need NCCL's launches (KernelLaunch and API events) before `lead_ns`
 * from `now`: while kernels are recorded or a window is closing, within lead_ns of the next
 * window, and while another tool holds CUPTI (it may be taken up again at any poll). 0 between
 * two sampling windows, and when CUPTI is off or failed: there is no join to feed then.
 * Writer thread only. */
int cl_cupti_wants_launches(uint64_t now, uint64_t lead_ns);
/* Suspended: the last time the slot was seen free while we recorded (the other tool took CUPTI,
 * and our records, after it; 0 when not known or not suspended). Writer thread only. */
uint64_t cl_cupti_taken_after(void);
/* 1 while the driver API launch records are on (COMMLENS_CUPTI=full): NCCL's kernels are then
 * known by correlation id; else by stream and launch order (gpu_join.h). */
int cl_cupti_launch_records(void);
/* CUPTI's id of a CUDA stream, plus one (0: unknown, or CUPTI not recording for us: never
 * asked then, while another tool has it). Any thread, while the stream is alive: NCCL's shim
 * asks at each KernelLaunch. */
uint32_t cl_cupti_stream_id(uint64_t stream);
/* Another client took CUPTI's records (see gpu_join.h cl_gj_launches_lost): stop for good,
 * touching nothing of CUPTI's, with one message. */
void cl_cupti_displaced(void);
/* Disables activity recording and releases buffers (process exit). */
void cl_cupti_stop(void);
#endif
