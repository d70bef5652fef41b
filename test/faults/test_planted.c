/* test_planted.c: a neighbour on a shared machine plants hard links and symlinks at the paths
 * the plugin writes (the spill file, the trace, the summaries, the Prometheus temporary) before
 * the job starts. Whatever the plant points at must stay untouched, the job's files must still
 * be written (under a fresh name where needed), and nothing of the plugin's own is left behind
 * but its outputs. Each case runs in a fresh process (the plugin reads its settings once). */
#include "harness.h"
#include "trace_read.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#define PRECIOUS "precious contents\n"

/* The host name as the plugin puts it into file names. */
static void host_in_name(char *out, size_t n) {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  size_t k = 0;
  for (const char *s = host; *s && k + 1 < n; s++)
    out[k++] = (*s == '/' || *s == ' ' || (unsigned char)*s < 0x20) ? '_' : *s;
  out[k] = 0;
}

/* A file outside the output directory (beside it: the same file system, so a hard link can
 * reach it) holding PRECIOUS. */
static void make_victim(char *out, size_t n, const char *dir) {
  snprintf(out, n, "%s.victim", dir);
  int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0 && write(fd, PRECIOUS, sizeof PRECIOUS - 1) == sizeof PRECIOUS - 1, "victim %s", out);
  close(fd);
}
/* Plants `how` ("hardlink" or "symlink") to victim at path. */
static void plant(const char *how, const char *victim, const char *path) {
  int rc = !strcmp(how, "hardlink") ? link(victim, path) : symlink(victim, path);
  REQUIRE(rc == 0, "planting a %s at %s: %s", how, path, strerror(errno));
}
static void check_victim(const char *victim) {
  size_t len = 0;
  char *s = h_read_file(victim, &len);
  CHECK(s && len == sizeof PRECIOUS - 1 && !memcmp(s, PRECIOUS, len), "%s was written through a planted link (%zu bytes)",
        victim, len);
  free(s);
  unlink(victim);
}
/* Entries of dir not ending in one of the NULL-terminated suffixes; -1 if unreadable. */
static int others_in_dir(const char *dir, const char *const *allowed, char *first, size_t n) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int k = 0;
  for (struct dirent *de; (de = readdir(d));) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    int ok = 0;
    size_t l = strlen(de->d_name);
    for (int i = 0; allowed[i] && !ok; i++) {
      size_t sl = strlen(allowed[i]);
      ok = l >= sl && !strcmp(de->d_name + l - sl, allowed[i]);
    }
    if (!ok && k++ == 0) snprintf(first, n, "%s", de->d_name);
  }
  closedir(d);
  return k;
}
/* Descriptors of this process open on a name inside dir other than the trace: a file another
 * process could open, or one a crash would leave behind. */
static int named_fds_in(const char *dir, char *first, size_t n) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return 0;
  int k = 0;
  for (struct dirent *de; (de = readdir(d));) {
    char p[300], target[2048];
    snprintf(p, sizeof p, "/proc/self/fd/%s", de->d_name);
    ssize_t l = readlink(p, target, sizeof target - 1);
    if (l <= 0) continue;
    target[l] = 0;
    if (strncmp(target, dir, strlen(dir)) || target[strlen(dir)] != '/') continue;
    if (strstr(target, " (deleted)") || strstr(target, ".trace.json")) continue;
    if (k++ == 0) snprintf(first, n, "%s", target);
  }
  closedir(d);
  return k;
}

/* ---- the spill file: 4 threads of 50,000 proxy steps into an 8 MiB budget --------------- */
static h_plugin g_p;
static void *ctx0;
typedef struct { int idx; h_counts c; } burst_t;
static void *burst(void *arg) {
  burst_t *b = arg;
  for (int i = 0; i < 50; i++) {         /* one channel, a send and a receive op: 1,000 steps each */
    h_drive_coll(&g_p, ctx0, &(h_opts){.nchannels = 1, .network = 1, .nsteps = 500, .same_thread_proxy = 1},
                 (uint64_t)b->idx << 20 | (uint64_t)i, &b->c);
    usleep(2000);                         /* room for the drain on a small machine: the rings */
  }                                       /* empty into staging, the formatter lags */
  return NULL;
}
H_CHILD(spill_planted) {
  const char *dir = getenv("COMMLENS_DIR"), *how = getenv("PLANT");
  char victim[600], old[1200], host[200];
  make_victim(victim, sizeof victim, dir);
  host_in_name(host, sizeof host);
  snprintf(old, sizeof old, "%s/commlens-%s-%d.spill", dir, host, (int)getpid());   /* the old name */
  plant(how, victim, old);
  REQUIRE(h_open(&g_p, NULL, 5) == 0, "load");
  h_comm_info info = {0x5EED, "spill", 1, 1, 0};
  REQUIRE(h_init(&g_p, &ctx0, &info) == 0, "init");
  pthread_t t[4];
  static burst_t b[4];
  for (int i = 0; i < 4; i++) { b[i].idx = i; pthread_create(&t[i], NULL, burst, &b[i]); }
  long steps = 0;
  for (int i = 0; i < 4; i++) { pthread_join(t[i], NULL); steps += b[i].c.started[4]; }
  char named[2048] = "";
  int nfd = named_fds_in(dir, named, sizeof named);
  CHECK(nfd == 0, "%d open files with a name in the output directory (a crash now leaves them): %s", nfd, named);
  h_finalize(&g_p, ctx0);
  h_close(&g_p);
  CHECK(h_bad_rc == 0, "%d calls failed", h_bad_rc);
  check_victim(victim);
  struct stat st;
  CHECK(lstat(old, &st) == 0 && (!strcmp(how, "symlink") ? S_ISLNK(st.st_mode) : st.st_nlink == 1),
        "the planted %s was replaced or removed", how);
  unlink(old);
  char other[512] = "";
  int left = others_in_dir(dir, (const char *const[]){".trace.json", NULL}, other, sizeof other);
  CHECK(left == 0, "%d files left in the output directory besides the trace: %s", left, other);
  tr_trace tr;
  if (h_load_one_trace(dir, &tr, NULL, 0)) return;
  int64_t spilled = -1, dropped = -1;
  tr_stats_i64(&tr, "spilled", &spilled);
  tr_stats_i64(&tr, "dropped", &dropped);
  CHECK(spilled > 0, "the burst never reached the spill file (spilled %lld)", (long long)spilled);
  size_t got = tr_count(&tr, 'X', "proxy_step");
  /* Complete, or every missing step counted: a loaded machine can starve the drain while four
   * threads fill 512 KiB rings, and a dropped step loses at least one record. */
  CHECK((long)got <= steps && (long)got + dropped >= steps && (dropped > 0 || (long)got == steps),
        "proxy steps: %zu in the trace of %ld driven, %lld records dropped", got, steps, (long long)dropped);
  tr_free(&tr);
}

/* ---- the parent side ------------------------------------------------------------------ */
static void run_case(const char *name, const char *const *extra) {
  h_run_case(name, (const char *const[]){"COMMLENS_CUPTI=0", NULL}, extra, NULL);
}
#define SPILL_ENV "COMMLENS_EVENTS=full", "COMMLENS_BUFFER_MB=8", "COMMLENS_RING_KB=512"

TL_TEST(spill_file_never_opens_a_planted_hard_link) {
  run_case("spill_planted", (const char *const[]){SPILL_ENV, "PLANT=hardlink", NULL});
}
TL_TEST(spill_file_never_opens_a_planted_symlink) {
  run_case("spill_planted", (const char *const[]){SPILL_ENV, "PLANT=symlink", NULL});
}

H_MAIN("faults/planted")
