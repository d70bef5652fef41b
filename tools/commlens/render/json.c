/* json.c: `commlens report --json`: every row of every table as one JSON object (each
 * figure with the events it came from). Reads the analysis (analyse/); computes nothing. */
#include "tools/commlens/render/report.h"
#include "tools/commlens/analyse/clock_align.h"
#include "common/nccl.h"
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static json_object *jd(double v) { return json_object_new_double(round(v * 1000) / 1000); }
static json_object *ji(int64_t v) { return json_object_new_int64(v); }
static json_object *js(const char *s) { return json_object_new_string(s ? s : ""); }
/* A file name (bytes, not necessarily UTF-8) as a JSON string: invalid bytes as U+FFFD. */
static json_object *jpath(const char *p) {
  char *c = cl_utf8_dup(p, strlen(p), NULL);
  json_object *o = json_object_new_string(c);
  free(c);
  return o;
}
static json_object *jcomm(uint64_t c) { char b[24]; snprintf(b, sizeof b, "0x%llx", (unsigned long long)c); return js(b); }

/* "hang": per communicator with a stuck collective, each rank's state (analyse/hang.h); only
 * when flight-recorder dumps were read. */
static void hang_json(const cl_hang *h, json_object *root) {
  if (!h->n_dumps) return;
  json_object *arr = json_object_new_array();
  for (size_t i = 0; i < h->comms.n; i++) {
    const cl_hang_comm *c = &h->comms.a[i];
    json_object *x = json_object_new_object(), *ms = json_object_new_array();
    json_object_object_add(x, "comm", jcomm(c->comm));
    json_object_object_add(x, "comm_name", js(c->name));
    json_object_object_add(x, "func", js(c->func));
    json_object_object_add(x, "seq", ji(c->seq));
    json_object_object_add(x, "nranks", ji(c->nranks));
    for (int r = 0; r < c->nranks; r++) {
      const cl_hang_member *m = &c->members[r];
      json_object *y = json_object_new_object(), *chs = json_object_new_array();
      json_object_object_add(y, "comm_rank", ji(r));
      json_object_object_add(y, "rank", m->rank >= 0 ? ji(m->rank) : NULL);
      json_object_object_add(y, "state", js(m->state == CL_HANG_DONE ? "done" : m->state == CL_HANG_NOT_DONE ? "not_done"
                                            : m->state == CL_HANG_NOT_REACHED ? "not_reached" : "no_dump"));
      json_object_object_add(y, "last_started_seq", m->rank >= 0 ? ji(m->last_started) : NULL);
      json_object_object_add(y, "dump", m->rank >= 0 && m->trigger[0] ? js(m->trigger) : NULL);
      for (int ch = 0; ch < 64; ch++) if (m->channels_not_done >> ch & 1) json_object_array_add(chs, ji(ch));
      json_object_object_add(y, "channels_not_done", chs);
      json_object_array_add(ms, y);
    }
    json_object_object_add(x, "ranks", ms);
    json_object_array_add(arr, x);
  }
  json_object_object_add(root, "hang", arr);
  json_object *f = json_object_new_object(), *lg = NULL;
  json_object_object_add(f, "dumps", ji(h->n_dumps));
  json_object_object_add(f, "hang_dumps", ji(h->n_hang_dumps));
  json_object_object_add(f, "hang_age_threshold_s", ji(CL_HANG_AGE_S));
  json_object_object_add(f, "hang_found", json_object_new_boolean(h->comms.n > 0));
  json_object_object_add(f, "comms_left_out", ji((int64_t)h->left_out.n));
  if (h->longest.known) {
    lg = json_object_new_object();
    json_object_object_add(lg, "comm", jcomm(h->longest.comm));
    json_object_object_add(lg, "func", js(h->longest.func));
    json_object_object_add(lg, "seq", ji(h->longest.seq));
    json_object_object_add(lg, "age_ms", ji(h->longest.age_ms));
    json_object_object_add(lg, "rank", ji(h->longest.rank));
  }
  json_object_object_add(f, "longest_in_flight", lg);
  json_object_object_add(root, "flight", f);
}

