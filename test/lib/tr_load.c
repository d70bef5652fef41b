/* tr_load.c (tests): whole-file json-c loader of one per-rank trace and the checks tests
 * share. Owns the parsed tree (tr_free); everything it hands out is borrowed from it. */
#include "tr_load.h"
#include "plugin/output/tracks.h"
#include <math.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static char *read_all(const char *path, size_t *len) {
  gzFile gz = gzopen(path, "rb");   /* reads plain files too */
  if (!gz) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (!buf) break;
    if (n + 65536 + 1 > cap) {
      char *nb = realloc(buf, cap * 2);
      if (!nb) { free(buf); buf = NULL; break; }
      buf = nb;
      cap *= 2;
    }
    int r = gzread(gz, buf + n, 65536);
    if (r < 0) { free(buf); buf = NULL; break; }
    if (r == 0) break;
    n += (size_t)r;
  }
  gzclose(gz);
  if (buf) buf[n] = 0;
  *len = n;
  return buf;
}

static int parse(tr_trace *t, const char *path, char *err, size_t errn) {
  memset(t, 0, sizeof *t);
  size_t len = 0;
  char *text = read_all(path, &len);
  if (!text) { snprintf(err, errn, "cannot read %s: %s", path, strerror(errno)); return -1; }
  json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
  json_object *root = json_tokener_parse_ex(tok, text, (int)len);
  enum json_tokener_error je = json_tokener_get_error(tok);
  size_t off = json_tokener_get_parse_end(tok);
  json_tokener_free(tok);
  if (!root || je != json_tokener_success) {
    snprintf(err, errn, "%s: not valid JSON (%s at byte %zu of %zu)", path,
             json_tokener_error_desc(je), off, len);
    if (root) json_object_put(root);
    free(text);
    return -1;
  }
  while (off < len && (text[off] == ' ' || text[off] == '\n' || text[off] == '\r' || text[off] == '\t')) off++;
  free(text);
  if (off != len) {
    snprintf(err, errn, "%s: trailing bytes after the JSON object at %zu", path, off);
    json_object_put(root);
    return -1;
  }
  t->root = root;
  if (!json_object_is_type(root, json_type_object)) { snprintf(err, errn, "%s: top level is not an object", path); tr_free(t); return -1; }
  json_object_object_get_ex(root, "commlens", &t->header);
  json_object_object_get_ex(root, "commlensStats", &t->stats);
  if (!json_object_object_get_ex(root, "traceEvents", &t->events) ||
      !json_object_is_type(t->events, json_type_array)) {
    snprintf(err, errn, "%s: no traceEvents array", path);
    tr_free(t);
    return -1;
  }
  t->n = json_object_array_length(t->events);
  return 0;
}

static int check_view(json_object *events, char *msg, size_t n, int viewer);
static int check_async(json_object *events, char *msg, size_t n, int viewer, int convert);
int tr_load(tr_trace *t, const char *path, char *err, size_t errn) {
  if (parse(t, path, err, errn)) return -1;
  char first[512];
  /* tr_check_tracks, with the async slices turned into slices by the exact pass (a trace that
   * fails is freed whatever the pass did) */
  int bad = check_async(t->events, first, sizeof first, 0, 1);
  if (!bad) bad = check_async(t->events, first, sizeof first, 1, 0);
  if (!bad) bad = check_view(t->events, first, sizeof first, 0);
  if (!bad) bad = check_view(t->events, first, sizeof first, 1);
  if (!bad) return 0;
  snprintf(err, errn, "%d slices break the track rules (nesting, exact non-negative times, async b/e pairs); "
           "first: %s (in %s)", bad, first, path);
  tr_free(t);
  return -1;
}

void tr_free(tr_trace *t) {
  if (t->root) json_object_put(t->root);
  memset(t, 0, sizeof *t);
}

json_object *tr_event(const tr_trace *t, size_t i) { return json_object_array_get_idx(t->events, i); }

