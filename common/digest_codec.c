/* digest_codec.c: see digest_codec.h. Framing and integer coding only; it never trusts a
 * length it reads (each is checked against the bytes that are there and CL_DG_MAX_RAW). */
#include "common/digest_codec.h"
#include "common/grow.h"
#include <stdlib.h>
#include <string.h>
#ifndef COMMLENS_NO_ZLIB
#include <pthread.h>
#include <zlib.h>
#endif

static const char *const g_src[CL_DG_SRC_N] = {NULL, "cupti", "cupti_graph", "kernel_ch", "proxy", "cupti_ce"};
const char *cl_dg_src_name(int code) { return code > 0 && code < CL_DG_SRC_N ? g_src[code] : NULL; }

int cl_dg_reserve(cl_dg_buf *b, size_t n) {
  if (b->oom) return -1;
  if (cl_grow(&b->p, &b->cap, b->len + n, 1, 256, 0) != 0) { b->oom = 1; return -1; }
  return 0;
}
void cl_dg_put(cl_dg_buf *b, const void *s, size_t n) {
  if (!n || cl_dg_reserve(b, n)) return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

uint64_t cl_dg_get_varint(cl_dg_in *in) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (in->p >= in->e) { in->bad = 1; return 0; }
    uint8_t c = *in->p++;
    v |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) return v;
  }
  in->bad = 1;   /* more than 10 bytes: not ours */
  return 0;
}
uint64_t cl_dg_get_max(cl_dg_in *in, uint64_t max) {
  uint64_t v = cl_dg_get_varint(in);
  if (v > max) { in->bad = 1; return 0; }
  return v;
}

/* CRC-32 (IEEE 802.3, reflected: zlib's crc32) of p[0..n). */
static uint32_t crc(const uint8_t *p, size_t n) {
#ifndef COMMLENS_NO_ZLIB
  uLong c = crc32(0L, Z_NULL, 0);
  while (n) {   /* zlib takes uInt lengths */
    uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
    c = crc32(c, p, k);
    p += k; n -= k;
  }
  return (uint32_t)c;
#else
  uint32_t c = 0xffffffffu;   /* the same CRC-32 (IEEE 802.3, reflected), bit by bit */
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & -(c & 1u));
  }
  return c ^ 0xffffffffu;
#endif
}

#ifndef COMMLENS_NO_ZLIB
/* One deflate stream kept for every block: a fresh one per block (compress2) costs more to set
 * up than a flush's rows cost to compress. A second thread at the same moment (a flight dump
 * beside the writer) compresses with a stream of its own. 0 on success. Level 1, the fastest:
 * level 6 made bench/replay_cost.c's digests no smaller (measured when rows were deflated too). */
#define CL_DG_ZLEVEL 1
#define CL_DG_ZMEM 5   /* a hash of 2^12 entries: every block resets it, and blocks are small */
static pthread_mutex_t g_zmu = PTHREAD_MUTEX_INITIALIZER;
static z_stream g_z;
static int g_zready;
static int zip(uint8_t *dst, uLongf *dn, const uint8_t *src, size_t n) {
  if (pthread_mutex_trylock(&g_zmu) != 0) return compress2(dst, dn, src, (uLong)n, CL_DG_ZLEVEL) == Z_OK ? 0 : -1;
  int rc = -1;
  if (!g_zready) g_zready = deflateInit2(&g_z, CL_DG_ZLEVEL, Z_DEFLATED, 15, CL_DG_ZMEM, Z_DEFAULT_STRATEGY) == Z_OK;
  if (g_zready && deflateReset(&g_z) == Z_OK) {
    g_z.next_in = (Bytef *)src;
    g_z.avail_in = (uInt)n;
    g_z.next_out = dst;
    g_z.avail_out = (uInt)*dn;
    if (deflate(&g_z, Z_FINISH) == Z_STREAM_END) { *dn = (uLongf)g_z.total_out; rc = 0; }
  }
  pthread_mutex_unlock(&g_zmu);
  return rc;
}
#endif

static void put32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }

