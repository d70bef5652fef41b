/* text.c: `commlens report`'s text: the verdict first (render/verdict.c), then per-rank
 * communication and exposure, the waits each rank caused, slow channels, low-bandwidth collectives, clock offsets and plugin
 * health, top N rows per table. Reads the analysis (analyse/); computes nothing. */
#include "tools/commlens/render/report.h"
#include "common/loghist.h"
#include "common/nccl.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void inst_label(cl_job *job, uint32_t id, char *buf, size_t n) {
  cl_inst *in = &job->inst.a[id];
  snprintf(buf, n, "%s #%lld", cl_show(cl_func_name(in->func)), (long long)in->seq);
  cl_utf8_cut(buf);
}
/* Flight-recorder dumps: per communicator with a stuck collective, where each of its ranks
 * stood (analyse/hang.h); without one, what the dumps held and that it is no hang; then the
 * earlier attempts of the job, left out. Printed first (and atop the HTML page): a hang is the
 * answer when there is one. */
static void hang_comm_text(const cl_hang *h, const cl_hang_comm *c, FILE *o) {
  int done = 0, nd = 0, none = 0, behind = 0;
  for (int r = 0; r < c->nranks; r++) {
    cl_hang_state s = c->members[r].state;
    done += s == CL_HANG_DONE; nd += s == CL_HANG_NOT_DONE; none += s == CL_HANG_NO_DUMP; behind += s == CL_HANG_NOT_REACHED;
  }
  fprintf(o, "Hang: comm %016llx%s%s%s, %s seq %lld not finished%s: %d of %d rank(s) started it and are not done, "
          "%d never reached it, %d left no dump, %d done\n", (unsigned long long)c->comm, c->name[0] ? " (" : "",
          cl_show(c->name), c->name[0] ? ")" : "", c->func[0] ? cl_show(c->func) : "?", (long long)c->seq,
          h->any_hang ? "" : " (no hang dump: waited past the 60 s hang threshold)", nd, c->nranks, behind, none, done);
  for (int r = 0; r < c->nranks; r++) {
    const cl_hang_member *m = &c->members[r];
    if (m->state == CL_HANG_DONE) continue;
    fprintf(o, "  comm rank %d", r);
    if (m->rank >= 0) fprintf(o, " (rank %d)", m->rank);
    fprintf(o, ": %s", cl_hang_state_name(m->state));
    if (m->state == CL_HANG_NOT_REACHED) fprintf(o, " (last started seq %lld)", (long long)m->last_started);
    if (m->state == CL_HANG_NOT_DONE) {
      fprintf(o, " after %.1f s; channels not done:", (double)m->age_ms / 1e3);
      if (!m->channels_not_done) fprintf(o, " unknown");
      for (int ch = 0; ch < 64; ch++) if (m->channels_not_done >> ch & 1) fprintf(o, " %d", ch);
    }
    if (h->any_hang && m->rank >= 0 && strcmp(m->trigger, "hang"))   /* placed from a dump of another time */
      fprintf(o, " (from its %s dump, not a hang dump: where it stood when that was written)",
              m->trigger[0] ? cl_show(m->trigger) : "other");
    fputc('\n', o);
  }
}

