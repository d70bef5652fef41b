/* test_gpu_clock.c: the GPU-timer-to-host mapping. The first case reproduces what real NCCL
 * showed on H200: early KernelCh observations arrive milliseconds late, later ones within
 * microseconds, and the channels of one collective carry the same GPU timer. A running minimum
 * used straight away drew those channels 3.3 ms apart; the clock must not be used before it is
 * ready, and then every channel maps to the same host time. */
#include "tl.h"
#include "plugin/gpu/gpu_clock.h"

#define TRUE_OFF (-1795332893871719068ll)   /* host(mono) - gpu, as measured on the GPU host */

static uint64_t gpu_at(uint64_t host) { return (uint64_t)((int64_t)host - TRUE_OFF); }

TL_TEST(late_early_samples_do_not_skew_channels) {
  cl_gpu_clock c = {0};
  uint64_t host = 5000000000ull;            /* 5 s of uptime */
  /* burst 1: a collective on 4 channels, started together, seen 3 to 8 ms late */
  uint64_t g0 = gpu_at(host);
  for (int ch = 0; ch < 4; ch++) CHECK(cl_gpu_clock_sample(&c, g0, host + 3000000 + ch * 1700000), "sample");
  CHECK(!cl_gpu_clock_ready(&c), "ready after 4 late samples");
  /* then prompt observations (2 us late) over 200 ms */
  for (int i = 1; i <= 40; i++) {
    uint64_t h = host + (uint64_t)i * 5000000;
    CHECK(cl_gpu_clock_sample(&c, gpu_at(h), h + 2000), "sample %d", i);
  }
  REQUIRE(cl_gpu_clock_ready(&c), "not ready after 44 samples over 200 ms");
  CHECK(cl_gpu_clock_offset(&c) == TRUE_OFF + 2000, "offset %lld, want %lld", (long long)cl_gpu_clock_offset(&c),
        (long long)(TRUE_OFF + 2000));
  /* the 4 channels of burst 1 now map to one host time, 2 us from the truth */
  for (int ch = 0; ch < 4; ch++) {
    uint64_t t = cl_gpu_clock_to_host(&c, g0, host + 3000000 + ch * 1700000);
    CHECK(t == host + 2000, "channel %d at %llu, want %llu", ch, (unsigned long long)t, (unsigned long long)(host + 2000));
  }
}

TL_TEST(follows_drift_both_ways) {
  cl_gpu_clock c = {0};
  uint64_t host = 1000000000ull;
  /* the GPU clock runs 5 ppm slow for 20 s: host - gpu grows by 5 us per second */
  for (int i = 0; i < 2000; i++) {
    uint64_t h = host + (uint64_t)i * 10000000;           /* every 10 ms */
    int64_t drift = (int64_t)(h - host) / 200000;         /* 5 us/s */
    cl_gpu_clock_sample(&c, (uint64_t)((int64_t)h - TRUE_OFF - drift), h + 1000);
  }
  int64_t want = TRUE_OFF + (int64_t)(19990000000ull / 200000) + 1000;   /* at the last sample */
  int64_t got = cl_gpu_clock_offset(&c);
  /* the window spans up to two periods (8 s): the estimate lags by at most 8 s of drift */
  CHECK(want - got <= 40000 && want - got >= 0, "offset %lld vs current %lld", (long long)got, (long long)want);
  /* and the other way: host - gpu shrinking is followed at once (it lowers the minimum) */
  cl_gpu_clock d = {0};
  for (int i = 0; i < 2000; i++) {
    uint64_t h = host + (uint64_t)i * 10000000;
    int64_t drift = -(int64_t)(h - host) / 200000;
    cl_gpu_clock_sample(&d, (uint64_t)((int64_t)h - TRUE_OFF - drift), h + 1000);
  }
  want = TRUE_OFF - (int64_t)(19990000000ull / 200000) + 1000;
  CHECK(cl_gpu_clock_offset(&d) == want, "offset %lld, want %lld", (long long)cl_gpu_clock_offset(&d), (long long)want);
}

TL_TEST(implausible_values_are_refused_and_counted) {
  cl_gpu_clock c = {0};
  uint64_t host = 2000000000ull;
  for (int i = 0; i < 40; i++) cl_gpu_clock_sample(&c, gpu_at(host + i * 5000000ull), host + i * 5000000ull + 500);
  CHECK(!cl_gpu_clock_sample(&c, 0, host), "a zero timer was accepted");
  CHECK(!cl_gpu_clock_sample(&c, gpu_at(host) + 20000000000ull, host), "a timer 20 s away was accepted");
  CHECK(c.implausible == 2, "implausible %llu", (unsigned long long)c.implausible);
  CHECK(cl_gpu_clock_to_host(&c, 0, host) == 0, "zero timer mapped");
  /* an event the host saw before the GPU says it happened cannot be drawn */
  CHECK(cl_gpu_clock_to_host(&c, gpu_at(host + 1000000), host) == 0, "mapped after its observation");
  CHECK(cl_gpu_clock_to_host(&c, gpu_at(host), host + 100000) == host + 500, "normal mapping");
}

TL_TEST(out_of_order_samples_keep_the_minimum) {
  /* Regression: samples are added in processing order, not time order. An observation older
   * than the period's first one underflowed the unsigned period check, rotated the window twice
   * and dropped the true minimum: a KernelCh was then mapped 2 us after its own observation and
   * flagged implausible (1 run in 20 of test_multirank). */
  cl_gpu_clock c = {0};
  uint64_t host = 3000000000ull;
  CHECK(cl_gpu_clock_sample(&c, gpu_at(host + 5000), host + 5000 + 300), "first");     /* prompt: d = +300 */
  CHECK(cl_gpu_clock_sample(&c, gpu_at(host + 1000), host + 1000 + 2500), "older 1");  /* obs 3500 < 5300 */
  CHECK(cl_gpu_clock_sample(&c, gpu_at(host + 1000), host + 1000 + 2000), "older 2");  /* obs 3000 < 3500 */
  CHECK(cl_gpu_clock_offset(&c) == TRUE_OFF + 300, "offset %lld, want %lld: the minimum was dropped",
        (long long)cl_gpu_clock_offset(&c), (long long)(TRUE_OFF + 300));
  /* and the prompt sample's own event maps no later than its observation */
  CHECK(cl_gpu_clock_to_host(&c, gpu_at(host + 5000), host + 5000 + 300) == host + 5000 + 300, "mapping");
}

TL_MAIN("gpu/gpu_clock")
