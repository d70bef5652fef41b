/* verdict.c: how the answer is shown: the verdict line with its evidence, the clock model
 * (per host pair: offset, interval, what it came from; "one clock (same boot)" within a host)
 * and the costliest steps, as text (the report's first lines) and as the documented JSON
 * objects of docs/verdict.md (verdict, clock_model, steps). Reads the analysis; computes
 * nothing. */
#include "tools/commlens/render/report.h"
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static json_object *ji(int64_t v) { return json_object_new_int64(v); }
static json_object *jr(double v) { return isfinite(v) ? json_object_new_int64((int64_t)llround(v)) : NULL; }
static json_object *jd(double v) { return isfinite(v) ? json_object_new_double(v) : NULL; }
static json_object *js(const char *s) { return s ? json_object_new_string(s) : NULL; }
static json_object *jcomm(uint64_t c) { char b[24]; snprintf(b, sizeof b, "0x%llx", (unsigned long long)c); return json_object_new_string(b); }
static const char *host_of(const cl_job *job, int ri) { return job->r[ri]->info.host; }

/* ---- text ---- */

void cl_render_clock_lines(const cl_job *job, const cl_clock_model *m, FILE *o) {
  char b1[32], b2[32], b3[32];
  for (int c = 0; c < m->nclocks; c++) {
    const cl_cm_clock *ck = &m->clock[c];
    const char *cid = job->r[ck->first_rank]->info.clock_id;
    fprintf(o, "  clock %d: host %s", c, host_of(job, ck->first_rank) ? cl_show(host_of(job, ck->first_rank)) : "?");
    if (cid && cid[0]) fprintf(o, " (clock id %s: a timeline of its own)", cl_show(cid));
    fprintf(o, ", rank(s)");
    int shown = 0;
    for (int i = 0; i < job->n && shown < 16; i++)
      if (m->clock_of_rank[i] == c) { fprintf(o, " %d", job->r[i]->rank); shown++; }
    if (ck->nranks > shown) fprintf(o, " (+%d)", ck->nranks - shown);
    fprintf(o, ": %s", ck->nranks == 1 ? "its own clock" : cid && cid[0] ? "one clock (same clock id), offset 0 exactly"
                                                                           : "one clock (same boot), offset 0 exactly");
    if (c == m->root) fprintf(o, "; the reference\n");
    else if (ck->pair < 0) fprintf(o, "; not joined to the reference (left as recorded)\n");
    else {
      const cl_cm_pair *p = &m->pair[ck->pair];
      fprintf(o, "; vs host %s: %s%s", cl_show(host_of(job, m->clock[p->parent].first_rank)),
              p->offset_ns >= 0 ? "+" : "-", cl_fmt_time(b1, sizeof b1, fabs(p->offset_ns)));
      if (isfinite(p->lo_ns) && isfinite(p->hi_ns))
        fprintf(o, " in [%s%s, %s%s]", p->lo_ns < 0 ? "-" : "+", cl_fmt_time(b2, sizeof b2, fabs(p->lo_ns)),
                p->hi_ns < 0 ? "-" : "+", cl_fmt_time(b3, sizeof b3, fabs(p->hi_ns)));
      else fprintf(o, " (unbounded)");
      fprintf(o, ", drift %+.1f ppm, from %s (%lld instance(s))\n", p->drift * 1e6, cl_cm_source_name(p->source),
              (long long)p->nconstraints);
    }
  }
}

void cl_render_channel_lines(const cl_job *job, const cl_channels_an *ch, int top, FILE *o) {
  fprintf(o, "Channels: %s\n", ch->line);
  int shown = 0;
  for (int i = 0; i < ch->n && shown + 1 < top; i++) {   /* the other ranks with a finding */
    const cl_ch_rank *c = &ch->r[i];
    if (i == ch->head || (c->v.kind != CL_SG_STRAGGLER && c->v.kind != CL_SG_STALLS_ONLY)) continue;
    fprintf(o, "  also rank %d: %s\n", job->r[c->rank_idx]->rank, c->line);
    shown++;
  }
  if (ch->n_over)
    fprintf(o, "  (%lld kernel_ch slice(s) past the %u kept per rank were not analysed)\n", (long long)ch->n_over, CL_CHEND_MAX);
}

