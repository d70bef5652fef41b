/* trace_check.h: what the ABI-level fuzz targets (fuzz_abi.c, fuzz_replay.c) share: the
 * environment the plugin runs in while fuzzed, and the oracle on its trace file. Header-only:
 * each target is one translation unit. */
#ifndef COMMLENS_FUZZ_TRACE_CHECK_H
#define COMMLENS_FUZZ_TRACE_CHECK_H
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dir[256], g_trace[512];
static long g_checked;                  /* trace offset up to which the body was checked */
static int g_truncated;                 /* the checked part was emptied (long runs) */

/* A fresh output directory; no CUPTI, no summary, every event type, small buffers. */
static void fz_env_init(void) {
  snprintf(g_dir, sizeof g_dir, "%s/commlens-fuzz-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(g_dir)) { perror("mkdtemp"); exit(1); }
  setenv("COMMLENS_DIR", g_dir, 1);
  setenv("COMMLENS_CUPTI", "0", 1);
  setenv("COMMLENS_SUMMARY", "off", 1);
  setenv("COMMLENS_EVENTS", "full", 1);
  setenv("COMMLENS_BUFFER_MB", "8", 1);
  setenv("COMMLENS_RING_KB", "64", 1);
  unsetenv("COMMLENS_RECORD");
  unsetenv("COMMLENS_WINDOW");
}

/* The trace is one file per process; each writer stop flushes body + a fresh tail. What was
 * appended since the last check, from the last tail's start, must read as
 * {"traceEvents":[ <new events> ],"commlensStats":{...}} once prefixed. */
static void check_trace(void) {
  if (!g_trace[0]) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls %s/*.trace.json 2>/dev/null", g_dir);
    FILE *p = popen(cmd, "r");
    if (!p) return;
    if (!fgets(g_trace, sizeof g_trace, p)) g_trace[0] = 0;
    pclose(p);
    g_trace[strcspn(g_trace, "\n")] = 0;
    if (!g_trace[0]) return;
}
  FILE *f = fopen(g_trace, "rb");
  if (!f) { fprintf(stderr, "trace %s vanished\n", g_trace); abort(); }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  long from = g_checked;
  if (size < from) {
    if (g_truncated) { fclose(f); return; }   /* nothing flushed since the truncation */
    fprintf(stderr, "trace shrank below its checked part\n");
    abort();
}
  char *buf = malloc((size_t)(size - from) + 32);
  fseek(f, from, SEEK_SET);
  size_t n = fread(buf, 1, (size_t)(size - from), f);
  fclose(f);
  buf[n] = 0;
  const char *tail = strstr(buf, "\n],\"commlensStats\":");
  long tail_off = tail ? (long)(tail - buf) : -1;
  char *doc = NULL;
  if (from == 0) doc = strdup(buf);
  else {
    const char *body = buf;
    if (*body == ',') body++;
    size_t dl = strlen(body) + 32;
    doc = malloc(dl);
    snprintf(doc, dl, "{\"traceEvents\":[%s", body);
}
  enum json_tokener_error err;
  json_object *o = json_tokener_parse_verbose(doc, &err);
  if (!o || tail_off < 0) {
    fprintf(stderr, "trace %s is not valid JSON after byte %ld (%s):\n%.2000s\n", g_trace, from,
            json_tokener_error_desc(err), doc);
    abort();
}
  json_object_put(o);
  free(doc);
  /* The next flush overwrites from this tail on; a very long run empties the checked part
   * (a hole: no disk used) so hours of fuzzing do not fill the disk. */
  g_checked = from + tail_off;
  if (g_checked > (256l << 20) && truncate(g_trace, 0) == 0) g_truncated = 1;
  free(buf);
}

#endif
