/* fuzz_gz.c: libFuzzer target over the CLI's gzip trace reading: the input is the bytes of a
 * `*.trace.json.gz`, read by cl_trace_scan (header pass and full pass) as report and merge
 * read it. Oracle, besides the sanitizers: where an independent inflate (zlib, member after
 * member) finds the file intact, the reader must deliver exactly the events a plain copy of
 * the decompressed text yields; where it finds damage, at least the events complete in what
 * zlib decoded before it. */
#include "tools/commlens/read/trace_read.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static char g_gz[300], g_plain[300];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  char dir[256];
  snprintf(dir, sizeof dir, "%s/commlens-fuzzgz-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) { perror("mkdtemp"); exit(1); }
  snprintf(g_gz, sizeof g_gz, "%s/r0.trace.json.gz", dir);
  snprintf(g_plain, sizeof g_plain, "%s/r0.trace.json", dir);
  return 0;
}

/* Inflates every member of [d, d+n) into *out, up to the first damage (with what zlib had
 * decoded of the damaged member); 1 if all of it is whole gzip members. */
static int inflate_all(const uint8_t *d, size_t n, uint8_t **out, size_t *outn) {
  size_t cap = 1 << 16, len = 0;
  uint8_t *o = malloc(cap);
  int ok = 1;
  z_stream z; memset(&z, 0, sizeof z);
  inflateInit2(&z, 15 + 16);
  z.next_in = (Bytef *)d; z.avail_in = (uInt)n;
  while (z.avail_in && ok) {
    inflateReset(&z);
    int rc;
    do {
      if (cap - len < 4096) o = realloc(o, cap *= 2);
      z.next_out = o + len; z.avail_out = (uInt)(cap - len);
      rc = inflate(&z, Z_NO_FLUSH);
      len = cap - z.avail_out;
      if (len > (64u << 20)) rc = Z_MEM_ERROR;   /* a bomb: not this oracle's business */
    } while (rc == Z_OK);
    if (rc != Z_STREAM_END) ok = 0;
  }
  inflateEnd(&z);
  *out = o; *outn = len;
  return ok;
}

static void count_ev(const cl_ev *ev, void *arg) { (void)ev; (*(int64_t *)arg)++; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FILE *f = fopen(g_gz, "wb");
  if (!f) abort();
  fwrite(data, 1, size, f);
  fclose(f);
  cl_info hi, gi;
  cl_trace_scan(g_gz, NULL, NULL, &hi, 1);
  cl_info_free(&hi);
  int64_t n_gz = 0;
  cl_trace_scan(g_gz, count_ev, &n_gz, &gi, 0);
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
    uint8_t *t; size_t tn;
    int whole = inflate_all(data, size, &t, &tn);
    if (!(tn >= 2 && t[0] == 0x1f && t[1] == 0x8b)) {   /* (a gzip inside would be read again) */
      f = fopen(g_plain, "wb");
      if (!f) abort();
      fwrite(t, 1, tn, f);
      fclose(f);
      cl_info pi; int64_t n_plain = 0;
      cl_trace_scan(g_plain, count_ev, &n_plain, &pi, 0);
      /* intact: the same events; damaged: at least those complete before the damage */
      if (whole ? n_plain != n_gz || pi.has_header != gi.has_header : n_gz < n_plain || (pi.has_header && !gi.has_header)) {
        fprintf(stderr, "gzip (%s) read %lld events (header %d), its text %lld (header %d)\n", whole ? "whole" : "damaged",
                (long long)n_gz, gi.has_header, (long long)n_plain, pi.has_header);
        abort();
      }
      cl_info_free(&pi);
      unlink(g_plain);
    }
    free(t);
  }
  cl_info_free(&gi);
  unlink(g_gz);
  return 0;
}
