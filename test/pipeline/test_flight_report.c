/* test_flight_report.c: `commlens report` over flight dumps: the ranks of one hang each dumping
 * from its own process, recorded dumps of a real hang, a dump chosen by its kind, a snapshot of a
 * healthy job, a restarted job's newest attempt, and the HTML page opening with the hang. */
#include "flight_fixture.h"
#include <json-c/json.h>
#include <signal.h>
#include <sys/stat.h>

/* ---- `commlens report` over the dumps of several ranks of one hang ----
 * A communicator of 4 ranks: comm ranks 0 and 1 start seq 5 and finish one of its two channels
 * each (1 and 0 left), comm rank 2 stops after seq 4 (its dump by signal), comm rank 3 leaves
 * no dump. Each is a process of its own (FLIGHT_ROLE says which). */
static void start_stuck(h_plugin *p, void *ctx, int done_ch, void **open_ch) {
  h_event ce = {.type = CLABI_EV_COLL, .func = "AllReduce", .datatype = "ncclFloat32", .algo = "RING",
                .proto = "SIMPLE", .seq = 5, .count = 1024, .nchannels = 2, .nwarps = 16};
  void *coll = h_start(p, ctx, &ce, NULL);
  h_stop(p, coll);
  uint64_t t0 = h_realtime_ns();
  void *k[2];
  for (int ch = 0; ch < 2; ch++) {
    h_event e = {.type = CLABI_EV_KERNEL_CH, .parent = coll, .channel = (uint8_t)ch, .ptimer = t0};
    k[ch] = h_start(p, ctx, &e, NULL);
  }
  h_state(p, k[done_ch], CLABI_ST_KERNEL_CH_STOP, t0 + 20000);
  h_stop(p, k[done_ch]);
  *open_ch = k[1 - done_ch];
}

H_CHILD(hang_rank) {
  const char *role = getenv("FLIGHT_ROLE");
  int comm_rank = atoi(getenv("COMMLENS_RANK"));
  h_plugin p;
  void *ctx;
  REQUIRE(role && h_open(&p, NULL, 5) == 0, "load");
  h_comm_info info = {.hash = 0x77, .name = "world", .nnodes = 4, .nranks = 4, .rank = comm_rank};
  REQUIRE(h_init(&p, &ctx, &info) == 0 && ctx, "init");
  for (int i = 0; i < 5; i++) h_drive_coll(&p, ctx, &k_inline, (uint64_t)i, NULL);
  /* the directory is shared: this process's own message says its dump is there */
  void *open_ch = NULL;
  int snapshot = !strcmp(role, "snapshot");   /* a healthy rank asked for a dump mid-collective */
  if (!strcmp(role, "behind")) REQUIRE(kill(getpid(), SIGUSR2) == 0, "kill");
  else start_stuck(&p, ctx, !strcmp(role, "stuck1") || snapshot ? 0 : 1, &open_ch);
  if (snapshot) REQUIRE(kill(getpid(), SIGUSR2) == 0, "kill");
  const char *msg = open_ch && !snapshot ? "hang dump written" : "signal dump written";
  for (int i = 0; i < 600 && !h_log_count(-1, msg); i++) nap_ms(100);
  CHECK(h_log_count(-1, msg) == 1, "%s: %s", msg, h_log_text());
  if (open_ch) h_stop(&p, open_ch);
  h_finalize(&p, ctx);
  h_close(&p);
}

/* The text report of dir (stderr dropped); NULL after a failed CHECK. Caller frees. */
static char *report_text(const char *dir) {
  char args[600];
  int st;
  snprintf(args, sizeof args, "report '%s' 2>/dev/null", dir);
  char *text = h_run_cli(args, &st);
  CHECK(st == 0 && text, "commlens report %s exited %d", dir, st);
  return text;
}
/* A test's directory: removed when it passed, kept (and said) when it failed. */
static void done_with(const char *dir) {
  if (!tl_cur_failed) h_rm_rf(dir);
  else fprintf(stderr, "  kept %s\n", dir);
}

