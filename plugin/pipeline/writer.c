/* writer.c: the lifecycle of the output side of one process: sets up the run (Chrome-trace
 * body, summary, CUPTI and its join, assembler, staging, output files), starts and stops the
 * drain and format threads, and at exit writes the final tail and the summary. It owns every
 * object of the run and lends them to the threads; a failure to write disables profiling with
 * one message, it never stops the job. */
#include "plugin/pipeline/writer.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/log.h"
#include "plugin/capture/gate.h"
#include "plugin/capture/ring.h"
#include "plugin/gpu/cupti.h"
#include "plugin/output/rank_output.h"
#include "exporters/prom.h"
#include "plugin/pipeline/drain.h"
#include "plugin/pipeline/flight.h"
#include "plugin/pipeline/format.h"
#include "plugin/pipeline/self_stats.h"
#include "plugin/output/identity.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DRAIN_STOP_MS 10000   /* the drain only copies, but a loaded machine can starve it for seconds */

static pthread_mutex_t g_wmu = PTHREAD_MUTEX_INITIALIZER;
static int g_running, g_setup, g_finished, g_out_ok;
static int g_lent;          /* the format thread outlived its stop: the run's state is still its */
static int g_stage_lent;    /* the drain thread did: staging is still its (never freed) */
static int g_wrote;         /* some participant's trace file was written */
static cl_format_deps g_run;       /* stage, assembler, participants, GPU join: lent to the threads */
static cl_sb g_tail;
static uint64_t g_prom_last;  /* when the live metrics were last written */
static int g_prom_off;        /* writing them failed once: not tried again */

static void disable_output(const char *what, const char *path, int err) {
  cl_log_once("output", CL_LOG_WARN, "%s %s: %s; profiling is off for the rest of this process "
              "(the job is not affected%s)", what, path, strerror(err),
              g_wrote ? "; the files written end at their last complete flush" : "");
  cl_disable();
}

/* ---- flushes ---- */
/* A participant's file is made at the first flush that has it, so that its world rank is
 * settled from every communicator registered by then (a process driving several GPUs
 * registers them together). 0, or -1 when output is off (told once). */
static int open_file(cl_part *p) {
  if (p->out_state) return p->out_state > 0 ? 0 : -1;
  cl_parts_settle_rank(g_run.parts, p);
  cl_out_who w = {.rank = p->rank, .dev = p->dev};
  snprintf(w.rank_source, sizeof w.rank_source, "%s", p->rank_source);
  cl_out_name(&p->out, cl_cfg.dir, cl_cfg.gzip, &w);
  const char *what, *where = cl_cfg.dir;
  int trace = (cl_cfg.output & CL_OUT_TRACE) != 0, digest = p->dg != NULL;
  if ((trace && cl_out_create(&p->out, cl_cfg.dir, cl_cfg.gzip, &what, &where) != 0) ||
      (digest && (cl_out_prepare(cl_cfg.dir, &what) != 0 || (where = p->out.dpath, cl_out_create_digest(&p->out, &what)) != 0))) {
    int err = errno;
    p->out_state = -1;
    if (digest && p->out.dfd_open) unlink(p->out.dpath);   /* a digest without its header is no digest */
    disable_output(what, where, err);
    return -1;
  }
  p->out_state = 1;
  if (trace) cl_out_header(&p->out, p->ct);
  const char *path = trace ? p->out.path : p->out.dpath;
  if (p->dev >= 0) cl_log(CL_LOG_INFO, "writing the %s of rank %d (GPU %d, rank from %s) to %s%s%s", trace ? "trace" : "digest", p->rank, p->dev, p->rank_source, path, trace && digest ? " and " : "", trace && digest ? p->out.dpath : "");
  else cl_log(CL_LOG_INFO, "writing the %s of rank %d (rank from %s) to %s%s%s", trace ? "trace" : "digest", p->rank, p->rank_source, path, trace && digest ? " and " : "", trace && digest ? p->out.dpath : "");
  return 0;
}

/* The digest's new blocks: the rows since the last flush, and the stats object at the end and
 * every DG_STATS_EVERY_NS (its drop counts reach the file within that, or at exit). 0 or errno. */
#define DG_STATS_EVERY_NS 30000000000ull
static int flush_digest(cl_part *p, int final) {
  static cl_dg_buf buf;   /* format thread (or the exit path once it stopped): one at a time */
  buf.len = 0;
  buf.oom = 0;
  cl_digest_take(p->dg, &buf);
  uint64_t now = cl_now();
  if (final || now - p->dg_stats_at >= DG_STATS_EVERY_NS) {
    p->dg_stats_at = now;
    cl_sb st = {0};
    cl_stats_object(&st, &g_run, p, final);
    if (!st.oom) cl_dg_block(&buf, CL_DG_STATS, (const uint8_t *)st.p, st.len);
    sb_free(&st);
  }
  int err = buf.len ? cl_out_append_digest(&p->out, buf.p, buf.len) : 0;
  if (buf.cap > (1u << 20)) { free(buf.p); buf = (cl_dg_buf){0}; }   /* keep no burst's buffer */
  return err;
}

