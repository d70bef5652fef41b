/* json_scan.c: see json_scan.h. Must stay correct for any valid JSON (escapes, nesting,
 * whitespace, key order) while staying fast on our writer's regular output; never parses
 * through json-c, never reads past the end it is given. */
#include "tools/commlens/read/json_scan.h"
#include "common/utf8.h"
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>

/* ---- JSON primitives (cl_json_ws, cl_json_str: json_scan.h). All return the position after
 * what they consumed, or NULL when the text ends first (need more data) or is malformed (*bad
 * set). ---- */


static inline int js_delim(char c) {
  return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

const char *cl_json_skip(const char *p, const char *e, int *bad) {
  if (p >= e) return NULL;
  char c = *p;
  if (c == '"') return cl_json_str(p, e);
  if (c == '{' || c == '[') {
    int d = 0;
    while (p < e) {
      c = *p;
      if (c == '"') { p = cl_json_str(p, e); if (!p) return NULL; continue; }
      if (c == '{' || c == '[') d++;
      else if (c == '}' || c == ']') { if (--d == 0) return p + 1; }
      p++;
    }
    return NULL;
  }
  if (c == ',' || c == '}' || c == ']' || c == ':') { *bad = 1; return NULL; }
  const char *s = p;
  while (p < e && !js_delim(*p)) p++;
  if (p == e) return NULL;
  if (p == s) { *bad = 1; return NULL; }
  return p;
}

/* Numbers saturate at +-2^62 (values from a damaged file are garbage, but adding two of them
 * must stay defined). */
#define JS_LIM ((uint64_t)1 << 62)
static int64_t js_clamp(double d) {
  if (!(d == d)) return 0;
  if (d >= (double)JS_LIM) return (int64_t)JS_LIM;
  if (d <= -(double)JS_LIM) return -(int64_t)JS_LIM;
  return (int64_t)d;
}

/* Number (or numeric string) -> double, slow path. */
static const char *js_num_slow(const char *p, const char *e, double *out, int *bad) {
  int quoted = (*p == '"');
  const char *s = p + quoted, *q = s;
  while (q < e && !js_delim(*q) && *q != '"') q++;
  if (q == e) return NULL;
  char tmp[64]; size_t n = (size_t)(q - s);
  if (n == 0 || n >= sizeof tmp) { *bad = 1; return NULL; }
  memcpy(tmp, s, n); tmp[n] = 0;
  char *end; *out = strtod(tmp, &end);
  if (end == tmp) *out = 0;
  if (quoted) { if (*q != '"') { *bad = 1; return NULL; } q++; }
  return q;
}

/* Microseconds with decimals -> integer nanoseconds, exactly for up to three decimals. */
static const char *js_us_to_ns(const char *p, const char *e, int64_t *out, int *bad) {
  const char *s = p; int neg = 0;
  if (p < e && *p == '-') { neg = 1; p++; }
  uint64_t ip = 0; const char *d0 = p;
  while (p < e && (unsigned)(*p - '0') < 10) { if (ip < JS_LIM) ip = ip * 10 + (uint64_t)(*p - '0'); p++; }
  if (p == e) return NULL;
  if (ip > JS_LIM / 1000) ip = JS_LIM / 1000;
  if (p == d0) goto slow;
  int64_t frac = 0; int nf = 0, round = 0;
  if (*p == '.') {
    p++;
    while (p < e && (unsigned)(*p - '0') < 10) {
      if (nf < 3) { frac = frac * 10 + (*p - '0'); nf++; }
      else if (nf == 3) { round = (*p >= '5'); nf++; }
      p++;
    }
    if (p == e) return NULL;
  }
  if (*p == 'e' || *p == 'E') goto slow;
  if (!js_delim(*p)) { *bad = 1; return NULL; }
  for (int i = nf < 3 ? nf : 3; i < 3; i++) frac *= 10;
  int64_t v = (int64_t)ip * 1000 + frac + round;
  *out = neg ? -v : v;
  return p;
slow:;
  double d; const char *q = js_num_slow(s, e, &d, bad);
  if (q) *out = js_clamp(d * 1000.0 + (d < 0 ? -0.5 : 0.5));
  return q;
}

/* Integer (or numeric string, or hex string "0x...") -> int64. */
static const char *js_int(const char *p, const char *e, int64_t *out, int *bad) {
  if (p < e && *p == '"') {
    const char *q = cl_json_str(p, e);
    if (!q) return NULL;
    const char *s = p + 1; size_t n = (size_t)(q - 1 - s);
    char tmp[40];
    if (n >= sizeof tmp) n = sizeof tmp - 1;
    memcpy(tmp, s, n); tmp[n] = 0;
    *out = (int64_t)strtoull(tmp, NULL, 0);
    return q;
  }
  const char *s = p; int neg = 0; uint64_t v = 0;
  if (p < e && *p == '-') { neg = 1; p++; }
  const char *d0 = p;
  while (p < e && (unsigned)(*p - '0') < 10) { if (v < JS_LIM) v = v * 10 + (uint64_t)(*p - '0'); p++; }
  if (p == e) return NULL;
  if (v > JS_LIM) v = JS_LIM;
  if (p != d0 && js_delim(*p)) { *out = neg ? -(int64_t)v : (int64_t)v; return p; }
  if (p < e && (*p == 't' || *p == 'f' || *p == 'n')) {   /* true/false/null */
    const char *q = cl_json_skip(p, e, bad);
    if (q) *out = (*p == 't');
    return q;
  }
  double d; const char *q = js_num_slow(s, e, &d, bad);
  if (q) *out = js_clamp(d);
  return q;
}

static inline int key_is(const char *k, int kl, const char *lit, int ll) {
  return kl == ll && memcmp(k, lit, (size_t)ll) == 0;
}
#define KEY(lit) key_is(k, kl, lit, (int)sizeof(lit) - 1)

static int cat_of(const char *s, int n) {
  switch (n) {
  case 2: if (!memcmp(s, "ce", 2)) return CAT_CE; break;
  case 3: if (!memcmp(s, "api", 3)) return CAT_API; if (!memcmp(s, "net", 3)) return CAT_NET; break;
  case 4: if (!memcmp(s, "coll", 4)) return CAT_COLL; if (!memcmp(s, "flow", 4)) return CAT_FLOW; break;
  case 5: if (!memcmp(s, "group", 5)) return CAT_GROUP; break;
  case 7: if (!memcmp(s, "exposed", 7)) return CAT_EXPOSED; break;
  case 8: if (!memcmp(s, "coll_gpu", 8)) return CAT_COLL_GPU; if (!memcmp(s, "proxy_op", 8)) return CAT_PROXY_OP; break;
  case 9: if (!memcmp(s, "kernel_ch", 9)) return CAT_KERNEL_CH; break;
  case 10:
    if (!memcmp(s, "proxy_step", 10)) return CAT_PROXY_STEP;
    if (!memcmp(s, "proxy_ctrl", 10)) return CAT_PROXY_CTRL;
    if (!memcmp(s, "gpu_kernel", 10)) return CAT_GPU_KERNEL;
    break;
  case 11: if (!memcmp(s, "proxy_state", 11)) return CAT_PROXY_STATE; break;
  }
  if (n == 3 && !memcmp(s, "p2p", 3)) return CAT_P2P;
  return CAT_OTHER;
}

/* The next member of an object at p (after '{' or a value): returns the start of its value,
 * with the key in *k (length *kl). Returns NULL at the closing '}' (then *close points at it), at the
 * end of the input (truncated), or on malformed input (*bad set). */
static const char *js_member(const char *p, const char *e, const char **k, int *kl,
                             const char **close, int *bad) {
  *close = NULL;
  for (;;) {
    p = cl_json_ws(p, e);
    if (p >= e) return NULL;
    if (*p == '}') { *close = p; return NULL; }
    if (*p == ',') { p++; continue; }
    if (*p != '"') { *bad = 1; return NULL; }
    *k = p + 1;
    const char *q = cl_json_str(p, e);
    if (!q) return NULL;
    *kl = (int)(q - 1 - *k);
    p = cl_json_ws(q, e);
    if (p >= e) return NULL;
    if (*p != ':') { *bad = 1; return NULL; }
    p = cl_json_ws(p + 1, e);
    return p < e ? p : NULL;
  }
}

/* A user tag: the decimal string the plugin writes ("7"; a number is taken too). Anything
 * else is not a tag (NULL with *bad set: the caller skips the value). */
static const char *js_tag(const char *p, const char *e, uint64_t *out, int *bad) {
  if (*p != '"') {
    int64_t v;
    const char *r = js_int(p, e, &v, bad);
    if (r && v < 0) { *bad = 1; return NULL; }
    if (r) *out = (uint64_t)v;
    return r;
  }
  uint64_t v = 0;
  const char *q = p + 1;
  int n = 0;
  for (; q < e && *q >= '0' && *q <= '9' && n < 20; q++, n++) {
    uint64_t d = (uint64_t)(*q - '0');
    if (v > (UINT64_MAX - d) / 10) { *bad = 1; return NULL; }
    v = v * 10 + d;
  }
  if (!n || q >= e || *q != '"') { *bad = 1; return NULL; }
  *out = v;
  return q + 1;
}

static const char *parse_args(const char *p, const char *e, cl_ev *ev, int *bad) {
  p++;
  for (;;) {
    const char *k, *close;
    int kl;
    p = js_member(p, e, &k, &kl, &close, bad);
    if (!p) return close ? close + 1 : NULL;
    int64_t v = 0;
    const char *r = NULL;
    switch (kl) {
    case 3:
      if (KEY("seq")) { r = js_int(p, e, &ev->seq, bad); ev->has_seq = r != NULL; break; }
      break;
    case 4:
      if (KEY("comm")) { r = js_int(p, e, &v, bad); ev->comm = (uint64_t)v; ev->has_comm = r != NULL; break; }
      if (KEY("peer")) { r = js_int(p, e, &v, bad); ev->peer = (int)v; ev->has_peer = r != NULL; break; }
      if ((KEY("func") || KEY("name")) && *p == '"') {
        r = cl_json_str(p, e);
        if (r) { cl_str_t s = { p + 1, (int)(r - 1 - (p + 1)) }; if (k[0] == 'f') ev->func = s; else ev->arg_name = s; }
        break;
      }
      break;
    case 5:
      if (KEY("bytes")) { r = js_int(p, e, &ev->bytes, bad); ev->has_bytes = r != NULL; break; }
      break;
    case 6:
      if (KEY("nranks")) { r = js_int(p, e, &v, bad); ev->nranks = (int)v; ev->has_nranks = r != NULL; break; }
      if (KEY("device")) { r = js_int(p, e, &v, bad); ev->device = (int)v; ev->has_device = r != NULL; break; }
      if (KEY("source") && *p == '"') { r = cl_json_str(p, e); ev->ce = r && r - p == 10 && !memcmp(p + 1, "cupti_ce", 8); break; }
      break;
    case 7:
      if (KEY("channel")) { r = js_int(p, e, &v, bad); ev->channel = (int)v; ev->has_channel = r != NULL; break; }
      break;
    case 8:
      if (KEY("p2p_peer")) { r = js_int(p, e, &v, bad); ev->has_p2p_peer = r != NULL; break; }
      if (KEY("user_tag")) { r = js_tag(p, e, &ev->user_tag, bad); ev->has_tag = r != NULL; break; }
      break;
    case 9:
      if (KEY("comm_name") && *p == '"') { r = cl_json_str(p, e); if (r) ev->comm_name = (cl_str_t){ p + 1, (int)(r - 1 - (p + 1)) }; break; }
      break;
    case 10:
      if (KEY("exposed_ns")) { r = js_int(p, e, &ev->exposed_ns, bad); ev->has_exposed = r != NULL; break; }
      if (KEY("compute_ns")) { r = js_int(p, e, &ev->compute_ns, bad); break; }
      break;
    case 11:
      if (KEY("gpu_wait_ns")) { r = js_int(p, e, &ev->w_gpu, bad); break; }
      if (KEY("implausible")) { r = js_int(p, e, &v, bad); ev->implausible = (int)v; break; }
      break;
    case 12:
      if (KEY("sync_wait_ns")) { r = js_int(p, e, &ev->sync_wait_ns, bad); ev->has_phase = r != NULL && ev->sync_wait_ns >= 0; break; }
      if (KEY("peer_wait_ns")) { r = js_int(p, e, &ev->w_peer, bad); break; }
      if (KEY("send_wait_ns")) { r = js_int(p, e, &ev->w_send, bad); break; }
      if (KEY("recv_wait_ns")) { r = js_int(p, e, &ev->w_recv, bad); break; }
      break;
    case 13:
      if (KEY("flush_wait_ns")) { r = js_int(p, e, &ev->w_flush, bad); break; }
      break;
    case 16:
      if (KEY("recv_gpu_wait_ns")) { r = js_int(p, e, &ev->w_recv_gpu, bad); break; }
      break;
    }
    if (!r) {
      if (*bad) { *bad = 0; r = cl_json_skip(p, e, bad); }   /* unexpected type: just skip it */
      else if (p < e) r = cl_json_skip(p, e, bad);
      if (!r) return NULL;
    }
    p = r;
  }
}

int cl_ev_async_key(const cl_ev *ev, char *buf, size_t n) {
  cl_str_t id = ev->id2.p ? ev->id2 : (cl_str_t){ ev->id_v, ev->id_v ? (int)(ev->id_ve - ev->id_v) : 0 };
  int k = snprintf(buf, n, "%.*s\x1f%.*s", ev->cat_s.n, ev->cat_s.p ? ev->cat_s.p : "", id.n, id.p ? id.p : "");
  return k < 0 || (size_t)k >= n ? -1 : k;
}

const char *cl_ev_scan(const char *p, const char *e, cl_ev *ev, int *bad) {
  memset(ev, 0, sizeof *ev);
  ev->beg = p; ev->cat = CAT_NONE;
  p++;
  for (;;) {
    const char *k, *close;
    int kl;
    p = js_member(p, e, &k, &kl, &close, bad);
    if (!p) {
      if (!close) return NULL;
      ev->end = close + 1;
      return close + 1;
    }
    const char *r = NULL;
    if (kl == 2 && k[0] == 'p' && k[1] == 'h' && *p == '"') {
      r = cl_json_str(p, e); if (r) ev->ph = p[1];
    } else if (kl == 2 && k[0] == 't' && k[1] == 's') {
      r = js_us_to_ns(p, e, &ev->ts_ns, bad); ev->has_ts = r != NULL; ev->ts_v = p; ev->ts_ve = r;
    } else if (kl == 3 && !memcmp(k, "dur", 3)) {
      r = js_us_to_ns(p, e, &ev->dur_ns, bad); ev->has_dur = r != NULL;
    } else if (kl == 3 && !memcmp(k, "pid", 3)) {
      r = cl_json_skip(p, e, bad); ev->pid_v = p; ev->pid_ve = r;
    } else if (kl == 3 && !memcmp(k, "tid", 3)) {
      if (*p == '"') r = cl_json_str(p, e);
      else { r = js_int(p, e, &ev->tid, bad); ev->tid_is_num = r != NULL; }
      ev->has_tid = r != NULL;
    } else if (kl == 3 && !memcmp(k, "cat", 3) && *p == '"') {
      r = cl_json_str(p, e);
      if (r) { ev->cat_s = (cl_str_t){ p + 1, (int)(r - 1 - (p + 1)) }; ev->cat = cat_of(ev->cat_s.p, ev->cat_s.n); }
    } else if (kl == 4 && !memcmp(k, "name", 4) && *p == '"') {
      r = cl_json_str(p, e);
      if (r) ev->name = (cl_str_t){ p + 1, (int)(r - 1 - (p + 1)) };
    } else if (kl == 2 && k[0] == 'i' && k[1] == 'd') {
      r = cl_json_skip(p, e, bad); ev->id_v = p; ev->id_ve = r; ev->has_id = r != NULL;
    } else if (kl == 3 && !memcmp(k, "id2", 3)) {
      r = cl_json_skip(p, e, bad);
      if (r) ev->id2 = (cl_str_t){ p, (int)(r - p) };
    } else if (kl == 4 && !memcmp(k, "args", 4) && *p == '{') {
      r = parse_args(p, e, ev, bad);
      if (r) ev->args = (cl_str_t){ p, (int)(r - p) };
    }
    if (!r) {
      if (*bad) { *bad = 0; r = cl_json_skip(p, e, bad); }
      else r = cl_json_skip(p, e, bad);
      if (!r) return NULL;
    }
    p = r;
  }
}

int cl_ev_parse(const char *p, size_t n, cl_ev *ev) {
  int bad = 0;
  const char *q = n && *p == '{' ? cl_ev_scan(p, p + n, ev, &bad) : NULL;
  return q == p + n && !bad ? 0 : -1;
}



int cl_str_eq(cl_str_t s, const char *lit) {
  size_t n = strlen(lit);
  return (size_t)s.n == n && memcmp(s.p, lit, n) == 0;
}

long cl_step_number(cl_str_t s) {
  const char *p = s.p; int n = s.n, i;
  if (n > 5 && !memcmp(p, "step ", 5)) i = 5;
  else if (n > 5 && !memcmp(p, "Step ", 5)) i = 5;
  else if (n > 14 && !memcmp(p, "ProfilerStep#", 13)) i = 13;
  else return -1;
  long v = 0;
  for (; i < n; i++) {        /* a step past LONG_MAX is no step number (fuzz_cli: it overflowed) */
    if ((unsigned)(p[i] - '0') >= 10 || v > (LONG_MAX - (p[i] - '0')) / 10) return -1;
    v = v * 10 + (p[i] - '0');
  }
  return v;
}

static int hex4(const char *p, const char *e, unsigned *out) {
  unsigned v = 0;
  if (e - p < 4) return -1;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (unsigned)((c | 0x20) - 'a' + 10) : 16;
    if (d > 15) return -1;
    v = v * 16 + d;
  }
  *out = v;
  return 0;
}

