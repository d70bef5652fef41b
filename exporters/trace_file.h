/* trace_file.h: one output file that is valid JSON after every flush. The body (header and
 * events) only grows; the tail (closing bracket and current stats) is rewritten in place at
 * each flush. With gzip, body chunks and the tail are separate gzip members and the tail
 * member is cut off (ftruncate) before the next chunk is appended. A write error (full disk)
 * stops writing with one message; the caller keeps draining so NCCL never waits. */
#ifndef COMMLENS_TRACE_FILE_H
#define COMMLENS_TRACE_FILE_H
#include <stddef.h>
#include <stdint.h>

/* Gzip: a body is written as independent RFC 1952 members of at most this many uncompressed
 * bytes, each starting at an event boundary, so a reader can start again at the next member
 * after damage (layout: docs/decisions/0031-gzip-members.md). */
#define CL_GZ_MEMBER_BYTES (4u << 20)

typedef struct cl_tfile cl_tfile;
/* Takes fd, a new empty file the caller created (common/newfile.h), and writes the trace
 * into it. NULL on failure, with errno set and fd closed; the caller logs and removes it. */
cl_tfile *cl_tfile_open(int fd, int gzip);
/* Appends body bytes and rewrites the tail; 0 on success, -1 once writing has failed. */
int cl_tfile_flush(cl_tfile *f, const char *body, size_t body_len, const char *tail, size_t tail_len);
int cl_tfile_failed(const cl_tfile *f);     /* errno of the failure, 0 if none */
void cl_tfile_close(cl_tfile *f);
#endif
