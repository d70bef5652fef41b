/* test_faults.c: fault injection. Each case runs in a fresh process (configuration is read at
 * a process's first init) and drives the exported symbols as NCCL does while something goes
 * wrong around it: the output directory is missing, read-only or full; the process is killed
 * mid-run; it forks; CUPTI is missing; communicators churn; the library is reloaded; a
 * communicator is aborted mid-collective; the trace path is a planted symlink; two processes
 * share a rank; the host name is hostile. The job's calls must always succeed, problems are
 * reported once through the logger, and whatever is on disk parses as JSON. Mount and host
 * name cases use private namespaces (root); where the kernel refuses, they say so and skip. */
#include "harness.h"
#include "tools/commlens/read/digest_read.h"
#include "tr_load.h"
/* The CLI's own streaming reader: what `commlens report` and `merge` make of a torn file. */
#include "tools/commlens/read/trace_read.h"
#include "tools/commlens/base/util.h"
#include "common/utf8.h"
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <zlib.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- helpers for children ---------------------------------------------------------- */

static int64_t stat_of(const tr_trace *t, const char *key) {
  int64_t v = -1;
  CHECK(tr_stats_i64(t, key, &v) == 0, "commlensStats.%s missing", key);
  return v;
}
/* A private mount namespace with a tmpfs at dir ("ro" or a size). 0 on success. */
static int private_tmpfs(const char *dir, unsigned long flags, const char *opts) {
  if (unshare(CLONE_NEWNS) != 0) { fprintf(stderr, "  skip: unshare(CLONE_NEWNS): %s\n", strerror(errno)); return -1; }
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
      mount("tmpfs", dir, "tmpfs", flags, opts) != 0) {
    fprintf(stderr, "  skip: mount tmpfs (%s): %s\n", opts, strerror(errno));
    return -1;
  }
  return 0;
}
static int count_warn(void) { return h_log_count(CLABI_LOG_WARN, NULL); }
/* The same, less the rings' budget warning: a case that starts a proxy thread a collective
 * leaves the drain a ring to free for each, and a loaded machine that starves the nice-19
 * writer holds them all (seen in CI, ASan beside the plain and TSan groups: 23 threads'
 * rings, 2 runs in 8 at 35a43aa and after). That warning is true, and not the one asked about. */
static int count_warn_but_budget(void) {
  return h_log_count(CLABI_LOG_WARN, NULL) - h_log_count(CLABI_LOG_WARN, "buffer budget exhausted");
}

/* ---- output directory missing: created (0755), trace 0644 ---------------------------- */
H_CHILD(missing_dir) {
  umask(022);
  const char *dir = getenv("COMMLENS_DIR");   /* <fresh>/a/b/c: does not exist yet */
  h_short_job(3, NULL);
  struct stat st;
  REQUIRE(stat(dir, &st) == 0 && S_ISDIR(st.st_mode), "%s was not created", dir);
  CHECK((st.st_mode & 07777) == 0755, "directory mode %o, want 755", st.st_mode & 07777);
  tr_trace t;
  char path[1024];
  if (h_load_one_trace(dir, &t, path, sizeof path)) return;
  CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0644, "trace mode %o, want 644", st.st_mode & 07777);
  CHECK(tr_count(&t, 'X', "coll") == 3, "coll %zu", tr_count(&t, 'X', "coll"));
  CHECK(count_warn() == 0, "warnings: %s", h_log_text());
  tr_free(&t);
}

/* ---- read-only file system ----------------------------------------------------------- */
H_CHILD(readonly_fs) {
  const char *dir = getenv("COMMLENS_DIR");
  if (private_tmpfs(dir, MS_RDONLY, "size=1m")) return;    /* skipped, reason printed */
  char sub[600];
  snprintf(sub, sizeof sub, "%s/traces", dir);
  setenv("COMMLENS_DIR", sub, 1);
  for (int cycle = 0; cycle < 2; cycle++) h_short_job(3, &(h_opts){.network = 1});
  CHECK(h_bad_rc == 0, "%d calls did not return ncclSuccess", h_bad_rc);
  CHECK(count_warn() == 1 && h_log_count(CLABI_LOG_WARN, "Read-only") == 1,
        "want one warning saying read-only; log:\n%s", h_log_text());
}

/* The collectives in dir's one trace once it holds at least one, polled up to ms; -1 if none
 * came. Each flush leaves the file whole JSON (trace_file.c), so a read between flushes parses. */
static long colls_on_disk_within(const char *dir, int ms) {
  for (int waited = 0; waited < ms; waited += 10) {
    char *paths[2], err[256];
    int n = h_find_traces(dir, paths, 2);
    long k = -1;
    tr_trace t;
    if (n == 1 && tr_load(&t, paths[0], err, sizeof err) == 0) {
      k = (long)tr_count(&t, 'X', "coll");
      tr_free(&t);
    }
    for (int i = 0; i < n; i++) free(paths[i]);
    if (k > 0) return k;
    usleep(10000);
  }
  return -1;
}

