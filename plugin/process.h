/* process.h: facts about the profiled process, fixed at the first communicator init (rank,
 * host, job, clock offset), and the process lifecycle: first init, exit, fork. */
#ifndef COMMLENS_PROCESS_H
#define COMMLENS_PROCESS_H
#include "plugin/clock_identity.h"
#include <stdint.h>
#include <sys/types.h>

typedef struct {
  pid_t pid;
  char host[128];
  int rank;                 /* the process's rank (names its ABI recording; each GPU's world
                               rank is its participant's: plugin/output/participants.h) */
  char rank_source[32];
  int env_rank;             /* the launcher's rank for this process, -1 if none */
  char job[128];
  int abi;                  /* first ABI version seen */
  int64_t realtime_offset_ns, offset_err_ns;
  char boot_id[CL_BOOT_ID_LEN + 1];   /* "" when unreadable: the header leaves it out */
  cl_clock_sync sync;                 /* the host clock's NTP state at the first init */
  uint64_t start_ns;        /* monotonic time of the first init */
} cl_process_info;

extern cl_process_info cl_proc;
#endif