/* COMMLENS_PROM: each participant's live metrics, every COMMLENS_PROM_S while the process runs;
 * its file is removed when the process ends (a finished process is not live), and its first
 * write removes what a killed predecessor of the same participant left (cl_prom_sweep). A
 * failure is said once and ends the metrics, never the trace. */
static unsigned char g_prom_written[CL_MAX_PARTS];   /* this process wrote the participant's file */

/* The participant's file, <COMMLENS_PROM>/commlens-r<rank>-<host>-<pid>[-g<gpu>].prom, into
 * path; its name before and after the pid into prefix and suffix (the sweep's pattern). */
static void prom_name(const cl_part *p, char *path, size_t n, char *prefix, size_t pn, char *suffix, size_t sn) {
  cl_rank_output o;
  cl_out_who w = {.rank = p->rank, .dev = p->dev};
  cl_out_name(&o, cl_cfg.prom, 0, &w);
  snprintf(path, n, "%s.prom", o.base);
  if (p->dev >= 0) snprintf(suffix, sn, "-g%d.prom", p->dev);
  else snprintf(suffix, sn, ".prom");
  const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  size_t keep = strlen(name) - strlen(suffix) - (size_t)snprintf(NULL, 0, "%d", (int)cl_proc.pid);
  snprintf(prefix, pn, "%.*s", (int)keep, name);
}

static void write_prom(int final) {
  uint64_t now = cl_now();
  if (!cl_cfg.prom[0] || g_prom_off || (!final && now - g_prom_last < (uint64_t)cl_cfg.prom_s * 1000000000u)) return;
  g_prom_last = now;
  if (mkdir(cl_cfg.prom, 0755) != 0 && errno != EEXIST) {
    g_prom_off = 1;
    cl_log(CL_LOG_WARN, "COMMLENS_PROM: cannot create %s: %s; no live metrics", cl_cfg.prom, strerror(errno));
    return;
  }
  for (size_t i = 0; i < cl_parts_count(g_run.parts); i++) {
    cl_part *p = cl_parts_at(g_run.parts, i);
    if (p->out_state != 1) continue;
    char path[2400], prefix[1500], suffix[64];
    prom_name(p, path, sizeof path, prefix, sizeof prefix, suffix, sizeof suffix);
    unsigned char *written = &g_prom_written[p->index < CL_MAX_PARTS ? p->index : CL_MAX_PARTS - 1];
    if (final) {   /* the process ends: its metrics stop being served */
      if (*written) cl_prom_remove(path);
      continue;
    }
    if (!*written) {
      int k = cl_prom_sweep(cl_cfg.prom, prefix, suffix, (int)cl_proc.pid);
      if (k) cl_log(CL_LOG_INFO, "COMMLENS_PROM: removed %d metrics file(s) of rank %d left by processes no longer running",
                    k, p->rank);
    }
    cl_run_stats s;
    cl_stats_gather(&s, &g_run, p);
    cl_prom_rank r = {.rank = p->rank, .gpu = p->dev, .pid = (int)cl_proc.pid, .host = cl_proc.host, .job = cl_proc.job,
                      .version = COMMLENS_VERSION, .abi = cl_proc.abi, .events = s.events,
                      .records = s.records, .dropped = s.dropped, .calls = s.calls,
                      .per_call_ns = s.per_call_ns, .colls = s.colls_done, .colls_timed = s.colls_timed,
                      .overhead_ratio = cl_stats_overhead_pct(&s) / 100.0, .comms = &p->prom};
    if (g_run.gj) {
      cl_gj_counts n;
      cl_gj_totals(g_run.gj, p, &n);
      r.has_exposure = 1;
      r.comm_ns = n.t.comm_ns;
      r.exposed_ns = n.t.exposed_ns;
    }
    int err = cl_prom_write(path, &r, p->sum);
    if (err) {
      g_prom_off = 1;
      cl_log(CL_LOG_WARN, "COMMLENS_PROM: cannot write %s: %s; no live metrics", path, strerror(err));
      return;
    }
    *written = 1;
  }
}