/* "earlier_attempts": the job's earlier attempts, left out (model/attempts.c); only when some. */
static void attempts_json(const cl_job *job, json_object *root) {
  if (!job->earlier.n) return;
  json_object *arr = json_object_new_array();
  for (size_t i = 0; i < job->earlier.n; i++) {
    const cl_attempt *a = &job->earlier.a[i];
    json_object *x = json_object_new_object();
    json_object_object_add(x, "start_unix_ns", a->start_ns >= 0 && a->start_ns != INT64_MAX ? ji(a->start_ns) : NULL);
    json_object_object_add(x, "processes", ji(a->nproc));
    json_object_object_add(x, "files", ji(a->nfiles));
    json_object_object_add(x, "flight_dumps", ji(a->ndumps));
    json_object_object_add(x, "hang_dumps", ji(a->nhang));
    json_object_array_add(arr, x);
  }
  json_object_object_add(root, "earlier_attempts", arr);
}

/* The document as json-c wrote it, but DEL and the C1 controls (U+0080 .. U+009F, raw UTF-8 in
 * json-c's strings) as \u escapes: the same JSON, and nothing a terminal acts on. Outside
 * strings the text is ASCII, and in valid UTF-8 a 0xC2 byte always starts a character. */
static void put_json(FILE *o, const char *t) {
  for (const char *p = t; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if (c == 0x7f) fputs("\\u007f", o);
    else if (c == 0xC2 && (unsigned char)p[1] >= 0x80 && (unsigned char)p[1] < 0xA0) fprintf(o, "\\u00%02x", (unsigned char)*++p);
    else fputc(c, o);
  }
}

/* COMMLENS_TIMERS=sampled: "gpu_timers", only when some collective was left out (timers.h). */
static void timers_json(const cl_job *job, const cl_timers_an *t, json_object *root) {
  if (!t->sampled) return;
  json_object *x = json_object_new_object(), *d = json_object_new_array();
  json_object_object_add(x, "collectives", ji(t->n_seen));
  json_object_object_add(x, "left_out", ji(t->n_out));
  json_object_object_add(x, "instances_compared", ji(t->compared));
  json_object_object_add(x, "timed_on_every_rank", ji(t->timed_all));
  json_object_object_add(x, "left_out_on_every_rank", ji(t->out_all));
  json_object_object_add(x, "mixed", ji(t->mixed));
  for (int i = 0; i < job->n; i++) {
    if (!t->differ[i]) continue;
    json_object *r = json_object_new_object();
    json_object_object_add(r, "rank", ji(job->r[i]->rank));
    json_object_object_add(r, "instances", ji(t->differ[i]));
    json_object_array_add(d, r);
  }
  json_object_object_add(x, "ranks_not_with_the_others", d);
  json_object_object_add(root, "gpu_timers", x);
}

/* What a rank's plugin said of itself: ABI, version, events, drops, overhead, its counts. */
static json_object *plugin_json(const cl_rank *r) {
  json_object *p = json_object_new_object();
  json_object_object_add(p, "abi", ji(r->info.abi));
  json_object_object_add(p, "version", js(r->info.version));
  json_object_object_add(p, "events", ji(r->info.n_events));
  json_object_object_add(p, "events_reported", ji(r->info.st_events));
  json_object_object_add(p, "dropped", ji(r->info.st_dropped));
  json_object_object_add(p, "overhead_pct", json_object_new_double(r->info.st_overhead_pct));
  json_object_object_add(p, "overhead_ns_per_call", ji(r->info.st_overhead_ns));
  json_object_object_add(p, "overhead_ns_per_call_median", ji(r->info.st_overhead_med_ns));
  if (r->info.has_stats) {   /* the plugin's counts, each where the file says it */
    static const char *const said[] = {"calls", "records", "cupti_spans_rejected", "launch_events_skipped"};
    const int64_t v[] = {r->info.st_calls, r->info.st_records, r->info.st_cupti_rejected, r->info.st_skipped};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
      if (v[k] >= 0) json_object_object_add(p, said[k], ji(v[k]));
  }
  if (r->info.st_colls_gpu_lost >= 0) {   /* traces of 0.1.0 and later that say it */
    json_object_object_add(p, "collectives", ji(r->info.st_colls));
    json_object_object_add(p, "collectives_gpu_lost", ji(r->info.st_colls_gpu_lost));
  }
  if (r->info.st_est_colls >= 0) {   /* COMMLENS_CUPTI=sampled: as the plugin's exposure.estimated */
    static const char *const keys[] = {"collectives", "comm_ns", "exposed_ns", "unknown", "check_n",
                                       "check_estimated_ns", "check_measured_ns"};
    const int64_t vals[] = {r->info.st_est_colls, r->info.st_est_comm_ns, r->info.st_est_exposed_ns,
                            r->info.st_est_unknown, r->info.st_est_check_n, r->info.st_est_check_pred_ns,
                            r->info.st_est_check_meas_ns};
    json_object *es = json_object_new_object();
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) json_object_object_add(es, keys[k], ji(vals[k]));
    json_object_object_add(p, "exposure_estimated", es);
  }
  json_object_object_add(p, "final", json_object_new_boolean(r->info.final));
  json_object_object_add(p, "truncated", json_object_new_boolean(r->info.truncated || r->info.bad));
  return p;
}

