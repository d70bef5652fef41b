/* writer.c: the lifecycle of the output side of one process: sets up the run (Chrome-trace
 * body, summary, CUPTI and its join, assembler, staging, output files), starts and stops the
 * drain and format threads, and at exit writes the final tail and the summary. It owns every
 * object of the run and lends them to the threads; a failure to write disables profiling with
 * one message, it never stops the job. */
#include "plugin/pipeline/writer.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/log.h"
#include "plugin/abi/recorder.h"
#include "plugin/capture/gate.h"
#include "plugin/capture/ring.h"
#include "plugin/gpu/cupti.h"
#include "plugin/output/rank_output.h"
#include "plugin/pipeline/drain.h"
#include "plugin/pipeline/format.h"
#include "plugin/process.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define DRAIN_STOP_S 10    /* the drain only copies, but a loaded machine can starve it for seconds */
#define FORMAT_STOP_S 30   /* formatting a large backlog takes a while; never forever */

static pthread_mutex_t g_wmu = PTHREAD_MUTEX_INITIALIZER;
static int g_running, g_setup, g_finished, g_out_ok;
static int g_lent;          /* the format thread outlived its stop: the run's state is still its */
static int g_stage_lent;    /* the drain thread did: staging is still its (never freed) */
static cl_summary *g_sum;
static cl_rank_output g_out;
static cl_format_deps g_run;       /* stage, assembler, trace body, GPU join: lent to the threads */
static cl_sb g_tail;

static void disable_output(const char *what, const char *path, int err) {
  cl_log_once("output", CL_LOG_WARN, "%s %s: %s; profiling is off for the rest of this process "
              "(the job is not affected%s)", what, path, strerror(err),
              g_out.file ? "; the trace ends at its last complete flush" : "");
  cl_disable();
}

/* ---- stats and flushes ---- */
static void gather(cl_run_stats *s) {
  cl_ring_totals rt;
  cl_rings_totals(&rt);
  cl_asm_stats as;
  cl_asm_get_stats(g_run.asm_, &as);
  uint64_t staging_dropped = g_run.stage ? cl_stage_dropped(g_run.stage) : 0;
  memset(s, 0, sizeof *s);
  s->events = ct_events(g_run.ct);
  s->records = as.records;
  s->dropped_ring = rt.dropped;
  s->dropped_no_ring = rt.unclaimed;
  s->dropped_staging = staging_dropped;
  s->dropped = rt.dropped + rt.unclaimed + staging_dropped + as.writer_drops;
  s->stale = as.stale;
  s->foreign = as.foreign;
  s->orphans = as.orphans;
  s->open_now = as.open_now;
  s->spilled = g_run.stage ? cl_stage_spilled(g_run.stage) : 0;
  s->colls_done = as.colls_done;
  s->colls_timed = as.colls_timed;
  s->implausible_gpu = as.implausible_gpu;
  s->calls = rt.calls;
  s->per_call_ns = rt.nsampled ? rt.sampled_ns / rt.nsampled : 0;
  s->elapsed_ns = cl_now() - cl_proc.start_ns;
}

static void build_tail(int final) {
  cl_run_stats s;
  gather(&s);
  cl_sb offsets = {0}, cupti = {0}, expo = {0};
  cl_asm_offsets_json(g_run.asm_, &offsets);
  cl_cupti_stats cs;
  cl_cupti_get_stats(&cs);
  int cupti_on = g_run.gj != NULL;
  sb_printf(&cupti, "{\"active\":%s,\"records\":%llu,\"dropped\":%llu,\"status\":",
            cupti_on && cs.active ? "true" : "false", (unsigned long long)cs.records, (unsigned long long)cs.dropped);
  sb_jstr(&cupti, cupti_on ? (cs.active ? "recording" : cs.status)
                           : (cl_cfg.cupti ? cs.status : "off (COMMLENS_CUPTI=on enables it)"));
  sb_puts(&cupti, "}");
  cl_asm_exposure_json(g_run.asm_, &expo);
  cl_out_tail(&g_tail, &s, final, offsets.p ? offsets.p : "[]", cupti.p ? cupti.p : "null", expo.p ? expo.p : "null");
  sb_free(&offsets); sb_free(&cupti); sb_free(&expo);
}

static void flush_file(int final) {
  if (g_out.file && !cl_tfile_failed(g_out.file)) build_tail(final);
  int err = cl_out_flush(&g_out, g_run.ct, &g_tail);
  if (err && !final) disable_output("writing the trace failed:", g_out.path, err);
  if (err && final) cl_log(CL_LOG_WARN, "writing the end of the trace %s failed: %s", g_out.path, strerror(err));
}

