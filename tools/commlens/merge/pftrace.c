/* pftrace.c: Chrome-trace events of one rank -> Perfetto TracePackets (pftrace.h). Owns a
 * rank's packet sequence: its interning tables, its tracks (process, one per tid, one per
 * counter series, async lanes in one group) and the packet being built. Slices become a SLICE_BEGIN and a SLICE_END
 * packet written together, so a track's nesting at equal timestamps follows the file's order
 * (Perfetto sorts packets by time, keeping the file's order among equal times): a parent is
 * written before its children and a track's slices in start order (the plugin does both).
 * Never keeps events. Field numbers: perfetto_min.proto. */
#include "tools/commlens/merge/pftrace.h"
#include "tools/commlens/merge/pb.h"
#include "tools/commlens/base/util.h"
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TRACE_PACKET = 1 };
enum { PKT_TIMESTAMP = 8, PKT_SEQ_ID = 10, PKT_TRACK_EVENT = 11, PKT_INTERNED = 12, PKT_SEQ_FLAGS = 13,
       PKT_TRACK_DESCRIPTOR = 60, PKT_FIRST_ON_SEQ = 87 };
enum { SEQ_STATE_CLEARED = 1, SEQ_NEEDS_STATE = 2 };
enum { TE_CATEGORY_IIDS = 3, TE_ANNOTATIONS = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK_UUID = 11, TE_NAME = 23,
       TE_COUNTER_VALUE = 30, TE_DOUBLE_COUNTER_VALUE = 44, TE_FLOW_IDS = 47, TE_TERMINATING_FLOW_IDS = 48 };
