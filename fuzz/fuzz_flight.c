/* fuzz_flight.c: libFuzzer target over the CLI's reading of flight-recorder dumps: the input is
 * one to four dump files (split at the line "#RANK#"; named as the plugin names dumps, with
 * ranks, processes and kinds picked by the input's first byte, so names order them), run through
 * what `commlens report DIR/flight` does: the loader (headers, attempts by process and start,
 * each rank's file, every dump kept for the hang analysis), the hang analysis (analyse/hang.c),
 * and the report's text and JSON. Oracles, besides the sanitizers: the memory held at the peak of
 * the load and the analysis stays within fuzz/mem_oracle.h's multiple of the input's size; every
 * communicator and member of the analysis is in its ranges and within the member budget; the
 * hang's text lines are valid UTF-8 with no control character but their newlines; the JSON
 * report parses. */
#include "tools/commlens/render/report.h"
#include "common/utf8.h"
#include "rank_files.h"
#include "mem_oracle.h"
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dir[256];
static FILE *g_null;
static unsigned g_shape;   /* the input's first byte: who wrote which file */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  g_null = fuzz_quiet_dir(g_dir, sizeof g_dir, "fuzzfl");
  mo_install();
  return 0;
}

/* File k: rank k or k/2 (two dumps of one rank), a process of its own or its rank's, a hang,
 * signal or late dump, number 1 or 2. */
static void dump_name(char *out, size_t n, int k) {
  static const char *const kinds[3] = {"hang", "signal", "late"};
  int rank = g_shape >> k & 1 ? k : k / 2, pid = 100 + (g_shape >> 4 & 1 ? rank : k);
  snprintf(out, n, "commlens-r%d-fuzz-%d.%s-%d.trace.json", rank, pid, kinds[(g_shape >> (k + 2)) % 3], 1 + k % 2);
}

static void check_hang(const cl_hang *h) {
  if (h->n_members > h->member_budget || h->member_budget > CL_HANG_MAX_MEMBERS || h->comms.n > CL_HANG_MAX_COMMS ||
      h->left_out.n > CL_HANG_MAX_COMMS) abort();
  size_t members = 0;
  for (size_t i = 0; i < h->comms.n; i++) {
    const cl_hang_comm *c = &h->comms.a[i];
    if (c->nranks < 1 || c->nranks > CL_HANG_MAX_RANKS || c->seq < 0) abort();
    members += (size_t)c->nranks;
    for (int r = 0; r < c->nranks; r++)
      if (c->members[r].state > CL_HANG_DONE || c->members[r].rank < -1) abort();
  }
  if (members != h->n_members) abort();
}

/* The text as a terminal would be shown it: valid UTF-8, no control character but newline. */
static void check_shown(const char *t, size_t n) {
  const unsigned char *p = (const unsigned char *)t, *e = p + n;
  while (p < e) {
    size_t l = cl_utf8_len(p, e);
    if (!l || (*p < 0x20 && *p != '\n') || *p == 0x7f || (*p == 0xC2 && p[1] < 0xA0)) abort();
    p += l;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!size) return 0;
  g_shape = data[0];
  size_t base = mo_begin();
  fuzz_job fj;
  int loaded = fuzz_job_begin(&fj, g_dir, data + 1, size - 1, FUZZ_MAX_RANKS, dump_name);
  cl_hang h;
  if (loaded) { cl_hang_analyse(&fj.job, &h); check_hang(&h); }
  mo_end(base, size, "loading flight dumps and analysing the hang");
  if (loaded) {
    char *text = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&text, &n);
    if (!m) abort();
    cl_render_hang_text(&fj.job, &h, m);
    fclose(m);
    check_shown(text, n);
    free(text);
    cl_hang_free(&h);
    cl_analysis an;
    cl_analyse(&fj.job, &fj.cm, &an);
    m = open_memstream(&text, &n);
    if (!m) abort();
    cl_render_json(&fj.job, &an, m);
    fclose(m);
    json_object *o = json_tokener_parse(text);
    if (!o) abort();
    json_object_put(o);
    free(text);
    cl_analysis_free(&an);
  }
  fuzz_job_end(&fj);
  return 0;
}
