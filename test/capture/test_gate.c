/* test_gate.c: which events the plugin answers with no handle, through the exported
 * ncclProfiler_v5 as NCCL drives it. NCCL's API events (GroupApi, CollApi, P2pApi) and
 * KernelLaunch feed only the trace and the CUPTI join: with a digest and CUPTI detached between
 * sampling windows (or off), they are not recorded (capture/gate.h), and every collective is
 * still counted and GPU-timed by its KernelCh; with a trace, or inside a window, they are.
 * Between the windows only the first channel of each collective is asked for
 * (COMMLENS_CHANNELS=sampled); inside them, with a trace or the flight recorder, every one. */
#include "tl.h"
#include "harness.h"
#include <string.h>
#include <unistd.h>

enum { B_COLL = 1, B_KCH = 6, B_GROUP_API = 8, B_COLL_API = 9, B_KLAUNCH = 11 };

/* Drives collectives 20 ms apart until a GroupApi start gets no handle; how many it took
 * (-1: still answered after `ms`). */
static int drive_until_skipped(h_plugin *p, void *ctx, uint64_t *seq, h_counts *c, int ms) {
  for (int i = 0; i * 20 < ms; i++) {
    long before = c->answered[B_GROUP_API];
    h_drive_coll(p, ctx, NULL, (*seq)++, c);
    if (c->answered[B_GROUP_API] == before) return i + 1;
    usleep(20000);
  }
  return -1;
}

/* The child says how many collectives it drove (a file beside its output); the parent checks,
 * once the child is gone (the summary is written on its exit path), that the summary's GPU line
 * counts every one, and has every one GPU-timed (`timed`; without CUPTI NCCL is asked for no
 * KernelCh, so none is). */
static void say_driven(uint64_t n) {
  char path[600];
  snprintf(path, sizeof path, "%s/driven", getenv("COMMLENS_DIR"));
  FILE *f = fopen(path, "w");
  if (f) { fprintf(f, "%llu\n", (unsigned long long)n); fclose(f); }
}
static void check_counted(const char *dir, int timed, const char *also) {
  char path[600];
  snprintf(path, sizeof path, "%s/driven", dir);
  char *d = h_read_file(path, NULL);
  REQUIRE(d, "the child did not say how many collectives it drove");
  long colls = strtol(d, NULL, 10);
  free(d);
  char *sums[2];
  int n = h_find_files(dir, ".summary.txt", sums, 2);
  REQUIRE(n == 1, "%d summaries in %s", n, dir);
  char *text = h_read_file(sums[0], NULL), want[96];
  snprintf(want, sizeof want, "GPU timing: %ld of %ld collectives", timed ? colls : 0, colls);
  /* the summary's GPU line, on the failure's own line (a CI log keeps only that line) */
  const char *gl = text ? strstr(text, "GPU timing:") : NULL;
  int gn = gl ? (int)strcspn(gl, ";\n") : 0;
  CHECK(colls > 10 && text && strstr(text, want), "want \"%s\", the summary says \"%.*s\"; summary:\n%s", want, gn,
        gl ? gl : "", text ? text : "(unreadable)");
  CHECK(!also || (text && strstr(text, also)), "want \"%s\" in the summary:\n%s", also ? also : "", text ? text : "(unreadable)");
  if (also) {   /* and the report over the digest says it, from the stats' channels block */
    char args[700], want_r[160];
    snprintf(args, sizeof args, "report '%s'", dir);
    int st = -1;
    char *rep = h_run_cli(args, &st);
    snprintf(want_r, sizeof want_r, " of %ld collectives on 1 rank(s), outside CUPTI's windows", colls);
    const char *line = rep ? strstr(rep, "GPU spans from one channel (COMMLENS_CHANNELS=sampled): ") : NULL;
    CHECK(st == 0 && line && strstr(line, want_r), "commlens report (exit %d) lacks \"...%s\":\n%s", st, want_r,
          rep ? rep : "(no output)");
    free(rep);
  }
  free(text);
  free(sums[0]);
}

/* GroupApi, CollApi and KernelLaunch each answered `want` times since `base`. */
static void check_launch_answered(const h_counts *c, const h_counts *base, long want, const char *when) {
  long g = c->answered[B_GROUP_API] - base->answered[B_GROUP_API], a = c->answered[B_COLL_API] - base->answered[B_COLL_API],
       k = c->answered[B_KLAUNCH] - base->answered[B_KLAUNCH];
  CHECK(g == want && a == want && k == want, "%s: GroupApi %ld, CollApi %ld, KernelLaunch %ld answered (want %ld each)",
        when, g, a, k, want);
}

/* Sampled mode, a digest: answered in the first window, not once CUPTI is detached after it
 * (the next window is 30 s away); Coll and KernelCh always. */
