/* main.c: the `commlens` command line: each subcommand's option table (opts.h: the parser
 * and --help read the same table), option checks, and dispatch to report/merge/env.
 * Exit codes: 0 = something useful was produced, 2 = nothing (no usable input, bad usage). */
#include "tools/commlens/opts.h"
#include "tools/commlens/merge/merge.h"
#include "tools/commlens/render/html.h"
#include "tools/commlens/render/report.h"
#include "tools/commlens/analyse/clock_align.h"
#include "tools/commlens/base/par.h"
#include "common/config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>

enum { O_JSON = CL_OPT_FIRST_FREE, O_TOP, O_THREADS, O_HTML, O_OUT, O_FORMAT, O_RANKS, O_COMM, O_WINDOW, O_STEPS };

#define WINDOW_MAX_MS 1e10      /* 115 days: as ns it fits int64 with any timestamp's room */
#define STEPS_MAX (1L << 53)
#define THREADS_HELP "threads that read the files and share the passes over the ranks (default: the CPUs it may use)"
#define DIRS_EPILOG \
  "DIR is a directory of per-rank commlens traces (*.trace.json[.gz]) or a trace file.\n" \
  "Exit status: 0 when output was produced, 2 when nothing usable was found or on bad usage.\n"

static const cl_opt report_opts[] = {
  { O_JSON, "json", 0, NULL, "print every row as one JSON object instead of the text tables" },
  { O_TOP, "top", 0, "N", "rows per text table (default 5)" },
  { O_THREADS, "threads", 0, "N", THREADS_HELP },
  { O_HTML, "html", 0, "FILE", "also write the report as one self-contained HTML page" },
  CL_OPT_HELP_ENTRY,
  { 0, NULL, 0, NULL, NULL }
};
static const cl_opt merge_opts[] = {
  { O_OUT, "output", 'o', "OUT", "the merged trace (required); OUT.gz is gzip-compressed" },
  { O_FORMAT, "format", 'f', "FMT", "json (Chrome trace), pftrace (Perfetto protobuf) or csv (a row per "
                                   "GPU-timed collective per rank, for query engines); default: pftrace "
                                   "when OUT ends in .pftrace[.gz], csv for .csv[.gz], else json" },
  { O_RANKS, "ranks", 0, "LIST", "only these ranks, e.g. 0-3,7" },
  { O_COMM, "comm", 0, "COMM", "only this communicator: its hash (0x...) or name" },
  { O_WINDOW, "window", 0, "START_MS:END_MS", "only events overlapping this window (ms after the first event)" },
  { O_STEPS, "steps", 0, "A:B", "only steps A to B (NVTX 'step N' ranges, else collective seq numbers)" },
  { O_THREADS, "threads", 0, "N", THREADS_HELP },
  CL_OPT_HELP_ENTRY,
  { 0, NULL, 0, NULL, NULL }
};
static const cl_opt env_opts[] = { CL_OPT_HELP_ENTRY, { 0, NULL, 0, NULL, NULL } };

static const cl_cmd cmd_report = {
  "report", "DIR...", "who made the others wait: slow ranks and channels, exposure, bandwidth, clocks",
  report_opts, DIRS_EPILOG };
static const cl_cmd cmd_merge = {
  "merge", "DIR... -o OUT", "one Perfetto trace of every rank on one clock, collectives linked across ranks",
  merge_opts, DIRS_EPILOG };
static const cl_cmd cmd_env = {
  "env", "", "the plugin's COMMLENS_* variables: a line naming the version, then name, default and meaning",
  env_opts, NULL };
static const cl_cmd *const cmds[] = { &cmd_report, &cmd_merge, &cmd_env };
#define NCMDS (int)(sizeof cmds / sizeof cmds[0])

static void usage(FILE *o) {
  char b[NCMDS + 1][80]; int w = 0;
  for (int i = 0; i <= NCMDS; i++) {
    int l = i < NCMDS ? snprintf(b[i], sizeof b[i], "commlens %s [OPTIONS]%s%s", cmds[i]->name,
                                 cmds[i]->operands[0] ? " " : "", cmds[i]->operands)
                      : snprintf(b[i], sizeof b[i], "commlens --version");
    if (l > w) w = l;
  }
  fprintf(o, "usage:\n");
  for (int i = 0; i <= NCMDS; i++)
    fprintf(o, "  %-*s  %s\n", w, b[i], i < NCMDS ? cmds[i]->summary : "the version of commlens and of its plugin");
  fprintf(o, "'commlens COMMAND --help' lists a command's options.\n" DIRS_EPILOG);
}

