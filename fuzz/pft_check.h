/* pft_check.h: an independent reader of the merge's Perfetto protobuf (the fields of
 * tools/commlens/perfetto_min.proto, written out here again rather than taken from pb.c or
 * pftrace.c): checks that every field is well-formed protobuf of the wire type the schema
 * gives it, that no field the schema lacks appears, that every string is valid UTF-8
 * (common/utf8.h), and hands each TrackEvent's type and flow ids to a callback. Shared by
 * fuzz/fuzz_pftrace.c and test/tools/test_hostile.c (static functions only). */
#ifndef COMMLENS_PFT_CHECK_H
#define COMMLENS_PFT_CHECK_H
#include "common/utf8.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { PM_TRACE, PM_PACKET, PM_TE, PM_DA, PM_TD, PM_PD, PM_THD, PM_CD, PM_INTERNED, PM_ENTRY, PM_ISTR, PM_N };
enum { PK_VARINT, PK_FIXED64, PK_STR, PK_MSG };   /* PK_STR: text that must be UTF-8 */
typedef struct { int msg; uint32_t field; int kind, sub; } pft_field;
static const pft_field pft_schema[] = {
  { PM_TRACE, 1, PK_MSG, PM_PACKET },
  { PM_PACKET, 8, PK_VARINT, 0 }, { PM_PACKET, 10, PK_VARINT, 0 }, { PM_PACKET, 11, PK_MSG, PM_TE },
  { PM_PACKET, 60, PK_MSG, PM_TD }, { PM_PACKET, 12, PK_MSG, PM_INTERNED }, { PM_PACKET, 13, PK_VARINT, 0 },
  { PM_PACKET, 87, PK_VARINT, 0 },
  { PM_TE, 9, PK_VARINT, 0 }, { PM_TE, 11, PK_VARINT, 0 }, { PM_TE, 3, PK_VARINT, 0 }, { PM_TE, 10, PK_VARINT, 0 },
  { PM_TE, 23, PK_STR, 0 }, { PM_TE, 4, PK_MSG, PM_DA }, { PM_TE, 30, PK_VARINT, 0 }, { PM_TE, 44, PK_FIXED64, 0 },
  { PM_TE, 47, PK_FIXED64, 0 }, { PM_TE, 48, PK_FIXED64, 0 },
  { PM_DA, 1, PK_VARINT, 0 }, { PM_DA, 10, PK_STR, 0 }, { PM_DA, 2, PK_VARINT, 0 }, { PM_DA, 4, PK_VARINT, 0 },
  { PM_DA, 5, PK_FIXED64, 0 }, { PM_DA, 6, PK_STR, 0 }, { PM_DA, 9, PK_STR, 0 }, { PM_DA, 17, PK_VARINT, 0 },
  { PM_TD, 1, PK_VARINT, 0 }, { PM_TD, 5, PK_VARINT, 0 }, { PM_TD, 2, PK_STR, 0 }, { PM_TD, 3, PK_MSG, PM_PD },
  { PM_TD, 4, PK_MSG, PM_THD }, { PM_TD, 8, PK_MSG, PM_CD },
  { PM_PD, 1, PK_VARINT, 0 }, { PM_PD, 3, PK_VARINT, 0 }, { PM_PD, 6, PK_STR, 0 },
  { PM_THD, 1, PK_VARINT, 0 }, { PM_THD, 2, PK_VARINT, 0 }, { PM_THD, 3, PK_VARINT, 0 }, { PM_THD, 5, PK_STR, 0 },
  { PM_INTERNED, 1, PK_MSG, PM_ENTRY }, { PM_INTERNED, 2, PK_MSG, PM_ENTRY }, { PM_INTERNED, 3, PK_MSG, PM_ENTRY },
  { PM_INTERNED, 29, PK_MSG, PM_ISTR },
  { PM_ENTRY, 1, PK_VARINT, 0 }, { PM_ENTRY, 2, PK_STR, 0 },
  { PM_ISTR, 1, PK_VARINT, 0 }, { PM_ISTR, 2, PK_STR, 0 },   /* bytes in the schema; we write text */
};

