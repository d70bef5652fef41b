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

/* How a terminal is shown text without acting on it (the CLI's report and messages, the
 * plugin's printed summary): each control character (C0, DEL, and the C1 controls U+0080 ..
 * U+009F) as \xNN per byte, except newline when keep_newline; each byte that starts no valid
 * sequence as U+FFFD; the rest as it is. The shown form of the character at p (p < e) goes
 * to out (CL_UTF8_SHOWN_MAX bytes at most, not NUL-terminated); returns its length, and *adv
 * the bytes of p it stands for. */
#define CL_UTF8_SHOWN_MAX 8
size_t cl_utf8_shown(const unsigned char *p, const unsigned char *e, int keep_newline, char *out, size_t *adv);
/* s as shown (cl_utf8_shown, newlines escaped too) into out (capacity cap >= 1), cut at a whole
 * character or escape and NUL-terminated; returns the bytes written. */
size_t cl_utf8_show(const char *s, char *out, size_t cap);
#endif