static void print_line(const char *line, void *arg) { fprintf((FILE *)arg, "%s\n", line); }

/* What `report` was asked for. */
typedef struct {
  int json, top;
  const char *html;   /* --html FILE: where the HTML writer puts its page, from the same analysed job as the text */
} report_opts_t;

typedef struct { int threads; CL_VEC(char *) dirs; } common_opts;

/* Parses one subcommand's argv. Returns 0, 1 after --help (exit 0), or 2 on bad usage. */
static int parse(const cl_cmd *cmd, int argc, char **argv, common_opts *co, report_opts_t *ro, cl_merge_opts *mo,
                 const char **comm_arg) {
  cl_opts p; cl_opts_init(&p, cmd, argc, argv);
  int rc = 0; const char *v; long n;
  for (int id; rc == 0 && (id = cl_opts_next(&p, &v)) != CL_OPTS_END;) {
    switch (id) {
    case CL_OPTS_BAD: rc = 2; break;
    case CL_OPTS_OPERAND: CL_PUSH(co->dirs, (char *)v); break;
    case CL_OPT_HELP: cl_opts_help(cmd, stdout); rc = 1; break;
    case O_JSON: ro->json = 1; break;
    case O_TOP: if (cl_opts_int(cmd, "--top", v, 1, 1000000, &n)) rc = 2; else ro->top = (int)n; break;
    case O_THREADS: if (cl_opts_int(cmd, "--threads", v, 1, 1024, &n)) rc = 2; else co->threads = (int)n; break;
    case O_HTML: ro->html = v; break;
    case O_OUT: mo->out = v; break;
    case O_FORMAT:
      if (!strcmp(v, "json")) mo->format = CL_MERGE_JSON;
      else if (!strcmp(v, "pftrace")) mo->format = CL_MERGE_PFTRACE;
      else if (!strcmp(v, "csv")) mo->format = CL_MERGE_CSV;
      else { cl_opts_usage_error(cmd, "--format '%s': expected json, pftrace or csv", v); rc = 2; }
      break;
    case O_RANKS:
      free(mo->ranks); mo->ranks = NULL;
      if (cl_parse_ranks(v, &mo->ranks)) { cl_opts_usage_error(cmd, "--ranks '%s': expected a list like 0-3,7", v); rc = 2; }
      break;
    case O_COMM: *comm_arg = v; break;
    case O_WINDOW: {   /* START_MS:END_MS, each finite and in [0, WINDOW_MAX_MS] (the window becomes int64 ns) */
      char *e, *e2;
      mo->w_start_ms = strtod(v, &e);
      int ok = e != v && *e == ':' && (mo->w_end_ms = strtod(e + 1, &e2), e2 != e + 1 && !*e2) &&
               mo->w_start_ms >= 0 && mo->w_end_ms <= WINDOW_MAX_MS && mo->w_end_ms >= mo->w_start_ms;   /* NaN fails */
      if (!ok) {
        cl_opts_usage_error(cmd, "--window '%s': expected START_MS:END_MS, numbers from 0 to %.0f with START <= END", v,
                            WINDOW_MAX_MS);
        rc = 2;
      }
      mo->has_window = 1;
      break;
    }
    case O_STEPS: {   /* A:B, each in [0, STEPS_MAX] (B + 1 is looked up) */
      char *e, *e2; errno = 0;
      mo->step_a = strtol(v, &e, 10);
      int ok = e != v && *e == ':' && (mo->step_b = strtol(e + 1, &e2, 10), e2 != e + 1 && !*e2) && !errno &&
               mo->step_a >= 0 && mo->step_b <= STEPS_MAX && mo->step_b >= mo->step_a;
      if (!ok) { cl_opts_usage_error(cmd, "--steps '%s': expected A:B, integers from 0 to %ld with A <= B", v, STEPS_MAX); rc = 2; }
      mo->has_steps = 1;
      break;
    }
    }
  }
  cl_opts_free(&p);
  return rc;
}

/* --comm: a number (0x... hash) or a communicator name seen in the traces. */
static int resolve_comm(const char *s, uint64_t *out) {
  char *e; unsigned long long v = strtoull(s, &e, 0);
  if (*e == 0 && e != s) { *out = v; return 0; }
  return cl_comm_by_name(s, out);
}