/* One attempt of a job of 4 comm ranks into dir: a process per role (NULL: none), rank 0 up. */
static void run_attempt(const char *dir, const char *job, const char *const roles[3], const char *hang_s) {
  char direnv[400], jobenv[64];
  snprintf(direnv, sizeof direnv, "COMMLENS_DIR=%s", dir);
  snprintf(jobenv, sizeof jobenv, "COMMLENS_JOB=%s", job);
  for (int i = 0; i < 3; i++) {
    char role[64], rank[32];
    snprintf(role, sizeof role, "FLIGHT_ROLE=%s", roles[i]);
    snprintf(rank, sizeof rank, "COMMLENS_RANK=%d", i);
    const char *env[] = {direnv, jobenv, "COMMLENS_SUMMARY=off", "COMMLENS_CUPTI=0", "COMMLENS_FLIGHT_S=30", hang_s,
                         "COMMLENS_EVENTS=default+kernelch", role, rank, NULL};
    CHECK(h_spawn("hang_rank", env) == 0, "%s exited badly", role);
  }
}
static const char *const g_attempt1[3] = {"stuck1", "stuck0", "behind"};

TL_TEST(report_names_ranks_not_done) {
  char dir[256];
  h_fresh_dir(dir, sizeof dir);
  run_attempt(dir, "j1", g_attempt1, "COMMLENS_HANG_S=3");
  char flight[400];
  snprintf(flight, sizeof flight, "%s/flight", dir);
  json_object *rep = h_report_json(flight);
  json_object *hang = h_json_get(rep, "hang");
  json_object *c = hang && json_object_array_length(hang) == 1 ? json_object_array_get_idx(hang, 0) : NULL;
  REQUIRE(c, "one stuck communicator in the report: %s", rep ? json_object_to_json_string(rep) : "(no report)");
  CHECK(jint(c, "seq") == 5 && jint(c, "nranks") == 4, "seq 5 of 4 ranks: %s", json_object_to_json_string(c));
  json_object *ranks = h_json_get(c, "ranks");
  static const char *const want_state[4] = {"not_done", "not_done", "not_reached", "no_dump"};
  static const int want_ch[4] = {1, 0, -1, -1};
  for (int r = 0; r < 4 && ranks && json_object_array_length(ranks) == 4; r++) {
    json_object *m = json_object_array_get_idx(ranks, (size_t)r), *ch = h_json_get(m, "channels_not_done");
    const char *st = json_object_get_string(h_json_get(m, "state"));
    CHECK(st && !strcmp(st, want_state[r]), "comm rank %d: %s, want %s", r, st ? st : "?", want_state[r]);
    if (want_ch[r] >= 0)
      CHECK(ch && json_object_array_length(ch) == 1 && json_object_get_int(json_object_array_get_idx(ch, 0)) == want_ch[r],
            "comm rank %d waits on channel %d: %s", r, want_ch[r], json_object_to_json_string(m));
  }
  CHECK(jint(json_object_array_get_idx(ranks, 2), "last_started_seq") == 4, "comm rank 2 last started seq 4");
  char *text = report_text(flight);
  CHECK(text && strstr(text, "AllReduce seq 5 not finished") && strstr(text, "comm rank 3: no dump"),
        "the text report says it: %s", text ? text : "");
  free(text);
  json_object_put(rep);
  done_with(dir);
}

/* Dumps of a real hang (examples/gpu_flight.sh on one H200, 4 PyTorch ranks as emulated nodes,
 * 2026-11-26): every rank dumped on SIGUSR2 while seq 20 was in flight, then rank 1 stopped
 * calling collectives and the three others wrote hang dumps on seq 21. Each dump loads under the
 * trace checks, and the report takes the stuck collective from the hang dumps, not from rank 1's
 * earlier signal dump (it said "seq 20: 1 of 4 started it" before), placing rank 1 from that dump
 * as not having reached seq 21. */