/* ---- full file system: one warning, calls succeed, the file stays valid JSON -------- */
H_CHILD(full_fs) {
  const char *dir = getenv("COMMLENS_DIR");
  if (private_tmpfs(dir, 0, "size=64k")) return;
  h_plugin p;
  void *ctx;
  h_open_init(&p, 5, &ctx);
  h_counts c;
  memset(&c, 0, sizeof c);
  long before = -1;   /* collectives on disk before the disk filled */
  for (int i = 0; i < 400; i++) {             /* ~200 KB of JSON into 64 KiB, flushed every 10 ms */
    h_drive_coll(&p, ctx, &(h_opts){.network = 1, .nsteps = 2}, (uint64_t)i, &c);
    /* wait for some collectives on disk before the disk fills; a loaded machine starves the
     * nice-19 formatter (seen: no flush within 40 s under ASan beside two busy loops), and then
     * the first flush meets the full disk: the case of output_fs_full_at_the_first_flush */
    if (i == 19) before = colls_on_disk_within(dir, 15000);
    if (i % 20 == 0) usleep(15000);
  }
  h_finalize(&p, ctx);
  h_close(&p);
  CHECK(h_bad_rc == 0, "%d calls did not return ncclSuccess", h_bad_rc);
  CHECK(count_warn_but_budget() == 1 && h_log_count(CLABI_LOG_WARN, "No space") == 1,
        "want one warning saying no space; log:\n%s", h_log_text());
  char *paths[4];
  int n = h_find_traces(dir, paths, 4);
  REQUIRE(n == 1, "%d traces", n);
  tr_trace t;
  char err[1024];
  int rc = tr_load(&t, paths[0], err, sizeof err);
  CHECK(rc == 0, "after the disk filled: %s", err);
  if (rc == 0) {
    long after = (long)tr_count(&t, 'X', "coll");
    if (before > 0) CHECK(after >= before, "%ld collectives were on disk before it filled, %ld after", before, after);
    else fprintf(stderr, "  no collective on disk in 15 s (a starved formatter): the disk filled at the first flush\n");
    tr_free(&t);
  }
  free(paths[0]);
}

/* Fills `pages` pages of 4 KiB of dir's file system with a file; 0, or -1. */
static int fill(const char *dir, int pages) {
  char filler[1200];
  snprintf(filler, sizeof filler, "%s/filler", dir);
  FILE *f = fopen(filler, "w");
  if (!f) return -1;
  static char page[4096];
  int ok = 1;
  for (int i = 0; i < pages; i++) ok &= fwrite(page, 1, sizeof page, f) == sizeof page;
  return fclose(f) == 0 && ok ? 0 : -1;
}

/* The digest (COMMLENS_OUTPUT=digest) on a file system that fills: one warning, every call
 * succeeds, and the digest keeps its whole blocks (a cut last block is a truncated file). */
H_CHILD(full_fs_digest) {
  const char *dir = getenv("COMMLENS_DIR");
  if (private_tmpfs(dir, 0, "size=64k")) return;
  REQUIRE(fill(dir, 15) == 0, "filler");   /* 60 of 64 KiB */
  h_plugin p;
  void *ctx;
  h_open_init(&p, 5, &ctx);
  h_counts c;
  memset(&c, 0, sizeof c);
  for (int i = 0; i < 4000; i++) {            /* tens of KB of digest into the 4 KiB left */
    h_drive_coll(&p, ctx, &(h_opts){.network = 1, .nsteps = 2, .same_thread_proxy = 1}, (uint64_t)i, &c);
    if (i % 50 == 0) usleep(2000);            /* the rings never fill: every collective is a row */
  }
  h_finalize(&p, ctx);
  h_close(&p);
  CHECK(h_bad_rc == 0, "%d calls did not return ncclSuccess", h_bad_rc);
  CHECK(count_warn() == 1 && h_log_count(CLABI_LOG_WARN, "No space") == 1 && h_log_count(CLABI_LOG_WARN, "digest") == 1,
        "want one warning saying no space for the digest; log:\n%s", h_log_text());
  char *paths[4];
  int n = h_find_files(dir, ".digest", paths, 4);
  REQUIRE(n == 1, "%d digests", n);
  cl_info info;
  CHECK(cl_digest_scan(paths[0], NULL, NULL, &info, 0) == 0 && !info.bad && info.rank >= 0,
        "after the disk filled: %s", info.msg);
  cl_info_free(&info);
  free(paths[0]);
}

/* The disk is already nearly full at the first flush, and that flush is big (a loaded machine
 * flushes late): the header goes out alone first, so the trace is valid JSON with no events. */
H_CHILD(full_fs_first_flush) {
  const char *dir = getenv("COMMLENS_DIR");
  if (private_tmpfs(dir, 0, "size=64k")) return;
  REQUIRE(fill(dir, 14) == 0, "filler");   /* 56 of 64 KiB */
  h_plugin p;
  void *ctx;
  h_open_init(&p, 5, &ctx);
  h_counts c;
  memset(&c, 0, sizeof c);
  for (int i = 0; i < 200; i++) h_drive_coll(&p, ctx, &(h_opts){.network = 1, .nsteps = 2}, (uint64_t)i, &c);
  h_finalize(&p, ctx);
  h_close(&p);
  CHECK(h_bad_rc == 0, "%d calls did not return ncclSuccess", h_bad_rc);
  CHECK(h_log_count(CLABI_LOG_WARN, "No space") == 1, "want one warning saying no space; log:\n%s", h_log_text());
  tr_trace t;
  if (h_load_one_trace(dir, &t, NULL, 0) == 0) tr_free(&t);
}