void cl_render_verdict_text(cl_job *job, cl_analysis *an, int top, FILE *o) {
  const cl_verdict_an *vd = &an->vd;
  const cl_sg_verdict *v = &vd->v;
  char b1[32], b2[32];
  fprintf(o, "Verdict: %s\n", vd->line);
  fprintf(o, "  evidence: %s%s%s; ties within %s and the clock error", cl_sg_evidence_name(v->evidence),
          v->has_second ? " and " : "", v->has_second ? cl_sg_evidence_name(v->evidence2) : "",
          cl_fmt_time(b1, sizeof b1, v->min_margin_ns));
  if (vd->share.n_shared)
    fprintf(o, "; GPU starts of the %d rank(s) time-sharing a GPU (up to %d a GPU) within %s (its %s scheduler slices)",
            vd->share.n_shared, vd->share.kmax, cl_fmt_time(b1, sizeof b1, v->res_ns), cl_fmt_time(b2, sizeof b2, vd->share.slice_ns));
  fprintf(o, "\n  %lld instance(s), %lld in the start-up period, %lld not called inside the clock error; "
          "false-accusation rate %.0f%% per job; a straggler costs the job %.0f%% more than the others\n", (long long)v->n_inst,
          (long long)v->n_startup, (long long)v->n_within_clock, 100 * v->alpha, 100 * v->material);
  if (vd->n_not_causal || vd->n_impossible)
    fprintf(o, "  left out: %lld instance(s) of Broadcast/Reduce-like collectives (a late receiver makes no one wait), "
            "%lld with impossible times (a GPU start after a peer's end)\n", (long long)vd->n_not_causal, (long long)vd->n_impossible);
  for (int k = 1; k < v->nstraggler && k < top; k++) {
    const cl_sg_suspect *s = &v->straggler[k];
    fprintf(o, "  also: rank %d, %s, late in %lld of %lld by a median %s%s; cost %.3f s\n", job->r[s->who]->rank,
            cl_sg_pattern_key(s->pattern), (long long)s->last_count, (long long)s->units,
            cl_fmt_time(b1, sizeof b1, s->median_lateness_ns), s->gpu_side ? ", on the GPU" : "", s->cost_ns / 1e9);
  }
  for (size_t k = 0; k < v->nstall && (int)k < top; k++) {
    const cl_sg_stall *st = &v->stall[k];
    const cl_inst *in = &job->inst.a[st->inst];
    fprintf(o, "  stall: rank %d +%s at %s #%lld", job->r[st->who]->rank, cl_fmt_time(b1, sizeof b1, st->margin_ns),
            cl_func_name(in->func), (long long)in->seq);
    if (st->step >= 0) fprintf(o, " (step %lld)", (long long)st->step);
    fputc('\n', o);
  }
  cl_render_channel_lines(job, &an->chv, top, o);
  fprintf(o, "Clock model (reference: rank %d's host)\n", job->ref_rank);
  cl_render_clock_lines(job, an->cm, o);
  if (vd->steps_source != CL_STEPS_NONE && vd->nsteps) {
    fprintf(o, "Steps: %u (%s", vd->nsteps, vd->steps_source == CL_STEPS_NVTX ? "NVTX ranges" : "the repeating pattern");
    if (vd->steps_source == CL_STEPS_PATTERN)
      fprintf(o, " of comm %08llx: %u collectives a step, after %u of start-up",
              (unsigned long long)(vd->steps_comm & 0xffffffffull), vd->st.period, vd->st.startup);
    fprintf(o, "); costliest:");
    int shown = 0;
    for (uint32_t k = 0; k < vd->nsteps && shown < 3; k++) {
      const cl_step_verdict *sv = &vd->stepv[vd->step_order[k]];
      if (sv->lost_ns <= 0) break;
      fprintf(o, "%s step %d lost %s", shown ? "," : "", sv->step, cl_fmt_time(b1, sizeof b1, sv->lost_ns));
      if (sv->culprit >= 0) fprintf(o, " (rank %d last by %s)", job->r[sv->culprit]->rank, cl_fmt_time(b2, sizeof b2, sv->lateness_ns));
      shown++;
    }
    fprintf(o, "%s\n", shown ? "" : " none lost time");
  } else fprintf(o, "Steps: none found (no NVTX ranges and no repeating pattern of collectives)\n");
  fputc('\n', o);
}

/* ---- JSON (docs/verdict.md) ---- */

/* Whose verdict an object describes: the ranks' (ch NULL: participants are rank indices, instances
 * the job's) or one rank's channels (participants are channel numbers, instances ch->key). */
typedef struct { const cl_job *job; const cl_ch_rank *ch; } who_of;