TL_TEST(real_hang_dumps_name_the_rank_that_stopped) {
  static const char *const files[] = {"r0-vm-990-g0.hang-2", "r0-vm-990-g0.signal-1", "r1-vm-991-g0.signal-1",
                                      "r2-vm-992-g0.hang-2", "r2-vm-992-g0.signal-1", "r3-vm-993-g0.hang-2",
                                      "r3-vm-993-g0.signal-1"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char path[300], err[512];
    snprintf(path, sizeof path, "test/data/flight/h200-hang/commlens-%s.trace.json.gz", files[i]);
    tr_trace t;
    if (tr_load(&t, path, err, sizeof err) != 0) { CHECK(0, "dump %s: %s", path, err); continue; }
    tr_free(&t);
  }
  json_object *rep = h_report_json("test/data/flight/h200-hang");
  json_object *hang = h_json_get(rep, "hang");
  json_object *c = hang && json_object_array_length(hang) == 1 ? json_object_array_get_idx(hang, 0) : NULL;
  REQUIRE(c, "one stuck communicator: %s", rep ? json_object_to_json_string(rep) : "(no report)");
  CHECK(jint(c, "seq") == 21, "stuck at seq %lld, want 21 (the hang dumps')", (long long)jint(c, "seq"));
  json_object *ranks = h_json_get(c, "ranks");
  static const char *const want[4] = {"not_done", "not_reached", "not_done", "not_done"};
  for (int r = 0; r < 4 && ranks && json_object_array_length(ranks) == 4; r++) {
    json_object *m = json_object_array_get_idx(ranks, (size_t)r);
    const char *st = json_object_get_string(h_json_get(m, "state")), *d = json_object_get_string(h_json_get(m, "dump"));
    CHECK(st && !strcmp(st, want[r]), "comm rank %d: %s, want %s", r, st ? st : "?", want[r]);
    CHECK(d && !strcmp(d, r == 1 ? "signal" : "hang"), "comm rank %d placed from its %s dump", r, d ? d : "?");
  }
  json_object_put(rep);
}

/* The same dumps with every signal dump renamed to a kind that sorts first ("abort-1"): a rank's
 * file is chosen by what its name says it is (a hang dump before a signal dump before any other,
 * then the newest), not by name order, so the report still reads the hang dumps (by name order
 * it took the others and called seq 20 stuck). */
static int copy_file(const char *from, const char *to) {
  FILE *a = fopen(from, "rb"), *b = a ? fopen(to, "wbx") : NULL;
  char buf[65536];
  size_t n;
  int ok = a && b;
  while (ok && (n = fread(buf, 1, sizeof buf, a)) > 0) ok = fwrite(buf, 1, n, b) == n;
  if (a) fclose(a);
  if (b && fclose(b)) ok = 0;
  return ok ? 0 : -1;
}
TL_TEST(a_ranks_dump_is_chosen_by_kind_not_name_order) {
  static const char *const files[][2] = {
    {"r0-vm-990-g0.hang-2", "r0-vm-990-g0.hang-2"}, {"r0-vm-990-g0.signal-1", "r0-vm-990-g0.abort-1"},
    {"r1-vm-991-g0.signal-1", "r1-vm-991-g0.abort-1"}, {"r2-vm-992-g0.hang-2", "r2-vm-992-g0.hang-2"},
    {"r2-vm-992-g0.signal-1", "r2-vm-992-g0.abort-1"}, {"r3-vm-993-g0.hang-2", "r3-vm-993-g0.hang-2"},
    {"r3-vm-993-g0.signal-1", "r3-vm-993-g0.abort-1"}};
  char dir[256];
  h_fresh_dir(dir, sizeof dir);
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char from[300], to[600];
    snprintf(from, sizeof from, "test/data/flight/h200-hang/commlens-%s.trace.json.gz", files[i][0]);
    snprintf(to, sizeof to, "%s/commlens-%s.trace.json.gz", dir, files[i][1]);
    REQUIRE(copy_file(from, to) == 0, "copy %s to %s", from, to);
  }
  json_object *rep = h_report_json(dir);
  json_object *hang = h_json_get(rep, "hang");
  json_object *c = hang && json_object_array_length(hang) == 1 ? json_object_array_get_idx(hang, 0) : NULL;
  REQUIRE(c, "one stuck communicator: %s", rep ? json_object_to_json_string(rep) : "(no report)");
  CHECK(jint(c, "seq") == 21, "stuck at seq %lld, want 21 (the hang dumps')", (long long)jint(c, "seq"));
  json_object_put(rep);
  if (!tl_cur_failed) h_rm_rf(dir);
}

/* Each comm rank's state in the report's one stuck communicator, as "s0 s1 s2 s3" into out. */
static void hang_states(json_object *rep, char *out, size_t n) {
  json_object *hang = h_json_get(rep, "hang");
  json_object *c = hang && json_object_array_length(hang) == 1 ? json_object_array_get_idx(hang, 0) : NULL;
  json_object *ranks = h_json_get(c, "ranks");
  size_t k = 0;
  out[0] = 0;
  for (size_t r = 0; ranks && r < json_object_array_length(ranks) && k < n; r++)
    k += (size_t)snprintf(out + k, n - k, "%s%s", r ? " " : "",
                          json_object_get_string(h_json_get(json_object_array_get_idx(ranks, r), "state")));
}

