/* pb.c: the protobuf wire encoding of pb.h. A nested message's length is a varint in front
 * of its body, unknown until the body is written: one byte is reserved when it opens, and
 * when it closes the body moves up by the bytes a longer length needs (the minimal encoding:
 * never the padded lengths that make every message 4 bytes longer). */
#include "tools/commlens/merge/pb.h"
#include "tools/commlens/base/util.h"
#include <stdlib.h>
#include <string.h>

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2 };

static void need(cl_pb *b, size_t k) {
  if (b->n + k <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->n + k) cap *= 2;
  b->d = cl_xrealloc(b->d, cap); b->cap = cap;
}

static int varint_len(uint64_t v) { int n = 1; while (v >= 0x80) { v >>= 7; n++; } return n; }

static void put_varint(cl_pb *b, uint64_t v) {
  need(b, 10);
  while (v >= 0x80) { b->d[b->n++] = (uint8_t)(v | 0x80); v >>= 7; }
  b->d[b->n++] = (uint8_t)v;
}
static void put_tag(cl_pb *b, uint32_t field, int wt) { put_varint(b, (uint64_t)field << 3 | (uint64_t)wt); }

void cl_pb_uint(cl_pb *b, uint32_t field, uint64_t v) { put_tag(b, field, WT_VARINT); put_varint(b, v); }
void cl_pb_int(cl_pb *b, uint32_t field, int64_t v) { put_tag(b, field, WT_VARINT); put_varint(b, (uint64_t)v); }

void cl_pb_fixed64(cl_pb *b, uint32_t field, uint64_t v) {
  put_tag(b, field, WT_I64);
  need(b, 8);
  for (int i = 0; i < 8; i++) b->d[b->n++] = (uint8_t)(v >> (8 * i));   /* little-endian */
}
void cl_pb_double(cl_pb *b, uint32_t field, double v) {
  uint64_t u; memcpy(&u, &v, sizeof u);
  cl_pb_fixed64(b, field, u);
}

void cl_pb_bytes(cl_pb *b, uint32_t field, const void *p, size_t n) {
  put_tag(b, field, WT_LEN); put_varint(b, n);
  need(b, n);
  if (n) memcpy(b->d + b->n, p, n);
  b->n += n;
}
void cl_pb_str(cl_pb *b, uint32_t field, const char *s) { cl_pb_bytes(b, field, s, strlen(s)); }

void cl_pb_begin(cl_pb *b, uint32_t field) {
  put_tag(b, field, WT_LEN);
  need(b, 1);
  if (b->depth < CL_PB_DEPTH) b->open[b->depth] = b->n;
  b->depth++;
  b->d[b->n++] = 0;
}

void cl_pb_end(cl_pb *b) {
  if (--b->depth >= CL_PB_DEPTH) return;   /* too deep: cl_pb_begin kept no place (caller's bug) */
  size_t at = b->open[b->depth], body = b->n - at - 1;
  int k = varint_len(body);
  if (k > 1) {
    need(b, (size_t)k - 1);
    memmove(b->d + at + k, b->d + at + 1, body);
    b->n += (size_t)k - 1;
  }
  uint64_t v = body;
  for (int i = 0; i < k; i++, v >>= 7) b->d[at + i] = (uint8_t)((v & 0x7f) | (i + 1 < k ? 0x80 : 0));
}

void cl_pb_free(cl_pb *b) { free(b->d); memset(b, 0, sizeof *b); }
