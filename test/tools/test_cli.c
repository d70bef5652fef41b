/* test_cli.c: drives the `commlens` CLI (env COMMLENS_CLI, else build/commlens) on
 * synthetic multi-rank jobs with known injected behaviour (synth_gen.h), and on bad input:
 * truncated files, other jobs, other formats, empty directories, non-trace files; its
 * command-line conventions, its progress line, and its Perfetto protobuf output (decoded by
 * protoc with tools/commlens/merge/perfetto_min.proto, independently of our encoder). */
#include "tl.h"
#include "synth_gen.h"
#include <json-c/json.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *cli(void) { const char *c = getenv("COMMLENS_CLI"); return c && *c ? c : "build/commlens"; }

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb"); if (!f) return NULL;
  fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1); size_t k = fread(b, 1, (size_t)n, f); b[k] = 0; fclose(f);
  if (len) *len = k;
  return b;
}

/* Runs "CLI args" with stdout and stderr captured; returns the exit code. Caller frees. */
static int run_cli(const char *args, char **out, char **err) {
  char cmd[4096], o[64], e[64];   /* per process: make test runs its variants side by side */
  snprintf(o, sizeof o, "/tmp/commlens_t_out.%d", (int)getpid());
  snprintf(e, sizeof e, "/tmp/commlens_t_err.%d", (int)getpid());
  snprintf(cmd, sizeof cmd, "%s %s >%s 2>%s", cli(), args, o, e);
  int st = system(cmd);
  *out = slurp(o, NULL); *err = slurp(e, NULL);
  unlink(o); unlink(e);
  if (!*out) *out = strdup("");
  if (!*err) *err = strdup("");
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *mkdir_tmp(void) { char t[] = "/tmp/commlens_test_XXXXXX"; return strdup(mkdtemp(t)); }
static void rm_rf(const char *d) { char c[512]; snprintf(c, sizeof c, "rm -rf '%s'", d); if (system(c)) {} }

static void gen(synth_cfg *c, const char *dir) {
  c->dir = dir; char p[512];
  for (int r = 0; r < c->nranks; r++) synth_write_rank(c, r, p, sizeof p);
}
static json_object *get(json_object *o, const char *k) { json_object *v = NULL; json_object_object_get_ex(o, k, &v); return v; }
static int64_t geti(json_object *o, const char *k) { return json_object_get_int64(get(o, k)); }
static double getd(json_object *o, const char *k) { return json_object_get_double(get(o, k)); }
static json_object *rank_obj(json_object *rep, int rank) {
  json_object *rs = get(rep, "ranks");
  for (size_t i = 0; i < json_object_array_length(rs); i++)
    if (geti(json_object_array_get_idx(rs, i), "rank") == rank) return json_object_array_get_idx(rs, i);
  return NULL;
}
/* `commlens report DIR --json` must exit 0 and print JSON, with `want` instances matched and
 * rank 1's clock offset `want_off` ns inside its reported error (0 on one host: exactly). */
static void expect_report(const char *d, int64_t want, int64_t want_off, const char *what) {
  char a[800], *out, *err;
  snprintf(a, sizeof a, "report %s --json", d);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 0, "rc %d: %s", rc, err);
  json_object *rep = json_tokener_parse(out);
  CHECK(rep, "not JSON: %s %s", out, err);
  int64_t matched = rep ? geti(rep, "instances_matched") : -1;
  int64_t off = rep && rank_obj(rep, 1) ? geti(get(rank_obj(rep, 1), "clock"), "offset_ns") : -1;
  int64_t err_ns = rep && rank_obj(rep, 1) ? geti(get(rank_obj(rep, 1), "clock"), "err_ns") : -1;
  CHECK(matched == want, "%s: matched %lld, want %lld", what, (long long)matched, (long long)want);
  CHECK(err_ns >= 0 && llabs(off - want_off) <= err_ns, "%s: rank 1 offset %lld +- %lld ns, want %lld inside", what,
        (long long)off, (long long)err_ns, (long long)want_off);
  if (rep) json_object_put(rep);
  free(out); free(err);
}
static int near(double got, double want, double rel, double abs_tol) { return fabs(got - want) <= fmax(rel * fabs(want), abs_tol); }

/* A one-off wait at start-up (rank 1: 100 ms on the first collective, as connection set-up
 * makes) must not outrank a rank late again and again (rank 2: 3 ms every 5th collective):
 * the total wait each caused put rank 1 first (300 ms against 180 ms). The first instance is
 * detected as warm-up, rank 2 is persistent and first, and its late steps lead the steps. */
