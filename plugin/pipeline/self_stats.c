/* self_stats.c: the plugin's self-measure, one owner: gathers what every stage counted (rings,
 * staging, assembler, participants, CUPTI) into cl_run_stats, and writes it: the commlensStats
 * tail of each flush, the summary's first line and its GPU line; the overhead formula. */
#include "plugin/pipeline/self_stats.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/loghist.h"
#include "plugin/capture/ring.h"
#include "plugin/capture/gate.h"
#include "plugin/capture/timers.h"
#include "plugin/gpu/cupti.h"
#include "plugin/output/identity.h"
#include <stdio.h>
#include <string.h>

double cl_stats_overhead_pct(const cl_run_stats *s) {
  return s->elapsed_ns ? 100.0 * (double)s->calls * (double)s->per_call_ns / (double)s->elapsed_ns : 0.0;
}

/* The tail: closes traceEvents and writes commlensStats; the three JSON texts go as they are. */
static void write_tail(cl_sb *b, int as_tail, const cl_run_stats *s, int final, const char *gpu_offsets,
                       const char *cupti, const char *exposure, const char *channels, const char *timers,
                       uint64_t digest_lost) {
  sb_reset(b);
  if (as_tail) sb_puts(b, "\n],\"commlensStats\":");
  sb_printf(b, "{\"final\":%s,\"events\":%llu,\"records\":%llu,\"dropped\":%llu,"
            "\"stale_handles\":%llu,\"foreign\":%llu,\"orphans\":%llu,\"open_events\":%llu,"
            "\"dropped_ring\":%llu,\"dropped_no_ring\":%llu,\"dropped_staging\":%llu,\"dropped_children\":%llu,\"spilled\":%llu,\"invalid_utf8_replaced\":%llu,\"collectives\":%llu,\"collectives_timed\":%llu,\"collectives_gpu_lost\":%llu,\"implausible_gpu\":%llu,\"cupti_spans_rejected\":%llu,\"calls\":%llu,\"launch_events_skipped\":%llu,"
            "\"overhead_ns_per_call\":%llu,\"overhead_ns_per_call_median\":%llu,\"overhead_pct\":%.4f,\"elapsed_ns\":%llu,\"process_gpus\":%u,\"gpu_offsets\":",
            final ? "true" : "false", (unsigned long long)s->events, (unsigned long long)s->records,
            (unsigned long long)s->dropped, (unsigned long long)s->stale,
            (unsigned long long)s->foreign, (unsigned long long)s->orphans, (unsigned long long)s->open_now,
            (unsigned long long)s->dropped_ring, (unsigned long long)s->dropped_no_ring,
            (unsigned long long)s->dropped_staging, (unsigned long long)s->dropped_children, (unsigned long long)s->spilled, (unsigned long long)s->utf8_replaced,
            (unsigned long long)s->colls_done, (unsigned long long)s->colls_timed,
            (unsigned long long)s->colls_gpu_lost, (unsigned long long)s->implausible_gpu, (unsigned long long)s->cupti_rejected, (unsigned long long)s->calls,
            (unsigned long long)s->launch_events_skipped,
            (unsigned long long)s->per_call_ns, (unsigned long long)s->per_call_median_ns, cl_stats_overhead_pct(s),
            (unsigned long long)s->elapsed_ns, s->process_gpus);
  sb_puts(b, gpu_offsets);
  sb_puts(b, ",\"cupti\":");
  sb_puts(b, cupti);
  sb_puts(b, ",\"exposure\":");
  sb_puts(b, exposure);
  sb_puts(b, ",\"channels\":");
  sb_puts(b, channels);
  sb_puts(b, ",\"timers\":");
  sb_puts(b, timers);
  sb_printf(b, ",\"digest_lost\":%llu", (unsigned long long)digest_lost);
  sb_puts(b, as_tail ? "}}\n" : "}");
}

