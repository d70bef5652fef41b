/* test_prom_textfile.c: COMMLENS_PROM's files as node_exporter's textfile collector serves them.
 * Rank processes drive the plugin with COMMLENS_PROM_S=1 into one directory:
 * - two processes of one rank at once: their files share no series (a process's own label);
 * - a rank killed (SIGKILL) and started again: the new process removes the file its predecessor
 *   left, so the dead one's metrics are not served as if live;
 * - a finished job: no file is left.
 * The files themselves are checked here always; in the plain build, where Debian's
 * prometheus-node-exporter is installed (mk/prometheus_node.mk), a real node_exporter serves the
 * directory on loopback through each case: `node_textfile_scrape_error 0`, no gathering error in its counters or its log, and
 * exactly the live processes' series. */
#include "harness.h"
#include "prom_server.h"
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A rank: collectives every 20 ms until $H_STOP exists (at most 120 s), then a clean exit. */
H_CHILD(prom_rank) {
  const char *stop = getenv("H_STOP");
  h_plugin p;
  void *ctx;
  h_open_init(&p, 5, &ctx);
  uint64_t end = h_monotonic_ns() + 120000000000ull;
  for (uint64_t k = 0; h_monotonic_ns() < end && access(stop, F_OK) != 0; k++) {
    h_drive_coll(&p, ctx, NULL, k, NULL);
    usleep(20000);
  }
  h_finalize(&p, ctx);
  h_close(&p);
}

typedef struct { char dir[256], prom[300], stop[300]; ps_server ne; int served; } tf_case;

static void tf_begin(tf_case *c) {
  memset(c, 0, sizeof *c);
  h_fresh_dir(c->dir, sizeof c->dir);
  snprintf(c->prom, sizeof c->prom, "%s/metrics", c->dir);
  snprintf(c->stop, sizeof c->stop, "%s/stop", c->dir);
  mkdir(c->prom, 0755);
  snprintf(c->ne.dir, sizeof c->ne.dir, "%s", c->dir);
  const char *san = getenv("COMMLENS_SANITIZED");
  if (san && *san) {   /* as test_prom_live: the served checks in the plain build, the files in every one */
    static int said;
    if (!said++) fprintf(stderr, "  note: node_exporter serves the files in the plain build, not under %s\n", san);
    return;
  }
  if (!ps_node_exporter()) {
    static int said;
    if (!said++) fprintf(stderr, "  note: no node_exporter (Debian prometheus-node-exporter; make test tries to install it "
                                 "once: BUILD/node-exporter-apt.log): the files are checked, not served\n");
    return;
  }
  c->served = ps_node_start(&c->ne, c->prom, 600) == 0;
  CHECK(c->served, "node_exporter did not start");
}
static void tf_end(tf_case *c) {
  if (c->served) ps_stop(&c->ne);
  if (!tl_cur_failed) h_rm_rf(c->dir);
  else fprintf(stderr, "  kept %s\n", c->dir);
}
static pid_t tf_rank(tf_case *c, int rank) {
  char kd[400], kp[400], ks[400], kr[32];
  snprintf(kd, sizeof kd, "COMMLENS_DIR=%s/traces", c->dir);
  snprintf(kp, sizeof kp, "COMMLENS_PROM=%s", c->prom);
  snprintf(ks, sizeof ks, "H_STOP=%s", c->stop);
  snprintf(kr, sizeof kr, "RANK=%d", rank);
  const char *env[] = {kd, kp, ks, kr, "COMMLENS_PROM_S=1", "COMMLENS_JOB=job42", "COMMLENS_SUMMARY=off",
                       "COMMLENS_CUPTI=0", NULL};
  return h_spawn_bg("prom_rank", env);
}

/* The .prom files of the directory (names into names[], at most 8); their count. */
static int prom_files(const tf_case *c, char names[][256]) {
  DIR *d = opendir(c->prom);
  int n = 0;
  for (struct dirent *de; d && (de = readdir(d));) {
    size_t l = strlen(de->d_name);
    if (l > 5 && !strcmp(de->d_name + l - 5, ".prom") && n < 8) snprintf(names[n++], 256, "%s", de->d_name);
  }
  if (d) closedir(d);
  return n;
}
/* Waits (up to 60 s) until the directory holds exactly the files of the processes in pids[0..n)
 * (their names end in -<pid>.prom, one GPU-less rank each) and no other. 1 when it does. */
static int wait_files_of(const tf_case *c, const pid_t *pids, int n) {
  for (int tries = 0; tries < 600; tries++) {
    char names[8][256];
    int k = prom_files(c, names), match = 0;
    for (int i = 0; i < k; i++)
      for (int j = 0; j < n; j++) {
        char tail[32];
        snprintf(tail, sizeof tail, "-%d.prom", (int)pids[j]);
        size_t l = strlen(names[i]), t = strlen(tail);
        match += l > t && !strcmp(names[i] + l - t, tail);
      }
    if (k == n && match == n) return 1;
    usleep(100000);
  }
  return 0;
}

/* The series of an exposition (each sample line up to its value) into out (at most max);
 * their count. Comments, blank lines and node_exporter's own families are left out. */
