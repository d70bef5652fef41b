/* harness.h: drives the commlens plugin exactly as NCCL does, without NCCL or a GPU: loads
 * the library with dlopen(RTLD_NOW|RTLD_LOCAL), looks up ncclProfiler_vN, encodes neutral
 * event descriptions into each version's descriptor layout, and replays realistic call
 * sequences (scenario drivers). Also: a capturing logger, per-test output directories,
 * and re-executing the test program for cases that need a fresh process (the plugin reads
 * its configuration at the first init of a process). */
#ifndef COMMLENS_TEST_HARNESS_H
#define COMMLENS_TEST_HARNESS_H
#include "commlens/nccl_profiler_abi.h"
#include "tl.h"
#include "tools/replay/driver.h"
#include "tr_load.h"
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- neutral event description -------------------------------------------------------- */
typedef struct {
  uint64_t type;          /* CLABI_EV_* bit; any value is passed through (unknown types) */
  void *parent;           /* parentObj */
  void *parent_group;     /* v5+ coll/p2p parentGroup */
  int rank;
  /* Coll, P2p, CollApi, P2pApi, CeColl */
  const char *func, *datatype, *algo, *proto;
  uint64_t seq;
  size_t count;
  int root, peer;
  uint8_t nchannels, nwarps;
  void *stream;
  int graph_captured, group_depth;
  const void *sendbuff;
  void *recvbuff;
  uint64_t comm_hash;     /* v1..v3 carry it in Coll/P2p */
  const char *comm_name;  /* v1..v3 "name" */
  /* ProxyOp / ProxyStep / KernelCh / NetPlugin */
  pid_t pid;
  uint8_t channel;
  int nsteps, chunk_size, is_send, step;
  uint64_t ptimer;
  int64_t net_id;
  void *net_data;
  /* v7: the application's tag (CollApi, P2pApi, Coll, P2p, CeColl); KernelPhase's phase id
   * and name (channel and ptimer above) */
  uint64_t user_tag;
  uint8_t phase;
  const char *phase_name;
} h_event;

/* Encodes `e` into the descriptor of `abi` (v1: enum codes; v1..v4: one-byte type with the
 * padding after it left as garbage, as NCCL's adapters do; v5+: 64-bit type). Returns the
 * descriptor size. buf must hold 160 bytes. */
size_t h_encode(int abi, const h_event *e, void *buf);
/* NCCL 2.23's enum code of a func/datatype/algo/proto string (-1 if unknown). */
int h_v1_code(const char *kind, const char *s);

/* startEvent; returns the handle the plugin wrote (the harness pre-fills *eHandle with
 * garbage to check that the plugin always writes it). rc_out may be NULL. */
void *h_start(h_plugin *p, void *ctx, const h_event *e, int *rc_out);
/* ---- time ----------------------------------------------------------------------------- */
uint64_t h_realtime_ns(void);
uint64_t h_monotonic_ns(void);
/* Sleeps until CLOCK_MONOTONIC reads t (ns); returns at once if it is past. */
void h_sleep_until_mono(int64_t t);
/* The environment variable k as an integer, def when unset or empty. */
int64_t h_env_i64(const char *k, int64_t def);

/* ---- scenario drivers ----------------------------------------------------------------- */
typedef struct {
  int nchannels;          /* default 2 */
  int network;            /* ProxyOp/ProxyStep per channel and peer */
  int npeers;             /* default 1 */
  int nsteps;             /* proxy steps per op, default 4 */
  int proxy_ctrl;         /* one ProxyCtrl event with states 13..18 per collective */
  int64_t gpu_offset_ns;  /* GPU clock minus host CLOCK_REALTIME (injected) */
  int64_t gpu_delay_ns;   /* how long before the host observation the GPU event happened */
  int64_t kernel_ns;      /* kernel duration on each channel, default 20000 */
  const char *func;       /* default "AllReduce" */
  size_t count;           /* default 1048576 */
  int same_thread_proxy;  /* run the proxy part on the calling thread (no extra thread) */
  int graph_replays;      /* h_drive_coll: the proxy part again this many times with the same
                             collective, as NCCL runs a CUDA graph's captured one at each replay */
  /* v7 */
  uint64_t user_tag;      /* the tag of the collective's API and Coll events (0: none) */
  int64_t sync_wait_ns;   /* KernelPhase initial_sync length per channel (default kernel_ns/4);
                             final_sync is kernel_ns/8, compute the rest */
} h_opts;

/* What a driver actually emitted (the events it started, and of those the ones the plugin
 * answered with a handle), per event type bit position, plus proxy-step states. Accumulates. */
typedef struct {
  long started[16];       /* by cl type index (bit position) */
  long answered[16];      /* of those, the ones the plugin gave a handle that records (not NULL,
                             not a quiet one: event.h CL_ID_QUIET, CL_ID_QUIET_API_*) */
  long states[32];
  long colls, p2ps;       /* collective / p2p operations driven */
  long foreign;
} h_counts;

/* Which events NCCL would emit for a mask (ancestors included, as NCCL activates them). */
int h_mask_wants(int mask, uint64_t type);

/* (a) one collective on nchannels: API events (v5+), Group/Coll on the calling thread, then
 * on a separate proxy thread KernelCh (v3+) and with network ProxyOp/ProxyStep per channel
 * and peer, ProxyCtrl. `seq` is the collective's seqNumber. Follows h_mask like NCCL. */
