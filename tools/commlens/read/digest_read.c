/* digest_read.c: see digest_read.h. Decodes blocks the plugin's exporters/digest.c encodes;
 * every count is bounded by the bytes that are there, every index by its table, and the rows
 * (or entries) of a block by the bytes that carry it in the file: at most one per stored byte. */
#include "tools/commlens/read/digest_read.h"
#include "common/digest_codec.h"
#include "common/utf8.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#define T_LIM ((int64_t)1 << 62)
static int64_t clamp(int64_t v) { return v > T_LIM ? T_LIM : v < -T_LIM ? -T_LIM : v; }
/* a + b on the clamped range (values come from the file: never overflow) */
static int64_t add_t(int64_t a, int64_t b) {
  int64_t s;
  if (__builtin_add_overflow(a, b, &s)) return b > 0 ? T_LIM : -T_LIM;
  return clamp(s);
}
static int64_t u2i(uint64_t v) { return v > (uint64_t)T_LIM ? T_LIM : (int64_t)v; }

int cl_digest_is(const char *path) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return 0;
  struct stat st;
  char m[CL_DG_MAGIC_LEN];
  int is = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read(fd, m, sizeof m) == (ssize_t)sizeof m &&
           !memcmp(m, CL_DG_MAGIC, sizeof m);
  close(fd);
  return is;
}

typedef struct { char **s; size_t n; } str_tab;
static void tab_free(str_tab *t) {
  for (size_t i = 0; i < t->n; i++) free(t->s[i]);
  free(t->s);
}
static int read_strings(cl_dg_in *in, str_tab *t, cl_info *info) {
  size_t n = cl_dg_get_max(in, (uint64_t)(in->e - in->p));
  if (in->bad) return -1;
  t->s = calloc(n ? n : 1, sizeof *t->s);
  if (!t->s) return -1;
  for (size_t i = 0; i < n; i++) {
    size_t l = cl_dg_get_max(in, 255);
    if (in->bad || l > (size_t)(in->e - in->p)) return -1;
    t->s[i] = malloc(3 * l + 1);
    if (!t->s[i]) return -1;
    t->n = i + 1;
    info->n_utf8 += (int64_t)cl_utf8_clean((const char *)in->p, l, t->s[i], 3 * l + 1);
    in->p += l;
  }
  return 0;
}

typedef struct { uint64_t hash; uint32_t name; int32_t rank, nranks; } comm_t;
enum { C_P2P, C_COMM, C_FUNC, C_ALGO, C_PROTO, C_SEQ, C_BYTES, C_NCH, C_PEER, C_ENQ, C_ENQ_DUR, C_SRC,
       C_GS, C_GDUR, C_EXPO, C_TAIL, C_N, C_TIMERS = C_N, C_N3 };   /* C_N3: version 3's columns */

static int32_t i32(int64_t v) { return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v; }

/* One column into col (n values): a C block's, raw; an R block's (runs), by its mode: raw, or in
 * runs that fill it exactly. */
static void read_col(cl_dg_in *in, uint64_t *col, size_t n, int runs) {
  uint64_t mode = runs ? cl_dg_get_varint(in) : CL_DG_COL_RAW;
  if (mode == CL_DG_COL_RAW) {
    for (size_t i = 0; i < n && !in->bad; i++) col[i] = cl_dg_get_varint(in);
  } else if (mode == CL_DG_COL_RUNS) {
    for (size_t i = 0; i < n && !in->bad;) {
      size_t k = cl_dg_get_max(in, n - i);
      uint64_t v = cl_dg_get_varint(in);
      if (!k) in->bad = 1;
      for (; k; k--) col[i++] = v;
    }
  } else {
    in->bad = 1;
  }
}

/* What a block decoder returns: its rows delivered, damage (the block is skipped and counted),
 * or more rows claimed than the block's bytes carry (the file is refused). */
enum blk_rc { BLK_OK = 0, BLK_DAMAGED = -1, BLK_CLAIMS = -2 };
/* n entries of at least `min` raw bytes each, at most one per stored byte. */
static enum blk_rc fits(size_t n, size_t min, const cl_dg_block_view *b, cl_info *info) {
  if (n > b->stored) {
    snprintf(info->msg, sizeof info->msg, "block '%c' claims %zu rows in %zu bytes (at most one a byte); not a digest "
             "this reader trusts", b->type, n, b->stored);
    return BLK_CLAIMS;
  }
  return n * min > b->n ? BLK_DAMAGED : BLK_OK;
}

