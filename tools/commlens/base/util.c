/* util.c: allocation, the interning table, selection (median), rank lists and time
 * formatting for the CLI.
 * and the one way the CLI creates its output files (cl_out_open). */
#include "tools/commlens/base/util.h"
#include "common/newfile.h"
#include "common/utf8.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void cl_oom(size_t n) {
  fprintf(stderr, "commlens: out of memory (%zu bytes)\n", n);
  exit(3);
}
void *cl_xmalloc(size_t n) { void *p = malloc(n ? n : 1); if (!p) cl_oom(n); return p; }
void *cl_xcalloc(size_t n, size_t sz) { void *p = calloc(n ? n : 1, sz ? sz : 1); if (!p) cl_oom(n * sz); return p; }
void *cl_xrealloc(void *p, size_t n) { p = realloc(p, n ? n : 1); if (!p) cl_oom(n); return p; }
static char *xstrndup(const char *s, size_t n) {
  char *d = cl_xmalloc(n + 1); if (n) memcpy(d, s, n); d[n] = 0; return d;   /* s may be NULL when n == 0 */
}

/* Eight bytes at a time through the one integer hash (a byte-wise hash was a tenth of the
 * pftrace merge's time). */
static uint64_t bytes_hash(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = n, w;
  for (; n >= 8; b += 8, n -= 8) { memcpy(&w, b, 8); h = cl_hash64(h ^ w); }
  w = 0;
  if (n) memcpy(&w, b, n);
  return cl_hash64(h ^ w ^ 0x9e3779b97f4a7c15ULL);
}

uint32_t cl_strtab_id(cl_strtab *t, const void *p, size_t n, int *added) {
  if (2 * (t->n + 1) > t->nslot) {   /* rehash at half full */
    size_t ns = t->nslot ? t->nslot * 2 : 64;
    free(t->slot); t->slot = cl_xcalloc(ns, sizeof *t->slot); t->nslot = ns;
    for (size_t k = 0; k < t->n; k++) {
      size_t i = bytes_hash(t->key[k], t->len[k]) & (ns - 1);
      while (t->slot[i]) i = (i + 1) & (ns - 1);
      t->slot[i] = (uint32_t)k + 1;
    }
  }
  size_t i = bytes_hash(p, n) & (t->nslot - 1);
  for (; t->slot[i]; i = (i + 1) & (t->nslot - 1)) {
    uint32_t id = t->slot[i];
    if (t->len[id - 1] == n && !memcmp(t->key[id - 1], p, n)) { *added = 0; return id; }
  }
  if (t->n == t->cap) {
    t->cap = t->cap ? t->cap * 2 : 64;
    t->key = cl_xrealloc(t->key, t->cap * sizeof *t->key); t->len = cl_xrealloc(t->len, t->cap * sizeof *t->len);
  }
  t->key[t->n] = xstrndup(p, n); t->len[t->n] = (uint32_t)n;
  t->slot[i] = (uint32_t)++t->n;
  *added = 1;
  return (uint32_t)t->n;
}

const char *cl_strtab_key(const cl_strtab *t, uint32_t id, size_t *n) {
  if (n) *n = t->len[id - 1];
  return t->key[id - 1];
}

void cl_strtab_free(cl_strtab *t) {
  for (size_t k = 0; k < t->n; k++) free(t->key[k]);
  free(t->key); free(t->len); free(t->slot);
  memset(t, 0, sizeof *t);
}

int cl_parse_ranks(const char *s, unsigned char **out) {
  unsigned char *m = cl_xcalloc(65536, 1);
  const char *p = s;
  while (*p) {
    char *q; long a = strtol(p, &q, 10), b = a;
    if (q == p || a < 0 || a > 65535) goto bad;
    p = q;
    if (*p == '-') { p++; b = strtol(p, &q, 10); if (q == p || b < a || b > 65535) goto bad; p = q; }
    for (long r = a; r <= b; r++) m[r] = 1;
    if (*p == ',') p++; else if (*p) goto bad;
  }
  *out = m; return 0;
bad:
  free(m); return -1;
}

/* Quickselect: median without sorting everything (v is reordered). */
#define CL_SELECT(T, name)                                                              \
  static T name(T *v, size_t n, size_t kk) {  /* Wirth's selection */                 \
    long l = 0, m = (long)n - 1, k = (long)kk;                                          \
    while (l < m) {                                                                     \
      T x = v[k]; long i = l, j = m;                                                    \
      do {                                                                              \
        while (v[i] < x) i++;                                                           \
        while (x < v[j]) j--;                                                           \
        if (i <= j) { T t = v[i]; v[i] = v[j]; v[j] = t; i++; j--; }                    \
      } while (i <= j);                                                                 \
      if (j < k) l = i;                                                                 \
      if (k < i) m = j;                                                                 \
    }                                                                                   \
    return v[k];                                                                        \
  }