void cl_render_hang_text(const cl_job *job, const cl_hang *h, FILE *o) {
  for (size_t i = 0; i < h->comms.n; i++) hang_comm_text(h, &h->comms.a[i], o);
  if (h->left_out.n)
    fprintf(o, "Hang: %zu more communicator(s) shown stuck but left out: their ranks pass what the dumps carry "
            "(comm %016llx first; %d ranks at most, %zu members for %d dump(s))\n", h->left_out.n,
            (unsigned long long)h->left_out.a[0], CL_HANG_MAX_RANKS, h->member_budget, h->n_dumps);
  if (h->n_dumps && !h->comms.n && !h->left_out.n) {
    fprintf(o, "Flight dumps: %d, %s: ", h->n_dumps, h->n_hang_dumps ? "by a hang, but none shows a collective not done"
                                                                     : "none by a hang");
    if (h->longest.known)
      fprintf(o, "nothing had waited %d s or more (the longest in flight: %s seq %lld on comm %016llx, %.1f s in rank "
              "%d's dump); no hang found\n", CL_HANG_AGE_S, h->longest.func[0] ? cl_show(h->longest.func) : "?",
              (long long)h->longest.seq, (unsigned long long)h->longest.comm, (double)h->longest.age_ms / 1e3,
              h->longest.rank);
    else fprintf(o, "nothing in flight; no hang found\n");
  }
  for (size_t i = 0; i < job->earlier.n; i++) {
    const cl_attempt *a = &job->earlier.a[i];
    char t[40];
    fprintf(o, "Earlier attempt of this job, left out: %d process(es) from %s, %d file(s), %d flight dump(s) (%d by a "
            "hang); the report is on the newest attempt\n", a->nproc, cl_fmt_utc(t, sizeof t, a->start_ns), a->nfiles,
            a->ndumps, a->nhang);
  }
  if (h->comms.n || h->n_dumps || job->earlier.n) fputc('\n', o);
}

/* COMMLENS_TIMERS=sampled: the sample's size, and whether every rank timed the same instances
 * (analyse/timers.h); nothing when no collective was left out. */
static void timers_text(const cl_job *job, const cl_timers_an *t, int top, FILE *o) {
  if (!t->sampled) return;
  int nranks = 0;
  for (int i = 0; i < job->n; i++) nranks += job->r[i]->tmarks.n_out > 0;
  fprintf(o, "  NCCL's kernel-channel timers on a sample (COMMLENS_TIMERS=sampled): %lld of %lld collectives left to "
          "their host times (and CUPTI's in its windows) on %d rank(s); the GPU times above rest on the timed ones. "
          "Of %lld instances seen on 2+ ranks, %lld timed on every one, %lld left out on every one", (long long)t->n_out,
          (long long)t->n_seen, nranks, (long long)t->compared, (long long)t->timed_all, (long long)t->out_all);
  if (!t->mixed) {
    fprintf(o, ": the same instances timed on every rank%s\n", t->compared ? "" : " (none to compare)");
    return;
  }
  fprintf(o, ", %lld timed on some ranks only; not with the others:", (long long)t->mixed);
  int *done = cl_xcalloc((size_t)job->n, sizeof *done), shown = 0;
  for (; shown < top; shown++) {   /* most first */
    int best = -1;
    for (int i = 0; i < job->n; i++)
      if (!done[i] && t->differ[i] && (best < 0 || t->differ[i] > t->differ[best])) best = i;
    if (best < 0) break;
    done[best] = 1;
    fprintf(o, "%s rank %d (%lld)", shown ? "," : "", job->r[best]->rank, (long long)t->differ[best]);
  }
  free(done);
  fprintf(o, "\n");
}

/* The hang and the verdict first (the answer, then what it rests on), then what was read. */
static void head_text(cl_job *job, cl_analysis *an, int top, FILE *o) {
  char b1[32];
  cl_render_hang_text(job, &an->hang, o);
  cl_render_verdict_text(job, an, top, o);
  fprintf(o, "commlens report: %d rank(s) of job \"%s\" (ranks %d..%d), %d file(s) read, %d skipped\n",
          job->n, cl_show(job->job), job->r[0]->rank, job->r[job->n - 1]->rank, job->n_files_seen - job->n_files_skipped,
          job->n_files_skipped);
  int gaps = 0;
  for (int i = 1; i < job->n; i++) gaps += job->r[i]->rank - job->r[i - 1]->rank - 1;
  if (gaps || job->r[0]->rank != 0) fprintf(o, "  missing ranks: %d between 0 and %d\n", gaps + job->r[0]->rank, job->r[job->n - 1]->rank);
  if (job->n_utf8) fprintf(o, "  %lld invalid UTF-8 byte(s) in the traces' strings, shown as U+FFFD\n", (long long)job->n_utf8);
  fprintf(o, "  span %s on rank %d's clock; %lld collective instances matched on 2+ ranks\n\n",
          cl_fmt_time(b1, sizeof b1, an->span), job->ref_rank, (long long)an->n_multi);
}

