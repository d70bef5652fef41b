/* config.c: the table of COMMLENS_* variables and their parsers. Runs once, at the first
 * communicator init (and again in a fork child). Never fails: bad values warn and default. */
#include "common/config.h"
#include "common/log.h"
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cl_config cl_cfg;

typedef int (*cl_parse_fn)(const char *value);
/* want: what a valid value is, said when one is refused (numbers: their range) */
typedef struct { const char *name, *def, *help, *want; cl_parse_fn parse; } cl_var;

/* The one parser of integer settings: decimal digits only (a leading zero is no octal: "010" is
 * ten), nothing before or after them, in [lo, hi]. The event mask's "0x" form is its own. */
static int parse_digits(const char *s, unsigned base, uint64_t *out, uint64_t lo, uint64_t hi) {
  uint64_t v = 0;
  if (!*s) return -1;
  for (; *s; s++) {
    unsigned d = isdigit((unsigned char)*s) ? (unsigned)(*s - '0')
               : base == 16 && isxdigit((unsigned char)*s) ? (unsigned)(tolower((unsigned char)*s) - 'a' + 10) : base;
    if (d >= base || v > (UINT64_MAX - d) / base) return -1;
    v = v * base + d;
  }
  if (v < lo || v > hi) return -1;
  *out = v;
  return 0;
}
int cl_parse_dec(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) { return parse_digits(s, 10, out, lo, hi); }
static int parse_u64(const char *s, uint64_t *out, uint64_t lo, uint64_t hi) { return cl_parse_dec(s, lo, hi, out); }

/* A non-negative decimal ("12", "1.5"; fractional digits only when frac_digits > 0, at most
 * that many) times `scale` (10^frac_digits or more), exactly, into *out; *end after it. -1 if
 * malformed or past UINT64_MAX - 1 (UINT64_MAX means "no end"). No floating point: nan, inf,
 * exponents and overflow cannot get through. */
static int parse_scaled(const char *s, const char **end, uint64_t scale, int frac_digits, uint64_t *out) {
  uint64_t ip = 0, fp = 0, place = scale;
  if (!isdigit((unsigned char)*s)) return -1;
  for (; isdigit((unsigned char)*s); s++) {
    unsigned d = (unsigned)(*s - '0');
    if (ip > (UINT64_MAX - d) / 10) return -1;
    ip = ip * 10 + d;
  }
  if (*s == '.') {
    if (!frac_digits || !isdigit((unsigned char)s[1])) return -1;
    for (s++; isdigit((unsigned char)*s); s++) {
      if (frac_digits-- == 0) return -1;
      place /= 10;
      fp += place * (uint64_t)(*s - '0');
    }
  }
  if (ip > (UINT64_MAX - 1 - fp) / scale) return -1;
  *out = ip * scale + fp;
  *end = s;
  return 0;
}

static int p_dir(const char *v) {
  if (!*v || strlen(v) >= sizeof cl_cfg.dir) return -1;
  snprintf(cl_cfg.dir, sizeof cl_cfg.dir, "%s", v);
  cl_cfg.dir_is_default = 0;
  return 0;
}

static const struct { const char *name; uint32_t bit; } g_event_names[] = {
  {"group", 1u << 0}, {"coll", 1u << 1}, {"p2p", 1u << 2}, {"proxyop", 1u << 3},
  {"proxystep", 1u << 4}, {"proxyctrl", 1u << 5}, {"kernelch", 1u << 6}, {"net", 1u << 7},
  {"groupapi", 1u << 8}, {"collapi", 1u << 9}, {"p2papi", 1u << 10},
  {"kernellaunch", 1u << 11}, {"ce", 7u << 12},
  /* v7 kernel phases come under KernelCh events (NCCL turns KernelCh on for them anyway) */
  {"kernelphase", (1u << 15) | (1u << 6)},
};

/* "default", "full", a number (mask), or a '+'/','-separated list of preset and event names,
 * e.g. "default+kernelch". */
