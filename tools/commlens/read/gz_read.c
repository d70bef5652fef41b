/* gz_read.c: see gz_read.h. Inflates gzip itself (not gzread), so that what a damaged member
 * had decoded is kept and reading resumes at the next member; knows nothing of JSON. */
#include "tools/commlens/read/gz_read.h"
#include "tools/commlens/base/util.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CL_BUF_INIT (4u << 20)
#define CL_BUF_MAX  (1u << 30)


static uint64_t rd_in_off(const cl_reader *r) {
  return r->in_base + (uint64_t)(r->zs.next_in - r->in);
}

/* Refills r->in after keeping its last `keep` unread bytes. Returns bytes now available. */
static size_t rd_more_in(cl_reader *r, size_t keep) {
  if (keep > r->zs.avail_in) keep = r->zs.avail_in;
  memmove(r->in, r->zs.next_in + r->zs.avail_in - keep, keep);
  r->in_base = rd_in_off(r) + r->zs.avail_in - keep;
  r->zs.next_in = r->in; r->zs.avail_in = (uInt)keep;
  for (;;) {
    ssize_t n = read(r->fd, r->in + keep, sizeof r->in - keep);
    if (n < 0 && errno == EINTR) continue;
    if (n > 0) r->zs.avail_in += (uInt)n;
    break;
  }
  return r->zs.avail_in;
}

/* Moves the input to the next "1f 8b 08" (a gzip member's start), reading on as needed;
 * 0 when the file ends first. */
static int rd_find_member(cl_reader *r) {
  for (;;) {
    while (r->zs.avail_in >= 3) {
      unsigned char *m = memchr(r->zs.next_in, 0x1f, r->zs.avail_in - 2);
      if (!m) { r->zs.next_in += r->zs.avail_in - 2; r->zs.avail_in = 2; break; }
      r->zs.avail_in -= (uInt)(m - r->zs.next_in); r->zs.next_in = m;
      if (m[1] == 0x8b && m[2] == 0x08) return 1;
      r->zs.next_in++; r->zs.avail_in--;
    }
    size_t had = r->zs.avail_in;
    if (rd_more_in(r, had) == had) return 0;
  }
}

static void rd_damage(cl_reader *r, const char *what) {
  r->damaged = 1;
  if (!r->n_damage++)
    snprintf(r->dmsg, sizeof r->dmsg, "gzip data damaged at compressed byte %llu (uncompressed byte %llu): %s",
             (unsigned long long)rd_in_off(r), (unsigned long long)(r->out_base + r->len), what);
}

/* Inflates into buf[len, cap). Returns bytes produced; 0 at the end of the file. */
static size_t rd_inflate(cl_reader *r) {
  z_stream *zs = &r->zs;
  zs->next_out = (Bytef *)r->buf + r->len; zs->avail_out = (uInt)(r->cap - r->len);
  size_t before = zs->avail_out;
  while (zs->avail_out == before) {
    if (!zs->avail_in && !rd_more_in(r, 0)) {
      if (r->in_member) {   /* torn: the file ends inside a member */
        if (!r->n_damage++)
          snprintf(r->dmsg, sizeof r->dmsg, "gzip stream cut short at compressed byte %llu (uncompressed byte %llu)",
                   (unsigned long long)rd_in_off(r), (unsigned long long)(r->out_base + r->len));
      }
      r->in_member = 0;
      break;
    }
    if (!r->in_member) {   /* between members: the next must start here */
      if (zs->avail_in < 3) rd_more_in(r, zs->avail_in);
      if (zs->avail_in < 3 || zs->next_in[0] != 0x1f || zs->next_in[1] != 0x8b || zs->next_in[2] != 0x08) {
        rd_damage(r, "bytes where a gzip member should start");
        if (!rd_find_member(r)) break;
      }
      inflateReset(zs);
      r->in_member = 1;
      if (r->damaged) { r->damaged = 0; r->resynced = 1; r->cut = r->len; }
    }
    int rc = inflate(zs, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) { r->in_member = 0; continue; }
    if (rc == Z_OK || (rc == Z_BUF_ERROR && zs->avail_in == 0)) continue;
    char what[120];
    const char *m = zs->msg ? zs->msg : "inflate error";
    if (strstr(m, "data check")) snprintf(what, sizeof what, "CRC mismatch (%s)", m);
    else if (strstr(m, "length check")) snprintf(what, sizeof what, "length mismatch (%s)", m);
    else snprintf(what, sizeof what, "inflate error (%s)", m);
    rd_damage(r, what);
    r->in_member = 0;
    if (zs->avail_in) { zs->next_in++; zs->avail_in--; }   /* look for the next member past here */
    if (!rd_find_member(r)) break;
  }
  return before - zs->avail_out;
}

int cl_reader_fill(cl_reader *r) {
  if (r->eof) return 0;
  if (r->pos) {
    memmove(r->buf, r->buf + r->pos, r->len - r->pos);
    r->len -= r->pos; r->out_base += r->pos; r->pos = 0;
  }
  if (r->len == r->cap) {
    if (r->cap >= CL_BUF_MAX) { r->eof = 1; return 0; }
    r->cap *= 2; r->buf = cl_xrealloc(r->buf, r->cap);
  }
  size_t n;
  if (r->is_gz) n = rd_inflate(r);
  else {
    ssize_t k;
    do k = read(r->fd, r->buf + r->len, r->cap - r->len); while (k < 0 && errno == EINTR);
    n = k > 0 ? (size_t)k : 0;
  }
  if (!n) { r->eof = 1; return 0; }
  r->len += n;
  return 1;
}

int cl_input_open(const char *path, cl_info *info) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    snprintf(info->msg, sizeof info->msg, "cannot open: %s", strerror(errno));
    return -1;
  }
  struct stat st = {0};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(info->msg, sizeof info->msg, "not a regular file (%s)",
             S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory" : S_ISCHR(st.st_mode) ||
             S_ISBLK(st.st_mode) ? "a device" : S_ISSOCK(st.st_mode) ? "a socket" : "not readable as a file");
    close(fd); return -1;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  info->dev = (uint64_t)st.st_dev; info->ino = (uint64_t)st.st_ino;
  return fd;
}

int cl_reader_open(cl_reader *r, const char *path, cl_info *info) {
  memset(r, 0, sizeof *r);
  r->fd = cl_input_open(path, info);
  if (r->fd < 0) return -1;
  r->cap = CL_BUF_INIT; r->buf = cl_xmalloc(r->cap);
  r->zs.next_in = r->in;
  rd_more_in(r, 0);
  if (r->zs.avail_in >= 2 && r->in[0] == 0x1f && r->in[1] == 0x8b) {
    if (inflateInit2(&r->zs, 15 + 16) != Z_OK) { close(r->fd); free(r->buf); snprintf(info->msg, sizeof info->msg, "out of memory"); return -1; }
    r->is_gz = r->zinit = 1;
  } else {   /* plain: what was read already is the text's start */
    memcpy(r->buf, r->in, r->zs.avail_in); r->len = r->zs.avail_in; r->zs.avail_in = 0;
  }
  return 0;
}

void cl_reader_close(cl_reader *r) {
  if (r->zinit) inflateEnd(&r->zs);
  close(r->fd);
  free(r->buf);
}
