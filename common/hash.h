/* hash.h: the integer hashing of the plugin's and the CLI's open-addressed and direct-mapped
 * tables: a 64-bit finalizer that spreads consecutive ids, serials and hashes over every bit
 * (cl_hash64), and a table's home slot (cl_hash_slot). */
#ifndef COMMLENS_HASH_H
#define COMMLENS_HASH_H
#include <stdint.h>

static inline uint64_t cl_hash64(uint64_t x) {
  x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33; return x;
}
/* The home slot of `key` in a table of `cap` slots, cap a power of two: the top bits of the key
 * times 2^64 / golden ratio (each depends on every key bit below it; consecutive keys land far
 * apart). Three instructions where the finalizer takes nine: the plugin's writer looks up
 * several slots a collective (its event table, the digest's names and channels). */
static inline uint32_t cl_hash_top(uint64_t key, unsigned shift) {   /* shift: 64 - log2(cap), < 64 */
  return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> shift);
}
static inline uint32_t cl_hash_slot(uint64_t key, uint64_t cap) {
  return cap > 1 ? cl_hash_top(key, 64u - (unsigned)__builtin_ctzll(cap)) : 0;
}
#endif
