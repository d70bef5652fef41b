/* identity.c: settles who this process is (cl_proc) at its first communicator init: pid,
 * host, the launcher's rank (else the communicator's, else the pid), job, ABI version, the
 * realtime offset of the monotonic clock, the clock's identity (clock_identity.c). Nothing
 * here starts threads or opens files. */
#include "plugin/output/identity.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/log.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

cl_process_info cl_proc;

static void detect_rank(int comm_rank) {
  cl_proc.env_rank = -1;
  static const char *vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMIX_RANK",
                               "PMI_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    uint64_t r;
    if (!v || !*v || cl_parse_dec(v, 0, 1 << 24, &r) != 0) continue;
    cl_proc.rank = cl_proc.env_rank = (int)r;
    snprintf(cl_proc.rank_source, sizeof cl_proc.rank_source, "%s", vars[i]);
    return;
  }
  if (comm_rank >= 0) {
    cl_proc.rank = comm_rank;
    snprintf(cl_proc.rank_source, sizeof cl_proc.rank_source, "comm");
  } else {
    cl_proc.rank = (int)cl_proc.pid;
    snprintf(cl_proc.rank_source, sizeof cl_proc.rank_source, "pid");
  }
}

void cl_identity_settle(int comm_rank, int abi) {
  memset(&cl_proc, 0, sizeof cl_proc);
  cl_proc.pid = getpid();
  if (gethostname(cl_proc.host, sizeof cl_proc.host - 1) != 0) snprintf(cl_proc.host, sizeof cl_proc.host, "unknown");
  snprintf(cl_proc.job, sizeof cl_proc.job, "%s", cl_cfg.job);
  detect_rank(comm_rank);
  cl_proc.abi = abi;
  cl_proc.realtime_offset_ns = cl_clock_measure_offset(&cl_proc.offset_err_ns);
  const char *why;
  if (cl_boot_id_read(CL_BOOT_ID_PATH, cl_proc.boot_id, &why) != 0)
    cl_log_once("boot_id", CL_LOG_INFO, "%s is %s: the trace names no boot id, so the CLI cannot "
                "tell that this process shares a clock with the other ranks of its host", CL_BOOT_ID_PATH, why);
  cl_clock_sync_read(&cl_proc.sync);
  cl_proc.start_ns = cl_now();
}