/* One rank: its communication, exposure, waits, worst instances, clock and plugin. */
static json_object *rank_json(cl_job *job, cl_analysis *an, int i) {
  cl_rank *r = job->r[i]; cl_rank_an *ra = &an->ra[i]; json_object *x = json_object_new_object();
  double ex; const char *src = cl_rank_exposed(r, &ex);
  json_object_object_add(x, "rank", ji(r->rank));
  json_object_object_add(x, "host", js(r->info.host));
  json_object_object_add(x, "gpu", ji(r->device));
  json_object_object_add(x, "file", jpath(r->path));
  json_object_object_add(x, "comm_ns", jd(ra->comm_union));
  json_object_object_add(x, "exposed_ns", src ? jd(ex) : NULL);
  json_object_object_add(x, "exposed_source", src ? js(src) : NULL);
  json_object_object_add(x, "overlap", src && ra->comm_union > 0 ? jd(1 - ex / ra->comm_union) : NULL);
  json_object_object_add(x, "colls", ji((int64_t)r->colls.n));
  json_object_object_add(x, "instances", ji(ra->n_inst));
  json_object_object_add(x, "waited_ns", jd(ra->waited));
  json_object_object_add(x, "blame_ns", jd(ra->blame));
  json_object_object_add(x, "last_arrivals", ji(ra->n_last));
  json_object_object_add(x, "late_mean_ns", jd(ra->n_last ? ra->late_sum / (double)ra->n_last : 0));
  json_object *w = json_object_new_array();
  for (int k = 0; k < 3 && k < ra->n_last; k++) {
    cl_inst *in = &job->inst.a[ra->worst[k]]; json_object *e = json_object_new_object();
    json_object_object_add(e, "comm", jcomm(in->comm)); json_object_object_add(e, "func", js(cl_func_name(in->func)));
    json_object_object_add(e, "seq", ji(in->seq)); json_object_object_add(e, "wait_ns", jd(ra->worst_w[k]));
    json_object_array_add(w, e);
  }
  json_object_object_add(x, "worst_instances", w);
  json_object_object_add(x, "coll_time_ns", jd(ra->coll_time));
  json_object_object_add(x, "transfer_ns", jd(ra->transfer));
  json_object *c = json_object_new_object();
  cl_clock_json(c, r);
  json_object_object_add(x, "clock", c);
  json_object_object_add(x, "plugin", plugin_json(r));
  return x;
}

/* Who caused the waits (blame.h): the ranks last on the verdict's evidence, start-up, and the
 * steps that lost most. */