/* The merge format an output name asks for when --format is not given. */
static int format_of(const char *out) {
  size_t n = strlen(out);
  if (n > 3 && !strcmp(out + n - 3, ".gz")) n -= 3;
  if (n >= 4 && !strncmp(out + n - 4, ".csv", 4)) return CL_MERGE_CSV;
  return n >= 8 && !strncmp(out + n - 8, ".pftrace", 8) ? CL_MERGE_PFTRACE : CL_MERGE_JSON;
}

int main(int argc, char **argv) {
  /* Messages name files and carry strings from traces: what reaches a terminal is shown,
   * never acted on (cl_term_stream). */
  FILE *te = cl_term_stream(STDERR_FILENO);
  if (te) { setvbuf(te, NULL, _IONBF, 0); stderr = te; }
  if (argc < 2) { usage(stderr); return 2; }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) { usage(stdout); return 0; }
  if (!strcmp(cmd, "--version")) { printf("commlens %s\n", COMMLENS_VERSION); return 0; }
  const cl_cmd *c = NULL;
  for (int i = 0; i < NCMDS; i++) if (!strcmp(cmd, cmds[i]->name)) c = cmds[i];
  if (!c) {
    fprintf(stderr, cmd[0] == '-' ? "commlens: unknown option '%s'\n" : "commlens: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
  }
  common_opts co = { 0, {0} };   /* threads: 0 until --threads says; then cl_par_threads */
  report_opts_t ro = { 0, 5, NULL };
  cl_merge_opts mo; memset(&mo, 0, sizeof mo); mo.format = -1;
  const char *comm_arg = NULL;
  int rc = 2, prc = parse(c, argc - 1, argv + 1, &co, &ro, &mo, &comm_arg);
  co.threads = cl_par_threads(co.threads);
  if (prc) rc = prc == 1 ? 0 : 2;
  else if (c == &cmd_env) {
    if (co.dirs.n) cl_opts_usage_error(c, "takes no operands ('%s')", co.dirs.a[0]);
    else {
      printf("# commlens %s: COMMLENS_* variables of this plugin version, one per line: name, default, meaning\n",
             COMMLENS_VERSION);
      cl_config_print_table(print_line, stdout);
      rc = 0;
    }
  } else if (!co.dirs.n) cl_opts_usage_error(c, "no trace directory given");
  else if (c == &cmd_merge && !mo.out) cl_opts_usage_error(c, "needs -o OUT");
  else if (mo.has_window && mo.has_steps) cl_opts_usage_error(c, "give --window or --steps, not both");
  else {
    cl_job job;
    if (cl_job_load(&job, co.dirs.a, (int)co.dirs.n, co.threads) == 0)
      fprintf(stderr, "commlens: nothing to %s: no usable per-rank trace found\n", c->name);
    else {
      cl_job_instances(&job);
      cl_clock_model cm;                  /* one clock per host boot; host pairs from causality */
      cl_clock_align(&job, &cm);
      if (c == &cmd_report) {
        cl_analysis an;                   /* read -> model (above) -> analyse -> render */
        cl_analyse(&job, &cm, &an);
        FILE *to = ro.json ? NULL : cl_term_stream(STDOUT_FILENO);   /* JSON escapes its own */
        if (to) fflush(stdout);
        if (ro.json) cl_render_json(&job, &an, stdout); else cl_render_text(&job, &an, ro.top, to ? to : stdout);
        rc = 0;
        if (to && fclose(to) != 0) rc = 2;
        if (rc == 0 && ro.html && cl_report_html(&job, &an, ro.html) != 0) rc = 2;   /* the page, from the same analysis */
        cl_analysis_free(&an);
      } else if (comm_arg && resolve_comm(comm_arg, &mo.comm) != 0) {
        fprintf(stderr, "commlens: --comm '%s': no communicator with that hash or name in the traces\n", comm_arg);
      } else {
        mo.has_comm = comm_arg != NULL;
        if (mo.format < 0) mo.format = format_of(mo.out);
        mo.threads = co.threads;
        rc = cl_merge(&job, &mo) == 0 ? 0 : 2;
      }
      cl_cm_free(&cm);
    }
    cl_job_free(&job);
  }
  free(co.dirs.a); free(mo.ranks);
  return rc;
}
