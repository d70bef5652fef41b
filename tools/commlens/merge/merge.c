/* merge.c: `commlens merge`: one Perfetto trace from the per-rank traces, as Chrome-trace
 * JSON or as Perfetto's protobuf (pftrace.c). Streams each rank's events to the output
 * (pid = rank, ts shifted onto the reference rank's clock, flow ids made unique), in rank
 * order, with two threads rewriting and one writing; metadata and cross-rank flows come
 * from the instance table. Never holds a rank's events in memory beyond a bounded queue of
 * output chunks. */
#include "tools/commlens/merge/merge.h"
#include "common/utf8.h"
#include "tools/commlens/merge/pftrace.h"
#include "tools/commlens/analyse/clock_align.h"
#include "tools/commlens/merge/csv.h"
#include "tools/commlens/read/progress.h"
#include "tools/commlens/read/digest_read.h"
#include "tools/commlens/read/digest_trace.h"
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <unistd.h>

#define CHUNK (4u << 20)
#define QUEUE_MAX (64u << 20)
#define WARN_BYTES 1e9       /* JSON past this fails in Perfetto's web UI (docs/cli.md says why) */
#define WARN_SIZE "1 GB"
#define WARN_HOW "write --format pftrace (-o OUT.pftrace) instead, or narrow it with --ranks/--comm/--window/--steps"
#define FLOW_ID_BASE (1ull << 52)   /* cross-rank flows: FLOW_ID_BASE + instance */
#define FLOW_LOCAL_BITS 32          /* a file's own flows: (selected index + 1) << 32 | k, below the base */

typedef struct chunk { struct chunk *next; size_t n; char d[CHUNK]; } chunk;
typedef struct { chunk *head, *tail; size_t bytes; int done; } rank_q;

typedef struct {
  cl_job *job; const cl_merge_opts *o;
  int *sel; int nsel;                 /* selected rank indices, in rank order */
  int *qi_of;                         /* rank index -> its place in sel, -1 if not selected */
  int64_t ws, we;                     /* window, aligned ns (inclusive) */
  int64_t t0, t1;                     /* first and last aligned event of the selected ranks */
  rank_q *q; int cur, next;
  pthread_mutex_t mu; pthread_cond_t cv;
  int64_t kept, not_carried, flows_lost, invalid, utf8_mended;
  uint8_t *flow_ok;                   /* pftrace: per instance, 1 if its slices carry a cross-rank flow */
  int64_t base;                       /* aligned ns written as ts 0 in JSON (time_base_unix_ns) */
} merge_ctx;

/* Async slices (b/e of one cat and id, children nested on the id) are kept or left out whole:
 * the slice that opens an id by the filters, its children and its "e" by its fate. Our traces
 * write each one whole (chrome_trace.h), so few are open at once; a file with more open than
 * ASYNC_OPEN (another writer's) has its extra ones kept unfiltered, never cut in half. */
#define ASYNC_OPEN 64
typedef struct { char key[120]; int n, depth, keep; } async_open;

typedef struct {
  merge_ctx *m; int qi; cl_rank *r; chunk *c; int64_t kept;
  async_open aopen[ASYNC_OPEN]; int naopen;
  size_t ncoll;                       /* coll_gpu slices seen: the next one is r->colls.a[ncoll] */
  cl_pft_seq *pft;                    /* pftrace: the rank's packet sequence; NULL for JSON */
  cl_strtab flows;                    /* the file's flow ids (raw text) -> k = 1, 2, ... */
  int64_t flows_lost, invalid;        /* flow events past the id space; events not valid JSON */
  int64_t utf8_mended;                /* invalid UTF-8 bytes in events' strings written as U+FFFD */
  cl_progress_batch prog;
} rank_writer;

static chunk *chunk_new(void) { chunk *c = cl_xmalloc(sizeof *c); c->next = NULL; c->n = 0; return c; }

static void q_push(merge_ctx *m, int qi, chunk *c, int final) {
  pthread_mutex_lock(&m->mu);
  rank_q *q = &m->q[qi];
  if (c) {
    if (q->tail) q->tail->next = c; else q->head = c;
    q->tail = c; q->bytes += c->n;
  }
  if (final) q->done = 1;
  pthread_cond_broadcast(&m->cv);
  /* a rank ahead of the writer waits while its queue is long; the writer's rank never does */
  while (!final && qi != m->cur && m->q[qi].bytes > QUEUE_MAX) pthread_cond_wait(&m->cv, &m->mu);
  pthread_mutex_unlock(&m->mu);
}

static void out_put(rank_writer *w, const char *s, size_t n) {
  while (n) {
    if (w->c->n == CHUNK) { q_push(w->m, w->qi, w->c, 0); w->c = chunk_new(); }
    size_t k = CHUNK - w->c->n; if (k > n) k = n;
    memcpy(w->c->d + w->c->n, s, k); w->c->n += k; s += k; n -= k;
  }
}