/* SIGUSR2 to every rank of a healthy job, each mid-collective: the dumps are snapshots, and the
 * report says so (nothing waited the 60 s of a hang; the longest in flight, and "no hang found")
 * instead of a hang "after 0.1 s". */
TL_TEST(a_snapshot_of_a_healthy_job_is_no_hang) {
  char dir[256], flight[400];
  h_fresh_dir(dir, sizeof dir);
  static const char *const roles[3] = {"snapshot", "snapshot", "snapshot"};
  run_attempt(dir, "jsnap", roles, "COMMLENS_HANG_S=0");
  snprintf(flight, sizeof flight, "%s/flight", dir);
  json_object *rep = h_report_json(flight), *hang = h_json_get(rep, "hang"), *f = h_json_get(rep, "flight");
  CHECK(hang && json_object_array_length(hang) == 0 && f && !json_object_get_boolean(h_json_get(f, "hang_found")) &&
        json_object_get_int(h_json_get(f, "dumps")) == 3 && h_json_get(f, "longest_in_flight"),
        "a snapshot called a hang: %s", rep ? json_object_to_json_string(rep) : "(no report)");
  char *text = report_text(flight);
  CHECK(text && !strstr(text, "Hang:") && strstr(text, "no hang found") && strstr(text, "AllReduce seq 5"),
        "the text report: %s", text ? text : "");
  free(text);
  json_object_put(rep);
  done_with(dir);
}

/* The job restarted in the same directory (same job id): the second attempt's dumps beside the
 * first's. The report is on the newest attempt (its states, not the first's) and names the
 * earlier one; with the run's digests given too, the hang is still reported (the dumps' hang data
 * kept beside the rank files). Before, the first attempt's hang showed for three ranks and a rank
 * that dumped was "no dump"; with both directories no Hang section appeared. */
TL_TEST(a_restarted_jobs_newest_attempt_is_reported) {
  char dir[256], flight[400], args[900];
  h_fresh_dir(dir, sizeof dir);
  run_attempt(dir, "jr", g_attempt1, "COMMLENS_HANG_S=3");
  static const char *const second[3] = {"stuck1", "behind", "stuck0"};
  run_attempt(dir, "jr", second, "COMMLENS_HANG_S=3");
  snprintf(flight, sizeof flight, "%s/flight", dir);
  const char *want = "not_done not_reached not_done no_dump";
  for (int both = 0; both < 2; both++) {
    int st;
    snprintf(args, sizeof args, both ? "report '%s' '%s' --json 2>/dev/null" : "report '%s' --json 2>/dev/null",
             both ? dir : flight, flight);
    char *out = h_run_cli(args, &st), states[200];
    json_object *rep = out ? json_tokener_parse(out) : NULL, *ea = h_json_get(rep, "earlier_attempts");
    hang_states(rep, states, sizeof states);
    CHECK(st == 0 && !strcmp(states, want) && ea && json_object_array_length(ea) == 1,
          "%s: comm ranks %s, want %s; %s earlier attempt(s)", both ? "the run and its dumps" : "the dumps", states, want,
          ea ? json_object_to_json_string(ea) : "no");
    if (rep) json_object_put(rep);
    free(out);
  }
  char *text = report_text(flight);
  CHECK(text && strstr(text, "Earlier attempt of this job, left out: 3 process(es)"), "text: %s", text ? text : "");
  free(text);
  done_with(dir);
}

/* The HTML page opens with the hang, as the text and --json do (it showed only the verdict). */
TL_TEST(the_page_shows_the_hang_first) {
  char dir[256], page[400], args[900];
  h_fresh_dir(dir, sizeof dir);
  snprintf(page, sizeof page, "%s/r.html", dir);
  snprintf(args, sizeof args, "report test/data/flight/h200-hang --html '%s' >/dev/null 2>&1", page);
  int st;
  free(h_run_cli(args, &st));
  char *h = h_read_file(page, NULL);
  const char *hang = h ? strstr(h, "<section id=\"hang\">") : NULL, *verdict = h ? strstr(h, "<section id=\"verdict\">") : NULL;
  CHECK(st == 0 && hang && verdict && hang < verdict && strstr(hang, "AllReduce seq 21 not finished") &&
        strstr(hang, "never reached it (last started seq 20)"), "the page does not open with the hang");
  free(h);
  if (!tl_cur_failed) h_rm_rf(dir);
}

H_MAIN("pipeline/flight_report")