static void flush_file(int final) {
  if (!g_out_ok || !g_run.parts) return;
  cl_parts_discover(g_run.parts);
  for (size_t i = 0; i < cl_parts_count(g_run.parts); i++) {
    cl_part *p = cl_parts_at(g_run.parts, i);
    if (open_file(p) != 0) {
      if (p->out_state < 0) sb_reset(ct_body(p->ct));   /* never written: keep no backlog */
      continue;
    }
    if (p->dg) {
      int err = flush_digest(p, final);
      if (!err) g_wrote = 1;
      if (err && !final) { disable_output("writing the digest failed:", p->out.dpath, err); return; }
      if (err && final) cl_log(CL_LOG_WARN, "writing the end of the digest %s failed: %s", p->out.dpath, strerror(err));
    }
    if (!p->trace) continue;
    if (!cl_tfile_failed(p->out.file)) cl_stats_tail(&g_tail, &g_run, p, final);
    int err = cl_out_flush(&p->out, p->ct, &g_tail);
    if (!err) g_wrote = 1;
    if (err && !final) disable_output("writing the trace failed:", p->out.path, err);
    if (err && final) cl_log(CL_LOG_WARN, "writing the end of the trace %s failed: %s", p->out.path, strerror(err));
  }
  write_prom(final);
}

/* ---- setup ---- */
static int setup(void) {
  cl_parts_deps pd = {.comm_count = cl_comm_count, .comm_lookup = cl_comm_lookup,
                      .env_rank = cl_proc.env_rank, .env_source = cl_proc.rank_source,
                      .forced_rank = cl_cfg.rank, .os_pid = (int)cl_proc.pid,
                      .epoch_offset_ns = cl_proc.realtime_offset_ns};
  g_run.parts = cl_parts_new(&pd);
  g_run.flush = flush_file;
  if (!g_run.parts) { cl_log(CL_LOG_WARN, "out of memory setting up the writer"); return -1; }
  int cupti = cl_cfg.cupti && cl_cupti_start() == 0;
  /* libcupti was just loaded: its static destructors run at exit before any handler that was
   * registered earlier (atexit runs last-in first-out), and calling CUPTI after them crashes
   * (seen on CUPTI 13: cuptiActivityDisable from the exit path). Registering the (idempotent)
   * finish again here makes it run while CUPTI is still whole. */
  if (cupti) atexit(cl_writer_finish);
  if (cupti) g_run.gj = cl_gj_new(g_run.parts, !cl_cupti_launch_records());
  if (g_run.gj) cl_gj_draw_compute(g_run.gj, cl_cfg.cupti == CL_CUPTI_FULL);
  if (cupti && !g_run.gj) cl_cupti_stop();
  static const cl_asm_deps deps = {cl_comm_lookup, cl_comm_learn, cl_ring_os_tid};
  g_run.asm_ = cl_asm_new(g_run.parts, g_run.gj, &deps);
  cl_parts_discover(g_run.parts);
  if (!g_run.asm_ || !cl_parts_count(g_run.parts)) { cl_log(CL_LOG_WARN, "out of memory setting up the writer"); return -1; }
  if (g_run.gj) {
    uint64_t now = cl_now();
    cl_gj_start(g_run.gj, now);
    g_run.cupti_rec = cl_cupti_recording();
    /* another tool holds CUPTI from the start: an empty coverage makes what follows "lost"
     * until the format thread sees CUPTI recording (gpu_join.h cl_gj_lost) */
    if (!g_run.cupti_rec) cl_gj_stop(g_run.gj, now);
  }
  /* a directory that cannot be made is said at once; the files come at the first flush */
  const char *what;
  if (cl_out_prepare(cl_cfg.dir, &what) != 0) {
    disable_output(what, cl_cfg.dir, errno);
    return 0;
  }
  g_run.stage = cl_stage_new(cl_cfg.buffer_bytes - cl_cfg.rings_bytes, cl_cfg.dir);
  if (!g_run.stage) { cl_log(CL_LOG_WARN, "out of memory setting up the writer"); return -1; }
  cl_flight_setup();
  g_out_ok = 1;
  return 0;
}

int cl_writer_start(void) {
  pthread_mutex_lock(&g_wmu);
  int rc = 0;
  if (!g_setup) { g_setup = 1; g_finished = 0; rc = setup(); }
  if (rc == 0 && g_out_ok && !g_running && !g_lent && !g_stage_lent) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);   /* the job's signals are not ours to take */
    rc = cl_drain_start(g_run.stage);
    if (rc == 0 && cl_format_start(&g_run) != 0) {
      cl_drain_stop(DRAIN_STOP_MS);
      rc = -1;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0) g_running = 1;
  }
  pthread_mutex_unlock(&g_wmu);
  return rc;
}

/* One owner at every moment: while the threads run, the run's state is theirs (the drain
 * appends to staging, the format thread owns the assembler, the trace body and the file);
 * after a joined stop it is the caller's. A thread that does not end in time keeps what it
 * owns: nothing here touches that again, and no new threads start on it. */
