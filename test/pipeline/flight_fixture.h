/* flight_fixture.h (tests): what the flight recorder's tests share: the flight directory, waits
 * for its dumps, and reading a dump's commlensFlight object. */
#ifndef COMMLENS_TEST_FLIGHT_FIXTURE_H
#define COMMLENS_TEST_FLIGHT_FIXTURE_H
#include "harness.h"
#include "tr_load.h"
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static inline void nap_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static inline void flight_dir(char *out, size_t n) { snprintf(out, n, "%s/flight", getenv("COMMLENS_DIR")); }

/* Files in the flight directory ending in suffix (a condition waited for: the format thread
 * runs at the lowest priority and a loaded machine may take seconds). */
static inline int wait_dumps(const char *suffix, int want, char **paths, int max) {
  char dir[1200];
  flight_dir(dir, sizeof dir);
  int n = 0;
  for (int i = 0; i < 600; i++) {   /* up to 60 s */
    for (int k = 0; k < n; k++) free(paths[k]);
    n = h_find_files(dir, suffix, paths, max);
    if (n >= want) return n;
    nap_ms(100);
  }
  return n;
}

/* Collectives whose proxy work runs on the driving thread: done when the call returns. */
static const h_opts k_inline = {.same_thread_proxy = 1};

static inline void free_paths(char **p, int n) { for (int i = 0; i < n; i++) free(p[i]); }

/* commlensFlight of a dump, borrowed from t. */
static inline json_object *flight_of(tr_trace *t) { return h_json_get(t->root, "commlensFlight"); }
/* A signal dump waits until everything recorded before the signal is read, or gives up after
 * 10 s (a format thread starved on a loaded machine); records the plugin lost never come. Only
 * then may its newest records lack, and it says so (caught_up false, "missing"). */
static inline int caught_up(tr_trace *t) {
  json_object *why = h_json_get(flight_of(t), "why"), *c = h_json_get(why, "caught_up");
  if (c && !json_object_get_boolean(c))
    fprintf(stderr, "  note: the dump lacks records from before the signal: %s\n", json_object_to_json_string(why));
  return !c || json_object_get_boolean(c);
}
static inline int64_t jint(json_object *o, const char *k) {
  json_object *v = h_json_get(o, k);
  return v ? json_object_get_int64(v) : -1;
}
#endif
