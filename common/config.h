/* config.h: every COMMLENS_* environment variable, parsed once per process into cl_cfg.
 * The table in config.c is the single place a variable is declared, with its default and
 * meaning; docs/environment.md's table is generated from the same text (`commlens env`,
 * tools/env_doc.py). */
#ifndef COMMLENS_CONFIG_H
#define COMMLENS_CONFIG_H
#include <stdint.h>

#define CL_MASK_DEFAULT 0x570Fu  /* Group Coll P2p ProxyOp + GroupApi CollApi P2pApi + CeColl CeBatch
                                    (copy-engine collectives, ABI v6+: none fire for kernel ones) */
#define CL_MASK_KERNEL_LAUNCH 0x0800u  /* added whenever CUPTI is on: the kernel join needs it */
#define CL_MASK_FULL    0xFFFFu  /* every event NCCL 2.23 .. 2.30 and v7 (KernelPhase) can emit */

/* Threads the budget holds rings of COMMLENS_RING_KB for at least: a rank has its own thread
 * and NCCL's proxy thread, often a second proxy thread and more user threads. */
#define CL_RING_ROOM 4

typedef enum { CL_WIN_NONE = 0, CL_WIN_COLL, CL_WIN_TIME } cl_window_kind;
/* COMMLENS_SUMMARY: LINE writes the summary files and has rank 0's process say where they are
 * in one line; PRINT adds each rank's table on stderr. */
typedef enum { CL_SUMMARY_LINE = 0, CL_SUMMARY_PRINT, CL_SUMMARY_FILE, CL_SUMMARY_OFF } cl_summary_mode;

/* COMMLENS_CUPTI: what CUPTI records. KERNELS: kernel records only (NCCL's kernels are
 * matched to their launches by stream and launch order); FULL: also the driver API launch
 * records (matched by correlation id), memcpy and memset. */
/* COMMLENS_FLIGHT_SIGNAL: which signal asks for a flight dump. */
typedef enum { CL_FLIGHT_SIGUSR2 = 0, CL_FLIGHT_SIGUSR1, CL_FLIGHT_SIGNAL_OFF } cl_flight_signal_kind;

/* SAMPLED: CUPTI's kernel records only in windows (COMMLENS_CUPTI_SAMPLE), NCCL's kernels timed
 * by its kernel-channel timers (KernelCh) everywhere; exposure outside the windows estimated. */
typedef enum { CL_CUPTI_OFF = 0, CL_CUPTI_KERNELS = 1, CL_CUPTI_FULL = 2, CL_CUPTI_SAMPLED = 3 } cl_cupti_level;

/* COMMLENS_CHANNELS: which of a collective's channels NCCL's kernel-channel timers time.
 * SAMPLED: where only a digest is written, between CUPTI's sampling windows, the first channel
 * of each collective to start on the GPU (plugin/capture/hotpath.c); every channel elsewhere. */
typedef enum { CL_CHANNELS_ALL = 0, CL_CHANNELS_SAMPLED = 1 } cl_channels_mode;

/* COMMLENS_TIMERS: which collectives NCCL's kernel-channel timers (KernelCh) time, where they
 * are asked for (COMMLENS_CUPTI=sampled, ABI v5+). SAMPLED: every one while the communicator's
 * collectives are few; past the budget (timers_cost_ns a timed collective, at most
 * timers_budget_ppm of wall time per GPU), a sample every rank picks alike
 * (plugin/capture/timers.h). ALL: every one. */
typedef enum { CL_TIMERS_SAMPLED = 0, CL_TIMERS_ALL = 1 } cl_timers_mode;

/* COMMLENS_OUTPUT: which files each rank writes (bits). */
#define CL_OUT_TRACE  1u   /* the Chrome-trace JSON */
#define CL_OUT_DIGEST 2u   /* the per-collective digest (docs/digest.md) */

typedef struct {
  char dir[1024];            /* output directory */
  int dir_is_default;
  uint32_t mask;             /* NCCL activation mask we ask for */
  char events_name[32];      /* "default", "full" or "custom" */
  uint64_t buffer_bytes;     /* all per-thread rings together */
  uint64_t ring_bytes;       /* one thread's ring (at most rings_bytes / CL_RING_ROOM) */
  uint64_t rings_bytes;      /* all rings together: 3/4 of buffer_bytes (the rest is staging) */
  int gzip;
  int flush_ms;
  int exit_wait_ms;          /* COMMLENS_EXIT_WAIT_S: how long exit waits for a writer thread */
  cl_window_kind window;
  uint64_t win_start, win_stop;  /* collectives (count) or nanoseconds since first init */
  cl_summary_mode summary;
  int cupti;                 /* cl_cupti_level (COMMLENS_CUPTI) */
  uint64_t sample_on_ns, sample_period_ns;   /* COMMLENS_CUPTI_SAMPLE: window length, period */
  int channels;              /* cl_channels_mode (COMMLENS_CHANNELS) */
  int timers;                /* cl_timers_mode (COMMLENS_TIMERS) */
  uint64_t timers_budget_ppm;/* of wall time, per GPU (COMMLENS_TIMERS=sampled:PCT) */
  uint64_t timers_cost_ns;   /* one timed collective's cost (COMMLENS_TIMERS=sampled:PCT:US) */
  int cupti_clock_offset;    /* COMMLENS_CUPTI_CLOCK=offset: no timestamp callback (see cupti.c) */
  char record[1024];         /* record the ABI call stream to this file ("" = off) */
  char cupti_lib[1024];      /* libcupti to load ("" = search) */
  char job[128];             /* COMMLENS_JOB: job id when the launcher sets none */
  char prom[1024];           /* COMMLENS_PROM: directory for live Prometheus metrics ("" = off) */
  int rank;                  /* COMMLENS_RANK: world rank of the process's first GPU, -1 unset */
  char clock_id[64];         /* COMMLENS_CLOCK_ID: a timeline of its own ("" = the host's clock) */
  unsigned output;           /* COMMLENS_OUTPUT: CL_OUT_* bits */
  /* the flight recorder (plugin/pipeline/flight.c) */
  int flight_s;              /* COMMLENS_FLIGHT_S: seconds kept; 0 = off */
  int flight_light;          /* COMMLENS_FLIGHT_S not set: on by default, fed only what the digest
                                records (no API events, one channel a collective between CUPTI's
                                windows); set: every event NCCL gives, as a trace would have */
  uint64_t flight_bytes;     /* COMMLENS_FLIGHT_MB in bytes */
  int flight_signal;         /* cl_flight_signal_kind */
  int hang_s;                /* COMMLENS_HANG_S: 0 = no hang dumps */
  int late_ms;               /* COMMLENS_LATE_MS: 0 = no lateness dumps */
  int prom_s;                /* COMMLENS_PROM_S: seconds between two writes of the live metrics */
} cl_config;

extern cl_config cl_cfg;

/* The one parser of integer settings (COMMLENS_* and the launcher's rank variables): decimal
 * digits only, nothing else, in [lo, hi]. 0 with *out set, or -1. */
int cl_parse_dec(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
/* The flight recorder is on and wants every event NCCL gives (COMMLENS_FLIGHT_S set), not only
 * what the digest records. */
static inline int cl_flight_detailed(void) { return cl_cfg.flight_s && !cl_cfg.flight_light; }

/* Parses the environment into cl_cfg. Each bad value gets one warning and its default. */
void cl_config_load(void);
/* Prints the variable table (name, default, meaning), one per line. */
void cl_config_print_table(void (*out)(const char *line, void *arg), void *arg);
#endif