/* ---- killed while events flow ------------------------------------------------------------ */
/* Drives one collective per millisecond until killed, publishing the count it reached. */
H_CHILD(flow_until_killed) {
  h_plugin p;
  void *ctx;
  h_open_init(&p, 5, &ctx);
  char prog[600];
  snprintf(prog, sizeof prog, "%s/progress", getenv("FAULT_STATE_DIR"));
  int fd = open(prog, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  for (uint64_t i = 0;; i++) {
    h_drive_coll(&p, ctx, &(h_opts){.nchannels = 1, .same_thread_proxy = 1}, i, NULL);
    char b[32];
    int n = snprintf(b, sizeof b, "%-20llu\n", (unsigned long long)(i + 1));
    if (pwrite(fd, b, (size_t)n, 0) < 0) {}
    usleep(1000);
  }
}

/* fork + exec of this program's child case, without waiting (h_spawn waits). */
static pid_t spawn_async(const char *name, const char *const *env) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid != 0) return pid;
  for (int i = 0; env && env[i]; i++) {
    char kv[4096];
    snprintf(kv, sizeof kv, "%s", env[i]);
    char *eq = strchr(kv, '=');
    if (!eq) continue;
    *eq = 0;
    setenv(kv, eq + 1, 1);
  }
  char *argv[] = {"/proc/self/exe", "--child", (char *)name, NULL};
  execv("/proc/self/exe", argv);
  _exit(127);
}

static void count_colls(const cl_ev *ev, void *arg) {
  if (ev->ph == 'X' && ev->cat == CAT_COLL) ++*(long *)arg;
}
/* Collectives in dir's one trace as the CLI reads a file being written (to its last complete
 * event); 0 when there is none yet. */
static long colls_on_disk(const char *dir) {
  char *p[2];
  long n = 0;
  int np = h_find_traces(dir, p, 2);
  if (np == 1) {
    cl_info info;
    memset(&info, 0, sizeof info);
    if (cl_trace_scan(p[0], count_colls, &n, &info, 0) != 0) n = 0;
    cl_info_free(&info);
  }
  for (int i = 0; i < np; i++) free(p[i]);
  return n;
}
static void kill_case(int sig, unsigned seed) {
  char dir[256], st[300], kv1[300], kv2[340];
  h_fresh_dir(dir, sizeof dir);
  snprintf(st, sizeof st, "%s.state", dir);
  mkdir(st, 0755);
  snprintf(kv1, sizeof kv1, "COMMLENS_DIR=%s", dir);
  snprintf(kv2, sizeof kv2, "FAULT_STATE_DIR=%s", st);
  const char *env[] = {kv1, kv2, "COMMLENS_SUMMARY=off", NULL};
  srand(seed);
  for (int round = 0; round < 3; round++) {
    char *old[8];
    int no = h_find_traces(dir, old, 8);
    for (int i = 0; i < no; i++) { unlink(old[i]); free(old[i]); }
    pid_t pid = spawn_async("flow_until_killed", env);
    REQUIRE(pid > 0, "fork");
    /* Killed only once the trace has been flushed at least once (a condition, not a guess: on
     * a loaded machine the low-priority writer can take seconds to get there), then after a
     * further "random" but repeatable delay, while events keep flowing. */
    long before = 0;
    for (int i = 0; i < 1200 && (before = colls_on_disk(dir)) == 0; i++) usleep(50000);
    int delay_ms = 400 + rand() % 900;
    usleep((useconds_t)delay_ms * 1000);
    before = colls_on_disk(dir);   /* what the kill must leave in place */
    kill(pid, sig);
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == sig, "child did not die of signal %d (status %#x)", sig, status);
    char prog[600];
    snprintf(prog, sizeof prog, "%s/progress", st);
    FILE *f = fopen(prog, "r");
    long driven = 0;
    if (f) { if (fscanf(f, "%ld", &driven) != 1) driven = 0; fclose(f); }
    char *paths[2], err[256];
    int np = h_find_traces(dir, paths, 2);
    REQUIRE(np == 1, "%d traces after signal %d", np, sig);
    tr_trace t;
    long colls = -1;
    if (tr_load(&t, paths[0], err, sizeof err) == 0) {
      colls = (long)tr_count(&t, 'X', "coll");
      tr_free(&t);
    } else {
      /* A fatal signal (SIGKILL, or SIGTERM with its default action: the plugin installs no
       * handlers) can land inside a flush's write (the kernel stops a write to a file at a page
       * when a fatal signal is pending), so the file can end mid-event; no ordering of writes
       * into one growing file avoids that (docs/decisions/0026-crash-safe-trace-file.md). Seen with SIGTERM in a soak run:
       * a trace cut at 1,654,784 bytes, a page boundary. The CLI reads such a file to its last
       * complete event and reports it truncated; that is the promise checked. */
      cl_info info;
      memset(&info, 0, sizeof info);
      colls = 0;
      int rc = cl_trace_scan(paths[0], count_colls, &colls, &info, 0);
      CHECK(rc == 0 && info.truncated && !info.has_stats, "torn trace %s: rc %d truncated %d: %s", paths[0], rc,
            info.truncated, info.msg);
      fprintf(stderr, "  signal %d inside a write after %d ms: %ld collectives read to the tear (%s)\n", sig, delay_ms,
              colls, err);
      cl_info_free(&info);
    }
    free(paths[0]);
    if (colls < 0) { fprintf(stderr, "  kept %s (killed after %d ms)\n", dir, delay_ms); return; }
    /* How far the trace lags what was driven depends on how the nice-19 writer is scheduled (a
     * bound of one flush interval failed beside make test's other groups: 237 of 1160); what
     * holds on any machine is that the kill took nothing that had reached the file. */
    CHECK(colls <= driven && colls >= before && before > 0,
          "signal %d after %d ms: %ld collectives in the trace, %ld on disk just before the kill, %ld driven",
          sig, delay_ms, colls, before, driven);
  }
  if (!tl_cur_failed) { h_rm_rf(dir); h_rm_rf(st); }
}