enum { TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
enum { DA_NAME_IID = 1, DA_BOOL = 2, DA_INT = 4, DA_DOUBLE = 5, DA_STRING = 6, DA_JSON = 9, DA_NAME = 10,
       DA_STRING_IID = 17 };
enum { INT_CATEGORIES = 1, INT_NAMES = 2, INT_ANNOTATION_NAMES = 3, INT_STRING_VALUES = 29 };
enum { ENTRY_IID = 1, ENTRY_NAME = 2 };   /* EventCategory, EventName, DebugAnnotationName, InternedString */
enum { TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT_UUID = 5, TD_COUNTER = 8,
       TD_CHILD_ORDERING = 11, TD_SIBLING_ORDER_RANK = 12 };
enum { ORDER_EXPLICIT = 3 };
enum { PD_PID = 1, PD_SORT_INDEX = 3, PD_NAME = 6 };
enum { THD_PID = 1, THD_TID = 2, THD_SORT_INDEX = 3, THD_NAME = 5 };

#define SEQ_MERGE 1            /* the merge's own sequence; rank r's is r + 2 */
#define UUID_MERGE 1           /* its track */
#define TRACK_BITS 24          /* rank r's tracks: ((r + 1) << TRACK_BITS) + k, k = 0 its process */
#define STR_INTERN_MAX 64      /* string argument values up to this many bytes are interned, */
#define STR_INTERN_TABLE 65536 /* while the table has fewer entries (long or unique ones are not worth it) */

enum { K_CAT, K_NAME, K_ANN, K_STR, K_COUNT };
static const uint32_t k_field[K_COUNT] = { INT_CATEGORIES, INT_NAMES, INT_ANNOTATION_NAMES, INT_STRING_VALUES };

typedef struct { uint64_t uuid; int64_t tid, sort; char *name; int has_sort, described; } track;
/* Async slices: a lane is a track of one name whose slices do not overlap; Perfetto's UI shows
 * sibling tracks of one name as one track. An open id maps to its lane. */
typedef struct { uint64_t uuid; uint32_t name; int64_t end; } lane;
#define ASYNC_OPEN 64
#define ASYNC_LANES 4096   /* lanes per rank: ours need a few per track; more is not our writer's */
typedef struct { char key[120]; int n, depth; size_t lane; } open_id;
typedef struct { int kind; uint32_t id; } fresh_entry;

struct cl_pft_seq {
  int rank; uint32_t seq; uint64_t proc_uuid, ntracks;
  cl_pb out;
  cl_strtab in[K_COUNT];           /* interned strings, keys still JSON-escaped */
  CL_VEC(fresh_entry) fresh;       /* interned by the packet being built: it must define them */
  cl_strtab tids; CL_VEC(track) tracks;            /* tid (8 bytes) -> tracks[id - 1] */
  cl_strtab counters; CL_VEC(uint64_t) counter_uuid;   /* "name\0series" -> counter_uuid[id - 1] */
  uint64_t detail_uuid;            /* the group of the async tracks, 0 until one is drawn */
  cl_strtab anames, comms;         /* async track names; their communicator labels, in order */
  CL_VEC(lane) lanes;
  open_id open[ASYNC_OPEN]; int nopen;
  int64_t not_carried;
  char *buf; size_t cap;           /* unescaped text on its way out (grows: a string goes whole) */
};

static const char *unescaped(cl_pft_seq *s, const char *p, size_t n) {
  if (s->cap < n + 1) { s->buf = cl_xrealloc(s->buf, n + 1); s->cap = n + 1; }   /* unescaped: at most n bytes */
  return cl_str_unescape((cl_str_t){ p, (int)n }, s->buf, s->cap);
}

static uint32_t intern(cl_pft_seq *s, int kind, cl_str_t raw) {
  int added;
  uint32_t id = cl_strtab_id(&s->in[kind], raw.p ? raw.p : "", (size_t)raw.n, &added);
  if (added) CL_PUSH(s->fresh, ((fresh_entry){ kind, id }));
  return id;
}

/* A packet of this sequence; `needs_state`: it refers to interned data. */
static void packet_begin(cl_pft_seq *s, int has_ts, int64_t ts, int needs_state) {
  cl_pb_begin(&s->out, TRACE_PACKET);
  if (has_ts) cl_pb_uint(&s->out, PKT_TIMESTAMP, (uint64_t)ts);
  cl_pb_uint(&s->out, PKT_SEQ_ID, s->seq);
  if (needs_state) cl_pb_uint(&s->out, PKT_SEQ_FLAGS, SEQ_NEEDS_STATE);
}
/* Closes the packet, defining first what it interned. */
static void packet_end(cl_pft_seq *s) {
  if (s->fresh.n) {
    cl_pb_begin(&s->out, PKT_INTERNED);
    for (size_t i = 0; i < s->fresh.n; i++) {
      size_t n; const char *k = cl_strtab_key(&s->in[s->fresh.a[i].kind], s->fresh.a[i].id, &n);
      cl_pb_begin(&s->out, k_field[s->fresh.a[i].kind]);
      cl_pb_uint(&s->out, ENTRY_IID, s->fresh.a[i].id);
      cl_pb_str(&s->out, ENTRY_NAME, unescaped(s, k, n));
      cl_pb_end(&s->out);
    }
    cl_pb_end(&s->out);
    s->fresh.n = 0;
  }
  cl_pb_end(&s->out);
}

/* Debug annotations from a flat json-c object (metadata): names written out, not interned. */
static void json_annotations(cl_pb *b, json_object *o) {
  json_object_object_foreach(o, key, v) {
    cl_pb_begin(b, TE_ANNOTATIONS);
    cl_pb_str(b, DA_NAME, key);
    switch (json_object_get_type(v)) {
    case json_type_boolean: cl_pb_uint(b, DA_BOOL, (uint64_t)json_object_get_boolean(v)); break;
    case json_type_int: cl_pb_int(b, DA_INT, json_object_get_int64(v)); break;
    case json_type_double: cl_pb_double(b, DA_DOUBLE, json_object_get_double(v)); break;
    case json_type_string: cl_pb_str(b, DA_STRING, json_object_get_string(v)); break;
    default: cl_pb_str(b, DA_JSON, json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    }
    cl_pb_end(b);
  }
}

/* A JSON number: 1 with *i when it is an integer within int64 (nanosecond timestamps are
 * 19 digits: a double would round them), else 0 with *d. */
static int number_of(cl_str_t v, int64_t *i, double *d) {
  int k = v.p[0] == '-', neg = k;
  uint64_t x = 0;
  for (; k < v.n && k - neg < 19 && v.p[k] >= '0' && v.p[k] <= '9'; k++) x = x * 10 + (uint64_t)(v.p[k] - '0');
  if (k == v.n && k > neg && x <= (uint64_t)INT64_MAX) { *i = neg ? -(int64_t)x : (int64_t)x; return 1; }
  char num[64];
  int n = v.n < (int)sizeof num - 1 ? v.n : (int)sizeof num - 1;
  memcpy(num, v.p, (size_t)n); num[n] = 0;
  *d = strtod(num, NULL);
  return 0;
}

/* One argument's value from its raw JSON text. */
static void annotation_value(cl_pft_seq *s, cl_str_t v) {
  char c = v.p[0];
  if (c == '"') {
    cl_str_t in = { v.p + 1, v.n - 2 };
    if (in.n <= STR_INTERN_MAX && s->in[K_STR].n < STR_INTERN_TABLE) cl_pb_uint(&s->out, DA_STRING_IID, intern(s, K_STR, in));
    else cl_pb_str(&s->out, DA_STRING, unescaped(s, in.p, (size_t)in.n));
  } else if (c == 't' || c == 'f') cl_pb_uint(&s->out, DA_BOOL, c == 't');
  else if (c == '{' || c == '[' || c == 'n') cl_pb_bytes(&s->out, DA_JSON, v.p, (size_t)v.n);
  else {
    int64_t i; double d;
    if (number_of(v, &i, &d)) cl_pb_int(&s->out, DA_INT, i); else cl_pb_double(&s->out, DA_DOUBLE, d);
  }
}

static void annotations(cl_pft_seq *s, const cl_ev *ev) {
  if (!ev->args.p) return;
  const char *p = ev->args.p, *e = ev->args.p + ev->args.n;
  cl_str_t k, v;
  while (cl_json_member(&p, e, &k, &v)) {
    cl_pb_begin(&s->out, TE_ANNOTATIONS);
    cl_pb_uint(&s->out, DA_NAME_IID, intern(s, K_ANN, k));
    annotation_value(s, v);
    cl_pb_end(&s->out);
  }
}

/* ---- tracks ---------------------------------------------------------------------------- */
static track *tid_track(cl_pft_seq *s, int64_t tid) {
  int added;
  uint32_t id = cl_strtab_id(&s->tids, &tid, sizeof tid, &added);
  if (added) CL_PUSH(s->tracks, ((track){ .uuid = s->proc_uuid + ++s->ntracks, .tid = tid }));
  return &s->tracks.a[id - 1];
}

/* A thread track: described when first used, again when its name or order arrives later. */
static void describe(cl_pft_seq *s, track *t) {
  packet_begin(s, 0, 0, 0);
  cl_pb_begin(&s->out, PKT_TRACK_DESCRIPTOR);
  cl_pb_uint(&s->out, TD_UUID, t->uuid);
  cl_pb_uint(&s->out, TD_PARENT_UUID, s->proc_uuid);
  if (t->name) cl_pb_str(&s->out, TD_NAME, t->name);
  cl_pb_begin(&s->out, TD_THREAD);
  cl_pb_int(&s->out, THD_PID, s->rank);
  cl_pb_int(&s->out, THD_TID, t->tid);
  if (t->has_sort) cl_pb_int(&s->out, THD_SORT_INDEX, t->sort);
  if (t->name) cl_pb_str(&s->out, THD_NAME, t->name);
  cl_pb_end(&s->out);
  cl_pb_end(&s->out);
  packet_end(s);
  t->described = 1;
}

static uint64_t event_track(cl_pft_seq *s, const cl_ev *ev) {
  track *t = tid_track(s, ev->tid_is_num ? ev->tid : 0);
  if (!t->described) describe(s, t);
  return t->uuid;
}

/* thread_name / thread_sort_index: kept for the track's descriptor. */
static void metadata(cl_pft_seq *s, const cl_ev *ev) {
  int is_name = cl_str_eq(ev->name, "thread_name"), is_sort = cl_str_eq(ev->name, "thread_sort_index");
  if (!is_name && !is_sort) return;   /* process name and order: the merge gives its own */
  track *t = tid_track(s, ev->tid_is_num ? ev->tid : 0);
  if (is_name) {
    free(t->name);
    t->name = strdup(unescaped(s, ev->arg_name.p, (size_t)ev->arg_name.n));
  } else if (ev->args.p) {
    const char *p = ev->args.p, *e = ev->args.p + ev->args.n;
    cl_str_t k, v;
    while (cl_json_member(&p, e, &k, &v))
      if (cl_str_eq(k, "sort_index")) { t->sort = strtoll(v.p, NULL, 10); t->has_sort = 1; }
  }
  if (t->described) describe(s, t);
}

/* A counter event: one counter track per (name, series), under the process. */
static void counters(cl_pft_seq *s, const cl_ev *ev, int64_t ts) {
  if (!ev->args.p) return;
  const char *p = ev->args.p, *e = ev->args.p + ev->args.n;
  cl_str_t k, v;
  int nseries = 0;
  while (cl_json_member(&p, e, &k, &v)) nseries++;
  p = ev->args.p;
  while (cl_json_member(&p, e, &k, &v)) {
    if (v.p[0] != '-' && (v.p[0] < '0' || v.p[0] > '9')) continue;
    char key[512];
    int kn = snprintf(key, sizeof key, "%.*s%c%.*s", ev->name.n, ev->name.p ? ev->name.p : "", 0, k.n, k.p);
    if (kn >= (int)sizeof key) kn = (int)sizeof key - 1;
    int added;
    uint32_t id = cl_strtab_id(&s->counters, key, (size_t)kn, &added);
    if (added) {
      uint64_t uuid = s->proc_uuid + ++s->ntracks;
      CL_PUSH(s->counter_uuid, uuid);
      char name[512], series[256];
      cl_str_unescape(k, series, sizeof series);
      snprintf(name, sizeof name, nseries > 1 ? "%s %s" : "%s", unescaped(s, ev->name.p ? ev->name.p : "", (size_t)ev->name.n),
               series);
      cl_utf8_cut(name);   /* fuzz_pftrace found a long name written cut mid-character */
      packet_begin(s, 0, 0, 0);
      cl_pb_begin(&s->out, PKT_TRACK_DESCRIPTOR);
      cl_pb_uint(&s->out, TD_UUID, uuid);
      cl_pb_uint(&s->out, TD_PARENT_UUID, s->proc_uuid);
      cl_pb_str(&s->out, TD_NAME, name);
      cl_pb_begin(&s->out, TD_COUNTER);
      cl_pb_end(&s->out);
      cl_pb_end(&s->out);
      packet_end(s);
    }
    packet_begin(s, 1, ts, 0);
    cl_pb_begin(&s->out, PKT_TRACK_EVENT);
    cl_pb_uint(&s->out, TE_TYPE, TYPE_COUNTER);
    cl_pb_uint(&s->out, TE_TRACK_UUID, s->counter_uuid.a[id - 1]);
    int64_t i; double d;
    if (number_of(v, &i, &d)) cl_pb_int(&s->out, TE_COUNTER_VALUE, i); else cl_pb_double(&s->out, TE_DOUBLE_COUNTER_VALUE, d);
    cl_pb_end(&s->out);
    packet_end(s);
  }
}

/* A named event on track `uuid`: slice begin, instant or flow step. */
static void track_event(cl_pft_seq *s, uint64_t uuid, const cl_ev *ev, int64_t ts, int type, uint32_t flow_field,
                        uint64_t flow) {
  packet_begin(s, 1, ts, 1);
  cl_pb_begin(&s->out, PKT_TRACK_EVENT);
  cl_pb_uint(&s->out, TE_TYPE, (uint64_t)type);
  cl_pb_uint(&s->out, TE_TRACK_UUID, uuid);
  if (ev->cat_s.p) cl_pb_uint(&s->out, TE_CATEGORY_IIDS, intern(s, K_CAT, ev->cat_s));
  cl_pb_uint(&s->out, TE_NAME_IID, intern(s, K_NAME, ev->name));
  annotations(s, ev);
  if (flow) cl_pb_fixed64(&s->out, flow_field, flow);
  cl_pb_end(&s->out);
  packet_end(s);
}

static void named_event(cl_pft_seq *s, const cl_ev *ev, int64_t ts, int type, uint32_t flow_field, uint64_t flow) {
  track_event(s, event_track(s, ev), ev, ts, type, flow_field, flow);
}

static void track_end(cl_pft_seq *s, uint64_t uuid, int64_t ts) {
  packet_begin(s, 1, ts, 0);
  cl_pb_begin(&s->out, PKT_TRACK_EVENT);
  cl_pb_uint(&s->out, TE_TYPE, TYPE_SLICE_END);
  cl_pb_uint(&s->out, TE_TRACK_UUID, uuid);
  cl_pb_end(&s->out);
  packet_end(s);
}
static void slice_end(cl_pft_seq *s, const cl_ev *ev, int64_t ts) { track_end(s, event_track(s, ev), ts); }

/* ---- async slices (b/e): lanes under one collapsed group per rank ------------------------ */
/* Where an async track sits in its group: by communicator (as first seen), then the
 * communicator's own tracks (groups, progress, net, copy engine), then by channel number
 * (so "ch 2" before "ch 10") and kind; the shared track past the budget last. */
static int32_t natural_rank(cl_pft_seq *s, const char *name) {
  const char *colon = strstr(name, ": ");
  if (!colon) return INT32_MAX;
  int added;
  uint32_t comm = cl_strtab_id(&s->comms, name, (size_t)(colon - name), &added);
  const char *rest = colon + 2;
  static const char *const kinds[] = {"GPU", "proxy send", "proxy recv", "send steps", "recv steps",
                                      "groups", "proxy progress", "net", "copy engine"};
  int64_t r = (int64_t)(comm < 16384 ? comm : 16384) << 17;
  if (!strncmp(rest, "ch ", 3) && rest[3] >= '0' && rest[3] <= '9') {
    char *end;
    long ch = strtol(rest + 3, &end, 10);
    r += 1024 + (ch < 0 || ch > 4000 ? 4000 : ch) * 16;
    rest = *end == ' ' ? end + 1 : end;
  }
  int k;
  for (k = 0; k < 9 && strcmp(rest, kinds[k]); k++) {}
  return (int32_t)(r + k);
}

static void describe_async(cl_pft_seq *s, uint64_t uuid, uint64_t parent, const char *name, int group, int32_t rank) {
  packet_begin(s, 0, 0, 0);
  cl_pb_begin(&s->out, PKT_TRACK_DESCRIPTOR);
  cl_pb_uint(&s->out, TD_UUID, uuid);
  cl_pb_uint(&s->out, TD_PARENT_UUID, parent);
  cl_pb_str(&s->out, TD_NAME, name);
  if (group) cl_pb_uint(&s->out, TD_CHILD_ORDERING, ORDER_EXPLICIT);
  else cl_pb_int(&s->out, TD_SIBLING_ORDER_RANK, rank);
  cl_pb_end(&s->out);
  packet_end(s);
}

/* The lane for a slice opening an id at [ts, end] (end unknown: INT64_MAX until its "e");
 * SIZE_MAX past ASYNC_LANES. */
static size_t async_lane(cl_pft_seq *s, const cl_ev *ev, int64_t ts, int64_t end) {
  int added;
  uint32_t nm = cl_strtab_id(&s->anames, ev->name.p ? ev->name.p : "", (size_t)ev->name.n, &added);
  size_t i;
  for (i = 0; i < s->lanes.n && (s->lanes.a[i].name != nm || s->lanes.a[i].end > ts); i++) {}
  if (i == s->lanes.n) {
    if (s->lanes.n == ASYNC_LANES) return SIZE_MAX;
    if (!s->detail_uuid) {
      s->detail_uuid = s->proc_uuid + ++s->ntracks;
      describe_async(s, s->detail_uuid, s->proc_uuid, "detail (communicators, channels)", 1, 0);
    }
    char name[512];
    snprintf(name, sizeof name, "%s", unescaped(s, ev->name.p ? ev->name.p : "", (size_t)ev->name.n));
    cl_utf8_cut(name);
    CL_PUSH(s->lanes, ((lane){ s->proc_uuid + ++s->ntracks, nm, 0 }));
    describe_async(s, s->lanes.a[i].uuid, s->detail_uuid, name, 0, natural_rank(s, name));
  }
  if (end > s->lanes.a[i].end) s->lanes.a[i].end = end;
  return i;
}

/* A "b" opens a slice on its id's lane (a new id: a free lane of its name), an "e" closes the
 * innermost one open there; an "e" of no open id, or a "b" past ASYNC_OPEN open ids or
 * ASYNC_LANES lanes, is not carried. */
static void async_event(cl_pft_seq *s, const cl_ev *ev, int64_t ts, uint64_t flow) {
  char key[120];
  int n = cl_ev_async_key(ev, key, sizeof key), i;
  for (i = 0; n >= 0 && i < s->nopen && (s->open[i].n != n || memcmp(s->open[i].key, key, (size_t)n)); i++) {}
  int found = n >= 0 && i < s->nopen;
  if (ev->ph == 'e') {
    if (!found) { s->not_carried++; return; }
    lane *l = &s->lanes.a[s->open[i].lane];
    track_end(s, l->uuid, ts);
    if (--s->open[i].depth == 0) {
      if (l->end == INT64_MAX) l->end = ts;
      s->open[i] = s->open[--s->nopen];
    }
    return;
  }
  if (!found) {
    size_t l;
    if (n < 0 || s->nopen == ASYNC_OPEN ||
        (l = async_lane(s, ev, ts, ev->has_dur && ev->dur_ns >= 0 ? ts + ev->dur_ns : INT64_MAX)) == SIZE_MAX) {
      s->not_carried++;
      return;
    }
    i = s->nopen++;
    memcpy(s->open[i].key, key, (size_t)n);
    s->open[i].n = n; s->open[i].depth = 0; s->open[i].lane = l;
  }
  s->open[i].depth++;
  track_event(s, s->lanes.a[s->open[i].lane].uuid, ev, ts, TYPE_SLICE_BEGIN, TE_FLOW_IDS, flow);
}

void cl_pft_event(cl_pft_seq *s, const cl_ev *ev, int64_t ts, uint64_t flow) {
  if (ev->ph == 'M') { metadata(s, ev); return; }
  if (!ev->has_ts) { s->not_carried++; return; }
  switch (ev->ph) {
  case 'X':
    named_event(s, ev, ts, TYPE_SLICE_BEGIN, TE_FLOW_IDS, flow);
    slice_end(s, ev, ts + (ev->has_dur && ev->dur_ns > 0 ? ev->dur_ns : 0));
    break;
  case 'B': named_event(s, ev, ts, TYPE_SLICE_BEGIN, TE_FLOW_IDS, flow); break;
  case 'E': slice_end(s, ev, ts); break;
  case 'i': case 'I': named_event(s, ev, ts, TYPE_INSTANT, TE_FLOW_IDS, flow); break;
  case 's': case 't': case 'f':   /* a flow step: an instant on its track, carrying the flow */
    if (!ev->has_id || !flow) { s->not_carried++; break; }
    named_event(s, ev, ts, TYPE_INSTANT, ev->ph == 'f' ? TE_TERMINATING_FLOW_IDS : TE_FLOW_IDS, flow);
    break;
  case 'C': counters(s, ev, ts); break;
  case 'b': case 'e': async_event(s, ev, ts, flow); break;
  default: s->not_carried++;   /* async instants (n), object and sample events */
  }
}

cl_pft_seq *cl_pft_seq_new(int rank, const char *pname, int64_t ts, json_object *meta) {
  cl_pft_seq *s = cl_xcalloc(1, sizeof *s);
  s->rank = rank; s->seq = (uint32_t)rank + 2; s->proc_uuid = (uint64_t)(rank + 1) << TRACK_BITS;
  cl_pb_begin(&s->out, TRACE_PACKET);
  cl_pb_uint(&s->out, PKT_SEQ_ID, s->seq);
  cl_pb_uint(&s->out, PKT_SEQ_FLAGS, SEQ_STATE_CLEARED);
  cl_pb_uint(&s->out, PKT_FIRST_ON_SEQ, 1);
  cl_pb_begin(&s->out, PKT_TRACK_DESCRIPTOR);
  cl_pb_uint(&s->out, TD_UUID, s->proc_uuid);
  cl_pb_begin(&s->out, TD_PROCESS);
  cl_pb_int(&s->out, PD_PID, rank);
  cl_pb_int(&s->out, PD_SORT_INDEX, rank);
  cl_pb_str(&s->out, PD_NAME, pname);
  cl_pb_end(&s->out);
  cl_pb_end(&s->out);
  cl_pb_end(&s->out);
  packet_begin(s, 1, ts, 0);
  cl_pb_begin(&s->out, PKT_TRACK_EVENT);
  cl_pb_uint(&s->out, TE_TYPE, TYPE_INSTANT);
  cl_pb_uint(&s->out, TE_TRACK_UUID, s->proc_uuid);
  cl_pb_str(&s->out, TE_NAME, "commlens_clock");
  json_annotations(&s->out, meta);
  cl_pb_end(&s->out);
  packet_end(s);
  return s;
}

const uint8_t *cl_pft_take(cl_pft_seq *s, size_t *n) {
  *n = s->out.n;
  s->out.n = 0;   /* the bytes stay valid until the next packet is written */
  return s->out.d;
}

int64_t cl_pft_seq_free(cl_pft_seq *s) {
  int64_t nc = s->not_carried;
  for (int k = 0; k < K_COUNT; k++) cl_strtab_free(&s->in[k]);
  for (size_t i = 0; i < s->tracks.n; i++) free(s->tracks.a[i].name);
  cl_strtab_free(&s->tids); cl_strtab_free(&s->counters);
  cl_strtab_free(&s->anames); cl_strtab_free(&s->comms); free(s->lanes.a);
  free(s->tracks.a); free(s->counter_uuid.a); free(s->fresh.a); free(s->buf);
  cl_pb_free(&s->out); free(s);
  return nc;
}

uint8_t *cl_pft_merge_header(int64_t ts, json_object *meta, size_t *n) {
  cl_pb b = {0};
  cl_pb_begin(&b, TRACE_PACKET);
  cl_pb_uint(&b, PKT_SEQ_ID, SEQ_MERGE);
  cl_pb_uint(&b, PKT_SEQ_FLAGS, SEQ_STATE_CLEARED);
  cl_pb_begin(&b, PKT_TRACK_DESCRIPTOR);
  cl_pb_uint(&b, TD_UUID, UUID_MERGE);
  cl_pb_str(&b, TD_NAME, "commlens merge");
  cl_pb_end(&b);
  cl_pb_end(&b);
  cl_pb_begin(&b, TRACE_PACKET);
  cl_pb_uint(&b, PKT_TIMESTAMP, (uint64_t)ts);
  cl_pb_uint(&b, PKT_SEQ_ID, SEQ_MERGE);
  cl_pb_begin(&b, PKT_TRACK_EVENT);
  cl_pb_uint(&b, TE_TYPE, TYPE_INSTANT);
  cl_pb_uint(&b, TE_TRACK_UUID, UUID_MERGE);
  cl_pb_str(&b, TE_NAME, "commlens_merge");
  json_annotations(&b, meta);
  cl_pb_end(&b);
  cl_pb_end(&b);
  *n = b.n;
  return b.d;
}