H_CHILD(sampled_digest) {
  h_plugin p;
  void *ctx;
  h_open_init(&p, 5, &ctx);
  h_counts c = {0}, zero = {0};
  uint64_t seq = 0;
  h_drive_coll(&p, ctx, NULL, seq++, &c);
  check_launch_answered(&c, &zero, 1, "in the first window");
  CHECK(c.answered[B_KCH] == 2, "in the first window: KernelCh %ld answered (want both channels)", c.answered[B_KCH]);
  int took = drive_until_skipped(&p, ctx, &seq, &c, 20000);
  REQUIRE(took > 0, "API events still recorded 20 s after a 50 ms window");
  h_counts after = c;
  for (int i = 0; i < 10; i++) h_drive_coll(&p, ctx, NULL, seq++, &c);
  check_launch_answered(&c, &after, 0, "between windows");
  /* COMMLENS_CHANNELS=sampled (the default): one of each collective's two channels */
  const char *chm = getenv("COMMLENS_CHANNELS");
  long want_k = chm && !strcmp(chm, "all") ? 20 : 10;
  CHECK(c.answered[B_COLL] - after.answered[B_COLL] == 10 && c.answered[B_KCH] - after.answered[B_KCH] == want_k,
        "between windows: Coll +%ld (want 10), KernelCh +%ld (want %ld)", c.answered[B_COLL] - after.answered[B_COLL],
        c.answered[B_KCH] - after.answered[B_KCH], want_k);
  /* a CUDA graph's collective, replayed three times after its capture: its channels name the
   * captured collective every time, and each replay gets a channel of its own */
  h_counts g0 = c;
  h_opts go = {.graph_replays = 3};
  h_drive_coll(&p, ctx, &go, seq++, &c);
  long ks = c.started[B_KCH] - g0.started[B_KCH], ka = c.answered[B_KCH] - g0.answered[B_KCH];
  CHECK(ks == 8 && ka == (want_k == 20 ? 8 : 4), "a graph's collective and 3 replays: KernelCh %ld started (want 8), "
        "%ld answered (want %d)", ks, ka, want_k == 20 ? 8 : 4);
  h_finalize(&p, ctx);
  h_close(&p);
  say_driven(seq);
}

/* A trace draws the API events, and the flight recorder's dumps do: answered all along,
 * windows or not. */
H_CHILD(answered_all_along) {
  h_plugin p;
  void *ctx;
  h_open_init(&p, 5, &ctx);
  h_counts c = {0}, zero = {0};
  for (uint64_t seq = 0; seq < 25; seq++) { h_drive_coll(&p, ctx, NULL, seq, &c); usleep(20000); }   /* 0.5 s: past the window */
  check_launch_answered(&c, &zero, 25, getenv("COMMLENS_FLIGHT_S") ? "with the flight recorder" : "with a trace");
  CHECK(c.answered[B_KCH] == 50, "KernelCh %ld answered (want every channel: 50)", c.answered[B_KCH]);
  h_finalize(&p, ctx);
  h_close(&p);
}

/* No CUPTI, a digest: nothing reads them from the start (the writer's first tick). */
H_CHILD(no_cupti_digest) {
  h_plugin p;
  void *ctx;
  h_open_init(&p, 5, &ctx);
  h_counts c = {0};
  uint64_t seq = 0;
  int took = drive_until_skipped(&p, ctx, &seq, &c, 20000);
  CHECK(took > 0, "API events recorded with no trace and no CUPTI");
  for (int i = 0; i < 10; i++) h_drive_coll(&p, ctx, NULL, seq++, &c);
  h_finalize(&p, ctx);
  h_close(&p);
  say_driven(seq);
}

static void run(const char *name, const char *cupti, const char *output, const char *more, int check, const char *also) {
  char lib[600], libkv[700], dir[256], kv[300], cu[64], out[64];
  h_fake_path(NULL, "libcommlens-fakecupti.so", lib, sizeof lib);
  REQUIRE(access(lib, R_OK) == 0, "no stand-in libcupti at %s (make builds it)", lib);
  snprintf(libkv, sizeof libkv, "COMMLENS_CUPTI_LIB=%s", lib);
  h_fresh_dir(dir, sizeof dir);
  snprintf(kv, sizeof kv, "COMMLENS_DIR=%s", dir);
  snprintf(cu, sizeof cu, "COMMLENS_CUPTI=%s", cupti);
  snprintf(out, sizeof out, "COMMLENS_OUTPUT=%s", output);
  int rc = h_spawn(name, (const char *const[]){kv, cu, out, libkv, "COMMLENS_CUPTI_SAMPLE=0.05:30",
                                               "COMMLENS_SUMMARY=file", more, NULL});
  CHECK(rc == 0, "child exited %d (dir %s)", rc, dir);
  if (check >= 0) check_counted(dir, check, also);
  if (!tl_cur_failed) h_rm_rf(dir);
}

/* between the windows, one channel a collective (COMMLENS_CHANNELS=sampled, the default): every
 * collective still GPU-timed, those on one channel counted */
TL_TEST(api_and_launch_events_skipped_between_sampling_windows) {
  run("sampled_digest", "sampled", "digest", NULL, 1, " collectives GPU-timed on one channel between the windows");
}
TL_TEST(every_channel_timed_with_channels_all) {
  run("sampled_digest", "sampled", "digest", "COMMLENS_CHANNELS=all", 1, NULL);
}
TL_TEST(api_and_launch_events_kept_for_a_trace) { run("answered_all_along", "sampled", "both", NULL, -1, NULL); }
TL_TEST(api_and_launch_events_kept_for_the_flight_recorder) {
  run("answered_all_along", "sampled", "digest", "COMMLENS_FLIGHT_S=30", -1, NULL);   /* past its window too */
}
TL_TEST(api_and_launch_events_skipped_without_cupti) { run("no_cupti_digest", "off", "digest", NULL, 0, NULL); }

H_MAIN("capture/gate")
