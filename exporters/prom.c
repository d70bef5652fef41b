/* prom.c: see prom.h. Label values are valid UTF-8, escaped as the format requires (backslash,
 * double quote, newline); numbers are integers where the quantity is a count or nanoseconds turned
 * into seconds with nine decimals, never a lossy float for a counter. */
#include "exporters/prom.h"
#include "common/newfile.h"
#include "common/utf8.h"
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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

/* {rank="R",gpu="G",host="H",job="J",pid="P"[,extra]} */
static void labels(cl_sb *b, const cl_prom_rank *r, const char *func, uint64_t size) {
  sb_printf(b, "{rank=\"%d\",gpu=\"%d\",host=", r->rank, r->gpu);
  label_value(b, r->host);
  sb_puts(b, ",job=");
  label_value(b, r->job);
  if (r->pid) sb_printf(b, ",pid=\"%d\"", r->pid);
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
static void ns_as_s(cl_sb *b, uint64_t ns) {
  sb_printf(b, " %llu.%09llu\n", (unsigned long long)(ns / 1000000000u), (unsigned long long)(ns % 1000000000u));
}
static void sample_ns_as_s(cl_sb *b, const char *name, const cl_prom_rank *r, const char *func, uint64_t size, uint64_t ns) {
  sb_puts(b, name); labels(b, r, func, size);
  ns_as_s(b, ns);
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

/* ---- per communicator ---- */
/* Upper bounds of the kernel-time buckets: 10 us .. 10 s in steps of about 3x (ns, and as
 * the le label writes them). */
static const uint64_t g_le_ns[CL_PROM_BUCKETS] = {10000, 30000, 100000, 300000, 1000000, 3000000, 10000000,
                                                  30000000, 100000000, 300000000, 1000000000, 3000000000, 10000000000};
static const char *const g_le_txt[CL_PROM_BUCKETS] = {"1e-05", "3e-05", "0.0001", "0.0003", "0.001", "0.003", "0.01",
                                                      "0.03", "0.1", "0.3", "1", "3", "10"};

void cl_prom_comms_add(cl_prom_comms *t, uint64_t hash, uint64_t bytes, int timed, uint64_t kernel_ns, uint64_t queue_ns) {
  cl_prom_comm *c = NULL;
  for (int i = 0; i < t->n && !c; i++)
    if (t->c[i].hash == hash) c = &t->c[i];
  if (!c && t->n < CL_PROM_COMMS) { c = &t->c[t->n++]; c->hash = hash; }
  if (!c) c = &t->other;                   /* bounded series: later communicators together */
  c->colls++;
  c->bytes += bytes;
  if (!timed) return;
  c->timed++;
  c->kernel_ns += kernel_ns;
  c->queue_ns += queue_ns;
  int k = 0;
  while (k < CL_PROM_BUCKETS && kernel_ns > g_le_ns[k]) k++;
  c->le[k]++;
}

/* {rank,gpu,host,job,comm="<16 hex digits>" or "other"[,le]} */
static void comm_labels(cl_sb *b, const cl_prom_rank *r, const cl_prom_comm *c, const char *le) {
  labels(b, r, NULL, 0);
  b->len--;                                /* reopen the label set */
  if (c == &r->comms->other) sb_puts(b, ",comm=\"other\"");
  else sb_printf(b, ",comm=\"%016llx\"", (unsigned long long)c->hash);
  if (le) sb_printf(b, ",le=\"%s\"", le);
  sb_puts(b, "}");
}
/* Calls fn for each communicator of r with a series (the "other" one once it has any). */
static void each_comm(const cl_prom_rank *r, void (*fn)(cl_sb *, const cl_prom_rank *, const cl_prom_comm *, int), cl_sb *b, int what) {
  if (!r->comms) return;
  for (int i = 0; i < r->comms->n; i++) fn(b, r, &r->comms->c[i], what);
  if (r->comms->other.colls) fn(b, r, &r->comms->other, what);
}
enum { CM_COLLS, CM_BYTES, CM_QUEUE, CM_KERNEL, CM__N };
static const struct { const char *name, *type, *help; } g_cm[CM__N] = {
  {"commlens_comm_collectives_total", "counter", "Operations completed on this communicator."},
  {"commlens_comm_bytes_total", "counter", "Bytes moved by them (nccl-tests' size)."},
  {"commlens_comm_queue_seconds_total", "counter", "Of the GPU-timed ones: time from enqueue on the host to the start of the kernel "
                                                   "(long on a rank whose GPU was busy with other work)."},
  {"commlens_comm_kernel_seconds", "histogram", "GPU time of one collective, kernel start to end: it includes the wait for the "
                                                "last peer, so the ranks that waited have long ones and the late rank short ones."},
};
static void comm_sample(cl_sb *b, const cl_prom_rank *r, const cl_prom_comm *c, int what) {
  const char *name = g_cm[what].name;
  switch (what) {
  case CM_COLLS: sb_puts(b, name); comm_labels(b, r, c, NULL); sb_printf(b, " %llu\n", (unsigned long long)c->colls); break;
  case CM_BYTES: sb_puts(b, name); comm_labels(b, r, c, NULL); sb_printf(b, " %llu\n", (unsigned long long)c->bytes); break;
  case CM_QUEUE: sb_puts(b, name); comm_labels(b, r, c, NULL); ns_as_s(b, c->queue_ns); break;
  default: {
    uint64_t cum = 0;
    for (int k = 0; k <= CL_PROM_BUCKETS; k++) {
      cum += c->le[k];
      sb_printf(b, "%s_bucket", name);
      comm_labels(b, r, c, k < CL_PROM_BUCKETS ? g_le_txt[k] : "+Inf");
      sb_printf(b, " %llu\n", (unsigned long long)cum);
    }
    sb_printf(b, "%s_sum", name); comm_labels(b, r, c, NULL); ns_as_s(b, c->kernel_ns);
    sb_printf(b, "%s_count", name); comm_labels(b, r, c, NULL); sb_printf(b, " %llu\n", (unsigned long long)c->timed);
  }
  }
}

/* A family of one value per rank. */
enum { RK_TIMED, RK_COMM, RK_EXPOSED, RK_EVENTS, RK_RECORDS, RK_DROPPED, RK_CALLS, RK_CALL_S, RK_OVERHEAD, RK__N };
static const struct { const char *name, *type, *help; } g_rk[RK__N] = {
  {"commlens_operations_gpu_timed_total", "counter", "Operations that got a GPU start and end (of commlens_collectives_total)."},
  {"commlens_communication_seconds_total", "counter", "GPU time with NCCL kernels running on this GPU (union of their spans)."},
  {"commlens_exposed_communication_seconds_total", "counter", "Communication time not hidden behind compute kernels on this GPU."},
  {"commlens_events_total", "counter", "Profiler events drawn into this rank's trace."},
  {"commlens_records_total", "counter", "Profiler records the process captured (all of its GPUs)."},
  {"commlens_records_dropped_total", "counter", "Profiler records the process dropped (full buffers; all of its GPUs)."},
  {"commlens_plugin_calls_total", "counter", "Calls NCCL made into the plugin in this process."},
  {"commlens_plugin_call_seconds", "gauge", "Mean time NCCL's threads spent in one plugin call (sampled)."},
  {"commlens_plugin_overhead_ratio", "gauge", "The plugin's share of wall time on NCCL's threads (calls x mean call time / elapsed)."},
};
static void rank_sample(cl_sb *b, const cl_prom_rank *r, int what) {
  const char *name = g_rk[what].name;
  switch (what) {
  case RK_TIMED: sample_u64(b, name, r, r->colls_timed); break;
  case RK_COMM: sample_ns_as_s(b, name, r, NULL, 0, r->comm_ns); break;
  case RK_EXPOSED: sample_ns_as_s(b, name, r, NULL, 0, r->exposed_ns); break;
  case RK_EVENTS: sample_u64(b, name, r, r->events); break;
  case RK_RECORDS: sample_u64(b, name, r, r->records); break;
  case RK_DROPPED: sample_u64(b, name, r, r->dropped); break;
  case RK_CALLS: sample_u64(b, name, r, r->calls); break;
  case RK_CALL_S: sample_ns_as_s(b, name, r, NULL, 0, r->per_call_ns); break;
  default: sb_puts(b, name); labels(b, r, NULL, 0); sb_printf(b, " %.6f\n", r->overhead_ratio);
  }
}

void cl_prom_format_ranks(cl_sb *b, const cl_prom_rank *r, const cl_summary *const *sum, size_t n) {
  sb_reset(b);
  family(b, "commlens_info", "gauge", "The plugin's version and the profiler ABI NCCL drives (value 1).");
  for (size_t i = 0; i < n; i++) {
    sb_puts(b, "commlens_info");
    labels(b, &r[i], NULL, 0);
    b->len--;                              /* reopen the label set */
    sb_puts(b, ",version=");
    label_value(b, r[i].version);
    sb_printf(b, ",abi=\"%d\"} 1\n", r[i].abi);
  }
  for (int w = 0; w < ROW__N; w++) {
    family(b, g_rows[w].name, g_rows[w].type, g_rows[w].help);
    for (size_t i = 0; i < n; i++) {
      row_ctx c = {b, &r[i], w};
      if (sum[i]) cl_summary_each(sum[i], row_sample, &c);
    }
  }
  int comms = 0;
  for (size_t i = 0; i < n; i++) comms |= r[i].comms != NULL;
  for (int w = 0; w < CM__N && comms; w++) {
    family(b, g_cm[w].name, g_cm[w].type, g_cm[w].help);
    for (size_t i = 0; i < n; i++) each_comm(&r[i], comm_sample, b, w);
  }
  for (int w = 0; w < RK__N; w++) {
    int exposure = w == RK_COMM || w == RK_EXPOSED, any = !exposure;
    for (size_t i = 0; i < n && !any; i++) any = r[i].has_exposure;
    if (!any) continue;                    /* CUPTI's two families only where it ran */
    family(b, g_rk[w].name, g_rk[w].type, g_rk[w].help);
    for (size_t i = 0; i < n; i++)
      if (!exposure || r[i].has_exposure) rank_sample(b, &r[i], w);
  }
}

void cl_prom_format(cl_sb *b, const cl_prom_rank *r, const cl_summary *sum) {
  cl_prom_format_ranks(b, r, &sum, 1);
}

int cl_prom_write(const char *path, const cl_prom_rank *r, const cl_summary *sum) {
  cl_sb b = {0};
  cl_prom_format(&b, r, sum);
  int err = cl_prom_write_text(path, &b);
  sb_free(&b);
  return err;
}

int cl_prom_write_text(const char *path, const cl_sb *b) {
  /* A fresh temporary beside the target (never a planted file or link), readable for
   * node-exporter whatever the umask, then renamed over the target. */
  char tmp[2500];
  int err = 0, fd = cl_file_create_temp(tmp, sizeof tmp, path, 0644);
  if (fd < 0) err = errno;
  for (size_t off = 0; !err && off < b->len;) {
    ssize_t n = write(fd, b->p + off, b->len - off);
    if (n < 0) { if (errno != EINTR) err = errno; continue; }
    off += (size_t)n;
  }
  if (fd >= 0 && close(fd) != 0 && !err) err = errno;
  if (!err && rename(tmp, path) != 0) err = errno;
  if (err && fd >= 0) unlink(tmp);
  return err;
}

/* The pid a name prefix<digits>suffix carries, or -1. */
static long pid_in(const char *name, const char *prefix, const char *suffix) {
  size_t n = strlen(name), p = strlen(prefix), q = strlen(suffix);
  if (n <= p + q || strncmp(name, prefix, p) || strcmp(name + n - q, suffix) || n - p - q > 9) return -1;
  long v = 0;
  for (const char *c = name + p; c < name + n - q; c++) {
    if (*c < '0' || *c > '9') return -1;
    v = v * 10 + (*c - '0');
  }
  return v;
}

/* Removes name (in dir fd at) when it is a regular file of this user. 0 when removed. */
static int remove_own(int at, const char *name) {
  struct stat st;
  if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) return -1;
  return unlinkat(at, name, 0);
}
int cl_prom_remove(const char *path) { return remove_own(AT_FDCWD, path); }

int cl_prom_sweep(const char *dir, const char *prefix, const char *suffix, int self_pid) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int removed = 0;
  for (struct dirent *de; (de = readdir(d));) {
    long pid = pid_in(de->d_name, prefix, suffix);
    if (pid <= 0 || pid == self_pid || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;   /* running, or not ours to know */
    removed += remove_own(dirfd(d), de->d_name) == 0;
  }
  closedir(d);
  return removed;
}
