/* rc_stream.c: the CPU replay benchmark's streams: a recording (tools/replay/ format, gzip) filtered
 * to a mask and its body repeated with sequence numbers and times moved on. It writes streams
 * only; it never loads the plugin. */
#include "rc_stream.h"
#include "commlens/nccl_profiler_abi.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct { uint64_t *k; unsigned char *v; size_t cap, n; } hflag;   /* recorded handle -> dropped */
static unsigned char *hflag_slot(hflag *m, uint64_t k) {
  static unsigned char nil;   /* a NULL handle: never dropped */
  if (!k) { nil = 0; return &nil; }
  if (4 * (m->n + 1) > 3 * m->cap) {   /* grow: rehash what is there */
    hflag g = {calloc(m->cap ? 2 * m->cap : 1 << 12, 8), calloc(m->cap ? 2 * m->cap : 1 << 12, 1),
               m->cap ? 2 * m->cap : 1 << 12, 0};
    if (!g.k || !g.v) { fprintf(stderr, "out of memory\n"); exit(2); }
    for (size_t i = 0; i < m->cap; i++) if (m->k[i]) *hflag_slot(&g, m->k[i]) = m->v[i];
    free(m->k); free(m->v);
    *m = g;
  }
  size_t i = (k * 0x9E3779B97F4A7C15ull >> 20) & (m->cap - 1);
  while (m->k[i] && m->k[i] != k) i = (i + 1) & (m->cap - 1);
  if (!m->k[i]) { m->k[i] = k; m->n++; }
  return &m->v[i];
}

static uint64_t hex_u64le(const char *h) {   /* 16 hex digits, little-endian bytes */
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) {
    unsigned b;
    sscanf(h + 2 * i, "%2x", &b);
    v = v << 8 | b;
  }
  return v;
}
static void put_u64le(char *h, uint64_t v) {
  for (int i = 0; i < 8; i++, v >>= 8) {
    char t[3];
    snprintf(t, sizeof t, "%02x", (unsigned)(v & 0xff));
    h[2 * i] = t[0]; h[2 * i + 1] = t[1];
  }
}

static int split(char *line, char **tok, int max) {
  int n = 0;
  for (char *p = line; n < max;) {
    tok[n++] = p;
    char *sp = strchr(p, ' ');
    if (!sp) break;
    *sp = 0;
    p = sp + 1;
  }
  return n;
}

static char **read_lines(const char *path, size_t *n) {
  gzFile gz = gzopen(path, "rb");
  if (!gz) return NULL;
  size_t cap = 1024;
  char **v = malloc(cap * sizeof *v), *buf = malloc(1 << 20);
  *n = 0;
  while (gzgets(gz, buf, 1 << 20)) {
    size_t l = strlen(buf);
    if (l && buf[l - 1] == '\n') buf[--l] = 0;
    if (!l) continue;
    if (*n == cap) v = realloc(v, (cap *= 2) * sizeof *v);
    v[(*n)++] = strdup(buf);
  }
  free(buf);
  gzclose(gz);
  return v;
}

int make_stream(const char *src, const char *dst, int copies, int mask, int abi, stream_counts *c) {
  size_t n;
  char **lines = read_lines(src, &n);
  if (!lines) { fprintf(stderr, "cannot read %s\n", src); return -1; }
  uint64_t maxseq = 0, last_t = 0;
  for (size_t i = 0; i < n; i++) {
    char *tok[16], *dup = strdup(lines[i]);
    int nt = split(dup, tok, 16);
    if (lines[i][0] != '#' && nt > 4) {
      uint64_t t = strtoull(tok[3], NULL, 10);
      if (t > last_t) last_t = t;
      if (tok[0][0] == 'S' && nt > 7 && strlen(tok[7]) >= 64 && hex_u64le(tok[7]) == CLABI_EV_COLL) {
        uint64_t s = hex_u64le(tok[7] + 48);
        if (s > maxseq) maxseq = s;
      }
    }
    free(dup);
  }
  gzFile out = gzopen(dst, "wb1");
  if (!out) { fprintf(stderr, "cannot write %s\n", dst); return -1; }
  memset(c, 0, sizeof *c);
  hflag dropped = {0};
  for (int copy = 0; copy < copies; copy++) {
    uint64_t dt = (uint64_t)copy * (last_t + 1000000), dseq = (uint64_t)copy * (maxseq + 1);
    for (size_t i = 0; i < n; i++) {
      if (lines[i][0] == '#') { if (!copy) gzprintf(out, "%s\n", lines[i]); continue; }
      char *tok[300], *dup = strdup(lines[i]);
      int nt = split(dup, tok, 300);
      char kind = tok[0][0];
      char abis[8];
      snprintf(abis, sizeof abis, "%d", abi ? abi : atoi(tok[4]));
      tok[4] = abis;
      char ts[32];
      snprintf(ts, sizeof ts, "%llu", (unsigned long long)(strtoull(tok[3], NULL, 10) + dt));
      tok[3] = ts;
      int keep = 1;
      if (kind == 'I') {
        keep = !copy;
      } else if (kind == 'F') {
        keep = 0;
      } else if (kind == 'S') {
        char *d = tok[7];
        uint64_t type = hex_u64le(d), h = strtoull(tok[6], NULL, 16);
        unsigned char *f = hflag_slot(&dropped, h);
        *f = !(type & (uint64_t)mask);
        keep = !*f;
        if (keep) {
          uint64_t parent = hex_u64le(d + 16);
          if (parent && *hflag_slot(&dropped, parent)) put_u64le(d + 16, 0);
          if (type == CLABI_EV_COLL) { put_u64le(d + 48, hex_u64le(d + 48) + dseq); c->colls++; }
          /* the GPU's timers move on with the copy's time, as a longer job's would */
          if (type == CLABI_EV_KERNEL_CH && strlen(d) >= 80 && hex_u64le(d + 64)) put_u64le(d + 64, hex_u64le(d + 64) + dt);
          if (type == CLABI_EV_P2P) c->p2ps++;
          if (type == CLABI_EV_KERNEL_LAUNCH) c->launches++;
          c->events++;
        }
      } else {   /* E, T */
        keep = !*hflag_slot(&dropped, strtoull(tok[5], NULL, 16));
        int st = kind == 'T' && nt > 7 ? atoi(tok[6]) : 0;
        if (keep && (st == CLABI_ST_KERNEL_CH_STOP || st == CLABI_ST_KERNEL_PHASE_STOP) && strlen(tok[7]) >= 16 &&
            hex_u64le(tok[7]))
          put_u64le(tok[7], hex_u64le(tok[7]) + dt);
      }
      if (keep) {
        if (kind != 'I') c->calls++;
        for (int k = 0; k < nt; k++) gzprintf(out, k ? " %s" : "%s", tok[k]);
        if (kind == 'I' && nt == 12) gzprintf(out, " 0");   /* GPU 0 */
        gzprintf(out, "\n");
      }
      free(dup);
    }
  }
  gzclose(out);
  for (size_t i = 0; i < n; i++) free(lines[i]);
  free(lines);
  free(dropped.k);
  free(dropped.v);
  return 0;
}