static int fmt_us(char *b, int64_t ns) {
  const char *sg = ns < 0 ? "-" : "";
  uint64_t a = ns < 0 ? (uint64_t)(-ns) : (uint64_t)ns;
  return sprintf(b, "%s%llu.%03llu", sg, (unsigned long long)(a / 1000), (unsigned long long)(a % 1000));
}

typedef struct { const char *v, *ve; char s[48]; int n; } repl;

/* A flow id of a rank's file, made unique across ranks for both formats: the k-th distinct
 * id (by its text, so no two ids of a file meet, whatever their size) of the qi-th selected
 * rank becomes (qi + 1) << FLOW_LOCAL_BITS | k: below FLOW_ID_BASE, so never an instance's
 * flow, and below 2^53, where JSON readers that hold numbers as doubles stay exact. 0 when
 * the rank or its ids run past that space (the event is counted and left out). */
static uint64_t file_flow_id(rank_writer *w, const cl_ev *ev) {
  int added;
  uint64_t k = cl_strtab_id(&w->flows, ev->id_v, (size_t)(ev->id_ve - ev->id_v), &added);
  uint64_t hi = (uint64_t)w->qi + 1;
  if (k >> FLOW_LOCAL_BITS || hi >= FLOW_ID_BASE >> FLOW_LOCAL_BITS) { w->flows_lost++; return 0; }
  return hi << FLOW_LOCAL_BITS | k;
}

/* 1 if the filters (--comm, --window, --steps) leave the event out. */
static int filtered(const merge_ctx *m, const cl_rank *r, const cl_ev *ev) {
  if (ev->ph == 'M') return cl_str_eq(ev->name, "process_name") || cl_str_eq(ev->name, "process_sort_index");
  if (m->o->has_comm && ev->has_comm && ev->comm != m->o->comm) return 1;
  if (ev->has_ts && (m->o->has_window || m->o->has_steps)) {
    int64_t a = cl_aligned(r, ev->ts_ns), e = a + (ev->has_dur ? ev->dur_ns : 0);
    if (e < m->ws || a > m->we) return 1;
  }
  return 0;
}

/* An async event's fate (async_open): 1 to keep it. */
static int async_keep(rank_writer *w, const cl_ev *ev) {
  char key[120];
  int n = cl_ev_async_key(ev, key, sizeof key);
  if (n < 0) return ev->ph == 'e' || !filtered(w->m, w->r, ev);   /* untracked: see async_open */
  int i;
  for (i = 0; i < w->naopen && (w->aopen[i].n != n || memcmp(w->aopen[i].key, key, (size_t)n)); i++) {}
  if (i < w->naopen) {                     /* a child, or an "e": its opening slice's fate */
    async_open *o = &w->aopen[i];
    int keep = o->keep;
    if (ev->ph == 'b') o->depth++;
    else if (--o->depth <= 0) w->aopen[i] = w->aopen[--w->naopen];
    return keep;
  }
  if (ev->ph == 'e') return 1;             /* its "b" was not tracked, so kept */
  if (w->naopen == ASYNC_OPEN) return 1;
  async_open *o = &w->aopen[w->naopen++];
  memcpy(o->key, key, (size_t)n); o->n = n; o->depth = 1; o->keep = !filtered(w->m, w->r, ev);
  return o->keep;
}

static void merge_event(rank_writer *w, const cl_ev *ev, size_t coll);
static void on_merge_event(const cl_ev *ev, void *arg) {
  rank_writer *w = arg; merge_ctx *m = w->m; cl_rank *r = w->r;
  cl_progress_count(&w->prog, ev->end - ev->beg);
  size_t coll = SIZE_MAX;   /* the loader's order: every timed X coll_gpu, kept or not */
  if (ev->ph == 'X' && ev->has_ts && ev->cat == CAT_COLL_GPU) coll = w->ncoll++;
  if (ev->ph == 'b' || ev->ph == 'e') { if (!async_keep(w, ev)) return; }
  else if (filtered(m, r, ev)) return;
  /* the scanner is lenient: pass through only valid JSON and UTF-8. An event whose strings hold
   * invalid UTF-8 goes out with each such byte as U+FFFD (read again from the mended text:
   * JSON's own bytes are ASCII, so only strings change); any other is counted and left out */
  size_t n = (size_t)(ev->end - ev->beg);
  if (cl_json_valid(ev->beg, n)) { merge_event(w, ev, coll); return; }
  char *mended = malloc(3 * n + 1);
  cl_ev mev;
  size_t bad = mended ? cl_utf8_clean(ev->beg, n, mended, 3 * n + 1) : 0;
  size_t mn = mended ? strlen(mended) : 0;
  if (bad && mn && cl_json_valid(mended, mn) && cl_ev_parse(mended, mn, &mev) == 0) {
    w->utf8_mended += (int64_t)bad;
    merge_event(w, &mev, coll);
  } else w->invalid++;
  free(mended);
}

