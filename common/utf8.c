/* utf8.c: see utf8.h. Table-free: the checks are those of RFC 3629's well-formed byte
 * sequences, and the terminal's shown form; nothing here allocates. */
#include "common/utf8.h"
#include <string.h>

size_t cl_utf8_len(const unsigned char *p, const unsigned char *e) {
  if (p >= e) return 0;
  unsigned c = p[0];
  if (c < 0x80) return 1;
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
  if (!n || c > 0xF4 || (size_t)(e - p) < n) return 0;
  for (size_t i = 1; i < n; i++)
    if ((p[i] & 0xC0) != 0x80) return 0;
  if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F) ||   /* overlong; surrogates */
      (c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] > 0x8F))     /* overlong; > U+10FFFF */
    return 0;
  return n;
}

size_t cl_utf8_clean(const char *s, size_t n, char *out, size_t cap) {
  const unsigned char *p = (const unsigned char *)s, *e = p + n;
  size_t o = 0, bad = 0;
  while (p < e) {
    size_t l = cl_utf8_len(p, e);
    const char *src = l ? (const char *)p : CL_UTF8_REPLACEMENT;
    size_t w = l ? l : 3;
    if (o + w + 1 > cap) break;
    memcpy(out + o, src, w);
    o += w;
    p += l ? l : 1;
    bad += !l;
  }
  out[o] = 0;
  return bad;
}

size_t cl_utf8_shown(const unsigned char *p, const unsigned char *e, int keep_newline, char *out, size_t *adv) {
  static const char hex[] = "0123456789abcdef";
  size_t l = cl_utf8_len(p, e);
  *adv = l ? l : 1;
  if (!l) { memcpy(out, CL_UTF8_REPLACEMENT, 3); return 3; }
  int control = (p[0] < 0x20 && !(keep_newline && p[0] == '\n')) || p[0] == 0x7f || (p[0] == 0xC2 && p[1] < 0xA0);
  if (!control) { memcpy(out, p, l); return l; }
  for (size_t k = 0; k < l; k++) {   /* 1 or 2 bytes: \xNN each */
    out[4 * k] = '\\'; out[4 * k + 1] = 'x'; out[4 * k + 2] = hex[p[k] >> 4]; out[4 * k + 3] = hex[p[k] & 15];
  }
  return 4 * l;
}

size_t cl_utf8_show(const char *s, char *out, size_t cap) {
  const unsigned char *p = (const unsigned char *)s, *e = p + strlen(s);
  size_t o = 0;
  while (p < e) {
    char piece[CL_UTF8_SHOWN_MAX];
    size_t adv, w = cl_utf8_shown(p, e, 0, piece, &adv);
    if (o + w + 1 > cap) break;
    memcpy(out + o, piece, w);
    o += w;
    p += adv;
  }
  out[o] = 0;
  return o;
}
