/* test_verdict_data.c: the real recordings of test/data/verdict/ (examples/gpu_verdict.sh: one
 * GPU shared, or a GPU per rank) and their truth (each run's manifest.json: what was planted,
 * and every rank's own per-step times). What is held here is what holds of the data itself:
 * every run complete (every rank's trace or digest, loaded, default mode, nothing dropped,
 * every collective GPU-timed), the ranks of a run on one host boot (one boot_id), and the planted
 * stragglers visible in the raw times (ranks of one boot share CLOCK_REALTIME, so no alignment is
 * needed to see who came last); and the CLI's verdict on every run against that truth
 * (check_verdict): the planted ranks and their pattern named, nothing else named that the
 * application's own ready times do not show late. */
#include "harness.h"
#include "tr_load.h"
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DATA "test/data/verdict"
#define MAXR 8
#define MAXRUNS 64
#define GPU_LATE_NS 5000000ll   /* 12 extra 8192^3 bf16 products are ~17 ms of H100 work */

typedef struct { const char *comm, *name; int64_t seq, ts; } coll;   /* strings borrowed from the trace */
typedef struct { coll *v; size_t n; } colls;

typedef struct {
  const char *dir;
  json_object *m;              /* the manifest */
  int nranks;
  tr_trace t[MAXR];            /* by rank */
  colls host[MAXR], gpu[MAXR]; /* coll (enqueue on the host) and coll_gpu (on the GPU) slices */
  int digests;                 /* kept as digests: checked through the CLI's report */
} run;

static json_object *get(json_object *o, const char *k) { return h_json_get(o, k); }

static colls slices(const tr_trace *t, const char *cat) {
  colls c = {calloc(t->n + 1, sizeof(coll)), 0};
  for (size_t i = 0; i < t->n; i++) {
    json_object *ev = tr_event(t, i);
    const char *ec = tr_cat(ev);
    int64_t seq, ts;
    if (tr_ph(ev) != 'X' || !ec || strcmp(ec, cat) || tr_arg_i64(ev, "seq", &seq) || tr_ts_ns(ev, &ts)) continue;
    c.v[c.n++] = (coll){tr_arg_str(ev, "comm"), tr_name(ev), seq, ts};
  }
  return c;
}

static const coll *find(const colls *c, const coll *k) {
  for (size_t i = 0; i < c->n; i++)
    if (c->v[i].seq == k->seq && c->v[i].comm && k->comm && !strcmp(c->v[i].comm, k->comm) &&
        c->v[i].name && k->name && !strcmp(c->v[i].name, k->name))
      return &c->v[i];
  return NULL;
}

/* Loads a run; 0 when its manifest and every rank's trace loaded (failures CHECKed). */
static int load(run *r, const char *dir) {
  memset(r, 0, sizeof *r);
  r->dir = dir;
  char path[600];
  if (snprintf(path, sizeof path, "%s/manifest.json", dir) >= (int)sizeof path) { CHECK(0, "%s: path too long", dir); return -1; }
  r->m = json_object_from_file(path);
  if (!r->m) { CHECK(0, "%s: no manifest.json that parses", dir); return -1; }
  r->nranks = json_object_get_int(get(r->m, "ranks"));
  CHECK(r->nranks >= 2 && r->nranks <= 4, "%s: %d ranks (the runs have 2-4)", dir, r->nranks);
  if (r->nranks < 2 || r->nranks > MAXR) return -1;
  char *paths[16];
  int n = h_find_traces(dir, paths, 16), ok = 1;
  if (!n) {   /* kept as digests (the default output): the CLI reads them, the checks below use the report */
    char *dg[16];
    r->digests = h_find_files(dir, ".digest", dg, 16);
    for (int i = 0; i < r->digests; i++) free(dg[i]);
    CHECK(r->digests == r->nranks, "%s: %d digests for %d ranks", dir, r->digests, r->nranks);
    return r->digests == r->nranks ? 0 : -1;
  }
  CHECK(n == r->nranks, "%s: %d trace files for %d ranks", dir, n, r->nranks);
  for (int i = 0; i < n; i++) {
    tr_trace t;
    char err[300];
    int64_t rank = -1;
    if (tr_load(&t, paths[i], err, sizeof err) != 0) { CHECK(0, "%s: %s", paths[i], err); ok = 0; }
    else if (tr_header_i64(&t, "rank", &rank) || rank < 0 || rank >= r->nranks || r->t[rank].root) {
      CHECK(0, "%s: rank %lld is not one of 0..%d, once", paths[i], (long long)rank, r->nranks - 1);
      tr_free(&t);
      ok = 0;
    } else {
      r->t[rank] = t;
      r->host[rank] = slices(&t, "coll");
      r->gpu[rank] = slices(&t, "coll_gpu");
    }
    free(paths[i]);
  }
  return ok && n == r->nranks ? 0 : -1;
}