/* One event the merge keeps (valid JSON and UTF-8): rewritten onto the merged clock and pid. */
static void merge_event(rank_writer *w, const cl_ev *ev, size_t coll) {
  merge_ctx *m = w->m; cl_rank *r = w->r;
  repl rp[3]; int nr = 0;
  int is_flow = ev->has_id && ev->id_ve && (ev->ph == 's' || ev->ph == 't' || ev->ph == 'f');
  uint64_t fid = is_flow ? file_flow_id(w, ev) : 0;
  if (is_flow && !fid) return;
  if (w->pft) {
    uint64_t flow = fid;
    if (coll < r->colls.n && r->colls.a[coll].inst != UINT32_MAX && m->flow_ok[r->colls.a[coll].inst])
      flow = FLOW_ID_BASE + r->colls.a[coll].inst;
    cl_pft_event(w->pft, ev, cl_aligned(r, ev->ts_ns), flow);
    size_t n; const uint8_t *b = cl_pft_take(w->pft, &n);
    out_put(w, (const char *)b, n);
    w->kept++;
    return;
  }
  if (ev->pid_v && ev->pid_ve) { rp[nr].v = ev->pid_v; rp[nr].ve = ev->pid_ve; rp[nr].n = sprintf(rp[nr].s, "%d", r->rank); nr++; }
  if (ev->has_ts && ev->ts_ve) { rp[nr].v = ev->ts_v; rp[nr].ve = ev->ts_ve; rp[nr].n = fmt_us(rp[nr].s, cl_aligned(r, ev->ts_ns) - m->base); nr++; }
  if (is_flow) { rp[nr].v = ev->id_v; rp[nr].ve = ev->id_ve; rp[nr].n = sprintf(rp[nr].s, "%llu", (unsigned long long)fid); nr++; }
  for (int i = 1; i < nr; i++)
    for (int j = i; j > 0 && rp[j].v < rp[j - 1].v; j--) { repl t = rp[j]; rp[j] = rp[j - 1]; rp[j - 1] = t; }
  const char *p = ev->beg;
  out_put(w, w->kept ? ",\n" : "\n", w->kept ? 2 : 1);
  for (int i = 0; i < nr; i++) { out_put(w, p, (size_t)(rp[i].v - p)); out_put(w, rp[i].s, (size_t)rp[i].n); p = rp[i].ve; }
  out_put(w, p, (size_t)(ev->end - p));
  w->kept++;
}

static json_object *rank_meta(const cl_rank *r);
static char *process_name(const cl_rank *r);

/* The file merge reads for a rank: its trace, or its digest written out as one into an unnamed
 * temporary file (*tmp, the caller closes it; path names it while open). NULL: unreadable. */
static const char *digest_as_trace(const char *path, FILE **tmp, char *buf, size_t n) {
  if (!cl_digest_is(path)) return path;
  char msg[256];
  *tmp = tmpfile();
  if (!*tmp || cl_digest_trace(path, *tmp, msg, sizeof msg) != 0 || fflush(*tmp) != 0) {
    fprintf(stderr, "commlens: merge: %s: cannot convert the digest (%s); left out\n", cl_show(path), *tmp ? msg : "no temporary file");
    return NULL;
  }
  snprintf(buf, n, "/proc/self/fd/%d", fileno(*tmp));
  return buf;
}

static void *merge_worker(void *arg) {
  merge_ctx *m = arg;
  for (;;) {
    pthread_mutex_lock(&m->mu);
    int qi = m->next++;
    pthread_mutex_unlock(&m->mu);
    if (qi >= m->nsel) return NULL;
    rank_writer w = { .m = m, .qi = qi, .r = m->job->r[m->sel[qi]], .c = chunk_new() };
    out_put(&w, "", 0);
    if (m->o->format == CL_MERGE_PFTRACE) {   /* the sequence opens with the process track and its clock */
      char *nm = process_name(w.r);
      json_object *meta = rank_meta(w.r);
      json_object_object_add(meta, "ref_rank", json_object_new_int(m->job->ref_rank));
      w.pft = cl_pft_seq_new(w.r->rank, nm, m->ws == INT64_MIN ? m->t0 : m->ws, meta);
      json_object_put(meta);
      free(nm);
      size_t n; const uint8_t *b = cl_pft_take(w.pft, &n);
      out_put(&w, (const char *)b, n);
    }
    cl_info info;
    FILE *tmp = NULL;
    char path[64];
    const char *src = digest_as_trace(w.r->path, &tmp, path, sizeof path);
    if (src) cl_trace_scan(src, on_merge_event, &w, &info, 0);
    if (src) cl_info_free(&info);
    if (tmp) fclose(tmp);
    cl_progress_flush(&w.prog);
    cl_progress_file_done();
    int64_t not_carried = w.pft ? cl_pft_seq_free(w.pft) : 0;
    cl_strtab_free(&w.flows);
    q_push(m, qi, w.c, 1);
    pthread_mutex_lock(&m->mu);
    m->kept += w.kept; m->not_carried += not_carried; m->flows_lost += w.flows_lost; m->invalid += w.invalid;
    m->utf8_mended += w.utf8_mended;
    pthread_mutex_unlock(&m->mu);
  }
}

