/* util.h: small helpers shared by the commlens CLI: growable arrays, checked allocation,
 * an interning table, hashing and rank-list parsing. Nothing here knows the trace format. */
#ifndef COMMLENS_CLI_UTIL_H
#define COMMLENS_CLI_UTIL_H
#include <stddef.h>
#include "common/hash.h"
#include <stdint.h>
#include <stdio.h>

/* Allocation that never returns NULL: the CLI has nothing sensible to do without memory. */
void *cl_xmalloc(size_t n);
void *cl_xcalloc(size_t n, size_t sz);
void *cl_xrealloc(void *p, size_t n);

/* A growable array of T: `CL_VEC(T) v = {0}; CL_PUSH(v, x);` The array owns .a; free(v.a). */
#define CL_VEC(T) struct { T *a; size_t n, cap; }
#define CL_GROW(v) do { if ((v).n == (v).cap) { (v).cap = (v).cap ? (v).cap * 2 : 16;      \
    (v).a = cl_xrealloc((v).a, (v).cap * sizeof(*(v).a)); } } while (0)
#define CL_PUSH(v, x) do { CL_GROW(v); (v).a[(v).n++] = (x); } while (0)

/* An interning table: distinct byte strings get ids 1, 2, 3... in the order first seen.
 * The table owns copies of its keys (cl_strtab_free). Zero-initialised is empty. */
typedef struct { char **key; uint32_t *len; uint32_t *slot; size_t n, cap, nslot; } cl_strtab;
/* The id of [p, p+n); a new key is added and *added set to 1 (else 0). */
uint32_t cl_strtab_id(cl_strtab *t, const void *p, size_t n, int *added);
/* Key `id` (1..n) and its length; NUL-terminated. */
const char *cl_strtab_key(const cl_strtab *t, uint32_t id, size_t *n);
void cl_strtab_free(cl_strtab *t);

/* Parses "0-3,7" into a sorted bitmap over ranks [0, 65536). Returns 0, or -1 on bad syntax.
 * The caller owns *out (65536 bytes, 1 = selected). */
int cl_parse_ranks(const char *s, unsigned char **out);

/* Every file the CLI writes goes through these: a new temporary beside the target made by the
 * plugin's and CLI's one rule (common/newfile.h: exclusive, a random name, never a planted
 * file or link), then renamed onto the target once complete. A target that is a pipe or a
 * character device (-o /dev/stdout) is written in place (tmp NULL), never replaced; a
 * directory or other special file is refused. */
typedef struct { char *path, *tmp; int fd; } cl_outfile;
/* Opens the temporary for `path` (mode 0666 less the umask); returns its fd, or -1 after
 * saying "commlens: WHAT: cannot write PATH: why" on stderr. */
int cl_out_open(cl_outfile *o, const char *path, const char *what);
/* With ok: renames the (already closed) temporary onto the target and returns 0, or -1
 * after saying why. Without: removes it and returns -1. Either way the temporary is gone. */
int cl_out_finish(cl_outfile *o, int ok, const char *what);

/* s[0..n) as valid UTF-8 (common/utf8.h: each invalid byte becomes U+FFFD and is added to
 * *count when count is given); malloc'd, NUL-terminated. */
char *cl_utf8_dup(const char *s, size_t n, int64_t *count);
/* Ends s before a UTF-8 sequence a bounded snprintf cut in two (s was valid before the cut). */
void cl_utf8_cut(char *s);
/* A stream onto fd that shows what a terminal would act on as text: control characters but
 * newline (ESC above all, carriage return and tab too), DEL and the C1 controls become \xNN,
 * invalid UTF-8 becomes U+FFFD (common/utf8.h cl_utf8_shown). For the CLI's stdout text and
 * stderr; the newlines a file's string carries are escaped where it is printed (cl_show). NULL
 * if the C library cannot make one. */
FILE *cl_term_stream(int fd);
/* A thread-local buffer of at least `need` bytes, valid until SHOW_RING (8) more calls on the
 * thread (this one's and cl_show's): for labels built from names of any length. */
char *cl_ring_buf(size_t need);
/* A string from a file as the text report and the messages show it (common/utf8.h
 * cl_utf8_show: every control character escaped, newline included, so a name never starts a
 * line of its own). Valid until SHOW_RING (8) more calls on the thread. */
const char *cl_show(const char *s);
/* The same in a column `width` characters wide: cut at a whole character or escape, padded with
 * spaces (by characters, not bytes). Same lifetime. */
const char *cl_show_col(const char *s, int width);

/* Median of v[0..n) (reorders v). n must be > 0. */
int64_t cl_median_i64(int64_t *v, size_t n);
double cl_median_dbl(double *v, size_t n);

/* Formats nanoseconds as "12.345 ms" / "45.6 us" into buf (ownership: caller's buffer). */
const char *cl_fmt_time(char *buf, size_t n, double ns);
/* A Unix time in ns as "2026-11-28 12:34:56 UTC" into buf ("an unknown time" when negative
 * or INT64_MAX); returns buf. */
const char *cl_fmt_utc(char *buf, size_t n, int64_t ns);
#endif