static void unload(run *r) {
  for (int i = 0; i < MAXR; i++) {
    if (r->t[i].root) tr_free(&r->t[i]);
    free(r->host[i].v);
    free(r->gpu[i].v);
  }
  json_object_put(r->m);
}

static int for_each_run(char dirs[MAXRUNS][300]) {
  DIR *d = opendir(DATA);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *de; (de = readdir(d)) && n < MAXRUNS;) {
    char p[300];
    struct stat st;
    if (de->d_name[0] == '.') continue;
    if (snprintf(p, sizeof p, DATA "/%s", de->d_name) >= (int)sizeof p) continue;
    if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) snprintf(dirs[n++], 300, "%s", p);
  }
  closedir(d);
  return n;
}

/* Manifest shape: the run's name, its pattern, the planted ranks within the run, a clean
 * exit, and every rank's per-step record. */
static void check_manifest(const run *r, const char *name) {
  const char *rn = json_object_get_string(get(r->m, "run"));
  CHECK(rn && !strcmp(rn, name), "%s: manifest names run %s", r->dir, rn ? rn : "(none)");
  CHECK(json_object_get_string(get(r->m, "pattern")) != NULL, "%s: no pattern", r->dir);
  CHECK(json_object_get_int(get(r->m, "exit_status")) == 0, "%s: the job exited %d", r->dir,
        json_object_get_int(get(r->m, "exit_status")));
  json_object *planted = get(r->m, "planted");
  CHECK(json_object_is_type(planted, json_type_array), "%s: planted is not a list", r->dir);
  for (size_t i = 0; planted && i < json_object_array_length(planted); i++) {
    int pr = json_object_get_int(get(json_object_array_get_idx(planted, i), "rank"));
    CHECK(pr >= 0 && pr < r->nranks, "%s: planted rank %d outside the run", r->dir, pr);
  }
  for (int k = 0; k < r->nranks; k++) {
    char key[16];
    snprintf(key, sizeof key, "%d", k);
    json_object *steps = get(get(r->m, "steps"), key);
    CHECK(steps && json_object_array_length(steps) >= 60, "%s: rank %d has %zu step records", r->dir, k,
          steps ? json_object_array_length(steps) : 0);
  }
}

/* Every trace: default mode, complete, nothing dropped, every collective GPU-timed; one host
 * boot for the whole run, and its clock-sync state recorded. */
