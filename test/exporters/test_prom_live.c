/* test_prom_live.c: the live straggler detection, end to end, through a real Prometheus
 * (the Debian package; skipped with a message where it is not installed).
 *
 * - The shipped rules pass their own unit test (promtool test rules), and name the planted
 *   stragglers of the real runs of test/data/verdict, and nothing on their clean runs.
 * - Two jobs of four rank processes each drive the plugin through ncclProfiler_v5 as NCCL's user
 *   and proxy threads do, 100 AllReduce a second, with COMMLENS_PROM and COMMLENS_PROM_S=1. One
 *   true timeline (CLOCK_MONOTONIC): collective k starts at T0 + k * 10 ms; each rank arrives up
 *   to 0.3 ms after it (a per-rank, per-collective jitter); in job "straggler" rank 2 arrives 4 ms
 *   later still; every rank's kernels start at its arrival and end 2 ms after the last arrival.
 *   GPU timers are the true times plus a per-rank offset, sent after the true time they name.
 *   Their textfiles are served over loopback, one target per file, scraped every 1 s. Through
 *   the HTTP API: CommlensStraggler fires within 10 s of the first scraped sample naming rank 2 of
 *   the straggler job and no other rank, its lateness is 4 ms; the clean job fires nothing (not
 *   even pending) once its ranks' lateness has been evaluated 12 times.
 * - A simulated exporter of many ranks (COMMLENS_PROM_SIM_RANKS, 256 here; 4,096 in
 *   bench/prom_scale.sh): one exposition of every rank, written by the plugin's formatter every
 *   second with one planted straggler; the rules name that rank. */
#include "harness.h"
#include "prom_server.h"
#include "exporters/prom.h"
#include "common/hash.h"
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NRANKS 4
#define LATE_RANK 2
#define PERIOD_NS 10000000ll    /* 100 collectives a second */
#define JITTER_NS 300000ll
#define LATE_NS 4000000ll
#define XFER_NS 2000000ll       /* from the last arrival to the end of every rank's kernels */
#define NCH 2
#define MAX_RUN_NS (120 * 1000000000ll)   /* a rank stops by itself after this */
#define FIRE_S 10

static const char *rules_path(void) {
  static char p[1024];
  if (!getcwd(p, sizeof p - 64)) return "exporters/prometheus/commlens.rules.yml";
  strcat(p, "/exporters/prometheus/commlens.rules.yml");
  return p;
}

/* Skips (with its reason, once) where Prometheus is missing or the build is sanitized (the
 * plain run checks it: three Prometheus servers beside the sanitized suites would only measure
 * the load). */
static int skip(void) {
  static int said;
  const char *san = getenv("COMMLENS_SANITIZED");
  if (san && *san) {
    if (!said++) fprintf(stderr, "  skip: Prometheus checks run in the plain build, not under %s\n", san);
    return 1;
  }
  if (!ps_prometheus() || system("command -v promtool >/dev/null 2>&1") != 0) {
    if (!said++) fprintf(stderr, "  skip: no prometheus/promtool (Debian package prometheus; make test tries "
                                 "`apt-get install prometheus` once: see BUILD/prometheus-apt.log)\n");
    return 1;
  }
  return 0;
}

TL_TEST(shipped_rules_pass_their_unit_test) {
  if (skip()) return;
  CHECK(system("cd exporters/prometheus && promtool check rules commlens.rules.yml >/dev/null") == 0, "promtool check rules");
  CHECK(system("cd exporters/prometheus && promtool test rules commlens.rules.test.yml") == 0, "promtool test rules");
}

/* The rules on the real runs of test/data/verdict (test/tools/prom_rules_real.py): every
 * planted persistent, periodic or GPU-side straggler named, exactly; clean runs silent at
 * every second. */
TL_TEST(shipped_rules_name_the_planted_ranks_of_the_real_verdict_runs) {
  if (skip()) return;
  CHECK(system("python3 test/tools/prom_rules_real.py exporters/prometheus/commlens.rules.yml test/data/verdict") == 0,
        "prom_rules_real.py");
}