static int p_events(const char *v) {
  uint64_t m;
  if ((v[0] == '0' && (v[1] == 'x' || v[1] == 'X') ? parse_digits(v + 2, 16, &m, 1, 0xFFFF) : parse_u64(v, &m, 1, 0xFFFF)) == 0) {
    cl_cfg.mask = (uint32_t)m; snprintf(cl_cfg.events_name, sizeof cl_cfg.events_name, "custom");
    return 0;
  }
  char buf[256];
  if (strlen(v) >= sizeof buf) return -1;
  snprintf(buf, sizeof buf, "%s", v);
  uint32_t mask = 0;
  for (char *tok = strtok(buf, "+,"); tok; tok = strtok(NULL, "+,")) {
    for (char *c = tok; *c; c++) *c = (char)tolower((unsigned char)*c);
    if (!strcmp(tok, "default")) { mask |= CL_MASK_DEFAULT; continue; }
    if (!strcmp(tok, "full") || !strcmp(tok, "all")) { mask |= CL_MASK_FULL; continue; }
    size_t i, n = sizeof g_event_names / sizeof g_event_names[0];
    for (i = 0; i < n && strcmp(tok, g_event_names[i].name); i++) {}
    if (i == n) return -1;
    mask |= g_event_names[i].bit;
  }
  if (!mask) return -1;
  cl_cfg.mask = mask;
  snprintf(cl_cfg.events_name, sizeof cl_cfg.events_name, "%s",
           mask == CL_MASK_DEFAULT ? "default" : mask == CL_MASK_FULL ? "full" : "custom");
  return 0;
}

static int p_buffer_mb(const char *v) {
  uint64_t m;
  if (parse_u64(v, &m, 1, 65536)) return -1;
  cl_cfg.buffer_bytes = m << 20;
  return 0;
}
static int g_ring_set;     /* COMMLENS_RING_KB was given (and valid) */
static int p_ring_kb(const char *v) {
  uint64_t k;
  if (parse_u64(v, &k, 16, 1 << 20)) return -1;
  cl_cfg.ring_bytes = k << 10;
  g_ring_set = 1;
  return 0;
}
static int p_bool(const char *v, int *out) {
  if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on")) { *out = 1; return 0; }
  if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcasecmp(v, "off")) { *out = 0; return 0; }
  return -1;
}
static int p_gzip(const char *v) { return p_bool(v, &cl_cfg.gzip); }
/* off | kernels (the default; on, 1, yes, true say the same) | full */
static int p_cupti(const char *v) {
  int on;
  if (!strcasecmp(v, "kernels")) { cl_cfg.cupti = CL_CUPTI_KERNELS; return 0; }
  if (!strcasecmp(v, "full")) { cl_cfg.cupti = CL_CUPTI_FULL; return 0; }
  if (!strcasecmp(v, "sampled")) { cl_cfg.cupti = CL_CUPTI_SAMPLED; return 0; }
  if (p_bool(v, &on)) return -1;
  cl_cfg.cupti = on ? CL_CUPTI_KERNELS : CL_CUPTI_OFF;
  return 0;
}
static int p_channels(const char *v) {
  if (!strcasecmp(v, "all")) { cl_cfg.channels = CL_CHANNELS_ALL; return 0; }
  if (!strcasecmp(v, "sampled")) { cl_cfg.channels = CL_CHANNELS_SAMPLED; return 0; }
  return -1;
}
/* sampled | all | sampled:PCT | sampled:PCT:US (PCT: the budget, percent of wall time, 0.001 to
 * 100; US: one timed collective's cost, 0.1 to 10000 microseconds; up to 3 decimals each) */