/* Ranks, the most exposed (else most communication) first. */
static void ranks_text(cl_job *job, cl_analysis *an, int top, FILE *o) {
  char b1[32], b2[32], b3[32];
  int *ord = cl_xmalloc((size_t)job->n * sizeof(int));
  for (int i = 0; i < job->n; i++) ord[i] = i;
  fprintf(o, "Ranks (communication = union of coll_gpu spans; exposed from %s)\n", "the plugin's totals, else coll_gpu exposed_ns / exposed events");
  fprintf(o, "  %5s  %-16s %12s %12s %8s %12s %8s\n", "rank", "host", "comm time", "exposed", "overlap", "waited", "colls");
  int shown = 0;
  /* short: ranks with the most exposed (else most communication) first */
  for (int i = 0; i < job->n && shown < top; i++) {
    int best = -1; double bv = -2;
    for (int j = 0; j < job->n; j++) {
      if (ord[j] < 0) continue;
      double ex; cl_rank_exposed(job->r[j], &ex);
      double v = ex >= 0 ? ex * 1e3 + an->ra[j].comm_union * 1e-9 : an->ra[j].comm_union * 1e-9;
      if (v > bv) { bv = v; best = j; }
    }
    if (best < 0) break;
    ord[best] = -1; shown++;
    cl_rank *r = job->r[best]; double ex; cl_rank_exposed(r, &ex);
    char ov[16];
    if (ex >= 0 && an->ra[best].comm_union > 0) snprintf(ov, sizeof ov, "%.1f%%", 100.0 * (1 - ex / an->ra[best].comm_union));
    else snprintf(ov, sizeof ov, "n/a");
    fprintf(o, "  %5d  %s %12s %12s %8s %12s %8zu\n", r->rank, cl_show_col(cl_rank_host(r), 16), cl_fmt_time(b1, sizeof b1, an->ra[best].comm_union),
            ex >= 0 ? cl_fmt_time(b2, sizeof b2, ex) : "n/a", ov, cl_fmt_time(b3, sizeof b3, an->ra[best].waited), r->colls.n);
  }
  if (job->n > shown) fprintf(o, "  ... %d more rank(s) (--top N)\n", job->n - shown);
  free(ord);
}

/* Waits caused per rank (blame.h), from the verdict's per-instance last arrivals; the steps that
 * lost most; where collective time went. */
