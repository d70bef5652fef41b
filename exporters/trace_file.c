/* trace_file.c: see trace_file.h. All I/O of the trace goes through here, on the writer
 * thread. Plain files: one pwritev of [new body, tail] at the old tail's offset, then a
 * truncate if the file got shorter. Gzip: ftruncate to the old tail member, then append the
 * body as members of at most CL_GZ_MEMBER_BYTES, split at event boundaries, and a fresh tail
 * member. */
#include "exporters/trace_file.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#ifndef COMMLENS_NO_ZLIB
#include <zlib.h>
#endif

struct cl_tfile {
  int fd, gzip, err;
  uint64_t tail_off;      /* where the tail (member) starts */
  uint64_t end;           /* current file length */
#ifndef COMMLENS_NO_ZLIB
  z_stream z;
#endif
  unsigned char *zbuf;
  size_t zcap;
  char *last;             /* the tail (member) bytes of the last complete flush, at tail_off */
  size_t last_len;
};

cl_tfile *cl_tfile_open(int fd, int gzip) {
  cl_tfile *f = calloc(1, sizeof *f);
  if (!f) { close(fd); errno = ENOMEM; return NULL; }
  f->fd = fd;
#ifdef COMMLENS_NO_ZLIB
  (void)gzip;                 /* built without zlib: plain JSON (the configuration said so) */
#else
  f->gzip = gzip;
  if (gzip && deflateInit2(&f->z, 3, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    close(fd); free(f); errno = ENOMEM; return NULL;
  }
#endif
  return f;
}

static int write_all_at(cl_tfile *f, struct iovec *iov, int n, uint64_t off) {
  while (n > 0) {
    ssize_t w = pwritev(f->fd, iov, n, (off_t)off);
    if (w < 0) { if (errno == EINTR) continue; return -1; }
    if (w == 0) { errno = EIO; return -1; }
    off += (uint64_t)w;
    while (n > 0 && (size_t)w >= iov->iov_len) { w -= (ssize_t)iov->iov_len; iov++; n--; }
    if (n > 0) { iov->iov_base = (char *)iov->iov_base + w; iov->iov_len -= (size_t)w; }
  }
  return 0;
}

/* One complete gzip member of `in` into f->zbuf; returns its length or -1. */
static long gz_member(cl_tfile *f, const char *in, size_t n) {
#ifdef COMMLENS_NO_ZLIB
  (void)f; (void)in; (void)n;
  errno = ENOSYS;
  return -1;
#else
  size_t need = deflateBound(&f->z, n) + 64;
  if (need > f->zcap) {
    unsigned char *p = realloc(f->zbuf, need);
    if (!p) { errno = ENOMEM; return -1; }
    f->zbuf = p;
    f->zcap = need;
  }
  deflateReset(&f->z);
  f->z.next_in = (unsigned char *)in;
  f->z.avail_in = (uInt)n;
  f->z.next_out = f->zbuf;
  f->z.avail_out = (uInt)f->zcap;
  if (deflate(&f->z, Z_FINISH) != Z_STREAM_END) { errno = EIO; return -1; }
  return (long)(f->zcap - f->z.avail_out);
#endif
}

/* The bytes of body[0..n) that go into one gzip member: all of them up to CL_GZ_MEMBER_BYTES,
 * else up to the last event boundary (",\n{": the separator before an event) at or below it,
 * so the next member's text starts at one (docs/decisions/0031-gzip-members.md). An event larger than a member
 * (none is) would go whole into an oversized one. */
static size_t member_len(const char *body, size_t n) {
  if (n <= CL_GZ_MEMBER_BYTES) return n;
  size_t i = CL_GZ_MEMBER_BYTES;
  if (i + 2 >= n) i = n - 3;
  for (; i > 0; i--)
    if (body[i] == ',' && body[i + 1] == '\n' && body[i + 2] == '{') return i;
  for (i = CL_GZ_MEMBER_BYTES; i + 2 < n; i++)
    if (body[i] == ',' && body[i + 1] == '\n' && body[i + 2] == '{') return i;
  return n;
}

/* Keeps a copy of the tail just written, to put back if a later flush fails half-way. */
static void keep_tail(cl_tfile *f, const void *t, size_t n) {
  char *p = realloc(f->last, n ? n : 1);
  if (!p) { f->last_len = 0; return; }
  f->last = p;
  memcpy(p, t, n);
  f->last_len = n;
}

/* A write failed part-way (full disk, file size limit): it may have overwritten the old tail
 * with part of the new body. Put the last complete flush's tail back where it was (those
 * blocks exist already, so this needs no new space) and cut the file there: the trace ends
 * at its last complete flush and stays valid JSON. Returns -1 with f->err set. */
static int fail_restore(cl_tfile *f, uint64_t old_off) {
  f->err = errno ? errno : EIO;
  if (f->last_len) {
    struct iovec iov = {f->last, f->last_len};
    if (write_all_at(f, &iov, 1, old_off) == 0 && ftruncate(f->fd, (off_t)(old_off + f->last_len)) == 0) {
      f->tail_off = old_off;
      f->end = old_off + f->last_len;
    }
  }
  return -1;
}

int cl_tfile_flush(cl_tfile *f, const char *body, size_t blen, const char *tail, size_t tlen) {
  if (f->err) return -1;
  uint64_t old_off = f->tail_off;
  if (!f->gzip) {
    struct iovec iov[2] = {{(void *)body, blen}, {(void *)tail, tlen}};
    if (write_all_at(f, iov, 2, f->tail_off) != 0) return fail_restore(f, old_off);
    uint64_t new_end = f->tail_off + blen + tlen;
    if (new_end < f->end && ftruncate(f->fd, (off_t)new_end) != 0) { f->err = errno; return -1; }
    f->tail_off += blen;
    f->end = new_end;
    keep_tail(f, tail, tlen);
    return 0;
  }
  if (f->end > f->tail_off && ftruncate(f->fd, (off_t)f->tail_off) != 0) { f->err = errno; return -1; }
  f->end = f->tail_off;
  for (size_t at = 0; at < blen;) {
    size_t n = member_len(body + at, blen - at);
    long m = gz_member(f, body + at, n);
    struct iovec iov = {f->zbuf, (size_t)(m < 0 ? 0 : m)};
    if (m < 0 || write_all_at(f, &iov, 1, f->tail_off) != 0) return fail_restore(f, old_off);
    f->tail_off += (uint64_t)m;
    f->end = f->tail_off;
    at += n;
  }
  long m = gz_member(f, tail, tlen);
  struct iovec iov = {f->zbuf, (size_t)(m < 0 ? 0 : m)};
  if (m < 0 || write_all_at(f, &iov, 1, f->tail_off) != 0) return fail_restore(f, old_off);
  f->end = f->tail_off + (uint64_t)m;
  keep_tail(f, f->zbuf, (size_t)m);
  return 0;
}

int cl_tfile_failed(const cl_tfile *f) { return f->err; }

void cl_tfile_close(cl_tfile *f) {
  if (!f) return;
#ifndef COMMLENS_NO_ZLIB
  if (f->gzip) deflateEnd(&f->z);
#endif
  free(f->zbuf);
  free(f->last);
  close(f->fd);
  free(f);
}
