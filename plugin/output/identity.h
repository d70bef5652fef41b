/* identity.h: who this process is (pid, host, rank and where it came from, job, ABI, clock
 * offset and identity, start), settled once at the first communicator init (plugin/process.c calls
 * cl_identity_settle) and read by the writer and the output, never written by them. */
#ifndef COMMLENS_IDENTITY_H
#define COMMLENS_IDENTITY_H
#include "plugin/output/clock_identity.h"
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

/* Fills cl_proc from this process, the configuration (cl_config_load first) and the first
 * communicator's rank and ABI version (comm_rank -1: none). */
void cl_identity_settle(int comm_rank, int abi);
#endif
