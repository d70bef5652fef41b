/* spill_codec.c: see spill_codec.h. One tag byte a record (nslots << 4 | kind), then per slot
 * two bytes of four 4-bit lengths and, for each 64-bit word, the low `length` bytes of word XOR
 * reference (the bytes above are zero: ids, times and steps change in their low bytes). Whole
 * words, no per-byte loop: the drain encodes at memory speed. References are per (kind, nslots,
 * slot index) and start at zero in every chunk, so a chunk decodes alone. */
#include "plugin/pipeline/spill_codec.h"
#include <string.h>

typedef struct { uint64_t w[4]; } slot64;
_Static_assert(sizeof(slot64) == CL_SLOT_BYTES, "a slot is four words");

/* refs[kind][nslots - 1][slot]: kinds are 2 bits, records 1..4 slots. */
typedef slot64 refs_t[4][4][4];

static int shape(uint8_t kind, uint8_t nslots) { return kind < 4 && nslots >= 1 && nslots <= 4; }
static unsigned sig_bytes(uint64_t x) { return x ? 8u - (unsigned)__builtin_clzll(x) / 8u : 0u; }

size_t cl_spill_encode(const cl_rec *in, size_t n, uint8_t *out) {
  static const refs_t zero;
  refs_t ref;
  memcpy(ref, zero, sizeof ref);
  uint8_t *o = out;
  size_t i = 0;
  while (i < n) {
    uint8_t kind = in[i].kind, ns = in[i].nslots;
    if (!shape(kind, ns) || i + ns > n) { kind = 0; ns = 1; }   /* stored as one slot of kind 0 */
    *o++ = (uint8_t)(ns << 4 | kind);
    for (unsigned s = 0; s < ns; s++) {
      slot64 v;
      memcpy(&v, &in[i + s], sizeof v);
      slot64 *r = &ref[kind][ns - 1][s];
      uint8_t *len = o;
      o += 2;
      unsigned l[4];
      for (unsigned w = 0; w < 4; w++) {
        uint64_t x = v.w[w] ^ r->w[w];
        l[w] = sig_bytes(x);
        memcpy(o, &x, 8);                       /* whole word; the next one overwrites the rest */
        o += l[w];
      }
      len[0] = (uint8_t)(l[0] | l[1] << 4);
      len[1] = (uint8_t)(l[2] | l[3] << 4);
      *r = v;
    }
    i += ns;
  }
  return (size_t)(o - out);
}

size_t cl_spill_decode(const uint8_t *in, size_t bytes, cl_rec *out, size_t cap) {
  static const refs_t zero;
  refs_t ref;
  memcpy(ref, zero, sizeof ref);
  const uint8_t *p = in, *end = in + bytes;
  size_t n = 0;
  while (p < end) {
    uint8_t tag = *p++, kind = tag & 15, ns = tag >> 4;
    if (!shape(kind, ns) || n + ns > cap) return (size_t)-1;
    for (unsigned s = 0; s < ns; s++) {
      if (end - p < 2) return (size_t)-1;
      unsigned l[4] = {p[0] & 15u, p[0] >> 4, p[1] & 15u, p[1] >> 4};
      p += 2;
      slot64 *r = &ref[kind][ns - 1][s];
      for (unsigned w = 0; w < 4; w++) {
        if (l[w] > 8 || (size_t)(end - p) < l[w]) return (size_t)-1;
        uint64_t x = 0;
        memcpy(&x, p, l[w]);                    /* little-endian: the low bytes */
        p += l[w];
        r->w[w] ^= x;
      }
      memcpy(&out[n + s], r, sizeof *r);
    }
    n += ns;
  }
  return n;
}
