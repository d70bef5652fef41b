/* trace_read.h: streaming reader for commlens per-rank traces (trace-format.md).
 * Reads plain or gzip JSON through a bounded buffer, hands each traceEvents element to a
 * callback as a parsed view (cl_ev) plus its raw text, and parses the small header and
 * stats objects with json-c. Never holds more than one buffer of the file in memory. */
#ifndef COMMLENS_CLI_TRACE_READ_H
#define COMMLENS_CLI_TRACE_READ_H
#include "tools/commlens/read/trace_info.h"
#include <stdint.h>
#include <stddef.h>

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

typedef void (*cl_ev_fn)(const cl_ev *ev, void *arg);
/* Reads `path` (plain or .gz), calling fn for every complete event. Returns 0 if the file
 * looked like a commlens trace (header seen), -1 otherwise; info->msg says why. With
 * header_only the scan stops at the first event. Only a regular file is read (a FIFO or a
 * symbolic link is refused, never waited on). Damage inside the event array (a corrupt
 * gzip member, invalid JSON) costs the events it touches: everything before it is kept and
 * reading resumes at the next gzip member or event line (info->msg says where and what). */
int cl_trace_scan(const char *path, cl_ev_fn fn, void *arg, cl_info *info, int header_only);
void cl_info_free(cl_info *info);

/* What the digest reader (digest_read.c) shares with this one: opening (a regular file only,
 * never waiting on a FIFO: fd, or -1 with info->msg); the header and stats objects are
 * trace_info.h's. */
int cl_input_open(const char *path, cl_info *info);

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
#endif
