/* trace_info.h: what a trace's (or a digest's) header and stats objects said (trace_info.c
 * parses them; trace_read.c and digest_read.c read files into it). */
#ifndef COMMLENS_CLI_TRACE_INFO_H
#define COMMLENS_CLI_TRACE_INFO_H
#include <stddef.h>
#include <stdint.h>

/* What the header and stats objects said; strings owned by the struct (cl_info_free). */
typedef struct {
  int has_header, format, abi, rank, os_pid, has_stats, final;
  int cuda_dev;             /* the participant's GPU from the header, -1 if not said */
  int rank_bad;             /* the header's rank is no integer in [0, CL_RANK_MAX]: rank_text */
  char rank_text[48];
  int offset_bad;           /* clock.realtime_offset_ns is no integer in [0, CL_OFFSET_MAX]: offset_text */
  char offset_text[48];
  char *version, *host, *job, *rank_source;   /* valid UTF-8: n_utf8 bytes were replaced by U+FFFD */
  int64_t n_utf8;
  int64_t realtime_offset_ns, offset_error_ns;
  int64_t start_ns;         /* the process's start (start_unix_ns), -1 if not said */
  char *boot_id;            /* the host's boot id (same boot and host: one clock), NULL if not said */
  char *clock_id;           /* a timeline of its own (COMMLENS_CLOCK_ID: a replay's), NULL: the host's */
  char *flight;             /* a flight-recorder dump's commlensFlight object (JSON text), NULL if none */
  int sync_known, sync_unsynchronised;   /* the host clock's NTP state (clock_sync), if said */
  int64_t sync_esterror_us, sync_maxerror_us;
  int64_t st_events, st_dropped, st_calls, st_overhead_ns, st_overhead_med_ns;   /* mean, median (0: not said) */
  int64_t st_records, st_skipped;   /* records the writer read; API and launch events not recorded
                                       (launch_events_skipped); these two and st_calls -1: the
                                       file does not say */
  int64_t st_cupti_rejected;        /* CUPTI spans left for KernelCh's (-1: not said) */
  double st_overhead_pct;
  int64_t st_colls, st_colls_gpu_lost;  /* collectives; ... CUPTI did not time: another tool had it (-1: not said) */
  int has_st_exposed;               /* the plugin's exposure totals (commlensStats.exposure) */
  int64_t st_exposed_ns;            /* ... exposed communication: a union, each interval once */
  /* COMMLENS_CUPTI=sampled (exposure.estimated): collectives whose exposure was estimated
   * outside CUPTI's windows, their GPU and exposed time, and the estimate checked in the
   * windows (n, what it said, what was measured); st_est_colls -1: not said */
  int64_t st_est_colls, st_est_comm_ns, st_est_exposed_ns, st_est_check_n, st_est_check_pred_ns, st_est_check_meas_ns;
  int64_t st_est_unknown;   /* ... of st_est_colls estimated from nothing (none measured before): not known */
  /* commlensStats.channels (COMMLENS_CHANNELS=sampled): collectives GPU-timed on one channel, -1
   * when not said; collectives whose channel spread was measured, its median and 95th percentile
   * (bucket tops, ns) */
  int64_t st_one_ch, st_spread_n, st_spread_p50_ns, st_spread_p95_ns;
  /* scan outcome */
  int64_t n_events, bytes_events;   /* complete events delivered, their raw bytes */
  int saw_events, events_closed, truncated, bad;   /* bad: damage seen (the first: msg) */
  int n_gz_damage;                  /* gzip damages (each resumed at the next member, if any) */
  int64_t n_skipped;                /* invalid JSON stretches skipped to the next event line */
  uint64_t dev, ino;                /* the file read (st_dev, st_ino): an output must not be it */
  char msg[256];                    /* what went wrong, if anything */
} cl_info;

/* clock.realtime_offset_ns is the Unix time of the host's monotonic zero (its boot): a file
 * whose header says otherwise (negative, past 2^62 ns, not an integer) is refused, never
 * turned into a clock offset or added to its times. */
#define CL_OFFSET_MAX (INT64_C(1) << 62)
/* The largest rank a trace may name (pftrace numbers a rank's packet sequence rank + 2). */
#define CL_RANK_MAX (INT32_MAX - 2)

/* The header and stats objects (the same JSON in traces and digests), each parsed into info;
 * anything unparsable is ignored. */
void cl_info_header(cl_info *info, const char *s, size_t n);
void cl_info_stats(cl_info *info, const char *s, size_t n);
/* 1 (with info->msg saying why) when the header read makes the file unusable (offset_bad). */
int cl_info_refused(cl_info *info);
#endif