static int g_timers_set;   /* COMMLENS_TIMERS was given */
static int p_timers(const char *v) {
  if (!strcasecmp(v, "all")) { cl_cfg.timers = CL_TIMERS_ALL; g_timers_set = 1; return 0; }
  if (strncasecmp(v, "sampled", 7)) return -1;
  const char *s = v + 7;
  uint64_t ppm = cl_cfg.timers_budget_ppm, cost = cl_cfg.timers_cost_ns;
  if (*s == ':') {
    const char *end;
    if (parse_scaled(s + 1, &end, 10000, 3, &ppm) || ppm < 10 || ppm > 1000000) return -1;   /* percent -> ppm */
    s = end;
    if (*s == ':') {
      if (parse_scaled(s + 1, &end, 1000, 3, &cost) || cost < 100 || cost > 10000000) return -1;   /* us -> ns */
      s = end;
    }
  }
  if (*s) return -1;
  g_timers_set = 1;
  cl_cfg.timers = CL_TIMERS_SAMPLED;
  cl_cfg.timers_budget_ppm = ppm;
  cl_cfg.timers_cost_ns = cost;
  return 0;
}
/* W:P seconds (decimals allowed, to the nanosecond), 0.05 <= W < P <= 3600 */
static int p_cupti_sample(const char *v) {
  const char *e;
  uint64_t on, period;
  if (parse_scaled(v, &e, 1000000000u, 9, &on) || *e != ':' || parse_scaled(e + 1, &e, 1000000000u, 9, &period) || *e)
    return -1;
  if (on < 50000000ull || on >= period || period > 3600000000000ull) return -1;
  cl_cfg.sample_on_ns = on;
  cl_cfg.sample_period_ns = period;
  return 0;
}
/* callback (the default) | offset */
static int p_cupti_clock(const char *v) {
  if (!strcasecmp(v, "callback")) { cl_cfg.cupti_clock_offset = 0; return 0; }
  if (!strcasecmp(v, "offset")) { cl_cfg.cupti_clock_offset = 1; return 0; }
  return -1;
}
static int p_flush_ms(const char *v) {
  uint64_t m;
  if (parse_u64(v, &m, 10, 250)) return -1;   /* the 250 ms bound is a promise: never looser */
  cl_cfg.flush_ms = (int)m;
  return 0;
}

static int p_exit_wait(const char *v) {
  uint64_t s;
  if (parse_u64(v, &s, 1, 600)) return -1;
  cl_cfg.exit_wait_ms = (int)s * 1000;
  return 0;
}

/* "coll:A-B" (collectives A..B-1 counted from the first), "time:A-B" seconds since the first
 * communicator init (decimals allowed); B may be empty for "until the end". */
static int p_window(const char *v) {
  const char *rest;
  cl_window_kind k;
  if (!strncmp(v, "coll:", 5)) { k = CL_WIN_COLL; rest = v + 5; }
  else if (!strncmp(v, "time:", 5)) { k = CL_WIN_TIME; rest = v + 5; }
  else return -1;
  uint64_t scale = k == CL_WIN_TIME ? 1000000000u : 1u, a, b = UINT64_MAX;
  int frac = k == CL_WIN_TIME ? 9 : 0;                /* seconds to the nanosecond; whole collectives */
  const char *end;
  if (parse_scaled(rest, &end, scale, frac, &a) || *end != '-') return -1;
  if (end[1] && (parse_scaled(end + 1, &end, scale, frac, &b) || *end || b <= a)) return -1;
  cl_cfg.window = k;
  cl_cfg.win_start = a;
  cl_cfg.win_stop = b;
  return 0;
}
static int p_summary(const char *v) {
  if (!strcmp(v, "line")) cl_cfg.summary = CL_SUMMARY_LINE;
  else if (!strcmp(v, "print")) cl_cfg.summary = CL_SUMMARY_PRINT;
  else if (!strcmp(v, "file")) cl_cfg.summary = CL_SUMMARY_FILE;
  else if (!strcmp(v, "off")) cl_cfg.summary = CL_SUMMARY_OFF;
  else return -1;
  return 0;
}
static int p_cupti_lib(const char *v) {
  if (!*v || strlen(v) >= sizeof cl_cfg.cupti_lib) return -1;
  snprintf(cl_cfg.cupti_lib, sizeof cl_cfg.cupti_lib, "%s", v);
  return 0;
}
static int p_job(const char *v) {
  if (!*v || strlen(v) >= sizeof cl_cfg.job) return -1;
  snprintf(cl_cfg.job, sizeof cl_cfg.job, "%s", v);
  return 0;
}
static int p_prom(const char *v) {
  if (strlen(v) >= sizeof cl_cfg.prom) return -1;
  snprintf(cl_cfg.prom, sizeof cl_cfg.prom, "%s", v);
  return 0;
}
static int p_prom_s(const char *v) {
  uint64_t s;
  if (parse_u64(v, &s, 1, 60)) return -1;
  cl_cfg.prom_s = (int)s;
  return 0;
}
static int p_rank(const char *v) {
  uint64_t r;
  if (parse_u64(v, &r, 0, 1 << 24)) return -1;
  cl_cfg.rank = (int)r;
  return 0;
}
static int p_record(const char *v) {
  if (strlen(v) >= sizeof cl_cfg.record) return -1;
  snprintf(cl_cfg.record, sizeof cl_cfg.record, "%s", v);
  return 0;
}