static void stop_locked(void) {
  if (!g_running) return;
  /* Both threads together get COMMLENS_EXIT_WAIT_S (the drain at most 10 s of it): a thread
   * stuck in a write or in CUPTI never holds the job's exit past the scheduler's kill grace. */
  int wait_ms = cl_cfg.exit_wait_ms, drain_ms = wait_ms < DRAIN_STOP_MS ? wait_ms : DRAIN_STOP_MS;
  uint64_t t0 = cl_now();
  if (cl_drain_stop(drain_ms) != 0) {  /* first the drain (the last records), then the format */
    cl_log(CL_LOG_WARN, "the drain thread did not stop within %.1f s; events recorded after this may be lost", drain_ms / 1e3);
    g_stage_lent = 1;
  }
  int64_t left_ms = wait_ms - (int64_t)((cl_now() - t0) / 1000000u);
  if (cl_format_stop(left_ms > 0 ? (int)left_ms : 0) != 0) {
    cl_log(CL_LOG_WARN, "the writer thread did not stop within %.1f s (COMMLENS_EXIT_WAIT_S); the trace ends early", wait_ms / 1e3);
    g_lent = 1;
  } else if (g_out_ok) {
    g_prom_last = 0;                      /* the live metrics as they stand: nothing changes them now */
    cl_format_backlog(&g_run);            /* joined: the backlog is ours, at the job's priority */
  }
  g_running = 0;
}

void cl_writer_stop(void) {
  pthread_mutex_lock(&g_wmu);
  stop_locked();
  pthread_mutex_unlock(&g_wmu);
}

/* At exit: each participant's summary files (and its table on stderr with COMMLENS_SUMMARY=print);
 * then, from the process that holds world rank 0 and made its files, the job's one line. */
static void write_summaries(void) {
  int pointer = 0;
  for (size_t i = 0; cl_cfg.summary != CL_SUMMARY_OFF && i < cl_parts_count(g_run.parts); i++) {
    cl_part *p = cl_parts_at(g_run.parts, i);
    if (p->out_state == 0) continue;      /* output was off before its file was made */
    cl_run_stats s;
    cl_stats_gather(&s, &g_run, p);
    cl_sb ex = {0};
    if (g_run.gj) cl_asm_exposure_json(g_run.asm_, p, &ex);
    char head[512], gpu[CL_GPU_LINE_MAX];
    cl_stats_summary_head(&s, head, sizeof head);
    cl_stats_gpu_line(&g_run, p, &s, gpu, sizeof gpu);
    cl_out_summary(&p->out, head, s.records, s.dropped, p->sum, gpu, g_run.gj ? (ex.p ? ex.p : "null") : NULL,
                   cl_cfg.summary == CL_SUMMARY_PRINT);
    sb_free(&ex);
    pointer |= p->rank == 0 && p->out_state > 0;
  }
  if (pointer && (cl_cfg.summary == CL_SUMMARY_LINE || cl_cfg.summary == CL_SUMMARY_PRINT)) cl_out_pointer(cl_cfg.dir);
}

void cl_writer_finish(void) {
  pthread_mutex_lock(&g_wmu);
  if (g_setup && !g_finished) {
    stop_locked();
    g_finished = 1;
    if (g_lent) {   /* a writer thread still holds the run: the trace ends at its last flush */
      cl_log_once("writer-lent", CL_LOG_WARN, "a writer thread did not stop in time; the files in %s "
                  "end at their last complete flush and no summary is written", cl_cfg.dir);
      pthread_mutex_unlock(&g_wmu);
      return;
    }
    if (g_run.asm_) cl_format_final(&g_run);   /* the last GPU records, then every exposure result */
    if (g_run.gj) cl_cupti_stop();
    if (g_run.asm_) {
      flush_file(1);
      write_summaries();
    }
    for (size_t i = 0; i < cl_parts_count(g_run.parts); i++) cl_out_close(&cl_parts_at(g_run.parts, i)->out);
    if (!g_stage_lent) cl_stage_free(g_run.stage);
    g_run.stage = NULL;
    cl_flight_free();   /* only the format thread used it, and it has stopped (not lent) */
  }
  pthread_mutex_unlock(&g_wmu);
}

void cl_writer_after_fork_child(void) {
  /* The parent's threads do not exist here; its file and buffers are the parent's. */
  pthread_mutex_init(&g_wmu, NULL);
  g_running = 0;
  g_lent = 0;
  g_stage_lent = 0;
  g_out_ok = 0;
  g_setup = 0;
  g_finished = 0;
  g_wrote = 0;
  g_prom_off = 0;
  g_prom_last = 0;
  memset(g_prom_written, 0, sizeof g_prom_written);   /* the parent's files are the parent's */
  cl_flight_after_fork_child();
  cl_drain_after_fork_child();
  /* the inherited descriptors stay open, unused (closing could race the parent) */
  memset(&g_run, 0, sizeof g_run);
  memset(&g_tail, 0, sizeof g_tail);
}