/* ---- one rank of a job ---------------------------------------------------------------------- */
static int64_t arrive(int64_t t0, int k, int r, int late) {
  int64_t t = t0 + (int64_t)k * PERIOD_NS + (int64_t)(cl_hash64(((uint64_t)k << 8) | (uint64_t)r) % JITTER_NS);
  return r == late ? t + LATE_NS : t;
}
static int64_t end_of(int64_t t0, int k, int late) {
  int64_t e = 0;
  for (int r = 0; r < NRANKS; r++) if (arrive(t0, k, r, late) > e) e = arrive(t0, k, r, late);
  return e + XFER_NS;
}
static uint64_t gpu_of(int r, int64_t t) { return (uint64_t)(t + 500000000000ll * (r + 1) + 3333333ll * r); }

static void *start_ev(h_plugin *p, void *ctx, const h_event *e) {
  return h_mask_wants(h_mask, e->type) ? h_start(p, ctx, e, NULL) : NULL;
}

H_CHILD(live_rank) {
  int r = (int)h_env_i64("H_RANK", -1), late = (int)h_env_i64("H_LATE", -1);
  int64_t t0 = h_env_i64("H_T0", 0);
  const char *stop = getenv("H_STOP");
  REQUIRE(r >= 0 && r < NRANKS && t0 > 0 && stop, "H_RANK %d H_T0 %" PRId64, r, t0);
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  h_plugin p;
  REQUIRE(h_open(&p, NULL, 5) == 0, "load v5");
  void *ctx = NULL;
  h_comm_info info = {(uint64_t)h_env_i64("H_COMM", 1), "prom-live", 1, NRANKS, r};
  REQUIRE(h_init(&p, &ctx, &info) == 0 && ctx, "init");
  void *stream = (void *)(uintptr_t)0x7f00dd00;
  static char sbuf[16], rbuf[16];
  for (int k = 0; h_monotonic_ns() < (uint64_t)(t0 + MAX_RUN_NS); k++) {
    if (k % 10 == 0 && access(stop, F_OK) == 0) break;
    int64_t a = arrive(t0, k, r, late), e = end_of(t0, k, late);
    h_sleep_until_mono(a);
    h_event ca = {.type = CLABI_EV_COLL_API, .func = "AllReduce", .count = 262144, .datatype = "ncclFloat32", .stream = stream};
    void *capi = start_ev(&p, ctx, &ca);
    if (h_mask_wants(h_mask, CLABI_EV_COLL_API)) h_stop(&p, capi);
    h_event g = {.type = CLABI_EV_GROUP};
    void *grp = start_ev(&p, ctx, &g);
    h_event ce = {.type = CLABI_EV_COLL, .parent = capi, .parent_group = grp, .rank = r, .func = "AllReduce",
                  .datatype = "ncclFloat32", .algo = "RING", .proto = "SIMPLE", .seq = (uint64_t)k,
                  .count = 262144, .nchannels = NCH, .nwarps = 16, .sendbuff = sbuf, .recvbuff = rbuf};
    void *coll = start_ev(&p, ctx, &ce);
    h_stop(&p, coll);
    if (h_mask_wants(h_mask, CLABI_EV_GROUP)) h_stop(&p, grp);
    void *kch[NCH];
    for (int ch = 0; ch < NCH; ch++) {
      h_event ke = {.type = CLABI_EV_KERNEL_CH, .parent = coll, .channel = (uint8_t)ch, .ptimer = gpu_of(r, a)};
      kch[ch] = start_ev(&p, ctx, &ke);
    }
    h_sleep_until_mono(e);                   /* the proxy sees the kernels end after they did */
    for (int ch = NCH - 1; ch >= 0; ch--) {
      h_state(&p, kch[ch], CLABI_ST_KERNEL_CH_STOP, gpu_of(r, e - ch * 1000));
      h_stop(&p, kch[ch]);
    }
  }
  CHECK(h_bad_rc == 0, "%d calls did not return ncclSuccess", h_bad_rc);
  h_finalize(&p, ctx);
  h_close(&p);
}

/* ---- the parent ----------------------------------------------------------------------------- */
typedef struct { pid_t pid[NRANKS]; char stop[600]; } job;

