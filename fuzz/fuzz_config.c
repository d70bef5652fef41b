/* fuzz_config.c: libFuzzer target over the settings parser (common/config.c). The input is
 * lines; each line's first byte picks a COMMLENS_* variable and the rest of the line is its
 * value (any bytes but NUL and newline). Oracle: no sanitizer report, and whatever was set,
 * every setting ends inside its range (a refused value leaves the default). */
#include "common/config.h"
#include "common/log.h"
#include <stdlib.h>
#include <string.h>

static const char *const g_names[] = {
  "COMMLENS_DIR", "COMMLENS_EVENTS", "COMMLENS_BUFFER_MB", "COMMLENS_RING_KB", "COMMLENS_GZIP",
  "COMMLENS_FLUSH_MS", "COMMLENS_EXIT_WAIT_S", "COMMLENS_WINDOW", "COMMLENS_SUMMARY", "COMMLENS_CUPTI",
  "COMMLENS_CUPTI_LIB", "COMMLENS_JOB", "COMMLENS_PROM", "COMMLENS_RANK", "COMMLENS_RECORD", "SLURM_JOB_ID",
};
enum { NNAMES = sizeof g_names / sizeof g_names[0] };

static void quiet(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)level; (void)flags; (void)file; (void)line; (void)fmt;
}
static int terminated(const char *s, size_t n) { return memchr(s, 0, n) != NULL; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (int i = 0; i < NNAMES; i++) unsetenv(g_names[i]);
  char *buf = malloc(size + 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  buf[size] = 0;
  for (char *line = buf, *next; line && line < buf + size; line = next) {
    next = memchr(line, '\n', (size_t)(buf + size - line));
    if (next) *next++ = 0;
    if (!*line) continue;
    setenv(g_names[(unsigned char)line[0] % NNAMES], line + 1, 1);   /* stops at a NUL byte */
  }
  free(buf);
  cl_log_set_logger(quiet);
  cl_config_load();
  const cl_config *c = &cl_cfg;
  if (c->buffer_bytes < (1ull << 20) || c->buffer_bytes > (65536ull << 20)) abort();
  if (c->rings_bytes != c->buffer_bytes / 4 * 3) abort();
  if (c->ring_bytes < (16u << 10) || (c->ring_bytes > c->rings_bytes / CL_RING_ROOM && c->ring_bytes > (16u << 10))) abort();
  if (c->flush_ms < 10 || c->flush_ms > 250 || c->exit_wait_ms < 1000 || c->exit_wait_ms > 600000) abort();
  if (c->window != CL_WIN_NONE && c->win_start >= c->win_stop) abort();
  if (c->window == CL_WIN_NONE && (c->win_start || c->win_stop)) abort();
  if (c->rank < -1 || c->rank > (1 << 24) || !c->mask || c->mask > 0xFFFF) abort();
  if (c->summary > CL_SUMMARY_OFF || c->cupti < CL_CUPTI_OFF || c->cupti > CL_CUPTI_FULL) abort();
  if (!terminated(c->dir, sizeof c->dir) || !c->dir[0] || !terminated(c->events_name, sizeof c->events_name) ||
      !terminated(c->record, sizeof c->record) || !terminated(c->cupti_lib, sizeof c->cupti_lib) ||
      !terminated(c->job, sizeof c->job) || !terminated(c->prom, sizeof c->prom))
    abort();
  return 0;
}