/* The tail's numbers: the participant's own (events, collectives) and the process's. */
void cl_stats_gather(cl_run_stats *s, const cl_format_deps *run, const cl_part *p) {
  cl_ring_totals rt;
  cl_rings_totals(&rt);
  cl_asm_stats as;
  cl_asm_get_stats(run->asm_, &as);
  uint64_t staging_dropped = run->stage ? cl_stage_dropped(run->stage) : 0;
  memset(s, 0, sizeof *s);
  s->events = ct_events(p->ct) + cl_digest_taken(p->dg);
  s->records = as.records;
  s->dropped_ring = rt.dropped;
  s->dropped_no_ring = rt.unclaimed;
  s->dropped_staging = staging_dropped;
  s->dropped_children = rt.dropped_children;
  s->dropped = rt.dropped + rt.unclaimed + staging_dropped + rt.dropped_children + as.writer_drops + as.phases_lost;
  s->stale = as.stale;
  s->foreign = as.foreign;
  s->orphans = as.orphans;
  s->open_now = as.open_now;
  s->spilled = run->stage ? cl_stage_spilled(run->stage) : 0;
  s->utf8_replaced = sb_utf8_replaced();
  s->colls_done = p->colls_done;
  s->colls_timed = p->colls_timed;
  s->colls_gpu_lost = p->colls_gpu_lost;
  s->implausible_gpu = as.implausible_gpu;
  s->cupti_rejected = as.cupti_rejected;
  s->calls = rt.calls;
  s->launch_events_skipped = rt.skipped;
  s->kch_untimed = rt.kch_untimed;
  s->per_call_ns = rt.nsampled ? rt.sampled_ns / rt.nsampled : 0;
  s->per_call_median_ns = cl_rings_median_ns(&rt);
  s->elapsed_ns = cl_now() - cl_proc.start_ns;
  s->process_gpus = (unsigned)cl_parts_count(run->parts);
}

/* The timers' sample (plugin/capture/timers.h): the participant's collectives timed by NCCL's
 * kernel-channel timers and left out, and the process's API calls and levels. */
static void timers_json(cl_sb *b, const cl_part *p) {
  cl_timers_stats t;
  cl_timers_get_stats(&t);
  sb_printf(b, "{\"mode\":\"%s\",\"budget_ppm\":%llu,\"cost_ns\":%llu,\"timed\":%llu,\"left_out\":%llu,"
            "\"api_calls\":%llu,\"api_timed\":%llu,\"level_max\":%u,\"level_changes\":%llu}",
            !(cl_cfg.mask & (1u << CL_EV_KERNEL_CH)) ? "off" : cl_gate_sampling() ? "sampled" : "all",
            (unsigned long long)cl_cfg.timers_budget_ppm, (unsigned long long)cl_cfg.timers_cost_ns,
            (unsigned long long)p->colls_kch, (unsigned long long)p->colls_untimed, (unsigned long long)t.calls,
            (unsigned long long)t.timed, t.max_level, (unsigned long long)t.level_changes);
}