static int series_of(const char *text, char out[][512], int max) {
  int n = 0;
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    const char *e = strchr(l, '\n');
    size_t len = e ? (size_t)(e - l) : strlen(l);
    if (!len || *l == '#' || strncmp(l, "commlens_", 9)) continue;
    const char *sp = memrchr(l, ' ', len);
    if (sp && n < max) snprintf(out[n++], 512, "%.*s", (int)(sp - l), l);
  }
  return n;
}
static int series_count(const char *text, const char *prefix) {
  static char s[4096][512];
  int n = series_of(text, s, 4096), k = 0;
  for (int i = 0; i < n; i++) k += !strncmp(s[i], prefix, strlen(prefix));
  return k;
}
/* No series twice in text (the union node_exporter would serve). */
static int duplicated_series(const char *text) {
  static char s[4096][512];
  int n = series_of(text, s, 4096), dup = 0;
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) dup += !strcmp(s[i], s[j]);
  return dup;
}
static char *all_files(const tf_case *c) {
  char names[8][256], *all = calloc(1, 1);
  size_t len = 0;
  int n = prom_files(c, names);
  for (int i = 0; i < n; i++) {
    char path[600];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", c->prom, names[i]) >= sizeof path) continue;
    size_t l = 0;
    char *t = h_read_file(path, &l);
    if (!t) continue;
    all = realloc(all, len + l + 2);
    memcpy(all + len, t, l);
    len += l;
    all[len++] = '\n';
    all[len] = 0;
    free(t);
  }
  return all;
}
static double metric(const char *text, const char *series) {
  const char *p = strstr(text, series);
  return p ? strtod(p + strlen(series), NULL) : -1;
}
/* node_exporter serves the directory without error, `live` processes' series (one
 * commlens_records_total each) and nothing twice. Two scrapes: the second sees the first's
 * gathering errors, if any. */
static void served_cleanly(tf_case *c, int live, const char *when) {
  if (!c->served) return;
  char *m = ps_node_metrics(&c->ne);
  free(m);
  usleep(300000);
  m = ps_node_metrics(&c->ne);
  REQUIRE(m, "%s: node_exporter's /metrics did not answer", when);
  CHECK(metric(m, "\nnode_textfile_scrape_error ") == 0, "%s: node_textfile_scrape_error is not 0", when);
  CHECK(metric(m, "\npromhttp_metric_handler_errors_total{cause=\"gathering\"} ") == 0, "%s: gathering errors", when);
  CHECK(series_count(m, "commlens_records_total{") == live && !duplicated_series(m),
        "%s: %d commlens_records_total series served (want %d), %d duplicated", when,
        series_count(m, "commlens_records_total{"), live, duplicated_series(m));
  char logp[700];
  snprintf(logp, sizeof logp, "%s/node_exporter.log", c->dir);
  char *log = h_read_file(logp, NULL);
  CHECK(!log || !strstr(log, "collected before"), "%s: node_exporter's log says: %.800s", when, log);
  free(log);
  free(m);
}
static void stop_all(tf_case *c, const pid_t *pids, int n) {
  FILE *f = fopen(c->stop, "w");
  if (f) fclose(f);
  for (int i = 0; i < n; i++) {
    int st = 0;
    CHECK(h_wait_pid(pids[i], 180, &st) == 0 && WIFEXITED(st) && !WEXITSTATUS(st), "rank process %d: status %#x",
          (int)pids[i], st);
  }
}

/* Two processes of rank 0 of job42 at once (a launcher that gave two the same RANK): each has
 * its own series (before, both wrote commlens_records_total{rank="0",...,job="job42"} and the
 * collector dropped one as a duplicate); once they finish, nothing is left to serve. */
TL_TEST(two_processes_of_one_rank_have_their_own_series) {
  tf_case c;
  tf_begin(&c);
  pid_t pids[2] = {tf_rank(&c, 0), tf_rank(&c, 0)};
  REQUIRE(pids[0] > 0 && pids[1] > 0, "spawn");
  CHECK(wait_files_of(&c, pids, 2), "the two processes' files did not appear");
  char *all = all_files(&c);
  CHECK(duplicated_series(all) == 0 && series_count(all, "commlens_records_total{") == 2,
        "the two files share %d series:\n%.3000s", duplicated_series(all), all);
  free(all);
  served_cleanly(&c, 2, "two live processes of rank 0");
  stop_all(&c, pids, 2);
  char names[8][256];
  int left = prom_files(&c, names);
  CHECK(left == 0, "%d metrics file(s) left by finished processes (%s)", left, left ? names[0] : "");
  served_cleanly(&c, 0, "the job finished");
  tf_end(&c);
}

/* Rank 0 killed with SIGKILL leaves its file; the rank started again removes it at its first
 * write, so only the live process is served. */
TL_TEST(a_restarted_rank_removes_the_file_of_the_killed_one) {
  tf_case c;
  tf_begin(&c);
  pid_t a = tf_rank(&c, 0);
  REQUIRE(a > 0, "spawn");
  CHECK(wait_files_of(&c, &a, 1), "the first process's file did not appear");
  kill(a, SIGKILL);
  int st;
  waitpid(a, &st, 0);
  CHECK(wait_files_of(&c, &a, 1), "the killed process's file is gone before a restart");
  pid_t b = tf_rank(&c, 0);
  REQUIRE(b > 0, "spawn");
  CHECK(wait_files_of(&c, &b, 1), "the restarted process did not replace the killed one's file");
  served_cleanly(&c, 1, "after the restart");
  stop_all(&c, &b, 1);
  char names[8][256];
  CHECK(prom_files(&c, names) == 0, "a metrics file is left after the restarted process finished");
  tf_end(&c);
}

H_MAIN("exporters/prom_textfile")
