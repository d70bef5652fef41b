/* gz_read.h: a rank file's bytes for the CLI's readers: opening (a regular file only, never
 * waiting on a FIFO) and reading it, plain or gzip, through one growable buffer. */
#ifndef COMMLENS_CLI_GZ_READ_H
#define COMMLENS_CLI_GZ_READ_H
#include "tools/commlens/read/trace_info.h"
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

/* Opens `path` for reading: never blocks (a FIFO planted under a trace's name), and only a
 * regular file is read. A symbolic link to a regular file is read (reading through a link
 * changes nothing, and users link traces into one directory); a link to a FIFO or device is
 * refused like the FIFO or device itself. Returns the fd, or -1 with the reason. */
int cl_input_open(const char *path, cl_info *info);

/* The file (plain, or gzip of one or more members) behind a growable buffer. Gzip is inflated
 * here rather than by gzread: gzread drops what a failing call had decoded, and stops for good
 * at the first damage. This reader keeps everything decoded before a damage, says where and what it was, and resumes at the next gzip member (the
 * plugin starts one every few MiB at an event line), so a flipped byte costs one member. */
typedef struct {
  int fd, is_gz, zinit, in_member, damaged;
  z_stream zs;
  unsigned char in[1u << 16];
  uint64_t in_base;                 /* file offset of in[0] */
  uint64_t out_base;                /* uncompressed offset of buf[0] */
  char *buf; size_t cap, pos, len;
  int eof;
  int resynced; size_t cut;         /* set by a fill that resumed after damage: new data from buf[cut] */
  int n_damage; char dmsg[200];     /* gzip damage: how many, and what the first one was */
} cl_reader;

/* Starts reading `path` at its first bytes: gzip when they are its magic, else plain. 0, or -1
 * with info->msg. */
int cl_reader_open(cl_reader *r, const char *path, cl_info *info);
/* Keeps [pos, len) and reads more after it; grows the buffer when it is full of one value.
 * Returns 1 if new bytes arrived. After damage a fill that resumed at the next gzip member sets
 * `resynced` (new data from buf[cut]); n_damage and dmsg say what was lost. */
int cl_reader_fill(cl_reader *r);
void cl_reader_close(cl_reader *r);
#endif
