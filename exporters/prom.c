/* prom.c: see prom.h. Label values are valid UTF-8, escaped as the format requires (backslash,
 * double quote, newline); numbers are integers where the quantity is a count or nanoseconds turned
 * into seconds with nine decimals, never a lossy float for a counter. */
#include "exporters/prom.h"
#include "common/newfile.h"
#include "common/utf8.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The exposition format wants label values in UTF-8 with backslash, double quote and line feed
 * escaped: invalid bytes become U+FFFD (the trace's header counts them once). */
static void label_value(cl_sb *b, const char *v) {
  sb_puts(b, "\"");
  const unsigned char *c = (const unsigned char *)(v ? v : ""), *e = c + strlen((const char *)c);
  while (c < e) {
    size_t l = cl_utf8_len(c, e);
    if (!l) sb_puts(b, CL_UTF8_REPLACEMENT);
    else if (*c == '\\') sb_puts(b, "\\\\");
    else if (*c == '"') sb_puts(b, "\\\"");
    else if (*c == '\n') sb_puts(b, "\\n");
    else sb_put(b, (const char *)c, l);
    c += l ? l : 1;
  }
  sb_puts(b, "\"");
}

/* {rank="R",gpu="G",host="H",job="J"[,extra]} */
static void labels(cl_sb *b, const cl_prom_rank *r, const char *func, uint64_t size) {
  sb_printf(b, "{rank=\"%d\",gpu=\"%d\",host=", r->rank, r->gpu);
  label_value(b, r->host);
  sb_puts(b, ",job=");
  label_value(b, r->job);
  if (func) {
    sb_puts(b, ",func=");
    label_value(b, func);
    sb_printf(b, ",size_min_bytes=\"%llu\"", (unsigned long long)size);
  }
  sb_puts(b, "}");
}

static void family(cl_sb *b, const char *name, const char *type, const char *help) {
  sb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}
static void sample_u64(cl_sb *b, const char *name, const cl_prom_rank *r, uint64_t v) {
  sb_puts(b, name); labels(b, r, NULL, 0); sb_printf(b, " %llu\n", (unsigned long long)v);
}
static void sample_ns_as_s(cl_sb *b, const char *name, const cl_prom_rank *r, const char *func, uint64_t size, uint64_t ns) {
  sb_puts(b, name); labels(b, r, func, size);
  sb_printf(b, " %llu.%09llu\n", (unsigned long long)(ns / 1000000000u), (unsigned long long)(ns % 1000000000u));
}

typedef struct { cl_sb *b; const cl_prom_rank *r; int what; } row_ctx;
enum { ROW_COUNT, ROW_BYTES, ROW_GPU, ROW_BUSBW, ROW__N };
static const struct { const char *name, *type, *help; } g_rows[ROW__N] = {
  {"commlens_collectives_total", "counter", "Collective and point-to-point operations completed, by function and size bucket."},
  {"commlens_collective_bytes_total", "counter", "Bytes moved by completed operations (nccl-tests' size), by function and size bucket."},
  {"commlens_collective_gpu_seconds_total", "counter", "GPU time of the operations that were GPU-timed, by function and size bucket."},
  {"commlens_collective_busbw_bytes_per_second", "gauge", "Mean bus bandwidth of the GPU-timed operations (nccl-tests factors), by function and size bucket."},
};
static void row_sample(void *arg, const cl_summary_row *x) {
  row_ctx *c = arg;
  const char *name = g_rows[c->what].name;
  switch (c->what) {
  case ROW_COUNT: sb_puts(c->b, name); labels(c->b, c->r, x->func, x->size_min); sb_printf(c->b, " %llu\n", (unsigned long long)x->count); break;
  case ROW_BYTES: sb_puts(c->b, name); labels(c->b, c->r, x->func, x->size_min); sb_printf(c->b, " %llu\n", (unsigned long long)x->bytes); break;
  case ROW_GPU: sample_ns_as_s(c->b, name, c->r, x->func, x->size_min, x->gpu_ns); break;
  default:
    if (!x->timed) return;                 /* no GPU time: no bandwidth to state */
    sb_puts(c->b, name); labels(c->b, c->r, x->func, x->size_min); sb_printf(c->b, " %.0f\n", x->busbw_bps);
  }
}

void cl_prom_format(cl_sb *b, const cl_prom_rank *r, const cl_summary *sum) {
  sb_reset(b);
  family(b, "commlens_info", "gauge", "The plugin's version and the profiler ABI NCCL drives (value 1).");
  sb_puts(b, "commlens_info");
  labels(b, r, NULL, 0);
  b->len--;                                /* reopen the label set */
  sb_puts(b, ",version=");
  label_value(b, r->version);
  sb_printf(b, ",abi=\"%d\"} 1\n", r->abi);
  for (int w = 0; w < ROW__N; w++) {
    family(b, g_rows[w].name, g_rows[w].type, g_rows[w].help);
    row_ctx c = {b, r, w};
    cl_summary_each(sum, row_sample, &c);
  }
  family(b, "commlens_operations_gpu_timed_total", "counter", "Operations that got a GPU start and end (of commlens_collectives_total).");
  sample_u64(b, "commlens_operations_gpu_timed_total", r, r->colls_timed);
  if (r->has_exposure) {
    family(b, "commlens_communication_seconds_total", "counter", "GPU time with NCCL kernels running on this GPU (union of their spans).");
    sample_ns_as_s(b, "commlens_communication_seconds_total", r, NULL, 0, r->comm_ns);
    family(b, "commlens_exposed_communication_seconds_total", "counter", "Communication time not hidden behind compute kernels on this GPU.");
    sample_ns_as_s(b, "commlens_exposed_communication_seconds_total", r, NULL, 0, r->exposed_ns);
  }
  family(b, "commlens_events_total", "counter", "Profiler events drawn into this rank's trace.");
  sample_u64(b, "commlens_events_total", r, r->events);
  family(b, "commlens_records_total", "counter", "Profiler records the process captured (all of its GPUs).");
  sample_u64(b, "commlens_records_total", r, r->records);
  family(b, "commlens_records_dropped_total", "counter", "Profiler records the process dropped (full buffers; all of its GPUs).");
  sample_u64(b, "commlens_records_dropped_total", r, r->dropped);
  family(b, "commlens_plugin_calls_total", "counter", "Calls NCCL made into the plugin in this process.");
  sample_u64(b, "commlens_plugin_calls_total", r, r->calls);
  family(b, "commlens_plugin_call_seconds", "gauge", "Mean time NCCL's threads spent in one plugin call (sampled).");
  sample_ns_as_s(b, "commlens_plugin_call_seconds", r, NULL, 0, r->per_call_ns);
  family(b, "commlens_plugin_overhead_ratio", "gauge", "The plugin's share of wall time on NCCL's threads (calls x mean call time / elapsed).");
  sb_puts(b, "commlens_plugin_overhead_ratio"); labels(b, r, NULL, 0); sb_printf(b, " %.6f\n", r->overhead_ratio);
}

int cl_prom_write(const char *path, const cl_prom_rank *r, const cl_summary *sum) {
  cl_sb b = {0};
  cl_prom_format(&b, r, sum);
  /* A fresh temporary beside the target (never a planted file or link), readable for
   * node-exporter whatever the umask, then renamed over the target. */
  char tmp[2500];
  int err = 0, fd = cl_file_create_temp(tmp, sizeof tmp, path, 0644);
  if (fd < 0) err = errno;
  for (size_t off = 0; !err && off < b.len;) {
    ssize_t n = write(fd, b.p + off, b.len - off);
    if (n < 0) { if (errno != EINTR) err = errno; continue; }
    off += (size_t)n;
  }
  if (fd >= 0 && close(fd) != 0 && !err) err = errno;
  if (!err && rename(tmp, path) != 0) err = errno;
  if (err && fd >= 0) unlink(tmp);
  sb_free(&b);
  return err;
}