/* The stats object, as the trace's tail (as_tail) or alone (the digest's stats block). */
static void stats_text(cl_sb *tail, int as_tail, const cl_format_deps *run, cl_part *p, int final) {
  cl_run_stats s;
  cl_stats_gather(&s, run, p);
  cl_sb offsets = {0}, cupti = {0}, expo = {0};
  cl_asm_offsets_json(run->asm_, p, &offsets);
  cl_cupti_stats cs;
  cl_cupti_get_stats(&cs);
  int cupti_on = run->gj != NULL;
  sb_printf(&cupti, "{\"active\":%s,\"records\":%llu,\"dropped\":%llu,\"resumed\":%llu,\"mode\":\"%s\",\"status\":",
            cupti_on && cs.active ? "true" : "false", (unsigned long long)cs.records, (unsigned long long)cs.dropped,
            (unsigned long long)cs.resumed,
            cl_cfg.cupti == CL_CUPTI_OFF ? "off" : cl_cfg.cupti == CL_CUPTI_FULL ? "full"
            : cl_cfg.cupti == CL_CUPTI_SAMPLED ? "sampled" : "kernels");
  sb_jstr(&cupti, cupti_on ? (cs.active ? "recording" : cs.status)
                           : (cl_cfg.cupti ? cs.status : "off (COMMLENS_CUPTI=off)"));
  sb_puts(&cupti, "}");
  cl_asm_exposure_json(run->asm_, p, &expo);
  cl_sb ch = {0};
  uint64_t spread_n = cl_loghist_total(p->ch_spread_hist, CL_SPREAD_BUCKETS);
  sb_printf(&ch, "{\"mode\":\"%s\",\"one_channel\":%llu,\"not_asked\":%llu,\"spread_n\":%llu,"
            "\"spread_p50_ns\":%llu,\"spread_p95_ns\":%llu}",
            cl_cfg.channels == CL_CHANNELS_SAMPLED ? "sampled" : "all", (unsigned long long)p->colls_one_ch,
            (unsigned long long)s.kch_untimed, (unsigned long long)spread_n,
            (unsigned long long)cl_loghist_quantile(p->ch_spread_hist, CL_SPREAD_BUCKETS, 0.5),
            (unsigned long long)cl_loghist_quantile(p->ch_spread_hist, CL_SPREAD_BUCKETS, 0.95));
  cl_sb tm = {0};
  timers_json(&tm, p);
  write_tail(tail, as_tail, &s, final, offsets.p ? offsets.p : "[]", cupti.p ? cupti.p : "null",
             expo.p ? expo.p : "null", ch.p ? ch.p : "null", tm.p ? tm.p : "null", cl_digest_lost(p->dg));
  sb_free(&offsets); sb_free(&cupti); sb_free(&expo); sb_free(&ch); sb_free(&tm);
}
void cl_stats_tail(cl_sb *tail, const cl_format_deps *run, cl_part *p, int final) { stats_text(tail, 1, run, p, final); }
void cl_stats_object(cl_sb *b, const cl_format_deps *run, cl_part *p, int final) { stats_text(b, 0, run, p, final); }

/* A quantile of the channel spreads in microseconds, as the GPU line prints it. */
static double spread_us(const uint32_t *h, double q) { return cl_loghist_us(cl_loghist_quantile(h, CL_SPREAD_BUCKETS, q)); }

/* COMMLENS_TIMERS=sampled, when it left any collective out: the sample's size ("" otherwise). */
static void timers_line(const cl_part *p, char *out, size_t n) {
  if (!n) return;
  out[0] = 0;
  if (!p->colls_untimed) return;
  cl_timers_stats t;
  cl_timers_get_stats(&t);
  snprintf(out, n, "; NCCL's kernel-channel timers on a sample (COMMLENS_TIMERS=sampled, %.3g%% of wall time at "
           "%.3g us each): %llu collectives timed, %llu left to their host times (CUPTI's in its windows), level "
           "up to %u (1 run of 4 calls in %u)", (double)cl_cfg.timers_budget_ppm / 1e4,
           (double)cl_cfg.timers_cost_ns / 1e3, (unsigned long long)p->colls_kch, (unsigned long long)p->colls_untimed,
           t.max_level, 1u << t.max_level);
}

/* The summary's line on GPU timing: how many collectives got a GPU span, from what, and the
 * exposure, or why there is none. */
