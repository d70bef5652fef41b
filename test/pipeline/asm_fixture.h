/* asm_fixture.h (tests): what the assembler's tests share: an assembler over the real
 * communicator registry with one participant (and the GPU join on demand), records fed as the
 * format thread would, and the drawn trace body read back as JSON held to the track rules. */
#ifndef COMMLENS_TEST_ASM_FIXTURE_H
#define COMMLENS_TEST_ASM_FIXTURE_H
#include "tl.h"
#include "common/loghist.h"
#include "plugin/pipeline/asm_state.h"   /* cl_asm_open_event: an open event's bookkeeping */
#include "tr_load.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/grow.h"
#include "common/log.h"
#include "common/nccl.h"
#include "exporters/chrome_trace.h"
#include "exporters/strbuf.h"
#include "exporters/summary.h"
#include "plugin/capture/contexts.h"
#include "plugin/capture/ring.h"
#include "plugin/gpu/exposure.h"
#include "plugin/gpu/gpu_clock.h"
#include "plugin/gpu/gpu_join.h"
#include "plugin/output/names.h"
#include "plugin/output/nccl_slices.h"
#include "plugin/output/participants.h"
#include "plugin/gpu/gpu_slices.h"
#include "plugin/output/tracks.h"
#include "plugin/pipeline/assemble.h"
#include "plugin/pipeline/format.h"
#include "plugin/pipeline/self_stats.h"
#include "common/utf8.h"
#include <json-c/json.h>
#include <math.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
  cl_parts *ps;                 /* the communicators' GPU is not known: one participant */
  cl_ct *ct;                    /* ... its trace body and summary */
  cl_summary *sum;
  cl_gj *gj;
  cl_asm *a;
  uint64_t seq;
} fixture;

static inline void fx_open_out(fixture *f, int with_gpu, unsigned output) {
  memset(f, 0, sizeof *f);
  cl_config_load();
  cl_cfg.mask = CL_MASK_FULL;
  cl_cfg.output = output;
  static const cl_parts_deps pd = {.comm_count = cl_comm_count, .comm_lookup = cl_comm_lookup,
                                   .env_rank = -1, .env_source = "", .forced_rank = -1};
  f->ps = cl_parts_new(&pd);
  cl_part *p = cl_parts_of_dev(f->ps, -1);
  f->ct = p->ct;
  f->sum = p->sum;
  f->gj = with_gpu ? cl_gj_new(f->ps, with_gpu == 2) : NULL;   /* 2: the join by stream order */
  static const cl_asm_deps deps = {cl_comm_lookup, cl_comm_learn, cl_ring_os_tid};
  f->a = cl_asm_new(f->ps, f->gj, &deps);
}
/* these tests read what is drawn (the default is the digest) */
static inline void fx_open(fixture *f, int with_gpu) { fx_open_out(f, with_gpu, CL_OUT_TRACE); }
static inline void fx_close(fixture *f) {
  cl_asm_free(f->a);
  cl_gj_free(f->gj);
  cl_parts_free(f->ps);
}

/* Registers a 2-rank communicator in the registry; returns its serial. */
static inline uint32_t add_comm(uint64_t hash, int rank) {
  cl_comm_desc d = {.hash = hash, .nnodes = 1, .nranks = 2, .rank = rank, .abi = 5};
  void *ctx;
  uint32_t serial;
  int first;
  return cl_contexts_add(&d, -1, &ctx, &serial, &first) == 0 ? serial : 0;
}

static inline cl_payload coll_payload(uint64_t seq, uint8_t nchannels) {
  cl_payload p;
  memset(&p, 0, sizeof p);
  p.coll = (cl_coll){.seq = seq, .func = "AllReduce", .datatype = "ncclFloat32", .algo = "RING", .proto = "LL",
                     .count = 1024, .nchannels = nchannels, .nwarps = 4};
  return p;
}

/* A record of thread `thr`: ids are (thread serial << CL_ID_SEQ_BITS) | sequence, as the hot
 * path makes them. */
static inline uint64_t ev_id(uint32_t thr, uint64_t n) { return ((uint64_t)thr << CL_ID_SEQ_BITS) | n; }

static inline void t_start(fixture *f, uint64_t id, unsigned etype, uint32_t comm, uint64_t parent,
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
static inline void t_small(fixture *f, unsigned kind, uint64_t id, uint64_t ts, uint32_t aux, uint64_t arg) {
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
static inline void t_stop(fixture *f, uint64_t id, uint64_t ts) { t_small(f, CL_REC_STOP, id, ts, 0, 0); }

/* The trace body as a JSON array, held to the track rules like every trace the tests load
 * (tr_load.h: its slices nest on their tracks); and the names of its tracks. */
static inline json_object *body_json(fixture *f) {
  cl_sb *b = ct_body(f->ct);
  cl_sb t = {0};
  sb_puts(&t, "[");
  sb_put(&t, b->p, b->len);
  sb_puts(&t, "]");
  json_object *j = json_tokener_parse(t.p);
  if (!j) fprintf(stderr, "body: %.*s\n", (int)t.len, t.p);
  sb_free(&t);
  char msg[512];
  int bad = j ? tr_check_events(j, msg, sizeof msg) : 0;
  CHECK(bad == 0, "%d slices of the body break the track rules; first: %s", bad, msg);
  if (j && !bad) tr_async_as_slices(j);
  return j;
}
static inline const char *track_name(json_object *arr, int tid) {
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
/* The next slice of category `cat` (and `name`, unless NULL) from index *i on, *i then past it;
 * NULL when there is none. */
static inline json_object *next_slice(json_object *arr, size_t *i, const char *cat, const char *name) {
  for (; *i < json_object_array_length(arr); (*i)++) {
    json_object *e = json_object_array_get_idx(arr, *i), *v;
    if (!json_object_object_get_ex(e, "cat", &v) || strcmp(json_object_get_string(v), cat)) continue;
    if (name && (!json_object_object_get_ex(e, "name", &v) || strcmp(json_object_get_string(v), name))) continue;
    (*i)++;
    return e;
  }
  return NULL;
}
static inline json_object *find_slice(json_object *arr, const char *cat, const char *name) {
  size_t i = 0;
  return next_slice(arr, &i, cat, name);
}
static inline int slice_tid(json_object *e) { json_object *v; return json_object_object_get_ex(e, "tid", &v) ? json_object_get_int(v) : -1; }
/* The track a slice is on: its thread track's name, or for an async slice (tid "async ...",
 * tr_async_as_slices) the name it carries, which names its track. */
static inline const char *slice_track(json_object *arr, json_object *e) {
  char tid[256];
  tr_tid_key(e, tid, sizeof tid);
  return strncmp(tid, "async ", 6) ? track_name(arr, slice_tid(e)) : tr_name(e);
}
static inline const char *slice_arg(json_object *e, const char *k) {
  json_object *a, *v;
  return json_object_object_get_ex(e, "args", &a) && json_object_object_get_ex(a, k, &v) ? json_object_get_string(v) : NULL;
}
static inline int count_cat(json_object *arr, const char *cat) {   /* slices: an async slice's "e" is not one */
  int n = 0;
  for (size_t i = 0; i < json_object_array_length(arr); i++) {
    json_object *v, *e = json_object_array_get_idx(arr, i);
    if (tr_ph(e) == 'e') continue;
    if (json_object_object_get_ex(e, "cat", &v) && !strcmp(json_object_get_string(v), cat)) n++;
  }
  return n;
}
#endif
