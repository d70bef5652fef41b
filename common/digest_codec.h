/* digest_codec.h: the byte-level rules of the digest file (docs/digest.md), shared by the
 * plugin's writer and the CLI's reader: the file magic, block framing (sync word, type,
 * codec, lengths, CRC-32), varints and zigzag. Nothing here knows what a block holds. */
#ifndef COMMLENS_DIGEST_CODEC_H
#define COMMLENS_DIGEST_CODEC_H
#include <stddef.h>
#include <stdint.h>

#define CL_DG_MAGIC "CLDIGEST"         /* 8 bytes, then a u32le format version */
#define CL_DG_MAGIC_LEN 8
#define CL_DG_VERSION 3u               /* 3: `R` blocks with the timers column; 2 (readable): without it;
                                          1 (readable): `C` blocks */
#define CL_DG_VERSION_MIN 1u
#define CL_DG_FILE_HEAD 12u            /* magic + version */
#define CL_DG_SYNC 0x4b4c4744u         /* "DGLK" little-endian: starts every block */
#define CL_DG_BLOCK_HEAD 20u           /* u32 sync, u32 crc, type, codec, 2 reserved, u32 stored, u32 raw */
#define CL_DG_MAX_RAW (64u << 20)      /* no block inflates past this (a reader's bound) */
#define CL_DG_MAX_RATIO 64u            /* nor past this many times its stored size, plus CL_DG_RATIO_SLACK:
                                          deflate at level 1 left our blocks 1.5 to 3 times larger */
#define CL_DG_RATIO_SLACK 4096u
#define CL_DG_MAX_JSON (64u << 10)     /* a header or stats block's JSON (about 0.5 and 6 KB written) */
#define CL_DG_BLOCK_ROWS (1u << 18)    /* rows (collectives, steps) a block holds at most */

/* Block types (one byte). */
enum { CL_DG_HEADER = 'H', CL_DG_COLLS = 'C', CL_DG_CHANS = 'K', CL_DG_STEPS = 'W', CL_DG_STATS = 'T',
       CL_DG_COLLS_RUNS = 'R' };   /* R: the collectives of C, each column raw or in runs */
/* An R block's column: its mode, then its values (raw) or (count, value) runs. */
enum { CL_DG_COL_RAW = 0, CL_DG_COL_RUNS = 1 };
/* Payload codecs. */
enum { CL_DG_RAW = 0, CL_DG_ZLIB = 1 };
/* Where a collective's GPU span came from (the trace's "source"), 0: not timed. */
enum { CL_DG_SRC_NONE = 0, CL_DG_SRC_CUPTI, CL_DG_SRC_CUPTI_GRAPH, CL_DG_SRC_KERNEL_CH, CL_DG_SRC_PROXY,
       CL_DG_SRC_CUPTI_CE, CL_DG_SRC_N };
/* A flag or'ed into the src column: the row's exposed time is estimated (COMMLENS_CUPTI=sampled,
 * outside CUPTI's windows), not measured. */
#define CL_DG_SRC_EST 8
/* The source's name (the trace's "source"; NULL for none). The writer keeps a collective's
 * source as its code (plugin/pipeline/asm_finish.c), and names it only where it is drawn. */
const char *cl_dg_src_name(int code);

/* A growable byte buffer of the encoder (caller owns .p; free() it). oom: a growth failed,
 * everything appended after it is dropped. */
typedef struct { uint8_t *p; size_t len, cap; int oom; } cl_dg_buf;
void cl_dg_put(cl_dg_buf *b, const void *s, size_t n);
/* Room for n more bytes; -1 (and oom set) when out of memory. */
int cl_dg_reserve(cl_dg_buf *b, size_t n);
/* v as a varint at p, which has room for 10 bytes (the most one takes); returns the byte after
 * it. For a writer that reserved room for many at once. */
static inline uint8_t *cl_dg_varint_at(uint8_t *p, uint64_t v) {
  while (v >= 0x80) { *p++ = (uint8_t)(v | 0x80); v >>= 7; }
  *p++ = (uint8_t)v;
  return p;
}
/* Inline: a digest row is a few dozen of them (bench/replay_cost.c). */
static inline void cl_dg_varint(cl_dg_buf *b, uint64_t v) {
  if (b->cap - b->len < 10 && cl_dg_reserve(b, 10)) return;   /* a varint is at most 10 bytes */
  b->len = (size_t)(cl_dg_varint_at(b->p + b->len, v) - b->p);
}
static inline uint64_t cl_dg_zz(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t cl_dg_unzz(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* Appends one framed block of `type` holding raw[0..n) to out, deflated when zlib is built in
 * and it helps. 0, or -1 when out of memory (out unchanged in length). */
int cl_dg_block(cl_dg_buf *out, int type, const uint8_t *raw, size_t n);
/* The same, never deflated (the collectives' R blocks: their runs leave zlib a quarter to take
 * at 150-200 instructions a byte, most of what a collective cost the writer). */
int cl_dg_block_stored(cl_dg_buf *out, int type, const uint8_t *raw, size_t n);

/* A bounded reader over [p, e): a failed read sets bad and returns 0. */
typedef struct { const uint8_t *p, *e; int bad; } cl_dg_in;
uint64_t cl_dg_get_varint(cl_dg_in *in);
/* A varint that must be <= max (else bad). */
uint64_t cl_dg_get_max(cl_dg_in *in, uint64_t max);

static inline uint32_t cl_dg_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One block as found in a file image: its type, its raw payload and its size as stored (the
 * bytes of the file that carry it: a reader bounds what the block claims by them). */
typedef struct { int type; uint8_t *raw; size_t n, stored; } cl_dg_block_view;
/* Frames the block at `at` of [data, data+len): 1 with *blk filled (blk->raw malloc'd: the
 * caller frees) and *next past it; 0 at the end of the data; -1 for a block that is cut off
 * at the end (a torn tail: *next = len); -2 for a damaged block (bad CRC, lengths, codec or
 * inflation), *next at the next sync word after `at` (or len). */
int cl_dg_block_read(const uint8_t *data, size_t len, size_t at, cl_dg_block_view *blk, size_t *next);
#endif
