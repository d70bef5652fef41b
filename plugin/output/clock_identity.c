/* clock_identity.c: the boot id and NTP state of this host, read once per process. Reads a
 * bounded amount from /proc and validates it before it can reach a trace; never changes the
 * clock (adjtimex is called with modes = 0 only). */
#include "plugin/output/clock_identity.h"
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/timex.h>
#include <unistd.h>

/* 8-4-4-4-12 hex digits; nothing else before the optional trailing newline. */
static int is_uuid(const char *s, size_t n) {
  if (n != CL_BOOT_ID_LEN) return 0;
  for (size_t i = 0; i < n; i++) {
    int dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i])) return 0;
  }
  return 1;
}

int cl_boot_id_read(const char *path, char out[CL_BOOT_ID_LEN + 1], const char **why) {
  char buf[64];
  out[0] = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) { *why = errno == ENOENT ? "not present" : "cannot be opened"; return -1; }
  ssize_t got = 0;   /* the file is 37 bytes; one more than a UUID and a newline is already wrong */
  while (got < (ssize_t)sizeof buf) {
    ssize_t r = read(fd, buf + got, sizeof buf - (size_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += r;
  }
  close(fd);
  size_t n = got > 0 ? (size_t)got : 0;
  if (n && buf[n - 1] == '\n') n--;
  if (!is_uuid(buf, n)) { *why = "not one UUID"; return -1; }
  for (size_t i = 0; i < n; i++) out[i] = (char)tolower((unsigned char)buf[i]);
  out[n] = 0;
  return 0;
}

void cl_clock_sync_read(cl_clock_sync *s) {
  struct timex tx;
  memset(&tx, 0, sizeof tx);   /* modes = 0: the query form, no field is applied */
  int state = adjtimex(&tx);
  s->known = state >= 0;
  s->synchronised = s->known && state != TIME_ERROR && !(tx.status & STA_UNSYNC);
  s->esterror_us = s->known ? tx.esterror : 0;
  s->maxerror_us = s->known ? tx.maxerror : 0;
}

void cl_clock_identity_json(cl_sb *b, const char *boot_id, const char *clock_id, const cl_clock_sync *s) {
  if (boot_id[0]) {
    sb_puts(b, ",\"boot_id\":");
    sb_jstr(b, boot_id);
  }
  if (clock_id && clock_id[0]) {
    sb_puts(b, ",\"clock_id\":");
    sb_jstr(b, clock_id);
  }
  if (s->known)
    sb_printf(b, ",\"clock_sync\":{\"synchronised\":%s,\"esterror_us\":%ld,\"maxerror_us\":%ld}",
              s->synchronised ? "true" : "false", s->esterror_us, s->maxerror_us);
}
