/* gpu_share.h: which ranks time-share one GPU. Ranks of one host boot (the host name alone where
 * no boot id was recorded; and one clock id) on one CUDA device are candidates; the data must agree: a GPU time-shared by several processes runs
 * one context at a time, so two of its ranks' kernels of one collective start a scheduler slice
 * or more apart (measured: 1% of the gaps under half a slice on time-shared GPUs, 60-96% on
 * GPUs of their own), and a device number alone can name different GPUs (each process's
 * CUDA_VISIBLE_DEVICES). On a time-shared GPU the order of GPU starts within k - 1 slices is
 * the scheduler's, not the ranks': the verdict treats lateness within it as a tie. No I/O. */
#ifndef COMMLENS_ANALYSE_GPU_SHARE_H
#define COMMLENS_ANALYSE_GPU_SHARE_H
#include "tools/commlens/model/load.h"

#define CL_GPU_SLICE_NS 2260000.0   /* the scheduler slice measured on one H100 and one H200 */
#define CL_GPU_SHARE_SMALL 0.1      /* a time-shared GPU: at most this share of the gaps under
                                       half a slice */

typedef struct {
  int *k;               /* per rank index: ranks on its GPU (1: a GPU of its own) */
  int n_shared;         /* ranks on a time-shared GPU */
  int kmax;             /* the most ranks on one GPU */
  double slice_ns;      /* the slice: the median gap near one slice, else CL_GPU_SLICE_NS */
} cl_gpu_share;

/* Fills *s from the loaded job with its instances (cl_job_instances); cl_gpu_share_free. */
void cl_gpu_share_find(const cl_job *job, cl_gpu_share *s);
/* The resolution of rank index ri's GPU start: (k - 1) slices and a tenth, 0 on its own GPU. */
int64_t cl_gpu_share_res(const cl_gpu_share *s, int ri);
void cl_gpu_share_free(cl_gpu_share *s);
#endif
