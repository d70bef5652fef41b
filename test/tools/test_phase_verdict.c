/* test_phase_verdict.c: the straggler verdict on v7 kernel-phase evidence (analyse/
 * phase_evidence.h) over synthetic jobs with a planted late rank on two hosts: with phases the
 * verdict rests on the GPU's own wait for peers and names the same rank the arrival-based
 * verdict names without them; it stays right with a clock offset of several ms planted between
 * the hosts (nothing in the traces describes it); a job where one rank lacks phases keeps the
 * arrival evidence. */
#include "tl.h"
#include "synth_gen.h"
#include "tools/commlens/analyse/analysis.h"
#include "tools/commlens/analyse/clock_align.h"
#include "tools/commlens/analyse/phase_evidence.h"
#include <unistd.h>

typedef struct {
  int kind; int who_rank; enum cl_sg_evidence ev; char line[512];
  uint64_t top_tag; int top_other; size_t ntags; int capped; int64_t distinct;
  double split_wait, split_xfer;   /* rank 0's exposure split */
  double top_wait_caused, next_wait_caused;
} verdict_seen;

/* Writes the job of `c`, loads, aligns and analyses it; the verdict's kind, named rank, evidence. */
static int verdict_of(synth_cfg *c, verdict_seen *out) {
  char dir[512];
  if (synth_write_job(c, "commlens-phase", dir, sizeof dir)) return -1;
  char *dirs[1] = {dir};
  cl_job job;
  cl_clock_model cm;
  if (cl_job_load(&job, dirs, 1, 1) != c->nranks) return -1;
  cl_job_instances(&job);
  cl_clock_align(&job, &cm);
  cl_analysis an;
  cl_analyse(&job, &cm, &an);
  memset(out, 0, sizeof *out);
  out->kind = an.vd.v.kind;
  /* the rank named first: the straggler, else the largest one-off stall */
  out->who_rank = an.vd.v.nstraggler ? job.r[an.vd.v.straggler[0].who]->rank
                  : an.vd.v.nstall ? job.r[an.vd.v.stall[0].who]->rank : -1;
  out->ev = an.vd.v.evidence;
  snprintf(out->line, sizeof out->line, "%s", an.vd.line);
  out->ntags = an.tags.n; out->capped = an.tags.capped; out->distinct = an.tags.n_distinct;
  if (an.tags.n) {
    out->top_tag = an.tags.row[0].tag; out->top_other = an.tags.row[0].other;
    out->top_wait_caused = an.tags.row[0].wait_caused_ns;
    out->next_wait_caused = an.tags.n > 1 ? an.tags.row[1].wait_caused_ns : 0;
  }
  out->split_wait = an.tags.exp_wait[0]; out->split_xfer = an.tags.exp_xfer[0];
  cl_analysis_free(&an);
  cl_cm_free(&cm);
  cl_job_free(&job);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "  cannot remove %s\n", dir);
  return 0;
}

static synth_cfg two_hosts(void) {
  synth_cfg c;
  synth_defaults(&c);
  c.nranks = 4; c.ranks_per_host = 2; c.ncoll = 80; c.late_rank = 3; c.late_ns = 2000000;
  return c;
}

/* Both verdicts on one job; the phase verdict must name the arrival verdict's rank. */
static void same_rank(synth_cfg c, const char *what) {
  verdict_seen arr, ph;
  c.phases = 0;
  REQUIRE(verdict_of(&c, &arr) == 0, "arrival job");
  c.phases = 1;
  REQUIRE(verdict_of(&c, &ph) == 0, "phase job");
  CHECK(arr.kind >= CL_SG_STALLS_ONLY && arr.who_rank == c.late_rank && arr.ev == CL_SG_GPU_START,
        "%s: arrival verdict: %s", what, arr.line);
  CHECK(ph.kind == arr.kind && ph.who_rank == arr.who_rank && ph.ev == CL_SG_GPU_WAIT,
        "%s: phase verdict: %s", what, ph.line);
  CHECK(!strcmp(cl_sg_evidence_key(ph.ev), "gpu_wait"), "the report's evidence key: %s", cl_sg_evidence_key(ph.ev));
}

TL_TEST(phase_verdict_names_the_arrival_verdicts_rank) {
  synth_cfg c = two_hosts();
  c.ranks_per_host = 4;                       /* one host: arrivals on one clock */
  c.late_ns = 300000;
  same_rank(c, "one host, late every time");
  c = two_hosts();                            /* two hosts, several ms apart: a rank late on */
  c.late_every = 3; c.host_skew_ns = 5000000; /* every third collective (a steady lateness */
  same_rank(c, "two hosts 5 ms apart, late every 3rd");   /* is an offset to the clock model) */
}

