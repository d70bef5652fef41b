/* spill_codec.h: the spill file's encoding of a staging chunk. Records repeat themselves: a
 * proxy step's stop differs from the previous stop in a few low bytes of its id and time, a
 * start from the previous start of its size in its id, time and step. Each slot is stored as
 * its XOR with the same slot of the previous record of the same kind and size, as a 32-bit
 * mask of the non-zero bytes and those bytes. A start+stop pair of proxy steps (96 bytes in a
 * ring) takes about 25. On this project's 2-core VM a fresh page of spill file costs the
 * drain about 1.7 ms per MiB written, so what leaves the process per second, not the
 * encoding's CPU time, sets the lossless event rate (docs/decisions.md). */
#ifndef COMMLENS_SPILL_CODEC_H
#define COMMLENS_SPILL_CODEC_H
#include "commlens/event.h"
#include <stddef.h>
#include <stdint.h>

/* The most bytes cl_spill_encode writes for n slots. */
#define CL_SPILL_ENC_MAX(n) ((size_t)(n) * (4 + CL_SLOT_BYTES) + (size_t)(n))
/* Encodes n slots of whole records (a chunk) into out; returns the bytes written. */
size_t cl_spill_encode(const cl_rec *in, size_t n, uint8_t *out);
/* Decodes `bytes` of an encoded chunk into at most `cap` slots; returns the slots, or
 * (size_t)-1 if the input is not a whole encoding of at most cap slots. */
size_t cl_spill_decode(const uint8_t *in, size_t bytes, cl_rec *out, size_t cap);
#endif