/* ---- fork in the profiled process ------------------------------------------------------ */
H_CHILD(forking_job) {
  const char *dir = getenv("COMMLENS_DIR");
  h_plugin p;
  void *ctx;
  h_open_init(&p, 5, &ctx);
  for (int i = 0; i < 5; i++) h_drive_coll(&p, ctx, &(h_opts){.network = 1}, (uint64_t)i, NULL);
  pid_t pid = fork();
  REQUIRE(pid >= 0, "fork");
  if (pid == 0) {                              /* the child: a new profiled process */
    void *c2 = NULL;
    int rc = h_init(&p, &c2, NULL);
    for (int i = 0; i < 7; i++) h_drive_coll(&p, c2, &(h_opts){.network = 1}, (uint64_t)i, NULL);
    h_finalize(&p, c2);
    _exit(rc == 0 && h_bad_rc == 0 ? 0 : 3);  /* no exit handlers: the job's child may _exit */
  }
  for (int i = 5; i < 10; i++) h_drive_coll(&p, ctx, &(h_opts){.network = 1}, (uint64_t)i, NULL);
  int status;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork child status %#x", status);
  h_finalize(&p, ctx);
  h_close(&p);
  char *paths[4], err[256];
  int n = h_find_traces(dir, paths, 4);
  CHECK(n == 2, "%d traces, want the parent's and the child's", n);
  size_t total = 0;
  for (int i = 0; i < n; i++) {
    tr_trace t;
    int rc = tr_load(&t, paths[i], err, sizeof err);
    CHECK(rc == 0, "%s: %s", paths[i], err);
    if (rc == 0) {
      size_t c = tr_count(&t, 'X', "coll");
      CHECK(c == 10 || c == 7, "%s: %zu collectives (parent 10, child 7)", paths[i], c);
      total += c;
      tr_free(&t);
    }
    free(paths[i]);
  }
  CHECK(total == 17, "%zu collectives over both traces, want 17", total);
}

/* A job that forks again and again while another thread's collectives flow, recording the ABI
 * stream too: a fork lands inside the format thread's read of the rings, a recorder write or a
 * logged message, holding a lock that no thread of the child has. Each child must start over
 * (its own trace, its own recording), never hang, and leave the parent's files whole. */
