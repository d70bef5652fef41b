/* writer.c: the background writer thread and the output of one process: drains every ring,
 * feeds the assembler, flushes the trace file at least every COMMLENS_FLUSH_MS, and writes
 * the summary at exit. All formatting and I/O cost lives here, off NCCL's threads. It never
 * blocks a producer: rings are only ever read. A failure to write disables profiling with
 * one message; it never stops the job. */
#include "writer.h"
#include "assemble.h"
#include "clock.h"
#include "config.h"
#include "core.h"
#include "cupti.h"
#include "recorder.h"
#include "ring.h"
#include "staging.h"
#include "../exporters/trace_file.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t g_wmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t g_thr, g_drain_thr;
static int g_running, g_setup, g_finished, g_out_ok;
static _Atomic int g_stop, g_drain_stop;
static cl_ct *g_ct;
static cl_asm *g_asm;
static cl_summary *g_sum;
static cl_tfile *g_file;
static char g_base[1200], g_path[1400];
static cl_stage *g_stage;
static cl_sb g_tail;
static int g_cupti;                 /* CUPTI was started for us (it may since have stopped) */
static int g_cupti_rec;             /* ... and the join knows it records now */
static cl_gpu_activity g_act[4096];

/* ---- output setup ---- */
static int mkdir_p(const char *dir) {
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", dir);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
  struct stat st;
  if (stat(tmp, &st) != 0 || !S_ISDIR(st.st_mode)) { errno = ENOTDIR; return -1; }
  return 0;
}

/* A host name safe inside a file name. */
static void safe_name(char *out, size_t n, const char *in) {
  size_t k = 0;
  for (; *in && k + 1 < n; in++)
    out[k++] = (*in == '/' || *in == ' ' || (unsigned char)*in < 0x20) ? '_' : *in;
  out[k] = 0;
}

static void header(cl_sb *b) {
  sb_puts(b, "{\"displayTimeUnit\":\"ns\",\"commlens\":{\"format\":1,\"version\":");
  sb_jstr(b, COMMLENS_VERSION);
  sb_printf(b, ",\"abi\":%d,\"host\":", cl_proc.abi);
  sb_jstr(b, cl_proc.host);
  sb_printf(b, ",\"os_pid\":%d,\"rank\":%d,\"rank_source\":", (int)cl_proc.pid, cl_proc.rank);
  sb_jstr(b, cl_proc.rank_source);
  sb_puts(b, ",\"job\":");
  sb_jstr(b, cl_proc.job);
  sb_printf(b, ",\"cuda_device\":%d,\"clock\":{\"realtime_offset_ns\":%lld,\"offset_error_ns\":%lld},"
            "\"mask\":%u,\"events\":", cl_proc.cuda_dev, (long long)cl_proc.realtime_offset_ns,
            (long long)cl_proc.offset_err_ns, cl_cfg.mask);
  sb_jstr(b, cl_cfg.events_name);
  sb_puts(b, "},\"traceEvents\":[");
}

static void disable_output(const char *what, const char *path, int err) {
  cl_log_once("output", CL_LOG_WARN, "%s %s: %s; profiling is off for the rest of this process "
              "(the job is not affected%s)", what, path, strerror(err),
              g_file ? "; the trace ends at its last complete flush" : "");
  cl_disable();
}