static json_object *field(json_object *o, const char *k) {
  json_object *v = NULL;
  if (o && json_object_is_type(o, json_type_object)) json_object_object_get_ex(o, k, &v);
  return v;
}
static const char *str_field(json_object *o, const char *k) {
  json_object *v = field(o, k);
  return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

char tr_ph(json_object *ev) { const char *s = str_field(ev, "ph"); return s ? s[0] : 0; }
const char *tr_cat(json_object *ev) { return str_field(ev, "cat"); }
const char *tr_name(json_object *ev) { return str_field(ev, "name"); }

int tr_us_text_to_ns(const char *s, int64_t *ns) {
  int neg = 0;
  if (*s == '-') { neg = 1; s++; }
  if (*s < '0' || *s > '9') return -1;
  int64_t whole = 0, frac = 0;
  while (*s >= '0' && *s <= '9') whole = whole * 10 + (*s++ - '0');
  if (*s == '.') {
    s++;
    int d = 0;
    while (*s >= '0' && *s <= '9') { if (d < 3) frac = frac * 10 + (*s - '0'); d++; s++; }
    if (d == 0) return -1;
    for (; d < 3; d++) frac *= 10;
  }
  if (*s) return -1;   /* exponents and the like are not our format */
  int64_t v = whole * 1000 + frac;
  *ns = neg ? -v : v;
  return 0;
}

static int num_ns(json_object *v, int64_t *ns) {
  if (!v) return -1;
  if (json_object_is_type(v, json_type_int)) { *ns = json_object_get_int64(v) * 1000; return 0; }
  if (!json_object_is_type(v, json_type_double)) return -1;
  /* json-c keeps the text a double was parsed from: read it back exactly */
  return tr_us_text_to_ns(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), ns);
}
int tr_ts_ns(json_object *ev, int64_t *ns) { return num_ns(field(ev, "ts"), ns); }
int tr_dur_ns(json_object *ev, int64_t *ns) { return num_ns(field(ev, "dur"), ns); }

int64_t tr_pid(json_object *ev) {
  json_object *v = field(ev, "pid");
  return v && json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
}
void tr_tid_key(json_object *ev, char *buf, size_t n) {
  json_object *v = field(ev, "tid");
  if (!v) snprintf(buf, n, "-");
  else if (json_object_is_type(v, json_type_int)) snprintf(buf, n, "%lld", (long long)json_object_get_int64(v));
  else snprintf(buf, n, "%s", json_object_get_string(v));
}

json_object *tr_args(json_object *ev) { return field(ev, "args"); }
json_object *tr_arg(json_object *ev, const char *key) { return field(field(ev, "args"), key); }
int tr_arg_i64(json_object *ev, const char *key, int64_t *out) {
  json_object *v = tr_arg(ev, key);
  if (!v || !json_object_is_type(v, json_type_int)) return -1;
  *out = json_object_get_int64(v);
  return 0;
}
const char *tr_arg_str(json_object *ev, const char *key) { return str_field(field(ev, "args"), key); }
int tr_arg_bool(json_object *ev, const char *key) {
  json_object *v = tr_arg(ev, key);
  return v && json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

static int obj_i64(json_object *o, const char *key, int64_t *out) {
  json_object *v = field(o, key);
  if (!v || !json_object_is_type(v, json_type_int)) return -1;
  *out = json_object_get_int64(v);
  return 0;
}
int tr_header_i64(const tr_trace *t, const char *key, int64_t *out) { return obj_i64(t->header, key, out); }
int tr_stats_i64(const tr_trace *t, const char *key, int64_t *out) { return obj_i64(t->stats, key, out); }

size_t tr_count(const tr_trace *t, char ph, const char *cat) {
  size_t n = 0;
  for (size_t i = 0; i < t->n; i++) {
    json_object *ev = tr_event(t, i);
    if (ph && tr_ph(ev) != ph) continue;
    if (tr_arg_bool(ev, "phase")) continue;   /* a proxy step's phase: part of its step */
    const char *c = tr_cat(ev);
    if (cat && (!c || strcmp(c, cat))) continue;
    n++;
  }
  return n;
}

/* ---- nesting: Perfetto stacks the X slices of one (pid, tid); two of them must be disjoint or
 * one inside the other (touching ends are fine) ---- */
typedef struct { char key[256]; int64_t ts, end; size_t idx; } slice;

static int by_track_time(const void *a, const void *b) {
  const slice *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  if (c) return c;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  if (x->end != y->end) return x->end > y->end ? -1 : 1;   /* outer first */
  return 0;
}

static void slice_text(char *buf, size_t n, json_object *ev, const slice *s) {
  snprintf(buf, n, "%s \"%s\" [%lld, %lld) ns", tr_cat(ev) ? tr_cat(ev) : "?", tr_name(ev) ? tr_name(ev) : "?",
           (long long)s->ts, (long long)s->end);
}

/* What a viewer that reads ts and dur as doubles of microseconds sees, in ns: Perfetto's JSON
 * importer computes llround(value * 1000.0); at Unix-epoch magnitudes (~1.8e15 us) a double's
 * step is 0.25 us and the product's 256 ns, so two exact times can swap sides of a boundary. */
static int viewer_ns(json_object *v, int64_t *ns) {
  if (!v) return -1;
  *ns = llround(strtod(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), NULL) * 1000.0);
  return 0;
}

