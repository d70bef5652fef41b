/* tr_load.h (tests): loads one commlens per-rank trace file (plain or .gz) whole with
 * json-c, for assertions. Times come from the exact "us.nnn" text, never through a double.
 * Not for large files: the CLI has the streaming reader (tools/commlens/read/trace_read.h). */
#ifndef COMMLENS_TEST_TR_LOAD_H
#define COMMLENS_TEST_TR_LOAD_H
#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  json_object *root;     /* owned; tr_free releases it */
  json_object *header;   /* root["commlens"], borrowed */
  json_object *events;   /* root["traceEvents"], borrowed */
  json_object *stats;    /* root["commlensStats"], borrowed, may be NULL */
  size_t n;              /* number of traceEvents */
} tr_trace;

/* Parses the whole file and checks its tracks (tr_check_tracks): every trace a test loads is
 * held to the track rules. 0 on success; -1 with a reason in err (for broken rules: how many
 * slices and the first offending pair). */
int tr_load(tr_trace *t, const char *path, char *err, size_t errn);
void tr_free(tr_trace *t);

json_object *tr_event(const tr_trace *t, size_t i);
/* Accessors of one event; absent fields give 0 / NULL / -1 as documented. */
char tr_ph(json_object *ev);                 /* 0 if absent */
const char *tr_cat(json_object *ev);         /* NULL if absent */
const char *tr_name(json_object *ev);
int tr_ts_ns(json_object *ev, int64_t *ns);  /* 0 if present and well-formed */
int tr_dur_ns(json_object *ev, int64_t *ns);
int64_t tr_pid(json_object *ev);             /* -1 if absent or not an integer */
/* tid as a string key ("12" for numbers), for grouping tracks. */
void tr_tid_key(json_object *ev, char *buf, size_t n);
json_object *tr_args(json_object *ev);
json_object *tr_arg(json_object *ev, const char *key);
int tr_arg_i64(json_object *ev, const char *key, int64_t *out);   /* 0 if an integer */
const char *tr_arg_str(json_object *ev, const char *key);
int tr_arg_bool(json_object *ev, const char *key);                 /* 1 only if true */

/* Top-level tracks of process `pid` as Perfetto's UI shows a loaded trace (tr_load): a thread
 * track per tid with slices or instants, an async track per name of the slices that open an id
 * (the UI shows a process's async tracks of one name as one), a counter track per (name,
 * series); *nasync (if given): how many of them are async; *late: thread tracks named (in file
 * order: when made) after the last async track of its own (not the shared one past the
 * budget). tools/track_count.py counts the same way. */
int tr_top_tracks(const tr_trace *t, int64_t pid, int *nasync, int *late);
/* Of those, the further lanes of the shared overlap tracks of process pid (thread tracks named
 * "... overlapping collectives ... lane N"): as many as collectives overlap at once, which the
 * order the writer read them in can raise (a lane is taken for a slice before a later one
 * that would have shared it is seen). */
int tr_overlap_lanes(const tr_trace *t, int64_t pid);

/* "us.nnn" JSON number text -> ns. 0 on success. Accepts integers and up to 3 decimals. */
int tr_us_text_to_ns(const char *s, int64_t *ns);

/* Header and stats fields (integers). 0 on success. */
int tr_header_i64(const tr_trace *t, const char *key, int64_t *out);
int tr_stats_i64(const tr_trace *t, const char *key, int64_t *out);

/* Events with this ph (0 = any) and cat (NULL = any); a proxy step's phase (args.phase: a
 * child on its step's async id, with its cat) counts as part of its step, not apart. */
size_t tr_count(const tr_trace *t, char ph, const char *cat);

/* Track checks over X slices grouped by (pid, tid), in exact integer ns: every slice has
 * ts >= 0 and dur >= 0, and nests (sorted by (ts, -dur), a slice that starts inside the
 * enclosing one must not end after it; touching ends are fine). Returns the number of
 * problems and describes the first (the offending pair) in msg. tr_check_events does the
 * same over any array of trace events (a trace body). */
int tr_check_tracks(const tr_trace *t, char *msg, size_t n);
int tr_check_events(json_object *events, char *msg, size_t n);
/* After a clean check: each async slice's "b" becomes the X slice it draws (ph "X", dur from
 * its "e", tid "async <pid/cat/scope:id>"), so slice queries see it; its "e" stays. tr_load
 * does this to every trace it loads. */
void tr_async_as_slices(json_object *events);
#endif
