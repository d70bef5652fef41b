/* merge.c: `commlens merge`: one Perfetto trace from the per-rank traces. Streams each
 * rank's events to the output (pid = rank, ts shifted onto the reference rank's clock,
 * flow ids made unique), in rank order, with two threads rewriting and one writing;
 * metadata and cross-rank flows come from the instance table. Never holds a rank's
 * events in memory beyond a bounded queue of output chunks. */
#include "report.h"
#include "progress.h"
#include <json-c/json.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define CHUNK (4u << 20)
#define QUEUE_MAX (64u << 20)
#define WARN_BYTES 1500000000.0
#define FLOW_ID_BASE (1ull << 52)

typedef struct chunk { struct chunk *next; size_t n; char d[CHUNK]; } chunk;
typedef struct { chunk *head, *tail; size_t bytes; int done; } rank_q;

typedef struct {
  cl_job *job; const cl_merge_opts *o;
  int *sel; int nsel;                 /* selected rank indices, in rank order */
  int64_t ws, we;                     /* window, aligned ns (inclusive) */
  rank_q *q; int cur, next;
  pthread_mutex_t mu; pthread_cond_t cv;
  int64_t kept;
} merge_ctx;

typedef struct { merge_ctx *m; int qi; cl_rank *r; chunk *c; int64_t kept; cl_progress_batch prog; } rank_writer;

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

static void on_merge_event(const cl_ev *ev, void *arg) {
  rank_writer *w = arg; merge_ctx *m = w->m; cl_rank *r = w->r;
  cl_progress_count(&w->prog, ev->end - ev->beg);
  if (ev->ph == 'M') {
    if (cl_str_eq(ev->name, "process_name") || cl_str_eq(ev->name, "process_sort_index")) return;
  } else {
    if (m->o->has_comm && ev->has_comm && ev->comm != m->o->comm) return;
    if (ev->has_ts && (m->o->has_window || m->o->has_steps)) {
      int64_t a = cl_aligned(r, ev->ts_ns), e = a + (ev->has_dur ? ev->dur_ns : 0);
      if (e < m->ws || a > m->we) return;
    }
  }
  repl rp[3]; int nr = 0;
  if (!cl_json_valid(ev->beg, (size_t)(ev->end - ev->beg))) return;   /* the scanner is lenient: pass through only valid JSON */
  if (ev->pid_v && ev->pid_ve) { rp[nr].v = ev->pid_v; rp[nr].ve = ev->pid_ve; rp[nr].n = sprintf(rp[nr].s, "%d", r->rank); nr++; }
  if (ev->has_ts && ev->ts_ve) { rp[nr].v = ev->ts_v; rp[nr].ve = ev->ts_ve; rp[nr].n = fmt_us(rp[nr].s, cl_aligned(r, ev->ts_ns)); nr++; }
  if (ev->has_id && (ev->ph == 's' || ev->ph == 't' || ev->ph == 'f')) {
    rp[nr].v = ev->id_v; rp[nr].ve = ev->id_ve;
    if (*ev->id_v == '"') {
      int n = (int)(ev->id_ve - ev->id_v - 2); if (n > 30) n = 30;
      const char *bs = memchr(ev->id_v + 1, '\\', (size_t)n);   /* never cut an escape in two */
      if (bs) n = (int)(bs - (ev->id_v + 1));
      rp[nr].n = sprintf(rp[nr].s, "\"r%d:%.*s\"", r->rank, n, ev->id_v + 1);
    } else {
      unsigned long long v = strtoull(ev->id_v, NULL, 0);
      rp[nr].n = sprintf(rp[nr].s, "%llu", (((unsigned long long)r->rank + 1) << 40) | (v & ((1ull << 40) - 1)));
    }
    nr++;
  }
  for (int i = 1; i < nr; i++)
    for (int j = i; j > 0 && rp[j].v < rp[j - 1].v; j--) { repl t = rp[j]; rp[j] = rp[j - 1]; rp[j - 1] = t; }
  const char *p = ev->beg;
  out_put(w, w->kept ? ",\n" : "\n", w->kept ? 2 : 1);
  for (int i = 0; i < nr; i++) { out_put(w, p, (size_t)(rp[i].v - p)); out_put(w, rp[i].s, (size_t)rp[i].n); p = rp[i].ve; }
  out_put(w, p, (size_t)(ev->end - p));
  w->kept++;
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
    cl_info info;
    cl_trace_scan(w.r->path, on_merge_event, &w, &info, 0);
    cl_info_free(&info);
    cl_progress_flush(&w.prog);
    cl_progress_file_done();
    q_push(m, qi, w.c, 1);
    pthread_mutex_lock(&m->mu); m->kept += w.kept; pthread_mutex_unlock(&m->mu);
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
    fprintf(stderr, "commlens: merged trace passed 1.5 GB of JSON; Perfetto's in-browser limit is about 2 GB: "
            "narrow it with --ranks/--comm/--window/--steps or open it with trace_processor --httpd\n");
  }
}
static void ows(out_t *o, const char *s) { ow(o, s, strlen(s)); }

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
    fprintf(stderr, "commlens: merge: %s seq %ld..%ld not found\n", cl_func_name(func), o->step_a, o->step_b); return -1;
  }
  if (next_start != INT64_MAX && next_start > we) we = next_start - 1;
  fprintf(stderr, "commlens: merge: no NVTX step markers; --steps taken as %s seq %ld..%ld (comm 0x%llx), the most frequent collective\n",
          cl_func_name(func), o->step_a, o->step_b, (unsigned long long)comm);
  m->ws = ws; m->we = we;
  return 0;
}

