/* gpu_clock.c: see gpu_clock.h. Pure arithmetic on the writer thread; no state but the struct. */
#include "plugin/gpu/gpu_clock.h"

int cl_gpu_clock_sample(cl_gpu_clock *c, uint64_t gpu_ns, uint64_t obs) {
  if (!gpu_ns) { c->implausible++; return 0; }
  /* Differences in unsigned arithmetic: NCCL's timer is any 64-bit value (garbage included:
   * fuzz_abi found a signed overflow here), and wrapping is defined only for unsigned. */
  int64_t d = (int64_t)(obs - gpu_ns);
  if (c->samples) {
    int64_t est = cl_gpu_clock_offset(c);
    uint64_t off = d >= est ? (uint64_t)d - (uint64_t)est : (uint64_t)est - (uint64_t)d;
    if (off > (uint64_t)CL_GPU_CLOCK_IMPLAUSIBLE_NS) {
      c->implausible++;
      return 0;
    }
  } else {
    c->first_obs = obs;
    c->period_start = obs;
  }
  /* samples come slightly out of time order (a start is read after a later stop): one older
   * than the period's start belongs to it, and must not look like a period boundary */
  if (obs > c->period_start && obs - c->period_start >= CL_GPU_CLOCK_PERIOD_NS) {   /* rotate */
    c->prev_min = c->cur_min;
    c->have_prev = c->have_cur;
    c->have_cur = 0;
    c->period_start = obs;
  }
  if (!c->have_cur || d < c->cur_min) { c->cur_min = d; c->have_cur = 1; }
  c->off = c->have_prev && c->prev_min < c->cur_min ? c->prev_min : c->cur_min;   /* have_cur holds here */
  c->samples++;
  if (obs > c->last_obs) c->last_obs = obs;
  return 1;
}