static void waits_text(cl_job *job, cl_analysis *an, int top, FILE *o) {
  char b1[32], b2[32], b3[32], b4[32], b5[32];
  const cl_blame *bl = &an->bl;
  fprintf(o, "\nWaits caused (who arrived last, per rank, on the verdict's evidence; the verdict above says who is a straggler)\n");
  fprintf(o, "  %5s  %-16s %11s %11s %12s %12s %12s  %s\n", "rank", "host", "late", "median by", "wait caused",
          "all waits", "in start-up", "worst instances (wait caused)");
  int shown_sr = 0;
  for (int k = 0; k < job->n && shown_sr < top; k++) {
    int ri = bl->order[k];
    const cl_blame_rank *br = &bl->rank[ri];
    if (!br->n_sig && !an->ra[ri].n_last) continue;
    shown_sr++;
    char late[32], worst[160] = ""; size_t wl = 0;
    snprintf(late, sizeof late, "%lld/%lld", (long long)br->n_sig, (long long)br->n_eligible);
    for (int w = 0; w < 3 && w < br->n_sig; w++) {
      char lab[64]; inst_label(job, br->worst[w], lab, sizeof lab);
      wl += (size_t)snprintf(worst + wl, sizeof worst - wl, "%s%s (%s)", w ? ", " : "", lab, cl_fmt_time(b4, sizeof b4, br->worst_w[w]));
      if (wl >= sizeof worst) break;
    }
    fprintf(o, "  %5d  %s %11s %11s %12s %12s %12s  %s\n", job->r[ri]->rank, cl_show_col(cl_rank_host(job->r[ri]), 16), late,
            br->n_sig ? cl_fmt_time(b1, sizeof b1, br->median_margin) : "-", cl_fmt_time(b2, sizeof b2, br->wait_sig),
            cl_fmt_time(b3, sizeof b3, br->wait_all), cl_fmt_time(b5, sizeof b5, br->wait_warmup), worst);
  }
  if (!shown_sr) fprintf(o, "  (no rank was last on any instance matched on 2+ ranks)\n");
  else {
    fprintf(o, "  (late = instances it was last in by more than 50 us and the clock error over the next-latest rank, of the\n"
            "   instances outside start-up it took part in; start-up: %lld instance(s), detected)\n", (long long)bl->n_warmup);
  }
  if (bl->nsteps) {
    fprintf(o, "\nSteps that lost the most time (NVTX steps; lost = waits for the last arrival within the step)\n");
    fprintf(o, "  %8s %12s %8s %12s %6s\n", "step", "lost", "by rank", "its share", "colls");
    for (size_t k = 0; k < bl->nsteps && (int)k < top; k++) {
      const cl_blame_step *st = &bl->steps[k];
      fprintf(o, "  %8ld %12s %8d %11.0f%% %6lld\n", st->step, cl_fmt_time(b1, sizeof b1, st->lost),
              st->culprit >= 0 ? job->r[st->culprit]->rank : -1, st->lost > 0 ? 100 * st->culprit_wait / st->lost : 0,
              (long long)st->n_inst);
    }
  }
  if (an->tot_coll > 0)
    fprintf(o, "  collective time, all ranks: %s = waiting for the last arrival %s (%.1f%%) + transfer ~%s (%.1f%%) + other %.1f%%\n"
            "  (transfer = shortest coll_gpu duration of the instance)\n",
            cl_fmt_time(b1, sizeof b1, an->tot_coll), cl_fmt_time(b2, sizeof b2, an->tot_wait), 100 * an->tot_wait / an->tot_coll,
            cl_fmt_time(b3, sizeof b3, an->tot_transfer), 100 * an->tot_transfer / an->tot_coll,
            fabs(100 * (an->tot_coll - an->tot_wait - an->tot_transfer) / an->tot_coll) < 0.05 ? 0.0 : 100 * (an->tot_coll - an->tot_wait - an->tot_transfer) / an->tot_coll);
}

/* Slow channels: the tail channel of each collective, from kernel_ch. */
static void channels_text(cl_job *job, cl_analysis *an, int top, FILE *o) {
  char b1[32], b2[32], b3[32], b4[32];
  fprintf(o, "\nSlow channels (tail = the channel that finished last within its collective on that rank, from kernel_ch)\n");
  fprintf(o, "  %5s %4s %-10s %13s %11s %7s %18s %20s %11s  %s\n", "rank", "ch", "comm", "tail", "mean dur", "vs rank",
          "longest (seq)", "peer wait [peer]", "gpu wait", "proxy steps say");
  for (size_t k = 0; k < an->nch && (int)k < top; k++) {
    cl_chan_row *c = &an->ch[k]; int peer; int64_t pw; cl_chan_top_peer(c->c, &peer, &pw);
    char tail[32], lng[40], pws[40], cn[11];
    const char *cs = cn;
    snprintf(tail, sizeof tail, "%lld/%lld", (long long)c->c->tail, (long long)c->c->n);
    snprintf(lng, sizeof lng, "%s (#%lld)", cl_fmt_time(b1, sizeof b1, (double)c->c->max_dur), (long long)c->c->max_seq);
    snprintf(pws, sizeof pws, peer >= 0 ? "%s [%d]" : "%s", cl_fmt_time(b2, sizeof b2, (double)(c->c->w_peer + c->c->w_recv)), peer);
    const char *nm = cl_comm_name(c->c->comm);
    if (nm[0]) cs = cl_show_col(nm, 10); else snprintf(cn, sizeof cn, "%08llx", (unsigned long long)(c->c->comm & 0xffffffffull));
    fprintf(o, "  %5d %4d %-10s %13s %11s %6.2fx %18s %20s %11s  %s\n", job->r[c->ri]->rank, c->c->channel, cs, tail,
            c->c->n ? cl_fmt_time(b3, sizeof b3, c->mean) : "-", c->ratio, c->c->n ? lng : "-", pws,
            cl_fmt_time(b4, sizeof b4, (double)(c->c->w_gpu + c->c->w_recv_gpu)), cl_chan_verdict(c->c));
  }
  if (!an->nch) fprintf(o, "  (no kernel_ch or proxy_step events)\n");
}

