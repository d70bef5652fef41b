/* spill_codec.c: see spill_codec.h. One tag byte a record (nslots << 4 | kind), then per slot
 * a little-endian 32-bit mask and the non-zero bytes of slot XOR reference. References are
 * per (kind, nslots, slot index) and start at zero in every chunk, so a chunk decodes alone. */
#include "plugin/pipeline/spill_codec.h"
#include <string.h>

typedef struct { uint64_t w[4]; } slot64;
_Static_assert(sizeof(slot64) == CL_SLOT_BYTES, "a slot is four words");

/* refs[kind][nslots - 1][slot]: kinds are 2 bits, records 1..4 slots. */
typedef slot64 refs_t[4][4][4];

static int shape(uint8_t kind, uint8_t nslots) { return kind < 4 && nslots >= 1 && nslots <= 4; }

size_t cl_spill_encode(const cl_rec *in, size_t n, uint8_t *out) {
  static const refs_t zero;
  refs_t ref;
  memcpy(ref, zero, sizeof ref);
  uint8_t *o = out;
  size_t i = 0;
  while (i < n) {
    uint8_t kind = in[i].kind, ns = in[i].nslots;
    if (!shape(kind, ns) || i + ns > n) { kind = 0; ns = 1; }   /* stored verbatim as one slot */
    *o++ = (uint8_t)(ns << 4 | kind);
    for (unsigned s = 0; s < ns; s++) {
      slot64 v, x;
      memcpy(&v, &in[i + s], sizeof v);
      slot64 *r = &ref[kind][ns - 1][s];
      uint32_t mask = 0;
      uint8_t *m = o;
      o += 4;
      for (unsigned w = 0; w < 4; w++) {
        x.w[w] = v.w[w] ^ r->w[w];
        if (!x.w[w]) continue;
        for (unsigned b = 0; b < 8; b++) {
          uint8_t byte = (uint8_t)(x.w[w] >> (8 * b));
          if (byte) { mask |= 1u << (w * 8 + b); *o++ = byte; }
        }
      }
      m[0] = (uint8_t)mask; m[1] = (uint8_t)(mask >> 8); m[2] = (uint8_t)(mask >> 16); m[3] = (uint8_t)(mask >> 24);
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
      if (end - p < 4) return (size_t)-1;
      uint32_t mask = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
      p += 4;
      if ((size_t)(end - p) < (size_t)__builtin_popcount(mask)) return (size_t)-1;
      slot64 *r = &ref[kind][ns - 1][s];
      for (unsigned w = 0; w < 4; w++) {
        uint64_t x = 0;
        for (unsigned b = 0; b < 8; b++)
          if (mask >> (w * 8 + b) & 1) x |= (uint64_t)*p++ << (8 * b);
        r->w[w] ^= x;
      }
      memcpy(&out[n + s], r, sizeof *r);
    }
    n += ns;
  }
  return n;
}
