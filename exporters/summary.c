/* summary.c: see summary.h. Size buckets are powers of two (bucket b holds sizes in
 * [2^b, 2^(b+1))). Bandwidths use GPU time only: a collective with no GPU span counts but
 * adds no time. */
#include "exporters/summary.h"
#include "exporters/strbuf.h"
#include "common/utf8.h"
#include "common/grow.h"
#include "common/hash.h"
#include "common/nccl.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* func: the row's name, whole (owned; "?" when a copy could not be made); at: the address of a
 * static name (cl_summary_add_static) last found to be this row's */
typedef struct { char *func; int bucket, nranks; uint64_t n, n_timed, bytes, bytes_timed, gpu_ns, min_ns, max_ns; const char *at; } row;
/* A job's collectives cycle through a few (function, size) rows, not always the last one: rows
 * are also found by the name's address and the bucket, in a small table (each hit compared in
 * full, unless the name is static and the row knows its address: else an address is only a
 * hint). */
#define ROW_CACHE_BITS 8
#define ROW_CACHE (1 << ROW_CACHE_BITS)
struct cl_summary {
  row *rows; int n; size_t cap;
  int last;                          /* the row added to last: a job repeats its calls */
  int cache[ROW_CACHE];              /* row index + 1 by (name address, bucket); 0: none */
};

cl_summary *cl_summary_new(void) { return calloc(1, sizeof(cl_summary)); }
void cl_summary_free(cl_summary *s) {
  if (!s) return;
  for (int i = 0; i < s->n; i++) free(s->rows[i].func);
  free(s->rows);
  free(s);
}

static int bucket_of(uint64_t bytes) { return bytes ? 63 - __builtin_clzll(bytes) : 0; }
static int row_is(row *r, const char *func, int fixed, int bk, int nranks) {
  if (r->bucket != bk || r->nranks != nranks) return 0;
  if (fixed && r->at == func) return 1;
  if (strcmp(r->func, func)) return 0;
  if (fixed) r->at = func;
  return 1;
}

static void add(cl_summary *s, const char *func, int fixed, uint64_t bytes, int nranks, uint64_t gpu_ns) {
  if (!s) return;
  int bk = bucket_of(bytes);
  if (!func) { func = "?"; fixed = 1; }
  /* the table first: its row knows the name's address (no compare), where the last row added
   * to may be another function of the same size (a compare of the names) */
  unsigned slot = cl_hash_top((uint64_t)(uintptr_t)func ^ (uint64_t)bk << 48 ^ (uint64_t)(uint32_t)nranks << 56, 64 - ROW_CACHE_BITS);
  row *r = NULL;
  if (s->cache[slot] && row_is(&s->rows[s->cache[slot] - 1], func, fixed, bk, nranks)) {
    s->last = s->cache[slot] - 1;
    r = &s->rows[s->last];
  }
  if (!r && s->last < s->n && row_is(&s->rows[s->last], func, fixed, bk, nranks)) r = &s->rows[s->last];
  for (int i = 0; i < s->n && !r; i++)
    if (row_is(&s->rows[i], func, fixed, bk, nranks)) { r = &s->rows[i]; s->last = i; }
  if (r) s->cache[slot] = s->last + 1;
  if (!r) {
    char *name = strdup(func);
    if (!name || cl_grow(&s->rows, &s->cap, (size_t)s->n + 1, sizeof *s->rows, 32, 0) != 0) { free(name); return; }
    s->last = s->n;
    s->cache[slot] = s->n + 1;
    r = &s->rows[s->n++];
    memset(r, 0, sizeof *r);
    r->func = name;
    r->bucket = bk;
    r->nranks = nranks;
    r->min_ns = UINT64_MAX;
    r->at = fixed ? func : NULL;
  }
  r->n++;
  r->bytes += bytes;
  if (gpu_ns) {
    r->n_timed++;
    r->bytes_timed += bytes;
    r->gpu_ns += gpu_ns;
    if (gpu_ns < r->min_ns) r->min_ns = gpu_ns;
    if (gpu_ns > r->max_ns) r->max_ns = gpu_ns;
  }
}

void cl_summary_add(cl_summary *s, const char *func, uint64_t bytes, int nranks, uint64_t gpu_ns) {
  add(s, func, 0, bytes, nranks, gpu_ns);
}
void cl_summary_add_static(cl_summary *s, const char *func, uint64_t bytes, int nranks, uint64_t gpu_ns) {
  add(s, func, 1, bytes, nranks, gpu_ns);
}