static void check_traces(const run *r) {
  const char *boot0 = NULL, *host0 = NULL;
  uint64_t dev = 0;
  int ndev = 0;
  for (int k = 0; k < r->nranks; k++) {
    const tr_trace *t = &r->t[k];
    json_object *h = t->header, *sync = get(h, "clock_sync");
    const char *boot = json_object_get_string(get(h, "boot_id")), *host = json_object_get_string(get(h, "host"));
    const char *events = json_object_get_string(get(h, "events"));
    CHECK(events && !strcmp(events, "default"), "%s rank %d: events %s, not the default", r->dir, k, events);
    CHECK(boot && strlen(boot) == 36, "%s rank %d: boot_id %s", r->dir, k, boot ? boot : "(absent)");
    CHECK(sync && json_object_object_length(sync) == 3 && get(sync, "synchronised") && get(sync, "maxerror_us"),
          "%s rank %d: clock_sync %s", r->dir, k, sync ? json_object_to_json_string(sync) : "(absent)");
    if (!boot0) boot0 = boot, host0 = host;
    CHECK(boot && boot0 && !strcmp(boot, boot0), "%s rank %d: boot_id %s, rank 0's %s", r->dir, k, boot, boot0);
    CHECK(host && host0 && !strcmp(host, host0), "%s rank %d: host %s, rank 0's %s", r->dir, k, host, host0);
    int64_t colls = -1, timed = -2, dropped = -1, v = 0;
    CHECK(json_object_get_boolean(get(t->stats, "final")), "%s rank %d: not the exit flush", r->dir, k);
    CHECK(tr_stats_i64(t, "dropped", &dropped) == 0 && dropped == 0, "%s rank %d: %lld dropped", r->dir, k,
          (long long)dropped);
    CHECK(tr_stats_i64(t, "collectives", &colls) == 0 && tr_stats_i64(t, "collectives_timed", &timed) == 0 &&
          colls > 0 && colls == timed, "%s rank %d: %lld collectives, %lld GPU-timed", r->dir, k,
          (long long)colls, (long long)timed);
    CHECK(r->host[k].n == (size_t)colls && r->gpu[k].n == (size_t)colls, "%s rank %d: %zu coll, %zu coll_gpu "
          "slices for %lld collectives", r->dir, k, r->host[k].n, r->gpu[k].n, (long long)colls);
    CHECK(tr_header_i64(t, "cuda_device", &v) == 0 && v >= 0 && v < 64, "%s rank %d: CUDA device %lld", r->dir, k, (long long)v);
    dev |= 1ull << (v & 63); ndev += v != 0;
  }
  /* one GPU shared (every rank on device 0) or a GPU per rank (no device twice) */
  CHECK(!ndev || __builtin_popcountll(dev) == r->nranks, "%s: ranks share some GPUs, not one or all", r->dir);
  /* every collective instance of rank 0 is on every rank */
  for (size_t i = 0; i < r->host[0].n; i++)
    for (int k = 1; k < r->nranks; k++)
      if (!find(&r->host[k], &r->host[0].v[i])) {
        CHECK(0, "%s: %s #%lld of rank 0 is not on rank %d", r->dir, r->host[0].v[i].name,
              (long long)r->host[0].v[i].seq, k);
        return;
      }
}

/* A planted step is visible when one instance that the planted rank enqueued inside that step
 * (the manifest's start..end, the same CLOCK_REALTIME as the trace) has it last, by at least
 * `by_ns` over the next rank: on the host (a sleep) or on the GPU (extra GPU work). */
static int step_visible(const run *r, int pr, int64_t start, int64_t end, int on_gpu, int64_t by_ns) {
  const colls *mine = &r->host[pr];
  for (size_t i = 0; i < mine->n; i++) {
    if (mine->v[i].ts < start || mine->v[i].ts > end) continue;
    const coll *me = on_gpu ? find(&r->gpu[pr], &mine->v[i]) : &mine->v[i];
    if (!me) continue;
    int64_t next = INT64_MIN;
    int all = 1;
    for (int k = 0; k < r->nranks; k++) {
      if (k == pr) continue;
      const coll *o = find(on_gpu ? &r->gpu[k] : &r->host[k], me);
      if (!o) { all = 0; break; }
      if (o->ts > next) next = o->ts;
    }
    if (all && me->ts - next >= by_ns) return 1;
  }
  return 0;
}

/* Each planted straggler is there in the raw times: in at least 80% of the steps it was planted
 * in (every step of a one-off), the planted rank is last by half its sleep, or by 5 ms on the
 * GPU for extra GPU work. (Measured: 70/80 to 80/80 of the steps; the misses are steps where
 * the GPU's time slicing delayed another rank as much.) */