/* What a TrackEvent carried: its type (0 if none) and flow ids (the first 16). */
typedef struct { int type; int nflow, nterm; uint64_t flow[16], term[16]; } pft_event;
typedef struct {
  void (*on_event)(const pft_event *e, void *arg); void *arg;
  long packets, events, strings;
  char err[160];                    /* the first problem, "" if none */
} pft_check;

static int pft_varint(const uint8_t **p, const uint8_t *e, uint64_t *v) {
  *v = 0;
  for (int sh = 0; sh < 70; sh += 7) {
    if (*p >= e) return -1;
    uint8_t b = *(*p)++;
    if (sh == 63 && b > 1) return -1;   /* past 64 bits */
    *v |= (uint64_t)(b & 0x7f) << sh;
    if (!(b & 0x80)) return 0;
  }
  return -1;
}

static int pft_fail(pft_check *c, const char *what, int msg, uint32_t field) {
  if (!c->err[0]) snprintf(c->err, sizeof c->err, "%s (message %d, field %u)", what, msg, field);
  return -1;
}

static int pft_msg(pft_check *c, const uint8_t *p, const uint8_t *e, int msg, int depth) {
  pft_event ev;
  memset(&ev, 0, sizeof ev);
  if (depth > 8) return pft_fail(c, "nested too deep", msg, 0);
  while (p < e) {
    uint64_t tag, v;
    if (pft_varint(&p, e, &tag)) return pft_fail(c, "truncated tag", msg, 0);
    uint32_t field = (uint32_t)(tag >> 3), wt = (uint32_t)(tag & 7);
    if (!field || tag >> 32) return pft_fail(c, "bad field number", msg, field);
    const pft_field *f = NULL;
    for (size_t i = 0; i < sizeof pft_schema / sizeof pft_schema[0]; i++)
      if (pft_schema[i].msg == msg && pft_schema[i].field == field) f = &pft_schema[i];
    if (!f) return pft_fail(c, "field not in the schema", msg, field);
    int want = f->kind == PK_VARINT ? 0 : f->kind == PK_FIXED64 ? 1 : 2;
    if ((int)wt != want) return pft_fail(c, "wrong wire type", msg, field);
    if (wt == 0) {
      if (pft_varint(&p, e, &v)) return pft_fail(c, "truncated varint", msg, field);
      if (msg == PM_TE && field == 9) ev.type = (int)v;
    } else if (wt == 1) {
      if (e - p < 8) return pft_fail(c, "truncated fixed64", msg, field);
      memcpy(&v, p, 8); p += 8;   /* little-endian hosts only, as the writer */
      if (msg == PM_TE && field == 47 && ev.nflow < 16) ev.flow[ev.nflow++] = v;
      if (msg == PM_TE && field == 48 && ev.nterm < 16) ev.term[ev.nterm++] = v;
    } else {
      if (pft_varint(&p, e, &v) || v > (uint64_t)(e - p)) return pft_fail(c, "length past the end", msg, field);
      const uint8_t *q = p, *qe = p + v;
      p = qe;
      if (f->kind == PK_MSG) {
        if (pft_msg(c, q, qe, f->sub, depth + 1)) return -1;
        continue;
      }
      c->strings++;
      for (size_t l; q < qe; q += l)
        if (!(l = cl_utf8_len(q, qe))) return pft_fail(c, "string not valid UTF-8", msg, field);
    }
  }
  if (msg == PM_PACKET) c->packets++;
  if (msg == PM_TE) { c->events++; if (c->on_event) c->on_event(&ev, c->arg); }
  return 0;
}

/* Checks a whole Trace; 0 if well-formed, else -1 with c->err. */
static int pft_check_trace(pft_check *c, const uint8_t *b, size_t n) {
  c->err[0] = 0; c->packets = c->events = c->strings = 0;
  return pft_msg(c, b, b + n, PM_TRACE, 0);
}
#endif