/* The output: plain stdio or gzip. */
typedef struct { FILE *f; gzFile gz; double bytes; int warned; } out_t;
static void ow(out_t *o, const char *s, size_t n) {
  if (!n) return;
  if (o->gz) gzwrite(o->gz, s, (unsigned)n); else fwrite(s, 1, n, o->f);
  o->bytes += (double)n;
  if (!o->warned && o->bytes > WARN_BYTES) {
    o->warned = 1;
    fprintf(stderr, "commlens: merge: the merged trace passed %s of JSON, past what Perfetto's web UI loads: "
            WARN_HOW "\n", WARN_SIZE);
  }
}
static void ows(out_t *o, const char *s) { ow(o, s, strlen(s)); }
static void csv_put(void *arg, const char *s, size_t n) { ow(arg, s, n); }

static int window_from_steps(merge_ctx *m) {
  cl_job *job = m->job; const cl_merge_opts *o = m->o;
  int64_t ws = INT64_MAX, we = INT64_MIN; int have_nvtx = 0;
  for (int i = 0; i < m->nsel; i++) {
    cl_rank *r = job->r[m->sel[i]];
    for (size_t k = 0; k < r->steps.n; k++) {
      have_nvtx = 1;
      cl_step *s = &r->steps.a[k];
      if (s->step == o->step_a && cl_aligned(r, s->start) < ws) ws = cl_aligned(r, s->start);
      if (s->step == o->step_b && cl_aligned(r, s->end) > we) we = cl_aligned(r, s->end);
    }
  }
  if (have_nvtx) {
    if (ws == INT64_MAX || we == INT64_MIN) { fprintf(stderr, "commlens: merge: NVTX steps %ld and %ld not both found\n", o->step_a, o->step_b); return -1; }
    fprintf(stderr, "commlens: merge: --steps from NVTX step markers\n");
    m->ws = ws; m->we = we; return 0;
  }
  /* no step markers: sequence numbers of the most frequent (comm, func) */
  typedef struct { uint64_t comm; int func; int64_t n; size_t first; } cf_count;
  CL_VEC(cf_count) cf = {0};
  for (size_t i = 0; i < job->inst.n; i++) {
    cl_inst *in = &job->inst.a[i];
    if (in->count < 1) continue;
    size_t k;
    for (k = 0; k < cf.n; k++) if (cf.a[k].comm == in->comm && cf.a[k].func == in->func) break;
    if (k == cf.n) CL_PUSH(cf, ((cf_count){ in->comm, in->func, 0, i }));
    cf.a[k].n++;
  }
  size_t best = 0; int64_t bestn = -1;
  for (size_t k = 0; k < cf.n; k++) if (cf.a[k].n > bestn) { bestn = cf.a[k].n; best = cf.a[k].first; }
  free(cf.a);
  if (bestn <= 0) { fprintf(stderr, "commlens: merge: no NVTX steps and no collectives to take steps from\n"); return -1; }
  uint64_t comm = job->inst.a[best].comm; int func = job->inst.a[best].func;
  int64_t next_start = INT64_MAX;
  for (size_t i = 0; i < job->inst.n; i++) {
    cl_inst *in = &job->inst.a[i];
    if (in->comm != comm || in->func != func) continue;
    if (in->seq < o->step_a || in->seq > o->step_b + 1) continue;
    for (uint32_t k = 0; k < in->count; k++) {
      cl_member *mb = &job->mem.a[in->first + k]; cl_rank *r = job->r[mb->rank_idx]; cl_coll *c = &r->colls.a[mb->coll_idx];
      int64_t s = cl_aligned(r, c->start), e = cl_aligned(r, c->end);
      if (in->seq == o->step_b + 1) { if (s < next_start) next_start = s; continue; }
      if (in->seq == o->step_a && s < ws) ws = s;
      if (in->seq == o->step_b && e > we) we = e;
    }
  }
  if (ws == INT64_MAX || we == INT64_MIN) {
    fprintf(stderr, "commlens: merge: %s seq %ld..%ld not found\n", cl_show(cl_func_name(func)), o->step_a, o->step_b); return -1;
  }
  if (next_start != INT64_MAX && next_start > we) we = next_start - 1;
  fprintf(stderr, "commlens: merge: no NVTX step markers; --steps taken as %s seq %ld..%ld (comm 0x%llx), the most frequent collective\n",
          cl_show(cl_func_name(func)), o->step_a, o->step_b, (unsigned long long)comm);
  m->ws = ws; m->we = we;
  return 0;
}