static void check_planted_visible(const run *r) {
  json_object *planted = get(r->m, "planted");
  for (size_t i = 0; planted && i < json_object_array_length(planted); i++) {
    json_object *p = json_object_array_get_idx(planted, i);
    int pr = json_object_get_int(get(p, "rank")), on_gpu = get(p, "gpu_products") != NULL;
    int64_t by = on_gpu ? GPU_LATE_NS : (int64_t)(json_object_get_double(get(p, "delay_ms")) * 1e6 / 2);
    char key[16];
    snprintf(key, sizeof key, "%d", pr);
    json_object *steps = get(get(r->m, "steps"), key);
    int nplanted = 0, seen = 0;
    for (size_t s = 0; steps && s < json_object_array_length(steps); s++) {
      json_object *row = json_object_array_get_idx(steps, s);
      double host_ms = json_object_get_double(json_object_array_get_idx(row, 3));
      int gpu_n = json_object_get_int(json_object_array_get_idx(row, 4));
      if (on_gpu ? gpu_n <= 0 : host_ms <= 0) continue;
      nplanted++;
      seen += step_visible(r, pr, json_object_get_int64(json_object_array_get_idx(row, 1)),
                           json_object_get_int64(json_object_array_get_idx(row, 2)), on_gpu, by);
    }
    CHECK(nplanted > 0, "%s: rank %d was planted in no step", r->dir, pr);
    CHECK(seen * 5 >= nplanted * 4, "%s: rank %d last by >= %.1f ms %s in %d of its %d planted steps", r->dir, pr,
          (double)by / 1e6, on_gpu ? "on the GPU" : "on the host", seen, nplanted);
  }
}

/* The CLI reads every run whole: every rank, no file skipped. */
static void check_cli(const run *r) {
  json_object *j = h_report_json(r->dir);
  if (!j) return;
  json_object *ranks = get(j, "ranks");
  CHECK(ranks && (int)json_object_array_length(ranks) == r->nranks, "%s: the report has %zu ranks of %d", r->dir,
        ranks ? json_object_array_length(ranks) : 0, r->nranks);
  CHECK(json_object_get_int(get(j, "files_skipped")) == 0, "%s: %d files skipped", r->dir,
        json_object_get_int(get(j, "files_skipped")));
  json_object_put(j);
}

/* The application's own ready time of rank k at step s: the sixth column where the run recorded
 * it (the forward pass's end: DDP's all-reduces come after it), else the step's start plus what
 * was slept (FSDP's all-gathers come in the forward pass). */
static double ready_ns(const run *r, int k, size_t s) {
  char key[16];
  snprintf(key, sizeof key, "%d", k);
  json_object *row = json_object_array_get_idx(get(get(r->m, "steps"), key), s);
  const char *mode = json_object_get_string(get(r->m, "mode"));
  if (json_object_array_length(row) >= 6 && !(mode && !strcmp(mode, "fsdp")))
    return (double)json_object_get_int64(json_object_array_get_idx(row, 5));
  return (double)json_object_get_int64(json_object_array_get_idx(row, 1)) +
         json_object_get_double(json_object_array_get_idx(row, 3)) * 1e6;
}

/* Rank k per the ready times (after the first step): the share of steps it was ready last in,
 * and what its lead over the next-latest added up to, as a share of rank 0's steps. */
static void truth_late(const run *r, int k, double *last_share, double *cost_share) {
  json_object *s0 = get(get(r->m, "steps"), "0");
  size_t n = json_object_array_length(s0);
  double lead = 0, span = 0;
  int last = 0;
  for (size_t s = 1; s < n; s++) {
    double mine = ready_ns(r, k, s), other = -1e30;
    for (int j = 0; j < r->nranks; j++) if (j != k) other = fmax(other, ready_ns(r, j, s));
    if (mine > other) { last++; lead += mine - other; }
    json_object *row = json_object_array_get_idx(s0, s);
    span += (double)(json_object_get_int64(json_object_array_get_idx(row, 2)) - json_object_get_int64(json_object_array_get_idx(row, 1)));
  }
  *last_share = n > 1 ? (double)last / (double)(n - 1) : 0;
  *cost_share = span > 0 ? lead / span : 0;
}

/* Planted rank pr's steps after the first, per the ready times: late[s - 1] is 1 where it was
 * ready after every other rank by `half`, 0 where not, -1 where it did not sleep (its row's
 * sleep is 0: not a planted step). Returns the count (0: no steps; *late NULL). */
