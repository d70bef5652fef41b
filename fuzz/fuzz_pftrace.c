/* fuzz_pftrace.c: libFuzzer target over the merge's Perfetto protobuf writer: the input is
 * one or two per-rank traces (split at the line "#RANK#", as fuzz_cli), loaded and merged
 * with --format pftrace as `commlens merge` does. Oracle, besides the sanitizers: the output
 * decodes with an independent reader of the schema (fuzz/pft_check.h): every field well
 * formed and in the schema, every string valid UTF-8. */
#include "tools/commlens/merge/merge.h"
#include "rank_files.h"
#include "pft_check.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dir[256];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  fuzz_quiet_dir(g_dir, sizeof g_dir, "fuzzpft");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_job fj;
  if (fuzz_job_begin(&fj, g_dir, data, size, 2, NULL)) {
    char out[400];
    cl_merge_opts mo;
    memset(&mo, 0, sizeof mo);
    mo.format = CL_MERGE_PFTRACE;
    snprintf(out, sizeof out, "%s/merged.pftrace", g_dir);
    mo.out = out;
    mo.threads = 1;
    if (cl_merge(&fj.job, &mo) == 0) {
      FILE *f = fopen(out, "rb");
      if (!f) abort();
      uint8_t *b = NULL; size_t n = 0, cap = 0, k;
      do { if (cap - n < 65536) b = realloc(b, cap = cap * 2 + 65536); k = fread(b + n, 1, cap - n, f); n += k; } while (k);
      fclose(f);
      pft_check c = { NULL, NULL, 0, 0, 0, "" };
      if (pft_check_trace(&c, b, n) != 0) {
        if (write(2, c.err, strlen(c.err)) < 0 || write(2, ": the merged pftrace does not decode\n", 37) < 0) {}
        abort();
      }
      free(b);
    }
    unlink(out);
  }
  fuzz_job_end(&fj);
  return 0;
}
