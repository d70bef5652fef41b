/* fuzz_digest.c: libFuzzer target over the CLI's digest reader (tools/commlens/read/digest_read.c),
 * its conversion to a trace (digest_trace.c) and the report's model of it (model/load.c). Each
 * input is read twice: as a digest file's bytes (framing, CRCs, torn tails), and as a list of
 * blocks ([type][u16le length][payload]...) framed with valid CRCs behind a valid header, so the
 * fuzzer reaches the column decoders. Oracles, besides the sanitizers: every row delivered is on
 * the reader's promised ranges (times within +-2^62, spans not backwards, strings valid UTF-8,
 * indexes resolved), the converted trace is one well-formed JSON document, and the memory held at
 * the peak of each read stays within fuzz/mem_oracle.h's multiple of the file's size. */
#include "tools/commlens/read/digest_read.h"
#include "tools/commlens/read/digest_trace.h"
#include "tools/commlens/model/load.h"
#include "mem_oracle.h"
#include "exporters/digest.h"
#include "common/utf8.h"
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_path[300];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  char dir[256];
  snprintf(dir, sizeof dir, "%s/commlens-fuzzdg-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) { perror("mkdtemp"); exit(1); }
  snprintf(g_path, sizeof g_path, "%s/r0.digest", dir);
  stderr = fopen("/dev/null", "w");   /* the loader's messages; sanitizers and libFuzzer write to fd 2 */
  mo_install();
  return 0;
}

#define LIM ((int64_t)1 << 62)
static void valid_str(const char *s) {
  if (!s) abort();
  const unsigned char *p = (const unsigned char *)s, *e = p + strlen(s);
  while (p < e) { size_t k = cl_utf8_len(p, e); if (!k) abort(); p += k; }
}
static void on_row(const cl_dg_row *r, void *arg) {
  (void)arg;
  valid_str(r->comm_name); valid_str(r->func); valid_str(r->algo); valid_str(r->proto);
  if (r->enq_start < -LIM || r->enq_start > LIM || r->enq_end < r->enq_start || r->enq_end > LIM) abort();
  if (r->gpu_start < -LIM || r->gpu_start > LIM || r->gpu_end < r->gpu_start || r->gpu_end > LIM) abort();
  if (r->src < 0 || r->src >= CL_DG_SRC_N || (r->src && !cl_dg_src_name(r->src))) abort();
  if (r->exposed_ns < -1 || r->tail_ch < -1 || r->bytes < 0 || r->bytes > LIM) abort();
}
static void on_chan(const cl_dg_chan *c, void *arg) {
  (void)arg;
  if (c->channel < 0 || c->peer < -1 || c->n < 0 || c->sum_dur < 0 || c->max_dur < 0) abort();
}
static void on_step(int64_t id, int64_t s, int64_t e, void *arg) {
  (void)arg;
  if (id < 0 || s < -LIM || e < s || e > LIM) abort();
}
static const cl_dg_sink g_sink = {.coll = on_row, .chan = on_chan, .step = on_step};

static void read_file(const uint8_t *d, size_t n) {
  FILE *f = fopen(g_path, "wb");
  if (!f) abort();
  fwrite(d, 1, n, f);
  fclose(f);
  size_t base = mo_begin();
  cl_job job;
  char *paths[1] = {g_path};
  if (cl_job_load(&job, paths, 1, 1) > 0) cl_job_instances(&job);   /* what report holds of it */
  cl_job_free(&job);
  mo_end(base, n, "the report's model of a digest");
  base = mo_begin();
  cl_info info;
  cl_digest_scan(g_path, &g_sink, NULL, &info, 0);
  cl_info_free(&info);
  char *text = NULL, msg[256];
  FILE *null = fopen("/dev/null", "w");   /* merge writes the trace to a file: its text is not held */
  if (!null) abort();
  cl_digest_trace(g_path, null, msg, sizeof msg);
  fclose(null);
  mo_end(base, n, "reading a digest and converting it to a trace");
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  if (!m) abort();
  int rc = cl_digest_trace(g_path, m, msg, sizeof msg);
  fclose(m);
  if (rc == 0) {
    json_tokener *t = json_tokener_new();
    json_object *o = json_tokener_parse_ex(t, text, (int)len);
    size_t end = o ? json_tokener_get_parse_end(t) : 0;
    while (end < len && (text[end] == '\n' || text[end] == ' ')) end++;
    if (!o || end != len) {
      fprintf(mo_err, "converted trace is not one JSON document:\n%.2000s\n", text);
      abort();
    }
    json_object_put(o);
    json_tokener_free(t);
  }
  free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  read_file(data, size);
  /* the input as blocks, framed validly behind a valid header */
  cl_dg_buf f = {0};
  const char *hdr = "{\"format\":1,\"rank\":1,\"host\":\"h\",\"job\":\"j\",\"clock\":{\"realtime_offset_ns\":1700000000000000000}}";
  cl_digest_file_head(&f, hdr, strlen(hdr));
  static const int types[] = {CL_DG_COLLS, CL_DG_COLLS_RUNS, CL_DG_CHANS, CL_DG_STEPS, CL_DG_STATS, CL_DG_HEADER, 'Z'};
  for (size_t at = 0; at + 3 <= size;) {
    int type = types[data[at] % (sizeof types / sizeof types[0])];
    size_t n = (size_t)data[at + 1] | (size_t)data[at + 2] << 8;
    at += 3;
    if (n > size - at) n = size - at;
    cl_dg_block(&f, type, data + at, n);
    at += n;
  }
  if (!f.oom) read_file(f.p, f.len);
  free(f.p);
  return 0;
}