void cl_stats_gpu_line(const cl_format_deps *run, cl_part *p, const cl_run_stats *s, char *out, size_t n) {
  int k = snprintf(out, n, "GPU timing: %llu of %llu collectives; ", (unsigned long long)s->colls_timed,
                   (unsigned long long)s->colls_done);
  if (k < 0 || (size_t)k >= n) return;
  if (!run->gj) {
    cl_cupti_stats cs;
    cl_cupti_get_stats(&cs);
    snprintf(out + k, n - (size_t)k, "CUPTI %s: %s (from NCCL's own events only, no exposure)",
             cl_cfg.cupti ? "unavailable" : "off", cl_cfg.cupti ? cs.status : "COMMLENS_CUPTI=off");
    size_t used = strlen(out);
    timers_line(p, out + used, n - used);
    return;
  }
  cl_gj_counts c;
  cl_gj_totals(run->gj, p, &c);
  double comm = (double)c.t.comm_ns / 1e6, ex = (double)c.t.exposed_ns / 1e6;
  snprintf(out + k, n - (size_t)k, "NCCL kernels from CUPTI (%s), %llu of them joined to their "
           "launches; communication %.3f ms, exposed %.3f ms (%.1f%% hidden by compute)",
           cl_gj_by_stream(run->gj) ? "kernel records, joined by stream order" : "joined by correlation id",
           /* this GPU's own count (launches_nccl is the process's: it may drive several GPUs) */
           (unsigned long long)(cl_gj_by_stream(run->gj) ? c.by_stream : c.nccl_kernels - c.by_name), comm, ex,
           comm > 0 ? 100.0 * (1.0 - ex / comm) : 0.0);
  size_t used = strlen(out);
  if (p->colls_expo_est && used < n) {   /* sampled: the figures above are the windows' */
    snprintf(out + used, n - used, " in CUPTI's sampling windows; %llu more outside them (NCCL's kernel-channel "
             "timers): communication %.3f ms, ", (unsigned long long)p->colls_expo_est, (double)p->est_comm_ns / 1e6);
    used = strlen(out);
    /* an estimate needs a collective measured before it: without one, its exposure is not known */
    if (used < n && p->colls_expo_unknown >= p->colls_expo_est)
      snprintf(out + used, n - used, "exposure not known (no collective measured in a window before them)");
    else if (used < n)
      snprintf(out + used, n - used, "exposed %.3f ms estimated", (double)p->est_expo_ns / 1e6);
    used = strlen(out);
    if (p->colls_expo_unknown && p->colls_expo_unknown < p->colls_expo_est && used < n)
      snprintf(out + used, n - used, ", not known for %llu of them (before the first measured one)",
               (unsigned long long)p->colls_expo_unknown);
    used = strlen(out);
  }
  if (p->colls_one_ch && used < n) {   /* COMMLENS_CHANNELS=sampled: how far one channel can be off */
    uint64_t m = cl_loghist_total(p->ch_spread_hist, CL_SPREAD_BUCKETS);
    snprintf(out + used, n - used, "; %llu collectives GPU-timed on one channel between the windows (COMMLENS_CHANNELS=sampled)",
             (unsigned long long)p->colls_one_ch);
    used = strlen(out);
    if (m && used < n)
      snprintf(out + used, n - used, ", their spans off by at most the spread of a collective's channels, measured "
               "in the windows over %llu collectives: median under %.1f us, 95th percentile under %.1f us",
               (unsigned long long)m, spread_us(p->ch_spread_hist, 0.5), spread_us(p->ch_spread_hist, 0.95));
    else if (used < n)
      snprintf(out + used, n - used, ", their error not measured (no collective with every channel timed)");
    used = strlen(out);
  }
  timers_line(p, out + used, n - used);
  used = strlen(out);
  if (s->colls_gpu_lost && used < n)   /* exposure above counts only what CUPTI timed */
    snprintf(out + used, n - used, "; %llu of %llu collectives lack GPU timing from CUPTI: %s",
             (unsigned long long)s->colls_gpu_lost, (unsigned long long)s->colls_done, CL_GPU_LOST_WHY);
}

void cl_stats_summary_head(const cl_run_stats *s, char *out, size_t n) {
  snprintf(out, n, "commlens %s, ABI v%d, %llu events, %llu dropped, hot path %llu ns/call median, %llu mean "
           "(%.3f%% of wall time)", COMMLENS_VERSION, cl_proc.abi, (unsigned long long)s->records,
           (unsigned long long)s->dropped, (unsigned long long)s->per_call_median_ns,
           (unsigned long long)s->per_call_ns, cl_stats_overhead_pct(s));
}