static json_object *inst_key(const who_of *w, uint32_t id, json_object *e) {
  uint64_t comm; int64_t seq; int func;
  if (w->ch) { comm = w->ch->key[id].comm; seq = w->ch->key[id].seq; func = w->ch->key[id].func; }
  else { const cl_inst *in = &w->job->inst.a[id]; comm = in->comm; seq = in->seq; func = in->func; }
  json_object_object_add(e, "comm", jcomm(comm));
  json_object_object_add(e, "func", js(func >= 0 ? cl_func_name(func) : NULL));
  json_object_object_add(e, "seq", ji(seq));
  return e;
}
/* "rank" and "host" of a rank verdict's participant; "channel" (and its "rank") of a channel's. */
static void name_who(const who_of *w, int32_t who, json_object *x) {
  if (w->ch) {
    json_object_object_add(x, "channel", ji(who));
    json_object_object_add(x, "rank", ji(w->job->r[w->ch->rank_idx]->rank));
  } else {
    json_object_object_add(x, "rank", ji(w->job->r[who]->rank));
    json_object_object_add(x, "host", js(host_of(w->job, who)));
  }
}

static json_object *suspect_json(const who_of *w, const cl_sg_verdict *v, const cl_sg_suspect *s) {
  json_object *x = json_object_new_object();
  name_who(w, s->who, x);
  json_object_object_add(x, "last_count", ji(s->last_count));
  json_object_object_add(x, "units", ji(s->units));
  json_object_object_add(x, "expected", jd(s->expected));
  json_object_object_add(x, "median_lateness_ns", jr(s->median_lateness_ns));
  json_object_object_add(x, "cost_ns", jr(s->cost_ns));
  json_object_object_add(x, "cost_share", v->job_ns > 0 ? jd(s->cost_ns / v->job_ns) : NULL);
  json_object_object_add(x, "p_value", jd(s->p_value));
  json_object_object_add(x, "confidence", jd(s->confidence));
  json_object_object_add(x, "stalls", ji(s->stalls));
  json_object_object_add(x, "pattern", js(cl_sg_pattern_key(s->pattern)));
  int kth = s->pattern == CL_SG_EVERY_KTH || s->pattern == CL_SG_TURNS;
  json_object_object_add(x, "period", kth ? ji(s->period) : NULL);
  json_object_object_add(x, "phase", kth ? ji(s->phase) : NULL);
  json_object *tw = NULL;
  if (s->pattern == CL_SG_TURNS && s->turns_with >= 0) tw = w->ch ? ji(s->turns_with) : ji(w->job->r[s->turns_with]->rank);
  json_object_object_add(x, "turns_with", tw);
  json_object *bu = NULL;
  if (s->pattern == CL_SG_BURST) { bu = json_object_new_array(); json_object_array_add(bu, ji(s->burst_from)); json_object_array_add(bu, ji(s->burst_to)); }
  json_object_object_add(x, "burst", bu);
  json_object_object_add(x, "gpu_side", json_object_new_boolean(s->gpu_side));
  json_object_object_add(x, "family_period", ji(s->family_k));
  json_object_object_add(x, "beyond_chance_ns", jr(s->excess_ns));
  json_object *cb = json_object_new_array();
  json_object_array_add(cb, jr(s->cost_by[0])); json_object_array_add(cb, jr(s->cost_by[1]));
  json_object_object_add(x, "cost_by_evidence_ns", cb);
  json_object *ev = json_object_new_array();
  for (int k = 0; k < s->nevidence; k++) {
    json_object *e = inst_key(w, s->evidence[k], json_object_new_object());
    json_object_object_add(e, "margin_ns", jr(v->inst[s->evidence[k]].margin_ns));
    json_object_object_add(e, "saving_ns", jr(v->inst[s->evidence[k]].over_median_ns));
    json_object_array_add(ev, e);
  }
  json_object_object_add(x, "evidence_instances", ev);
  return x;
}

