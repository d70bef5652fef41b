/* trace_info.c: see trace_info.h. The header and stats objects of a trace or a digest (the same
 * JSON) parsed into cl_info with json-c. Nothing read is trusted:
 * integers are range-checked, never wrapped, strings made valid UTF-8. */
#include "tools/commlens/read/trace_info.h"
#include "tools/commlens/base/util.h"
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A header string as valid UTF-8 (json-c does not check): replacements counted in *bad. */
static char *dup_json_str(json_object *o, const char *key, int64_t *bad) {
  json_object *v;
  if (!json_object_object_get_ex(o, key, &v)) return NULL;
  const char *s = json_object_get_string(v);
  return s ? cl_utf8_dup(s, strlen(s), bad) : NULL;
}
static int64_t get_i64(json_object *o, const char *key, int64_t dflt) {
  json_object *v;
  if (!o || !json_object_object_get_ex(o, key, &v)) return dflt;
  return json_object_get_int64(v);
}

/* A header integer in [lo, hi] into *out: -1 when absent, not an integer, or outside (never
 * wrapped: a rank of 4294967296 must not read as 0). */
static int get_i64_in(json_object *o, const char *key, int64_t lo, int64_t hi, int64_t *out) {
  json_object *v;
  if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int)) return -1;
  errno = 0;
  int64_t x = json_object_get_int64(v);
  if (errno || x < lo || x > hi) return -1;
  if (x == INT64_MAX || x == INT64_MIN) return -1;   /* json-c saturates what does not fit */
  *out = x;
  return 0;
}
/* The same into an int, `dflt` when it is not there or not in range. */
static int get_int_in(json_object *o, const char *key, int64_t lo, int64_t hi, int dflt) {
  int64_t x;
  return get_i64_in(o, key, lo, hi, &x) ? dflt : (int)x;
}

void cl_info_header(cl_info *in, const char *s, size_t n) {
  json_tokener *t = json_tokener_new();
  json_object *o = json_tokener_parse_ex(t, s, (int)n);
  json_tokener_free(t);
  if (!o || !json_object_is_type(o, json_type_object)) { if (o) json_object_put(o); return; }
  in->has_header = 1;
  free(in->version); free(in->host); free(in->job); free(in->rank_source);   /* a repeated header replaces the first */
  free(in->boot_id); in->boot_id = NULL; in->sync_known = 0;
  free(in->clock_id); in->clock_id = NULL;
  in->n_utf8 = 0;
  in->format = get_int_in(o, "format", 0, 1000000, -1);
  in->abi = get_int_in(o, "abi", 0, 1000000, 0);
  in->rank = get_int_in(o, "rank", 0, CL_RANK_MAX, -1);
  in->os_pid = get_int_in(o, "os_pid", 0, INT_MAX, 0);
  in->cuda_dev = get_int_in(o, "cuda_device", 0, 1 << 20, -1);
  if (get_i64_in(o, "start_unix_ns", 0, CL_OFFSET_MAX, &in->start_ns) != 0) in->start_ns = -1;
  json_object *rv;
  in->rank_bad = json_object_object_get_ex(o, "rank", &rv) && in->rank < 0;
  if (in->rank_bad)
    snprintf(in->rank_text, sizeof in->rank_text, "%.40s", json_object_to_json_string_ext(rv, JSON_C_TO_STRING_PLAIN));
  in->version = dup_json_str(o, "version", &in->n_utf8);
  in->host = dup_json_str(o, "host", &in->n_utf8);
  in->job = dup_json_str(o, "job", &in->n_utf8);
  in->rank_source = dup_json_str(o, "rank_source", &in->n_utf8);
  in->boot_id = dup_json_str(o, "boot_id", &in->n_utf8);
  in->clock_id = dup_json_str(o, "clock_id", &in->n_utf8);
  json_object *c, *sv;
  if (json_object_object_get_ex(o, "clock_sync", &c) && json_object_is_type(c, json_type_object) &&
      json_object_object_get_ex(c, "synchronised", &sv) && json_object_is_type(sv, json_type_boolean)) {
    in->sync_known = 1;
    in->sync_unsynchronised = !json_object_get_boolean(sv);
    in->sync_esterror_us = get_i64(c, "esterror_us", 0);
    in->sync_maxerror_us = get_i64(c, "maxerror_us", 0);
    if (in->sync_esterror_us < 0 || in->sync_maxerror_us < 0) in->sync_known = 0;   /* nothing read is trusted */
  }
  in->offset_bad = 0;
  if (json_object_object_get_ex(o, "clock", &c)) {
    in->realtime_offset_ns = get_i64(c, "realtime_offset_ns", 0);
    in->offset_error_ns = get_i64(c, "offset_error_ns", 0);
    json_object *ov;
    if (json_object_object_get_ex(c, "realtime_offset_ns", &ov) &&
        get_i64_in(c, "realtime_offset_ns", 0, CL_OFFSET_MAX, &in->realtime_offset_ns) != 0) {
      in->offset_bad = 1;
      in->realtime_offset_ns = 0;
      snprintf(in->offset_text, sizeof in->offset_text, "%.40s", json_object_to_json_string_ext(ov, JSON_C_TO_STRING_PLAIN));
    }
  }
  json_object_put(o);
}

