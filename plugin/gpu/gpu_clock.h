/* gpu_clock.h: maps a device's GPU timer (%globaltimer, KernelCh pTimer) onto the host clock.
 * The host sees a GPU event some time after the GPU wrote its timer (0 to several ms: NCCL's
 * proxy thread polls and catches up in bursts), so host - gpu over many events has a lower
 * envelope equal to the true offset. The envelope is a sliding minimum over two periods, so
 * drift either way is followed; nothing should be drawn before the clock is `ready` (enough
 * samples over enough time: the first observations are typically milliseconds late). */
#ifndef COMMLENS_GPU_CLOCK_H
#define COMMLENS_GPU_CLOCK_H
#include <stdint.h>

#define CL_GPU_CLOCK_PERIOD_NS 4000000000ull
#define CL_GPU_CLOCK_MIN_SAMPLES 32
#define CL_GPU_CLOCK_MIN_SPAN_NS 100000000ull
#define CL_GPU_CLOCK_IMPLAUSIBLE_NS 10000000000ll   /* this far from the envelope: wrong */

typedef struct {
  int64_t cur_min, prev_min;       /* host(mono) - gpu, minimum per period */
  int have_cur, have_prev;
  uint64_t period_start, first_obs, last_obs;
  uint64_t samples, implausible;
  int64_t off;                     /* cl_gpu_clock_offset, kept as samples come (read far more often) */
} cl_gpu_clock;                    /* zero-initialised = no samples yet */

/* Adds one (GPU timer, host observation time) pair; returns 0 (and counts it) if implausible. */
int cl_gpu_clock_sample(cl_gpu_clock *c, uint64_t gpu_ns, uint64_t host_obs_ns);
/* host - gpu, the current estimate (0 without samples). */
static inline int64_t cl_gpu_clock_offset(const cl_gpu_clock *c) { return c->off; }
/* Enough samples over enough time for the estimate to be trusted. */
static inline int cl_gpu_clock_ready(const cl_gpu_clock *c) {
  return c->samples >= CL_GPU_CLOCK_MIN_SAMPLES && c->last_obs - c->first_obs >= CL_GPU_CLOCK_MIN_SPAN_NS;
}
/* Host time of a GPU timer value the host observed at `host_obs_ns`; 0 if implausible (no
 * estimate, zero timer, after the observation, or too far before it). Inline, as the two above:
 * each collective's channels ask a few times each (bench/replay_cost.c). */
static inline uint64_t cl_gpu_clock_to_host(const cl_gpu_clock *c, uint64_t gpu_ns, uint64_t obs) {
  if (!gpu_ns || (!c->have_cur && !c->have_prev)) return 0;
  uint64_t h = gpu_ns + (uint64_t)cl_gpu_clock_offset(c);   /* wraps like the signed sum would */
  if (h > obs + 1000 || obs - h > (uint64_t)CL_GPU_CLOCK_IMPLAUSIBLE_NS) return 0;
  return h;
}
#endif