static int block(cl_dg_buf *out, int type, const uint8_t *raw, size_t n, int deflate_it) {
  if (n > CL_DG_MAX_RAW) return -1;
  size_t at = out->len;
  if (cl_dg_reserve(out, CL_DG_BLOCK_HEAD + n + 64)) return -1;
  uint8_t *h = out->p + at;
  int codec = CL_DG_RAW;
  size_t stored = n;
#ifndef COMMLENS_NO_ZLIB
  if (deflate_it) {
    uLongf dn = (uLongf)compressBound((uLong)n);
    if (cl_dg_reserve(out, CL_DG_BLOCK_HEAD + dn)) return -1;
    h = out->p + at;
    if (zip(h + CL_DG_BLOCK_HEAD, &dn, raw, n) == 0 && dn < n) { codec = CL_DG_ZLIB; stored = dn; }
  }
#else
  (void)deflate_it;
#endif
  if (codec == CL_DG_RAW) memcpy(h + CL_DG_BLOCK_HEAD, raw, n);
  put32(h, CL_DG_SYNC);
  h[8] = (uint8_t)type; h[9] = (uint8_t)codec; h[10] = h[11] = 0;
  put32(h + 12, (uint32_t)stored);
  put32(h + 16, (uint32_t)n);
  /* the CRC covers everything after it, lengths included: a flipped length is caught too */
  put32(h + 4, crc(h + 8, 12 + stored));
  out->len = at + CL_DG_BLOCK_HEAD + stored;
  return 0;
}
int cl_dg_block(cl_dg_buf *out, int type, const uint8_t *raw, size_t n) { return block(out, type, raw, n, 1); }
int cl_dg_block_stored(cl_dg_buf *out, int type, const uint8_t *raw, size_t n) { return block(out, type, raw, n, 0); }

static size_t next_sync(const uint8_t *d, size_t len, size_t from) {
  for (size_t i = from; i + 4 <= len; i++) if (cl_dg_le32(d + i) == CL_DG_SYNC) return i;
  return len;
}

int cl_dg_block_read(const uint8_t *d, size_t len, size_t at, cl_dg_block_view *blk, size_t *next) {
  memset(blk, 0, sizeof *blk);
  if (at >= len) { *next = len; return 0; }
  /* fewer bytes than a block head: a torn tail (-1) when it is too short to tell or starts like
   * a block, else damage; the length is tested before a word is read */
  if (len - at < CL_DG_BLOCK_HEAD) { *next = len; return len - at < 4 || cl_dg_le32(d + at) == CL_DG_SYNC ? -1 : -2; }
  const uint8_t *h = d + at;
  *next = next_sync(d, len, at + 1);
  if (cl_dg_le32(h) != CL_DG_SYNC) { *next = next_sync(d, len, at); return -2; }
  uint32_t stored = cl_dg_le32(h + 12), raw = cl_dg_le32(h + 16);
  int codec = h[9];
  if (codec > CL_DG_ZLIB || raw > CL_DG_MAX_RAW || (codec == CL_DG_RAW && stored != raw) ||
      raw > (uint64_t)stored * CL_DG_MAX_RATIO + CL_DG_RATIO_SLACK) return -2;   /* memory follows the file's bytes */
  if (stored > len - at - CL_DG_BLOCK_HEAD) {
    /* cut off: a torn tail when nothing follows that could be a block, else damage */
    return *next == len ? -1 : -2;
  }
  if (crc(h + 8, 12 + (size_t)stored) != cl_dg_le32(h + 4)) return -2;
  uint8_t *out = malloc(raw ? raw : 1);
  if (!out) return -2;
  if (codec == CL_DG_RAW) memcpy(out, h + CL_DG_BLOCK_HEAD, raw);
  else {
#ifndef COMMLENS_NO_ZLIB
    uLongf dn = raw;
    if (uncompress(out, &dn, h + CL_DG_BLOCK_HEAD, stored) != Z_OK || dn != raw) { free(out); return -2; }
#else
    free(out);
    return -2;
#endif
  }
  *next = at + CL_DG_BLOCK_HEAD + stored;
  blk->type = h[8];
  blk->raw = out;
  blk->n = raw;
  blk->stored = stored;
  return 1;
}