/* ---- setup ---- */
static int setup(void) {
  g_sum = cl_summary_new();
  g_run.ct = ct_new(cl_proc.rank, cl_proc.realtime_offset_ns);
  g_run.flush = flush_file;
  int cupti = cl_cfg.cupti && cl_cupti_start() == 0;
  /* libcupti was just loaded: its static destructors run at exit before any handler that was
   * registered earlier (atexit runs last-in first-out), and calling CUPTI after them crashes
   * (seen on CUPTI 13: cuptiActivityDisable from the exit path). Registering the (idempotent)
   * finish again here makes it run while CUPTI is still whole. */
  if (cupti) atexit(cl_writer_finish);
  if (cupti && g_run.ct) g_run.gj = cl_gj_new(g_run.ct);
  if (cupti && !g_run.gj) cl_cupti_stop();
  static const cl_asm_deps deps = {cl_comm_lookup, cl_comm_learn, cl_ring_os_tid};
  g_run.asm_ = g_run.ct && g_sum ? cl_asm_new(g_run.ct, g_sum, g_run.gj, &deps) : NULL;
  if (!g_run.asm_) { cl_log(CL_LOG_WARN, "out of memory setting up the writer"); return -1; }
  if (g_run.gj) { cl_gj_start(g_run.gj, cl_now()); g_run.cupti_rec = 1; }
  if (cl_cfg.record[0]) cl_recorder_open(cl_cfg.record, cl_proc.rank);
  cl_out_name(&g_out, cl_cfg.dir, cl_cfg.gzip);
  char spill[1500];
  snprintf(spill, sizeof spill, "%s.spill", g_out.base);
  const char *what, *where;
  if (cl_out_create(&g_out, cl_cfg.dir, cl_cfg.gzip, &what, &where) != 0) {
    disable_output(what, where, errno);
    return 0;
  }
  g_run.stage = cl_stage_new(cl_cfg.buffer_bytes / 4, spill);   /* the rest of the budget is rings */
  if (!g_run.stage) { cl_log(CL_LOG_WARN, "out of memory setting up the writer"); return -1; }
  cl_out_header(g_run.ct);
  cl_log(CL_LOG_INFO, "writing the trace of rank %d to %s", cl_proc.rank, g_out.path);
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
      cl_drain_stop(DRAIN_STOP_S);
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
  if (cl_drain_stop(DRAIN_STOP_S) != 0) {  /* first the drain (the last records), then the format */
    cl_log(CL_LOG_WARN, "the drain thread did not stop within %d s; events recorded after this may be lost", DRAIN_STOP_S);
    g_stage_lent = 1;
  }
  if (cl_format_stop(FORMAT_STOP_S) != 0) {
    cl_log(CL_LOG_WARN, "the writer did not finish its backlog within %d s; the trace ends early", FORMAT_STOP_S);
    g_lent = 1;
  }
  g_running = 0;
}

void cl_writer_stop(void) {
  pthread_mutex_lock(&g_wmu);
  stop_locked();
  pthread_mutex_unlock(&g_wmu);
}

void cl_writer_finish(void) {
  pthread_mutex_lock(&g_wmu);
  if (g_setup && !g_finished) {
    stop_locked();
    g_finished = 1;
    if (g_lent) {   /* a writer thread still holds the run: the trace ends at its last flush */
      cl_log_once("writer-lent", CL_LOG_WARN, "a writer thread did not stop in time; the trace %s "
                  "ends at its last complete flush and no summary is written", g_out.path);
      pthread_mutex_unlock(&g_wmu);
      return;
    }
    if (g_run.asm_) cl_format_final(&g_run);   /* the last GPU records, then every exposure result */
    if (g_run.gj) cl_cupti_stop();
    if (g_run.ct) {
      flush_file(1);
      if (cl_cfg.summary != CL_SUMMARY_OFF && g_sum) {
        cl_run_stats s;
        gather(&s);
        cl_sb ex = {0};
        if (g_run.gj) cl_asm_exposure_json(g_run.asm_, &ex);
        cl_out_summary(&g_out, &s, g_sum, g_run.gj ? (ex.p ? ex.p : "null") : NULL, cl_cfg.summary == CL_SUMMARY_PRINT);
        sb_free(&ex);
      }
    }
    cl_recorder_close();
    cl_out_close(&g_out);
    if (!g_stage_lent) cl_stage_free(g_run.stage);
    g_run.stage = NULL;
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
  g_out.file = NULL;   /* the inherited descriptor stays open, unused (closing could race the parent) */
  memset(&g_run, 0, sizeof g_run);
  g_sum = NULL;
  memset(&g_tail, 0, sizeof g_tail);
}
