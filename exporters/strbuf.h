/* strbuf.h: a growable byte buffer with JSON-safe appenders, used by the exporters on the
 * writer thread (never on the hot path). Out of memory sets `oom` and drops further text. */
#ifndef COMMLENS_STRBUF_H
#define COMMLENS_STRBUF_H
#include <stddef.h>
#include <stdint.h>

typedef struct { char *p; size_t len, cap; int oom; } cl_sb;

void sb_free(cl_sb *b);
static inline void sb_reset(cl_sb *b) { b->len = 0; }
void sb_put(cl_sb *b, const char *s, size_t n);
void sb_puts(cl_sb *b, const char *s);
void sb_printf(cl_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_u64(cl_sb *b, uint64_t v);
void sb_i64(cl_sb *b, int64_t v);
void sb_hex(cl_sb *b, uint64_t v);           /* "0x1a2b" */
void sb_us(cl_sb *b, int64_t ns);             /* exact microseconds "12.345" */
/* A JSON string literal with quotes; control characters and non-ASCII bytes become '?' so
 * no \u escape is ever written (old Perfetto tokenizers reject them). */
void sb_jstr(cl_sb *b, const char *s);
/* ,"key": prefixes for object members; `first` tracks whether a comma is needed. */
void sb_key(cl_sb *b, int *first, const char *key);
#endif