static int cmp_i64(const void *a, const void *b) { const int64_t *x = a, *y = b; return x[0] < y[0] ? -1 : x[0] > y[0]; }

/* The members of instance ii that the output keeps (selected rank, its slice in the window,
 * a numeric tid), as (aligned start, rank index << 32 | coll index) pairs in arr, in arrival
 * order; returns how many. Both formats link an instance across ranks when it keeps two. */
static size_t kept_members(const merge_ctx *m, size_t ii, int64_t *arr) {
  const cl_job *job = m->job; const cl_inst *in = &job->inst.a[ii];
  if (in->count < 2 || (m->o->has_comm && in->comm != m->o->comm)) return 0;
  size_t n = 0;
  for (uint32_t k = 0; k < in->count; k++) {
    const cl_member *mb = &job->mem.a[in->first + k];
    if (m->qi_of[mb->rank_idx] < 0) continue;
    const cl_rank *r = job->r[mb->rank_idx]; const cl_coll *c = &r->colls.a[mb->coll_idx];
    if (!c->tid_ok) continue;
    int64_t s = cl_aligned(r, c->start), e = cl_aligned(r, c->end);
    if (e < m->ws || s > m->we) continue;
    arr[2 * n] = s; arr[2 * n + 1] = ((int64_t)mb->rank_idx << 32) | mb->coll_idx; n++;
  }
  if (n > 1) qsort(arr, n, 2 * sizeof(int64_t), cmp_i64);
  return n;
}

/* What the merge says about one rank (JSON: commlens_merge.ranks[]; pftrace: its clock instant). */
static json_object *rank_meta(const cl_rank *r) {
  json_object *x = json_object_new_object();
  json_object_object_add(x, "rank", json_object_new_int(r->rank));
  json_object_object_add(x, "host", json_object_new_string(r->info.host ? r->info.host : ""));
  char *file = cl_utf8_dup(r->path, strlen(r->path), NULL);   /* a file name is bytes; the output is UTF-8 */
  json_object_object_add(x, "file", json_object_new_string(file));
  free(file);
  cl_clock_json(x, r);
  json_object_object_add(x, "abi", json_object_new_int(r->info.abi));
  json_object_object_add(x, "version", json_object_new_string(r->info.version ? r->info.version : ""));
  json_object_object_add(x, "dropped", json_object_new_int64(r->info.st_dropped));
  json_object_object_add(x, "overhead_pct", json_object_new_double(r->info.st_overhead_pct));
  json_object_object_add(x, "truncated", json_object_new_boolean(r->info.truncated || r->info.bad));
  return x;
}

/* The file's own process name when it has one, else "rank R (host, GPU d)", whole however long
 * the host's name (malloc'd: the caller frees). */
static char *process_name(const cl_rank *r) {
  char *nm = NULL;
  int k;
  if (r->pname) k = asprintf(&nm, "%s", r->pname);
  else if (r->device >= 0) k = asprintf(&nm, "rank %d (%s, GPU %d)", r->rank, r->info.host ? r->info.host : "?", r->device);
  else k = asprintf(&nm, "rank %d (%s)", r->rank, r->info.host ? r->info.host : "?");
  return k < 0 ? strdup("") : nm;
}

/* The merge's metadata: job, reference rank, clock method, window, communicator. */
static json_object *merge_meta(const merge_ctx *m) {
  const cl_job *job = m->job; const cl_merge_opts *o = m->o;
  json_object *meta = json_object_new_object();
  json_object_object_add(meta, "tool", json_object_new_string("commlens merge"));
  json_object_object_add(meta, "job", json_object_new_string(job->job));
  json_object_object_add(meta, "ref_rank", json_object_new_int(job->ref_rank));
  json_object_object_add(meta, "clock_method", json_object_new_string(
      "offset = median over matched coll_gpu instances (comm, func, seq) of (end on rank - end on reference); "
      "err_ns = 1.2533*1.4826*MAD/sqrt(samples); ts here = ts in the rank's file - offset_ns - time_base_unix_ns"));
  json_object_object_add(meta, "time_base_unix_ns", json_object_new_int64(m->base));
  json_object_object_add(meta, "utf8_replaced", json_object_new_int64(job->n_utf8));
  json_object *win = json_object_new_array();
  json_object_array_add(win, json_object_new_int64(m->ws == INT64_MIN ? m->t0 : m->ws));
  json_object_array_add(win, json_object_new_int64(m->we == INT64_MAX ? m->t1 : m->we));
  json_object_object_add(meta, "window_ns", win);
  if (o->has_comm) { char b[24]; snprintf(b, sizeof b, "0x%llx", (unsigned long long)o->comm); json_object_object_add(meta, "comm", json_object_new_string(b)); }
  return meta;
}