static int cmp_i64(const void *a, const void *b) { const int64_t *x = a, *y = b; return x[0] < y[0] ? -1 : x[0] > y[0]; }

int cl_merge(cl_job *job, const cl_merge_opts *o) {
  merge_ctx m; memset(&m, 0, sizeof m);
  m.job = job; m.o = o;
  pthread_mutex_init(&m.mu, NULL); pthread_cond_init(&m.cv, NULL);
  m.sel = cl_xmalloc(((size_t)job->n + 1) * sizeof(int));
  int *qi_of = cl_xmalloc(((size_t)job->n + 1) * sizeof(int));
  for (int i = 0; i < job->n; i++) {
    qi_of[i] = -1;
    if (o->ranks && (job->r[i]->rank > 65535 || !o->ranks[job->r[i]->rank])) continue;
    qi_of[i] = m.nsel; m.sel[m.nsel++] = i;
  }
  if (!m.nsel) { fprintf(stderr, "commlens: merge: --ranks selects none of the ranks present\n"); free(m.sel); free(qi_of); return -1; }
  int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  double est = 0;
  for (int i = 0; i < m.nsel; i++) {
    cl_rank *r = job->r[m.sel[i]];
    if (!r->info.n_events) continue;
    if (cl_aligned(r, r->t_min) < t0) t0 = cl_aligned(r, r->t_min);
    if (cl_aligned(r, r->t_max) > t1) t1 = cl_aligned(r, r->t_max);
  }
  if (t0 == INT64_MAX) t0 = t1 = 0;
  m.ws = INT64_MIN; m.we = INT64_MAX;
  if (o->has_window) { m.ws = t0 + (int64_t)(o->w_start_ms * 1e6); m.we = t0 + (int64_t)(o->w_end_ms * 1e6); }
  if (o->has_steps && window_from_steps(&m) != 0) { free(m.sel); free(qi_of); return -1; }
  for (int i = 0; i < m.nsel; i++) {
    cl_rank *r = job->r[m.sel[i]];
    double span = (double)(r->t_max - r->t_min), a = (double)cl_aligned(r, r->t_min), b = (double)cl_aligned(r, r->t_max);
    double lo = a > (double)m.ws ? a : (double)m.ws, hi = b < (double)m.we ? b : (double)m.we;
    double frac = span > 0 ? (hi > lo ? (hi - lo) / span : 0) : 1;
    est += (double)r->info.bytes_events * frac;
  }
  if (est > WARN_BYTES)
    fprintf(stderr, "commlens: merge: the merged trace will be about %.1f GB of JSON%s; Perfetto's in-browser limit is about 2 GB: "
            "narrow it with --ranks/--comm/--window/--steps or open it with trace_processor --httpd\n",
            est / 1e9, o->has_comm ? " before the --comm filter" : "");

  out_t out = {0};
  size_t ol = strlen(o->out);
  if (ol > 3 && !strcmp(o->out + ol - 3, ".gz")) out.gz = gzopen(o->out, "wb3");
  else { out.f = fopen(o->out, "wb"); if (out.f) setvbuf(out.f, NULL, _IOFBF, 1u << 22); }
  if (!out.f && !out.gz) { fprintf(stderr, "commlens: merge: cannot write %s\n", o->out); free(m.sel); free(qi_of); return -1; }
  if (out.gz) out.warned = 0;

  /* metadata object */
  json_object *meta = json_object_new_object(), *ra = json_object_new_array();
  json_object_object_add(meta, "tool", json_object_new_string("commlens merge"));
  json_object_object_add(meta, "job", json_object_new_string(job->job));
  json_object_object_add(meta, "ref_rank", json_object_new_int(job->ref_rank));
  json_object_object_add(meta, "clock_method", json_object_new_string(
      "offset = median over matched coll_gpu instances (comm, func, seq) of (end on rank - end on reference); "
      "err_ns = 1.2533*1.4826*MAD/sqrt(samples); ts here = ts in the rank's file - offset_ns"));
  for (int i = 0; i < m.nsel; i++) {
    cl_rank *r = job->r[m.sel[i]]; json_object *x = json_object_new_object();
    json_object_object_add(x, "rank", json_object_new_int(r->rank));
    json_object_object_add(x, "host", json_object_new_string(r->info.host ? r->info.host : ""));
    json_object_object_add(x, "file", json_object_new_string(r->path));
    cl_clock_json(x, r);
    json_object_object_add(x, "abi", json_object_new_int(r->info.abi));
    json_object_object_add(x, "version", json_object_new_string(r->info.version ? r->info.version : ""));
    json_object_object_add(x, "dropped", json_object_new_int64(r->info.st_dropped));
    json_object_object_add(x, "overhead_pct", json_object_new_double(r->info.st_overhead_pct));
    json_object_object_add(x, "truncated", json_object_new_boolean(r->info.truncated || r->info.bad));
    json_object_array_add(ra, x);
  }
  json_object_object_add(meta, "ranks", ra);
  json_object *win = json_object_new_array();
  json_object_array_add(win, json_object_new_int64(m.ws == INT64_MIN ? t0 : m.ws));
  json_object_array_add(win, json_object_new_int64(m.we == INT64_MAX ? t1 : m.we));
  json_object_object_add(meta, "window_ns", win);
  if (o->has_comm) { char b[24]; snprintf(b, sizeof b, "0x%llx", (unsigned long long)o->comm); json_object_object_add(meta, "comm", json_object_new_string(b)); }
  ows(&out, "{\"displayTimeUnit\":\"ns\",\"commlens_merge\":");
  ows(&out, json_object_to_json_string_ext(meta, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(meta);
  ows(&out, ",\"traceEvents\":[");
  char b[1024];
  for (int i = 0; i < m.nsel; i++) {
    cl_rank *r = job->r[m.sel[i]];
    char nm[512];
    if (r->pname) snprintf(nm, sizeof nm, "%s", r->pname);
    else if (r->device >= 0) snprintf(nm, sizeof nm, "rank %d (%s, GPU %d)", r->rank, r->info.host ? r->info.host : "?", r->device);
    else snprintf(nm, sizeof nm, "rank %d (%s)", r->rank, r->info.host ? r->info.host : "?");
    json_object *s = json_object_new_string(nm);
    snprintf(b, sizeof b, "%s\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":%s}},\n"
             "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}},\n"
             "{\"ph\":\"M\",\"name\":\"commlens_clock\",\"pid\":%d,\"args\":{\"offset_ns\":%lld,\"err_ns\":%lld,\"mad_ns\":%lld,\"samples\":%d,\"aligned\":%s,\"ref_rank\":%d}}",
             i ? "," : "", r->rank, json_object_to_json_string(s), r->rank, r->rank, r->rank, (long long)r->offset_ns,
             (long long)r->off_err_ns, (long long)r->off_mad_ns, r->off_samples, r->aligned ? "true" : "false", job->ref_rank);
    json_object_put(s);
    ows(&out, b);
  }

  /* events, rank by rank */
  double total = 0;
  for (int i = 0; i < m.nsel; i++) total += (double)job->r[m.sel[i]]->info.bytes_events;
  cl_progress_begin("merging", m.nsel, total);
  m.q = cl_xcalloc((size_t)m.nsel, sizeof(rank_q));
  int th = o->threads < 1 ? 1 : o->threads > 8 ? 8 : o->threads;
  if (th > m.nsel) th = m.nsel;
  pthread_t tids[8];
  for (int t = 0; t < th; t++) pthread_create(&tids[t], NULL, merge_worker, &m);
  for (int qi = 0; qi < m.nsel; qi++) {
    int first = 1;
    for (;;) {
      pthread_mutex_lock(&m.mu);
      while (!m.q[qi].head && !m.q[qi].done) pthread_cond_wait(&m.cv, &m.mu);
      chunk *c = m.q[qi].head;
      if (c) { m.q[qi].head = c->next; if (!c->next) m.q[qi].tail = NULL; m.q[qi].bytes -= c->n; }
      int done = !c && m.q[qi].done;
      if (done) { m.cur = qi + 1; pthread_cond_broadcast(&m.cv); }
      else pthread_cond_broadcast(&m.cv);
      pthread_mutex_unlock(&m.mu);
      if (done) break;
      /* each rank's text starts "\n{..." and continues ",\n{...}": join ranks with a comma */
      if (first && c->n && c->d[0] == '\n') ow(&out, ",", 1);
      if (c->n) first = 0;
      ow(&out, c->d, c->n);
      free(c);
    }
  }
  for (int t = 0; t < th; t++) pthread_join(tids[t], NULL);
  cl_progress_end();

  /* cross-rank flows: one chain per collective instance, in arrival order */
  int64_t nflows = 0;
  int64_t *arr = cl_xmalloc(((size_t)job->n + 1) * 2 * sizeof(int64_t));
  for (size_t ii = 0; ii < job->inst.n; ii++) {
    cl_inst *in = &job->inst.a[ii];
    if (in->count < 2) continue;
    if (o->has_comm && in->comm != o->comm) continue;
    size_t n = 0;
    for (uint32_t k = 0; k < in->count; k++) {
      cl_member *mb = &job->mem.a[in->first + k];
      if (qi_of[mb->rank_idx] < 0) continue;
      cl_rank *r = job->r[mb->rank_idx]; cl_coll *c = &r->colls.a[mb->coll_idx];
      if (!c->tid_ok) continue;
      int64_t s = cl_aligned(r, c->start), e = cl_aligned(r, c->end);
      if (e < m.ws || s > m.we) continue;
      arr[2 * n] = s; arr[2 * n + 1] = ((int64_t)mb->rank_idx << 32) | mb->coll_idx; n++;
    }
    if (n < 2) continue;
    qsort(arr, n, 2 * sizeof(int64_t), cmp_i64);
    for (size_t k = 0; k < n; k++) {
      cl_rank *r = job->r[arr[2 * k + 1] >> 32]; cl_coll *c = &r->colls.a[arr[2 * k + 1] & 0xffffffff];
      int64_t ts = arr[2 * k] + (c->end - c->start >= 2 ? 1 : 0);
      char t[40]; fmt_us(t, ts);
      int len = snprintf(b, sizeof b, ",\n{\"ph\":\"%c\",\"cat\":\"coll_instance\",\"name\":\"%s #%lld\",\"id\":%llu,\"pid\":%d,\"tid\":%d,\"ts\":%s,\"bp\":\"e\"}",
                         k == 0 ? 's' : k + 1 == n ? 'f' : 't', cl_func_name(in->func), (long long)in->seq,
                         (unsigned long long)(FLOW_ID_BASE + ii), r->rank, c->tid, t);
      ow(&out, b, (size_t)len);
    }
    nflows++;
  }
  free(arr);
  ows(&out, "\n]}\n");
  int err = 0;
  if (out.gz) err = gzclose(out.gz) != Z_OK;
  else { err = fflush(out.f) != 0 || ferror(out.f); err |= fclose(out.f) != 0; }
  if (err) fprintf(stderr, "commlens: merge: error writing %s (disk full?)\n", o->out);
  fprintf(stderr, "commlens: merge: wrote %s: %d rank(s), %lld events, %lld cross-rank flows, %.1f MB of JSON\n",
          o->out, m.nsel, (long long)m.kept, (long long)nflows, out.bytes / 1e6);
  free(m.q); free(m.sel); free(qi_of);
  return err ? -1 : 0;
}