TL_TEST(report_ranks_persistent_straggler_over_warmup) {
  char *d = mkdir_tmp(); synth_cfg c; synth_defaults(&c);
  c.nranks = 4; c.ncoll = 100; c.nch = 2; c.late_rank = 2; c.late_ns = 3000000; c.late_every = 5;
  c.warmup_rank = 1; c.warmup_ns = 100000000; c.nvtx_every = 5; c.period_ns = 4000000;
  gen(&c, d);
  char a[800], *out, *err;
  snprintf(a, sizeof a, "report %s --json", d);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 0, "rc %d: %s", rc, err);
  json_object *rep = json_tokener_parse(out);
  REQUIRE(rep, "not JSON: %s", err);
  json_object *sl = get(rep, "slow_ranks"), *at = get(rep, "attribution");
  REQUIRE(sl && json_object_array_length(sl) >= 2 && at, "no slow ranks / attribution");
  json_object *top = json_object_array_get_idx(sl, 0);
  CHECK(geti(top, "rank") == 2, "first slow rank %lld, want the persistent rank 2", (long long)geti(top, "rank"));
  CHECK(geti(top, "late_significant") == 19, "rank 2: last (called) %lld times, want 19 (every 5th of 99 after start-up)",
        (long long)geti(top, "late_significant"));
  json_object *vd = get(rep, "verdict");
  CHECK(vd && !strcmp(json_object_get_string(get(vd, "kind")), "straggler") &&
        geti(json_object_array_get_idx(get(vd, "stragglers"), 0), "rank") == 2, "the verdict: %s",
        vd ? json_object_get_string(get(vd, "line")) : "(none)");
  CHECK(near(getd(top, "median_margin_ns"), 3000000, 0.01, 10000), "rank 2 median margin %.0f", getd(top, "median_margin_ns"));
  json_object *second = json_object_array_get_idx(sl, 1);
  CHECK(geti(second, "rank") == 1 && geti(second, "last_in_warmup") == 1, "second: rank %lld, lasts in start-up %lld",
        (long long)geti(second, "rank"), (long long)geti(second, "last_in_warmup"));
  CHECK(geti(at, "warmup_instances") == 1, "warm-up instances %lld, want 1", (long long)geti(at, "warmup_instances"));
  json_object *steps = get(at, "steps");
  REQUIRE(steps && json_object_array_length(steps) > 0, "no steps");
  json_object *s0 = json_object_array_get_idx(steps, 0), *s1 = json_object_array_get_idx(steps, 1);
  CHECK(geti(s0, "step") == 0 && geti(s0, "culprit") == 1, "worst step %lld by rank %lld, want step 0 by rank 1 (warm-up)",
        (long long)geti(s0, "step"), (long long)geti(s0, "culprit"));
  CHECK(s1 && geti(s1, "culprit") == 2, "second worst step by rank %lld, want 2", (long long)geti(s1, "culprit"));
  json_object_put(rep);
  free(out); free(err);
  snprintf(a, sizeof a, "report %s", d);
  rc = run_cli(a, &out, &err);
  CHECK(rc == 0 && !strncmp(out, "Verdict: rank 2 (host node0) is a straggler", 43) && strstr(out, "Steps that lost the most time") &&
        strstr(out, "clock 0: host node0, rank(s) 0 1 2 3: one clock (same boot), offset 0 exactly"), "text report: %s", out);
  free(out); free(err);
  if (!tl_cur_failed) rm_rf(d);
  free(d);
}

/* The simulated multi-host case: eight hosts with planted clock offsets (ms, signed), rank 3
 * 400 us late at every collective, transfers of 400 us. Causal bounds put every planted offset
 * inside its pair's interval; rank 3's lateness is inside that interval (a host late every time
 * looks like a clock ahead), so it is never called; the text report prints each pair's interval;
 * the slow channel is still found. */
TL_TEST(multi_host_offsets_inside_their_interval_and_lateness_inside_it_not_called) {
  char *d = mkdir_tmp(); synth_cfg c; synth_defaults(&c);
  c.nranks = 8; c.ncoll = 300; c.late_rank = 3; c.late_ns = 400000; c.slow_rank = 6; c.slow_ch = 1; c.slow_factor = 2.5;
  c.ranks_per_host = 1;
  gen(&c, d);
  char a[600], *out, *err; snprintf(a, sizeof a, "report %s --json", d);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 0, "rc %d, stderr: %s", rc, err);
  json_object *rep = json_tokener_parse(out);
  REQUIRE(rep, "report --json is not JSON: %.300s", out);
  json_object *vd = get(rep, "verdict"), *cm = get(rep, "clock_model");
  REQUIRE(vd && cm, "no verdict or clock_model");
  CHECK(!strcmp(json_object_get_string(get(vd, "kind")), "none") && geti(get(vd, "counts"), "within_clock_error") > 0,
        "lateness inside the clock interval was called: %s", json_object_get_string(get(vd, "line")));
  CHECK(json_object_array_length(get(cm, "pairs")) == 7, "%zu host pairs, want 7", json_object_array_length(get(cm, "pairs")));
  for (int r = 0; r < 8; r++) {
    json_object *ro = rank_obj(rep, r), *ck = get(ro, "clock");
    REQUIRE(ro && ck, "rank %d missing", r);
    CHECK(json_object_get_boolean(get(ck, "aligned")) && llabs(geti(ck, "offset_ns") - synth_offset(&c, r)) <= geti(ck, "err_ns"),
          "rank %d offset %lld +- %lld, planted %lld", r, (long long)geti(ck, "offset_ns"), (long long)geti(ck, "err_ns"),
          (long long)synth_offset(&c, r));
    CHECK(get(ro, "exposed_ns") != NULL, "rank %d exposed missing", r);
  }
  json_object *ch = json_object_array_get_idx(get(rep, "slow_channels"), 0);
  REQUIRE(ch, "no slow channels");
  CHECK(geti(ch, "rank") == 6 && geti(ch, "channel") == 1, "top slow channel rank %lld ch %lld, want 6/1",
        (long long)geti(ch, "rank"), (long long)geti(ch, "channel"));
  CHECK(getd(ch, "tail_frac") > 0.9, "tail fraction %.2f", getd(ch, "tail_frac"));
  CHECK(getd(ch, "vs_median") > 1.2, "vs median %.2f", getd(ch, "vs_median"));
  CHECK(!strcmp(json_object_get_string(get(ch, "verdict")), "waited on local GPU"), "verdict %s", json_object_get_string(get(ch, "verdict")));
  /* the channel verdict names it (one clock per rank: no clock error), and no other rank's */
  json_object *cv = get(vd, "channels"), *cr = get(cv, "ranks");
  REQUIRE(cv && cr, "no verdict.channels");
  CHECK(geti(cv, "rank") == 6 && strstr(json_object_get_string(get(cv, "line")), "rank 6: channel 1 is slow: late "),
        "channel headline: %s", json_object_get_string(get(cv, "line")));
  CHECK(json_object_array_length(cr) == 8, "%zu ranks with a channel verdict, want 8", json_object_array_length(cr));
  for (size_t i = 0; i < json_object_array_length(cr); i++) {
    json_object *e = json_object_array_get_idx(cr, i), *v = get(e, "verdict");
    const char *kind = json_object_get_string(get(v, "kind"));
    json_object *s0 = json_object_array_get_idx(get(v, "stragglers"), 0);
    if (geti(e, "rank") == 6)
      CHECK(!strcmp(kind, "straggler") && s0 && geti(s0, "channel") == 1 && geti(s0, "rank") == 6 &&
            !strcmp(json_object_get_string(get(v, "evidence")), "channel_end"),
            "rank 6's channels: %s", json_object_get_string(get(v, "line")));
    else
      CHECK(!strcmp(kind, "none"), "rank %lld's channels: %s", (long long)geti(e, "rank"), json_object_get_string(get(v, "line")));
  }
  json_object_put(rep); free(out); free(err);
  /* the text report opens with the verdict and the clock model, with each pair's interval */
  snprintf(a, sizeof a, "report %s", d);
  rc = run_cli(a, &out, &err);
  CHECK(rc == 0, "text rc %d", rc);
  CHECK(!strncmp(out, "Verdict: no straggler found", 27), "the report does not open with the verdict:\n%.400s", out);
  CHECK(strstr(out, "clock 3: host node3, rank(s) 3: its own clock; vs host node0: +") && strstr(out, " in [+") &&
        strstr(out, "from causal bounds (300 instance(s))"), "no interval for host node3:\n%.1500s", out);
  CHECK(strstr(out, "GB/s") && strstr(out, " ms"), "units missing");
  CHECK(strstr(out, "\nChannels: rank 6: channel 1 is slow: late "), "no channel verdict line:\n%.1500s", out);
  free(out); free(err);
  rm_rf(d); free(d);
}