/* 1..63 bytes of letters, digits and . _ : - (it names a clock in a trace header and a report) */
static int p_clock_id(const char *v) {
  size_t n = strlen(v);
  if (!n || n >= sizeof cl_cfg.clock_id) return -1;
  for (const char *c = v; *c; c++)
    if (!isalnum((unsigned char)*c) && !strchr("._:-", *c)) return -1;
  memcpy(cl_cfg.clock_id, v, n + 1);
  return 0;
}

/* digest | trace | both (COMMLENS_OUTPUT); g_output_set: given, so COMMLENS_EVENTS=full does
 * not change it */
static int g_output_set;
static int p_output(const char *v) {
  if (!strcasecmp(v, "digest")) cl_cfg.output = CL_OUT_DIGEST;
  else if (!strcasecmp(v, "trace")) cl_cfg.output = CL_OUT_TRACE;
  else if (!strcasecmp(v, "both")) cl_cfg.output = CL_OUT_DIGEST | CL_OUT_TRACE;
  else return -1;
  g_output_set = 1;
  return 0;
}

/* ---- the flight recorder (plugin/pipeline/flight.c) ---- */
static int p_flight_s(const char *v) {
  uint64_t s;
  if (parse_u64(v, &s, 0, 3600)) return -1;
  cl_cfg.flight_s = (int)s;
  cl_cfg.flight_light = 0;
  return 0;
}
static int p_flight_mb(const char *v) {
  uint64_t m;
  if (parse_u64(v, &m, 1, 65536)) return -1;
  cl_cfg.flight_bytes = m << 20;
  return 0;
}
/* usr2 (the default), usr1, or off */
static int p_flight_signal(const char *v) {
  if (!strcasecmp(v, "usr2") || !strcasecmp(v, "sigusr2")) cl_cfg.flight_signal = CL_FLIGHT_SIGUSR2;
  else if (!strcasecmp(v, "usr1") || !strcasecmp(v, "sigusr1")) cl_cfg.flight_signal = CL_FLIGHT_SIGUSR1;
  else if (!strcasecmp(v, "off")) cl_cfg.flight_signal = CL_FLIGHT_SIGNAL_OFF;
  else return -1;
  return 0;
}
static int p_hang_s(const char *v) {
  uint64_t s;
  if (parse_u64(v, &s, 0, 86400)) return -1;
  cl_cfg.hang_s = (int)s;
  return 0;
}
static int p_late_ms(const char *v) {
  uint64_t m;
  if (parse_u64(v, &m, 0, 3600000)) return -1;
  cl_cfg.late_ms = (int)m;
  return 0;
}

