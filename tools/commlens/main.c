/* main.c: the `commlens` command line: argument parsing and dispatch to report/merge.
 * Exit codes: 0 = something useful was produced, 2 = nothing (no usable input, bad usage). */
#include "html.h"
#include "report.h"
#include "common/config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *o) {
  fprintf(o,
    "usage: commlens report DIR... [--json] [--top N] [--threads N] [--html FILE]\n"
    "       commlens merge DIR... -o OUT[.gz] [--ranks 0-3,7] [--comm 0xHASH|NAME]\n"
    "                             [--window START_MS:END_MS | --steps A:B] [--threads N]\n"
    "       commlens env      (the plugin's COMMLENS_* variables: name, default, meaning)\n"
    "DIR is a directory of per-rank commlens traces (*.trace.json[.gz]) or trace files.\n"
    "Exit status: 0 when output was produced, 2 when nothing usable was found.\n");
}

static void print_line(const char *line, void *arg) { fprintf((FILE *)arg, "%s\n", line); }

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "env")) { cl_config_print_table(print_line, stdout); return 0; }
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) { usage(argc < 2 ? stderr : stdout); return argc < 2 ? 2 : 0; }
  const char *cmd = argv[1];
  int is_report = !strcmp(cmd, "report"), is_merge = !strcmp(cmd, "merge");
  if (!is_report && !is_merge) { fprintf(stderr, "commlens: unknown command '%s'\n", cmd); usage(stderr); return 2; }
  char **paths = calloc((size_t)argc, sizeof(char *)); int np = 0;
  int json = 0, top = 5, threads = 2;
  long nc = sysconf(_SC_NPROCESSORS_ONLN);
  if (nc > 0 && nc < threads) threads = (int)nc;
  cl_merge_opts mo; memset(&mo, 0, sizeof mo);
  const char *comm_arg = NULL, *html = NULL;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    int has_next = i + 1 < argc;
#define NEED() do { if (!has_next) { fprintf(stderr, "commlens: %s needs a value\n", a); return 2; } } while (0)
    if (!strcmp(a, "--json") && is_report) json = 1;
    else if (!strcmp(a, "--html") && is_report) { NEED(); html = argv[++i]; }
    else if (!strcmp(a, "--top") && is_report) { NEED(); top = atoi(argv[++i]); if (top < 1) top = 1; }
    else if (!strcmp(a, "--threads")) { NEED(); threads = atoi(argv[++i]); if (threads < 1) threads = 1; }
    else if (!strcmp(a, "-o") && is_merge) { NEED(); mo.out = argv[++i]; }
    else if (!strcmp(a, "--ranks") && is_merge) {
      NEED();
      if (cl_parse_ranks(argv[++i], &mo.ranks)) { fprintf(stderr, "commlens: --ranks '%s': expected a list like 0-3,7\n", argv[i]); return 2; }
    } else if (!strcmp(a, "--comm") && is_merge) { NEED(); comm_arg = argv[++i]; }
    else if (!strcmp(a, "--window") && is_merge) {
      NEED(); char *e;
      mo.w_start_ms = strtod(argv[++i], &e);
      if (*e != ':') { fprintf(stderr, "commlens: --window '%s': expected START_MS:END_MS\n", argv[i]); return 2; }
      mo.w_end_ms = strtod(e + 1, &e);
      if (*e || mo.w_end_ms < mo.w_start_ms) { fprintf(stderr, "commlens: --window '%s': expected START_MS:END_MS with START <= END\n", argv[i]); return 2; }
      mo.has_window = 1;
    } else if (!strcmp(a, "--steps") && is_merge) {
      NEED(); char *e;
      mo.step_a = strtol(argv[++i], &e, 10);
      if (*e != ':') { fprintf(stderr, "commlens: --steps '%s': expected A:B\n", argv[i]); return 2; }
      mo.step_b = strtol(e + 1, &e, 10);
      if (*e || mo.step_b < mo.step_a) { fprintf(stderr, "commlens: --steps '%s': expected A:B with A <= B\n", argv[i]); return 2; }
      mo.has_steps = 1;
    } else if (a[0] == '-' && a[1]) { fprintf(stderr, "commlens: unknown option '%s' for %s\n", a, cmd); usage(stderr); return 2; }
    else paths[np++] = argv[i];
  }
  if (!np) { fprintf(stderr, "commlens: %s: no trace directory given\n", cmd); usage(stderr); return 2; }
  if (is_merge && !mo.out) { fprintf(stderr, "commlens: merge needs -o OUT\n"); return 2; }
  if (mo.has_window && mo.has_steps) { fprintf(stderr, "commlens: give --window or --steps, not both\n"); return 2; }

  cl_job job;
  if (cl_job_load(&job, paths, np, threads) == 0) {
    fprintf(stderr, "commlens: nothing to %s: no usable per-rank trace found\n", cmd);
    cl_job_free(&job); free(paths); free(mo.ranks);
    return 2;
  }
  cl_job_instances(&job);
  cl_job_align(&job);
  int rc;
  if (is_report) rc = cl_report(&job, json, top, stdout) || (html && cl_report_html(&job, html));
  else {
    if (comm_arg) {
      char *e; unsigned long long v = strtoull(comm_arg, &e, 0);
      if (*e == 0 && e != comm_arg) mo.comm = v;
      else if (cl_comm_by_name(comm_arg, &mo.comm)) {
        fprintf(stderr, "commlens: --comm '%s': no communicator with that hash or name in the traces\n", comm_arg);
        cl_job_free(&job); free(paths); free(mo.ranks); return 2;
      }
      mo.has_comm = 1;
    }
    mo.threads = threads;
    rc = cl_merge(&job, &mo);
  }
  cl_job_free(&job); free(paths); free(mo.ranks);
  return rc == 0 ? 0 : 2;
}