/* A collectives block (C, or R: columns in runs); its rows are delivered only when it is whole. */
static enum blk_rc colls_block(const cl_dg_block_view *b, int64_t off, const cl_dg_sink *sink, void *arg, cl_info *info,
                               int runs, unsigned version) {
  const uint8_t *raw = b->raw;
  size_t len = b->n;
  const int ncols = version >= 3 ? C_N3 : C_N;
  cl_dg_in in = {raw, raw + len, 0};
  /* a C row takes at least C_N bytes; R rows can take less, up to the writer's bound */
  size_t n = cl_dg_get_max(&in, runs ? CL_DG_BLOCK_ROWS : len);
  if (in.bad) return BLK_DAMAGED;
  enum blk_rc f = fits(n, runs ? 0 : C_N, b, info);
  if (f != BLK_OK) return f;
  str_tab st = {0};
  comm_t *cm = NULL;
  uint64_t *col = NULL;
  enum blk_rc rc = BLK_DAMAGED;
  if (read_strings(&in, &st, info)) goto out;
  size_t nc = cl_dg_get_max(&in, (uint64_t)(in.e - in.p));
  if (in.bad || !(cm = calloc(nc ? nc : 1, sizeof *cm))) goto out;
  for (size_t i = 0; i < nc; i++) {
    cm[i].hash = cl_dg_get_varint(&in);
    cm[i].name = (uint32_t)cl_dg_get_max(&in, st.n ? st.n - 1 : 0);
    cm[i].rank = i32(cl_dg_unzz(cl_dg_get_varint(&in)));
    cm[i].nranks = i32(cl_dg_unzz(cl_dg_get_varint(&in)));
    if (in.bad || !st.n) goto out;
  }
  if (!(col = calloc((n ? n : 1) * C_N3, sizeof *col))) goto out;   /* a version 2 block's timers: 0 */
  for (int c = 0; c < ncols; c++) read_col(&in, col + (size_t)c * n, n, runs);
  if (in.bad || in.p != in.e) goto out;
  /* check every index before delivering anything: a block is whole or not at all */
  for (size_t i = 0; i < n; i++) {
    if (col[C_COMM * n + i] >= nc || col[C_FUNC * n + i] >= st.n || col[C_ALGO * n + i] >= st.n ||
        col[C_PROTO * n + i] >= st.n || col[C_P2P * n + i] > 1 || col[C_SRC * n + i] > (CL_DG_SRC_EST | 7) ||
        (col[C_SRC * n + i] & 7) >= CL_DG_SRC_N || col[C_TIMERS * n + i] > 1) goto out;
  }
  int64_t seq = 0, enq = 0;
  for (size_t i = 0; i < n; i++) {
#define V(c) col[(size_t)(c) * n + i]
    const comm_t *k = &cm[V(C_COMM)];
    seq = (int64_t)((uint64_t)seq + (uint64_t)cl_dg_unzz(V(C_SEQ)));
    enq = (int64_t)((uint64_t)enq + (uint64_t)cl_dg_unzz(V(C_ENQ)));
    cl_dg_row r = {.comm = k->hash, .comm_name = st.s[k->name], .rank = k->rank, .nranks = k->nranks,
                   .p2p = (int)V(C_P2P), .func = st.s[V(C_FUNC)], .algo = st.s[V(C_ALGO)], .proto = st.s[V(C_PROTO)],
                   .seq = seq < 0 ? -1 : clamp(seq), .bytes = u2i(V(C_BYTES)),
                   .nchannels = i32(cl_dg_unzz(V(C_NCH))), .peer = i32(cl_dg_unzz(V(C_PEER))),
                   .src = (int)(V(C_SRC) & 7), .expo_est = (V(C_SRC) & CL_DG_SRC_EST) != 0, .exposed_ns = V(C_EXPO) ? u2i(V(C_EXPO) - 1) : -1,
                   .tail_ch = V(C_TAIL) && V(C_TAIL) <= 65536 ? (int)V(C_TAIL) - 1 : -1,
                   .untimed = (int)V(C_TIMERS)};
    r.enq_start = add_t(clamp(enq), off);
    r.enq_end = add_t(r.enq_start, clamp(cl_dg_unzz(V(C_ENQ_DUR))));
    r.gpu_start = r.src ? add_t(r.enq_start, clamp(cl_dg_unzz(V(C_GS)))) : r.enq_start;
    r.gpu_end = r.src ? add_t(r.gpu_start, clamp(cl_dg_unzz(V(C_GDUR)))) : r.enq_start;
    if (r.gpu_end < r.gpu_start) r.gpu_end = r.gpu_start;
    if (r.enq_end < r.enq_start) r.enq_end = r.enq_start;
#undef V
    if (sink && sink->coll) sink->coll(&r, arg);
  }
  info->n_events += (int64_t)n;
  rc = BLK_OK;
out:
  tab_free(&st);
  free(cm);
  free(col);
  return rc;
}

