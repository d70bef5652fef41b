/* fuzz_config.c: libFuzzer target over the settings parser (common/config.c). The input is
 * lines; each line's first byte picks a COMMLENS_* variable and the rest of the line is its
 * value (any bytes but NUL and newline). Oracle: no sanitizer report, and whatever was set,
 * every setting ends inside its range (a refused value leaves the default). */
#include "common/config.h"
#include "common/log.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const g_names[] = {
  "COMMLENS_DIR", "COMMLENS_EVENTS", "COMMLENS_BUFFER_MB", "COMMLENS_RING_KB", "COMMLENS_GZIP",
  "COMMLENS_FLUSH_MS", "COMMLENS_EXIT_WAIT_S", "COMMLENS_WINDOW", "COMMLENS_SUMMARY", "COMMLENS_CUPTI",
  "COMMLENS_CUPTI_LIB", "COMMLENS_JOB", "COMMLENS_PROM", "COMMLENS_RANK", "COMMLENS_RECORD", "SLURM_JOB_ID",
  "COMMLENS_CUPTI_SAMPLE", "COMMLENS_CUPTI_CLOCK",
};
enum { NNAMES = sizeof g_names / sizeof g_names[0] };

static void quiet(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)level; (void)flags; (void)file; (void)line; (void)fmt;
}
static int terminated(const char *s, size_t n) { return memchr(s, 0, n) != NULL; }

extern char **environ;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* The environment is an array of our own for the call (setenv would leak every value). A
   * later line for the same name comes first, as setenv would leave it. */
  enum { MAXV = 64 };
  char *env[MAXV + 1];
  int n = 0;
  for (size_t at = 0; at < size && n < MAXV;) {
    const uint8_t *nl = memchr(data + at, '\n', size - at);
    size_t len = nl ? (size_t)(nl - (data + at)) : size - at;
    if (len) {
      const char *name = g_names[data[at] % NNAMES];
      char *kv = malloc(strlen(name) + len + 1);
      if (!kv) break;
      size_t k = (size_t)sprintf(kv, "%s=", name);
      memcpy(kv + k, data + at + 1, len - 1);
      kv[k + len - 1] = 0;                    /* a NUL inside ends the value, as in a real one */
      memmove(env + 1, env, (size_t)n * sizeof *env);
      env[0] = kv;
      n++;
    }
    at += len + 1;
  }
  env[n] = NULL;
  char **saved = environ;
  environ = env;
  cl_log_set_logger(quiet);
  cl_config_load();
  environ = saved;
  for (int i = 0; i < n; i++) free(env[i]);
  const cl_config *c = &cl_cfg;
  if (c->buffer_bytes < (1ull << 20) || c->buffer_bytes > (65536ull << 20)) abort();
  if (c->rings_bytes != c->buffer_bytes / 4 * 3) abort();
  if (c->ring_bytes < (16u << 10) || (c->ring_bytes > c->rings_bytes / CL_RING_ROOM && c->ring_bytes > (16u << 10))) abort();
  if (c->flush_ms < 10 || c->flush_ms > 250 || c->exit_wait_ms < 1000 || c->exit_wait_ms > 600000) abort();
  if (c->window != CL_WIN_NONE && c->win_start >= c->win_stop) abort();
  if (c->window == CL_WIN_NONE && (c->win_start || c->win_stop)) abort();
  if (c->rank < -1 || c->rank > (1 << 24) || !c->mask || c->mask > 0xFFFF) abort();
  if (c->summary > CL_SUMMARY_OFF || c->cupti < CL_CUPTI_OFF || c->cupti > CL_CUPTI_SAMPLED) abort();
  if (c->sample_on_ns < 50000000ull || c->sample_on_ns >= c->sample_period_ns || c->sample_period_ns > 3600000000000ull)
    abort();
  if (c->cupti == CL_CUPTI_SAMPLED && !(c->mask & (1u << 6))) abort();   /* KernelCh: the GPU timing outside windows */
  if (!terminated(c->dir, sizeof c->dir) || !c->dir[0] || !terminated(c->events_name, sizeof c->events_name) ||
      !terminated(c->record, sizeof c->record) || !terminated(c->cupti_lib, sizeof c->cupti_lib) ||
      !terminated(c->job, sizeof c->job) || !terminated(c->prom, sizeof c->prom))
    abort();
  return 0;
}