int tr_check_events(json_object *events, char *msg, size_t n) {
  int bad = check_async(events, msg, n, 0, 0);
  if (!bad) bad = check_async(events, msg, n, 1, 0);
  if (!bad) bad = check_view(events, msg, n, 0);
  if (!bad) bad = check_view(events, msg, n, 1);
  return bad;
}

/* ---- async slices: Perfetto keys an async slice's track by (pid, cat, id2.local, or id with
 * global scope); in time order (file order among equal times) a "b" opens a slice inside the
 * innermost one open on its track and an "e" closes that innermost one, whose name it must
 * carry. So: ids matched, every "b" closed, no "e" without its "b", children closed before
 * their parent, and a "b"'s "dur" (ours carry it) equal to its "e" minus its "b". ---- */
typedef struct { char key[160]; uint64_t h; int64_t ts; size_t idx; char ph; } async_ev;

static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static int by_key_time(const void *a, const void *b) {   /* by key (its hash first: fast), then time */
  const async_ev *x = a, *y = b;
  if (x->h != y->h) return x->h < y->h ? -1 : 1;
  int c = strcmp(x->key, y->key);
  if (c) return c;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;   /* the file's order among equal times */
}

/* The async track key of a b/e event; 0 if it has none (no pid, no id). */
static int async_key(json_object *ev, char *key, size_t n) {
  json_object *id2 = field(ev, "id2"), *id = field(ev, "id"), *v;
  const char *scope = "global", *idt = NULL;
  if (id) idt = json_object_get_string(id);
  else if ((v = field(id2, "local"))) { scope = "local"; idt = json_object_get_string(v); }
  else if ((v = field(id2, "global"))) idt = json_object_get_string(v);
  if (!idt || !field(ev, "pid")) return 0;
  /* a global id is one track across processes; a local one is the process's own */
  if (!strcmp(scope, "local")) snprintf(key, n, "%lld/%s/local:%s", (long long)tr_pid(ev), tr_cat(ev) ? tr_cat(ev) : "", idt);
  else snprintf(key, n, "-/%s/global:%s", tr_cat(ev) ? tr_cat(ev) : "", idt);
  return 1;
}

/* convert: each matched "b" becomes the X slice it draws (dur from its "e", tid "async <key>"),
 * so the tests' slice queries see async slices as slices (callers convert only what they
 * keep after a clean check). */