TL_TEST(merge_aligns_links_and_filters) {
  char *d = mkdir_tmp(); synth_cfg c; synth_defaults(&c);
  c.nranks = 4; c.ncoll = 50; c.late_rank = 2; c.late_ns = 200000; c.nvtx_every = 10;
  gen(&c, d);
  char a[800], o[600], *out, *err; snprintf(o, sizeof o, "%s/merged.json", d);
  snprintf(a, sizeof a, "merge %s -o %s", d, o);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 0, "rc %d: %s", rc, err); free(out); free(err);
  json_object *m = json_object_from_file(o);
  REQUIRE(m, "merged trace is not JSON");
  json_object *meta = get(m, "commlens_merge"), *ev = get(m, "traceEvents");
  REQUIRE(meta && ev, "no commlens_merge or traceEvents");
  CHECK(json_object_array_length(get(meta, "ranks")) == 4, "ranks in metadata");
  int sort_idx = 0, s = 0, f = 0, names = 0; double end0[50] = {0}, maxdiff = 0;
  for (size_t i = 0; i < json_object_array_length(ev); i++) {
    json_object *e = json_object_array_get_idx(ev, i);
    const char *ph = json_object_get_string(get(e, "ph")), *nm = json_object_get_string(get(e, "name"));
    int pid = (int)geti(e, "pid");
    if (ph[0] == 'M' && !strcmp(nm, "process_sort_index")) { sort_idx++; CHECK(geti(get(e, "args"), "sort_index") == pid, "sort index"); }
    if (ph[0] == 'M' && !strcmp(nm, "process_name")) { names++; CHECK(strstr(json_object_get_string(get(get(e, "args"), "name")), "node0, GPU") != NULL, "name"); }
    if (ph[0] == 's') s++;
    if (ph[0] == 'f') { f++; CHECK(!strcmp(json_object_get_string(get(e, "bp")), "e"), "bp"); }
    json_object *cat = get(e, "cat");
    if (cat && !strcmp(json_object_get_string(cat), "coll_gpu")) {
      int seq = (int)geti(get(e, "args"), "seq");
      double end = getd(e, "ts") + getd(e, "dur");
      if (pid == 0) end0[seq] = end;
    }
  }
  for (size_t i = 0; i < json_object_array_length(ev); i++) {   /* aligned ends agree within ~1 us */
    json_object *e = json_object_array_get_idx(ev, i), *cat = get(e, "cat");
    if (!cat || strcmp(json_object_get_string(cat), "coll_gpu")) continue;
    double dd = fabs(getd(e, "ts") + getd(e, "dur") - end0[geti(get(e, "args"), "seq")]);
    if (dd > maxdiff) maxdiff = dd;
  }
  CHECK(sort_idx == 4 && names == 4, "metadata events %d %d", sort_idx, names);
  CHECK(s == 50 && f == 50, "flows s=%d f=%d", s, f);
  CHECK(maxdiff < 3.0, "aligned coll_gpu ends differ by %.3f us", maxdiff);
  json_object_put(m);
  /* filters: ranks + NVTX steps, gzip output */
  snprintf(o, sizeof o, "%s/m2.json.gz", d);
  snprintf(a, sizeof a, "merge %s -o %s --ranks 1,3 --steps 1:2", d, o);
  rc = run_cli(a, &out, &err);
  CHECK(rc == 0, "rc %d: %s", rc, err); free(out); free(err);
  gzFile gz = gzopen(o, "rb"); REQUIRE(gz, "no gz output");
  char *buf = malloc(64 << 20); int n = gzread(gz, buf, (64 << 20) - 1); gzclose(gz);
  REQUIRE(n > 0, "empty gz"); buf[n] = 0;
  m = json_tokener_parse(buf); free(buf);
  REQUIRE(m, "gz merged trace not JSON");
  ev = get(m, "traceEvents");
  double lo = 1e300, hi = 0; int bad_pid = 0;
  for (size_t i = 0; i < json_object_array_length(ev); i++) {
    json_object *e = json_object_array_get_idx(ev, i);
    int pid = (int)geti(e, "pid"); if (pid != 1 && pid != 3) bad_pid++;
    if (get(e, "ts") && json_object_get_string(get(e, "ph"))[0] == 'X') { double t = getd(e, "ts"); if (t < lo) lo = t; if (t > hi) hi = t; }
  }
  CHECK(bad_pid == 0, "events of unselected ranks: %d", bad_pid);
  CHECK(hi - lo < 2 * 10 * 2000.0 + 1000, "step window spans %.0f us (want about 2 steps of 20 ms)", hi - lo);
  json_object_put(m);
  rm_rf(d); free(d);
}