CL_SELECT(int64_t, cl_select_i64)
CL_SELECT(double, cl_select_dbl)

int64_t cl_median_i64(int64_t *v, size_t n) {
  if (n % 2) return cl_select_i64(v, n, n / 2);
  int64_t a = cl_select_i64(v, n, n / 2 - 1), b = cl_select_i64(v, n, n / 2);
  return a + (b - a) / 2;
}
double cl_median_dbl(double *v, size_t n) {
  if (n % 2) return cl_select_dbl(v, n, n / 2);
  double a = cl_select_dbl(v, n, n / 2 - 1), b = cl_select_dbl(v, n, n / 2);
  return (a + b) / 2;
}

const char *cl_fmt_time(char *buf, size_t n, double ns) {
  double a = fabs(ns);
  if (a >= 1e9) snprintf(buf, n, "%.3f s", ns / 1e9);
  else if (a >= 1e6) snprintf(buf, n, "%.3f ms", ns / 1e6);
  else if (a >= 1e3) snprintf(buf, n, "%.1f us", ns / 1e3);
  else snprintf(buf, n, "%.0f ns", ns);
  return buf;
}

const char *cl_fmt_utc(char *buf, size_t n, int64_t ns) {
  time_t s = (time_t)(ns / 1000000000);
  struct tm tm;
  if (ns < 0 || ns == INT64_MAX || !gmtime_r(&s, &tm) || !strftime(buf, n, "%Y-%m-%d %H:%M:%S UTC", &tm))
    snprintf(buf, n, "an unknown time");
  return buf;
}

int cl_out_open(cl_outfile *o, const char *path, const char *what) {
  size_t n = strlen(path) + 16;
  struct stat st;
  o->fd = -1;
  if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
    /* a pipe or a character device (-o /dev/stdout, /dev/null, a FIFO) is written as it is:
     * renaming a temporary onto it would replace it (as root, /dev/null itself); any other
     * kind is not replaced at all */
    if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode)) {
      fprintf(stderr, "commlens: %s: cannot write %s: %s, not replaced\n", what, path,
              S_ISDIR(st.st_mode) ? "a directory" : "not a regular file, pipe or character device");
      o->path = o->tmp = NULL;
      return -1;
    }
    /* no link followed, and still a pipe or device once open (swapped in between: refused) */
    o->fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW);
    struct stat fst;
    if (o->fd >= 0 && (fstat(o->fd, &fst) != 0 || (!S_ISCHR(fst.st_mode) && !S_ISFIFO(fst.st_mode)))) {
      close(o->fd);
      o->fd = -1;
      errno = EEXIST;
    }
    if (o->fd < 0) {
      fprintf(stderr, "commlens: %s: cannot write %s: %s\n", what, path, strerror(errno));
      o->path = o->tmp = NULL;
      return -1;
    }
    o->path = xstrndup(path, strlen(path));
    o->tmp = NULL;                 /* written in place: nothing to rename */
    return o->fd;
  }
  o->path = xstrndup(path, strlen(path)); o->tmp = cl_xmalloc(n);
  mode_t um = umask(0);          /* reports are meant to be shared: 0666 less the user's umask */
  umask(um);
  o->fd = cl_file_create_temp(o->tmp, n, path, 0666 & ~um);
  if (o->fd >= 0) return o->fd;
  fprintf(stderr, "commlens: %s: cannot write %s: %s\n", what, path, strerror(errno));
  free(o->path); free(o->tmp); o->path = o->tmp = NULL;
  return -1;
}

int cl_out_finish(cl_outfile *o, int ok, const char *what) {
  int rc = -1;
  if (o->path && !o->tmp) {        /* a pipe or device, written in place */
    free(o->path); o->path = NULL; o->fd = -1;
    return ok ? 0 : -1;
  }
  if (ok) {
    if (rename(o->tmp, o->path) == 0) rc = 0;
    else fprintf(stderr, "commlens: %s: cannot write %s: %s\n", what, o->path, strerror(errno));
  }
  if (rc) unlink(o->tmp);
  free(o->path); free(o->tmp); o->path = o->tmp = NULL; o->fd = -1;
  return rc;
}

char *cl_utf8_dup(const char *s, size_t n, int64_t *count) {
  char *d = cl_xmalloc(3 * n + 1);
  size_t bad = cl_utf8_clean(s ? s : "", s ? n : 0, d, 3 * n + 1);
  if (count) *count += (int64_t)bad;
  return d;
}

