/* recorder.h: lifecycle of the ABI call recording (COMMLENS_RECORD); the per-call hooks are
 * declared in abi/shim.h because only the shims call them. */
#ifndef COMMLENS_RECORDER_H
#define COMMLENS_RECORDER_H
void cl_recorder_open(const char *dir, int rank);
void cl_recorder_close(void);
#endif
