/* shim.c: the one piece of state the version shims share (shim.h): the cached process id
 * that tells a descriptor from this process from one copied out of another. */
#include "shim.h"

_Atomic pid_t cl_self_pid;