static _Atomic int g_flow_stop;
static _Atomic long g_flow_n;
typedef struct { h_plugin *p; void *ctx; } flow_arg;
static void *flow(void *arg) {
  flow_arg *a = arg;
  while (!atomic_load(&g_flow_stop)) {
    h_drive_coll(a->p, a->ctx, &(h_opts){.network = 1}, (uint64_t)atomic_load(&g_flow_n), NULL);
    atomic_fetch_add(&g_flow_n, 1);
  }
  return NULL;
}
/* A recording read to its end: the gzip stream is whole and has `inits` init lines. */
static int recording_whole(const char *path, int *inits) {
  gzFile gz = gzopen(path, "rb");
  if (!gz) return -1;
  char line[4096];
  *inits = 0;
  while (gzgets(gz, line, sizeof line)) *inits += line[0] == 'I' && line[1] == ' ';
  int err;
  gzerror(gz, &err);
  int ok = err == Z_OK && gzeof(gz);
  return gzclose_r(gz) == Z_OK && ok ? 0 : -1;
}
#define NFORKS 6
H_CHILD(forking_while_events_flow) {
  const char *dir = getenv("COMMLENS_DIR");
  h_plugin p;
  void *ctx;
  h_open_init(&p, 5, &ctx);
  flow_arg fa = {&p, ctx};
  pthread_t thr;
  REQUIRE(pthread_create(&thr, NULL, flow, &fa) == 0, "flow thread");
  int hung = 0, failed = 0;
  for (int k = 0; k < NFORKS; k++) {
    long at = atomic_load(&g_flow_n);
    while (atomic_load(&g_flow_n) < at + 50) usleep(1000);
    pid_t pid = fork();
    REQUIRE(pid >= 0, "fork");
    if (pid == 0) {
      void *c2 = NULL;
      int rc = h_init(&p, &c2, NULL);
      for (int i = 0; i < 2; i++) h_drive_coll(&p, c2, &(h_opts){.network = 1}, (uint64_t)i, NULL);
      h_finalize(&p, c2);
      exit(rc == 0 && h_bad_rc == 0 ? 0 : 3);   /* exit, not _exit: the child's exit handlers run too */
    }
    int status = 0, rc = h_wait_pid(pid, 60, &status);
    if (rc == 124) hung++;
    else if (rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed++;
  }
  atomic_store(&g_flow_stop, 1);
  pthread_join(thr, NULL);
  long driven = atomic_load(&g_flow_n);
  h_finalize(&p, ctx);
  h_close(&p);
  CHECK(hung == 0 && failed == 0, "of %d fork children, %d hung (killed after 60 s) and %d failed", NFORKS, hung, failed);
  char *paths[NFORKS + 2], err[256];
  int n = h_find_traces(dir, paths, NFORKS + 2), twos = 0, parents = 0;
  CHECK(n == NFORKS + 1, "%d traces, want the parent's and %d children's", n, NFORKS);
  for (int i = 0; i < n; i++) {
    tr_trace t;
    int rc = tr_load(&t, paths[i], err, sizeof err);
    CHECK(rc == 0, "%s: %s", paths[i], err);
    if (rc == 0) {
      long c = (long)tr_count(&t, 'X', "coll");
      twos += c == 2;
      parents += c == driven;
      CHECK(c == 2 || c == driven, "%s: %ld collectives (a child's 2, or the parent's %ld)", paths[i], c, driven);
      tr_free(&t);
    }
    free(paths[i]);
  }
  CHECK(twos == NFORKS && parents == 1, "%d children's traces of 2 collectives, %d parent's", twos, parents);
}

/* ---- CUPTI missing ----------------------------------------------------------------------- */
H_CHILD(cupti_missing) {
  const char *dir = getenv("COMMLENS_DIR");
  h_plugin p;
  void *ctx;
  h_open_init(&p, 6, &ctx);
  for (int i = 0; i < 4; i++) h_drive_coll(&p, ctx, NULL, (uint64_t)i, NULL);
  void *ctx2;
  REQUIRE(h_init(&p, &ctx2, NULL) == 0, "second init");
  h_finalize(&p, ctx2);
  h_finalize(&p, ctx);
  h_close(&p);
  CHECK(h_log_count(-1, "CUPTI") == 1, "want one message about CUPTI; log:\n%s", h_log_text());
  tr_trace t;
  if (h_load_one_trace(dir, &t, NULL, 0)) return;
  CHECK(tr_count(&t, 'X', "coll") == 4, "coll %zu", tr_count(&t, 'X', "coll"));
  tr_free(&t);
}

/* ---- another tool holds CUPTI from the start ------------------------------------------ */
/* A torch.profiler window (here the stand-in libcupti's busy slot) open when NCCL starts us:
 * commlens leaves CUPTI alone, says so once, and every collective is counted and reported as
 * lacking CUPTI's GPU timing, and why (before: CUPTI was given up for the run, and the summary
 * said only that it was unavailable). */
H_CHILD(cupti_held_from_start) {
  const char *dir = getenv("COMMLENS_DIR");
  h_plugin p;
  void *ctx;
  h_open_init(&p, 6, &ctx);
  for (int i = 0; i < 4; i++) h_drive_coll(&p, ctx, NULL, (uint64_t)i, NULL);
  h_finalize(&p, ctx);
  h_close(&p);
  CHECK(h_log_count(-1, "in use") == 1, "want one message about CUPTI in use; log:\n%s", h_log_text());
  tr_trace t;
  if (h_load_one_trace(dir, &t, NULL, 0)) return;
  int64_t lost = -1, colls = -1;
  CHECK(tr_stats_i64(&t, "collectives_gpu_lost", &lost) == 0 && tr_stats_i64(&t, "collectives", &colls) == 0 &&
        lost == 4 && colls == 4, "tail: %lld of %lld collectives lost", (long long)lost, (long long)colls);
  tr_free(&t);
}

/* ---- 1,000 communicators created and destroyed ------------------------------------------ */
H_CHILD(thousand_comms) {
  const char *dir = getenv("COMMLENS_DIR");
  h_plugin p;
  void *world;
  h_open_init(&p, 5, &world);                    /* the long-lived one keeps the writer up */
  for (int i = 0; i < 1000; i++) {
    void *ctx = NULL;
    h_comm_info info = {0x500000 + (uint64_t)i, "sub", 1, 2, 0};
    REQUIRE(h_init(&p, &ctx, &info) == 0 && ctx, "init %d", i);
    if (i % 10 == 0) h_drive_coll(&p, ctx, &(h_opts){.nchannels = 1, .same_thread_proxy = 1}, 0, NULL);
    h_finalize(&p, ctx);
  }
  h_drive_coll(&p, world, NULL, 0, NULL);
  h_finalize(&p, world);
  h_close(&p);
  CHECK(h_bad_rc == 0, "%d calls failed", h_bad_rc);
  tr_trace t;
  if (h_load_one_trace(dir, &t, NULL, 0)) return;
  CHECK(tr_count(&t, 'X', "coll") == 101, "coll %zu, want 101", tr_count(&t, 'X', "coll"));
  CHECK(stat_of(&t, "dropped") == 0, "drops");
  tr_free(&t);
}

/* ---- unloaded and reloaded 100 times ------------------------------------------------------ */
H_CHILD(reload_100) {
  const char *dir = getenv("COMMLENS_DIR");
  for (int cycle = 0; cycle < 100; cycle++) {
    h_plugin p;
    REQUIRE(h_open(&p, NULL, 1 + cycle % 6) == 0, "load (cycle %d)", cycle);
    void *ctx = NULL;
    REQUIRE(h_init(&p, &ctx, NULL) == 0 && ctx, "init (cycle %d)", cycle);
    h_drive_coll(&p, ctx, &(h_opts){.nchannels = 1, .same_thread_proxy = 1}, (uint64_t)cycle, NULL);
    h_finalize(&p, ctx);
    h_close(&p);
  }
  CHECK(h_bad_rc == 0, "%d calls did not return ncclSuccess", h_bad_rc);
  tr_trace t;
  if (h_load_one_trace(dir, &t, NULL, 0)) return;
  CHECK(tr_count(&t, 'X', "coll") == 100, "coll %zu, want 100", tr_count(&t, 'X', "coll"));
  tr_free(&t);
}

/* ---- communicator aborted mid-collective ------------------------------------------------ */
H_CHILD(abort_mid_collective) {
  const char *dir = getenv("COMMLENS_DIR");
  h_plugin p;
  void *ctx;
  h_open_init(&p, 5, &ctx);
  h_drive_coll(&p, ctx, NULL, 0, NULL);
  h_event g = {.type = CLABI_EV_GROUP};
  void *grp = h_start(&p, ctx, &g, NULL);
  h_event ce = {.type = CLABI_EV_COLL, .parent = grp, .parent_group = grp, .func = "AllReduce",
                .datatype = "ncclFloat32", .algo = "RING", .proto = "SIMPLE", .seq = 1, .count = 64,
                .nchannels = 2, .nwarps = 16};
  void *coll = h_start(&p, ctx, &ce, NULL);
  void *kch[2];
  for (int ch = 0; ch < 2; ch++) {
    h_event k = {.type = CLABI_EV_KERNEL_CH, .parent = coll, .channel = (uint8_t)ch, .ptimer = h_realtime_ns()};
    kch[ch] = h_start(&p, ctx, &k, NULL);
  }
  h_finalize(&p, ctx);                          /* ncclCommAbort: events still open */
  for (int ch = 0; ch < 2; ch++) {              /* the proxy thread finishes later */
    h_state(&p, kch[ch], CLABI_ST_KERNEL_CH_STOP, h_realtime_ns());
    h_stop(&p, kch[ch]);
    h_stop(&p, kch[ch]);
  }
  h_stop(&p, coll);
  h_stop(&p, grp);
  void *ctx2;                                   /* the job goes on with a new communicator */
  REQUIRE(h_init(&p, &ctx2, NULL) == 0 && ctx2, "init after abort");
  h_drive_coll(&p, ctx2, NULL, 2, NULL);
  h_finalize(&p, ctx2);
  h_close(&p);
  CHECK(h_bad_rc == 0, "%d calls did not return ncclSuccess", h_bad_rc);
  tr_trace t;
  if (h_load_one_trace(dir, &t, NULL, 0)) return;
  CHECK(tr_count(&t, 'X', "coll") >= 2, "coll %zu", tr_count(&t, 'X', "coll"));
  CHECK(stat_of(&t, "stale_handles") >= 2, "stale_handles %lld: the repeated stops were not counted",
        (long long)stat_of(&t, "stale_handles"));
  tr_free(&t);
}

/* ---- the trace path is a planted symlink; the host name is hostile ---------------------- */
static void trace_path(char *out, size_t n, const char *dir, int rank) {
  char host[256] = "", safe[256];
  gethostname(host, sizeof host - 1);
  size_t k = 0;
  for (const char *s = host; *s && k + 1 < sizeof safe; s++)
    safe[k++] = (*s == '/' || *s == ' ' || (unsigned char)*s < 0x20) ? '_' : *s;
  safe[k] = 0;
  snprintf(out, n, "%s/commlens-r%d-%s-%d.trace.json", dir, rank, safe, (int)getpid());
}
H_CHILD(symlink_planted) {
  const char *dir = getenv("COMMLENS_DIR");
  char victim[600], link[1200];
  snprintf(victim, sizeof victim, "%s/victim", dir);
  int fd = open(victim, O_WRONLY | O_CREAT, 0644);
  REQUIRE(fd >= 0, "victim");
  close(fd);
  trace_path(link, sizeof link, dir, 0);
  REQUIRE(symlink(victim, link) == 0, "symlink %s: %s", link, strerror(errno));
  h_plugin p;
  void *ctx;
  h_open_init(&p, 5, &ctx);
  h_drive_coll(&p, ctx, NULL, 0, NULL);
  h_finalize(&p, ctx);
  h_close(&p);
  CHECK(h_bad_rc == 0, "%d calls failed", h_bad_rc);
  struct stat st;
  CHECK(stat(victim, &st) == 0 && st.st_size == 0, "the plugin wrote through the symlink (%lld bytes)", (long long)st.st_size);
  CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "the symlink was replaced");
  CHECK(count_warn() == 1 && h_log_count(CLABI_LOG_WARN, "commlens-r0") == 1,
        "want one warning naming the refused path; log:\n%s", h_log_text());
  unlink(link);                                 /* the job's trace is written under a fresh name */
  tr_trace t;
  if (h_load_one_trace(dir, &t, NULL, 0)) return;
  CHECK(tr_count(&t, 'X', "coll") == 1, "coll %zu", tr_count(&t, 'X', "coll"));
  tr_free(&t);
}
H_CHILD(hostile_hostname) {
  const char *dir = getenv("COMMLENS_DIR");
  if (unshare(CLONE_NEWUTS) != 0) { fprintf(stderr, "  skip: unshare(CLONE_NEWUTS): %s\n", strerror(errno)); return; }
  const char evil[] = "../../esc\001ape/ me";
  REQUIRE(sethostname(evil, sizeof evil - 1) == 0, "sethostname: %s", strerror(errno));
  h_plugin p;
  void *ctx;
  h_open_init(&p, 5, &ctx);
  h_drive_coll(&p, ctx, NULL, 0, NULL);
  h_finalize(&p, ctx);
  h_close(&p);
  tr_trace t;
  char path[1024];
  if (h_load_one_trace(dir, &t, path, sizeof path)) return;   /* in dir itself, nowhere else */
  const char *base = path + strlen(dir) + 1;
  CHECK(!strchr(base, '/') && !strchr(base, ' ') && !strchr(base, '\001'), "file name %s", base);
  tr_free(&t);
}