static size_t late_steps(const run *r, int pr, double half, signed char **late) {
  char key[16];
  snprintf(key, sizeof key, "%d", pr);
  json_object *steps = get(get(r->m, "steps"), key);
  size_t n = steps && json_object_array_length(steps) > 1 ? json_object_array_length(steps) - 1 : 0;
  *late = n ? malloc(n) : NULL;
  if (!*late) return 0;
  for (size_t s = 1; s <= n; s++) {
    if (json_object_get_double(json_object_array_get_idx(json_object_array_get_idx(steps, s), 3)) <= 0) {
      (*late)[s - 1] = -1;
      continue;
    }
    double mine = ready_ns(r, pr, s), other = -1e30;
    for (int j = 0; j < r->nranks; j++) if (j != pr) other = fmax(other, ready_ns(r, j, s));
    (*late)[s - 1] = mine - other >= half;
  }
  return n;
}

/* The period a plant of every step took in the application's own ready times (late_steps' n
 * steps): the smallest k (1..8) with a phase whose steps have the rank ready last in 70% of them,
 * and at most 30% of the others (k = 1: 70% of all). Ranks time-sharing a GPU can beat: a 2 ms sleep before
 * every step of 125 ms left its rank last in 96% of the odd steps and 14% of the even ones
 * (s_late2_ddp), which is what a verdict should say. 0 when none fits. */
static int realized_period(const signed char *late, size_t n) {
  int found = 0;
  for (int k = 1; k <= 8 && !found; k++)
    for (int ph = 0; ph < k && !found; ph++) {
      int in = 0, in_late = 0, out = 0, out_late = 0;
      for (size_t s = 1; s <= n; s++) {
        if (late[s - 1] < 0) continue;
        if ((int)(s % (size_t)k) == ph) { in++; in_late += late[s - 1]; } else { out++; out_late += late[s - 1]; }
      }
      if (in > 0 && in_late * 10 >= in * 7 && out_late * 10 <= out * 3) found = k;
    }
  return found;
}

/* A planted rank's pattern as the verdict must name it (docs/verdict.md): every step, every
 * N-th, taking turns, a burst over its steps, slow on the GPU. */
static void check_pattern(const run *r, json_object *p, json_object *sus, int nrep, const char *line) {
  const char *pat = json_object_get_string(get(sus, "pattern"));
  int every = get(p, "every") ? json_object_get_int(get(p, "every")) : 1, gpu = get(p, "gpu_products") != NULL;
  if (!pat) { CHECK(0, "%s: no pattern", r->dir); return; }
  if (get(p, "first"))
    CHECK(!strcmp(pat, "burst") && json_object_get_int(json_object_array_get_idx(get(sus, "burst"), 0)) <= json_object_get_int(get(p, "last")) &&
          json_object_get_int(json_object_array_get_idx(get(sus, "burst"), 1)) >= json_object_get_int(get(p, "first")),
          "%s: a burst over steps %d-%d, read as: %s", r->dir, json_object_get_int(get(p, "first")), json_object_get_int(get(p, "last")), line);
  else if (every == 1) {   /* as the ready times show it held (realized_period), for a host sleep */
    int k = 1;
    if (!gpu) {
      signed char *late;
      size_t n = late_steps(r, json_object_get_int(get(p, "rank")), json_object_get_double(get(p, "delay_ms")) * 1e6 / 2, &late);
      k = realized_period(late, n);
      free(late);
    }
    if (k <= 1) CHECK(!strcmp(pat, "every"), "%s: every step, read as: %s", r->dir, line);
    else CHECK(!strcmp(pat, "every_kth") && json_object_get_int(get(sus, "period")) == k,
               "%s: every step planted, every %d-th in the ready times, read as: %s", r->dir, k, line);
  }
  else CHECK((!strcmp(pat, "every_kth") || (nrep > 1 && !strcmp(pat, "turns"))) && json_object_get_int(get(sus, "period")) == every,
             "%s: every %d-th step%s, read as: %s", r->dir, every, nrep > 1 ? " in turns" : "", line);
  CHECK(json_object_get_boolean(get(sus, "gpu_side")) == gpu, "%s: %s side, read as: %s", r->dir, gpu ? "GPU" : "host", line);
}

