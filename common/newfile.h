/* newfile.h: the one rule for creating a file (plugin and CLI): always a new file, never one
 * that exists, never through a symlink or a planted hard link, with the mode the caller asks
 * for whatever the umask. A name that is taken gives way to a fresh random one beside it. */
#ifndef COMMLENS_NEWFILE_H
#define COMMLENS_NEWFILE_H
#include <stddef.h>
#include <sys/types.h>

/* Creates base+suffix exclusively (O_CREAT|O_EXCL|O_NOFOLLOW); if that name exists (a file
 * or a link of anyone's), a fresh base-XXXXXX+suffix instead (*fresh = 1, else 0). The name
 * used goes to path (n bytes). Returns a write-only fd (the caller closes it), or -1 with
 * errno. */
int cl_file_create_new(char *path, size_t n, const char *base, const char *suffix, mode_t mode, int *fresh);
/* A fresh temporary beside target (target.XXXXXX, exclusive), for a write then a rename over
 * target; its name goes to tmp (n bytes). fd or -1 with errno. */
int cl_file_create_temp(char *tmp, size_t n, const char *target, mode_t mode);
#endif