/* Every JSON escape, \u too (surrogate pairs joined; a lone half becomes U+FFFD), as UTF-8.
 * A character that does not fit whole is left out with everything after it. */
char *cl_str_unescape(cl_str_t s, char *buf, size_t n) {
  size_t o = 0;
  const char *p = s.p, *e = s.p ? s.p + s.n : NULL;   /* an absent value: {NULL, 0} */
  while (p < e && o + 1 < n) {
    unsigned cp = (unsigned char)*p++;
    if (cp == '\\' && p < e) {
      char c = *p++;
      switch (c) {
      case 'n': cp = '\n'; break;
      case 't': cp = '\t'; break;
      case 'r': cp = '\r'; break;
      case 'b': cp = '\b'; break;
      case 'f': cp = '\f'; break;
      case 'u': {
        unsigned lo;
        if (hex4(p, e, &cp)) { cp = 0xfffd; break; }
        p += 4;
        if (cp >= 0xd800 && cp < 0xdc00 && e - p >= 6 && p[0] == '\\' && p[1] == 'u' && !hex4(p + 2, e, &lo) &&
            lo >= 0xdc00 && lo < 0xe000) {
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          p += 6;
        } else if (cp >= 0xd800 && cp < 0xe000) cp = 0xfffd;
        break;
      }
      default: cp = (unsigned char)c;   /* \" \\ \/ */
      }
      if (cp >= 0x80) {
        int k = cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        if (o + (size_t)k + 1 > n) break;
        if (k == 2) buf[o++] = (char)(0xc0 | cp >> 6);
        else if (k == 3) { buf[o++] = (char)(0xe0 | cp >> 12); buf[o++] = (char)(0x80 | (cp >> 6 & 0x3f)); }
        else { buf[o++] = (char)(0xf0 | cp >> 18); buf[o++] = (char)(0x80 | (cp >> 12 & 0x3f)); buf[o++] = (char)(0x80 | (cp >> 6 & 0x3f)); }
        buf[o++] = (char)(0x80 | (cp & 0x3f));
        continue;
      }
    }
    buf[o++] = (char)cp;
  }
  /* cut short by n: never inside a character (a lead byte whose continuation did not fit goes) */
  if (p < e) {
    size_t k = o, back = 0;
    while (k > 0 && back < 3 && ((unsigned char)buf[k - 1] & 0xC0) == 0x80) { k--; back++; }
    if (k > 0 && (unsigned char)buf[k - 1] >= 0xC0) {
      unsigned char lead = (unsigned char)buf[k - 1];
      size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
      if (back + 1 < need) o = k - 1;
    }
  }
  buf[o] = 0;
  return buf;
}