/* A K entry is 16 varints, a W entry 3. */
enum { CHAN_MIN_BYTES = 16, STEP_MIN_BYTES = 3 };
static enum blk_rc chans_block(const cl_dg_block_view *b, const cl_dg_sink *sink, void *arg, cl_info *info) {
  cl_dg_in in = {b->raw, b->raw + b->n, 0};
  size_t n = cl_dg_get_max(&in, b->n);
  if (in.bad) return BLK_DAMAGED;
  enum blk_rc f = fits(n, CHAN_MIN_BYTES, b, info);
  if (f != BLK_OK) return f;
  cl_dg_chan *c = calloc(n ? n : 1, sizeof *c);
  if (!c) return BLK_DAMAGED;
  for (size_t i = 0; i < n && !in.bad; i++) {
    c[i].comm = cl_dg_get_varint(&in);
    c[i].channel = (int32_t)cl_dg_get_max(&in, 65535);
    c[i].peer = i32(cl_dg_unzz(cl_dg_get_varint(&in)));
    c[i].n = u2i(cl_dg_get_varint(&in));
    c[i].sum_dur = u2i(cl_dg_get_varint(&in));
    c[i].max_dur = u2i(cl_dg_get_varint(&in));
    c[i].max_seq = clamp(cl_dg_unzz(cl_dg_get_varint(&in)));
    c[i].nsteps = u2i(cl_dg_get_varint(&in));
    for (int k = 0; k < 6; k++) c[i].w[k] = u2i(cl_dg_get_varint(&in));
    if (c[i].peer < -1) in.bad = 1;
  }
  enum blk_rc rc = in.bad || in.p != in.e ? BLK_DAMAGED : BLK_OK;
  for (size_t i = 0; !rc && i < n; i++) if (sink && sink->chan) sink->chan(&c[i], arg);
  if (!rc) info->n_events += (int64_t)n;
  free(c);
  return rc;
}

static enum blk_rc steps_block(const cl_dg_block_view *b, int64_t off, const cl_dg_sink *sink, void *arg, cl_info *info) {
  cl_dg_in in = {b->raw, b->raw + b->n, 0};
  size_t n = cl_dg_get_max(&in, b->n);
  if (in.bad) return BLK_DAMAGED;
  enum blk_rc f = fits(n, STEP_MIN_BYTES, b, info);
  if (f != BLK_OK) return f;
  int64_t (*s)[3] = calloc(n ? n : 1, sizeof *s);
  if (!s) return BLK_DAMAGED;
  for (size_t i = 0; i < n && !in.bad; i++) {
    s[i][0] = u2i(cl_dg_get_varint(&in));
    s[i][1] = add_t(u2i(cl_dg_get_varint(&in)), off);
    int64_t d = clamp(cl_dg_unzz(cl_dg_get_varint(&in)));
    s[i][2] = add_t(s[i][1], d < 0 ? 0 : d);
  }
  enum blk_rc rc = in.bad || in.p != in.e ? BLK_DAMAGED : BLK_OK;
  for (size_t i = 0; !rc && i < n; i++) if (sink && sink->step) sink->step(s[i][0], s[i][1], s[i][2], arg);
  if (!rc) info->n_events += (int64_t)n;
  free(s);
  return rc;
}

static void damage(cl_info *info, const char *what, size_t at) {
  info->bad = 1;
  info->n_skipped++;
  if (!info->msg[0]) snprintf(info->msg, sizeof info->msg, "%s at byte %zu", what, at);
}

