/* test_fleet.c: the report's passes that were made linear in ranks, against straightforward
 * quadratic references, on a generated job of 512 ranks (synth_gen.h, as digests): the
 * impossible-times check against every pair of members; the channel ratios against a scan of
 * every row per row; the verdict's arrivals (computed rank by rank, cut among threads) against
 * the instance-by-instance computation; the instances (their table grows past 512); and the
 * text and JSON reports of one thread and of four, byte for byte. No timing: speed and memory
 * are bench/fleet_scale.sh's. */
#include "tl.h"
#include "synth_gen.h"
#include "tools/commlens/analyse/analysis.h"
#include "tools/commlens/analyse/clock_align.h"
#include "tools/commlens/analyse/verdict.h"
#include "tools/commlens/render/report.h"
#include <math.h>
#include <stdio.h>
#include <unistd.h>

/* ---- the impossible-times check ---- */

/* Every ordered pair of two members: a start after the other's end beyond both clock errors, or
 * on one clock (clock != 0) beyond none. */
static int impossible_pairwise(const cl_sg_arrival *a, uint32_t n) {
  for (uint32_t p = 0; p < n; p++)
    for (uint32_t q = 0; q < n; q++) {
      if (p == q || !a[q].end) continue;
      if (a[p].value - a[p].err > a[q].end + a[q].err) return 1;
      if (a[p].clock && a[p].clock == a[q].clock && a[p].value > a[q].end) return 1;
    }
  return 0;
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {   /* xorshift64*: a fixed seed, the same cases every run */
  g_rng ^= g_rng >> 12; g_rng ^= g_rng << 25; g_rng ^= g_rng >> 27;
  return g_rng * 0x2545f4914f6cdd1dull;
}
static int64_t rnd_in(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }

/* n members of one instance near a boundary: starts in [0, 1000), ends a span later, clock
 * errors up to `err`, `nclocks` clocks (0: some unknown); one member may start late. */
static void random_instance(cl_sg_arrival *a, uint32_t n, int64_t err, int nclocks) {
  int64_t span = rnd_in(200, 2000);
  for (uint32_t k = 0; k < n; k++) {
    a[k] = (cl_sg_arrival){ .who = (int32_t)k, .clock = (int32_t)rnd_in(0, nclocks), .value = rnd_in(0, 999),
                            .err = rnd_in(0, err) };
    a[k].end = rnd() % 8 ? a[k].value + span + rnd_in(0, 300) : 0;   /* some ends unknown */
  }
  if (rnd() % 2) a[rnd() % n].value += rnd_in(0, 3 * span);   /* one late start, maybe past an end */
}

TL_TEST(impossible_times_check_matches_every_pair) {
  static const uint32_t sizes[] = {2, 3, 4, 7, 512, 600};
  uint32_t *idx = cl_xmalloc(600 * sizeof *idx);
  cl_sg_arrival *a = cl_xmalloc(600 * sizeof *a);
  int seen[2][2] = {{0, 0}, {0, 0}}, wrong = 0;   /* [large][answer] */
  for (int trial = 0; trial < 3000; trial++) {
    uint32_t n = sizes[trial % 6];
    if (n >= 512 && trial % 12 >= 6) continue;   /* 500 trials of each large size */
    random_instance(a, n, trial % 3 ? 200 : 0, (int)(trial % 5));
    int want = impossible_pairwise(a, n), got = cl_verdict_impossible(a, n, idx);
    seen[n >= 512][want]++;
    if (got != want && !wrong++) CHECK(0, "trial %d (%u members): the linear check says %d, every pair %d", trial, n, got, want);
  }
  CHECK(!wrong, "%d of the trials disagree", wrong);
  /* the cases reach both answers at both sizes, or the comparison proves little */
  CHECK(seen[0][0] > 50 && seen[0][1] > 50 && seen[1][0] > 50 && seen[1][1] > 50, "small: possible %d, impossible %d; "
        "512 and more: possible %d, impossible %d", seen[0][0], seen[0][1], seen[1][0], seen[1][1]);
  free(idx); free(a);
}

/* ---- a job of 512 ranks ---- */

#define NRANKS 512
#define NCOLL 520   /* more instances than the instance table's first size holds (it grows) */

static void cleanup(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "  cannot remove %s\n", dir);
}
static int write_job(char *dir, size_t n) {
  synth_cfg c; synth_defaults(&c);
  c.nranks = NRANKS; c.ncoll = NCOLL; c.nch = 4; c.ranks_per_host = 8;
  c.late_rank = NRANKS / 3; c.late_ns = 3000000; c.late_every = 3;
  c.slow_rank = NRANKS / 2; c.slow_ch = 2; c.slow_factor = 2.0;
  snprintf(dir, n, "%s/commlens-fleet-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) return -1;
  c.dir = dir;
  char path[1024];
  for (int r = 0; r < c.nranks; r++) if (synth_write_rank_digest(&c, r, path, sizeof path)) return -1;
  return 0;
}

typedef struct { cl_job job; cl_clock_model cm; cl_analysis an; char *text, *json; size_t ntext, njson; } reported;
static int report(const char *dir, int threads, reported *o) {
  char *dirs[1] = {(char *)dir};
  if (cl_job_load(&o->job, dirs, 1, threads) != NRANKS) return -1;
  cl_job_instances(&o->job);
  cl_clock_align(&o->job, &o->cm);
  cl_analyse(&o->job, &o->cm, &o->an);
  FILE *t = open_memstream(&o->text, &o->ntext), *j = open_memstream(&o->json, &o->njson);
  if (!t || !j) return -1;
  cl_render_text(&o->job, &o->an, 5, t);
  cl_render_json(&o->job, &o->an, j);
  fclose(t); fclose(j);
  return 0;
}
static void reported_free(reported *o) {
  cl_analysis_free(&o->an); cl_job_free(&o->job); cl_cm_free(&o->cm);
  free(o->text); free(o->json);
}

/* Each channel row's ratio against the median of its rank and comm, by a scan of every row. */
static int ratios_match(const cl_analysis *an) {
  double *m = cl_xmalloc((an->nch + 1) * sizeof *m);
  int ok = 1;
  for (size_t k = 0; k < an->nch && ok; k++) {
    if (!an->ch[k].c->n) { ok = an->ch[k].ratio == 0; continue; }
    size_t n = 0;
    for (size_t j = 0; j < an->nch; j++)
      if (an->ch[j].c->n && an->ch[j].ri == an->ch[k].ri && an->ch[j].c->comm == an->ch[k].c->comm) m[n++] = an->ch[j].mean;
    double med = cl_median_dbl(m, n);
    ok = an->ch[k].ratio == (med > 0 ? an->ch[k].mean / med : 1);
  }
  free(m);
  return ok;
}

/* Each member's arrival against its instance's members read one by one. */
static int arrivals_match(const cl_job *job, const cl_clock_model *cm, const cl_verdict_an *vd) {
  for (size_t k = 0; k < job->inst.n; k++) {
    const cl_inst *in = &job->inst.a[k];
    for (uint32_t j = 0; j < in->count; j++) {
      const cl_member *mb = &job->mem.a[in->first + j];
      const cl_coll *c = &job->r[mb->rank_idx]->colls.a[mb->coll_idx];
      if (c->mem != in->first + j || vd->arrival[in->first + j] != cl_cm_align(cm, (int)mb->rank_idx, c->start)) return 0;
    }
  }
  return 1;
}

TL_TEST(job_of_512_ranks_linear_passes_match_their_references) {
  char dir[512];
  REQUIRE(write_job(dir, sizeof dir) == 0, "cannot write the job");
  reported one, four;
  memset(&one, 0, sizeof one); memset(&four, 0, sizeof four);
  REQUIRE(report(dir, 1, &one) == 0, "one thread: cannot load and report the job");
  REQUIRE(report(dir, 4, &four) == 0, "four threads: cannot load and report the job");
  const cl_job *job = &four.job;
  int whole = job->inst.n == NCOLL;
  for (size_t k = 0; k < job->inst.n; k++) whole &= job->inst.a[k].count == NRANKS;
  CHECK(whole, "%zu instances (want %d, each of %d members)", job->inst.n, NCOLL, NRANKS);
  CHECK(four.an.nch == (size_t)NRANKS * 4 && ratios_match(&four.an), "channel ratios differ from the reference (%zu rows)",
        four.an.nch);
  CHECK(arrivals_match(job, &four.cm, &four.an.vd), "an arrival differs from the instance-by-instance one");
  CHECK(four.an.vd.n_impossible == 0, "%lld instances called impossible", (long long)four.an.vd.n_impossible);
  /* what the bench checks at scale: the planted rank and channel named */
  CHECK(four.an.vd.v.kind == CL_SG_STRAGGLER && job->r[four.an.vd.v.straggler[0].who]->rank == NRANKS / 3,
        "the verdict: %s", four.an.vd.line);
  CHECK(four.an.nch && job->r[four.an.ch[0].ri]->rank == NRANKS / 2 && four.an.ch[0].c->channel == 2,
        "slowest channel: rank %d ch %d", job->r[four.an.ch[0].ri]->rank, four.an.ch[0].c->channel);
  CHECK(one.ntext == four.ntext && !memcmp(one.text, four.text, one.ntext), "text reports of 1 and 4 threads differ");
  CHECK(one.njson == four.njson && !memcmp(one.json, four.json, one.njson), "JSON reports of 1 and 4 threads differ");
  reported_free(&one); reported_free(&four);
  if (!tl_cur_failed) cleanup(dir);
}

TL_MAIN("tools/fleet")
