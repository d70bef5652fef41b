/* device.c: the CUDA device current on the calling thread, asked of the CUDA driver NCCL
 * already loaded (RTLD_NOLOAD: the plugin never loads CUDA itself). */
#include "plugin/gpu/device.h"
#include <dlfcn.h>
#include <stddef.h>

int cl_cuda_device(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h) return -1;
  int (*get)(int *) = (int (*)(int *))dlsym(h, "cuCtxGetDevice");
  int dev = -1;
  if (!get || get(&dev) != 0) dev = -1;
  dlclose(h);
  return dev;
}
