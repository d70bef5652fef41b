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
/* A JSON string literal with quotes: valid UTF-8 kept, each byte that starts no well-formed
 * sequence replaced by U+FFFD and counted (sb_utf8_replaced), control characters escaped
 * (\n, \t, else \u00XX: JSON forbids them raw, and Perfetto's importer refuses them raw while
 * it reads \u escapes; docs/decisions/0032-trace-strings.md). */
void sb_jstr(cl_sb *b, const char *s);
/* Bytes sb_jstr replaced in this process so far (any thread). */
uint64_t sb_utf8_replaced(void);
/* ,"key": prefixes for object members; `first` tracks whether a comma is needed. */
void sb_key(cl_sb *b, int *first, const char *key);
#endif