static void blame_json(cl_job *job, cl_analysis *an, json_object *root) {
  const cl_blame *bl = &an->bl;
  json_object *sl = json_object_new_array();
  for (int k = 0; k < job->n; k++) {
    int ri = bl->order[k];
    cl_rank_an *ra = &an->ra[ri];
    const cl_blame_rank *br = &bl->rank[ri];
    if (!ra->n_last) continue;
    json_object *x = json_object_new_object();
    json_object_object_add(x, "rank", ji(job->r[ri]->rank));
    json_object_object_add(x, "late_significant", ji(br->n_sig));
    json_object_object_add(x, "instances_outside_warmup", ji(br->n_eligible));
    json_object_object_add(x, "median_margin_ns", jd(br->median_margin));
    json_object_object_add(x, "wait_caused_ns", jd(br->wait_sig));
    json_object_object_add(x, "wait_warmup_ns", jd(br->wait_warmup));
    json_object_object_add(x, "last_in_warmup", ji(br->n_last_warmup));
    json_object_object_add(x, "blame_ns", jd(ra->blame));
    json_object_object_add(x, "last_arrivals", ji(ra->n_last));
    json_object_object_add(x, "instances", ji(ra->n_inst));
    json_object_object_add(x, "late_mean_ns", jd(ra->late_sum / (double)ra->n_last));
    json_object *w = json_object_new_array();
    for (int k2 = 0; k2 < 3 && k2 < br->n_sig; k2++) {
      cl_inst *in = &job->inst.a[br->worst[k2]]; json_object *e = json_object_new_object();
      json_object_object_add(e, "func", js(cl_func_name(in->func)));
      json_object_object_add(e, "seq", ji(in->seq));
      json_object_object_add(e, "comm", jcomm(in->comm));
      json_object_object_add(e, "wait_ns", jd(br->worst_w[k2]));
      json_object_object_add(e, "margin_ns", jd(bl->inst[br->worst[k2]].margin));
      json_object_object_add(e, "step", bl->inst[br->worst[k2]].step >= 0 ? ji(bl->inst[br->worst[k2]].step) : NULL);
      json_object_array_add(w, e);
    }
    json_object_object_add(x, "worst_significant", w);
    json_object_array_add(sl, x);
  }
  json_object *at = json_object_new_object();
  json_object_object_add(at, "warmup_instances", ji(bl->n_warmup));
  json_object_object_add(at, "instances_outside_warmup", ji(bl->n_eligible));
  json_object *sj = json_object_new_array();
  for (size_t k = 0; k < bl->nsteps; k++) {
    const cl_blame_step *st = &bl->steps[k]; json_object *e = json_object_new_object();
    json_object_object_add(e, "step", ji(st->step));
    json_object_object_add(e, "lost_ns", jd(st->lost));
    json_object_object_add(e, "culprit", st->culprit >= 0 ? ji(job->r[st->culprit]->rank) : NULL);
    json_object_object_add(e, "culprit_wait_ns", jd(st->culprit_wait));
    json_object_object_add(e, "instances", ji(st->n_inst));
    json_object_array_add(sj, e);
  }
  json_object_object_add(at, "steps", sj);
  json_object_object_add(root, "attribution", at);
  json_object_object_add(root, "slow_ranks", sl);
}

/* "slow_channels", one row a (rank, channel): at 32,768 ranks 262,144 rows, which as one tree
 * took about 600 MiB. Written as json-c writes an array at `level` (PRETTY), each row built,
 * written at its indentation and freed before the next. */
typedef struct { cl_job *job; cl_analysis *an; } chan_rows_ctx;
static json_object *chan_row(cl_job *job, cl_analysis *an, size_t k) {
  cl_chan_row *c = &an->ch[k]; json_object *x = json_object_new_object(); int peer; int64_t pw;
  cl_chan_top_peer(c->c, &peer, &pw);
  json_object_object_add(x, "rank", ji(job->r[c->ri]->rank));
  json_object_object_add(x, "comm", jcomm(c->c->comm));
  json_object_object_add(x, "channel", ji(c->c->channel));
  json_object_object_add(x, "kernel_ch", ji(c->c->n));
  json_object_object_add(x, "tail", ji(c->c->tail));
  json_object_object_add(x, "tail_frac", jd(c->c->n ? (double)c->c->tail / (double)c->c->n : 0));
  json_object_object_add(x, "mean_dur_ns", jd(c->mean));
  json_object_object_add(x, "vs_median", jd(c->ratio));
  json_object_object_add(x, "max_dur_ns", ji(c->c->max_dur));
  json_object_object_add(x, "max_dur_seq", ji(c->c->max_seq));
  json_object_object_add(x, "proxy_steps", ji(c->c->nsteps));
  json_object_object_add(x, "peer_wait_ns", ji(c->c->w_peer + c->c->w_recv));
  json_object_object_add(x, "top_peer", peer >= 0 ? ji(peer) : NULL);
  json_object_object_add(x, "top_peer_wait_ns", ji(pw));
  json_object_object_add(x, "gpu_wait_ns", ji(c->c->w_gpu + c->c->w_recv_gpu));
  json_object_object_add(x, "send_wait_ns", ji(c->c->w_send));
  json_object_object_add(x, "verdict", js(cl_chan_verdict(c->c)));
  return x;
}
static int chan_rows(json_object *jso, struct printbuf *pb, int level, int flags) {
  const chan_rows_ctx *cr = json_object_get_userdata(jso);
  printbuf_strappend(pb, "[");
  if (flags & JSON_C_TO_STRING_PRETTY) printbuf_strappend(pb, "\n");
  for (size_t k = 0; k < cr->an->nch; k++) {
    if (k) printbuf_memappend(pb, ",\n", (flags & JSON_C_TO_STRING_PRETTY) ? 2 : 1);
    json_object *x = chan_row(cr->job, cr->an, k);
    const char *t = json_object_to_json_string_ext(x, flags);   /* at level 0: indent each line */
    int ind = (flags & JSON_C_TO_STRING_PRETTY) ? 2 * (level + 1) : 0;
    printbuf_memset(pb, -1, ' ', ind);
    for (const char *p = t, *nl; *p; p = nl + 1) {
      nl = strchr(p, '\n');
      if (!nl) { printbuf_memappend(pb, p, (int)strlen(p)); break; }
      printbuf_memappend(pb, p, (int)(nl - p + 1));
      printbuf_memset(pb, -1, ' ', ind);
    }
    json_object_put(x);
  }
  if ((flags & JSON_C_TO_STRING_PRETTY) && cr->an->nch) printbuf_strappend(pb, "\n");
  if (flags & JSON_C_TO_STRING_PRETTY) printbuf_memset(pb, -1, ' ', 2 * level);
  return printbuf_strappend(pb, "]");
}
static void chan_rows_free(json_object *jso, void *ud) { (void)jso; free(ud); }

