/* fake_cuda.c: a stand-in CUDA driver for tests and replays without a GPU. Built with the
 * soname libcuda.so.1, so the plugin's dlopen("libcuda.so.1", RTLD_NOLOAD) finds it once a
 * test has loaded it; it answers cuCtxGetDevice with the device the calling thread last set
 * (as a thread of a job that drives several GPUs makes each one current in turn). */
#include <stdatomic.h>

static _Thread_local int t_dev = -1;
static _Atomic int g_calls;

/* The device the calling thread makes current; -1: no context (cuCtxGetDevice then fails). */
__attribute__((visibility("default"))) void commlens_fake_cuda_set_device(int dev) { t_dev = dev; }
/* How often the plugin asked (tests check that it asked at all). */
__attribute__((visibility("default"))) int commlens_fake_cuda_calls(void) { return atomic_load(&g_calls); }

/* CUresult cuCtxGetDevice(CUdevice *device): 0 = CUDA_SUCCESS, 201 = CUDA_ERROR_INVALID_CONTEXT. */
__attribute__((visibility("default"))) int cuCtxGetDevice(int *device) {
  atomic_fetch_add(&g_calls, 1);
  if (t_dev < 0) return 201;
  *device = t_dev;
  return 0;
}