TL_TEST(gzip_input_and_comm_filter) {
  char *d = mkdir_tmp(); synth_cfg c; synth_defaults(&c);
  c.nranks = 3; c.ncoll = 20; c.gz = 1;
  gen(&c, d);
  char a[800], *out, *err;
  snprintf(a, sizeof a, "merge %s -o %s/m.json --comm world --window 0:5", d, d);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 0, "rc %d: %s", rc, err);
  CHECK(strstr(err, "3 rank(s)") != NULL, "stderr: %s", err);
  free(out); free(err);
  snprintf(a, sizeof a, "merge %s -o %s/m.json --comm nosuchcomm", d, d);
  rc = run_cli(a, &out, &err);
  CHECK(rc == 2 && strstr(err, "nosuchcomm"), "rc %d: %s", rc, err);
  free(out); free(err);
  rm_rf(d); free(d);
}

TL_TEST(bad_input_is_named_and_the_rest_is_used) {
  char *d = mkdir_tmp(); synth_cfg c; synth_defaults(&c);
  c.nranks = 5; c.ncoll = 40;
  gen(&c, d);
  /* rank 1: cut mid-event; rank 2: another job; rank 4 missing; a non-trace; a format-2 file */
  char p[600], a[800], *out, *err; size_t len;
  snprintf(p, sizeof p, "%s/commlens-r1-node0-1001.trace.json", d);
  char *b = slurp(p, &len); FILE *f = fopen(p, "wb"); fwrite(b, 1, len * 6 / 10 + 7, f); fclose(f); free(b);
  synth_cfg o = c; o.job = "other"; o.dir = d; synth_write_rank(&o, 2, p, sizeof p);
  snprintf(p, sizeof p, "%s/commlens-r4-node0-1004.trace.json", d); unlink(p);
  snprintf(p, sizeof p, "%s/junk.trace.json", d); f = fopen(p, "w"); fputs("hello, not json\n", f); fclose(f);
  snprintf(p, sizeof p, "%s/notes.txt", d); f = fopen(p, "w"); fputs("x", f); fclose(f);
  synth_cfg g = c; g.format = 2; g.dir = d; g.job = "job42";
  synth_write_rank(&g, 7, p, sizeof p);
  snprintf(a, sizeof a, "report %s --json", d);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 0, "rc %d", rc);
  CHECK(strstr(err, "commlens-r1-node0-1001.trace.json") && strstr(err, "ends mid-trace"), "truncation not named: %s", err);
  CHECK(strstr(err, "commlens-r2-node0-1002.trace.json") && strstr(err, "belongs to job \"other\""), "job not named: %s", err);
  CHECK(strstr(err, "junk.trace.json: ") != NULL, "junk not named: %s", err);
  CHECK(strstr(err, "format 2") != NULL, "format not named: %s", err);
  CHECK(strstr(err, "notes.txt") == NULL, "non-trace names must be ignored quietly: %s", err);
  json_object *rep = json_tokener_parse(out);
  REQUIRE(rep, "no JSON report: %s", err);
  CHECK(json_object_array_length(get(rep, "ranks")) == 3, "want ranks 0,1,3");
  json_object *r1 = rank_obj(rep, 1);
  REQUIRE(r1, "truncated rank 1 not used");
  CHECK(geti(get(r1, "plugin"), "events") > 10 && json_object_get_boolean(get(get(r1, "plugin"), "truncated")), "rank 1 events");
  json_object_put(rep); free(out); free(err);
  snprintf(a, sizeof a, "report %s", d);
  rc = run_cli(a, &out, &err);
  CHECK(strstr(out, "missing ranks") != NULL, "missing ranks not reported:\n%s", out);
  free(out); free(err);
  rm_rf(d); free(d);
}

TL_TEST(nothing_usable_exits_2) {
  char *d = mkdir_tmp(), a[600], *out, *err;
  snprintf(a, sizeof a, "report %s", d);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 2 && strstr(err, "no commlens traces"), "empty dir: rc %d %s", rc, err); free(out); free(err);
  char p[600]; snprintf(p, sizeof p, "%s/x.trace.json", d);
  FILE *f = fopen(p, "w"); fputs("{\"traceEvents\":[]}", f); fclose(f);
  snprintf(a, sizeof a, "merge %s -o %s/o.json", d, d);
  rc = run_cli(a, &out, &err);
  CHECK(rc == 2 && strstr(err, "x.trace.json") && strstr(err, "not a commlens trace"), "rc %d %s", rc, err); free(out); free(err);
  rc = run_cli("report /nonexistent/dir", &out, &err);
  CHECK(rc == 2, "missing dir rc %d", rc); free(out); free(err);
  rc = run_cli("frobnicate", &out, &err);
  CHECK(rc == 2, "bad command rc %d", rc); free(out); free(err);
  rm_rf(d); free(d);
}

/* Any valid JSON: whitespace, escapes, key order, nested args, numbers in other forms. */
TL_TEST(scanner_accepts_any_valid_json) {
  char *d = mkdir_tmp();
  for (int r = 0; r < 2; r++) {
    char p[600]; snprintf(p, sizeof p, "%s/r%d.trace.json", d, r);
    FILE *f = fopen(p, "w");
    fprintf(f, "{ \"traceEvents\" : [\n");
    for (int i = 0; i < 5; i++) {
      double ts = 1000.5 + i * 100 + r * 7;   /* rank 1 is 7 us ahead */
      fprintf(f, "%s  { \"args\" : { \"nested\": {\"a\": [1, {\"b\": \"}]\\\"\"}]}, \"seq\" : %d ,\n"
                 "  \"comm\" : \"0xab\", \"note\": \"tab\\t quote\\\" backslash\\\\\" , \"bytes\": 1.024e3, \"nranks\": 2 },\n"
                 "  \"dur\" : 5e1, \"ts\" : %.3f, \"name\" : \"AllGather\", \"cat\" : \"coll_gpu\", \"tid\" : 3, \"pid\" : %d, \"ph\" : \"X\" }",
              i ? ",\n" : "", i, ts, r);
    }
    fprintf(f, "\n ] , \"commlens\" : { \"rank\" : %d , \"format\" : 1, \"job\": \"j\\u0041\", \"host\": \"h\\\"q\" } }\n", r);
    fclose(f);
  }
  expect_report(d, 5, 0, "odd but valid JSON (one host: one clock)");
  char a[800], *out, *err;
  snprintf(a, sizeof a, "merge %s -o %s/m.json", d, d);
  int rc = run_cli(a, &out, &err); free(out); free(err);
  char p[600]; snprintf(p, sizeof p, "%s/m.json", d);
  json_object *m = json_object_from_file(p);
  CHECK(rc == 0 && m, "merged output of odd-but-valid input must be valid JSON");
  if (m) json_object_put(m);
  rm_rf(d); free(d);
}

