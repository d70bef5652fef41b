/* pb.h: a minimal protocol-buffers writer: varints, tagged scalars, length-delimited fields
 * and nested messages whose length is patched in when they close. Knows no schema: the
 * field numbers are the caller's (pftrace.c, from perfetto_min.proto). */
#ifndef COMMLENS_CLI_PB_H
#define COMMLENS_CLI_PB_H
#include <stddef.h>
#include <stdint.h>

#define CL_PB_DEPTH 8

/* A growable byte buffer being written. The buffer owns .d (cl_pb_free). */
typedef struct {
  uint8_t *d; size_t n, cap;
  size_t open[CL_PB_DEPTH]; int depth;   /* where each open message's length goes */
} cl_pb;

void cl_pb_uint(cl_pb *b, uint32_t field, uint64_t v);          /* uint32/64, bool, enum */
void cl_pb_int(cl_pb *b, uint32_t field, int64_t v);            /* int32/64 (negative: 10 bytes) */
void cl_pb_fixed64(cl_pb *b, uint32_t field, uint64_t v);
void cl_pb_double(cl_pb *b, uint32_t field, double v);
void cl_pb_bytes(cl_pb *b, uint32_t field, const void *p, size_t n);   /* string, bytes */
void cl_pb_str(cl_pb *b, uint32_t field, const char *s);
/* Opens a nested message as field `field`; cl_pb_end closes the innermost one. At most
 * CL_PB_DEPTH open at once. */
void cl_pb_begin(cl_pb *b, uint32_t field);
void cl_pb_end(cl_pb *b);
void cl_pb_free(cl_pb *b);
#endif