/* Two processes with the same rank and directory at once: distinct files. */
H_CHILD(same_rank_writer) {
  h_plugin p;
  void *ctx;
  h_open_init(&p, 5, &ctx);
  for (int i = 0; i < 20; i++) { h_drive_coll(&p, ctx, NULL, (uint64_t)i, NULL); usleep(2000); }
  h_finalize(&p, ctx);
  h_close(&p);
  CHECK(h_bad_rc == 0, "calls failed");
}

/* ---- the parent side: one fresh process per case ------------------------------------ */
static void run_case(const char *name, const char *const *extra, const char *subdir) {
  h_run_case(name, (const char *const[]){"COMMLENS_CUPTI=0", NULL}, extra, subdir);
}

TL_TEST(output_dir_missing_is_created) { run_case("missing_dir", NULL, "/a/b/c"); }
TL_TEST(output_dir_read_only) { run_case("readonly_fs", NULL, NULL); }
TL_TEST(output_fs_full) { run_case("full_fs", (const char *const[]){"COMMLENS_EVENTS=full", "COMMLENS_FLUSH_MS=10", NULL}, NULL); }
TL_TEST(output_fs_full_digest) { run_case("full_fs_digest", (const char *const[]){"COMMLENS_OUTPUT=digest", "COMMLENS_FLUSH_MS=10", NULL}, NULL); }
TL_TEST(output_fs_full_at_the_first_flush) {
  run_case("full_fs_first_flush", (const char *const[]){"COMMLENS_EVENTS=full", "COMMLENS_FLUSH_MS=250", NULL}, NULL);
}
/* What a SIGKILL inside a flush's write leaves: the file cut anywhere past its header. The
 * CLI's reader reads every event before the cut and says the file is truncated. */