static const cl_var g_vars[] = {
  {"COMMLENS_DIR", "./commlens-<job id> (./commlens-trace without one)",
   "directory for traces and summaries; created if missing", NULL, p_dir},
  {"COMMLENS_EVENTS", "default",
   "event set: default (API, group, collective, p2p, proxy-op and copy-engine collective events; kernel launches too "
   "unless COMMLENS_CUPTI=off), full (everything), a "
   "mask number, or names joined by '+' (default+kernelch, proxystep, net, ...)",
   "default, full, a mask 1..0xffff, or event names joined by '+'", p_events},
  {"COMMLENS_BUFFER_MB", "64", "memory for all per-thread event buffers together (MiB)",
   "an integer 1..65536 (MiB)", p_buffer_mb},
  {"COMMLENS_RING_KB", "2048", "one thread's event buffer (KiB); rings share 3/4 of COMMLENS_BUFFER_MB, staging the rest",
   "an integer 16..1048576 (KiB)", p_ring_kb},
  {"COMMLENS_GZIP", "0", "write .trace.json.gz instead of .trace.json", "1/0, true/false, yes/no, on/off", p_gzip},
  {"COMMLENS_FLUSH_MS", "250", "flush interval of the trace file (10..250 ms)", "an integer 10..250 (ms)", p_flush_ms},
  {"COMMLENS_EXIT_WAIT_S", "30",
   "longest the job's exit (or its last communicator's finalize) waits for a stuck writer thread "
   "(1..600 s, both writer threads together; the drain thread at most 10 s of it); past it the "
   "trace ends at its last complete flush, with one warning. Keep it below the scheduler's kill "
   "grace (Kubernetes' default: 30 s after SIGTERM)", "an integer 1..600 (s)", p_exit_wait},
  {"COMMLENS_WINDOW", "(everything)",
   "capture window: coll:A-B (collectives A..B) or time:A-B (seconds since the first "
   "communicator); B may be left out",
   "coll:A-B with whole numbers, or time:A-B with seconds (up to 9 decimals), A < B, B optional", p_window},
  {"COMMLENS_SUMMARY", "line",
   "at exit: line (each rank's summary in files beside its profile; the process of rank 0 prints one "
   "line to stderr: where the files are and the command that reads them), print (also each rank's "
   "summary table on stderr), file (the files only), off (no summary)", "line, print, file or off", p_summary},
  {"COMMLENS_CUPTI", "sampled",
   "GPU timing from CUPTI: kernels (every collective and p2p operation GPU-timed from CUPTI's "
   "kernel records alone, matched to NCCL's launches by stream and launch order; exposed "
   "communication per collective, rank, communicator and NVTX step; on says the same), full "
    "(also a slice per compute kernel, CUDA launch calls, memcpy and memset: NCCL's kernels matched by correlation id; "
    "costs more per launch: docs/performance.md), sampled (NCCL's kernels timed by their kernel-channel timers, "
    "CUPTI's kernel records only in windows, exposure outside them estimated and marked), off (NCCL's own events only)",
    "kernels, sampled, full, on or off", p_cupti},
  {"COMMLENS_CUPTI_SAMPLE", "1:30",
   "with COMMLENS_CUPTI=sampled: CUPTI records kernels for W seconds in every P (W:P), the "
   "first window from the start until W after the first collective (P at most); exposure of collectives outside the windows is estimated "
   "from those inside", "W:P seconds, 0.05 <= W < P <= 3600", p_cupti_sample},
  {"COMMLENS_CHANNELS", "sampled",
   "which channels of a collective NCCL's kernel-channel timers time: sampled (where only a digest is "
   "written, between COMMLENS_CUPTI=sampled's windows, the first channel of each collective to start on "
   "the GPU: its GPU span is that channel's, and the channel verdict rests on the windows; every channel "
   "elsewhere) or all (every channel of every collective: costs NCCL's threads and the writer about a "
   "third more per collective: docs/performance.md)", "sampled or all", p_channels},
  {"COMMLENS_TIMERS", "sampled",
   "which collectives NCCL's kernel-channel timers time (COMMLENS_CUPTI=sampled, NCCL 2.28+): sampled (every one "
   "while a GPU's collectives are few; past sampled's budget, 0.5% of wall time at 10 us a timed collective, a "
   "sample every rank picks alike, the others left to host times; docs/sampling.md), sampled:PCT or sampled:PCT:US "
   "(another budget, percent of wall time, and cost, microseconds), or all (every collective; the default when "
   "COMMLENS_EVENTS asks for kernelch itself, as full does)",
   "sampled, sampled:PCT, sampled:PCT:US (PCT 0.001..100, US 0.1..10000) or all", p_timers},
  {"COMMLENS_CUPTI_CLOCK", "callback",
   "how CUPTI's timestamps reach the plugin's clock: callback (CUPTI calls the plugin's clock "
   "for its timestamps) or offset (CUPTI's own clock, shifted by an offset measured once a "
   "second); a diagnostic (docs/performance.md)", "callback or offset", p_cupti_clock},
  {"COMMLENS_CUPTI_LIB", "(search)",
   "path of libcupti to load; default: the one already loaded, then libcupti.so(.13/.12) on the "
   "library path, $CUDA_HOME/extras/CUPTI/lib64, /usr/local/cuda/{extras/CUPTI/,}lib64", NULL, p_cupti_lib},
  {"COMMLENS_JOB", "(from the launcher)",
   "job id for the default directory and the trace header, when SLURM_JOB_ID, "
   "TORCHELASTIC_RUN_ID, LSB_JOBID or PBS_JOBID is not set", "1..127 bytes", p_job},
  {"COMMLENS_PROM", "(off)",
   "directory: every COMMLENS_PROM_S seconds (and when its communicators are finalized) each rank replaces "
   "<dir>/commlens-r<rank>-<host>-<pid>[-g<gpu>].prom with its live metrics in the Prometheus text format (for "
   "node-exporter's textfile collector; every series labelled with the pid); the file is removed when the process "
   "ends, and a restarted rank removes what a killed one left", NULL, p_prom},
  {"COMMLENS_RANK", "(from the launcher or NCCL)",
   "world rank of this process's GPU (of its first GPU when it drives several: the others count "
   "up from it, in device order); default: RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMIX_RANK "
   "for a process of one GPU, else the GPU's rank in its largest communicator", "an integer 0..16777216", p_rank},
  {"COMMLENS_RECORD", "(off)",
   "directory: also record the raw profiler ABI call stream there (for replay in tests)", NULL, p_record},
  /* clock identity: a process whose timestamps are not on its host's shared timeline */
  {"COMMLENS_CLOCK_ID", "(the host's clock)",
   "names this process's timeline when it is not its host's shared clock (commlens-replay sets "
   "one per replay: each replays on a timeline of its own); the trace header carries it, and "
   "`commlens` aligns ranks of different clock ids like ranks of different hosts",
   "1..63 letters, digits, '.', '_', ':' or '-'", p_clock_id},
  /* ---- the per-collective digest (docs/digest.md) ---- */
  {"COMMLENS_OUTPUT", "digest (trace with COMMLENS_EVENTS=full)",
   "what each rank writes: digest (one compact record per collective and p2p operation, "
   "<base>.digest, docs/digest.md), trace (the Chrome-trace JSON), both",
   "digest, trace or both", p_output},
  /* the flight recorder (plugin/pipeline/flight.c, docs/flight-recorder.md) */
  {"COMMLENS_FLIGHT_S", "(on: 60, light)",
   "flight recorder: keep the last N seconds of events in memory (compact records, bounded by "
   "COMMLENS_FLIGHT_MB) and write them as a trace into <dir>/flight/ on a signal, a hang or a late "
   "collective; 0 turns it off. Unset, it keeps 60 s of what the digest records (docs/sampling.md); set, "
   "every event NCCL gives (API calls, every channel), as a trace would", "an integer 0..3600 (s)", p_flight_s},
  {"COMMLENS_FLIGHT_MB", "16", "memory the flight recorder takes at most (MiB), its dumps' included; older records "
   "are evicted and counted", "an integer 1..65536 (MiB)", p_flight_mb},
  {"COMMLENS_FLIGHT_SIGNAL", "usr2",
   "signal that asks for a flight dump: usr2, usr1, or off (none installed). Never replaces a handler "
   "the application set (said once, then no signal dumps)", "usr2, usr1 or off", p_flight_signal},
  {"COMMLENS_HANG_S", "60",
   "flight dump when a collective this rank started is not done after this many seconds (its "
   "KernelCh channels or proxy ops still open); 0: no hang dumps", "an integer 0..86400 (s)", p_hang_s},
  {"COMMLENS_LATE_MS", "0",
   "flight dump when a collective ran longer than this on this GPU (first channel start to last "
   "channel stop, KernelCh events needed): this rank waited that long for a late peer; 0: off",
   "an integer 0..3600000 (ms)", p_late_ms},
  /* ---- live straggler detection through Prometheus (docs/prometheus.md) ---- */
  {"COMMLENS_PROM_S", "5",
   "seconds between two writes of the COMMLENS_PROM metrics (1..60): 1 lets a 1 s scrape and the "
   "shipped rules name a straggler within 10 s", "an integer 1..60 (s)", p_prom_s},
};