TL_TEST(phase_verdict_holds_with_ms_clock_offset_between_hosts) {
  for (int k = 0; k < 3; k++) {
    static const int64_t skew[3] = {5000000, -4000000, 9000000};
    synth_cfg c = two_hosts();
    c.phases = 1; c.host_skew_ns = skew[k];
    verdict_seen ph;
    REQUIRE(verdict_of(&c, &ph) == 0, "phase job");
    CHECK(ph.kind == CL_SG_STRAGGLER && ph.who_rank == 3 && ph.ev == CL_SG_GPU_WAIT,
          "offset %lld ns: %s", (long long)skew[k], ph.line);
  }
}

TL_TEST(late_rank_on_the_other_host_too) {
  synth_cfg c = two_hosts();
  c.phases = 1; c.late_rank = 0; c.host_skew_ns = 6000000;
  verdict_seen ph;
  REQUIRE(verdict_of(&c, &ph) == 0, "phase job");
  CHECK(ph.kind == CL_SG_STRAGGLER && ph.who_rank == 0 && ph.ev == CL_SG_GPU_WAIT, "%s", ph.line);
}

TL_TEST(no_late_rank_no_straggler_on_phases) {
  synth_cfg c = two_hosts();
  c.phases = 1; c.late_rank = -1; c.host_skew_ns = 5000000;
  verdict_seen ph;
  REQUIRE(verdict_of(&c, &ph) == 0, "phase job");
  CHECK(ph.kind != CL_SG_STRAGGLER && ph.ev == CL_SG_GPU_WAIT, "%s", ph.line);
}

TL_TEST(phases_missing_on_one_rank_keep_arrivals) {
  synth_cfg c = two_hosts();
  char dir[512];
  snprintf(dir, sizeof dir, "%s/commlens-phase-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  REQUIRE(mkdtemp(dir) != NULL, "mkdtemp");
  c.dir = dir;
  char path[1024];
  for (int r = 0; r < c.nranks; r++) {
    c.phases = r != 1;
    REQUIRE(synth_write_rank(&c, r, path, sizeof path) == 0, "write rank %d", r);
  }
  char *dirs[1] = {dir};
  cl_job job;
  REQUIRE(cl_job_load(&job, dirs, 1, 1) == c.nranks, "load");
  cl_job_instances(&job);
  CHECK(!cl_phase_evidence_usable(&job), "phases on 3 of 4 ranks are not the verdict's evidence");
  cl_job_free(&job);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "  cannot remove %s\n", dir);
}

/* "bucket 1 waits most": the late rank is late only on the collectives tagged 1 */
TL_TEST(by_tag_names_the_tag_that_waits_most) {
  synth_cfg c = two_hosts();
  c.phases = 1; c.late_every = 4; c.tag_every = 4;   /* late on i % 4 == 0: tag 1 */
  verdict_seen v;
  REQUIRE(verdict_of(&c, &v) == 0, "tagged job");
  CHECK(v.ntags == 4 && v.distinct == 4 && !v.capped, "%zu tag rows, %lld distinct", v.ntags, (long long)v.distinct);
  CHECK(v.top_tag == 1 && !v.top_other && v.top_wait_caused > 10 * v.next_wait_caused,
        "top tag %llu with %.0f ns caused, next %.0f", (unsigned long long)v.top_tag, v.top_wait_caused, v.next_wait_caused);
  /* synth: exposed = 30% of the span; the GPU waits for the last arrival, so the exposed
   * time of an early rank is mostly waiting */
  CHECK(v.split_wait > 0 && v.split_xfer >= 0, "rank 0's split: waiting %.0f, transferring %.0f", v.split_wait, v.split_xfer);
  synth_cfg u = two_hosts();
  REQUIRE(verdict_of(&u, &v) == 0, "untagged job");
  CHECK(v.ntags == 0 && v.split_xfer < 0, "no tags, no phases: no table (%zu rows), no split", v.ntags);
}

TL_TEST(tags_past_the_cap_fold_into_other) {
  synth_cfg c = two_hosts();
  c.phases = 1; c.tag_every = 50; c.late_every = 50;   /* 50 tags, the late one is tag 1 */
  verdict_seen v;
  REQUIRE(verdict_of(&c, &v) == 0, "tagged job");
  CHECK(v.distinct == 50 && v.capped && v.ntags == CL_TAG_LABELS_MAX, "%lld distinct, %zu rows, capped %d",
        (long long)v.distinct, v.ntags, v.capped);
  CHECK(v.top_tag == 1 && !v.top_other, "the costliest tag keeps its name: %llu", (unsigned long long)v.top_tag);
}

TL_MAIN("tools/phase_verdict")
