/* digest_trace.c: see digest_trace.h. Strings from the digest go out whole through json-c's
 * escaper, straight to the output (no fixed buffer between a name and the file); the header and
 * stats objects are re-serialised from their parsed form (never copied raw). */
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

/* Starts the next event of the array: a separator unless it is the first. */
static void next_ev(conv *c) {
  fputs(c->first ? "\n" : ",\n", c->out);
  c->first = 0;
}
/* s as a JSON string (json-c's escaper), any length, straight to the output. */
static void put_jstr(conv *c, const char *s) {
  json_object *o = json_object_new_string(s ? s : "");
  fputs(o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : "\"\"", c->out);
  json_object_put(o);
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

/* A lane of (comm, kind) free at [s, e]: its tid, named when new (the name written whole,
 * however long the communicator's). */
static uint32_t lane(conv *c, uint64_t comm, const char *comm_name, int kind, int64_t s, int64_t e) {
  int k, fresh;
  uint32_t tid = cl_dg_lane(&c->lanes, comm, kind, s, e, &k, &fresh);
  if (fresh) {
    char *name = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&name, &n);
    if (!m) return tid;
    if (kind == 2) fputs("steps (NVTX)", m);
    else if (comm_name && *comm_name) fprintf(m, "comm %s: %s", comm_name, kind ? "GPU" : "enqueue");
    else fprintf(m, "comm %08" PRIx64 ": %s", comm >> 32, kind ? "GPU" : "enqueue");
    if (k) fprintf(m, " lane %d", k + 1);
    fclose(m);
    next_ev(c);
    fprintf(c->out, "{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"thread_name\",\"args\":{\"name\":", c->rank, tid);
    put_jstr(c, name);
    fputs("}}", c->out);
    free(name);
  }
  return tid;
}

/* The args every slice of a row carries but bytes (and GPU's extras): communicator, rank,
 * and the collective's or the p2p operation's own. */
static void row_args(conv *c, const cl_dg_row *r) {
  fprintf(c->out, "\"comm\":\"0x%" PRIx64 "\",\"comm_name\":", r->comm);
  put_jstr(c, r->comm_name);
  fprintf(c->out, ",\"rank\":%d,\"nranks\":%d", r->rank, r->nranks);
  if (r->p2p) { fprintf(c->out, ",\"p2p_peer\":%d,\"nchannels\":%d", r->peer, r->nchannels); return; }
  fprintf(c->out, ",\"seq\":%" PRId64 ",\"algo\":", r->seq);
  put_jstr(c, r->algo);
  fputs(",\"proto\":", c->out);
  put_jstr(c, r->proto);
  fprintf(c->out, ",\"nchannels\":%d", r->nchannels);
}
/* {"ph":"X","pid":..,"tid":..,"name":<func>,"cat":..,"ts":..,"dur":..,"args":{<row args> */
static void slice_head(conv *c, const cl_dg_row *r, uint32_t tid, const char *cat, int64_t s, int64_t e) {
  char ts[32], dur[32];
  us(ts, sizeof ts, s); us(dur, sizeof dur, e - s);
  next_ev(c);
  fprintf(c->out, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"name\":", c->rank, tid);
  put_jstr(c, r->func);
  fprintf(c->out, ",\"cat\":\"%s\",\"ts\":%s,\"dur\":%s,\"args\":{", cat, ts, dur);
  row_args(c, r);
}

static void on_row(const cl_dg_row *r, void *arg) {
  conv *c = arg;
  uint32_t tid = lane(c, r->comm, r->comm_name, 0, r->enq_start, r->enq_end);
  slice_head(c, r, tid, r->p2p ? "p2p" : "coll", r->enq_start, r->enq_end);
  fprintf(c->out, ",\"bytes\":%" PRId64 "%s}}", r->bytes, r->untimed && !r->p2p ? ",\"gpu_timers\":\"left out\"" : "");
  if (!r->src) return;
  tid = lane(c, r->comm, r->comm_name, 1, r->gpu_start, r->gpu_end);
  slice_head(c, r, tid, "coll_gpu", r->gpu_start, r->gpu_end);
  fprintf(c->out, ",\"bytes\":%" PRId64 ",\"source\":\"%s\"", r->bytes, cl_dg_src_name(r->src));
  if (r->tail_ch >= 0) fprintf(c->out, ",\"tail_channel\":%d", r->tail_ch);
  if (r->exposed_ns >= 0) fprintf(c->out, ",\"exposed_ns\":%" PRId64, r->exposed_ns);
  if (r->expo_est) fputs(",\"exposure\":\"estimated\"", c->out);
  fputs("}}", c->out);
}

static void on_step(int64_t id, int64_t start, int64_t end, void *arg) {
  conv *c = arg;
  char ts[32], dur[32];
  uint32_t tid = lane(c, 0, NULL, 2, start, end);
  us(ts, sizeof ts, start); us(dur, sizeof dur, end - start);
  next_ev(c);
  fprintf(c->out, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"name\":\"step %" PRId64 "\",\"cat\":\"step\",\"ts\":%s,"
          "\"dur\":%s,\"args\":{\"step\":%" PRId64 "}}", c->rank, tid, id, ts, dur, id);
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
