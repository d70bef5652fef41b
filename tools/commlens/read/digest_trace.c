/* digest_trace.c: see digest_trace.h. Strings from the digest go out through json-c's escaper;
 * the header and stats objects are re-serialised from their parsed form (never copied raw). */
#include "tools/commlens/read/digest_trace.h"
#include "tools/commlens/read/digest_read.h"
#include "common/digest_codec.h"
#include "common/grow.h"
#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  FILE *out; int first, rank;
  cl_dg_lanes lanes;
  json_object *stats;
} conv;

static void put_ev(conv *c, const char *text) {
  fprintf(c->out, "%s\n%s", c->first ? "" : ",", text);
  c->first = 0;
}
static const char *jstr(const char *s) {   /* valid during the call that uses it */
  static __thread json_object *o;
  if (o) json_object_put(o);
  o = json_object_new_string(s ? s : "");
  return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
}
/* ns as the trace's exact "us.nnn" */
static void us(char *b, size_t n, int64_t ns) {
  int neg = ns < 0;
  uint64_t a = neg ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
  snprintf(b, n, "%s%" PRIu64 ".%03u", neg ? "-" : "", a / 1000, (unsigned)(a % 1000));
}

uint32_t cl_dg_lane(cl_dg_lanes *l, uint64_t comm, int kind, int64_t s, int64_t e, int *lane_no, int *is_new) {
  cl_dg_family *f = NULL;
  *is_new = 0;
  *lane_no = 0;
  for (size_t i = 0; i < l->n; i++) if (l->fam[i].comm == comm && l->fam[i].kind == kind) f = &l->fam[i];
  if (!f) {
    if (cl_grow(&l->fam, &l->cap, l->n + 1, sizeof *l->fam, 8, 0) != 0) return 1;
    f = &l->fam[l->n++];
    memset(f, 0, sizeof *f);
    if (!l->next_tid) l->next_tid = 16;
    f->comm = comm; f->kind = kind; f->tid0 = l->next_tid; l->next_tid += CL_DG_LANES;
  }
  int k = 0;
  while (k < f->lanes && f->end[k] > s) k++;
  if (k == CL_DG_LANES) k = CL_DG_LANES - 1;   /* more overlapping slices share the last lane */
  if (k == f->lanes) { f->lanes++; *is_new = 1; }
  if (e > f->end[k]) f->end[k] = e;
  *lane_no = k;
  return f->tid0 + (uint32_t)k;
}
void cl_dg_lanes_free(cl_dg_lanes *l) { free(l->fam); memset(l, 0, sizeof *l); }

/* A lane of (comm, kind) free at [s, e]: its tid, named when new. */
static uint32_t lane(conv *c, uint64_t comm, const char *comm_name, int kind, int64_t s, int64_t e) {
  int k, fresh;
  uint32_t tid = cl_dg_lane(&c->lanes, comm, kind, s, e, &k, &fresh);
  if (fresh) {
    char label[96], name[160], ev[512];
    if (kind == 2) snprintf(label, sizeof label, "steps (NVTX)");
    else if (comm_name && *comm_name) snprintf(label, sizeof label, "comm %s: %s", comm_name, kind ? "GPU" : "enqueue");
    else snprintf(label, sizeof label, "comm %08" PRIx64 ": %s", comm >> 32, kind ? "GPU" : "enqueue");
    snprintf(name, sizeof name, "%s", label);
    if (k) snprintf(name + strlen(name), sizeof name - strlen(name), " lane %d", k + 1);
    snprintf(ev, sizeof ev, "{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"thread_name\",\"args\":{\"name\":%s}}",
             c->rank, tid, jstr(name));
    put_ev(c, ev);
  }
  return tid;
}