/* CUDA-graph replays: NCCL gives every replay of a captured collective seq 0. The k-th replay
 * on one rank is the k-th on the other: all are matched, and the clock offset comes out. */
TL_TEST(graph_replays_sharing_a_seq_are_matched_in_order) {
  char *d = mkdir_tmp();
  for (int r = 0; r < 2; r++) {
    char p[600]; snprintf(p, sizeof p, "%s/r%d.trace.json", d, r);
    FILE *f = fopen(p, "w");
    fprintf(f, "{\"traceEvents\":[\n");
    for (int i = 0; i < 6; i++)
      fprintf(f, "%s{\"ph\":\"X\",\"cat\":\"coll_gpu\",\"name\":\"AllReduce\",\"pid\":%d,\"tid\":3,"
                 "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"comm\":\"0xab\",\"seq\":0,\"bytes\":4096,\"nranks\":2,"
                 "\"source\":\"cupti_graph\"}}", i ? ",\n" : "", r, 1000.0 + i * 500 + r * 7, 40.0 + (i % 3) * 30 + r);
    fprintf(f, "\n],\"commlens\":{\"rank\":%d,\"format\":1,\"job\":\"g\"}}\n", r);
    fclose(f);
  }
  expect_report(d, 6, 7000, "6 replays, rank 1 7 us ahead (no host named: a clock each)");
  rm_rf(d); free(d);
}

/* A trace cut at any byte still yields exactly the events that were complete before the cut. */
#include "tools/commlens/read/trace_read.h"
#include "tools/commlens/base/util.h"
#include "common/utf8.h"
static void count_ev(const cl_ev *ev, void *arg) { (void)ev; (*(int *)arg)++; }
TL_TEST(cut_anywhere_keeps_complete_events) {
  char *d = mkdir_tmp(); synth_cfg c; synth_defaults(&c);
  c.nranks = 2; c.ncoll = 3; c.nch = 2; c.nsteps = 1;
  c.dir = d; char p[600]; synth_write_rank(&c, 0, p, sizeof p);
  size_t len; char *b = slurp(p, &len);
  char cut[700]; snprintf(cut, sizeof cut, "%s/cut.trace.json", d);
  int bad = 0;
  for (size_t at = 0; at <= len; at += 7) {
    FILE *f = fopen(cut, "wb"); fwrite(b, 1, at, f); fclose(f);
    /* complete events = objects in the array whose closing "}" (line end) lies before the cut */
    /* our writer separates events with ",\n{" and closes with "\n],": each event ends just before */
    int want = 0; const char *arr = strstr(b, "\"traceEvents\":["), *close = strstr(b, "\n],");
    for (const char *q = arr; q && (q = strstr(q + 1, ",\n{")) && q < close;) if ((size_t)(q - b) <= at) want++;
    if ((size_t)(close - b) <= at) want++;
    int got = 0; cl_info in;
    int rc = cl_trace_scan(cut, count_ev, &got, &in, 0);
    int hdr_done = arr && (size_t)(arr - b) <= at;
    if (hdr_done && rc != 0) bad++;
    if (hdr_done && got != want && !(at >= len - 1)) { if (bad++ < 5) fprintf(stderr, "  cut at %zu: got %d want %d\n", at, got, want); }
    cl_info_free(&in);
  }
  CHECK(bad == 0, "%d cut positions gave the wrong event count", bad);
  free(b); rm_rf(d); free(d);
}

/* JSON escapes come out as the characters they stand for (\u escapes were '?' before). */
TL_TEST(unescape_decodes_every_json_escape) {
  const char *in = "a\\\"b\\\\c\\/d\\n\\t\\r\\b\\f\\u0041\\u00e9\\u20ac\\ud83d\\ude00\\ud800x";
  const char *want = "a\"b\\c/d\n\t\r\b\fA\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xef\xbf\xbdx";
  char buf[64];
  cl_str_unescape((cl_str_t){ in, (int)strlen(in) }, buf, sizeof buf);
  CHECK(!strcmp(buf, want), "got '%s'", buf);
  char small[5];   /* a character that does not fit whole is left out */
  cl_str_unescape((cl_str_t){ "ab\\u20ac", 8 }, small, sizeof small);
  CHECK(!strcmp(small, "ab"), "bounded: got '%s'", small);
}

/* A nested message's length is patched in with as many varint bytes as it needs. */
#include "tools/commlens/merge/pb.h"
static uint64_t read_varint(const uint8_t **p) {
  uint64_t v = 0; int sh = 0;
  while (**p & 0x80) { v |= (uint64_t)(*(*p)++ & 0x7f) << sh; sh += 7; }
  return v | (uint64_t)(*(*p)++) << sh;
}
TL_TEST(pb_patches_nested_lengths) {
  static char big[20000];
  memset(big, 'x', sizeof big);
  cl_pb b = {0};
  cl_pb_begin(&b, 1);                 /* 1 { 2 { 3: big } 4: -1 } 5: 300 */
  cl_pb_begin(&b, 2);
  cl_pb_bytes(&b, 3, big, sizeof big);
  cl_pb_end(&b);
  cl_pb_int(&b, 4, -1);
  cl_pb_end(&b);
  cl_pb_uint(&b, 5, 300);
  const uint8_t *p = b.d;
  CHECK(read_varint(&p) == (1 << 3 | 2), "outer tag");
  uint64_t outer = read_varint(&p);
  const uint8_t *body = p;
  CHECK(read_varint(&p) == (2 << 3 | 2), "inner tag");
  uint64_t inner = read_varint(&p);
  CHECK(inner == 1 + 3 + sizeof big, "inner length %llu", (unsigned long long)inner);   /* tag, 3-byte length, data */
  CHECK(read_varint(&p) == (3 << 3 | 2) && read_varint(&p) == sizeof big && p[0] == 'x' && p[sizeof big - 1] == 'x', "data");
  p += sizeof big;
  CHECK(read_varint(&p) == (4 << 3) && read_varint(&p) == UINT64_MAX, "negative int: 10 bytes of two's complement");
  CHECK((uint64_t)(p - body) == outer, "outer length %llu, body %lld", (unsigned long long)outer, (long long)(p - body));
  CHECK(read_varint(&p) == (5 << 3) && read_varint(&p) == 300 && p == b.d + b.n, "trailing field");
  cl_pb_free(&b);
}