static void start_job(job *j, const char *dir, const char *name, int late, uint64_t comm, int64_t t0) {
  char kv[8][700];
  snprintf(j->stop, sizeof j->stop, "%s/stop-%s", dir, name);
  for (int r = 0; r < NRANKS; r++) {
    snprintf(kv[0], sizeof kv[0], "H_RANK=%d", r);
    snprintf(kv[1], sizeof kv[1], "RANK=%d", r);
    snprintf(kv[2], sizeof kv[2], "H_LATE=%d", late);
    snprintf(kv[3], sizeof kv[3], "H_T0=%" PRId64, t0);
    snprintf(kv[4], sizeof kv[4], "H_STOP=%s", j->stop);
    snprintf(kv[5], sizeof kv[5], "COMMLENS_DIR=%s/traces-%s", dir, name);
    snprintf(kv[6], sizeof kv[6], "COMMLENS_JOB=%s", name);
    snprintf(kv[7], sizeof kv[7], "H_COMM=%" PRIu64, comm);
    char prom[700];
    snprintf(prom, sizeof prom, "COMMLENS_PROM=%s/prom", dir);
    const char *env[] = {kv[0], kv[1], kv[2], kv[3], kv[4], kv[5], kv[6], kv[7], prom, "COMMLENS_PROM_S=1",
                         "COMMLENS_CUPTI=0", "COMMLENS_EVENTS=full", "COMMLENS_SUMMARY=off", NULL};
    j->pid[r] = h_spawn_bg("live_rank", env);
  }
}

/* Asks the job's ranks to stop and reaps them (SIGKILL past 30 s); CHECKs their exits. */
static void stop_job(job *j) {
  FILE *f = fopen(j->stop, "w");
  if (f) fclose(f);
  uint64_t deadline = h_monotonic_ns() + 30000000000ull;
  for (int r = 0; r < NRANKS; r++) {
    if (j->pid[r] <= 0) continue;
    int st = 0;
    while (waitpid(j->pid[r], &st, WNOHANG) == 0) {
      if (h_monotonic_ns() > deadline) { kill(j->pid[r], SIGKILL); waitpid(j->pid[r], &st, 0); break; }
      usleep(20000);
    }
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank %d ended with status %#x", r, st);
  }
}

/* The value of the first sample of an instant query (NAN when none), and its count into *n. */
static double q_value(ps_server *s, const char *promql, int *n) {
  json_object *root = NULL, *res = ps_query(s, promql, &root);
  double v = NAN;
  *n = res ? (int)json_object_array_length(res) : -1;
  if (*n > 0) {
    json_object *val = h_json_get(json_object_array_get_idx(res, 0), "value");
    if (val && json_object_array_length(val) == 2) v = strtod(json_object_get_string(json_object_array_get_idx(val, 1)), NULL);
  }
  json_object_put(root);
  return v;
}

/* Polls until `promql` answers at least `min_n` samples (1 s apart at most), up to limit_s. The
 * seconds it took, or -1. */
static double wait_for(ps_server *s, const char *promql, int min_n, double limit_s) {
  uint64_t t = h_monotonic_ns();
  while (h_monotonic_ns() - t < (uint64_t)(limit_s * 1e9)) {
    int n = 0;
    q_value(s, promql, &n);
    if (n >= min_n) return (double)(h_monotonic_ns() - t) / 1e9;
    usleep(200000);
  }
  return -1;
}

/* The "rank" label of every firing CommlensStraggler of job `name`, joined by commas. */
static void firing_ranks(ps_server *s, const char *name, char *out, size_t n) {
  char q[256];
  snprintf(q, sizeof q, "ALERTS{alertname=\"CommlensStraggler\",alertstate=\"firing\",job=\"%s\"}", name);
  json_object *root = NULL, *res = ps_query(s, q, &root);
  out[0] = 0;
  for (size_t i = 0; res && i < json_object_array_length(res); i++) {
    json_object *m = h_json_get(json_object_array_get_idx(res, i), "metric"), *rk = h_json_get(m, "rank");
    size_t l = strlen(out);
    snprintf(out + l, n - l, "%s%s", l ? "," : "", rk ? json_object_get_string(rk) : "?");
  }
  json_object_put(root);
}

/* `text` with every $job replaced by job, $comm by .* and $__rate_interval by 10s (as Grafana
 * would for one job, every communicator, a 1 s scrape). Static buffer. */
