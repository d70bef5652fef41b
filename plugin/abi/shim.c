/* shim.c: what the version shims share (shim.h): the cached process id that tells a
 * descriptor from this process from one copied out of another, and the version of the NCCL
 * that drives them. */
#include "shim.h"
#include <dlfcn.h>

_Atomic pid_t cl_self_pid;

int cl_shim_nccl_version(void) {
  typedef int (*get_version_fn)(int *);
  get_version_fn f;
  *(void **)&f = dlsym(RTLD_DEFAULT, "ncclGetVersion");
  void *h = NULL;
  if (!f && (h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD)) != NULL) *(void **)&f = dlsym(h, "ncclGetVersion");
  int v = 0;
  if (!f || f(&v) != 0 || v < 0) v = 0;
  if (h) dlclose(h);
  return v;
}
