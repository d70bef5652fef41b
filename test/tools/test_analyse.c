/* test_analyse.c: the CLI's analyse stage as functions (cl_analyse, cl_blame_compute) over a
 * model loaded from synthetic jobs with known behaviour (synth_gen.h): the late rank is every
 * instance's culprit, named once (the blame measurement and the analysis agree on it and on
 * each instance's wait), ranked first; the slow channel leads the channel table; a job with
 * no late rank names none persistently; the verdict's kinds keep their documented names. */
#include "tl.h"
#include "synth_gen.h"
#include "tools/commlens/analyse/analysis.h"
#include "tools/commlens/analyse/clock_align.h"
#include "tools/commlens/analyse/straggler.h"
#include <math.h>
#include <unistd.h>

/* Writes the job of `c` into a fresh directory, loads, matches and aligns it. 0, or -1. */
static cl_clock_model g_cm;
static int load_synth(synth_cfg *c, char *dir, size_t n, cl_job *job) {
  if (synth_write_job(c, "commlens-analyse", dir, n)) return -1;
  char *dirs[1] = {dir};
  if (cl_job_load(job, dirs, 1, 1) != c->nranks) return -1;
  cl_job_instances(job);
  cl_clock_align(job, &g_cm);
  return 0;
}

static void cleanup(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "  cannot remove %s\n", dir);
}

static int rank_index(const cl_job *job, int rank) {
  for (int i = 0; i < job->n; i++) if (job->r[i]->rank == rank) return i;
  return -1;
}

TL_TEST(late_rank_is_every_instances_culprit_once) {
  synth_cfg c; synth_defaults(&c);
  c.nranks = 4; c.ncoll = 40; c.late_rank = 2; c.late_ns = 300000;
  char dir[512]; cl_job job;
  REQUIRE(load_synth(&c, dir, sizeof dir, &job) == 0, "cannot load the synthetic job");
  cl_analysis an;
  cl_analyse(&job, &g_cm, &an);
  int late = rank_index(&job, 2);
  REQUIRE(late >= 0, "rank 2 loaded");
  CHECK(an.n_multi == c.ncoll, "%lld instances matched, want %d", (long long)an.n_multi, c.ncoll);
  int agree = 1, named = 0;
  for (size_t i = 0; i < job.inst.n; i++) {
    if (an.ia[i].culprit < 0) continue;
    named++;
    agree &= an.ia[i].culprit == an.bl.inst[i].culprit && an.ia[i].wait == an.bl.inst[i].wait &&
             an.ia[i].transfer == an.bl.inst[i].transfer;
    CHECK(an.ia[i].culprit == late, "instance %zu: culprit %d", i, an.ia[i].culprit);
    /* three ranks waited about late_ns each for the late one */
    CHECK(fabs(an.ia[i].wait - 3.0 * (double)c.late_ns) < 3 * 10000.0, "instance %zu: wait %.0f", i, an.ia[i].wait);
  }
  CHECK(named == c.ncoll, "%d instances with a culprit", named);
  CHECK(agree, "the analysis and the blame measurement disagree on an instance");
  CHECK(an.bl.order[0] == late && an.bl.rank[late].persistent, "first in the ranking: rank index %d", an.bl.order[0]);
  CHECK(an.vd.v.kind == CL_SG_STRAGGLER && an.vd.v.straggler[0].who == late, "the verdict: %s", an.vd.line);
  CHECK(an.ra[late].n_last == c.ncoll && an.ra[late].waited == 0, "late rank: last %lld times, waited %.0f",
        (long long)an.ra[late].n_last, an.ra[late].waited);
  CHECK(an.tot_wait > 0 && an.tot_wait < an.tot_coll, "total wait %.0f of %.0f", an.tot_wait, an.tot_coll);
  cl_analysis_free(&an);
  cl_job_free(&job); cl_cm_free(&g_cm);
  if (!tl_cur_failed) cleanup(dir);
}

TL_TEST(slow_channel_leads_the_channel_table) {
  synth_cfg c; synth_defaults(&c);
  c.nranks = 4; c.ncoll = 30; c.slow_rank = 1; c.slow_ch = 3; c.slow_factor = 3.0;
  char dir[512]; cl_job job;
  REQUIRE(load_synth(&c, dir, sizeof dir, &job) == 0, "cannot load the synthetic job");
  cl_analysis an;
  cl_analyse(&job, &g_cm, &an);
  REQUIRE(an.nch > 0, "no channels");
  const cl_chan_row *top = &an.ch[0];
  CHECK(job.r[top->ri]->rank == 1 && top->c->channel == 3, "slowest: rank %d ch %d", job.r[top->ri]->rank, top->c->channel);
  CHECK(top->ratio > 2.0, "its ratio to the rank's median channel: %.2f", top->ratio);
  for (size_t k = 1; k < an.nch; k++)
    CHECK(an.ch[k].ratio < 1.5, "rank %d ch %d: ratio %.2f", job.r[an.ch[k].ri]->rank, an.ch[k].c->channel, an.ch[k].ratio);
  cl_analysis_free(&an);
  cl_job_free(&job); cl_cm_free(&g_cm);
  if (!tl_cur_failed) cleanup(dir);
}

TL_TEST(no_late_rank_no_persistent_culprit) {
  synth_cfg c; synth_defaults(&c);
  c.nranks = 4; c.ncoll = 30;
  char dir[512]; cl_job job;
  REQUIRE(load_synth(&c, dir, sizeof dir, &job) == 0, "cannot load the synthetic job");
  cl_analysis an;
  cl_analyse(&job, &g_cm, &an);
  for (int i = 0; i < job.n; i++)
    CHECK(!an.bl.rank[i].persistent, "rank %d persistently late with arrivals 5 us apart", job.r[i]->rank);
  CHECK(an.vd.v.kind == CL_SG_NONE, "the verdict: %s", an.vd.line);
  cl_analysis_free(&an);
  cl_job_free(&job); cl_cm_free(&g_cm);
  if (!tl_cur_failed) cleanup(dir);
}

/* report --json's verdict.kind values are a stable schema (docs/verdict.md). */
TL_TEST(verdict_kinds_keep_their_documented_names) {
  CHECK(!strcmp(cl_sg_kind_name(CL_SG_STRAGGLER), "straggler"), "%s", cl_sg_kind_name(CL_SG_STRAGGLER));
  CHECK(!strcmp(cl_sg_kind_name(CL_SG_STALLS_ONLY), "stalls_only"), "%s", cl_sg_kind_name(CL_SG_STALLS_ONLY));
  CHECK(!strcmp(cl_sg_kind_name(CL_SG_NONE), "none"), "%s", cl_sg_kind_name(CL_SG_NONE));
  CHECK(!strcmp(cl_sg_kind_name(CL_SG_NO_DATA), "no_data"), "%s", cl_sg_kind_name(CL_SG_NO_DATA));
}

TL_MAIN("tools/analyse")