static const char *expand(const char *text, const char *jobname) {
  static char out[2048];
  size_t o = 0;
  for (const char *c = text; *c && o < sizeof out - 128; c++) {
    if (!strncmp(c, "$job", 4)) { o += (size_t)snprintf(out + o, sizeof out - o, "%s", jobname); c += 3; }
    else if (!strncmp(c, "$comm", 5)) { o += (size_t)snprintf(out + o, sizeof out - o, ".*"); c += 4; }
    else if (!strncmp(c, "$__rate_interval", 16)) { o += (size_t)snprintf(out + o, sizeof out - o, "10s"); c += 15; }
    else out[o++] = *c;
  }
  out[o] = 0;
  return out;
}

/* The Grafana dashboard's queries run on this Prometheus for job `jobname`: every panel's
 * expression evaluates and, but for the dropped-records panel (nothing was dropped), shows
 * something; every variable's label_values() series exists. */
static void check_dashboard(ps_server *s, const char *jobname) {
  json_object *d = json_object_from_file("exporters/prometheus/commlens.grafana.json");
  REQUIRE(d, "exporters/prometheus/commlens.grafana.json does not parse");
  json_object *panels = h_json_get(d, "panels");
  int nexpr = 0;
  for (size_t i = 0; panels && i < json_object_array_length(panels); i++) {
    json_object *t = h_json_get(json_object_array_get_idx(panels, i), "targets");
    for (size_t j = 0; t && j < json_object_array_length(t); j++) {
      json_object *e = h_json_get(json_object_array_get_idx(t, j), "expr");
      if (!e) continue;
      const char *q = expand(json_object_get_string(e), jobname);
      json_object *root = NULL, *res = ps_query(s, q, &root);
      int n = res ? (int)json_object_array_length(res) : -1;
      CHECK(n >= (strstr(q, "dropped") ? 0 : 1), "dashboard query %s: %d samples", q, n);
      json_object_put(root);
      nexpr++;
    }
  }
  CHECK(nexpr >= 10, "%d dashboard queries", nexpr);
  json_object *vars = h_json_get(h_json_get(d, "templating"), "list");
  for (size_t i = 0; vars && i < json_object_array_length(vars); i++) {
    json_object *def = h_json_get(json_object_array_get_idx(vars, i), "definition");
    const char *v = def ? json_object_get_string(def) : NULL;
    if (!v || strncmp(v, "label_values(", 13) != 0) continue;
    char series[512];
    snprintf(series, sizeof series, "%s", expand(v + 13, jobname));
    char *comma = strrchr(series, ',');
    if (comma) *comma = 0;
    int n = 0;
    q_value(s, series, &n);
    CHECK(n >= 1, "dashboard variable %s: no series", v);
  }
  json_object_put(d);
}

/* The .prom files of dir, once `want` are there (up to 60 s): their names, NULL-terminated. */
static int wait_files(const char *dir, int want, char **names) {
  char *paths[64];
  int n = 0;
  for (uint64_t t = h_monotonic_ns(); h_monotonic_ns() - t < 60000000000ull; usleep(100000)) {
    n = h_find_files(dir, ".prom", paths, 64);
    if (n >= want) break;
    for (int i = 0; i < n; i++) free(paths[i]);
  }
  if (n < want) return -1;
  for (int i = 0; i < n; i++) {
    const char *b = strrchr(paths[i], '/');
    names[i] = strdup(b ? b + 1 : paths[i]);
    free(paths[i]);
  }
  names[n] = NULL;
  return n;
}