static int setup_output(void) {
  g_sum = cl_summary_new();
  g_ct = ct_new(cl_proc.rank, cl_proc.realtime_offset_ns);
  g_cupti = cl_cfg.cupti && cl_cupti_start() == 0;
  /* libcupti was just loaded: its static destructors run at exit before any handler that was
   * registered earlier (atexit runs last-in first-out), and calling CUPTI after them crashes
   * (seen on CUPTI 13: cuptiActivityDisable from the exit path). Registering the (idempotent)
   * finish again here makes it run while CUPTI is still whole. */
  if (g_cupti) atexit(cl_writer_finish);
  g_asm = g_ct && g_sum ? cl_asm_new(g_ct, g_sum, g_cupti) : NULL;
  if (g_asm && g_cupti) cl_asm_cupti_started(g_asm, cl_now());
  g_cupti_rec = g_cupti;
  if (!g_asm) { cl_log(CL_LOG_WARN, "out of memory setting up the writer"); return -1; }
  if (cl_cfg.record[0]) cl_recorder_open(cl_cfg.record, cl_proc.rank);
  char host[128];
  safe_name(host, sizeof host, cl_proc.host);
  snprintf(g_base, sizeof g_base, "%s/commlens-r%d-%s-%d", cl_cfg.dir, cl_proc.rank, host, (int)cl_proc.pid);
  snprintf(g_path, sizeof g_path, "%s.trace.json%s", g_base, cl_cfg.gzip ? ".gz" : "");
  if (mkdir_p(cl_cfg.dir) != 0) { disable_output("cannot create the output directory", cl_cfg.dir, errno); return 0; }
  char spill[1500];
  snprintf(spill, sizeof spill, "%s.spill", g_base);
  g_stage = cl_stage_new(cl_cfg.buffer_bytes / 4, spill);   /* the rest of the budget is rings */
  if (!g_stage) { cl_log(CL_LOG_WARN, "out of memory setting up the writer"); return -1; }
  g_file = cl_tfile_create(g_path, cl_cfg.gzip);
  if (!g_file) {   /* O_EXCL|O_NOFOLLOW: an existing file or a planted symlink is never written through */
    int e = errno;
    disable_output(e == EEXIST || e == ELOOP ? "refusing to write through an existing file or symlink at"
                                             : "cannot create the trace file", g_path, e);
    return 0;
  }
  cl_sb hdr = {0};
  header(&hdr);
  char pname[256];
  if (cl_proc.cuda_dev >= 0) snprintf(pname, sizeof pname, "rank %d (%s, GPU %d)", cl_proc.rank, cl_proc.host, cl_proc.cuda_dev);
  else snprintf(pname, sizeof pname, "rank %d (%s)", cl_proc.rank, cl_proc.host);
  ct_process_meta(g_ct, pname, cl_proc.rank);
  cl_sb *body = ct_body(g_ct);
  sb_put(&hdr, body->p, body->len);
  sb_reset(body);
  sb_put(body, hdr.p, hdr.len);   /* the header goes out with the first flush */
  sb_free(&hdr);
  cl_log(CL_LOG_INFO, "writing the trace of rank %d to %s", cl_proc.rank, g_path);
  g_out_ok = 1;
  return 0;
}

/* ---- stats and the tail ---- */
typedef struct { uint64_t dropped, ring_dropped, unclaimed, staging_dropped, calls, sampled_ns, nsampled; } ring_totals;
static void ring_sum(ring_totals *t) {
  memset(t, 0, sizeof *t);
  int n = cl_ring_count();
  for (int i = 0; i < n; i++) {
    t->ring_dropped += atomic_load_explicit(&cl_rings[i].dropped, memory_order_relaxed);
    t->calls += atomic_load_explicit(&cl_rings[i].calls, memory_order_relaxed);
    t->sampled_ns += atomic_load_explicit(&cl_rings[i].sampled_ns, memory_order_relaxed);
    t->nsampled += atomic_load_explicit(&cl_rings[i].nsampled, memory_order_relaxed);
  }
  t->unclaimed = atomic_load_explicit(&cl_rings_unclaimed_drops, memory_order_relaxed);
  t->staging_dropped = g_stage ? cl_stage_dropped(g_stage) : 0;
  t->dropped = t->ring_dropped + t->unclaimed + t->staging_dropped;
}