/* JSON: everything before the ranks' events: metadata, then each rank's process name,
 * order and clock as M events. */
static void json_head(merge_ctx *m, out_t *out) {
  cl_job *job = m->job;
  json_object *meta = merge_meta(m), *ra = json_object_new_array();
  for (int i = 0; i < m->nsel; i++) json_object_array_add(ra, rank_meta(job->r[m->sel[i]]));
  json_object_object_add(meta, "ranks", ra);
  ows(out, "{\"displayTimeUnit\":\"ns\",\"commlens_merge\":");
  ows(out, json_object_to_json_string_ext(meta, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(meta);
  ows(out, ",\"traceEvents\":[");
  char b[1024];
  for (int i = 0; i < m->nsel; i++) {
    cl_rank *r = job->r[m->sel[i]];
    char *nm = process_name(r);
    json_object *s = json_object_new_string(nm);
    free(nm);
    /* the name apart: escaped, a host name can outgrow any fixed buffer (fuzz_cli found one
     * cut mid-object) */
    snprintf(b, sizeof b, "%s\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":", i ? "," : "", r->rank);
    ows(out, b);
    ows(out, json_object_to_json_string(s));
    snprintf(b, sizeof b, "}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}},\n"
             "{\"ph\":\"M\",\"name\":\"commlens_clock\",\"pid\":%d,\"args\":{\"offset_ns\":%lld,\"err_ns\":%lld,\"mad_ns\":%lld,\"samples\":%d,\"aligned\":%s,\"ref_rank\":%d}}",
             r->rank, r->rank, r->rank, (long long)r->offset_ns,
             (long long)r->off_err_ns, (long long)r->off_mad_ns, r->off_samples, r->aligned ? "true" : "false", job->ref_rank);
    json_object_put(s);
    ows(out, b);
  }
}

/* JSON: cross-rank flows (one chain per collective instance, in arrival order) and the end. */
static int64_t json_tail(merge_ctx *m, out_t *out) {
  cl_job *job = m->job;
  int64_t nflows = 0;
  int64_t *arr = cl_xmalloc(((size_t)job->n + 1) * 2 * sizeof(int64_t));
  char b[1024];
  for (size_t ii = 0; ii < job->inst.n; ii++) {
    size_t n = kept_members(m, ii, arr);
    if (n < 2) continue;
    cl_inst *in = &job->inst.a[ii];
    json_object *name = NULL;
    for (size_t k = 0; k < n; k++) {
      cl_rank *r = job->r[arr[2 * k + 1] >> 32]; cl_coll *c = &r->colls.a[arr[2 * k + 1] & 0xffffffff];
      int64_t ts = arr[2 * k] + (c->end - c->start >= 2 ? 1 : 0);
      char t[40]; fmt_us(t, ts - m->base);
      /* the name apart, escaped and of any length (a fixed buffer's snprintf once gave its
       * untruncated length to the write) */
      snprintf(b, sizeof b, ",\n{\"ph\":\"%c\",\"cat\":\"coll_instance\",\"name\":", k == 0 ? 's' : k + 1 == n ? 'f' : 't');
      ows(out, b);
      if (!name) {
        char *nm = cl_xmalloc(strlen(cl_func_name(in->func)) + 32);
        sprintf(nm, "%s #%lld", cl_func_name(in->func), (long long)in->seq);
        name = json_object_new_string(nm);
        free(nm);
      }
      ows(out, json_object_to_json_string_ext(name, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
      snprintf(b, sizeof b, ",\"id\":%llu,\"pid\":%d,\"tid\":%d,\"ts\":%s,\"bp\":\"e\"}",
               (unsigned long long)(FLOW_ID_BASE + ii), r->rank, c->tid, t);
      ows(out, b);
    }
    json_object_put(name);
    nflows++;
  }
  free(arr);
  ows(out, "\n]}\n");
  return nflows;
}

/* pftrace: which instances the ranks' slices link (kept_members), and the merge's own
 * sequence. Returns how many instances are linked. */
static int64_t pftrace_head(merge_ctx *m, out_t *out) {
  cl_job *job = m->job;
  int64_t nflows = 0;
  int64_t *arr = cl_xmalloc(((size_t)job->n + 1) * 2 * sizeof(int64_t));
  m->flow_ok = cl_xcalloc(job->inst.n + 1, 1);
  for (size_t ii = 0; ii < job->inst.n; ii++) nflows += m->flow_ok[ii] = kept_members(m, ii, arr) >= 2;
  free(arr);
  json_object *meta = merge_meta(m);
  size_t n; uint8_t *b = cl_pft_merge_header(m->ws == INT64_MIN ? m->t0 : m->ws, meta, &n);
  json_object_put(meta);
  ow(out, (const char *)b, n);
  free(b);
  return nflows;
}

/* The ranks' events: workers rewrite ranks ahead into bounded queues; this thread writes
 * them in rank order. */
static void write_ranks(merge_ctx *m, out_t *out) {
  double total = 0;
  for (int i = 0; i < m->nsel; i++) total += (double)m->job->r[m->sel[i]]->info.bytes_events;
  cl_progress_begin("merging", m->nsel, total);
  m->q = cl_xcalloc((size_t)m->nsel, sizeof(rank_q));
  int th = m->o->threads < 1 ? 1 : m->o->threads > 8 ? 8 : m->o->threads;
  if (th > m->nsel) th = m->nsel;
  pthread_t tids[8];
  for (int t = 0; t < th; t++) pthread_create(&tids[t], NULL, merge_worker, m);
  for (int qi = 0; qi < m->nsel; qi++) {
    int first = 1;
    for (;;) {
      pthread_mutex_lock(&m->mu);
      while (!m->q[qi].head && !m->q[qi].done) pthread_cond_wait(&m->cv, &m->mu);
      chunk *c = m->q[qi].head;
      if (c) { m->q[qi].head = c->next; if (!c->next) m->q[qi].tail = NULL; m->q[qi].bytes -= c->n; }
      int done = !c && m->q[qi].done;
      if (done) m->cur = qi + 1;
      pthread_cond_broadcast(&m->cv);
      pthread_mutex_unlock(&m->mu);
      if (done) break;
      /* JSON: each rank's text starts "\n{..." and continues ",\n{...}": join ranks with a comma */
      if (m->o->format == CL_MERGE_JSON && first && c->n && c->d[0] == '\n') ow(out, ",", 1);
      if (c->n) first = 0;
      ow(out, c->d, c->n);
      free(c);
    }
  }
  for (int t = 0; t < th; t++) pthread_join(tids[t], NULL);
  cl_progress_end();
  free(m->q);
}

/* Selects the ranks and sets the time window. Returns 0, or -1 after saying why not. */
static int merge_select(merge_ctx *m) {
  cl_job *job = m->job; const cl_merge_opts *o = m->o;
  m->sel = cl_xmalloc(((size_t)job->n + 1) * sizeof(int));
  m->qi_of = cl_xmalloc(((size_t)job->n + 1) * sizeof(int));
  for (int i = 0; i < job->n; i++) {
    m->qi_of[i] = -1;
    if (o->ranks && (job->r[i]->rank > 65535 || !o->ranks[job->r[i]->rank])) continue;
    m->qi_of[i] = m->nsel; m->sel[m->nsel++] = i;
  }
  if (!m->nsel) { fprintf(stderr, "commlens: merge: --ranks selects none of the ranks present\n"); return -1; }
  m->t0 = INT64_MAX; m->t1 = INT64_MIN;
  for (int i = 0; i < m->nsel; i++) {
    cl_rank *r = job->r[m->sel[i]];
    if (!r->info.n_events) continue;
    if (cl_aligned(r, r->t_min) < m->t0) m->t0 = cl_aligned(r, r->t_min);
    if (cl_aligned(r, r->t_max) > m->t1) m->t1 = cl_aligned(r, r->t_max);
  }
  if (m->t0 == INT64_MAX) m->t0 = m->t1 = 0;
  /* JSON times are written from the whole second before the first event: a viewer that reads
   * ts as a double of microseconds (Perfetto) keeps every nanosecond of small values, while at
   * Unix-epoch magnitudes it rounds to ~256 ns and slices that nest exactly would not nest there
   * after the shift onto one clock. The epoch of ts 0 is in the metadata. The protobuf carries
   * exact integer nanoseconds: its base stays the epoch (0). */
  m->base = o->format == CL_MERGE_JSON ? m->t0 - (m->t0 % 1000000000 + 1000000000) % 1000000000 : 0;
  m->ws = INT64_MIN; m->we = INT64_MAX;
  if (o->has_window) { m->ws = m->t0 + (int64_t)(o->w_start_ms * 1e6); m->we = m->t0 + (int64_t)(o->w_end_ms * 1e6); }
  if (o->has_steps && window_from_steps(m) != 0) return -1;
  return 0;
}

/* JSON: says before writing when the output will pass WARN_BYTES; 1 if it said so. */
static int json_size_warning(const merge_ctx *m) {
  double est = 0;
  for (int i = 0; i < m->nsel; i++) {
    cl_rank *r = m->job->r[m->sel[i]];
    double span = (double)(r->t_max - r->t_min), a = (double)cl_aligned(r, r->t_min), b = (double)cl_aligned(r, r->t_max);
    double lo = a > (double)m->ws ? a : (double)m->ws, hi = b < (double)m->we ? b : (double)m->we;
    double frac = span > 0 ? (hi > lo ? (hi - lo) / span : 0) : 1;
    est += (double)r->info.bytes_events * frac;
  }
  if (est <= WARN_BYTES) return 0;
  fprintf(stderr, "commlens: merge: the merged trace will be about %.1f GB of JSON%s, past what Perfetto's web UI loads "
          "(" WARN_SIZE "): " WARN_HOW "\n", est / 1e9, m->o->has_comm ? " before the --comm filter" : "");
  return 1;
}

int cl_merge(cl_job *job, const cl_merge_opts *o) {
  merge_ctx m; memset(&m, 0, sizeof m);
  m.job = job; m.o = o;
  pthread_mutex_init(&m.mu, NULL); pthread_cond_init(&m.cv, NULL);
  int json = o->format == CL_MERGE_JSON;
  out_t out = {0};
  if (merge_select(&m) != 0) { free(m.sel); free(m.qi_of); return -1; }
  out.warned = !json || json_size_warning(&m);   /* one warning at most, and only for JSON */
  if (cl_job_refuse_output(job, o->out, "merge -o") != 0) { free(m.sel); free(m.qi_of); return -1; }
  size_t ol = strlen(o->out);
  cl_outfile of;
  if (cl_out_open(&of, o->out, "merge") >= 0) {
    if (ol > 3 && !strcmp(o->out + ol - 3, ".gz")) out.gz = gzdopen(of.fd, "wb3");
    else { out.f = fdopen(of.fd, "wb"); if (out.f) setvbuf(out.f, NULL, _IOFBF, 1u << 22); }
    if (!out.f && !out.gz) { close(of.fd); cl_out_finish(&of, 0, "merge"); fprintf(stderr, "commlens: merge: out of memory\n"); }
  }
  if (!out.f && !out.gz) { free(m.sel); free(m.qi_of); return -1; }

  int64_t nflows = 0;
  if (o->format == CL_MERGE_CSV) {   /* a table from the model: no events are read again */
    ows(&out, cl_csv_header());
    for (int i = 0; i < m.nsel; i++) m.kept += cl_csv_rank(job->r[m.sel[i]], o->has_comm, o->comm, m.ws, m.we, csv_put, &out);
  } else {
    if (json) json_head(&m, &out); else nflows = pftrace_head(&m, &out);
    write_ranks(&m, &out);
    if (json) nflows = json_tail(&m, &out);
  }

  int err = 0;
  if (out.gz) err = gzclose(out.gz) != Z_OK;
  else { err = fflush(out.f) != 0 || ferror(out.f); err |= fclose(out.f) != 0; }
  if (err) fprintf(stderr, "commlens: merge: error writing %s (disk full?)\n", o->out);
  if (cl_out_finish(&of, !err, "merge") != 0) err = 1;
  if (o->format == CL_MERGE_CSV)
    fprintf(stderr, "commlens: merge: wrote %s: %d rank(s), %lld rows, %.1f MB of CSV\n", o->out, m.nsel, (long long)m.kept, out.bytes / 1e6);
  else
    fprintf(stderr, "commlens: merge: wrote %s: %d rank(s), %lld events, %lld cross-rank flows, %.1f MB of %s\n",
            o->out, m.nsel, (long long)m.kept, (long long)nflows, out.bytes / 1e6, json ? "JSON" : "Perfetto protobuf");
  if (job->n_utf8)
    fprintf(stderr, "commlens: merge: %lld invalid UTF-8 byte(s) in the traces' names and header strings written as U+FFFD\n",
            (long long)job->n_utf8);
  if (m.utf8_mended)
    fprintf(stderr, "commlens: merge: %lld invalid UTF-8 byte(s) in events' strings written as U+FFFD\n",
            (long long)m.utf8_mended);
  if (m.invalid)
    fprintf(stderr, "commlens: merge: %lld event(s) that are not valid JSON left out\n", (long long)m.invalid);
  if (m.flows_lost)
    fprintf(stderr, "commlens: merge: %lld flow event(s) left out: more than 2^32 distinct flow ids in a file, or more "
            "than 2^20 ranks\n", (long long)m.flows_lost);
  if (m.not_carried)
    fprintf(stderr, "commlens: merge: %lld event(s) Perfetto's TrackEvent has no form for (async instants, object and sample "
            "events, an async end without its begin) left out\n",
            (long long)m.not_carried);
  free(m.sel); free(m.qi_of); free(m.flow_ok);
  return err ? -1 : 0;
}