int cl_digest_scan_mem(const uint8_t *d, size_t len, const cl_dg_sink *sink, void *arg, cl_info *info, int header_only) {
  if (len < CL_DG_FILE_HEAD || memcmp(d, CL_DG_MAGIC, CL_DG_MAGIC_LEN)) {
    snprintf(info->msg, sizeof info->msg, "not a commlens digest (no %s magic)", CL_DG_MAGIC);
    return -1;
  }
  uint32_t ver = cl_dg_le32(d + CL_DG_MAGIC_LEN);
  if (ver < CL_DG_VERSION_MIN || ver > CL_DG_VERSION) {
    snprintf(info->msg, sizeof info->msg, "digest version %u is not supported (this commlens reads versions %u to %u)",
             ver, CL_DG_VERSION_MIN, CL_DG_VERSION);
    return -1;
  }
  int64_t off = 0;
  size_t at = CL_DG_FILE_HEAD, next;
  for (;;) {
    cl_dg_block_view b;
    int k = cl_dg_block_read(d, len, at, &b, &next);
    if (k == 0) break;
    if (k == -1) { info->truncated = 1; if (!info->msg[0]) snprintf(info->msg, sizeof info->msg, "last block cut off at byte %zu", at); break; }
    if (k == -2) {
      if (!info->has_header) { snprintf(info->msg, sizeof info->msg, "damaged digest header block"); return -1; }
      damage(info, "damaged block (bad framing or CRC)", at);
      at = next;
      continue;
    }
    at = next;
    if (!info->has_header) {   /* the first block must be the header */
      if (b.type == CL_DG_HEADER && b.n <= CL_DG_MAX_JSON) cl_info_header(info, (const char *)b.raw, b.n);
      if (info->has_header && sink && sink->json) sink->json(CL_DG_HEADER, (const char *)b.raw, b.n, arg);
      free(b.raw);
      if (!info->has_header) { snprintf(info->msg, sizeof info->msg, "digest without a header block"); return -1; }
      if (cl_info_refused(info)) return -1;
      off = info->realtime_offset_ns;
      if (header_only) return 0;
      continue;
    }
    info->saw_events = 1;
    enum blk_rc bad = BLK_OK;
    switch (b.type) {
    case CL_DG_COLLS: bad = colls_block(&b, off, sink, arg, info, 0, ver); break;
    case CL_DG_COLLS_RUNS: bad = colls_block(&b, off, sink, arg, info, 1, ver); break;
    case CL_DG_CHANS: bad = chans_block(&b, sink, arg, info); break;
    case CL_DG_STEPS: bad = steps_block(&b, off, sink, arg, info); break;
    case CL_DG_STATS:
      if (b.n > CL_DG_MAX_JSON) { bad = BLK_DAMAGED; break; }
      cl_info_stats(info, (const char *)b.raw, b.n);
      if (sink && sink->json) sink->json(CL_DG_STATS, (const char *)b.raw, b.n, arg);
      break;
    default: break;   /* a later version's block: skipped, as the schema promises */
    }
    if (bad == BLK_CLAIMS) { free(b.raw); info->bad = 1; return -1; }
    if (bad) damage(info, "undecodable block", at);
    info->bytes_events += (int64_t)b.n;
    free(b.raw);
  }
  if (!info->has_header) { snprintf(info->msg, sizeof info->msg, "digest without a header block"); return -1; }
  info->events_closed = !info->truncated;
  return 0;
}

int cl_digest_scan(const char *path, const cl_dg_sink *sink, void *arg, cl_info *info, int header_only) {
  memset(info, 0, sizeof *info);
  info->cuda_dev = -1;
  info->rank = -1; info->format = -1;
  int fd = cl_input_open(path, info);
  if (fd < 0) { info->bad = 1; return -1; }
  struct stat st;
  if (fstat(fd, &st) != 0) { close(fd); snprintf(info->msg, sizeof info->msg, "cannot stat"); return -1; }
  size_t len = (size_t)st.st_size;
  if (len < CL_DG_FILE_HEAD) { close(fd); snprintf(info->msg, sizeof info->msg, "not a commlens digest (%zu bytes)", len); return -1; }
  /* read, not mapped: a file cut short by someone while we read it must not raise SIGBUS */
  uint8_t *m = malloc(len);
  size_t got = 0;
  while (m && got < len) {
    ssize_t k = read(fd, m + got, len - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += (size_t)k;
  }
  close(fd);
  if (!m) { snprintf(info->msg, sizeof info->msg, "out of memory for %zu bytes", len); return -1; }
  int rc = cl_digest_scan_mem(m, got, sink, arg, info, header_only);
  free(m);
  return rc;
}
