/* fuzz_join.c: libFuzzer target over the CUPTI join (plugin/gpu/gj_join.c and the files beside it) and the
 * participants it draws into: the input is a sequence of 16-byte operations, in any order:
 * NCCL KernelLaunch windows, CUPTI launch, kernel (plain and CUDA-graph replays), memcpy and
 * NVTX records, collectives queued for exposure, graph claims, coverage starts and stops, and
 * watermark advances, on four communicators spread over up to three GPUs of one process.
 * Odd-sized inputs run the join by stream and launch order (COMMLENS_CUPTI=kernels: launches
 * carry stream ids and devices, some are captured, kernels come in any correlation order),
 * even-sized ones the join by correlation id with the stream join as its check.
 * Oracle: no sanitizer report; every reported exposure lies within its span, every
 * participant's exposed time within its communication time, and the participants' trace
 * bodies stay valid JSON text. */
#include "plugin/gpu/gpu_join.h"
#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint32_t four(void) { return 4; }
/* comms 1..4: GPU 0, 1, 1, 2 (a process driving three GPUs, one of them with two comms) */
static int lookup(uint32_t serial, cl_comm_info *out) {
  static const int dev[] = {0, 0, 1, 1, 2};
  if (serial < 1 || serial > 4) return -1;
  memset(out, 0, sizeof *out);
  out->serial = serial;
  out->cuda_dev = dev[serial];
  out->d.rank = (int)serial - 1;
  out->d.nranks = 4;
  return 0;
}

static void on_exposed(void *arg, const cl_expo_result *r) {
  (void)arg;
  uint64_t len = r->span.end_ns > r->span.start_ns ? r->span.end_ns - r->span.start_ns : 0;
  if (!r->incomplete && r->exposed_ns > len) abort();   /* exposed more than the span itself */
}

static const char *const g_names[] = {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", "gemm", "step 3", "step",
                                      "_Z39ncclDevKernel_SendRecv", NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const cl_parts_deps deps = {.comm_count = four, .comm_lookup = lookup, .env_rank = -1,
                                     .env_source = "", .forced_rank = -1};
  cl_parts *ps = cl_parts_new(&deps);
  cl_gj *g = ps ? cl_gj_new(ps, (int)(size & 1)) : NULL;   /* odd sizes: join by stream */
  if (!g) { cl_parts_free(ps); return 0; }
  cl_gj_on_exposed(g, on_exposed, NULL);
  uint64_t base = 5000000000ull;
  for (size_t off = 0; off + 16 <= size; off += 16) {
    const uint8_t *o = data + off;
    uint64_t t = base + ((uint64_t)o[1] << 16 | (uint64_t)o[2] << 8 | o[3]) * 100;
    uint64_t d = ((uint64_t)o[4] << 8 | o[5]) * 50;
    uint32_t corr = o[6] | (uint32_t)o[7] << 8, comm = o[8] % 6, dev = o[9] % 4;
    uint64_t group = o[10] % 16 + 1;
    cl_gpu_activity a = {.start_ns = t, .end_ns = t + d, .correlation = corr, .device = dev, .stream = o[11] % 4,
                         .thread = 40 + o[12] % 3, .name = g_names[o[13] % 6]};
    switch (o[0] % 11) {
    case 0: {
      cl_gj_launch l = {.tid = 40 + o[12] % 3, .start = t, .stop = t + d, .group = group, .comm = comm,
                        .dev = o[9] % 5 - 1, .stream_id = o[14] % 5, .captured = o[15] == 0xff};
      cl_gj_kernel_launch(g, &l);
      break;
    }
    case 1: a.kind = CL_GPU_LAUNCH; cl_gj_activity(g, &a); break;
    case 2: a.kind = CL_GPU_KERNEL; cl_gj_activity(g, &a); break;
    case 3: a.kind = CL_GPU_KERNEL; a.graph_id = 3; a.graph_node = o[14] + 1u; cl_gj_activity(g, &a); break;
    case 4: a.kind = o[14] & 1 ? CL_GPU_MARK_START : CL_GPU_MARK_END; cl_gj_activity(g, &a); break;
    case 5: a.kind = CL_GPU_MEMCPY; cl_gj_activity(g, &a); break;
    case 6: {
      uint64_t s, e; uint32_t kd = dev;
      if (!cl_gj_span(g, group, comm, &s, &e, &kd)) { s = t; e = t + d; }
      cl_gj_expose(g, (uint64_t)off + 1, kd, 0xc0000 + comm, s, e);
      break;
    }
    case 7: { uint64_t ks, ke; cl_gj_graph_claim(g, dev, t, t + d, &ks, &ke); break; }
    case 8: if (o[14] & 1) cl_gj_start(g, t); else cl_gj_stop(g, t); break;
    case 9:
      if (o[14] == 0x77) cl_gj_join_all(g);   /* the end of a run's joins, mid-stream */
      cl_gj_advance(g, t + d * 1000, o[15] == 0xff);
      base += d;
      break;
    default: { uint64_t last; cl_gj_launches_lost(g, t + d * 10000, &last); (void)cl_gj_covered(g, t); }
    }
  }
  cl_gj_join_all(g);                                 /* as the writer's last pass does */
  cl_gj_advance(g, base + 100000000000ull, 1);
  for (size_t i = 0; i < cl_parts_count(ps); i++) {
    cl_part *p = cl_parts_at(ps, i);
    cl_gj_counts n;
    cl_gj_totals(g, p, &n);
    if (n.t.exposed_ns > n.t.comm_ns) abort();       /* a union of pieces outside the union of spans */
    cl_sb *b = ct_body(p->ct);                       /* the body is a list of JSON objects */
    cl_sb j = {0};
    sb_puts(&j, "[");
    sb_put(&j, b->p ? b->p : "", b->len);
    sb_puts(&j, "]");
    json_object *x = j.p ? json_tokener_parse(j.p) : NULL;
    if (!x && !j.oom) abort();
    json_object_put(x);
    sb_free(&j);
  }
  cl_gj_free(g);
  cl_parts_free(ps);
  return 0;
}