int cl_json_member(const char **pp, const char *e, cl_str_t *key, cl_str_t *val) {
  const char *p = cl_json_ws(*pp, e), *q;
  int bad = 0;
  if (p < e && (*p == '{' || *p == ',')) p = cl_json_ws(p + 1, e);
  if (p >= e || *p != '"' || !(q = cl_json_str(p, e))) return 0;
  *key = (cl_str_t){ p + 1, (int)(q - 1 - (p + 1)) };
  p = cl_json_ws(q, e);
  if (p >= e || *p != ':') return 0;
  p = cl_json_ws(p + 1, e);
  if (!(q = cl_json_skip(p, e, &bad))) return 0;
  *val = (cl_str_t){ p, (int)(q - p) };
  *pp = q;
  return 1;
}

/* ---- strict validation of one value (for text passed through verbatim) ---- */
static const char *jv_value(const char *p, const char *e, int depth);
static const char *jv_string(const char *p, const char *e) {
  for (p++; p < e; p++) {
    unsigned char c = (unsigned char)*p;
    if (c == '"') return p + 1;
    if (c < 0x20) return NULL;
    if (c >= 0x80) {   /* a JSON text is UTF-8: json-c and Perfetto refuse it otherwise (fuzz_cli found
                          a merge passing a foreign byte through) */
      size_t l = cl_utf8_len((const unsigned char *)p, (const unsigned char *)e);
      if (!l) return NULL;
      p += l - 1;
      continue;
    }
    if (c == '\\') {
      if (++p >= e) return NULL;
      if (*p == 'u') {
        for (int i = 0; i < 4; i++)
          if (++p >= e || !((*p >= '0' && *p <= '9') || ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'f'))) return NULL;
      } else if (!strchr("\"\\/bfnrt", *p) || !*p) return NULL;
    }
  }
  return NULL;
}
static const char *jv_digits(const char *p, const char *e) {
  const char *s = p;
  while (p < e && *p >= '0' && *p <= '9') p++;
  return p == s ? NULL : p;
}
static const char *jv_number(const char *p, const char *e) {
  if (p < e && *p == '-') p++;
  if (p < e && *p == '0') p++;
  else if (!(p = jv_digits(p, e))) return NULL;
  if (p < e && *p == '.' && !(p = jv_digits(p + 1, e))) return NULL;
  if (p < e && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < e && (*p == '+' || *p == '-')) p++;
    if (!(p = jv_digits(p, e))) return NULL;
  }
  return p;
}
static const char *jv_value(const char *p, const char *e, int depth) {
  p = cl_json_ws(p, e);
  if (p >= e || depth > 64) return NULL;
  switch (*p) {
  case '"': return jv_string(p, e);
  case '{': case '[': {
    char close = *p == '{' ? '}' : ']';
    int obj = *p == '{';
    p = cl_json_ws(p + 1, e);
    if (p < e && *p == close) return p + 1;
    for (;;) {
      if (obj) {
        p = cl_json_ws(p, e);
        if (p >= e || *p != '"' || !(p = jv_string(p, e))) return NULL;
        p = cl_json_ws(p, e);
        if (p >= e || *p != ':') return NULL;
        p++;
      }
      if (!(p = jv_value(p, e, depth + 1))) return NULL;
      p = cl_json_ws(p, e);
      if (p >= e) return NULL;
      if (*p == close) return p + 1;
      if (*p != ',') return NULL;
      p++;
    }
  }
  case 't': return e - p >= 4 && !memcmp(p, "true", 4) ? p + 4 : NULL;
  case 'f': return e - p >= 5 && !memcmp(p, "false", 5) ? p + 5 : NULL;
  case 'n': return e - p >= 4 && !memcmp(p, "null", 4) ? p + 4 : NULL;
  default: return jv_number(p, e);
  }
}
int cl_json_valid(const char *p, size_t n) {
  const char *e = p + n, *q = jv_value(p, e, 0);
  return q && cl_json_ws(q, e) == e;
}