H_CHILD(torn_write) {
  const char *dir = getenv("COMMLENS_DIR");
  h_short_job(40, &(h_opts){.nchannels = 1, .same_thread_proxy = 1});
  char *paths[2];
  REQUIRE(h_find_traces(dir, paths, 2) == 1, "one trace");
  struct stat sb;
  REQUIRE(stat(paths[0], &sb) == 0 && sb.st_size > 4096, "size");
  long prev = -1;
  for (int k = 1; k <= 9; k++) {                /* cuts at 10%..90%, mid-event mostly */
    char cut[1100];
    snprintf(cut, sizeof cut, "%s.cut.json", paths[0]);
    FILE *in = fopen(paths[0], "rb"), *out = fopen(cut, "wb");
    REQUIRE(in && out, "copy");
    long want = (long)sb.st_size * k / 10;
    for (long i = 0; i < want; i++) fputc(fgetc(in), out);
    fclose(in);
    fclose(out);
    cl_info info;
    memset(&info, 0, sizeof info);
    long colls = 0;
    int rc = cl_trace_scan(cut, count_colls, &colls, &info, 0);
    CHECK(rc == 0 && info.truncated && !info.has_stats, "cut at %d0%%: rc %d truncated %d: %s", k, rc, info.truncated, info.msg);
    CHECK(colls >= prev && colls <= 40, "cut at %d0%%: %ld collectives after %ld", k, colls, prev);
    prev = colls;
    cl_info_free(&info);
    unlink(cut);
  }
  CHECK(prev > 20, "a cut at 90%% keeps most collectives: %ld", prev);
  free(paths[0]);
}
TL_TEST(torn_last_write_reads_to_the_tear) { run_case("torn_write", NULL, NULL); }
TL_TEST(sigkill_while_events_flow) { kill_case(SIGKILL, 7); }
TL_TEST(sigterm_while_events_flow) { kill_case(SIGTERM, 11); }
/* Not under ASan: GCC's libasan does not hold its allocator's region locks across fork, so a
 * child of a multi-threaded parent can block forever in its first allocation from a new thread
 * (seen: the child's writer thread waiting in SizeClassAllocator64::GetFromAllocator, about 1
 * run in 10). glibc's malloc is fork-safe; the plain build runs this case. */
