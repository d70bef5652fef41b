/* straggler_line.c: the straggler verdict in one line of text (docs/verdict.md lists every
 * form): who, the pattern of its lateness, by how much, what it cost; one-off stalls; or the
 * largest effect and why it named no one. Reads the verdict; decides nothing. */
#include "tools/commlens/analyse/straggler.h"
#include "tools/commlens/base/util.h"
#include <stdio.h>
#include <string.h>

/* "rank 2 (host n2)" or "rank 2" */
static void name_who(char *b, size_t n, const char *word, int32_t who, const char *host) {
  if (host && host[0]) snprintf(b, n, "%s %d (host %s)", word, who, cl_show(host));   /* a sentence: shown text */
  else snprintf(b, n, "%s %d", word, who);
  cl_utf8_cut(b);
}

static const char *ordinal(int k, char *b, size_t n) {
  snprintf(b, n, "%d%s", k, k % 10 == 2 && k % 100 != 12 ? "nd" : k % 10 == 3 && k % 100 != 13 ? "rd" : "th");
  return b;
}

/* Appends with snprintf, never past n; returns the new length (at most n). */
#define ADD(...) do { if (len < n) { int w_ = snprintf(buf + len, n - len, __VA_ARGS__); len = w_ < 0 ? n : len + (size_t)w_; } } while (0)

/* "late every 3rd step (26 of 77)", "late in a burst over steps 10-20 (11 of 100 steps)", ... */
static size_t pattern(const cl_sg_verdict *v, const cl_sg_suspect *s, char *buf, size_t n, size_t len) {
  const char *unit = v->unit_is_step ? "step" : "instance";
  char o[16];
  long long k = (long long)s->last_count, N = (long long)s->units;
  switch (s->pattern) {
  case CL_SG_EVERY: ADD("late every %s (%lld of %lld)", unit, k, N); break;
  case CL_SG_SOME: ADD("late in %lld of %lld %ss", k, N, unit); break;
  case CL_SG_EVERY_KTH: ADD("late every %s %s (%lld of %lld)", ordinal(s->period, o, sizeof o), unit, k, N); break;
  case CL_SG_TURNS:
    ADD("late every %s %s (%lld of %lld), taking turns with %s %d,", ordinal(s->period, o, sizeof o), unit, k, N,
        v->who_word, s->turns_with);
    break;
  case CL_SG_BURST:
    ADD("late in a burst over %ss %lld-%lld (%lld of %lld %ss)", unit, (long long)s->burst_from, (long long)s->burst_to, k, N, unit);
    break;
  }
  return len;
}

/* ", costing 120.0 ms (2.3% of the job)" */
static size_t costing(const cl_sg_verdict *v, double cost, char *buf, size_t n, size_t len) {
  char t[32];
  ADD(", costing %s", cl_fmt_time(t, sizeof t, cost));
  if (v->job_ns > 0) ADD(" (%.1f%% of the job)", 100.0 * cost / v->job_ns);
  return len;
}

static size_t straggler_line(const cl_sg_verdict *v, char *buf, size_t n) {
  char who[300];
  size_t len = 0;
  int ch = !strcmp(v->who_word, "channel");   /* a channel that ends last beyond chance is a slow one */
  const cl_sg_suspect *s = &v->straggler[0];
  name_who(who, sizeof who, v->who_word, s->who, s->host);
  ADD("%s is %s%s: ", who, ch ? "slow" : "a straggler", s->gpu_side ? ", slow on the GPU (later there than to enqueue)" : "");
  len = pattern(v, s, buf, n, len);
  char t1[32];
  ADD(" by a median %s; it cost the job %.3f s", cl_fmt_time(t1, sizeof t1, s->median_lateness_ns), s->cost_ns / 1e9);
  if (v->job_ns > 0) ADD(" of %.3f s (%.1f%%)", v->job_ns / 1e9, 100.0 * s->cost_ns / v->job_ns);
  /* stragglers taking turns: every one named is in the line, not only the costliest */
  for (int k = 1; k < v->nstraggler && k <= 3; k++) {
    name_who(who, sizeof who, v->who_word, v->straggler[k].who, v->straggler[k].host);
    ADD("%s%s", k == 1 ? (v->nstraggler > 2 ? "; so are " : "; so is ") : ", ", who);
  }
  if (v->nstraggler > 4) ADD(" and %d more", v->nstraggler - 4);
  return len;
}

const char *cl_sg_verdict_line(const cl_sg_verdict *v, char *buf, size_t n) {
  char who[300], t1[32], t2[32];
  const char *unit = v->unit_is_step ? "step" : "instance";
  int ch = !strcmp(v->who_word, "channel");
  size_t len = 0;
  if (!n) return buf;
  buf[0] = 0;
  switch (v->kind) {
  case CL_SG_NO_DATA:
    ADD("no verdict: no instance outside the start-up period had two or more %ss", v->who_word);
    break;
  case CL_SG_STRAGGLER: straggler_line(v, buf, n); break;
  case CL_SG_STALLS_ONLY:
    ADD("one-off stalls only:");
    for (size_t k = 0; k < v->nstall && k < 3; k++) {
      const cl_sg_stall *st = &v->stall[k];
      ADD("%s %s %d +%s", k ? "," : "", v->who_word, st->who, cl_fmt_time(t1, sizeof t1, st->margin_ns));
      if (st->step >= 0) ADD(" at step %lld", (long long)st->step); else ADD(" (instance %u)", st->inst);
      if (v->job_ns > 0) ADD(" (%.1f%% of the job)", 100.0 * st->margin_ns / v->job_ns);
    }
    if (v->nstall > 3) ADD(" and %zu more", v->nstall - 3);
    ADD("; noise floor %s", cl_fmt_time(t2, sizeof t2, v->noise_floor_ns));
    break;
  case CL_SG_NONE: {
    const cl_sg_suspect *s = &v->largest;
    ADD("no %s found: ", ch ? "slow channel" : "straggler");
    if (s->who < 0) {
      ADD("no %s was late by more than %s beyond the clock error and the timing resolution", v->who_word,
          cl_fmt_time(t1, sizeof t1, v->min_margin_ns));
    } else {
      name_who(who, sizeof who, v->who_word, s->who, s->host);
      ADD("the largest effect was %s, late in %lld of %lld %ss by a median %s", who, (long long)s->last_count,
          (long long)s->units, unit, cl_fmt_time(t1, sizeof t1, s->median_lateness_ns));
      len = costing(v, s->cost_ns, buf, n, len);
      if (s->p_value > v->alpha) ADD(", no more than chance gives (p %.2g)", s->p_value);
      else if (v->job_ns > 0)
        ADD(": %.1f%% more than the others', below the %.0f%% floor", 100.0 * s->excess_ns / v->job_ns, 100 * v->material);
    }
    ADD("; noise floor %s", cl_fmt_time(t2, sizeof t2, v->noise_floor_ns));
    break;
  }
  }
  return buf;
}