static int contains(const char *hay, const char *needle) { return hay && strstr(hay, needle) != NULL; }
/* A fresh directory holding a synthetic job of nranks ranks and ncoll collectives (c: the rest
 * of the job as synth_defaults leaves it, or as the caller set it before). Caller frees. */
static char *job_dir(synth_cfg *c, int nranks, int ncoll) {
  char *d = mkdir_tmp();
  c->nranks = nranks; c->ncoll = ncoll;
  gen(c, d);
  return d;
}

/* --version, --help from the option table, --opt=value, "--", and bad usage (exit 2). */
TL_TEST(options_follow_the_usual_conventions) {
  synth_cfg c; synth_defaults(&c);
  char *d = job_dir(&c, 2, 10);
  char a[1200], *out, *err, *out2, *err2;
  int rc = run_cli("--version", &out, &err);
  CHECK(rc == 0 && !strcmp(out, "commlens " COMMLENS_VERSION "\n"), "--version: rc %d '%s'", rc, out);
  free(out); free(err);
  static const char *const cmds[] = { "report", "merge", "env" };
  static const char *const opts[][9] = {
    { "--json", "--top N", "--threads N", "--html FILE", "-h, --help", NULL },
    { "-o, --output OUT", "-f, --format FMT", "--ranks LIST", "--comm COMM", "--window START_MS:END_MS", "--steps A:B",
      "--threads N", "-h, --help", NULL },
    { "-h, --help", NULL } };
  for (int i = 0; i < 3; i++)
    for (int h = 0; h < 2; h++) {
      snprintf(a, sizeof a, "%s %s", cmds[i], h ? "-h" : "--help");
      rc = run_cli(a, &out, &err);
      char head[64]; snprintf(head, sizeof head, "usage: commlens %s ", cmds[i]);
      CHECK(rc == 0 && !strncmp(out, head, strlen(head)) && !err[0], "%s: rc %d, out '%.80s', err '%s'", a, rc, out, err);
      for (int k = 0; opts[i][k]; k++) CHECK(contains(out, opts[i][k]), "%s does not list %s:\n%s", a, opts[i][k], out);
      free(out); free(err);
    }
  /* env: a first line naming the version (no tab, so table readers skip it), then the rows */
  rc = run_cli("env", &out, &err);
  CHECK(rc == 0 && !strncmp(out, "# commlens " COMMLENS_VERSION, strlen("# commlens " COMMLENS_VERSION)), "env: '%.80s'", out);
  char *nl = strchr(out, '\n');
  CHECK(nl && memchr(out, '\t', (size_t)(nl - out)) == NULL && strchr(nl, '\t'), "env: header line then tab-separated rows");
  free(out); free(err);
  /* --opt=value, --opt value, options before or after the operands */
  snprintf(a, sizeof a, "report %s --top=2 --json", d);
  rc = run_cli(a, &out, &err);
  snprintf(a, sizeof a, "report --json --top 2 -- %s", d);
  int rc2 = run_cli(a, &out2, &err2);
  CHECK(rc == 0 && rc2 == 0 && out[0] == '{' && !strcmp(out, out2), "the two spellings differ: rc %d/%d", rc, rc2);
  free(out); free(err); free(out2); free(err2);
  /* after "--" an option-like word is an operand */
  snprintf(a, sizeof a, "report %s -- --json", d);
  rc = run_cli(a, &out, &err);
  CHECK(rc == 0 && contains(err, "--json: no such file") && !contains(out, "{\n"), "'--' must end the options: rc %d %s", rc, err);
  free(out); free(err);
  static const struct { const char *args, *cmd, *msg; } bad[] = {
    { "report %s --bogus", "report", "unknown option '--bogus'" },
    { "report %s --top", "report", "option '--top' needs a value (N)" },
    { "merge %s -o", "merge", "option '-o' needs a value (OUT)" },
    { "merge %s --output", "merge", "option '--output' needs a value (OUT)" },
    { "report %s --json=yes", "report", "option '--json' takes no value" },
    { "report %s --t 3", "report", "option '--t' is ambiguous: --top, --threads" },
    { "report %s --top abc", "report", "option '--top' expects an integer" },
    { "report %s --threads 0", "report", "option '--threads' expects an integer" },
    { "report %s -x", "report", "unknown option '-x'" },
    { "merge %s -o /dev/null --format xml", "merge", "--format 'xml': expected json, pftrace or csv" },
    { "merge %s --ranks 3-1 -o /dev/null", "merge", "--ranks '3-1'" },
    { "merge %s", "merge", "needs -o OUT" },
    { "report", "report", "no trace directory given" },
    { "env %s", "env", "takes no operands" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(a, sizeof a, bad[i].args, d);
    rc = run_cli(a, &out, &err);
    char help[64]; snprintf(help, sizeof help, "Try 'commlens %s --help'", bad[i].cmd);
    CHECK(rc == 2 && contains(err, bad[i].msg) && contains(err, help) && !out[0], "'%s': rc %d, stderr: %s", a, rc, err);
    free(out); free(err);
  }
  rc = run_cli("--bogus", &out, &err);
  CHECK(rc == 2 && contains(err, "unknown option '--bogus'") && contains(err, "usage:"), "top-level --bogus: rc %d %s", rc, err);
  free(out); free(err);
  rm_rf(d); free(d);
}

/* Progress goes to stderr only when it is a terminal: pipes and logs get none of it. */
TL_TEST(progress_only_on_a_terminal) {
  synth_cfg c; synth_defaults(&c);
  char *d = job_dir(&c, 4, 40);
  char a[1200], *out, *err;
  snprintf(a, sizeof a, "report %s", d);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 0 && !strchr(err, '\r') && !contains(err, "files,"), "report, stderr piped: progress text in '%s'", err);
  free(out); free(err);
  snprintf(a, sizeof a, "merge %s -o %s/m.json", d, d);
  rc = run_cli(a, &out, &err);
  CHECK(rc == 0 && !strchr(err, '\r') && !contains(err, "files,"), "merge, stderr piped: progress text in '%s'", err);
  free(out); free(err);
  if (system("command -v script >/dev/null 2>&1") != 0) {
    fprintf(stderr, "  skipped the terminal case: script(1) (util-linux) is not installed\n");
    rm_rf(d); free(d); return;
  }
  /* under script(1) stderr is a pseudo-terminal: the line is drawn, then erased */
  static const char *const runs[][2] = { { "report", "commlens: reading " }, { "merge", "commlens: merging " } };
  for (int i = 0; i < 2; i++) {
    char cmd[2400], log[700];
    snprintf(log, sizeof log, "%s/tty.log", d);
    snprintf(a, sizeof a, "%s %s %s%s%s >/dev/null", cli(), runs[i][0], d, i ? " -o " : "", i ? "/dev/null" : "");
    snprintf(cmd, sizeof cmd, "script -qec \"%s\" /dev/null </dev/null >%s 2>&1", a, log);
    rc = system(cmd);
    char *t = slurp(log, NULL);
    const char *line = t ? strstr(t, runs[i][1]) : NULL;
    CHECK(rc == 0 && line && line > t && line[-1] == '\r' && contains(line, " files, ") && contains(line, "events/s"),
          "%s on a terminal: no progress line in '%s'", runs[i][0], t ? t : "(none)");
    const char *erase = line ? strstr(line, "\r ") : NULL;   /* "\r<spaces>\r": the line is erased at the end */
    CHECK(erase && strspn(erase + 1, " ") > 20 && erase[1 + strspn(erase + 1, " ")] == '\r', "%s: progress line not erased", runs[i][0]);
    free(t);
  }
  rm_rf(d); free(d);
}

