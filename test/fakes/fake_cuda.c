/* fake_cuda.c: a stand-in CUDA driver for tests and replays without a GPU. Built with the
 * soname libcuda.so.1, so the plugin's dlopen("libcuda.so.1", RTLD_NOLOAD) finds it once a
 * test has loaded it; it answers cuCtxGetDevice with the device the calling thread last set
 * (as a thread of a job that drives several GPUs makes each one current in turn). */
static _Thread_local int t_dev = -1;

/* The device the calling thread makes current; -1: no context (cuCtxGetDevice then fails). */
__attribute__((visibility("default"))) void commlens_fake_cuda_set_device(int dev) { t_dev = dev; }

/* CUresult cuCtxGetDevice(CUdevice *device): 0 = CUDA_SUCCESS, 201 = CUDA_ERROR_INVALID_CONTEXT. */
__attribute__((visibility("default"))) int cuCtxGetDevice(int *device) {
  if (t_dev < 0) return 201;
  *device = t_dev;
  return 0;
}