void h_drive_coll(h_plugin *p, void *ctx, const h_opts *o, uint64_t seq, h_counts *c);
/* (b) a Send and a Recv to `peer` in one group, via P2pApi/P2p (v5+) or P2p (v1..v4). */
void h_drive_sendrecv(h_plugin *p, void *ctx, const h_opts *o, int peer, h_counts *c);
/* (c) `ncomms` communicators on `nthreads` user threads at once, each thread driving
 * `ncoll` collectives on each of its comms (init and finalize included when own_init). */
typedef struct {
  h_plugin *p;
  int nthreads, ncomms_per_thread, ncoll;
  const h_opts *o;
  h_counts total;         /* summed over threads */
} h_multi;
void h_drive_multi(h_multi *m);

/* ---- output directories and trace files -------------------------------------------- */
/* Creates a fresh temp dir and sets COMMLENS_DIR to it. Returns the path (static buffer
 * per call: copy it). */
const char *h_fresh_dir(char *buf, size_t n);
/* Finds the trace file(s) in dir: fills up to max paths (malloc'd), returns the count. */
int h_find_traces(const char *dir, char **paths, int max);
/* Waits (up to 60 s, polling) until dir holds a trace of more than min_bytes: a condition to
 * wait for where a low-priority writer can take seconds under load. 0 once it does, -1 if not. */
int h_wait_trace_bytes(const char *dir, long min_bytes);
/* The same, giving up after `ms` milliseconds. */
int h_wait_trace_bytes_ms(const char *dir, long min_bytes, int ms);
/* Loads the one trace file of dir into *t (CHECK-fails unless there is exactly one and it parses;
 * path_out, if given, receives its path). Returns 0, or -1 after a failed CHECK. */
int h_load_one_trace(const char *dir, tr_trace *t, char *path_out, size_t pn);
/* h_open + h_init of one communicator; a failure is a failed CHECK and exit(1) (child cases). */
void h_open_init(h_plugin *p, int abi, void **ctx);
/* A whole short job through ABI v5: load, init one communicator, drive ncoll collectives
 * (seq 0..ncoll-1, options o or NULL), finalize, unload. */
void h_short_job(int ncoll, const h_opts *o);
/* Finds files in dir whose name ends with suffix; same contract as h_find_traces. */
int h_find_files(const char *dir, const char *suffix, char **paths, int max);
void h_rm_rf(const char *dir);
/* The host name as the plugin puts it into file names. */
void h_host_in_name(char *out, size_t n);
/* The whole file, NUL-terminated (malloc'd, the caller frees); NULL if unreadable. *len, if
 * given, receives its length. */
char *h_read_file(const char *path, size_t *len);

/* ---- the CLI ---------------------------------------------------------------------- */
/* Runs `$COMMLENS_CLI args` (else build/commlens); returns its stdout (malloc'd) and exit
 * status (-1 if it could not run). */
char *h_run_cli(const char *args, int *status);
/* The same under timeout(1) (a hang fails instead of stalling the suite: exit 124), stdout in
 * *out and stderr in *err (both malloc'd, the caller frees). Returns the exit status. */
int h_cli_run(const char *args, char **out, char **err);
/* `commlens report DIR --json`, parsed (owned by the caller); NULL after a failed CHECK. */
json_object *h_report_json(const char *dir);
/* o[k], NULL if o is NULL or has no k. */
json_object *h_json_get(json_object *o, const char *k);

/* ---- fresh-process cases ------------------------------------------------------------ */
/* A child case runs in a process of its own (fork + exec of this program). It reports
 * failures with CHECK/REQUIRE like a test; the exit status says whether any failed. */
typedef void (*h_child_fn)(void);
void h_child_register(const char *name, h_child_fn fn);
#define H_CHILD(name)                                                                      \
  static void name(void);                                                                  \
  __attribute__((constructor)) static void h_reg_##name(void) { h_child_register(#name, name); } \
  static void name(void)
/* Runs child case `name` in a fresh process with `env` ("K=V" strings, NULL-terminated) on
 * top of ours; returns its exit status (128+signal if killed, 124 on timeout). */
int h_spawn(const char *name, const char *const *env);
/* The same started in the background: its pid (the caller waits for it), -1 if fork failed. */
pid_t h_spawn_bg(const char *name, const char *const *env);
/* Waits up to `timeout_s` for child `pid` (a hang detector, not a timing check): 0 once reaped
 * (its wait status in *status), 124 if it was still running then (killed with SIGKILL and
 * reaped), -1 if it cannot be waited for. */
int h_wait_pid(pid_t pid, int timeout_s, int *status);
/* Runs child case `name` in a fresh output directory (COMMLENS_DIR=<fresh><subdir>, subdir
 * may be NULL) with COMMLENS_SUMMARY=off, then the settings of `base` and `extra` (either
 * NULL-terminated or NULL); CHECKs a clean exit. Removes the directory, or keeps and names it
 * when a CHECK failed. */
void h_run_case(const char *name, const char *const *base, const char *const *extra, const char *subdir);
/* main(): dispatches "--child NAME" to a registered case, else runs the suite with tl_main. */
int h_main(const char *suite, int argc, char **argv);
#define H_MAIN(suite) int main(int argc, char **argv) { return h_main(suite, argc, argv); }
#endif