static int check_async(json_object *events, char *msg, size_t n, int viewer, int convert) {
  size_t ne = events ? json_object_array_length(events) : 0, k = 0, depth = 0;
  async_ev *a = calloc(ne + 1, sizeof *a);
  size_t *stack = calloc(ne + 1, sizeof *stack);
  int bad = 0;
  if (!a || !stack) { free(a); free(stack); if (msg && n) snprintf(msg, n, "out of memory"); return 1; }
#define PROBLEM(...) do { if (!bad++ && msg) snprintf(msg, n, __VA_ARGS__); } while (0)
  for (size_t i = 0; i < ne; i++) {
    json_object *ev = json_object_array_get_idx(events, i);
    char ph = tr_ph(ev), tid[16];
    if (ph == 'X') {   /* a "b" that tr_async_as_slices turned into its slice is still that "b" */
      tr_tid_key(ev, tid, sizeof tid);
      if (strncmp(tid, "async ", 6)) continue;
      ph = 'b';
    }
    if (ph != 'b' && ph != 'e') continue;
    if (!async_key(ev, a[k].key, sizeof a[k].key)) { PROBLEM("event %zu: async %c without pid or id", i, ph); continue; }
    if (tr_ts_ns(ev, &a[k].ts)) { PROBLEM("event %zu: async %c without exact ts", i, ph); continue; }
    if (viewer) viewer_ns(field(ev, "ts"), &a[k].ts);
    a[k].h = fnv1a(a[k].key); a[k].idx = i; a[k].ph = ph; k++;
  }
  qsort(a, k, sizeof *a, by_key_time);
  const char *how = viewer ? " (as a viewer reading ts as a double sees it: Perfetto)" : "";
  for (size_t i = 0; i <= k; i++) {
    if (i == k || (i > 0 && strcmp(a[i].key, a[i - 1].key))) {   /* a track ends: all closed? */
      if (depth) PROBLEM("async track %s: \"%s\" at %lld ns never closed (no \"e\")%s", a[stack[depth - 1]].key,
                         tr_name(json_object_array_get_idx(events, a[stack[depth - 1]].idx)), (long long)a[stack[depth - 1]].ts, how);
      depth = 0;
      if (i == k) break;
    }
    json_object *ev = json_object_array_get_idx(events, a[i].idx);
    if (a[i].ph == 'b') { stack[depth++] = i; continue; }
    if (!depth) { PROBLEM("async track %s: \"e\" at %lld ns without its \"b\"%s", a[i].key, (long long)a[i].ts, how); continue; }
    async_ev *o = &a[stack[--depth]];
    json_object *b = json_object_array_get_idx(events, o->idx);
    const char *bn = tr_name(b), *en = tr_name(ev);
    if (en && (!bn || strcmp(bn, en))) {
      PROBLEM("async track %s: \"e\" of \"%s\" at %lld ns closes \"%s\" (opened at %lld ns): not nested%s", a[i].key, en,
              (long long)a[i].ts, bn ? bn : "?", (long long)o->ts, how);
      continue;
    }
    int64_t bts, ets, dur;
    if (tr_ts_ns(b, &bts) || tr_ts_ns(ev, &ets)) continue;
    if (field(b, "dur") && (tr_dur_ns(b, &dur) || dur != ets - bts))
      PROBLEM("async track %s: \"%s\" has dur %lld ns but its \"e\" comes %lld ns after its \"b\"", a[i].key, bn,
              (long long)dur, (long long)(ets - bts));
    if (convert && tr_ph(b) == 'b') {
      char tid[200], us[40];
      snprintf(tid, sizeof tid, "async %s", o->key);
      int64_t d = ets - bts;
      snprintf(us, sizeof us, "%s%lld.%03lld", d < 0 ? "-" : "", (long long)(d < 0 ? -d : d) / 1000, (long long)(d < 0 ? -d : d) % 1000);
      json_object_object_add(b, "ph", json_object_new_string("X"));
      json_object_object_add(b, "dur", json_object_new_double_s((double)d / 1000.0, us));
      json_object_object_add(b, "tid", json_object_new_string(tid));
    }
  }
#undef PROBLEM
  free(a);
  free(stack);
  return bad;
}

void tr_async_as_slices(json_object *events) { check_async(events, NULL, 0, 0, 1); }

/* viewer 0: exact ns from the text; 1: as a double-reading viewer (viewer_ns) sees them. */
static int check_view(json_object *events, char *msg, size_t n, int viewer) {
  size_t ne = events ? json_object_array_length(events) : 0, k = 0, depth = 0;
  slice *s = calloc(ne + 1, sizeof *s);
  size_t *stack = calloc(ne + 1, sizeof *stack);   /* indexes into s, outermost first */
  int bad = 0;
  if (msg && n) msg[0] = 0;
  if (!s || !stack) { free(s); free(stack); if (msg && n) snprintf(msg, n, "out of memory"); return 1; }
#define PROBLEM(...) do { if (!bad++ && msg) snprintf(msg, n, __VA_ARGS__); } while (0)
  for (size_t i = 0; i < ne; i++) {
    json_object *ev = json_object_array_get_idx(events, i);
    if (tr_ph(ev) != 'X') continue;
    int64_t ts, dur;
    char tid[200];
    if (tr_ts_ns(ev, &ts) || tr_dur_ns(ev, &dur)) { PROBLEM("event %zu: X without exact ts/dur", i); continue; }
    tr_tid_key(ev, tid, sizeof tid);
    if (!strncmp(tid, "async ", 6)) continue;   /* an async slice: its b/e are checked as such (check_async) */
    if (viewer && (viewer_ns(field(ev, "ts"), &ts) || viewer_ns(field(ev, "dur"), &dur))) continue;
    if (ts < 0 || dur < 0) { PROBLEM("event %zu (%s): negative ts or dur", i, tr_name(ev)); continue; }
    snprintf(s[k].key, sizeof s[k].key, "%lld/%s", (long long)tr_pid(ev), tid);
    s[k].ts = ts;
    s[k].end = ts + dur;
    s[k].idx = i;
    k++;
  }
  qsort(s, k, sizeof *s, by_track_time);
  for (size_t i = 0; i < k; i++) {
    if (i == 0 || strcmp(s[i].key, s[i - 1].key)) depth = 0;
    while (depth > 0 && s[stack[depth - 1]].end <= s[i].ts) depth--;
    if (depth > 0 && s[i].end > s[stack[depth - 1]].end) {
      const slice *top = &s[stack[depth - 1]];
      char a[160], b[160];
      slice_text(a, sizeof a, json_object_array_get_idx(events, top->idx), top);
      slice_text(b, sizeof b, json_object_array_get_idx(events, s[i].idx), &s[i]);
      PROBLEM("track %s: %s starts inside %s and ends after it%s", s[i].key, b, a,
              viewer ? " (as a viewer reading ts as a double sees it: Perfetto)" : "");
      continue;
    }
    stack[depth++] = i;
  }
#undef PROBLEM
  free(s);
  free(stack);
  return bad;
}

