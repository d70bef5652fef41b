/* hash.h: the one integer hash (plugin and CLI) for open-addressed and direct-mapped tables:
 * a 64-bit finalizer that spreads consecutive ids, serials and hashes over every bit. */
#ifndef COMMLENS_HASH_H
#define COMMLENS_HASH_H
#include <stdint.h>

static inline uint64_t cl_hash64(uint64_t x) {
  x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33; return x;
}
/* The home slot of `key` in a table of `cap` slots, cap a power of two. */
static inline uint32_t cl_hash_slot(uint64_t key, uint64_t cap) { return (uint32_t)(cl_hash64(key) & (cap - 1)); }
#endif
