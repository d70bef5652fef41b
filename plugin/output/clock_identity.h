/* clock_identity.h: which clock a process reads, for the CLI's clock model. Ranks of one host
 * boot (same boot_id and host) read one CLOCK_REALTIME; the kernel's NTP state says how far
 * that clock may be from true time. Read once at the process's first init. */
#ifndef COMMLENS_CLOCK_IDENTITY_H
#define COMMLENS_CLOCK_IDENTITY_H

#include "exporters/strbuf.h"

#define CL_BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"
#define CL_BOOT_ID_LEN 36   /* 8-4-4-4-12 hex digits with dashes */

typedef struct {
  int known;            /* 0: adjtimex failed; the other fields are meaningless */
  int synchronised;     /* STA_UNSYNC clear and the state is not TIME_ERROR */
  long esterror_us, maxerror_us;
} cl_clock_sync;

/* Reads the boot id at `path` into `out` (lower case, NUL-terminated). Returns 0, or -1 with
 * out[0] = 0 and *why (static text) when the file is missing, unreadable or not one UUID. */
int cl_boot_id_read(const char *path, char out[CL_BOOT_ID_LEN + 1], const char **why);
/* The host clock's synchronisation state from adjtimex in its query form (modes = 0: reads,
 * never adjusts). s->known = 0 when the call fails. */
void cl_clock_sync_read(cl_clock_sync *s);
/* Appends the trace header's members for these (each with its leading comma):
 * ,"boot_id":"<uuid>" unless boot_id is "",
 * ,"clock_id":"<id>" unless clock_id is NULL or "" (COMMLENS_CLOCK_ID: a timeline that is not
 * the host's shared clock, such as a replay's), and
 * ,"clock_sync":{"synchronised":bool,"esterror_us":n,"maxerror_us":n} unless s->known is 0:
 * what could not be read is left out, never written empty or as a guess. */
void cl_clock_identity_json(cl_sb *b, const char *boot_id, const char *clock_id, const cl_clock_sync *s);
#endif