static void on_row(const cl_dg_row *r, void *arg) {
  conv *c = arg;
  char ev[2048], ts[32], dur[32], comm[24];
  snprintf(comm, sizeof comm, "0x%" PRIx64, r->comm);
  int n = snprintf(ev, sizeof ev, "\"comm\":\"%s\",\"comm_name\":%s,\"rank\":%d,\"nranks\":%d", comm, jstr(r->comm_name),
                   r->rank, r->nranks);
  char common[700];
  snprintf(common, sizeof common, "%.*s", n, ev);
  char ops[400];
  if (r->p2p) snprintf(ops, sizeof ops, ",\"p2p_peer\":%d,\"nchannels\":%d", r->peer, r->nchannels);
  else {
    int k = snprintf(ops, sizeof ops, ",\"seq\":%" PRId64 ",\"algo\":%s", r->seq, jstr(r->algo));
    snprintf(ops + k, sizeof ops - (size_t)k, ",\"proto\":%s,\"nchannels\":%d", jstr(r->proto), r->nchannels);
  }
  char fname[300];
  snprintf(fname, sizeof fname, "%s", jstr(r->func));
  us(ts, sizeof ts, r->enq_start); us(dur, sizeof dur, r->enq_end - r->enq_start);
  snprintf(ev, sizeof ev, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"name\":%s,\"cat\":\"%s\",\"ts\":%s,\"dur\":%s,\"args\":{%s%s,\"bytes\":%" PRId64 "}}",
           c->rank, lane(c, r->comm, r->comm_name, 0, r->enq_start, r->enq_end), fname, r->p2p ? "p2p" : "coll", ts, dur,
           common, ops, r->bytes);
  put_ev(c, ev);
  if (!r->src) return;
  us(ts, sizeof ts, r->gpu_start); us(dur, sizeof dur, r->gpu_end - r->gpu_start);
  char extra[96] = "";
  int k = 0;
  if (r->tail_ch >= 0) k = snprintf(extra, sizeof extra, ",\"tail_channel\":%d", r->tail_ch);
  if (r->exposed_ns >= 0)
    k += snprintf(extra + k, sizeof extra - (size_t)k, ",\"exposed_ns\":%" PRId64, r->exposed_ns);
  if (r->expo_est && k < (int)sizeof extra) snprintf(extra + k, sizeof extra - (size_t)k, ",\"exposure\":\"estimated\"");
  snprintf(ev, sizeof ev, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"name\":%s,\"cat\":\"coll_gpu\",\"ts\":%s,\"dur\":%s,"
           "\"args\":{%s%s,\"bytes\":%" PRId64 ",\"source\":\"%s\"%s}}",
           c->rank, lane(c, r->comm, r->comm_name, 1, r->gpu_start, r->gpu_end), fname, ts, dur, common, ops, r->bytes,
           cl_dg_src_name(r->src), extra);
  put_ev(c, ev);
}

static void on_step(int64_t id, int64_t start, int64_t end, void *arg) {
  conv *c = arg;
  char ev[400], ts[32], dur[32];
  us(ts, sizeof ts, start); us(dur, sizeof dur, end - start);
  snprintf(ev, sizeof ev, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"name\":\"step %" PRId64 "\",\"cat\":\"step\",\"ts\":%s,"
           "\"dur\":%s,\"args\":{\"step\":%" PRId64 "}}", c->rank, lane(c, 0, NULL, 2, start, end), id, ts, dur, id);
  put_ev(c, ev);
}

static void on_json(int type, const char *text, size_t n, void *arg) {
  conv *c = arg;
  json_tokener *t = json_tokener_new();
  json_object *o = t ? json_tokener_parse_ex(t, text, (int)n) : NULL;
  if (t) json_tokener_free(t);
  if (!o || !json_object_is_type(o, json_type_object)) { if (o) json_object_put(o); return; }
  if (type == CL_DG_STATS) { if (c->stats) json_object_put(c->stats); c->stats = o; return; }
  fprintf(c->out, "{\"displayTimeUnit\":\"ns\",\"commlens\":%s,\"traceEvents\":[",
          json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
  json_object_put(o);
}

int cl_digest_trace(const char *path, FILE *out, char *msg, size_t n) {
  cl_info info;
  conv c = {.out = out, .first = 1};
  if (cl_digest_scan(path, NULL, NULL, &info, 1) != 0) { snprintf(msg, n, "%s", info.msg); cl_info_free(&info); return -1; }
  c.rank = info.rank;
  cl_info_free(&info);
  cl_dg_sink sink = {.coll = on_row, .step = on_step, .json = on_json};
  int rc = cl_digest_scan(path, &sink, &c, &info, 0);
  if (rc == 0) {
    fprintf(out, "\n],\"commlensStats\":%s}\n", c.stats ? json_object_to_json_string_ext(c.stats, JSON_C_TO_STRING_PLAIN) : "{}");
    snprintf(msg, n, "%s", info.msg);
  } else snprintf(msg, n, "%s", info.msg);
  if (c.stats) json_object_put(c.stats);
  cl_dg_lanes_free(&c.lanes);
  cl_info_free(&info);
  return rc;
}