static int cmp_rows(const void *a, const void *b) {
  const row *x = a, *y = b;
  int c = strcmp(x->func, y->func);
  return c ? c : x->bucket - y->bucket;
}

static void human(char *out, size_t n, uint64_t b) {
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  double v = (double)b;
  while (v >= 1024 && i < 4) { v /= 1024; i++; }
  snprintf(out, n, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

void cl_summary_print(const cl_summary *s, FILE *f, const char *prefix) {
  if (!s || !s->n) { fprintf(f, "%sno collectives recorded\n", prefix); return; }
  qsort(s->rows, (size_t)s->n, sizeof *s->rows, cmp_rows);
  fprintf(f, "%s%-14s %10s %8s %12s %12s %11s %10s %10s\n", prefix, "collective", "size>=", "count",
          "total bytes", "GPU ms", "avg us", "algbw GB/s", "busbw GB/s");
  for (int i = 0; i < s->n; i++) {
    const row *r = &s->rows[i];
    char sz[32], tot[32];
    human(sz, sizeof sz, r->bucket ? 1ull << r->bucket : 0);
    human(tot, sizeof tot, r->bytes);
    size_t cap = 4 * strlen(r->func) + 1;   /* the name as a terminal shows it (newlines escaped too), whole */
    char *fn = malloc(cap);
    if (!fn) continue;
    cl_utf8_show(r->func, fn, cap);
    if (r->n_timed) {
      double alg = (double)r->bytes_timed / (double)r->gpu_ns;   /* bytes/ns = GB/s */
      fprintf(f, "%s%-14s %10s %8llu %12s %12.3f %11.2f %10.2f %10.2f\n", prefix, fn, sz,
              (unsigned long long)r->n, tot, r->gpu_ns / 1e6, r->gpu_ns / 1e3 / (double)r->n_timed, alg,
              alg * cl_busbw_factor(r->func, r->nranks));
    } else {
      fprintf(f, "%s%-14s %10s %8llu %12s %12s %11s %10s %10s\n", prefix, fn, sz,
              (unsigned long long)r->n, tot, "n/a", "n/a", "n/a", "n/a");
    }
    free(fn);
  }
}

void cl_summary_json(const cl_summary *s, FILE *f) {
  fprintf(f, "[");
  cl_sb fn = {0};
  for (int i = 0; s && i < s->n; i++) {
    const row *r = &s->rows[i];
    double alg = r->gpu_ns ? (double)r->bytes_timed / (double)r->gpu_ns : 0;
    sb_reset(&fn);
    sb_jstr(&fn, r->func);   /* a JSON string, escaped: names come from NCCL's descriptors */
    fprintf(f, "%s{\"func\":%.*s,\"size_min\":%llu,\"nranks\":%d,\"count\":%llu,\"timed\":%llu,"
            "\"bytes\":%llu,\"gpu_ns\":%llu,\"min_ns\":%llu,\"max_ns\":%llu,\"algbw_gbs\":%.4f,\"busbw_gbs\":%.4f}",
            i ? "," : "", fn.oom ? 2 : (int)fn.len, fn.oom ? "\"\"" : fn.p, r->bucket ? 1ull << r->bucket : 0ull, r->nranks,
            (unsigned long long)r->n, (unsigned long long)r->n_timed, (unsigned long long)r->bytes,
            (unsigned long long)r->gpu_ns, (unsigned long long)(r->n_timed ? r->min_ns : 0),
            (unsigned long long)r->max_ns, alg, alg * cl_busbw_factor(r->func, r->nranks));
  }
  sb_free(&fn);
  fprintf(f, "]");
}

void cl_summary_each(const cl_summary *s, void (*fn)(void *arg, const cl_summary_row *r), void *arg) {
  for (int i = 0; s && i < s->n; i++) {
    const row *r = &s->rows[i];
    double alg = r->gpu_ns ? (double)r->bytes_timed / (double)r->gpu_ns * 1e9 : 0;
    cl_summary_row o = {r->func, r->bucket ? 1ull << r->bucket : 0, r->nranks, r->n, r->n_timed, r->bytes,
                        r->gpu_ns, alg, alg * cl_busbw_factor(r->func, r->nranks)};
    fn(arg, &o);
  }
}
