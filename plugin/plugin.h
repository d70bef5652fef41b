/* plugin.h: the version-free interface the ABI shims (plugin/abi/) call, and nothing else
 * does: a communicator's init and finalize (plugin/process.c) and the hot path
 * (plugin/capture/hotpath.h). */
#ifndef COMMLENS_PLUGIN_H
#define COMMLENS_PLUGIN_H
#include "commlens/event.h"
#include "plugin/capture/contexts.h"
#include "plugin/capture/hotpath.h"
#include <stdint.h>

/* ---- lifecycle (not hot) ---- */
/* Registers a communicator; *ctx receives our context, *mask our event mask. Returns 0, or
 * -1 when profiling cannot run for this communicator (a message was logged). */
int cl_comm_init(void **ctx, int *mask, const cl_comm_desc *d);
void cl_comm_finalize(void *ctx);
#endif