/* The verdict object (docs/verdict.md) of the ranks, or of one rank's channels. */
static json_object *sg_json(const who_of *w, const cl_sg_verdict *v, const char *line) {
  json_object *x = json_object_new_object(), *c = json_object_new_object();
  json_object_object_add(x, "kind", js(cl_sg_kind_name(v->kind)));
  json_object_object_add(x, "line", js(line));
  json_object_object_add(x, "evidence", js(cl_sg_evidence_key(v->evidence)));
  json_object_object_add(x, "evidence_second", v->has_second ? js(cl_sg_evidence_key(v->evidence2)) : NULL);
  json_object_object_add(x, "resolution_ns", jr(v->res_ns));
  json_object_object_add(x, "material_share", jd(v->material));
  json_object_object_add(x, "unit", js(v->unit_is_step ? "step" : "instance"));
  json_object_object_add(x, "alpha", jd(v->alpha));
  json_object_object_add(x, "noise_floor_ns", jr(v->noise_floor_ns));
  json_object_object_add(x, "stall_threshold_ns", jr(v->stall_threshold_ns));
  json_object_object_add(x, "min_margin_ns", jr(v->min_margin_ns));
  json_object_object_add(x, "job_ns", v->job_ns > 0 ? jr(v->job_ns) : NULL);
  json_object_object_add(c, "instances", ji(v->n_inst));
  json_object_object_add(c, "startup", ji(v->n_startup));
  json_object_object_add(c, "eligible", ji(v->n_eligible));
  json_object_object_add(c, "units", ji(v->n_units));
  json_object_object_add(c, "within_clock_error", ji(v->n_within_clock));
  json_object_object_add(x, "counts", c);
  json_object_object_add(x, "startup_end_ns", v->startup_end ? ji(v->startup_end) : NULL);
  json_object *sa = json_object_new_array();
  for (int k = 0; k < v->nstraggler; k++) json_object_array_add(sa, suspect_json(w, v, &v->straggler[k]));
  json_object_object_add(x, "stragglers", sa);
  json_object_object_add(x, "largest_effect", v->largest.who >= 0 ? suspect_json(w, v, &v->largest) : NULL);
  json_object *st = json_object_new_array();
  for (size_t k = 0; k < v->nstall; k++) {
    json_object *e = json_object_new_object();
    name_who(w, v->stall[k].who, e);
    inst_key(w, v->stall[k].inst, e);
    json_object_object_add(e, "margin_ns", jr(v->stall[k].margin_ns));
    json_object_object_add(e, "step", v->stall[k].step >= 0 ? ji(v->stall[k].step) : NULL);
    json_object_array_add(st, e);
  }
  json_object_object_add(x, "stalls", st);
  return x;
}

static json_object *channels_json(const cl_job *job, const cl_channels_an *ch) {
  json_object *x = json_object_new_object(), *ra = json_object_new_array();
  json_object_object_add(x, "line", js(ch->line));
  json_object_object_add(x, "rank", ch->head >= 0 ? ji(job->r[ch->r[ch->head].rank_idx]->rank) : NULL);
  json_object_object_add(x, "not_analysed", ji(ch->n_over));
  for (int i = 0; i < ch->n; i++) {
    who_of w = { job, &ch->r[i] };
    json_object *e = json_object_new_object();
    json_object_object_add(e, "rank", ji(job->r[ch->r[i].rank_idx]->rank));
    json_object_object_add(e, "host", js(host_of(job, ch->r[i].rank_idx)));
    json_object_object_add(e, "verdict", sg_json(&w, &ch->r[i].v, ch->r[i].line));
    json_object_array_add(ra, e);
  }
  json_object_object_add(x, "ranks", ra);
  return x;
}

static json_object *verdict_json(const cl_job *job, const cl_analysis *an) {
  who_of w = { job, NULL };
  json_object *x = sg_json(&w, &an->vd.v, an->vd.line), *c = NULL;
  json_object_object_get_ex(x, "counts", &c);
  json_object_object_add(c, "not_causal", ji(an->vd.n_not_causal));
  json_object_object_add(c, "impossible", ji(an->vd.n_impossible));
  json_object *g = json_object_new_object();
  json_object_object_add(g, "ranks", ji(an->vd.share.n_shared));
  json_object_object_add(g, "most_on_one", ji(an->vd.share.kmax));
  json_object_object_add(g, "slice_ns", jr(an->vd.share.slice_ns));
  json_object_object_add(x, "gpu_shared", g);
  json_object_object_add(x, "channels", channels_json(job, &an->chv));
  return x;
}

