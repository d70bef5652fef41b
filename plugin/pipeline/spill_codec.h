/* spill_codec.h: the spill file's encoding of a staging chunk. Records repeat themselves: a
 * proxy step's stop differs from the previous stop in a few low bytes of its id and time, a
 * start from the previous start of its size in its id, time and step. Each 64-bit word of a
 * slot is stored as its XOR with the same word of the previous record of the same kind and
 * size, cut to its significant low bytes, with a 4-bit length. A start+stop pair of proxy steps
 * (96 bytes in a ring) takes about a fifth of that. On this project's 2-core VM a fresh page of
 * spill file costs the drain about 1.7 ms per MiB written, so the bytes that leave the process
 * set the lossless event rate there; on a many-core host the encoder's own time does, so it
 * works on whole words (docs/decisions/0014-spill-file.md). */
#ifndef COMMLENS_SPILL_CODEC_H
#define COMMLENS_SPILL_CODEC_H
#include "commlens/event.h"
#include <stddef.h>
#include <stdint.h>

/* The most bytes cl_spill_encode writes for n slots. */
/* (+ 8: the encoder stores whole words and advances by their significant bytes) */
#define CL_SPILL_ENC_MAX(n) ((size_t)(n) * (2 + CL_SLOT_BYTES) + (size_t)(n) + 8)
/* Encodes n slots of whole records (a chunk) into out; returns the bytes written. */
size_t cl_spill_encode(const cl_rec *in, size_t n, uint8_t *out);
/* Decodes `bytes` of an encoded chunk into at most `cap` slots; returns the slots, or
 * (size_t)-1 if the input is not a whole encoding of at most cap slots. */
size_t cl_spill_decode(const uint8_t *in, size_t bytes, cl_rec *out, size_t cap);
#endif