static void build_tail(int final) {
  ring_totals rt;
  ring_sum(&rt);
  cl_asm_stats as;
  cl_asm_get_stats(g_asm, &as);
  uint64_t elapsed = cl_now() - cl_proc.start_ns;
  uint64_t per_call = rt.nsampled ? rt.sampled_ns / rt.nsampled : 0;
  cl_sb *b = &g_tail;
  sb_reset(b);
  sb_printf(b, "\n],\"commlensStats\":{\"final\":%s,\"events\":%llu,\"records\":%llu,\"dropped\":%llu,"
            "\"stale_handles\":%llu,\"foreign\":%llu,\"orphans\":%llu,\"open_events\":%llu,"
            "\"dropped_ring\":%llu,\"dropped_no_ring\":%llu,\"dropped_staging\":%llu,\"spilled\":%llu,\"collectives\":%llu,\"collectives_timed\":%llu,\"implausible_gpu\":%llu,\"calls\":%llu,"
            "\"overhead_ns_per_call\":%llu,\"overhead_pct\":%.4f,\"elapsed_ns\":%llu,\"gpu_offsets\":",
            final ? "true" : "false", (unsigned long long)ct_events(g_ct), (unsigned long long)as.records,
            (unsigned long long)(rt.dropped + as.writer_drops), (unsigned long long)as.stale,
            (unsigned long long)as.foreign, (unsigned long long)as.orphans, (unsigned long long)as.open_now,
            (unsigned long long)rt.ring_dropped, (unsigned long long)rt.unclaimed,
            (unsigned long long)rt.staging_dropped, (unsigned long long)(g_stage ? cl_stage_spilled(g_stage) : 0),
            (unsigned long long)as.colls_done, (unsigned long long)as.colls_timed,
            (unsigned long long)as.implausible_gpu, (unsigned long long)rt.calls,
            (unsigned long long)per_call, elapsed ? 100.0 * (double)rt.calls * (double)per_call / (double)elapsed : 0.0,
            (unsigned long long)elapsed);
  cl_asm_offsets_json(g_asm, b);
  cl_cupti_stats cs;
  cl_cupti_get_stats(&cs);
  sb_printf(b, ",\"cupti\":{\"active\":%s,\"records\":%llu,\"dropped\":%llu,\"status\":",
            g_cupti && cs.active ? "true" : "false", (unsigned long long)cs.records, (unsigned long long)cs.dropped);
  sb_jstr(b, g_cupti ? (cs.active ? "recording" : cs.status) : (cl_cfg.cupti ? cs.status : "off (COMMLENS_CUPTI=on enables it)"));
  sb_puts(b, "},\"exposure\":");
  cl_asm_exposure_json(g_asm, b);
  sb_puts(b, "}}\n");
}

static void flush_file(int final) {
  cl_sb *body = ct_body(g_ct);
  if (g_file && !cl_tfile_failed(g_file)) {
    build_tail(final);
    if (cl_tfile_flush(g_file, body->p, body->len, g_tail.p, g_tail.len) != 0)
      disable_output("writing the trace failed:", g_path, cl_tfile_failed(g_file));
  }
  sb_reset(body);
}

/* ---- draining and formatting ---- */
/* Copies every committed record of every ring into staging (memory speed: the rings must
 * never wait for JSON). Returns the records moved. */
static uint64_t drain_pass(void) {
  uint64_t total = 0;
  if (!g_stage) return 0;
  int n = cl_ring_count();
  for (int i = 0; i < n; i++) {
    cl_ring *r = &cl_rings[i];
    if (atomic_load_explicit(&r->state, memory_order_acquire) == CL_RING_FREE) continue;
    for (;;) {
      const cl_rec *recs;
      size_t run = cl_ring_peek(r, &recs), k = 0;
      if (!run) break;
      while (k < run && recs[k].kind != CL_REC_PAD && recs[k].nslots && k + recs[k].nslots <= run) {
        k += recs[k].nslots;
        total++;
      }
      if (k) cl_stage_append(g_stage, recs, k);
      cl_ring_consume(r, k < run && (recs[k].kind == CL_REC_PAD || !recs[k].nslots) ? run : k);
      if (k == 0 && run) break;
    }
    cl_ring_recycle_if_done(r);
  }
  return total;
}

/* Formats staged records until `budget_ns` has passed (0: until staging is empty). */
static void flush_file(int final);
#define BODY_FLUSH_BYTES (8u << 20)     /* the JSON body never grows past this between writes */
static uint64_t format_some(uint64_t budget_ns) {
  uint64_t t0 = cl_now(), done = 0;
  if (!g_stage) return 0;
  const cl_rec *recs;
  size_t n;
  while ((n = cl_stage_peek(g_stage, &recs)) > 0) {
    size_t k = 0;
    while (k < n) {
      cl_asm_feed(g_asm, &recs[k]);
      k += recs[k].nslots ? recs[k].nslots : 1;
      if ((++done & 255) == 0 && budget_ns && cl_now() - t0 > budget_ns) break;
    }
    cl_stage_consume(g_stage, k);
    if (ct_body(g_ct)->len > BODY_FLUSH_BYTES) flush_file(0);
    if (budget_ns && cl_now() - t0 > budget_ns) break;
  }
  return done;
}

/* Takes CUPTI's completed records (forced: also the buffers still being filled). */
static void drain_cupti(int force) {
  if (!g_cupti) return;
  cl_cupti_flush(force);
  size_t n;
  while ((n = cl_cupti_drain(g_act, sizeof g_act / sizeof g_act[0])) > 0)
    for (size_t i = 0; i < n; i++) cl_asm_gpu_activity(g_asm, &g_act[i]);
}