int tr_check_tracks(const tr_trace *t, char *msg, size_t n) { return tr_check_events(t->events, msg, n); }

/* ---- top-level tracks of a process, as Perfetto lays out a loaded trace ---- */
static int seen_add(char ***set, size_t *n, const char *key) {
  for (size_t i = 0; i < *n; i++) if (!strcmp((*set)[i], key)) return 0;
  char **ns = realloc(*set, (*n + 1) * sizeof *ns);
  if (!ns) return 0;
  *set = ns;
  ns[(*n)++] = strdup(key);
  return 1;
}

int tr_overlap_lanes(const tr_trace *t, int64_t pid) {
  int n = 0;
  for (size_t i = 0; i < t->n; i++) {
    json_object *ev = tr_event(t, i), *name;
    if (tr_pid(ev) != pid || tr_ph(ev) != 'M' || !tr_name(ev) || strcmp(tr_name(ev), "thread_name")) continue;
    const char *s = json_object_object_get_ex(tr_args(ev), "name", &name) ? json_object_get_string(name) : NULL;
    n += s && strstr(s, "overlapping collectives") && strstr(s, " lane ");
  }
  return n;
}

int tr_top_tracks(const tr_trace *t, int64_t pid, int *nasync, int *late) {
  char **tracks = NULL, **ids = NULL, key[600], tid[256];
  size_t nt = 0, ni = 0;
  int named = 0, named_at_last_own = 0;   /* thread tracks named so far; when the last own async track came */
  for (size_t i = 0; i < t->n; i++) {
    json_object *ev = tr_event(t, i);
    char ph = tr_ph(ev);
    if (tr_pid(ev) != pid) continue;
    if (ph == 'M' && tr_name(ev) && !strcmp(tr_name(ev), "thread_name")) named++;
    if (ph == 'C') {
      json_object_object_foreach(tr_args(ev), series, v) {
        (void)v;
        snprintf(key, sizeof key, "counter %s %s", tr_name(ev) ? tr_name(ev) : "", series);
        seen_add(&tracks, &nt, key);
      }
      continue;
    }
    if (ph != 'X' && ph != 'i' && ph != 'I') continue;
    tr_tid_key(ev, tid, sizeof tid);
    if (strncmp(tid, "async ", 6)) { snprintf(key, sizeof key, "thread %s", tid); seen_add(&tracks, &nt, key); continue; }
    /* an async slice: the first on its id opens it and names the track (others nest in it) */
    if (!seen_add(&ids, &ni, tid)) continue;
    snprintf(key, sizeof key, "async %s", tr_name(ev) ? tr_name(ev) : "");
    if (seen_add(&tracks, &nt, key) && strcmp(key + 6, CL_TRACK_FOLD_NAME)) named_at_last_own = named;
  }
  if (late) *late = named - named_at_last_own;
  if (nasync) {
    *nasync = 0;
    for (size_t i = 0; i < nt; i++) *nasync += !strncmp(tracks[i], "async ", 6);
  }
  for (size_t i = 0; i < nt; i++) free(tracks[i]);
  for (size_t i = 0; i < ni; i++) free(ids[i]);
  free(tracks);
  free(ids);
  return (int)nt;
}
