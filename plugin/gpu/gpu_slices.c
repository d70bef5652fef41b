/* gpu_slices.c: see gpu_slices.h. Tracks come from the registry (tracks.c). */
#include "plugin/gpu/gpu_slices.h"
#include "plugin/output/tracks.h"
#include <stdio.h>

/* The args kernel, memcpy and memset slices share: where the record ran, and its CUDA graph node
 * (graph replays only). */
static void where_args(cl_sb *b, int *first, const cl_gpu_activity *a) {
  sb_key(b, first, "correlation"); sb_u64(b, a->correlation);
  sb_key(b, first, "device"); sb_u64(b, a->device);
  sb_key(b, first, "stream"); sb_u64(b, a->stream);
}
static void graph_args(cl_sb *b, int *first, const cl_gpu_activity *a) {
  if (!a->graph_node) return;
  sb_key(b, first, "graph_id"); sb_u64(b, a->graph_id);
  sb_key(b, first, "graph_node"); sb_u64(b, a->graph_node);
}

void cl_draw_gpu_kernel(cl_ct *ct, const cl_gpu_activity *k, int nccl) {
  char fam[64];
  snprintf(fam, sizeof fam, "GPU %u stream %u%s", k->device, k->stream, nccl ? " (NCCL)" : "");
  uint32_t tid = cl_track_lane(ct, CL_TRACK_GPU_STREAM, k->stream, k->device, fam, k->start_ns, k->end_ns);
  int first = ct_slice_begin(ct, tid, k->name ? k->name : "kernel", "gpu_kernel", k->start_ns, k->end_ns - k->start_ns);
  cl_sb *b = ct_body(ct);
  where_args(b, &first, k);
  sb_key(b, &first, "nccl"); sb_puts(b, nccl ? "true" : "false");
  graph_args(b, &first, k);
  ct_slice_end(ct);
}

/* CUPTI's copy kinds by number (CUpti_ActivityMemcpyKind), as the slice names them. */
static const char *copy_kind_name(unsigned k) {
  static const char *const names[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA",
                                      "DtoD", "HtoH", "PtoP"};
  return k < sizeof names / sizeof *names ? names[k] : "unknown";
}

void cl_draw_gpu_copy(cl_ct *ct, const cl_gpu_activity *c) {
  char fam[64], name[32];
  snprintf(fam, sizeof fam, "GPU %u stream %u", c->device, c->stream);
  if (c->kind == CL_GPU_MEMCPY) snprintf(name, sizeof name, "memcpy %s", copy_kind_name(c->copy_kind));
  else snprintf(name, sizeof name, "memset");
  uint64_t end = c->end_ns < c->start_ns ? c->start_ns : c->end_ns;
  uint32_t tid = cl_track_lane(ct, CL_TRACK_GPU_STREAM, c->stream, c->device, fam, c->start_ns, end);
  int first = ct_slice_begin(ct, tid, name, c->kind == CL_GPU_MEMCPY ? "gpu_memcpy" : "gpu_memset", c->start_ns,
                             end - c->start_ns);
  cl_sb *b = ct_body(ct);
  sb_key(b, &first, "bytes"); sb_u64(b, c->bytes);
  where_args(b, &first, c);
  graph_args(b, &first, c);
  ct_slice_end(ct);
}

void cl_draw_cuda_launch(cl_ct *ct, const cl_gpu_activity *l, int nccl) {
  char fam[64];
  snprintf(fam, sizeof fam, "CUDA launches (tid %u)", l->thread);
  uint32_t tid = cl_track_lane(ct, CL_TRACK_CUDA_LAUNCH, l->thread, 0, fam, l->start_ns, l->end_ns);
  int first = ct_slice_begin(ct, tid, nccl ? "launch (NCCL)" : "launch", "cuda_api", l->start_ns,
                             l->end_ns - l->start_ns);
  cl_sb *b = ct_body(ct);
  sb_key(b, &first, "correlation"); sb_u64(b, l->correlation);
  ct_slice_end(ct);
}

void cl_draw_exposed(cl_ct *ct, const cl_expo_result *r) {
  char fam[64];
  snprintf(fam, sizeof fam, "GPU %u exposed comm", r->span.device);
  for (size_t i = 0; i < r->npieces; i++) {
    const cl_expo_iv *p = &r->pieces[i];
    uint32_t tid = cl_track_lane(ct, CL_TRACK_EXPOSED, r->span.device, 0, fam, p->start_ns, p->end_ns);
    int first = ct_slice_begin(ct, tid, "exposed", "exposed", p->start_ns, p->end_ns - p->start_ns);
    cl_sb *b = ct_body(ct);
    sb_key(b, &first, "comm"); sb_puts(b, "\""); sb_hex(b, r->span.comm); sb_puts(b, "\"");
    sb_key(b, &first, "coll_exposed_ns"); sb_u64(b, r->exposed_ns);
    ct_slice_end(ct);
  }
}

void cl_draw_step(cl_ct *ct, const cl_expo_window *w) {
  uint32_t tid = cl_track_lane(ct, CL_TRACK_STEPS, 0, 0, "steps (NVTX) exposure", w->start_ns, w->end_ns);
  char name[48];
  snprintf(name, sizeof name, "step %llu", (unsigned long long)w->id);
  int first = ct_slice_begin(ct, tid, name, "step", w->start_ns, w->end_ns - w->start_ns);
  cl_sb *b = ct_body(ct);
  sb_key(b, &first, "step"); sb_u64(b, w->id);
  sb_key(b, &first, "comm_ns"); sb_u64(b, w->comm_ns);
  sb_key(b, &first, "exposed_ns"); sb_u64(b, w->exposed_ns);
  if (w->late) { sb_key(b, &first, "late"); sb_puts(b, "true"); }
  ct_slice_end(ct);
}

void cl_draw_window_counters(cl_ct *ct, const cl_expo_window *w) {
  ct_counter(ct, "exposed comm (us per 100 ms)", w->start_ns, "exposed_us", (int64_t)(w->exposed_ns / 1000));
  ct_counter(ct, "comm (us per 100 ms)", w->start_ns, "comm_us", (int64_t)(w->comm_ns / 1000));
}