int cl_info_refused(cl_info *in) {
  if (!in->offset_bad) return 0;
  snprintf(in->msg, sizeof in->msg, "header clock.realtime_offset_ns %s is not a Unix time in 0..2^62 ns",
           in->offset_text);
  return 1;
}

void cl_info_stats(cl_info *in, const char *s, size_t n) {
  json_tokener *t = json_tokener_new();
  json_object *o = json_tokener_parse_ex(t, s, (int)n);
  json_tokener_free(t);
  if (!o || !json_object_is_type(o, json_type_object)) { if (o) json_object_put(o); return; }
  json_object *v;
  in->has_stats = 1;
  in->final = json_object_object_get_ex(o, "final", &v) && json_object_get_boolean(v);
  in->st_events = get_i64(o, "events", -1);
  in->st_dropped = get_i64(o, "dropped", 0);
  in->st_calls = get_i64(o, "calls", -1);
  in->st_records = get_i64(o, "records", -1);
  in->st_skipped = get_i64(o, "launch_events_skipped", -1);
  in->st_cupti_rejected = get_i64(o, "cupti_spans_rejected", -1);
  in->st_colls = get_i64(o, "collectives", -1);
  in->st_colls_gpu_lost = get_i64(o, "collectives_gpu_lost", -1);
  in->st_overhead_ns = get_i64(o, "overhead_ns_per_call", 0);
  in->st_overhead_med_ns = get_i64(o, "overhead_ns_per_call_median", 0);
  in->st_overhead_pct = json_object_object_get_ex(o, "overhead_pct", &v) ? json_object_get_double(v) : 0;
  json_object *x, *xe;
  if (json_object_object_get_ex(o, "exposure", &x) && json_object_is_type(x, json_type_object) &&
      json_object_object_get_ex(x, "exposed_ns", &xe) && json_object_is_type(xe, json_type_int)) {
    in->st_exposed_ns = json_object_get_int64(xe);
    in->has_st_exposed = in->st_exposed_ns >= 0;
    json_object *es;
    if (json_object_object_get_ex(x, "estimated", &es) && json_object_is_type(es, json_type_object)) {
      in->st_est_colls = get_i64(es, "collectives", -1);
      in->st_est_comm_ns = get_i64(es, "comm_ns", 0);
      in->st_est_exposed_ns = get_i64(es, "exposed_ns", 0);
      in->st_est_check_n = get_i64(es, "check_n", 0);
      in->st_est_check_pred_ns = get_i64(es, "check_estimated_ns", 0);
      in->st_est_check_meas_ns = get_i64(es, "check_measured_ns", 0);
      in->st_est_unknown = get_i64(es, "unknown", 0);   /* since 2026-11-26 */
      if (in->st_est_colls < 0 || in->st_est_comm_ns < 0 || in->st_est_exposed_ns < 0 || in->st_est_check_n < 0 ||
          in->st_est_check_pred_ns < 0 || in->st_est_check_meas_ns < 0 || in->st_est_unknown < 0 ||
          in->st_est_unknown > in->st_est_colls)
        in->st_est_colls = -1;   /* nothing read from disk is trusted: a negative total is no total */
    }
  }
  in->st_one_ch = -1;
  if (json_object_object_get_ex(o, "channels", &x) && json_object_is_type(x, json_type_object)) {
    in->st_one_ch = get_i64(x, "one_channel", -1);
    in->st_spread_n = get_i64(x, "spread_n", -1);
    in->st_spread_p50_ns = get_i64(x, "spread_p50_ns", -1);
    in->st_spread_p95_ns = get_i64(x, "spread_p95_ns", -1);
    if (in->st_one_ch < 0 || in->st_spread_n < 0 || in->st_spread_p50_ns < 0 || in->st_spread_p95_ns < 0 ||
        in->st_spread_p50_ns > in->st_spread_p95_ns)
      in->st_one_ch = -1;   /* nothing read from disk is trusted */
  }
  json_object_put(o);
}