static void set_defaults(void) {
  memset(&cl_cfg, 0, sizeof cl_cfg);
  cl_cfg.dir_is_default = 1;
  cl_cfg.mask = CL_MASK_DEFAULT;
  snprintf(cl_cfg.events_name, sizeof cl_cfg.events_name, "default");
  cl_cfg.buffer_bytes = 64ull << 20;
  cl_cfg.ring_bytes = 2ull << 20;
  cl_cfg.flush_ms = 250;
  cl_cfg.exit_wait_ms = 30000;
  cl_cfg.summary = CL_SUMMARY_LINE;
  cl_cfg.cupti = CL_CUPTI_SAMPLED;
  cl_cfg.channels = CL_CHANNELS_SAMPLED;
  cl_cfg.sample_on_ns = 1000000000ull;
  cl_cfg.sample_period_ns = 30000000000ull;
  cl_cfg.rank = -1;
  cl_cfg.output = CL_OUT_DIGEST;
  cl_cfg.timers = CL_TIMERS_SAMPLED;
  cl_cfg.timers_budget_ppm = 5000;
  cl_cfg.timers_cost_ns = 10000;
  cl_cfg.flight_s = 60;
  cl_cfg.flight_light = 1;
  cl_cfg.flight_bytes = 16ull << 20;
  cl_cfg.flight_signal = CL_FLIGHT_SIGUSR2;
  cl_cfg.hang_s = 60;
  cl_cfg.prom_s = 5;
}