/* Lowest bus bandwidth, against the median of the same function and size. */
static void bandwidth_text(cl_job *job, cl_analysis *an, int top, FILE *o) {
  fprintf(o, "\nLowest bus bandwidth (nccl-tests factors; time = shortest duration across ranks; vs median of same func+size)\n");
  fprintf(o, "  %-16s %-10s %12s %11s %11s %7s %8s\n", "collective", "comm", "bytes", "busbw", "median", "ratio", "last in");
  for (size_t k = 0; k < an->nlow && (int)k < top; k++) {
    uint32_t id = an->lowbw[k]; cl_inst_an *ia = &an->ia[id]; cl_inst *in = &job->inst.a[id];
    char lab[64], cn[11]; inst_label(job, id, lab, sizeof lab);
    const char *nm = cl_comm_name(in->comm), *cs = cn;
    if (nm[0]) cs = cl_show_col(nm, 10); else snprintf(cn, sizeof cn, "%08llx", (unsigned long long)(in->comm & 0xffffffffull));
    fprintf(o, "  %-16s %-10s %12lld %6.2f GB/s %6.2f GB/s %6.2fx %8d\n", lab, cs, (long long)in->bytes, ia->busbw,
            ia->busbw / ia->ratio, ia->ratio, ia->culprit >= 0 ? job->r[ia->culprit]->rank : -1);
  }
  if (!an->nlow) fprintf(o, "  (none below the median, or fewer than 3 instances per func+size)\n");
}

/* Clock alignment against the reference rank, largest offsets first. */
static void clocks_text(cl_job *job, int top, FILE *o) {
  char b1[32], b2[32];
  int *ord = cl_xmalloc((size_t)job->n * sizeof(int));
  int64_t maxerr = 0, maxoff = 0; int unal = 0;
  for (int i = 0; i < job->n; i++) {
    cl_rank *r = job->r[i];
    if (!r->aligned) { unal++; continue; }
    if (llabs(r->offset_ns) > llabs(maxoff)) maxoff = r->offset_ns;
    if (r->off_err_ns > maxerr) maxerr = r->off_err_ns;
  }
  fprintf(o, "\nClock alignment vs rank %d (the clock model above; err = half its interval, 0 on one host boot): largest |offset| %s, largest err %s%s\n",
          job->ref_rank, cl_fmt_time(b1, sizeof b1, (double)maxoff), cl_fmt_time(b2, sizeof b2, (double)maxerr), unal ? ", some ranks unaligned" : "");
  fprintf(o, "  %5s %14s %11s %8s %5s\n", "rank", "offset", "err", "samples", "via");
  for (int i = 0; i < job->n; i++) ord[i] = i;
  for (int k = 0; k < job->n && k < top; k++) {
    int best = k;
    for (int j = k + 1; j < job->n; j++)
      if (llabs(job->r[ord[j]]->offset_ns) > llabs(job->r[ord[best]]->offset_ns)) best = j;
    int t = ord[k]; ord[k] = ord[best]; ord[best] = t;
    cl_rank *r = job->r[ord[k]];
    if (!r->aligned) { fprintf(o, "  %5d %14s\n", r->rank, "unaligned"); continue; }
    fprintf(o, "  %5d %14s %11s %8d %5d\n", r->rank, cl_fmt_time(b1, sizeof b1, (double)r->offset_ns),
            cl_fmt_time(b2, sizeof b2, (double)r->off_err_ns), r->off_samples, r->off_via);
  }
  free(ord);
}