void cl_utf8_cut(char *s) {
  const unsigned char *p = (const unsigned char *)s, *e = p + strlen(s);
  for (size_t l; p < e && (l = cl_utf8_len(p, e)); p += l) {}
  s[(const char *)p - s] = 0;
}

/* ---- the terminal filter: a cookie stream over an fd, carrying a UTF-8 sequence cut by a
 * buffer boundary over to the next write ---- */
typedef struct { int fd; unsigned char carry[4]; size_t ncarry; } term_cookie;

static int term_put(int fd, const char *b, size_t n) {
  while (n) {
    ssize_t k = write(fd, b, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    b += k; n -= (size_t)k;
  }
  return 0;
}

/* 1 if [p, e) may be the start of a sequence that more bytes complete. */
static int utf8_prefix(const unsigned char *p, const unsigned char *e) {
  size_t need = p[0] >= 0xF0 ? 4 : p[0] >= 0xE0 ? 3 : 2;
  if (p[0] < 0xC2 || p[0] > 0xF4 || (size_t)(e - p) >= need) return 0;
  for (const unsigned char *q = p + 1; q < e; q++) if ((*q & 0xC0) != 0x80) return 0;
  return 1;
}

static ssize_t term_write(void *c_, const char *buf, size_t size) {
  term_cookie *c = c_;
  size_t n = c->ncarry + size;
  unsigned char *in = cl_xmalloc(n);
  memcpy(in, c->carry, c->ncarry); memcpy(in + c->ncarry, buf, size);
  c->ncarry = 0;
  char out[4096 + 64];
  size_t o = 0;
  int rc = 0;
  for (const unsigned char *p = in, *e = in + n; p < e && !rc;) {
    if (!cl_utf8_len(p, e) && utf8_prefix(p, e)) { c->ncarry = (size_t)(e - p); memcpy(c->carry, p, c->ncarry); break; }
    size_t adv;
    o += cl_utf8_shown(p, e, 1, out + o, &adv);
    p += adv;
    if (o >= 4096) { rc = term_put(c->fd, out, o); o = 0; }
  }
  if (!rc && o) rc = term_put(c->fd, out, o);
  free(in);
  return rc ? -1 : (ssize_t)size;
}

static int term_close(void *c_) {
  term_cookie *c = c_;
  int rc = c->ncarry ? term_put(c->fd, CL_UTF8_REPLACEMENT, 3) : 0;   /* a sequence never completed */
  free(c);
  return rc;
}

FILE *cl_term_stream(int fd) {
  term_cookie *c = cl_xcalloc(1, sizeof *c);
  c->fd = fd;
  FILE *f = fopencookie(c, "w", (cookie_io_functions_t){ .write = term_write, .close = term_close });
  if (!f) free(c);
  return f;
}

/* ---- strings from files, shown in text: a ring of growable thread-local buffers ---- */
#define SHOW_RING 8
static _Thread_local struct { char *p; size_t cap; } g_show[SHOW_RING];
static _Thread_local unsigned g_show_next;
char *cl_ring_buf(size_t need) {
  unsigned k = g_show_next++ % SHOW_RING;
  if (g_show[k].cap < need) { g_show[k].p = cl_xrealloc(g_show[k].p, need); g_show[k].cap = need; }
  return g_show[k].p;
}

const char *cl_show(const char *s) {
  if (!s) s = "";
  size_t cap = 4 * strlen(s) + 1;   /* the longest shown form: \xNN for each byte */
  char *b = cl_ring_buf(cap);
  cl_utf8_show(s, b, cap);
  return b;
}

const char *cl_show_col(const char *s, int width) {
  if (!s) s = "";
  const unsigned char *p = (const unsigned char *)s, *e = p + strlen(s);
  size_t cap = 4 * (size_t)(e - p) + (size_t)(width > 0 ? width : 0) + 1;
  char *b = cl_ring_buf(cap);
  size_t o = 0;
  int chars = 0;
  while (p < e && chars < width) {
    char piece[CL_UTF8_SHOWN_MAX];
    size_t adv, w = cl_utf8_shown(p, e, 0, piece, &adv);
    int pc = piece[0] == '\\' && w >= 4 ? (int)w : 1;   /* an escape is as wide as its text */
    if (chars + pc > width) break;
    memcpy(b + o, piece, w);
    o += w; chars += pc; p += adv;
  }
  for (; chars < width; chars++) b[o++] = ' ';
  b[o] = 0;
  return b;
}