TL_TEST(a_live_straggler_is_named_within_10_s_and_a_clean_job_fires_nothing) {
  if (skip()) return;
  char dir[256], prom[400], sjob[64], cjob[64];
  h_fresh_dir(dir, sizeof dir);
  snprintf(prom, sizeof prom, "%s/prom", dir);
  snprintf(sjob, sizeof sjob, "straggler-%d", (int)getpid());
  snprintf(cjob, sizeof cjob, "clean-%d", (int)getpid());
  ps_server s = {0};
  snprintf(s.dir, sizeof s.dir, "%s", dir);
  job js = {0}, jc = {0};
  int64_t t0 = (int64_t)h_monotonic_ns() + 300000000;
  start_job(&js, dir, sjob, LATE_RANK, 0x5eed5a7e11a11ull, t0);
  start_job(&jc, dir, cjob, -1, 0xc1ea4c0de0001ull, t0);
  char *names[65];
  int n = wait_files(prom, 2 * NRANKS, names);
  CHECK(n == 2 * NRANKS, "%d textfiles in %s, want %d", n, prom, 2 * NRANKS);
  if (n == 2 * NRANKS && ps_serve_files(&s, prom) == 0 && ps_start(&s, (const char *const *)names, rules_path(), 1) == 0) {
    char q[512], ranks[256];
    /* the first scraped sample of the straggler job's four ranks, then the alert */
    snprintf(q, sizeof q, "commlens_comm_kernel_seconds_count{job=\"%s\"}", sjob);
    double first = wait_for(&s, q, NRANKS, 60);
    CHECK(first >= 0, "no samples of %s in 60 s", sjob);
    uint64_t t_first = h_monotonic_ns();
    snprintf(q, sizeof q, "ALERTS{alertname=\"CommlensStraggler\",alertstate=\"firing\",job=\"%s\"}", sjob);
    double fire = first >= 0 ? wait_for(&s, q, 1, 40) : -1;
    double fire_s = fire >= 0 ? (double)(h_monotonic_ns() - t_first) / 1e9 : -1;
    fprintf(stderr, "  note: CommlensStraggler fired %.1f s after the straggler job's first scraped sample\n", fire_s);
    CHECK(fire >= 0, "CommlensStraggler never fired for %s (40 s)", sjob);
    CHECK(fire_s <= FIRE_S, "CommlensStraggler fired after %.1f s, want <= %d", fire_s, FIRE_S);
    firing_ranks(&s, sjob, ranks, sizeof ranks);
    CHECK(!strcmp(ranks, "2"), "firing for ranks \"%s\" of %s, want \"2\"", ranks, sjob);
    int k = 0;
    snprintf(q, sizeof q, "commlens:comm_lateness_seconds:10s{job=\"%s\",rank=\"2\"}", sjob);
    double late = q_value(&s, q, &k);
    CHECK(k == 1 && late > 0.0035 && late < 0.0045, "rank 2's lateness %.6f s (%d samples), planted 0.004", late, k);
    /* the clean job: its ranks' lateness evaluated at least 12 times (longer than the
     * window's two samples plus `for`), and never an alert, pending or firing */
    snprintf(q, sizeof q, "count_over_time(commlens:comm_lateness_seconds:10s{job=\"%s\"}[5m]) >= 12", cjob);
    CHECK(wait_for(&s, q, NRANKS, 60) >= 0, "the clean job's lateness was not evaluated 12 times in 60 s");
    snprintf(q, sizeof q, "count_over_time(ALERTS{job=\"%s\"}[5m])", cjob);
    q_value(&s, q, &k);
    CHECK(k == 0, "%d alert series for the clean job", k);
    snprintf(q, sizeof q, "count_over_time(ALERTS{job=\"%s\",rank!=\"2\"}[5m])", sjob);
    q_value(&s, q, &k);
    CHECK(k == 0, "%d alert series for other ranks of the straggler job", k);
    check_dashboard(&s, sjob);
  } else CHECK(0, "could not start the file server or Prometheus (%s)", dir);
  ps_stop(&s);
  stop_job(&js);
  stop_job(&jc);
  for (int i = 0; i < n && i < 64; i++) free(names[i]);
  if (!tl_cur_failed) h_rm_rf(dir);
  else fprintf(stderr, "  kept %s\n", dir);
}

/* ---- a simulated exporter of many ranks -------------------------------------------------------- */
/* Every second, 100 more collectives per rank of one communicator: 2 ms of kernel time on the
 * straggler, 6 ms give or take 0.3 ms on the others; one exposition of every rank, written by the
 * plugin's formatter. Runs until killed (at most 10 minutes). */
