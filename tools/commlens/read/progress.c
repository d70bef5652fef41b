/* progress.c: the progress line of progress.h. Readers only add to atomic counters; one
 * ticker thread redraws the line in place ('\r') at most every TICK_MS and the pass's end
 * erases it, so the line never mixes into the report or the messages that follow. Must
 * never write to stderr when it is not a terminal (pipes and log files stay clean). */
#include "tools/commlens/read/progress.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TICK_MS 250

static struct {
  _Atomic int64_t events, bytes;
  _Atomic int files_done;
  int on, nfiles, stop, width;
  double total_bytes, t0;
  const char *verb;
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
} g = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static double now_s(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* "12.3 M" style counts */
static void fmt_count(char *b, size_t n, double v) {
  if (v >= 1e9) snprintf(b, n, "%.1f G ", v / 1e9);
  else if (v >= 1e6) snprintf(b, n, "%.1f M ", v / 1e6);
  else if (v >= 1e3) snprintf(b, n, "%.1f k ", v / 1e3);
  else snprintf(b, n, "%.0f ", v);
}

static void draw(void) {
  double el = now_s() - g.t0, ev = (double)atomic_load(&g.events), by = (double)atomic_load(&g.bytes);
  int done = atomic_load(&g.files_done);
  double frac = g.total_bytes > 0 ? by / g.total_bytes : g.nfiles ? (double)done / g.nfiles : 0;
  if (frac > 0.99 && done < g.nfiles) frac = 0.99;   /* an estimate that fell short */
  char evs[16], rate[16], left[32] = "";
  fmt_count(evs, sizeof evs, ev);
  fmt_count(rate, sizeof rate, el > 0 ? ev / el : 0);
  if (frac > 0.01 && el > 0.5) {
    int s = (int)(el * (1 - frac) / frac + 0.5);
    if (s >= 60) snprintf(left, sizeof left, ", ETA %d:%02d", s / 60, s % 60);
    else snprintf(left, sizeof left, ", ETA %d s", s);
  }
  char line[160];
  int n = snprintf(line, sizeof line, "commlens: %s %d/%d files, %sevents, %sevents/s%s", g.verb, done, g.nfiles, evs,
                   rate, left);
  if (n > (int)sizeof line - 1) n = (int)sizeof line - 1;
  /* pad over what a longer previous frame left; our own text, straight to the terminal (the
   * stderr stream shows a carriage return from a file as \x0d) */
  dprintf(STDERR_FILENO, "\r%s%*s", line, g.width > n ? g.width - n : 0, "");
  if (n > g.width) g.width = n;
}

static void *ticker(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g.mu);
  while (!g.stop) {
    struct timespec t; clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += TICK_MS * 1000000L;
    if (t.tv_nsec >= 1000000000L) { t.tv_sec++; t.tv_nsec -= 1000000000L; }
    pthread_cond_timedwait(&g.cv, &g.mu, &t);
    if (!g.stop) draw();
  }
  pthread_mutex_unlock(&g.mu);
  return NULL;
}

void cl_progress_begin(const char *verb, int nfiles, double total_bytes) {
  atomic_store(&g.events, 0); atomic_store(&g.bytes, 0); atomic_store(&g.files_done, 0);
  g.on = 0;
  if (!isatty(STDERR_FILENO)) return;
  g.verb = verb; g.nfiles = nfiles; g.total_bytes = total_bytes; g.t0 = now_s(); g.stop = 0; g.width = 0;
  draw();
  g.on = pthread_create(&g.th, NULL, ticker, NULL) == 0;
  if (!g.on) dprintf(STDERR_FILENO, "\r%*s\r", g.width, "");
}

void cl_progress_end(void) {
  if (!g.on) return;
  pthread_mutex_lock(&g.mu);
  g.stop = 1;
  pthread_cond_signal(&g.cv);
  pthread_mutex_unlock(&g.mu);
  pthread_join(g.th, NULL);
  dprintf(STDERR_FILENO, "\r%*s\r", g.width, "");
  g.on = 0;
}

void cl_progress_file_done(void) { atomic_fetch_add(&g.files_done, 1); }

void cl_progress_flush(cl_progress_batch *b) {
  if (b->events) atomic_fetch_add_explicit(&g.events, b->events, memory_order_relaxed);
  if (b->bytes) atomic_fetch_add_explicit(&g.bytes, b->bytes, memory_order_relaxed);
  b->events = b->bytes = 0;
}

double cl_progress_estimate(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return 0;
  double size = (double)st.st_size;
  size_t n = strlen(path);
  if (n < 3 || strcmp(path + n - 3, ".gz") || st.st_size < 18) return size;
  /* gzip's last 4 bytes: the uncompressed size mod 2^32, little-endian */
  unsigned char t[4]; double isize = 0;
  FILE *f = fopen(path, "rb");
  if (f && fseek(f, -4, SEEK_END) == 0 && fread(t, 1, 4, f) == 4)
    isize = (double)((uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24);
  if (f) fclose(f);
  return isize >= size ? isize : size * 8;
}