/* ---- merge --format pftrace, decoded by protoc ---- */
/* The integers after each `key` in text (protoc's text format), in order. */
static int ints_after(const char *text, const char *key, int64_t *v, int max) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, key)) && n < max; p += strlen(key)) v[n++] = strtoll(p + strlen(key), NULL, 10);
  return n;
}
static int count_of(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

TL_TEST(merge_pftrace_decodes_with_protoc) {
  if (system("command -v protoc >/dev/null 2>&1") != 0) {
    fprintf(stderr, "  skipped: protoc (Debian protobuf-compiler) is not installed, so the Perfetto protobuf output "
                    "is not decoded here; make test installs it where a package source answers\n");
    return;
  }
  synth_cfg c; synth_defaults(&c);
  c.late_rank = 2; c.late_ns = 200000; c.nvtx_every = 5;
  char *d = job_dir(&c, 4, 20);
  int want_x = 0;   /* slices in the input files */
  for (int r = 0; r < c.nranks; r++) {
    char p[700]; snprintf(p, sizeof p, "%s/commlens-r%d-node0-%d.trace.json", d, r, 1000 + r);
    char *t = slurp(p, NULL); want_x += count_of(t, "\"ph\":\"X\""); free(t);
  }
  char a[2400], *out, *err, pf[700], dec[700];
  snprintf(pf, sizeof pf, "%s/m.pftrace", d); snprintf(dec, sizeof dec, "%s/m.txt", d);
  snprintf(a, sizeof a, "merge %s -o %s", d, pf);   /* the format follows the name */
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 0 && contains(err, "20 cross-rank flows") && contains(err, "Perfetto protobuf"), "rc %d: %s", rc, err);
  free(out); free(err);
  snprintf(a, sizeof a, "protoc --decode=perfetto.protos.Trace tools/commlens/merge/perfetto_min.proto <%s >%s 2>%s.err", pf, dec, dec);
  rc = system(a);
  char *t = slurp(dec, NULL);
  REQUIRE(rc == 0 && t, "protoc could not decode %s (see %s.err)", pf, dec);
  /* one process per rank: pid = rank, named "rank R (host, GPU d)" */
  int64_t pid[16]; int np = ints_after(t, "    process {\n      pid: ", pid, 16);
  CHECK(np == 4, "%d process tracks", np);
  for (int r = 0; r < 4; r++) {
    char nm[80]; snprintf(nm, sizeof nm, "process_name: \"rank %d (node0, GPU %d)\"", r, r);
    CHECK(r < np && pid[r] == r && contains(t, nm), "rank %d: pid %lld, %s", r, (long long)(r < np ? pid[r] : -1), nm);
  }
  /* every slice of the input, as a begin and an end */
  int nb = count_of(t, "type: TYPE_SLICE_BEGIN"), ne = count_of(t, "type: TYPE_SLICE_END");
  CHECK(nb == want_x && ne == want_x, "%d begins, %d ends, %d slices in the input", nb, ne, want_x);
  CHECK(contains(t, "name: \"AllReduce\"") && contains(t, "name: \"step 3\"") && contains(t, "thread_name: \"comm 5eedc0de: GPU\"") &&
        contains(t, "str: \"0x5eedc0de12345678\"") && contains(t, "name: \"commlens_clock\"") && contains(t, "name: \"commlens_merge\""),
        "names, interned strings or metadata missing");
  /* each sequence opens with its incremental state cleared; what it refers to it defined first */
  int bad_seq = 0, bad_iid = 0, npk = 0, maxname[8] = {0}, maxann[8] = {0}, seen[8] = {0};
  for (const char *p = strstr(t, "packet {\n"); p; npk++) {
    const char *q = strstr(p + 1, "\npacket {\n");
    size_t len = q ? (size_t)(q + 1 - p) : strlen(p);
    char *pk = strndup(p, len);
    int64_t seq = -1; ints_after(pk, "\n  trusted_packet_sequence_id: ", &seq, 1);
    if (seq < 1 || seq > 7) { bad_seq++; free(pk); p = q ? q + 1 : NULL; continue; }
    if (!seen[seq]++ && !contains(pk, "\n  sequence_flags: 1\n")) bad_seq++;
    int64_t v[512]; int n;
    const char *idd = strstr(pk, "\n  interned_data {");
    if (idd) {
      n = ints_after(idd, "    event_names {\n      iid: ", v, 512);
      for (int k = 0; k < n; k++) if (v[k] > maxname[seq]) maxname[seq] = (int)v[k];
      n = ints_after(idd, "    debug_annotation_names {\n      iid: ", v, 512);
      for (int k = 0; k < n; k++) if (v[k] > maxann[seq]) maxann[seq] = (int)v[k];
    }
    n = ints_after(pk, "\n    name_iid: ", v, 512);
    for (int k = 0; k < n; k++) bad_iid += v[k] > maxname[seq];
    n = ints_after(pk, "\n      name_iid: ", v, 512);
    for (int k = 0; k < n; k++) bad_iid += v[k] > maxann[seq];
    free(pk);
    p = q ? q + 1 : NULL;
  }
  CHECK(bad_seq == 0 && seen[1] && seen[2] && seen[5], "%d packets out of sequence order (%d packets)", bad_seq, npk);
  CHECK(bad_iid == 0, "%d references to names not yet interned", bad_iid);
  /* cross-rank flows: each collective's coll_gpu slice on every rank carries its flow id, and
   * on the merged clock the four slices start together (the late rank 200 us late; the
   * recorded clocks are apart by milliseconds) */
  static int64_t ids[4096], ts[4096];
  int nf = 0;
  for (const char *p = strstr(t, "packet {\n"); p && nf < 4096;) {
    const char *q = strstr(p + 1, "\npacket {\n"), *f = strstr(p, "    flow_ids: ");
    if (f && (!q || f < q)) { ids[nf] = strtoll(f + 14, NULL, 10); ints_after(p, "\n  timestamp: ", &ts[nf], 1); nf++; }
    p = q ? q + 1 : NULL;
  }
  int groups = 0; int64_t worst = 0;
  for (int i = 0; i < nf; i++) {
    int first = 1; int64_t lo = ts[i], hi = ts[i], n = 0;
    for (int j = 0; j < nf; j++) {
      if (ids[j] != ids[i]) continue;
      if (j < i) first = 0;
      n++; if (ts[j] < lo) lo = ts[j]; if (ts[j] > hi) hi = ts[j];
    }
    if (!first) continue;
    groups++;
    CHECK(n == 4, "flow %lld joins %lld slices, want 4", (long long)ids[i], (long long)n);
    if (hi - lo > worst) worst = hi - lo;
  }
  CHECK(groups == 20 && nf == 80, "%d flows over %d slices, want 20 over 80", groups, nf);
  CHECK(worst < 250000, "a collective's aligned starts spread over %lld ns", (long long)worst);
  free(t);
  /* gzip output, and --format pftrace whatever the name says */
  snprintf(a, sizeof a, "merge %s -o %s/m.bin.gz --format pftrace --ranks 1,3", d, d);
  rc = run_cli(a, &out, &err);
  CHECK(rc == 0 && contains(err, "2 rank(s)"), "rc %d: %s", rc, err);
  free(out); free(err);
  snprintf(a, sizeof a, "gzip -dc %s/m.bin.gz | protoc --decode=perfetto.protos.Trace tools/commlens/merge/perfetto_min.proto >%s", d, dec);
  rc = system(a);
  t = slurp(dec, NULL);
  np = ints_after(t ? t : "", "    process {\n      pid: ", pid, 16);
  CHECK(rc == 0 && np == 2 && pid[0] == 1 && pid[1] == 3, "gzip pftrace of ranks 1,3: rc %d, %d processes", rc, np);
  free(t);
  rm_rf(d); free(d);
}

