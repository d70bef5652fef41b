/* fuzz_cli.c: libFuzzer target over the CLI's input side: the input is one to four per-rank
 * trace files (split at the line "#RANK#"), written to a temp directory and run through what
 * `commlens report` and `commlens merge` do: load (header checks, the streaming JSON scanner
 * of trace_read.c, per-rank aggregation), cross-rank instances, clock alignment, the report
 * and a merge, as JSON or (every other input) as Perfetto protobuf. Oracle: no sanitizer
 * report; when the JSON merge says it wrote a trace, that trace parses as JSON. The CLI's own
 * messages go to /dev/null. */
#include "tools/commlens/merge/merge.h"
#include "tools/commlens/render/report.h"
#include "tools/commlens/analyse/clock_align.h"
#include "rank_files.h"
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dir[256];
static FILE *g_null;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  snprintf(g_dir, sizeof g_dir, "%s/commlens-fuzzcli-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(g_dir)) { perror("mkdtemp"); exit(1); }
  g_null = fopen("/dev/null", "w");
  stderr = g_null;            /* the CLI's complaints; sanitizers and libFuzzer write to fd 2 */
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char paths[FUZZ_MAX_RANKS][400];
  int nf = fuzz_rank_files(g_dir, data, size, 4, paths);
  char *dirs[1] = {g_dir};
  cl_job job;
  if (cl_job_load(&job, dirs, 1, 1) > 0) {
    cl_job_instances(&job);
    cl_clock_model cm;
    cl_clock_align(&job, &cm);
    cl_analysis an;
    cl_analyse(&job, &cm, &an);
    if (size & 1) cl_render_json(&job, &an, g_null); else cl_render_text(&job, &an, 3, g_null);
    cl_analysis_free(&an);
    char out[400];
    cl_merge_opts mo;
    memset(&mo, 0, sizeof mo);
    mo.format = size & 2 ? CL_MERGE_PFTRACE : CL_MERGE_JSON;
    snprintf(out, sizeof out, "%s/merged.%s", g_dir, mo.format == CL_MERGE_JSON ? "json" : "pftrace");
    mo.out = out;
    mo.threads = 1;
    if (cl_merge(&job, &mo) == 0 && mo.format == CL_MERGE_JSON) {
      json_object *o = json_object_from_file(out);
      if (!o) { if (write(2, "merged trace is not JSON\n", 25) < 0) {} abort(); }
      json_object_put(o);
    }
    unlink(out);
    cl_cm_free(&cm);
  }
  cl_job_free(&job);
  for (int i = 0; i < nf; i++) unlink(paths[i]);
  return 0;
}