/* The CLI's verdict on the run, held to its truth (no run is named here: the rules are read from
 * the manifest): every rank planted again and again (every step, every Nth, in turns, a burst,
 * on the GPU) is named, with its pattern, and the first named was planted; a rank named that
 * was not planted must be late in the application's own ready times (ready last in a third of
 * the steps or more, its lead adding up to 1% of the job or more: on two GPUs of one H100 or
 * H200 host one rank's host runs behind, planted or not); a one-off planted is listed as a stall
 * (at least half its sleep); a run with nothing planted names nothing the ready times do not
 * show. The ranks of the run's one host boot are one clock: offset exactly 0, error 0. */
static void check_verdict(const run *r) {
  json_object *j = h_report_json(r->dir);
  if (!j) { CHECK(0, "%s: no report --json", r->dir); return; }
  json_object *v = get(j, "verdict"), *cm = get(j, "clock_model"), *planted = get(r->m, "planted");
  const char *kind = json_object_get_string(get(v, "kind")), *line = json_object_get_string(get(v, "line"));
  json_object *rep[MAXR] = {0};
  int nrep = 0, oneoff = -1;
  double oneoff_ms = 0;
  for (size_t i = 0; planted && i < json_object_array_length(planted); i++) {
    json_object *p = json_object_array_get_idx(planted, i);
    int pr = json_object_get_int(get(p, "rank"));
    if (pr < 0 || pr >= MAXR) continue;
    if (json_object_get_boolean(get(p, "one_off"))) { oneoff = pr; oneoff_ms = json_object_get_double(get(p, "delay_ms")); }
    else { rep[pr] = p; nrep++; }
  }
  REQUIRE(kind && line, "%s: no verdict", r->dir);
  fprintf(stderr, "  %s: %s\n", strrchr(r->dir, '/') + 1, line);
  json_object *st = get(v, "stragglers");
  size_t nst = st ? json_object_array_length(st) : 0;
  if (nrep) CHECK(!strcmp(kind, "straggler") && nst >= 1 && rep[json_object_get_int(get(json_object_array_get_idx(st, 0), "rank")) & (MAXR - 1)],
                  "%s: the planted rank is not named first: %s", r->dir, line);
  int named[MAXR] = {0};
  for (size_t k = 0; k < nst; k++) {
    json_object *sus = json_object_array_get_idx(st, k);
    int w = json_object_get_int(get(sus, "rank"));
    if (w < 0 || w >= r->nranks) { CHECK(0, "%s: rank %d named", r->dir, w); continue; }
    named[w] = 1;
    if (rep[w]) { check_pattern(r, rep[w], sus, nrep, line); continue; }
    double last, cost;
    truth_late(r, w, &last, &cost);
    CHECK(last >= 1.0 / 3 && cost >= 0.01, "%s: rank %d named, not planted, and ready last in %.0f%% of the steps "
          "adding %.1f%% of the job: %s", r->dir, w, 100 * last, 100 * cost, line);
  }
  for (int w = 0; w < MAXR; w++)   /* every planted rank named, in the line too */
    if (rep[w]) {
      char who[32];
      snprintf(who, sizeof who, "rank %d (", w);
      CHECK(named[w] && strstr(line, who), "%s: planted rank %d is not named: %s", r->dir, w, line);
    }
  if (!nrep && !nst) CHECK(!strcmp(kind, oneoff >= 0 ? "stalls_only" : "none"), "%s: %s", r->dir, line);
  if (oneoff >= 0) {   /* the one-off is listed, whatever else the run had */
    int listed = 0;
    json_object *sl = get(v, "stalls");
    for (size_t k = 0; sl && k < json_object_array_length(sl); k++) {
      json_object *x = json_object_array_get_idx(sl, k);
      listed |= json_object_get_int(get(x, "rank")) == oneoff && json_object_get_int64(get(x, "margin_ns")) >= oneoff_ms * 5e5;
    }
    CHECK(listed, "%s: rank %d's one-off stall of %.0f ms is not listed: %s", r->dir, oneoff, oneoff_ms, line);
  }
  CHECK(json_object_array_length(get(cm, "clocks")) == 1 && json_object_array_length(get(cm, "pairs")) == 0,
        "%s: one host boot is not one clock", r->dir);
  /* default mode records no kernel_ch: the channel verdict says so and what to set */
  json_object *ch = get(v, "channels");
  const char *chl = json_object_get_string(get(ch, "line"));
  CHECK(chl && (!strcmp(chl, "no channel events in this trace (COMMLENS_EVENTS=default+kernelch)") ||
                !strncmp(chl, "no per-instance channel times", 29)) &&
        json_object_array_length(get(ch, "ranks")) == 0, "%s: channel verdict %s", r->dir, chl ? chl : "(none)");
  json_object *ranks = get(j, "ranks");
  for (size_t k = 0; ranks && k < json_object_array_length(ranks); k++) {
    json_object *ck = get(json_object_array_get_idx(ranks, k), "clock");
    CHECK(json_object_get_int64(get(ck, "offset_ns")) == 0 && json_object_get_int64(get(ck, "err_ns")) == 0,
          "%s: rank %zu at offset %lld +- %lld, want exactly 0", r->dir, k, (long long)json_object_get_int64(get(ck, "offset_ns")),
          (long long)json_object_get_int64(get(ck, "err_ns")));
  }
  json_object_put(j);
}