/* The plugin's health: ABI, drops, overhead; sampled exposure and channels; the timers'
 * sample; CUPTI lost; then ranks worst first. */
static void health_text(cl_job *job, cl_analysis *an, int top, FILE *o) {
  int *ord = cl_xmalloc((size_t)job->n * sizeof(int));
  int64_t drops = 0; double maxov = 0; int maxov_r = -1, ntrunc = 0, nfinal = 0, abi0 = job->r[0]->info.abi, abimix = 0;
  for (int i = 0; i < job->n; i++) {
    cl_info *in = &job->r[i]->info;
    drops += in->st_dropped; if (in->st_overhead_pct > maxov) { maxov = in->st_overhead_pct; maxov_r = job->r[i]->rank; }
    ntrunc += in->truncated || in->bad; nfinal += in->final; abimix |= in->abi != abi0;
  }
  fprintf(o, "\nPlugin: ABI %s%d, version %s; %lld records dropped; overhead max %.3f%% (rank %d); %d/%d final, %d truncated\n",
          abimix ? "mixed, rank 0: " : "", abi0, job->r[0]->info.version ? cl_show(job->r[0]->info.version) : "?", (long long)drops,
          maxov, maxov_r, nfinal, job->n, ntrunc);
  int64_t lost = 0, colls = 0; int nlost = 0;
  for (int i = 0; i < job->n; i++) {
    cl_info *in = &job->r[i]->info;
    if (in->st_colls_gpu_lost > 0) { lost += in->st_colls_gpu_lost; nlost++; }
    if (in->st_colls > 0) colls += in->st_colls;
  }
  int64_t est = 0, est_x = 0, est_u = 0, ck_n = 0, ck_p = 0, ck_m = 0; int nest = 0;
  for (int i = 0; i < job->n; i++) {
    cl_info *in = &job->r[i]->info;
    if (in->st_est_colls <= 0) continue;
    est += in->st_est_colls; est_x += in->st_est_exposed_ns; est_u += in->st_est_unknown; nest++;
    ck_n += in->st_est_check_n; ck_p += in->st_est_check_pred_ns; ck_m += in->st_est_check_meas_ns;
  }
  if (est) {   /* COMMLENS_CUPTI=sampled: say which exposure is estimated, and how well it did */
    fprintf(o, "  Exposure sampled (COMMLENS_CUPTI=sampled): %lld of %lld collectives on %d rank(s) ran outside CUPTI's "
            "windows; ", (long long)est, (long long)colls, nest);
    if (ck_n && est_u)
      fprintf(o, "their exposed time (%.3f ms) is estimated from the collectives measured inside them, but for %lld "
              "that ran before any was measured (not known, left out). ", (double)est_x / 1e6, (long long)est_u);
    else if (ck_n)
      fprintf(o, "their exposed time (%.3f ms) is estimated from the collectives measured inside them. ", (double)est_x / 1e6);
    else
      fprintf(o, "their exposure is not known (no window measured a collective to estimate it from: CUPTI busy with "
              "another tool, or the job shorter than a window's first quarter). ");
    if (ck_n && ck_m > 0)
      fprintf(o, "Checked in the windows: over %lld measured collectives the estimate said %.3f ms where %.3f ms "
              "was measured (%+.1f%%)\n", (long long)ck_n, (double)ck_p / 1e6, (double)ck_m / 1e6,
              100.0 * ((double)ck_p - (double)ck_m) / (double)ck_m);
    else
      fputc('\n', o);
  }
  int64_t one = 0, sp_n = 0, sp50 = 0, sp95 = 0; int one_ranks = 0;
  for (int i = 0; i < job->n; i++) {   /* COMMLENS_CHANNELS=sampled: the worst rank's spread */
    cl_info *in = &job->r[i]->info;
    if (in->st_one_ch <= 0) continue;
    one += in->st_one_ch; one_ranks++;
    sp_n += in->st_spread_n;
    if (in->st_spread_p50_ns > sp50) sp50 = in->st_spread_p50_ns;
    if (in->st_spread_p95_ns > sp95) sp95 = in->st_spread_p95_ns;
  }
  if (one) {
    fprintf(o, "  GPU spans from one channel (COMMLENS_CHANNELS=sampled): %lld of %lld collectives on %d rank(s), "
            "outside CUPTI's windows; ", (long long)one, (long long)colls, one_ranks);
    if (sp_n)
      fprintf(o, "each may be short of its collective's by the spread of its channels, measured in the windows over "
              "%lld collectives: median under %.1f us, 95th percentile under %.1f us (the worst rank's)\n", (long long)sp_n,
              cl_loghist_us((uint64_t)sp50), cl_loghist_us((uint64_t)sp95));
    else
      fprintf(o, "the spread of a collective's channels was not measured (no collective with every channel timed)\n");
  }
  timers_text(job, &an->timers, top, o);
  if (lost)   /* the plugin's own count (commlensStats.collectives_gpu_lost), the one rule */
    fprintf(o, "  %lld of %lld collectives lack GPU timing from CUPTI on %d rank(s): lost (CUPTI taken by another "
            "tool, e.g. torch.profiler; set TEARDOWN_CUPTI=1 so it lets go after its window)\n",
            (long long)lost, (long long)colls, nlost);
  fprintf(o, "  %5s %4s %-9s %10s %10s %9s %12s  %s\n", "rank", "abi", "version", "events", "dropped", "overhead", "ns/call p50", "status");
  for (int i = 0; i < job->n; i++) ord[i] = i;
  for (int k = 0; k < job->n && k < top; k++) {   /* worst first: truncated, dropped, overhead */
    int best = k;
    for (int j = k + 1; j < job->n; j++) {
      cl_info *a = &job->r[ord[j]]->info, *b = &job->r[ord[best]]->info;
      double sa = (a->truncated || a->bad) * 1e18 + (double)a->st_dropped * 1e3 + a->st_overhead_pct;
      double sb = (b->truncated || b->bad) * 1e18 + (double)b->st_dropped * 1e3 + b->st_overhead_pct;
      if (sa > sb) best = j;
    }
    int t = ord[k]; ord[k] = ord[best]; ord[best] = t;
    cl_info *in = &job->r[ord[k]]->info;
    fprintf(o, "  %5d %4d %-9.9s %10lld %10lld %8.3f%% %12lld  %s\n", job->r[ord[k]]->rank, in->abi, in->version ? in->version : "?",
            (long long)in->n_events, (long long)in->st_dropped, in->st_overhead_pct,
            (long long)(in->st_overhead_med_ns ? in->st_overhead_med_ns : in->st_overhead_ns),   /* older traces: the mean */
            in->bad ? "damaged mid-file" : in->truncated ? "truncated" : in->final ? "final" : "not final (no exit flush)");
  }
  free(ord);
}

void cl_render_text(cl_job *job, cl_analysis *an, int top, FILE *o) {
  head_text(job, an, top, o);
  ranks_text(job, an, top, o);
  waits_text(job, an, top, o);
  cl_render_tags_text(job, an, top, o);   /* v7: exposure split, by user tag */
  channels_text(job, an, top, o);
  bandwidth_text(job, an, top, o);
  clocks_text(job, top, o);
  health_text(job, an, top, o);
}
