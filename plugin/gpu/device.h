/* device.h: which CUDA device is current on the calling thread (plugin/gpu/device.c). */
#ifndef COMMLENS_DEVICE_H
#define COMMLENS_DEVICE_H
/* The CUDA device current on the calling thread, -1 if none is known (NCCL calls init with
 * the communicator's device current: that is how each communicator's GPU is known). */
int cl_cuda_device(void);
#endif
