/* utf8.h: the one rule for what is valid UTF-8 (plugin and CLI). Every writer that sends a
 * string out of the process (JSON, pftrace, HTML, Prometheus labels, the terminal) walks it
 * with cl_utf8_len and replaces each byte that starts no well-formed sequence by U+FFFD,
 * counting the replacements where the output says what it lost. */
#ifndef COMMLENS_UTF8_H
#define COMMLENS_UTF8_H
#include <stddef.h>
#include <stdint.h>

/* U+FFFD REPLACEMENT CHARACTER as UTF-8. */
#define CL_UTF8_REPLACEMENT "\xEF\xBF\xBD"

/* The length (1..4) of the well-formed UTF-8 sequence starting at p (p < e), or 0 when the
 * bytes at p start none: a stray continuation byte, an overlong form, a surrogate, a code
 * point past U+10FFFF or a sequence cut by e. ASCII bytes (controls included) are length 1:
 * escaping them is the writer's business. */
size_t cl_utf8_len(const unsigned char *p, const unsigned char *e);

/* Copies s[0..n) into out (capacity cap, cap >= 1) as valid UTF-8, each invalid byte replaced
 * by U+FFFD, always NUL-terminated and never cut inside a sequence. Returns the number of
 * bytes replaced (also those of input left out for want of room are not counted). */
size_t cl_utf8_clean(const char *s, size_t n, char *out, size_t cap);
#endif