/* Slow channels: the tail channel of each collective, with what its proxy steps say; the rows
 * are made when the tree is written (chan_rows), the context freed with the array. */
static void channels_json(cl_job *job, cl_analysis *an, json_object *root) {
  json_object *ch = json_object_new_array();
  chan_rows_ctx *cr = cl_xmalloc(sizeof *cr);
  cr->job = job; cr->an = an;
  json_object_set_serializer(ch, chan_rows, cr, chan_rows_free);
  json_object_object_add(root, "slow_channels", ch);
}

/* The lowest bus bandwidths against the median of the same function and size. */
static void bandwidth_json(cl_job *job, cl_analysis *an, json_object *root) {
  json_object *bw = json_object_new_array();
  for (size_t k = 0; k < an->nlow; k++) {
    uint32_t id = an->lowbw[k]; cl_inst_an *ia = &an->ia[id]; cl_inst *in = &job->inst.a[id];
    json_object *x = json_object_new_object();
    json_object_object_add(x, "comm", jcomm(in->comm)); json_object_object_add(x, "func", js(cl_func_name(in->func)));
    json_object_object_add(x, "seq", ji(in->seq)); json_object_object_add(x, "bytes", ji(in->bytes));
    json_object_object_add(x, "busbw_gbs", jd(ia->busbw)); json_object_object_add(x, "median_gbs", jd(ia->busbw / ia->ratio));
    json_object_object_add(x, "ratio", jd(ia->ratio));
    json_object_object_add(x, "last_arrival_rank", ji(ia->culprit >= 0 ? job->r[ia->culprit]->rank : -1));
    json_object_array_add(bw, x);
  }
  json_object_object_add(root, "low_bandwidth", bw);
}

void cl_render_json(cl_job *job, cl_analysis *an, FILE *o) {
  json_object *root = json_object_new_object(), *ranks = json_object_new_array();
  cl_render_verdict_json(job, an, root);   /* the answer first (docs/verdict.md) */
  hang_json(&an->hang, root);
  attempts_json(job, root);
  json_object_object_add(root, "job", js(job->job));
  json_object_object_add(root, "ref_rank", ji(job->ref_rank));
  json_object_object_add(root, "instances_matched", ji(an->n_multi));
  json_object_object_add(root, "files_skipped", ji(job->n_files_skipped));
  json_object_object_add(root, "utf8_replaced", ji(job->n_utf8));
  for (int i = 0; i < job->n; i++) json_object_array_add(ranks, rank_json(job, an, i));
  json_object_object_add(root, "ranks", ranks);
  timers_json(job, &an->timers, root);
  cl_render_tags_json(job, an, root);   /* v7: exposure split, by user tag */
  blame_json(job, an, root);
  json_object *tot = json_object_new_object();
  json_object_object_add(tot, "coll_ns", jd(an->tot_coll));
  json_object_object_add(tot, "wait_ns", jd(an->tot_wait));
  json_object_object_add(tot, "transfer_ns", jd(an->tot_transfer));
  json_object_object_add(root, "collective_time", tot);
  channels_json(job, an, root);
  bandwidth_json(job, an, root);
  put_json(o, json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
  fputc('\n', o);
  json_object_put(root);
}
