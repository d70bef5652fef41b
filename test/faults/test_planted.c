/* test_planted.c: a neighbour on a shared machine plants hard links and symlinks at the paths
 * the plugin writes (the spill file, the trace, the summaries, the Prometheus temporary) before
 * the job starts. Whatever the plant points at must stay untouched, the job's files must still
 * be written (under a fresh name where needed), and nothing of the plugin's own is left behind
 * but its outputs. Each case runs in a fresh process (the plugin reads its settings once). */
#include "harness.h"
#include "tr_load.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#define PRECIOUS "precious contents\n"


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
/* Descriptors of this process open on a file inside dir: with `unnamed` 0, those on a name
 * other than the trace (a file another process could open, or one a crash would leave
 * behind); with 1, those on an unnamed file (the spill file: O_TMPFILE, or a name unlinked at
 * once). `first` gets the first one's path. */
static int fds_in(const char *dir, int unnamed, char *first, size_t n) {
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
    if (!strstr(target, " (deleted)") != !unnamed || (!unnamed && strstr(target, ".trace.json"))) continue;
    if (k++ == 0 && first) snprintf(first, n, "%s", target);
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
  /* 50 collectives of one channel, a send and a receive op: 1,000 steps each (10 under the
   * sanitizers, whose slower formatter spills as well: a child has 60 s) */
  int n = getenv("COMMLENS_SANITIZED") && *getenv("COMMLENS_SANITIZED") ? 10 : 50;
  for (int i = 0; i < n; i++) {
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
  h_host_in_name(host, sizeof host);
  snprintf(old, sizeof old, "%s/commlens-%s-%d.spill", dir, host, (int)getpid());   /* the old name */
  plant(how, victim, old);
  REQUIRE(h_open(&g_p, NULL, 5) == 0, "load");
  h_comm_info info = {0x5EED, "spill", 1, 1, 0};
  REQUIRE(h_init(&g_p, &ctx0, &info) == 0, "init");
  pthread_t t[4];
  static burst_t b[4];
  long steps = 0;
  /* Bursts until the spill file is open (at most 6): the formatter lags on a busy machine too,
   * but one whose drain was starved as well dropped records at the rings instead. */
  for (int round = 0; round < 6 && !fds_in(dir, 1, NULL, 0); round++) {
    for (int i = 0; i < 4; i++) {
      memset(&b[i], 0, sizeof b[i]);
      b[i].idx = round * 4 + i;
      pthread_create(&t[i], NULL, burst, &b[i]);
    }
    for (int i = 0; i < 4; i++) { pthread_join(t[i], NULL); steps += b[i].c.started[4]; }
  }
  char named[2048] = "";
  int nfd = fds_in(dir, 0, named, sizeof named);
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

/* ---- the trace, the summaries, the ABI recording --------------------------------------- */
static const char *const g_outputs[] = {".trace.json", ".summary.txt", ".summary.json", ".rec.gz"};
enum { NOUT = sizeof g_outputs / sizeof g_outputs[0] };
/* Plants a symlink at the trace's and summary.json's names and a hard link at the summary's
 * and the recording's (rank 0 of this process), all to one victim; runs a short job. The
 * summaries are written at exit: the parent checks them. */
H_CHILD(outputs_planted) {
  const char *dir = getenv("COMMLENS_DIR");
  char victim[600], host[200];
  make_victim(victim, sizeof victim, dir);
  h_host_in_name(host, sizeof host);
  for (int i = 0; i < NOUT; i++) {
    char at[1200];
    if (i == 3) snprintf(at, sizeof at, "%s/commlens-r0-%d%s", dir, (int)getpid(), g_outputs[i]);
    else snprintf(at, sizeof at, "%s/commlens-r0-%s-%d%s", dir, host, (int)getpid(), g_outputs[i]);
    plant(i == 0 || i == 2 ? "symlink" : "hardlink", victim, at);
  }
  h_short_job(5, NULL);
  CHECK(h_bad_rc == 0, "%d calls failed", h_bad_rc);
  CHECK(h_log_count(CLABI_LOG_WARN, "writing the trace to") == 1, "want one warning naming the fresh trace; log:\n%s",
        h_log_text());
}
/* Files of dir ending in suffix that are the plugin's own: regular, one link, not the victim. */
static int own_files(const char *dir, const char *suffix, char *first, size_t n) {
  char *paths[8];
  int k = h_find_files(dir, suffix, paths, 8), own = 0;
  for (int i = 0; i < k; i++) {
    struct stat st;
    if (lstat(paths[i], &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 && own++ == 0) snprintf(first, n, "%s", paths[i]);
    free(paths[i]);
  }
  return own;
}
TL_TEST(planted_links_at_every_output_name_are_never_opened) {
  char dir[256], kv[300], victim[300];
  h_fresh_dir(dir, sizeof dir);
  snprintf(kv, sizeof kv, "COMMLENS_DIR=%s", dir);
  char rec[320];
  snprintf(rec, sizeof rec, "COMMLENS_RECORD=%s", dir);
  int rc = h_spawn("outputs_planted", (const char *const[]){kv, rec, "RANK=0", "COMMLENS_CUPTI=0", "COMMLENS_SUMMARY=file", NULL});
  CHECK(rc == 0, "outputs_planted exited %d (dir %s)", rc, dir);
  snprintf(victim, sizeof victim, "%s.victim", dir);
  check_victim(victim);
  for (int i = 0; i < NOUT; i++) {
    char first[1200] = "";
    int n = own_files(dir, g_outputs[i], first, sizeof first);
    CHECK(n == 1, "%d files of the plugin's own ending in %s, want 1 under a fresh name", n, g_outputs[i]);
    struct stat st;
    CHECK(n != 1 || (stat(first, &st) == 0 && (st.st_mode & 07777) == 0644 && st.st_size > 0), "%s: mode %o, %lld bytes",
          first, st.st_mode & 07777, (long long)st.st_size);
    if (i == 0 && n == 1) {
      tr_trace t;
      char err[256];
      int lr = tr_load(&t, first, err, sizeof err);
      CHECK(lr == 0, "%s: %s", first, err);
      if (lr == 0) { CHECK(tr_count(&t, 'X', "coll") == 5, "coll %zu", tr_count(&t, 'X', "coll")); tr_free(&t); }
    }
  }
  if (!tl_cur_failed) h_rm_rf(dir);
  else fprintf(stderr, "  kept %s\n", dir);
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