/* A digest run's planted host sleeps, in its ready times: the planted rank is ready after every
 * other rank by half its sleep in 70% of its planted steps (measured: 73 of 99 steps for a 2 ms
 * sleep among ranks time-sharing a GPU, whose hosts resume a step a slice apart; 96-100% for the
 * others), or in 70% of one phase of a period its plant took (realized_period). */
static void check_ready_visible(const run *r) {
  json_object *planted = get(r->m, "planted");
  for (size_t i = 0; planted && i < json_object_array_length(planted); i++) {
    json_object *p = json_object_array_get_idx(planted, i);
    int pr = json_object_get_int(get(p, "rank"));
    if (get(p, "gpu_products") || pr < 0 || pr >= r->nranks) continue;
    double half = json_object_get_double(get(p, "delay_ms")) * 1e6 / 2;
    signed char *late;
    size_t ns = late_steps(r, pr, half, &late);
    int n = 0, seen = 0;
    for (size_t s = 0; s < ns; s++)
      if (late[s] >= 0) { n++; seen += late[s]; }
    int every = get(p, "every") ? json_object_get_int(get(p, "every")) : 1;
    int period = every == 1 ? realized_period(late, ns) : 0;
    free(late);
    CHECK(n > 0 && (seen * 10 >= n * 7 || period > 1),
          "%s: rank %d ready last by half its sleep in %d of its %d planted steps", r->dir, pr, seen, n);
  }
}

TL_TEST(every_recorded_run_is_complete_and_its_truth_visible) {
  char dirs[MAXRUNS][300];
  int n = for_each_run(dirs), clean = 0, fsdp = 0;
  REQUIRE(n >= 35, "%d runs under " DATA " (from %s)", n, getenv("PWD") ? getenv("PWD") : "?");
  for (int i = 0; i < n; i++) {
    run r;
    if (load(&r, dirs[i]) == 0) {
      check_manifest(&r, strrchr(dirs[i], '/') + 1);
      if (r.digests) check_ready_visible(&r);
      else { check_traces(&r); check_planted_visible(&r); }
      check_cli(&r);
      check_verdict(&r);
      const char *pat = json_object_get_string(get(r.m, "pattern")), *mode = json_object_get_string(get(r.m, "mode"));
      clean += pat && !strcmp(pat, "none") && json_object_array_length(get(r.m, "planted")) == 0;
      fsdp += mode && !strcmp(mode, "fsdp");
    }
    unload(&r);
  }
  CHECK(clean >= 2, "%d clean runs", clean);
  CHECK(fsdp >= 1, "%d FSDP runs", fsdp);
}

TL_MAIN("tools/verdict_data")