static json_object *clock_json(const cl_job *job, const cl_clock_model *m) {
  json_object *x = json_object_new_object(), *cl = json_object_new_array(), *pa = json_object_new_array();
  json_object_object_add(x, "reference_rank", ji(job->ref_rank));
  for (int c = 0; c < m->nclocks; c++) {
    const cl_cm_clock *ck = &m->clock[c];
    const cl_info *in = &job->r[ck->first_rank]->info;
    json_object *e = json_object_new_object(), *rk = json_object_new_array();
    json_object_object_add(e, "host", js(in->host));
    json_object_object_add(e, "boot_id", js(in->boot_id));
    json_object_object_add(e, "clock_id", js(in->clock_id));
    for (int i = 0; i < job->n; i++) if (m->clock_of_rank[i] == c) json_object_array_add(rk, ji(job->r[i]->rank));
    json_object_object_add(e, "ranks", rk);
    json_object *sy = NULL;
    if (in->sync_known) {
      sy = json_object_new_object();
      json_object_object_add(sy, "unsynchronised", json_object_new_boolean(in->sync_unsynchronised));
      json_object_object_add(sy, "esterror_us", ji(in->sync_esterror_us));
      json_object_object_add(sy, "maxerror_us", ji(in->sync_maxerror_us));
    }
    json_object_object_add(e, "sync", sy);
    json_object_object_add(e, "parent_host", ck->parent >= 0 ? js(host_of(job, m->clock[ck->parent].first_rank)) : NULL);
    json_object_object_add(e, "depth", ji(ck->depth));
    json_object_array_add(cl, e);
  }
  for (int k = 0; k < m->npairs; k++) {
    const cl_cm_pair *p = &m->pair[k];
    json_object *e = json_object_new_object(), *iv = NULL, *dv = json_object_new_array(), *sp = json_object_new_array();
    json_object_object_add(e, "host", js(host_of(job, m->clock[p->child].first_rank)));
    json_object_object_add(e, "parent_host", js(host_of(job, m->clock[p->parent].first_rank)));
    json_object_object_add(e, "source", js(cl_cm_source_name(p->source)));
    json_object_object_add(e, "constraints", ji(p->nconstraints));
    json_object_object_add(e, "offset_ns", jr(p->offset_ns));
    if (isfinite(p->lo_ns) && isfinite(p->hi_ns)) {
      iv = json_object_new_array();
      json_object_array_add(iv, jr(p->lo_ns)); json_object_array_add(iv, jr(p->hi_ns));
    }
    json_object_object_add(e, "interval_ns", iv);
    json_object_object_add(e, "max_width_ns", jr(p->max_width_ns));
    json_object_object_add(e, "drift_ppm", jd(p->drift * 1e6));
    json_object_array_add(dv, jd(p->drift_lo * 1e6)); json_object_array_add(dv, jd(p->drift_hi * 1e6));
    json_object_object_add(e, "drift_ppm_interval", dv);
    json_object_array_add(sp, ji(p->t0)); json_object_array_add(sp, ji(p->t1));
    json_object_object_add(e, "span_ns", sp);
    json_object_object_add(e, "widen_ns", jr(p->widen_ns));
    json_object_object_add(e, "deficit_ns", jr(p->deficit_ns));
    json_object_object_add(e, "sync_bound_ns", jr(p->sync_bound_ns));
    json_object_array_add(pa, e);
  }
  json_object_object_add(x, "clocks", cl);
  json_object_object_add(x, "pairs", pa);
  return x;
}

static json_object *steps_json(const cl_job *job, const cl_verdict_an *vd) {
  json_object *x = json_object_new_object(), *c = json_object_new_array();
  json_object_object_add(x, "source", js(cl_steps_source_key(vd->steps_source)));
  int pat = vd->steps_source == CL_STEPS_PATTERN;
  json_object_object_add(x, "comm", pat ? jcomm(vd->steps_comm) : NULL);
  json_object_object_add(x, "period", pat ? ji(vd->st.period) : NULL);
  json_object_object_add(x, "score", pat ? jd(vd->st.score) : NULL);
  json_object_object_add(x, "startup", pat ? ji(vd->st.startup) : NULL);
  json_object_object_add(x, "extra", pat ? ji(vd->st.nextra) : NULL);
  json_object_object_add(x, "missing", pat ? ji(vd->st.nmissing) : NULL);
  json_object_object_add(x, "count", ji(vd->nsteps));
  for (uint32_t k = 0; k < vd->nsteps && k < 10; k++) {
    const cl_step_verdict *sv = &vd->stepv[vd->step_order[k]];
    if (!sv->ninst) break;
    json_object *e = json_object_new_object();
    json_object_object_add(e, "step", ji(sv->step));
    json_object_object_add(e, "culprit_rank", sv->culprit >= 0 ? ji(job->r[sv->culprit]->rank) : NULL);
    json_object_object_add(e, "lateness_ns", jr(sv->lateness_ns));
    json_object_object_add(e, "lost_ns", jr(sv->lost_ns));
    json_object_object_add(e, "wait_ns", jr(sv->wait_ns));
    json_object_object_add(e, "instances", ji(sv->ninst));
    json_object_array_add(c, e);
  }
  json_object_object_add(x, "costliest", c);
  return x;
}

void cl_render_verdict_json(cl_job *job, cl_analysis *an, struct json_object *root) {
  json_object_object_add(root, "verdict", verdict_json(job, an));
  json_object_object_add(root, "clock_model", clock_json(job, an->cm));
  json_object_object_add(root, "steps", steps_json(job, &an->vd));
}