/* Each rank's tail says how many collectives CUPTI did not time because another tool
 * (torch.profiler) had it; the report adds them up in its plugin section and --json keeps each
 * rank's; a trace that says nothing of it (older plugins) adds no key. */
TL_TEST(report_says_how_many_collectives_lack_gpu_timing) {
  synth_cfg c; synth_defaults(&c);
  c.gpu_lost = 7;
  char *d = job_dir(&c, 2, 20), a[1200], *out, *err;
  snprintf(a, sizeof a, "report %s", d);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 0 && contains(out, "14 of 40 collectives lack GPU timing from CUPTI on 2 rank(s): lost (CUPTI taken by another tool"),
        "rc %d, report:\n%s", rc, out);
  free(out); free(err);
  snprintf(a, sizeof a, "report --json %s", d);
  rc = run_cli(a, &out, &err);
  json_object *rep = json_tokener_parse(out), *r0 = rep ? rank_obj(rep, 0) : NULL, *pl = r0 ? get(r0, "plugin") : NULL;
  CHECK(rc == 0 && pl && geti(pl, "collectives_gpu_lost") == 7 && geti(pl, "collectives") == 20, "rc %d, json:\n%.600s", rc, out);
  if (rep) json_object_put(rep);
  free(out); free(err);
  rm_rf(d); free(d);
  synth_defaults(&c);                      /* said nothing: no line, no key */
  d = job_dir(&c, 2, 20);
  snprintf(a, sizeof a, "report --json %s", d);
  rc = run_cli(a, &out, &err);
  rep = json_tokener_parse(out); r0 = rep ? rank_obj(rep, 0) : NULL; pl = r0 ? get(r0, "plugin") : NULL;
  CHECK(rc == 0 && pl && !get(pl, "collectives_gpu_lost"), "a key for a trace that said nothing");
  if (rep) json_object_put(rep);
  free(out); free(err);
  snprintf(a, sizeof a, "report %s", d);
  rc = run_cli(a, &out, &err);
  CHECK(rc == 0 && !contains(out, "lack GPU timing"), "a line for a trace that said nothing");
  free(out); free(err);
  rm_rf(d); free(d);
}

TL_MAIN("tools/cli")
