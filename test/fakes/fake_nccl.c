/* fake_nccl.c: a stand-in libnccl.so.2 (soname) that only tells its version, for the plugin's
 * v7 gate (plugin/abi/v7.c): ncclGetVersion gives COMMLENS_FAKE_NCCL_VERSION (default 23102,
 * NCCL 2.31.2). Tests load it before the plugin, with RTLD_GLOBAL as an application that links
 * NCCL has it, or RTLD_LOCAL as PyTorch's extension modules have it. */
#include <stdlib.h>

__attribute__((visibility("default"))) int ncclGetVersion(int *version) {
  const char *e = getenv("COMMLENS_FAKE_NCCL_VERSION");
  if (!version) return 4;   /* ncclInvalidArgument */
  *version = e && *e ? atoi(e) : 23102;
  return 0;
}
