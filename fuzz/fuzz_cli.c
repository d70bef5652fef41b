/* fuzz_cli.c: libFuzzer target over the CLI's input side: the input is one to four per-rank
 * trace files (split at the line "#RANK#"), written to a temp directory and run through what
 * `commlens report` and `commlens merge` do: load (header checks, the streaming JSON scanner
 * of trace_read.c, per-rank aggregation), cross-rank instances, clock alignment, the report
 * and a merge, as JSON or (every other input) as Perfetto protobuf. Oracle: no sanitizer
 * report; when the JSON merge says it wrote a trace, that trace parses as JSON. The CLI's own
 * messages go to /dev/null. */
#include "tools/commlens/merge/merge.h"
#include "tools/commlens/render/report.h"
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
  g_null = fuzz_quiet_dir(g_dir, sizeof g_dir, "fuzzcli");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_job fj;
  if (fuzz_job_begin(&fj, g_dir, data, size, 4, NULL)) {
    cl_job *job = &fj.job;
    cl_analysis an;
    cl_analyse(job, &fj.cm, &an);
    if (size & 1) cl_render_json(job, &an, g_null); else cl_render_text(job, &an, 3, g_null);
    cl_analysis_free(&an);
    char out[400];
    cl_merge_opts mo;
    memset(&mo, 0, sizeof mo);
    mo.format = size & 2 ? CL_MERGE_PFTRACE : CL_MERGE_JSON;
    snprintf(out, sizeof out, "%s/merged.%s", g_dir, mo.format == CL_MERGE_JSON ? "json" : "pftrace");
    mo.out = out;
    mo.threads = 1;
    if (cl_merge(job, &mo) == 0 && mo.format == CL_MERGE_JSON) {
      json_object *o = json_object_from_file(out);
      if (!o) { if (write(2, "merged trace is not JSON\n", 25) < 0) {} abort(); }
      json_object_put(o);
    }
    unlink(out);
  }
  fuzz_job_end(&fj);
  return 0;
}
