/* mem_oracle.h: the memory oracle of the CLI's reader targets (fuzz_digest.c, fuzz_flight.c):
 * the heap the code under test holds at its peak while it reads one input, measured through the
 * sanitizer's allocation hooks, stays within MO_PER_BYTE times the input's size plus MO_FIXED.
 * Every count a reader decodes is bounded by the bytes that carry it, so memory follows the
 * input's bytes, never what they claim: a 2.5 KB digest claiming 4 million rows once took
 * 2.5 GB. Static functions only; one target per program. */
#ifndef COMMLENS_FUZZ_MEM_ORACLE_H
#define COMMLENS_FUZZ_MEM_ORACLE_H
#include <sanitizer/allocator_interface.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The bound: a block may inflate 64 times (digest_codec.h CL_DG_MAX_RATIO) and its rows take a
 * few words each; json-c holds a parsed header, stats or flight object in about 40 times its
 * text (at most CL_DG_MAX_JSON, 1 MiB for a flight object). MO_FIXED covers the readers' fixed
 * buffers (a trace read's first 4 MiB, zlib's window). Measured over the kept corpora: see
 * docs/hostile-inputs.md. */
#define MO_PER_BYTE 256u
#define MO_FIXED (16u << 20)

/* Weak: the coverage build (make fuzz-coverage) has no sanitizer runtime; there the oracle is off. */
int __sanitizer_install_malloc_and_free_hooks(void (*)(const volatile void *, size_t),
                                              void (*)(const volatile void *)) __attribute__((weak));
size_t __sanitizer_get_allocated_size(const volatile void *) __attribute__((weak));
static _Atomic size_t mo_live, mo_peak;
static int mo_on;
static size_t mo_max_used, mo_max_used_input, mo_worst_used, mo_worst_input;   /* the target's thread only */
static FILE *mo_err;   /* fd 2 as it was at start (a target may point stderr at /dev/null) */
static void mo_on_malloc(const volatile void *p, size_t n) {
  (void)p;
  size_t live = atomic_fetch_add(&mo_live, n) + n, peak = atomic_load(&mo_peak);
  while (live > peak && !atomic_compare_exchange_weak(&mo_peak, &peak, live)) {}
}
static void mo_on_free(const volatile void *p) {
  if (p) atomic_fetch_sub(&mo_live, __sanitizer_get_allocated_size((const void *)p));
}
/* The run's largest peak, and its largest per input byte, said at exit (the closing note's figures). */
static void mo_report(void) {
  fprintf(mo_err, "memory oracle: largest peak %zu bytes (input of %zu bytes); largest per input byte %zu bytes for an "
          "input of %zu bytes; bound %u per byte + %u\n", mo_max_used, mo_max_used_input, mo_worst_used, mo_worst_input,
          MO_PER_BYTE, MO_FIXED);
}
/* From LLVMFuzzerInitialize. */
static void mo_install(void) {
  mo_err = fdopen(dup(2), "w");
  if (!mo_err) mo_err = stderr;
  if (!__sanitizer_install_malloc_and_free_hooks || !__sanitizer_get_allocated_size) return;
  mo_on = __sanitizer_install_malloc_and_free_hooks(mo_on_malloc, mo_on_free) != 0;
  if (mo_on) atexit(mo_report);
}
/* Starts the measure of one input; returns the heap held before it. */
static size_t mo_begin(void) {
  size_t live = atomic_load(&mo_live);
  atomic_store(&mo_peak, live);
  return live;
}
/* Ends it: aborts (a finding) when the peak passed the bound for an input of `size` bytes. */
static void mo_end(size_t base, size_t size, const char *what) {
  if (!mo_on) return;
  size_t used = atomic_load(&mo_peak) - base, bound = MO_PER_BYTE * size + MO_FIXED;
  if (used > mo_max_used) { mo_max_used = used; mo_max_used_input = size; }
  if ((double)used / (double)(size + 1) > (double)mo_worst_used / (double)(mo_worst_input + 1)) {
    mo_worst_used = used;
    mo_worst_input = size;
  }
  if (used > bound) {
    fprintf(mo_err, "memory oracle: %s held %zu bytes at its peak for an input of %zu bytes (bound %zu)\n", what, used,
            size, bound);
    abort();
  }
}
#endif
