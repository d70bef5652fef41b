/* newfile.c: see newfile.h. mkostemps makes the fresh names: a random part, O_EXCL, 0600,
 * which fchmod then sets to the mode asked for (the umask does not apply to fchmod). */
#include "common/newfile.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkostemps on path (which ends in XXXXXX then suffix_len bytes), set to mode. */
static int fresh_name(char *path, int suffix_len, mode_t mode) {
  int fd = mkostemps(path, suffix_len, O_CLOEXEC);
  if (fd < 0) return -1;
  if (fchmod(fd, mode) != 0) { int e = errno; close(fd); unlink(path); errno = e; return -1; }
  return fd;
}

int cl_file_create_new(char *path, size_t n, const char *base, const char *suffix, mode_t mode, int *fresh) {
  *fresh = 0;
  if ((size_t)snprintf(path, n, "%s%s", base, suffix) >= n) { errno = ENAMETOOLONG; return -1; }
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd >= 0) {
    if (fchmod(fd, mode) != 0) { int e = errno; close(fd); unlink(path); errno = e; return -1; }
    return fd;
  }
  if (errno != EEXIST && errno != ELOOP) return -1;
  if ((size_t)snprintf(path, n, "%s-XXXXXX%s", base, suffix) >= n) { errno = ENAMETOOLONG; return -1; }
  *fresh = 1;
  return fresh_name(path, (int)strlen(suffix), mode);
}

int cl_file_create_temp(char *tmp, size_t n, const char *target, mode_t mode) {
  if ((size_t)snprintf(tmp, n, "%s.XXXXXX", target) >= n) { errno = ENAMETOOLONG; return -1; }
  return fresh_name(tmp, 0, mode);
}
