/* process.c: the plugin's process lifecycle. The first communicator init sets the process up
 * (configuration, its identity (identity.c), exit and fork handlers); each init
 * registers a context (capture/contexts.c) and the first one starts the writer
 * (pipeline/writer.c); the last finalize stops it; exit finishes the output; a fork child
 * starts over at its next init. */
#include "plugin/plugin.h"
#include "plugin/output/identity.h"
#include "plugin/gpu/device.h"
#include "common/config.h"
#include "plugin/capture/gate.h"
#include "plugin/capture/ring.h"
#include "plugin/capture/timers.h"
#include "plugin/pipeline/writer.h"
#include <pthread.h>
#include <stdlib.h>

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;   /* first-init setup */
static int g_proc_ready;

static void on_exit_handler(void) { cl_writer_finish(); }

static void fork_child(void) {
  /* The child keeps none of the parent's threads: start over at its next init. */
  atomic_store(&cl_enabled, 0);
  cl_rings_reset_after_fork();
  cl_writer_after_fork_child();
  cl_contexts_reset_after_fork();
  cl_timers_reset_after_fork();
  pthread_mutex_init(&g_mu, NULL);
  g_proc_ready = 0;
  cl_log_after_fork_child();
}

static void process_setup(const cl_comm_desc *d) {
  static int atexit_done, atfork_done;
  cl_config_load();
  /* sampled mode times NCCL's kernels by their kernel-channel timers, which ABI v4 brought: with
   * an older NCCL, CUPTI's kernel records time them all the time instead */
  if (cl_cfg.cupti == CL_CUPTI_SAMPLED && d->abi < 4) {
    cl_cfg.cupti = CL_CUPTI_KERNELS;
    cl_log_once("sampled-abi", CL_LOG_INFO, "NCCL drives profiler ABI v%d, whose kernel-channel events carry no GPU "
                "timers: COMMLENS_CUPTI=sampled falls back to kernels (CUPTI times every NCCL kernel)", d->abi);
  }
  cl_identity_settle(d->rank, d->abi);
  cl_gate_setup(d->abi);
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
  uint32_t serial;
  int first;
  int dev = cl_cuda_device();
  int rc = cl_contexts_add(d, dev, ctx, &serial, &first);
  if (rc == 0) cl_timers_attach(*ctx, d->hash, dev);
  if (rc == 0) cl_gate_attach_mask(mask);
  pthread_mutex_unlock(&g_mu);
  if (rc != 0) return -1;

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
  if (cl_ctx_serial(ctx)) cl_timers_detach(ctx);
  if (cl_contexts_remove(ctx)) cl_writer_stop();
}