static int fork_unsupported_here(void) {
  const char *san = getenv("COMMLENS_SANITIZED");
  if (!san || strcmp(san, "asan")) return 0;
  fprintf(stderr, "  skipped under ASan (libasan allocator and fork)\n");
  return 1;
}
TL_TEST(fork_in_profiled_process) {
  if (fork_unsupported_here()) return;
  run_case("forking_job", NULL, NULL);
}
TL_TEST(fork_while_events_flow_and_are_recorded) {
  if (fork_unsupported_here()) return;
  char rec[300], kv[400];
  h_fresh_dir(rec, sizeof rec);
  snprintf(kv, sizeof kv, "COMMLENS_RECORD=%s", rec);
  run_case("forking_while_events_flow", (const char *const[]){kv, NULL}, NULL);
  char *recs[NFORKS + 2];   /* the parent's closes at its exit: read once it is gone */
  int nr = h_find_files(rec, ".rec.gz", recs, NFORKS + 2);
  CHECK(nr == NFORKS + 1, "%d recordings, want the parent's and %d children's", nr, NFORKS);
  for (int i = 0; i < nr; i++) {
    int inits = -1, whole = recording_whole(recs[i], &inits) == 0;
    CHECK(whole && inits == 1, "%s: whole %d, %d init lines", recs[i], whole, inits);
    free(recs[i]);
  }
  if (!tl_cur_failed) h_rm_rf(rec);
}
TL_TEST(cupti_library_missing) {
  run_case("cupti_missing", (const char *const[]){"COMMLENS_CUPTI=1", "COMMLENS_CUPTI_LIB=/nonexistent/libcupti.so", NULL}, NULL);
}
TL_TEST(cupti_held_by_another_tool_from_the_start) {
  char lib[600], libkv[700];
  h_fake_path(NULL, "libcommlens-fakecupti.so", lib, sizeof lib);
  REQUIRE(access(lib, R_OK) == 0, "no stand-in libcupti at %s (make builds it)", lib);
  snprintf(libkv, sizeof libkv, "COMMLENS_CUPTI_LIB=%s", lib);
  char dir[256], kv[300];
  h_fresh_dir(dir, sizeof dir);
  snprintf(kv, sizeof kv, "COMMLENS_DIR=%s", dir);
  int rc = h_spawn("cupti_held_from_start",
                   (const char *const[]){kv, "COMMLENS_CUPTI=1", libkv, "FAKE_BUSY=1", "COMMLENS_SUMMARY=file", NULL});
  CHECK(rc == 0, "child exited %d (dir %s)", rc, dir);
  char *sums[2];   /* written on the exit path: read once the child is gone */
  int n = h_find_files(dir, ".summary.txt", sums, 2);
  REQUIRE(n == 1, "%d summaries in %s", n, dir);
  char *text = h_read_file(sums[0], NULL);
  CHECK(text && strstr(text, "4 of 4 collectives lack GPU timing from CUPTI: lost (CUPTI taken by another tool)"),
        "summary:\n%s", text ? text : "(unreadable)");
  free(text);
  free(sums[0]);
  if (!tl_cur_failed) h_rm_rf(dir);
}
TL_TEST(thousand_communicators) { run_case("thousand_comms", (const char *const[]){"COMMLENS_EVENTS=full", NULL}, NULL); }
TL_TEST(reload_100_times) { run_case("reload_100", NULL, NULL); }
TL_TEST(comm_aborted_mid_collective) { run_case("abort_mid_collective", (const char *const[]){"COMMLENS_EVENTS=full", NULL}, NULL); }
TL_TEST(symlink_at_trace_path_refused) { run_case("symlink_planted", (const char *const[]){"RANK=0", NULL}, NULL); }
TL_TEST(hostile_host_name_stays_in_dir) { run_case("hostile_hostname", (const char *const[]){"RANK=0", NULL}, NULL); }
TL_TEST(same_rank_twice_distinct_files) {
  char dir[256], kv[300];
  h_fresh_dir(dir, sizeof dir);
  snprintf(kv, sizeof kv, "COMMLENS_DIR=%s", dir);
  const char *env[] = {kv, "RANK=3", "COMMLENS_SUMMARY=off", "COMMLENS_CUPTI=0", NULL};
  pid_t a = spawn_async("same_rank_writer", env), b = spawn_async("same_rank_writer", env);
  int sa, sb;
  waitpid(a, &sa, 0);
  waitpid(b, &sb, 0);
  CHECK(WIFEXITED(sa) && !WEXITSTATUS(sa) && WIFEXITED(sb) && !WEXITSTATUS(sb), "children %#x %#x", sa, sb);
  char *paths[4], err[256];
  int n = h_find_traces(dir, paths, 4);
  CHECK(n == 2, "%d traces for two processes of rank 3", n);
  for (int i = 0; i < n; i++) {
    tr_trace t;
    int rc = tr_load(&t, paths[i], err, sizeof err);
    CHECK(rc == 0 && tr_count(&t, 'X', "coll") == 20, "%s: %s", paths[i], err);
    if (rc == 0) tr_free(&t);
    free(paths[i]);
  }
  if (!tl_cur_failed) h_rm_rf(dir);
}

H_MAIN("faults/faults")
