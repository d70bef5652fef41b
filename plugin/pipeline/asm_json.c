/* asm_json.c: what the assembler adds to a participant's trace tail, as JSON: its GPU clock
 * offset and its exposure totals with the most exposed collectives (assemble.h). Reads the
 * assembler's state (asm_state.h); changes nothing. */
#include "plugin/pipeline/asm_state.h"
#include "common/clock.h"
#include "common/config.h"

void cl_asm_offsets_json(const cl_asm *a, const cl_part *p, cl_sb *b) {
  sb_puts(b, "[");
  int first = 1;
  int mine = p->dev >= 0 && p->dev < MAX_DEV - 1 ? p->dev : MAX_DEV - 1;
  for (int d = 0; d < MAX_DEV; d++) {
    const cl_gpu_clock *o = &a->off[d];
    if ((!o->samples && !o->implausible) || d != mine) continue;
    sb_puts(b, first ? "{" : ",{");
    first = 0;
    sb_puts(b, "\"device\":"); sb_i64(b, d == MAX_DEV - 1 ? -1 : d);
    sb_puts(b, ",\"host_minus_gpu_ns\":"); sb_i64(b, cl_gpu_clock_offset(o));
    sb_puts(b, ",\"samples\":"); sb_u64(b, o->samples);
    sb_puts(b, ",\"implausible\":"); sb_u64(b, o->implausible);
    sb_puts(b, "}");
  }
  sb_puts(b, "]");
}

void cl_asm_exposure_json(cl_asm *a, cl_part *p, cl_sb *b) {
  if (!a->gj) { sb_puts(b, "null"); return; }
  cl_gj_counts n;
  cl_gj_totals(a->gj, p, &n);
  sb_printf(b, "{\"comm_ns\":%llu,\"exposed_ns\":%llu,\"overlap_ppm\":%u,\"spans\":%llu,"
            "\"nccl_kernels\":%llu,\"compute_kernels\":%llu,\"classified_by_name\":%llu,"
            "\"joined_by\":\"%s\",\"joined_by_stream\":%llu,\"without_launch\":%llu,"
            "\"launches_nccl\":%llu,\"launches_other\":%llu,\"graph_kernels\":%llu,"
            "\"graph_kernels_joined\":%llu,\"cupti_covered_ns\":%llu,",
            (unsigned long long)n.t.comm_ns, (unsigned long long)n.t.exposed_ns, cl_expo_overlap_ppm(&n.t),
            (unsigned long long)n.t.spans, (unsigned long long)n.nccl_kernels,
            (unsigned long long)n.compute_kernels, (unsigned long long)n.by_name,
            cl_gj_by_stream(a->gj) ? "stream order" : "correlation id",
            (unsigned long long)n.by_stream, (unsigned long long)n.no_launch,
            (unsigned long long)n.launches_nccl, (unsigned long long)n.launches_other,
            (unsigned long long)n.graph_kernels, (unsigned long long)n.graph_claimed,
            (unsigned long long)cl_gj_covered_ns(a->gj, cl_now()));
  uint64_t agree, differ, repaired;
  cl_gj_join_check(a->gj, &agree, &differ, &repaired);
  sb_printf(b, "\"stream_join\":{\"agree_with_correlation\":%llu,\"differ\":%llu,\"repaired\":%llu},",
            (unsigned long long)agree, (unsigned long long)differ, (unsigned long long)repaired);
  if (cl_cfg.cupti == CL_CUPTI_SAMPLED)   /* outside CUPTI's windows: estimated, and how well it did inside */
    sb_printf(b, "\"estimated\":{\"collectives\":%llu,\"comm_ns\":%llu,\"exposed_ns\":%llu,\"unknown\":%llu,\"check_n\":%llu,"
              "\"check_estimated_ns\":%llu,\"check_measured_ns\":%llu,\"windows_s\":%.3f,\"period_s\":%.3f},",
              (unsigned long long)p->colls_expo_est, (unsigned long long)p->est_comm_ns, (unsigned long long)p->est_expo_ns,
              (unsigned long long)p->colls_expo_unknown,
              (unsigned long long)p->est_check_n, (unsigned long long)p->est_check_pred_ns,
              (unsigned long long)p->est_check_meas_ns, (double)cl_cfg.sample_on_ns / 1e9, (double)cl_cfg.sample_period_ns / 1e9);
  sb_puts(b, "\"comms\":[");
  cl_expo_comm_totals ct[CL_EXPO_MAX_COMMS + 1];
  size_t nct = cl_gj_comms(a->gj, p, ct, sizeof ct / sizeof ct[0]);
  for (size_t i = 0; i < nct && i < sizeof ct / sizeof ct[0]; i++) {
    /* per communicator; comm 0: replayed graph kernels no collective claimed, and the
     * communicators past the table's cap */
    sb_printf(b, "%s{\"comm\":\"", i ? "," : "");
    sb_hex(b, ct[i].comm);
    sb_printf(b, "\",\"comm_ns\":%llu,\"exposed_ns\":%llu,\"overlap_ppm\":%u,\"spans\":%llu}",
              (unsigned long long)ct[i].t.comm_ns, (unsigned long long)ct[i].t.exposed_ns,
              cl_expo_overlap_ppm(&ct[i].t), (unsigned long long)ct[i].t.spans);
  }
  sb_puts(b, "],\"top\":[");
  for (int i = 0; i < CL_NTOP && p->top[i].exposed; i++) {
    sb_printf(b, "%s{\"func\":", i ? "," : "");
    sb_jstr(b, p->top[i].func);
    sb_printf(b, ",\"seq\":%llu,\"comm\":\"", (unsigned long long)p->top[i].seq);
    sb_hex(b, p->top[i].comm);
    sb_printf(b, "\",\"exposed_ns\":%llu,\"dur_ns\":%llu}", (unsigned long long)p->top[i].exposed,
              (unsigned long long)p->top[i].dur);
  }
  uint64_t sn, sx, sc, wid, wx;
  cl_gj_steps(a->gj, p, &sn, &sx, &sc, &wid, &wx);
  sb_printf(b, "],\"steps\":{\"count\":%llu,\"exposed_ns_mean\":%llu,\"comm_ns_mean\":%llu,"
            "\"worst_step\":%llu,\"worst_exposed_ns\":%llu}}",
            (unsigned long long)sn, (unsigned long long)(sn ? sx / sn : 0), (unsigned long long)(sn ? sc / sn : 0),
            (unsigned long long)wid, (unsigned long long)wx);
}