/* Keeps the join's CUPTI coverage in step with CUPTI: suspended (another tool holds the slot),
 * resumed, or displaced (our records go to another client: the join sees NCCL launches without
 * launch records). */
static void track_cupti(uint64_t now) {
  uint64_t last_ok = now;
  int rec = cl_cupti_recording();
  if (rec && cl_asm_cupti_lost(g_asm, now, &last_ok)) {
    drain_cupti(1);   /* records still in a partly filled buffer come with a forced flush */
    if (cl_asm_cupti_lost(g_asm, now, &last_ok)) { cl_cupti_displaced(); rec = 0; }
  }
  if (rec == g_cupti_rec) return;
  if (rec) cl_asm_cupti_started(g_asm, now);
  else cl_asm_cupti_stopped(g_asm, last_ok);
  g_cupti_rec = rec;
}

/* The drain thread: only copies ring records into staging, so a producer's ring is emptied
 * within about a hundred microseconds whatever formatting and disk writes are doing. */
static void *drain_main(void *arg) {
  (void)arg;
  int idle_us = 50;
  while (!atomic_load(&g_drain_stop)) {
    if (drain_pass()) { idle_us = 20; continue; }
    idle_us = idle_us < 2000 ? idle_us * 2 : 2000;
    struct timespec ts = {0, idle_us * 1000L};
    nanosleep(&ts, NULL);
  }
  drain_pass();                           /* everything committed before the stop */
  return NULL;
}

/* The format thread: staging -> assembler -> JSON, CUPTI, periodic flushes. */
static void *writer_main(void *arg) {
  (void)arg;
  /* Formatting yields to everything else on the machine, the job and our drain thread first:
   * a backlog only grows staging (then the spill file), it never stalls a producer. */
  if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19) != 0) { /* best effort */ }
  uint64_t last_flush = cl_now(), last_busy = last_flush, last_cupti = last_flush;
  int idle_us = 200;
  while (!atomic_load(&g_stop)) {
    uint64_t got = format_some(5000000);
    uint64_t now = cl_now();
    if (g_cupti && now - last_cupti >= 100000000ull) {
      drain_cupti(0);
      track_cupti(now);
      cl_asm_gpu_advance(g_asm, now, 0);
      last_cupti = now;
    }
    cl_asm_tick(g_asm, now, 0);
    cl_window_tick(now);
    if (now - last_flush >= (uint64_t)cl_cfg.flush_ms * 1000000ull) { flush_file(0); last_flush = now; }
    if (got) { last_busy = now; continue; }
    idle_us = now - last_busy < 100000000ull ? 200 : idle_us < 20000 ? idle_us * 2 : 20000;
    struct timespec ts = {0, idle_us * 1000L};
    nanosleep(&ts, NULL);
  }
  /* The drain thread has stopped (see stop_locked): format the whole backlog. */
  format_some(0);
  drain_cupti(1);
  cl_asm_tick(g_asm, cl_now(), 1);
  flush_file(0);
  return NULL;
}

int cl_writer_start(void) {
  pthread_mutex_lock(&g_wmu);
  int rc = 0;
  if (!g_setup) { g_setup = 1; g_finished = 0; rc = setup_output(); }
  if (rc == 0 && g_out_ok && !g_running) {
    atomic_store(&g_stop, 0);
    atomic_store(&g_drain_stop, 0);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);   /* the job's signals are not ours to take */
    rc = pthread_create(&g_drain_thr, NULL, drain_main, NULL) == 0 ? 0 : -1;
    if (rc == 0 && pthread_create(&g_thr, NULL, writer_main, NULL) != 0) {
      atomic_store(&g_drain_stop, 1);
      pthread_join(g_drain_thr, NULL);
      rc = -1;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0) g_running = 1;
  }
  pthread_mutex_unlock(&g_wmu);
  return rc;
}

static void stop_locked(void) {
  if (!g_running) return;
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += 2;
  atomic_store(&g_drain_stop, 1);         /* first the drain (the last records), then the format */
  if (pthread_timedjoin_np(g_drain_thr, NULL, &dl) != 0) pthread_detach(g_drain_thr);
  atomic_store(&g_stop, 1);
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += 30;
  if (pthread_timedjoin_np(g_thr, NULL, &dl) != 0) {
    cl_log(CL_LOG_WARN, "the writer did not finish its backlog within 30 s; the trace ends early");
    pthread_detach(g_thr);
  }
  g_running = 0;
}

