/* test_assemble.c: the assembler and the drawing behind it, without loading the plugin: records
 * are fed to cl_asm_feed as the format thread would (starts, stops and states of several
 * threads, out of order), CUPTI records go to the GPU join, and the Chrome-trace body is read
 * back as JSON. Communicators are registered in the real registry (capture/contexts.c). */
#include "tl.h"
#include "../../common/clock.c"
#include "../../common/config.c"
#include "../../common/grow.c"
#include "../../common/log.c"
#include "../../common/nccl.c"
#include "../../exporters/chrome_trace.c"
#include "../../exporters/strbuf.c"
#include "../../exporters/summary.c"
#include "../../plugin/capture/contexts.c"
#include "../../plugin/capture/ring.c"
#include "../../plugin/gpu/exposure.c"
#include "../../plugin/gpu/gpu_clock.c"
#include "../../plugin/gpu/gpu_join.c"
#include "../../plugin/output/gpu_slices.c"
#include "../../plugin/output/tracks.c"
#include "../../plugin/output/names.c"
#include "../../plugin/output/nccl_slices.c"
#include "../../plugin/pipeline/assemble.c"
#include <json-c/json.h>

typedef struct {
  cl_ct *ct;
  cl_summary *sum;
  cl_gj *gj;
  cl_asm *a;
  uint64_t seq;
} fixture;

static void fx_open(fixture *f, int with_gpu) {
  memset(f, 0, sizeof *f);
  cl_config_load();
  cl_cfg.mask = CL_MASK_FULL;
  f->ct = ct_new(0, 0);
  f->sum = cl_summary_new();
  f->gj = with_gpu ? cl_gj_new(f->ct) : NULL;
  f->a = cl_asm_new(f->ct, f->sum, f->gj);
}

/* A record of thread `thr`: ids are (thread serial << CL_ID_SEQ_BITS) | sequence, as the hot
 * path makes them. */
static uint64_t ev_id(uint32_t thr, uint64_t n) { return ((uint64_t)thr << CL_ID_SEQ_BITS) | n; }

static void t_start(fixture *f, uint64_t id, unsigned etype, uint32_t comm, uint64_t parent,
                       uint64_t ts, const cl_payload *p, unsigned flags) {
  cl_start_rec r;
  memset(&r, 0, sizeof r);
  r.hdr.kind = CL_REC_START;
  r.hdr.nslots = 4;
  r.hdr.etype = (uint8_t)etype;
  r.hdr.flags = (uint8_t)flags;
  r.hdr.aux = comm;
  r.hdr.id = id;
  r.hdr.ts = ts;
  r.hdr.arg = parent;
  if (p) r.p = *p;
  cl_asm_feed(f->a, &r.hdr);
}
static void t_small(fixture *f, unsigned kind, uint64_t id, uint64_t ts, uint32_t aux, uint64_t arg) {
  cl_rec r;
  memset(&r, 0, sizeof r);
  r.kind = (uint8_t)kind;
  r.nslots = 1;
  r.aux = aux;
  r.id = id;
  r.ts = ts;
  r.arg = arg;
  cl_asm_feed(f->a, &r);
}
static void t_stop(fixture *f, uint64_t id, uint64_t ts) { t_small(f, CL_REC_STOP, id, ts, 0, 0); }

/* The trace body as a JSON array, and the names of its tracks. */
static json_object *body_json(fixture *f) {
  cl_sb *b = ct_body(f->ct);
  cl_sb t = {0};
  sb_puts(&t, "[");
  sb_put(&t, b->p, b->len);
  sb_puts(&t, "]");
  json_object *j = json_tokener_parse(t.p);
  if (!j) fprintf(stderr, "body: %.*s\n", (int)t.len, t.p);
  sb_free(&t);
  return j;
}
static const char *track_name(json_object *arr, int tid) {
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    json_object *e = json_object_array_get_idx(arr, i), *v;
    if (!json_object_object_get_ex(e, "name", &v) || strcmp(json_object_get_string(v), "thread_name")) continue;
    if (!json_object_object_get_ex(e, "tid", &v) || json_object_get_int(v) != tid) continue;
    json_object *args, *n;
    if (json_object_object_get_ex(e, "args", &args) && json_object_object_get_ex(args, "name", &n))
      return json_object_get_string(n);
  }
  return NULL;
}
/* The first slice with this cat (and name, if given); NULL if none. */
static json_object *find_slice(json_object *arr, const char *cat, const char *name) {
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    json_object *e = json_object_array_get_idx(arr, i), *v;
    if (!json_object_object_get_ex(e, "cat", &v) || strcmp(json_object_get_string(v), cat)) continue;
    if (name && (!json_object_object_get_ex(e, "name", &v) || strcmp(json_object_get_string(v), name))) continue;
    return e;
  }
  return NULL;
}
static int slice_tid(json_object *e) { json_object *v; return json_object_object_get_ex(e, "tid", &v) ? json_object_get_int(v) : -1; }
static __attribute__((unused)) const char *slice_arg(json_object *e, const char *k) {
  json_object *a, *v;
  return json_object_object_get_ex(e, "args", &a) && json_object_object_get_ex(a, k, &v) ? json_object_get_string(v) : NULL;
}
static __attribute__((unused)) int count_cat(json_object *arr, const char *cat) {
  int n = 0;
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    json_object *v;
    if (json_object_object_get_ex(json_object_array_get_idx(arr, i), "cat", &v) && !strcmp(json_object_get_string(v), cat)) n++;
  }
  return n;
}

/* Regression: an NCCL event without a communicator (comm serial 0: a PXN or stale context) in
 * a per-channel family used to share its track key with CUPTI's kernels of GPU 0 on the stream
 * whose id equals the channel (proxy recv and GPU streams were both family 8), and was drawn
 * on that GPU stream track under its name. */
TL_TEST(commless_event_and_gpu_kernels_get_their_own_tracks) {
  fixture f;
  fx_open(&f, 1);
  cl_gpu_activity k = {.start_ns = 1000000, .end_ns = 2000000, .correlation = 1, .device = 0, .stream = 7,
                       .kind = CL_GPU_KERNEL, .name = "computeKernel"};
  cl_gj_activity(f.gj, &k);                    /* no KernelLaunch seen: classified by name, drawn */
  cl_payload p;
  memset(&p, 0, sizeof p);
  p.proxy_op = (cl_proxy_op){.pid = 1, .peer = 1, .nsteps = 2, .chunk_size = 64, .channel = 7, .is_send = 0};
  uint64_t id = ev_id(1, 1);
  t_start(&f, id, CL_EV_PROXY_OP, 0, 0, 1500000, &p, CL_F_NO_COMM);
  t_stop(&f, id, 1600000);
  json_object *arr = body_json(&f);
  REQUIRE(arr, "body is not JSON");
  json_object *ker = find_slice(arr, "gpu_kernel", NULL), *op = find_slice(arr, "proxy_op", NULL);
  REQUIRE(ker && op, "kernel %p proxy op %p", (void *)ker, (void *)op);
  const char *kn = track_name(arr, slice_tid(ker)), *on = track_name(arr, slice_tid(op));
  CHECK(slice_tid(ker) != slice_tid(op), "proxy op drawn on the kernel's track %d (\"%s\")", slice_tid(op), kn ? kn : "?");
  CHECK(on && strstr(on, "proxy recv"), "proxy op track is \"%s\"", on ? on : "(none)");
  CHECK(kn && strstr(kn, "GPU 0 stream 7"), "kernel track is \"%s\"", kn ? kn : "(none)");
  json_object_put(arr);
}

TL_MAIN("pipeline/assemble")
