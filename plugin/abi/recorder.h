/* recorder.h: the ABI call recording (COMMLENS_RECORD, plugin/abi/recorder.c): its lifecycle
 * and the per-call hooks the shims call (only they do) while CL_RECORDING() holds. */
#ifndef COMMLENS_RECORDER_H
#define COMMLENS_RECORDER_H
#include "plugin/plugin.h"
#include <stdatomic.h>

/* After each init (not hot): opens this process's recording when COMMLENS_RECORD asks for one
 * and it is not open yet (DIR/commlens-r<rank>-<pid>.rec.gz, O_EXCL; logged and off when it
 * cannot be made); it closes at exit. */
void cl_recorder_begin(void);

/* A pointer field of a descriptor whose pointee the recorder must capture. */
typedef struct { unsigned off; const void *p; unsigned len; } cl_ref;

extern _Atomic int cl_recording;
void cl_recorder_init(int abi, void *ctx, const cl_comm_desc *d, int mask);
void cl_recorder_start(int abi, void *ctx, const void *descr, unsigned len, const cl_ref *refs,
                       int nrefs, void *handle);
void cl_recorder_stop(int abi, void *handle);
void cl_recorder_state(int abi, void *handle, int state, const void *args, unsigned len);
void cl_recorder_finalize(int abi, void *ctx);
#define CL_RECORDING() __builtin_expect(atomic_load_explicit(&cl_recording, memory_order_relaxed), 0)
#endif