/* The job id: the launcher's, else COMMLENS_JOB; it names the default output directory, so
 * every rank of a job writes into the same one. */
static void settle_job_and_dir(void) {
  static const char *launcher[] = {"SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "LSB_JOBID", "PBS_JOBID"};
  for (size_t i = 0; i < sizeof launcher / sizeof launcher[0]; i++) {
    const char *v = getenv(launcher[i]);
    if (v && *v) { snprintf(cl_cfg.job, sizeof cl_cfg.job, "%s", v); break; }
  }
  if (!cl_cfg.dir_is_default) return;
  char clean[64];
  size_t n = 0;
  for (const char *c = cl_cfg.job[0] ? cl_cfg.job : "trace"; *c && n + 1 < sizeof clean; c++)
    clean[n++] = (isalnum((unsigned char)*c) || *c == '-' || *c == '_' || *c == '.') ? *c : '_';
  clean[n] = 0;
  snprintf(cl_cfg.dir, sizeof cl_cfg.dir, "./commlens-%s", clean);
}

static void fit_rings(void);

/* A refused value as the log shows it: printable ASCII as it is, every other byte as \xNN (a
 * value may hold anything, and the log goes to a terminal), cut to fit n. */
static void show(const char *v, char *out, size_t n) {
  size_t k = 0;
  for (const unsigned char *c = (const unsigned char *)v; *c && k + 5 < n; c++) {
    if (*c >= 0x20 && *c < 0x7f && *c != '\\') out[k++] = (char)*c;
    else k += (size_t)snprintf(out + k, n - k, "\\x%02x", *c);
  }
  out[k] = 0;
}

void cl_config_load(void) {
  set_defaults();
  g_ring_set = 0;
  g_output_set = 0;
  g_timers_set = 0;
  for (size_t i = 0; i < sizeof g_vars / sizeof g_vars[0]; i++) {
    const char *v = getenv(g_vars[i].name);
    if (!v) continue;
    if (g_vars[i].parse(v) == 0) continue;
    char shown[256];
    show(v, shown, sizeof shown);
    if (g_vars[i].want)
      cl_log(CL_LOG_WARN, "ignoring %s=\"%s\": want %s; using the default %s", g_vars[i].name, shown,
             g_vars[i].want, g_vars[i].def);
    else
      cl_log(CL_LOG_WARN, "ignoring %s=\"%s\": not a valid value (%s); using the default %s",
             g_vars[i].name, shown, g_vars[i].help, g_vars[i].def);
  }
  settle_job_and_dir();
  /* a full event set is asked for to look at the detail: the trace, unless said otherwise */
  if (!g_output_set && cl_cfg.mask == CL_MASK_FULL) cl_cfg.output = CL_OUT_TRACE;
#ifdef COMMLENS_NO_ZLIB
  if (cl_cfg.gzip) {
    cl_log(CL_LOG_WARN, "COMMLENS_GZIP is ignored: this build of commlens has no zlib; writing plain JSON");
    cl_cfg.gzip = 0;
  }
#endif
  if (cl_cfg.cupti) cl_cfg.mask |= CL_MASK_KERNEL_LAUNCH;
  /* an event set that asks for KernelCh itself (full, default+kernelch) gets every collective timed */
  if ((cl_cfg.mask & (1u << 6)) && !g_timers_set) cl_cfg.timers = CL_TIMERS_ALL;
  if (cl_cfg.cupti == CL_CUPTI_SAMPLED) cl_cfg.mask |= 1u << 6;   /* KernelCh: NCCL's GPU timers */
  fit_rings();
}

/* A ring the budget cannot hold CL_RING_ROOM of shrinks to the largest power of two it can
 * (at least 16 KiB: the smallest budget, 1 MiB, holds more), said once: before, a ring larger
 * than the rings' share recorded nothing at all, and one that fitted once left the proxy
 * thread without a ring. */
static void fit_rings(void) {
  cl_cfg.rings_bytes = cl_cfg.buffer_bytes / 4 * 3;
  uint64_t fit = cl_cfg.rings_bytes / CL_RING_ROOM, ring = 16u << 10;
  if (cl_cfg.ring_bytes <= fit) return;
  while (ring * 2 <= fit) ring *= 2;
  if (g_ring_set)
    cl_log(CL_LOG_WARN, "COMMLENS_RING_KB=%llu does not fit COMMLENS_BUFFER_MB=%llu %d times (rings get 3/4 of it); "
           "using rings of %llu KiB", (unsigned long long)(cl_cfg.ring_bytes >> 10),
           (unsigned long long)(cl_cfg.buffer_bytes >> 20), CL_RING_ROOM, (unsigned long long)(ring >> 10));
  else
    cl_log(CL_LOG_WARN, "COMMLENS_BUFFER_MB=%llu cannot hold %d rings of the default %llu KiB (rings get 3/4 of it); "
           "using rings of %llu KiB", (unsigned long long)(cl_cfg.buffer_bytes >> 20), CL_RING_ROOM,
           (unsigned long long)(cl_cfg.ring_bytes >> 10), (unsigned long long)(ring >> 10));
  cl_cfg.ring_bytes = ring;
}

void cl_config_print_table(void (*out)(const char *line, void *arg), void *arg) {
  char line[1024];
  for (size_t i = 0; i < sizeof g_vars / sizeof g_vars[0]; i++) {
    snprintf(line, sizeof line, "%s\t%s\t%s", g_vars[i].name, g_vars[i].def, g_vars[i].help);
    out(line, arg);
  }
}
