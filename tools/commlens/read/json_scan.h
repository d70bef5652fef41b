/* json_scan.h: the JSON the CLI reads, without json-c: the lenient scanner the trace reader
 * walks with (fast on our writer's output, correct for any valid JSON), an event's fields read
 * from its text (cl_ev), string helpers, and a strict validator for text passed through
 * verbatim. Every pointer points into the caller's text.
 * Two grammars on purpose: the scanner keeps an event the strict one refuses (a trailing comma,
 * a bare word, a leading zero, an unknown escape inside a value it skips), so a hand-edited or
 * foreign trace still reads; only text copied out verbatim must be strict JSON. */
#ifndef COMMLENS_CLI_JSON_SCAN_H
#define COMMLENS_CLI_JSON_SCAN_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { CAT_OTHER = 0, CAT_API, CAT_GROUP, CAT_COLL, CAT_P2P, CAT_COLL_GPU, CAT_KERNEL_CH,
       CAT_PROXY_OP, CAT_PROXY_STEP, CAT_PROXY_STATE, CAT_PROXY_CTRL, CAT_NET, CAT_CE,
       CAT_GPU_KERNEL, CAT_EXPOSED, CAT_FLOW, CAT_NONE };

/* A string slice inside the reader's buffer, still JSON-escaped. Valid during the callback. */
typedef struct { const char *p; int n; } cl_str_t;

/* One event as the scanner sees it. Fields are only meaningful when their has_* flag is set;
 * The *_v and *_ve pointers bound the raw value text of pid/ts/id (used by merge to rewrite them). */
typedef struct {
  const char *beg, *end;            /* the whole object, '{' .. '}' inclusive */
  char ph; int cat;
  cl_str_t name, cat_s;
  cl_str_t args;                    /* the raw args object, '{' .. '}' ({NULL, 0} if none) */
  int has_ts, has_dur, has_tid, tid_is_num, has_id;
  int64_t ts_ns, dur_ns, tid;
  const char *pid_v, *pid_ve, *ts_v, *ts_ve, *id_v, *id_ve;
  cl_str_t id2;                     /* the raw "id2" value (async slices: {"local":...}), {NULL, 0} if none */
  /* args */
  int has_comm, has_seq, has_channel, has_peer, has_p2p_peer, has_exposed, has_bytes,
      has_nranks, has_device, implausible;
  uint64_t comm; int64_t seq, bytes, exposed_ns; int nranks, channel, peer, device;
  cl_str_t comm_name, func, arg_name;
  int64_t w_gpu, w_peer, w_send, w_recv, w_flush, w_recv_gpu;
  /* v7 (coll_gpu): the application's tag, the kernel phases' split (has_phase: sync_wait_ns seen) */
  int has_tag, has_phase;
  uint64_t user_tag; int64_t sync_wait_ns, compute_ns;
  int ce;                           /* coll_gpu: "source" "cupti_ce" (a copy-engine collective's copies) */
} cl_ev;

/* Reads one event from [p, p+n) (its whole text, '{' .. '}') as the scanner does: 0 with *ev
 * filled (its pointers into the text), -1 when it is no event. */
int cl_ev_parse(const char *p, size_t n, cl_ev *ev);
/* Helpers for the callers. */
/* An async event's (b/e) track key, cat and id (id2, else id) as written, into buf: its
 * length, or -1 when it does not fit. Perfetto keys an async slice's track by them (per pid). */
int cl_ev_async_key(const cl_ev *ev, char *buf, size_t n);
int cl_str_eq(cl_str_t s, const char *lit);
/* "step 12" / "ProfilerStep#12" -> 12; -1 if the name is not a step marker. */
long cl_step_number(cl_str_t name);
/* Unescapes a JSON string slice into buf (bounded, n > 0) as UTF-8; returns buf. Cut short by n,
 * it ends before the character that did not fit; n of s.n + 1 always holds it whole. */
char *cl_str_unescape(cl_str_t s, char *buf, size_t n);
/* Walks the members of a JSON object whose text passed cl_json_valid: *p starts at its '{'
 * and is advanced past each member. Returns 1 with the key (still escaped) and the value's
 * raw text (a string keeps its quotes), 0 after the last member. */
int cl_json_member(const char **p, const char *e, cl_str_t *key, cl_str_t *val);
/* 1 if [p, p+n) is exactly one well-formed JSON value (strict grammar, UTF-8 not checked).
 * The scanner above is lenient about what it skips; text copied through verbatim (merge)
 * is checked with this first. */
int cl_json_valid(const char *p, size_t n);

/* ---- the lenient scanner, for the trace reader's walk. Each returns the position after what
 * it consumed, or NULL when the text ends first (need more data) or is malformed (*bad set). */
static inline const char *cl_json_ws(const char *p, const char *e) {
  while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
  return p;
}
/* A string, p at its opening quote. */
static inline const char *cl_json_str(const char *p, const char *e) {
  const char *s = p + 1;
  for (;;) {
    const char *q = memchr(s, '"', (size_t)(e - s));
    if (!q) return NULL;
    const char *b = q;
    while (b > p + 1 && b[-1] == '\\') b--;
    if (((q - b) & 1) == 0) return q + 1;
    s = q + 1;
  }
}
/* Any value, without looking inside it. */
const char *cl_json_skip(const char *p, const char *e, int *bad);
/* The event object at p ('{'), into *ev. */
const char *cl_ev_scan(const char *p, const char *e, cl_ev *ev, int *bad);
#endif
