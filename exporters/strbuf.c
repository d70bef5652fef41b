/* strbuf.c: see strbuf.h. Integer formatting is hand-written: it is the writer's hottest
 * code, and it must never go through a double (timestamps are exact). */
#include "exporters/strbuf.h"
#include "common/clock.h"
#include "common/utf8.h"
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void sb_reserve(cl_sb *b, size_t extra) {
  if (b->oom || b->len + extra + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + extra + 1) cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) { b->oom = 1; return; }
  b->p = p;
  b->cap = cap;
}
void sb_free(cl_sb *b) { free(b->p); b->p = NULL; b->len = b->cap = 0; }
void sb_put(cl_sb *b, const char *s, size_t n) {
  sb_reserve(b, n);
  if (b->oom) return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
}
void sb_puts(cl_sb *b, const char *s) { sb_put(b, s, strlen(s)); }
void sb_printf(cl_sb *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char tmp[512];
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) { sb_put(b, tmp, (size_t)n); return; }
  sb_reserve(b, (size_t)n);
  if (b->oom) return;
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}
void sb_u64(cl_sb *b, uint64_t v) {
  char tmp[24];
  int n = 0;
  do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
  sb_reserve(b, (size_t)n);
  if (b->oom) return;
  while (n) b->p[b->len++] = tmp[--n];
  b->p[b->len] = 0;
}
void sb_i64(cl_sb *b, int64_t v) {
  if (v < 0) { sb_put(b, "-", 1); sb_u64(b, (uint64_t)(-(v + 1)) + 1); }
  else sb_u64(b, (uint64_t)v);
}
void sb_hex(cl_sb *b, uint64_t v) {
  static const char hx[] = "0123456789abcdef";
  char tmp[20];
  int n = 0;
  do { tmp[n++] = hx[v & 15]; v >>= 4; } while (v);
  sb_put(b, "0x", 2);
  sb_reserve(b, (size_t)n);
  if (b->oom) return;
  while (n) b->p[b->len++] = tmp[--n];
  b->p[b->len] = 0;
}
void sb_us(cl_sb *b, int64_t ns) {
  char tmp[32];
  int n = cl_fmt_us(tmp, ns);
  sb_put(b, tmp, (size_t)n);
}
static _Atomic uint64_t g_utf8_replaced;
uint64_t sb_utf8_replaced(void) { return atomic_load_explicit(&g_utf8_replaced, memory_order_relaxed); }

void sb_jstr(cl_sb *b, const char *s) {
  static const char hx[] = "0123456789abcdef";
  if (!s) s = "";
  size_t n = strlen(s);
  sb_reserve(b, 6 * n + 2);                 /* the most a byte becomes: \u00XX */
  if (b->oom) return;
  char *o = b->p + b->len;
  *o++ = '"';
  uint64_t bad = 0;
  for (const unsigned char *c = (const unsigned char *)s, *e = c + n; c < e;) {
    if (*c >= 0x80) {                       /* UTF-8 kept whole, each stray byte U+FFFD */
      size_t l = cl_utf8_len(c, e);
      if (l) { memcpy(o, c, l); o += l; c += l; }
      else { memcpy(o, CL_UTF8_REPLACEMENT, 3); o += 3; c++; bad++; }
      continue;
    }
    if (*c == '"' || *c == '\\') { *o++ = '\\'; *o++ = (char)*c; }
    else if (*c == '\n') { *o++ = '\\'; *o++ = 'n'; }
    else if (*c == '\t') { *o++ = '\\'; *o++ = 't'; }
    else if (*c < 0x20 || *c == 0x7f) {
      memcpy(o, "\\u00", 4);
      o[4] = hx[*c >> 4];
      o[5] = hx[*c & 15];
      o += 6;
    } else *o++ = (char)*c;
    c++;
  }
  *o++ = '"';
  b->len = (size_t)(o - b->p);
  b->p[b->len] = 0;
  if (bad) atomic_fetch_add_explicit(&g_utf8_replaced, bad, memory_order_relaxed);
}
void sb_key(cl_sb *b, int *first, const char *key) {
  if (!*first) sb_put(b, ",", 1);
  *first = 0;
  sb_put(b, "\"", 1);
  sb_puts(b, key);
  sb_put(b, "\":", 2);
}