H_CHILD(sim_exporter) {
  int n = (int)h_env_i64("H_SIM_RANKS", 256), late = (int)h_env_i64("H_SIM_LATE", 1);
  const char *path = getenv("H_SIM_FILE");
  REQUIRE(n > 0 && path, "sim settings");
  cl_prom_comms *c = calloc((size_t)n, sizeof *c);
  cl_prom_rank *r = calloc((size_t)n, sizeof *r);
  const cl_summary **sums = calloc((size_t)n, sizeof *sums);
  char (*host)[32] = calloc((size_t)n, 32);
  REQUIRE(c && r && sums && host, "memory");
  for (int i = 0; i < n; i++) {
    snprintf(host[i], 32, "node%04d", i / 8);
    r[i] = (cl_prom_rank){.rank = i, .gpu = i % 8, .host = host[i], .job = "simjob", .version = "sim", .abi = 5, .comms = &c[i]};
  }
  cl_sb b = {0};
  uint64_t k = 0;
  for (int sec = 0; sec < 600; sec++, k += 100) {
    for (int i = 0; i < n; i++)
      for (uint64_t j = k; j < k + 100; j++) {
        uint64_t kern = i == late ? 2000000 : 6000000 - (cl_hash64(j * 8191 + (uint64_t)i) % 300000);
        cl_prom_comms_add(&c[i], 0x51a1a7edull, 1048576, 1, kern, 20000);
      }
    for (int i = 0; i < n; i++) r[i].colls = r[i].colls_timed = c[i].c[0].colls;
    cl_prom_format_ranks(&b, r, sums, (size_t)n);
    REQUIRE(cl_prom_write_text(path, &b) == 0, "write %s", path);
    sleep(1);
  }
}

TL_TEST(simulated_ranks_name_the_straggler) {
  if (skip()) return;
  int n = (int)h_env_i64("COMMLENS_PROM_SIM_RANKS", 256), late = n * 3 / 4 + 1;
  char dir[256], files[400], kv[3][500];
  h_fresh_dir(dir, sizeof dir);
  snprintf(files, sizeof files, "%s/files", dir);
  REQUIRE(mkdir(files, 0755) == 0, "mkdir %s", files);
  snprintf(kv[0], sizeof kv[0], "H_SIM_RANKS=%d", n);
  snprintf(kv[1], sizeof kv[1], "H_SIM_LATE=%d", late);
  snprintf(kv[2], sizeof kv[2], "H_SIM_FILE=%s/sim.prom", files);
  const char *env[] = {kv[0], kv[1], kv[2], NULL};
  uint64_t t_start = h_monotonic_ns();
  pid_t sim = h_spawn_bg("sim_exporter", env);
  char *names[65];
  ps_server s = {0};
  snprintf(s.dir, sizeof s.dir, "%s", dir);
  int nf = wait_files(files, 1, names);
  CHECK(nf == 1, "the simulated exporter wrote no file in 60 s");
  if (nf == 1 && ps_serve_files(&s, files) == 0 && ps_start(&s, (const char *const *)names, rules_path(), 1) == 0) {
    char q[256], ranks[256], want[32];
    double first = wait_for(&s, "count(commlens_comm_kernel_seconds_count{job=\"simjob\"})", 1, 60);
    uint64_t t_first = h_monotonic_ns();
    CHECK(first >= 0, "no samples of the simulated job in 60 s");
    snprintf(q, sizeof q, "ALERTS{alertname=\"CommlensStraggler\",alertstate=\"firing\",job=\"simjob\"}");
    double fire = first >= 0 ? wait_for(&s, q, 1, 60) : -1;
    double fire_s = fire >= 0 ? (double)(h_monotonic_ns() - t_first) / 1e9 : -1;
    int k = 0;
    double series = q_value(&s, "count(commlens_comm_kernel_seconds_count{job=\"simjob\"})", &k);
    fprintf(stderr, "  note: %d simulated ranks (%.0f in Prometheus): CommlensStraggler fired %.1f s after the first "
                    "scraped sample (%.1f s after the exporter started)\n", n, series, fire_s,
            fire >= 0 ? (double)(h_monotonic_ns() - t_start) / 1e9 : -1.0);
    CHECK(series == n, "%.0f ranks in Prometheus, want %d", series, n);
    CHECK(fire >= 0, "CommlensStraggler never fired for the simulated job (60 s)");
    firing_ranks(&s, "simjob", ranks, sizeof ranks);
    snprintf(want, sizeof want, "%d", late);
    CHECK(!strcmp(ranks, want), "firing for ranks \"%s\", want \"%s\"", ranks, want);
  } else CHECK(0, "could not start the file server or Prometheus (%s)", dir);
  ps_stop(&s);
  if (sim > 0) { kill(sim, SIGKILL); waitpid(sim, NULL, 0); }
  for (int i = 0; i < nf; i++) free(names[i]);
  if (!tl_cur_failed) h_rm_rf(dir);
  else fprintf(stderr, "  kept %s\n", dir);
}

H_MAIN("exporters/prom_live")