void cl_writer_stop(void) {
  pthread_mutex_lock(&g_wmu);
  stop_locked();
  pthread_mutex_unlock(&g_wmu);
}

static void write_summary(void) {
  if (cl_cfg.summary == CL_SUMMARY_OFF || !g_sum) return;
  ring_totals rt;
  ring_sum(&rt);
  cl_asm_stats as;
  cl_asm_get_stats(g_asm, &as);
  char path[1500];
  snprintf(path, sizeof path, "%s.summary.txt", g_base);
  FILE *f = g_file ? fopen(path, "wx") : NULL;
  char prefix[64];
  snprintf(prefix, sizeof prefix, "commlens[rank %d] ", cl_proc.rank);
  for (int pass = 0; pass < 2; pass++) {
    FILE *o = pass == 0 ? f : (cl_cfg.summary == CL_SUMMARY_PRINT ? stderr : NULL);
    if (!o) continue;
    const char *pre = pass == 0 ? "" : prefix;
    fprintf(o, "%scommlens %s, ABI v%d, %llu events, %llu dropped, hot path %llu ns/call (%.3f%% of wall time)\n",
            pre, COMMLENS_VERSION, cl_proc.abi, (unsigned long long)as.records,
            (unsigned long long)(rt.dropped + as.writer_drops),
            (unsigned long long)(rt.nsampled ? rt.sampled_ns / rt.nsampled : 0),
            100.0 * (double)rt.calls * (double)(rt.nsampled ? rt.sampled_ns / rt.nsampled : 0) /
                (double)(cl_now() - cl_proc.start_ns + 1));
    cl_summary_print(g_sum, o, pre);
    if (g_cupti) {
      cl_sb ex = {0};
      cl_asm_exposure_json(g_asm, &ex);
      fprintf(o, "%sexposure (JSON): %s\n", pre, ex.p ? ex.p : "null");
      sb_free(&ex);
    }
    if (g_file) fprintf(o, "%strace: %s\n", pre, g_path);
  }
  if (f) fclose(f);
  snprintf(path, sizeof path, "%s.summary.json", g_base);
  f = g_file ? fopen(path, "wx") : NULL;
  if (f) {
    fprintf(f, "{\"rank\":%d,\"abi\":%d,\"events\":%llu,\"dropped\":%llu,\"collectives\":", cl_proc.rank,
            cl_proc.abi, (unsigned long long)as.records, (unsigned long long)(rt.dropped + as.writer_drops));
    cl_summary_json(g_sum, f);
    fprintf(f, "}\n");
    fclose(f);
  }
}

void cl_writer_finish(void) {
  pthread_mutex_lock(&g_wmu);
  if (g_setup && !g_finished) {
    stop_locked();
    g_finished = 1;
    if (g_asm) {                          /* the last GPU records, then every exposure result */
      drain_cupti(1);
      cl_asm_gpu_advance(g_asm, cl_now(), 1);
      cl_asm_tick(g_asm, cl_now(), 1);
    }
    if (g_cupti) cl_cupti_stop();
    if (g_ct) {
      cl_sb *body = ct_body(g_ct);
      if (g_file && !cl_tfile_failed(g_file)) {
        build_tail(1);
        if (cl_tfile_flush(g_file, body->p, body->len, g_tail.p, g_tail.len) != 0)
          cl_log(CL_LOG_WARN, "writing the end of the trace %s failed: %s", g_path, strerror(cl_tfile_failed(g_file)));
      }
      sb_reset(body);
      write_summary();
    }
    cl_recorder_close();
    cl_tfile_close(g_file);
    g_file = NULL;
    cl_stage_free(g_stage);
    g_stage = NULL;
  }
  pthread_mutex_unlock(&g_wmu);
}

void cl_writer_after_fork_child(void) {
  /* The parent's thread does not exist here; its file and buffers are the parent's. */
  pthread_mutex_init(&g_wmu, NULL);
  g_running = 0;
  g_out_ok = 0;
  g_setup = 0;
  g_finished = 0;
  g_file = NULL;       /* the inherited descriptor stays open, unused (closing could race the parent) */
  g_ct = NULL;
  g_asm = NULL;
  g_sum = NULL;
  g_cupti = 0;
  g_cupti_rec = 0;
  g_stage = NULL;
  memset(&g_tail, 0, sizeof g_tail);
}
