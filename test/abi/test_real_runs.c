/* test_real_runs.c: the ABI call streams recorded from real NCCL 2.28.3 runs on 2x H200
 * (test/data/real: nvlink, socket, twonode, multicomm, graphsocket on 2x H200, and sharedgpu: two
 * ranks on one H200; two ranks each) replayed through the
 * plugin by commlens-replay (the one next to $COMMLENS_LIB, or $COMMLENS_REPLAY), both ranks
 * of a run at once in fresh processes, at the recorded pace, the plugin's clock reading the
 * recorded times (--virtual-clock): host times, gaps and so the GPU clock calibration are the
 * real run's, however late a loaded machine schedules the replay (at the real clock, a replay
 * running late beside make test's other groups put a GPU span outside the host window). Every expectation is derived from the recording itself
 * (its Coll, P2p, KernelCh and ProxyStep descriptors): exact, without hard-coded counts. */
#include "harness.h"
#include "tr_load.h"
#include "plugin/output/tracks.h"
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#define DATA "test/data/real"
#define PREFIX "nccl2.28.3-h200x2-"
#define MAXC 512                 /* collectives per recording (96 here) */

/* Found by the paced replays of these recordings, and not yet fixed in the plugin (see the
 * notes printed by `build/test/abi/test_real_runs`): a KernelCh held while the device's GPU
 * clock is not calibrated yet (fewer than 32 samples or 100 ms of them) outlives its parent
 * collective, which is then finished without its KernelCh span. Set to 1 with the fix. */
#define KCH_HELD_PARENT_FIXED 1

/* ---- what the recording says ---------------------------------------------------------- */
typedef struct { uint64_t comm; char func[32]; uint64_t seq; } coll_key;
typedef struct {
  coll_key coll[MAXC];
  int ncoll, np2p, nproxy_op, nproxy_step, seq_gaps;
  uint64_t channels[4];          /* KernelCh channelIds, a 256-bit set */
  struct { uint64_t ctx, hash; } comm[16];
  int ncomm;
} rec_facts;

static int hexv(int c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }
static unsigned unhex(const char *s, unsigned char *out, unsigned max) {
  unsigned n = 0;
  for (; s[0] && s[1] && n < max; s += 2) {
    int h = hexv(s[0]), l = hexv(s[1]);
    if (h < 0 || l < 0) break;
    out[n++] = (unsigned char)(h << 4 | l);
  }
  return n;
}
static uint64_t u64_at(const unsigned char *d, unsigned off) { uint64_t v; memcpy(&v, d + off, 8); return v; }

/* Reads the recording (plugin/abi/recorder.c format, ABI v5 descriptors: type@0, coll.seqNumber@24,
 * coll.func@32 as a string reference, kernelCh.channelId@24). 0 on success. */
static int read_recording(const char *path, rec_facts *f) {
  memset(f, 0, sizeof *f);
  gzFile gz = gzopen(path, "rb");
  if (!gz) return -1;
  size_t cap = 1 << 20;
  char *line = malloc(cap), *tok[64];
  while (gzgets(gz, line, (int)cap)) {
    line[strcspn(line, "\n")] = 0;
    int n = 0;
    for (char *p = strtok(line, " "); p && n < 64; p = strtok(NULL, " ")) tok[n++] = p;
    if (n >= 8 && !strcmp(tok[0], "I") && f->ncomm < 16) {
      f->comm[f->ncomm].ctx = strtoull(tok[5], NULL, 16);
      f->comm[f->ncomm++].hash = strtoull(tok[7], NULL, 16);
    }
    if (n < 9 || strcmp(tok[0], "S") || atoi(tok[4]) != 5) continue;
    unsigned char d[128] = {0};
    unhex(tok[7], d, sizeof d);
    uint64_t type = u64_at(d, 0), ctx = strtoull(tok[5], NULL, 16);
    if (type == CLABI_EV_P2P) f->np2p++;
    if (type == CLABI_EV_PROXY_OP) f->nproxy_op++;
    if (type == CLABI_EV_PROXY_STEP) f->nproxy_step++;
    if (type == CLABI_EV_KERNEL_CH) f->channels[d[24] / 64] |= 1ull << (d[24] % 64);
    if (type != CLABI_EV_COLL || f->ncoll == MAXC) continue;
    coll_key *k = &f->coll[f->ncoll++];
    memset(k, 0, sizeof *k);
    k->seq = u64_at(d, 24);
    for (int i = 0; i < f->ncomm; i++) if (f->comm[i].ctx == ctx) k->comm = f->comm[i].hash;
    for (int i = 9; i < n; i++)                      /* "32:<hex of the func string>" */
      if (!strncmp(tok[i], "32:", 3)) unhex(tok[i] + 3, (unsigned char *)k->func, sizeof k->func - 1);
  }
  free(line);
  gzclose(gz);
  /* seqNumbers per (comm, func) must be exactly 0..n-1: count the values that break this */
  for (int i = 0; i < f->ncoll; i++) {
    int below = 0, same = 0;
    for (int j = 0; j < f->ncoll; j++) {
      if (f->coll[j].comm != f->coll[i].comm || strcmp(f->coll[j].func, f->coll[i].func)) continue;
      if (f->coll[j].seq < f->coll[i].seq) below++;
      if (f->coll[j].seq == f->coll[i].seq) same++;
    }
    if (same != 1 || (uint64_t)below != f->coll[i].seq) f->seq_gaps++;
  }
  return 0;
}

/* ---- running the replay tool and the CLI ------------------------------------------------ */
/* $ENV, else NAME next to the library under test (build/, build/asan/, ...), else build/NAME. */
static const char *tool(const char *env, const char *name, char *buf, size_t n) {
  const char *v = getenv(env), *lib = h_lib_path(), *slash = strrchr(lib, '/');
  if (v && *v) return v;
  if (slash) snprintf(buf, n, "%.*s/%s", (int)(slash - lib), lib, name);
  else snprintf(buf, n, "%s", name);
  return buf;
}

/* Starts argv[0] with `env` ("K=V" sets, "K" unsets) on top of ours; stdout to `out` if set. */
static pid_t start(char *const argv[], const char *const *env, const char *out) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid != 0) return pid;
  for (int i = 0; env && env[i]; i++) {
    char kv[1024];
    snprintf(kv, sizeof kv, "%s", env[i]);
    char *eq = strchr(kv, '=');
    if (!eq) { unsetenv(kv); continue; }
    *eq = 0;
    setenv(kv, eq + 1, 1);
  }
  if (out && !freopen(out, "w", stdout)) _exit(126);
  execv(argv[0], argv);
  fprintf(stderr, "  cannot run %s: %s\n", argv[0], strerror(errno));
  _exit(127);
}
/* Waits for pid, killing it after 60 s. Exit status, 128+signal, or 124 on timeout. */
static int finish(pid_t pid) {
  if (pid < 0) return -1;
  int status = 0, rc = h_wait_pid(pid, 60, &status);
  if (rc) return rc;
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

/* ---- checks on one rank's trace ----------------------------------------------------------- */
typedef struct { coll_key k[MAXC]; int n; } key_set;   /* collectives with a coll_gpu slice */

static int key_eq(const coll_key *a, uint64_t comm, const char *func, uint64_t seq) {
  return a->comm == comm && a->seq == seq && !strcmp(a->func, func);
}
static uint64_t comm_arg(json_object *ev) {
  const char *c = tr_arg_str(ev, "comm");
  return c ? strtoull(c, NULL, 16) : 0;
}
static int is_host_cat(const char *c) {
  static const char *host[] = {"api", "group", "coll", "p2p", "proxy_op", "proxy_step",
                               "proxy_state", "proxy_ctrl", "net"};
  for (size_t i = 0; c && i < sizeof host / sizeof host[0]; i++) if (!strcmp(c, host[i])) return 1;
  return 0;
}

static void check_rank(const char *mode, int rank, const rec_facts *f, const tr_trace *t, key_set *timed) {
  int64_t v;
  /* (a) every collective the recording issued appears once as a `coll` slice, and every p2p */
  static int seen[MAXC];
  memset(seen, 0, sizeof seen);
  int extra = 0, np2p = 0, nkch_orphan = 0;
  uint64_t chans[4] = {0};
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  long nstep = 0, step_no_states = 0;
  timed->n = 0;
  for (size_t i = 0; i < t->n; i++) {
    json_object *ev = tr_event(t, i);
    const char *cat = tr_cat(ev);
    if (tr_ph(ev) != 'X' || !cat) continue;
    int64_t ts, dur;
    if (tr_ts_ns(ev, &ts) || tr_dur_ns(ev, &dur)) continue;   /* tr_load rejects such traces */
    if (is_host_cat(cat)) { if (ts < lo) lo = ts; if (ts + dur > hi) hi = ts + dur; }
    if (!strcmp(cat, "coll")) {
      int64_t seq = -1;
      tr_arg_i64(ev, "seq", &seq);
      int j;
      for (j = 0; j < f->ncoll && !key_eq(&f->coll[j], comm_arg(ev), tr_name(ev), (uint64_t)seq); j++) {}
      if (j < f->ncoll) seen[j]++; else extra++;
    } else if (!strcmp(cat, "p2p")) {
      np2p++;
    } else if (!strcmp(cat, "kernel_ch")) {
      int64_t ch = -1;
      if (tr_arg_i64(ev, "channel", &ch) == 0 && ch >= 0 && ch < 256) chans[ch / 64] |= 1ull << (ch % 64);
      if (!tr_arg_str(ev, "func")) nkch_orphan++;
    } else if (!strcmp(cat, "proxy_step") && !tr_arg_bool(ev, "phase")) {
      nstep++;
      static const char *need[] = {"gpu_wait_ns", "peer_wait_ns", "send_wait_ns", "recv_wait_ns",
                                   "flush_wait_ns", "recv_gpu_wait_ns"};
      for (size_t k = 0; k < sizeof need / sizeof need[0]; k++)
        if (tr_arg_i64(ev, need[k], &v)) { step_no_states++; break; }
    }
  }
  int missing = 0, dup = 0;
  for (int j = 0; j < f->ncoll; j++) { if (!seen[j]) missing++; if (seen[j] > 1) dup++; }
  /* the example issued 4 collectives x 24 (multicomm: AllReduce x 8 on each of 3 comms;
   * sharedgpu: AllReduce x 24), numbered 0..n-1 per (comm, func): the recording must say so,
   * then the trace must match it exactly */
  int want_colls = strcmp(mode, "multicomm") && !strstr(mode, "sharedgpu") ? 96 : 24;
  CHECK(f->ncoll == want_colls && f->seq_gaps == 0,
        "%s r%d: recording has %d collectives (want %d), %d seqNumbers not 0..n-1 per (comm, func)",
        mode, rank, f->ncoll, want_colls, f->seq_gaps);
  CHECK(!missing && !dup && !extra, "%s r%d: of %d recorded collectives %d missing, %d twice; %d coll slices not recorded",
        mode, rank, f->ncoll, missing, dup, extra);
  CHECK(np2p == f->np2p && f->np2p == 48, "%s r%d: %d p2p slices, %d P2p recorded (48 issued)", mode, rank, np2p, f->np2p);
  /* (b) one channel track per channel NCCL used */
  CHECK(!memcmp(chans, f->channels, sizeof chans), "%s r%d: kernel_ch channels %llx:%llx differ from the recording's %llx:%llx",
        mode, rank, (unsigned long long)chans[0], (unsigned long long)chans[1],
        (unsigned long long)f->channels[0], (unsigned long long)f->channels[1]);
  /* (c) GPU spans inside the host-observed window, each 0 < dur < 1 s */
  int outside = 0, bad_dur = 0;
  for (size_t i = 0; i < t->n; i++) {
    json_object *ev = tr_event(t, i);
    const char *cat = tr_cat(ev);
    int64_t ts, dur, seq = -1;
    if (tr_ph(ev) != 'X' || !cat || strcmp(cat, "coll_gpu") || tr_ts_ns(ev, &ts) || tr_dur_ns(ev, &dur)) continue;
    tr_arg_i64(ev, "seq", &seq);
    if ((ts < lo || ts + dur > hi) && !outside++)
      fprintf(stderr, "  %s r%d: %s seq %lld at [%lld, %lld] ns, outside the host window [%lld, %lld]\n", mode, rank,
              tr_name(ev), (long long)seq, (long long)ts, (long long)(ts + dur), (long long)lo, (long long)hi);
    if (dur <= 0 || dur >= 1000000000) bad_dur++;
    if (!tr_arg(ev, "p2p_peer") && seq >= 0 && timed->n < MAXC) {
      coll_key *k = &timed->k[timed->n++];
      memset(k, 0, sizeof *k);
      k->comm = comm_arg(ev);
      k->seq = (uint64_t)seq;
      snprintf(k->func, sizeof k->func, "%s", tr_name(ev));
    }
  }
  CHECK(tr_count(t, 'X', "coll_gpu") > 0, "%s r%d: no coll_gpu slices", mode, rank);
  CHECK(!outside && !bad_dur, "%s r%d: %d coll_gpu slices outside the host window, %d with dur <= 0 or >= 1 s",
        mode, rank, outside, bad_dur);
  /* (d) proxy steps: exactly the recorded ones, each with its per-state breakdown */
  int network = !strcmp(mode, "socket") || !strcmp(mode, "twonode") || strstr(mode, "sharedgpu");
  CHECK(network ? f->nproxy_step > 0 : f->nproxy_step == 0, "%s r%d: %d ProxyStep events recorded", mode, rank, f->nproxy_step);
  CHECK(nstep == f->nproxy_step && !step_no_states, "%s r%d: %ld proxy_step slices (%ld without state args), %d recorded",
        mode, rank, nstep, step_no_states, f->nproxy_step);
  /* (f) a rank reads on one screen: overlapping proxy ops, steps and channel kernels share one
   * async track per (communicator, channel, kind), and the detail stops below the budget
   * (tracks.h), leaving room for what comes later; each communicator has one enqueue and one
   * GPU track (they carry the flows), their overlaps and the communicators past the budget go
   * to shared tracks of each kind. Only the shared overlap tracks' further lanes (how many
   * collectives of all communicators overlap at once, raised by the order the writer read them
   * in: 3 more under load than alone) may go past it; there are never more than 8. On main
   * before the budget (a thread track per lane) socket had 36 and 32, twonode 34 and 32,
   * nvlink 58 and 60, multicomm 168 and 165; with the budget on the detail alone, multicomm had
   * 29 (docs/decisions/0034-track-budget.md). */
  int nasync = 0, late = 0, ntop = tr_top_tracks(t, rank, &nasync, &late), lanes = tr_overlap_lanes(t, rank);
  fprintf(stderr, "  note: %s r%d: %d top-level tracks, %d of them async, %d thread tracks made after the last "
          "async one, %d further overlap lanes\n", mode, rank, ntop, nasync, late, lanes);
  CHECK(nasync > 0 && ntop - lanes <= (int)CL_TRACK_BUDGET && lanes <= 8,
        "%s r%d: %d top-level tracks (%d made after the last async one, %d further overlap lanes), budget %u", mode,
        rank, ntop, late, lanes, CL_TRACK_BUDGET);
  /* (e) lossless and complete (well-formed, nesting tracks: tr_load checked them) */
  CHECK(tr_stats_i64(t, "dropped", &v) == 0 && v == 0, "%s r%d: dropped %lld", mode, rank, (long long)v);
  json_object *fin = NULL;
  CHECK(t->stats && json_object_object_get_ex(t->stats, "final", &fin) && json_object_get_boolean(fin),
        "%s r%d: commlensStats.final is not true", mode, rank);
  CHECK(tr_stats_i64(t, "stale_handles", &v) == 0 && v == 0, "%s r%d: %lld stale handles (the recording re-stops none)",
        mode, rank, (long long)v);
  CHECK(tr_stats_i64(t, "open_events", &v) == 0 && v == 0, "%s r%d: %lld events never stopped", mode, rank, (long long)v);
  CHECK(tr_header_i64(t, "rank", &v) == 0 && v == rank, "%s r%d: header rank %lld", mode, rank, (long long)v);
  /* the known KernelCh bug (see KCH_HELD_PARENT_FIXED): reported, enforced once fixed */
  if (nkch_orphan) fprintf(stderr, "  note: %s r%d: %d kernel_ch slices lost their collective (held for clock calibration)\n",
                           mode, rank, nkch_orphan);
  if (KCH_HELD_PARENT_FIXED)
    CHECK(nkch_orphan == 0, "%s r%d: %d kernel_ch slices without their collective", mode, rank, nkch_orphan);
}

/* ---- the cross-rank CLI checks ------------------------------------------------------------ */
static json_object *get(json_object *o, const char *k) { json_object *v = NULL; json_object_object_get_ex(o, k, &v); return v; }

/* Collectives with a GPU span on both ranks: what `commlens report` can match. */
static int matched_both(const key_set *a, const key_set *b) {
  int n = 0;
  for (int i = 0; i < a->n; i++)
    for (int j = 0; j < b->n; j++)
      if (key_eq(&b->k[j], a->k[i].comm, a->k[i].func, a->k[i].seq)) { n++; break; }
  return n;
}

/* Each replay runs on a timeline of its own (commlens-replay's clock id), so the report must
 * align the two ranks (one clock each, joined by causal bounds), never take them as one clock
 * because they ran on one host boot; and the verdict must rest on collectives where the last
 * arrival makes everyone wait: no Broadcast (its root runs ahead of a late receiver: the socket
 * recording's rank 1 up to 1.5 ms behind in 24 Broadcasts, called one-off stalls before) and no
 * GPU start after a peer's end (nvlink rank 1's first AllReduces, 17 ms "stalls"). */
static void check_verdict(const char *mode, json_object *rep, const rec_facts *f) {
  json_object *cm = get(rep, "clock_model"), *clocks = get(cm, "clocks"), *pairs = get(cm, "pairs");
  int nc = clocks ? (int)json_object_array_length(clocks) : 0;
  CHECK(nc == 2, "%s: %d clocks in the report's clock model, want 2 (one per replay)", mode, nc);
  for (int i = 0; i < nc; i++) {
    const char *id = json_object_get_string(get(json_object_array_get_idx(clocks, i), "clock_id"));
    CHECK(id && !strncmp(id, "replay-", 7), "%s: clock %d has clock id %s", mode, i, id ? id : "(none)");
  }
  json_object *p0 = pairs && json_object_array_length(pairs) ? json_object_array_get_idx(pairs, 0) : NULL;
  const char *src = p0 ? json_object_get_string(get(p0, "source")) : NULL;
  CHECK(src && !strcmp(src, "causal bounds"), "%s: the two replays joined by %s", mode, src ? src : "nothing");
  int nbcast = 0;
  for (int i = 0; i < f->ncoll; i++) nbcast += !strcmp(f->coll[i].func, "Broadcast");
  json_object *v = get(rep, "verdict"), *stalls = get(v, "stalls");
  int left = json_object_get_int(get(get(v, "counts"), "not_causal"));
  CHECK(left == nbcast, "%s: %d instances left out as not causal, the recording has %d Broadcasts", mode, left, nbcast);
  for (size_t i = 0; stalls && i < json_object_array_length(stalls); i++) {
    json_object *s = json_object_array_get_idx(stalls, i);
    const char *fn = json_object_get_string(get(s, "func"));
    int64_t margin = json_object_get_int64(get(s, "margin_ns"));
    CHECK(fn && strcmp(fn, "Broadcast") && margin < 5000000, "%s: stall of rank %d at %s #%d by %lld ns", mode,
          json_object_get_int(get(s, "rank")), fn ? fn : "?", json_object_get_int(get(s, "seq")), (long long)margin);
  }
  /* replayed with every event: each rank's channels judged (KernelCh ends); nothing slow was
   * planted, so no channel is named slow */
  json_object *ch = get(v, "channels"), *cr = get(ch, "ranks");
  int ncr = cr ? (int)json_object_array_length(cr) : 0;
  CHECK(ncr == 2, "%s: %d ranks with a channel verdict, want 2: %s", mode, ncr, json_object_get_string(get(ch, "line")));
  for (int i = 0; i < ncr; i++) {
    json_object *cv = get(json_object_array_get_idx(cr, i), "verdict");
    const char *kind = json_object_get_string(get(cv, "kind"));
    CHECK(kind && strcmp(kind, "straggler") && strcmp(kind, "no_data") &&
          !strcmp(json_object_get_string(get(cv, "evidence")), "channel_end"),
          "%s: rank %d's channels: %s", mode, json_object_get_int(get(json_object_array_get_idx(cr, i), "rank")),
          json_object_get_string(get(cv, "line")));
  }
}

static void check_cli(const char *mode, const char *dir, const rec_facts *f, const key_set timed[2]) {
  char cli_buf[512], out[600], rep_path[600], merged[600];
  char *cli = (char *)tool("COMMLENS_CLI", "commlens", cli_buf, sizeof cli_buf);
  snprintf(rep_path, sizeof rep_path, "%s.report.json", dir);
  snprintf(merged, sizeof merged, "%s.merged.json", dir);
  char *rep_argv[] = {cli, "report", (char *)dir, "--json", NULL};
  int rc = finish(start(rep_argv, NULL, rep_path));
  CHECK(rc == 0, "%s: `commlens report %s --json` exited %d", mode, dir, rc);
  json_object *rep = json_object_from_file(rep_path);
  REQUIRE(rep, "%s: report --json output is not JSON (%s)", mode, rep_path);
  json_object *ranks = get(rep, "ranks");
  int have[2] = {0, 0}, nr = ranks ? (int)json_object_array_length(ranks) : 0;
  for (int i = 0; i < nr; i++) {
    int r = json_object_get_int(get(json_object_array_get_idx(ranks, i), "rank"));
    if (r == 0 || r == 1) have[r]++;
  }
  CHECK(nr == 2 && have[0] == 1 && have[1] == 1, "%s: report lists %d ranks (rank 0: %d, rank 1: %d)",
        mode, nr, have[0], have[1]);
  int matched = json_object_get_int(get(rep, "instances_matched"));
  int want = matched_both(&timed[0], &timed[1]);
  CHECK(matched == want, "%s: report matched %d collective instances; %d have a GPU span on both ranks", mode, matched, want);
  if (want != f->ncoll)
    fprintf(stderr, "  note: %s: %d of %d collectives have a GPU span on both ranks\n", mode, want, f->ncoll);
  check_verdict(mode, rep, f);
  json_object_put(rep);
  snprintf(out, sizeof out, "%s", merged);
  char *merge_argv[] = {cli, "merge", (char *)dir, "-o", out, NULL};
  rc = finish(start(merge_argv, NULL, "/dev/null"));
  CHECK(rc == 0, "%s: `commlens merge %s -o %s` exited %d", mode, dir, out, rc);
  tr_trace m;                              /* tr_load: the merged tracks nest too */
  char err[1024];
  REQUIRE(tr_load(&m, merged, err, sizeof err) == 0, "%s: the merged trace: %s", mode, err);
  int pids[2] = {0, 0}, other = 0;
  for (size_t i = 0; i < m.n; i++) {
    json_object *p = get(tr_event(&m, i), "pid");
    int pid = p ? json_object_get_int(p) : -1;
    if (pid == 0 || pid == 1) pids[pid]++; else if (p) other++;
  }
  CHECK(pids[0] > 0 && pids[1] > 0 && !other, "%s: merged trace has %d events of pid 0, %d of pid 1, %d of others",
        mode, pids[0], pids[1], other);
  for (int r = 0; r < 2; r++) {          /* the merge keeps each rank's tracks */
    int nasync = 0, late = 0, ntop = tr_top_tracks(&m, r, &nasync, &late), lanes = tr_overlap_lanes(&m, r);
    CHECK(nasync > 0 && ntop - lanes <= (int)CL_TRACK_BUDGET && lanes <= 8,
          "%s: merged rank %d has %d top-level tracks (%d async, %d late, %d further overlap lanes)", mode, r, ntop,
          nasync, late, lanes);
  }
  size_t all_async = tr_count(&m, 'X', "proxy_op") + tr_count(&m, 'X', "kernel_ch");
  /* the window: the first half of the ops' and channel kernels' time, in ms after the first event */
  int64_t t0 = INT64_MAX, lo = INT64_MAX, hi = INT64_MIN, ts;
  for (size_t i = 0; i < m.n; i++) {
    json_object *ev = tr_event(&m, i);
    const char *cat = tr_cat(ev);
    if (tr_ts_ns(ev, &ts)) continue;
    if (ts < t0) t0 = ts;
    if (tr_ph(ev) == 'X' && cat && (!strcmp(cat, "proxy_op") || !strcmp(cat, "kernel_ch"))) {
      if (ts < lo) lo = ts;
      if (ts > hi) hi = ts;
    }
  }
  tr_free(&m);
  REQUIRE(all_async > 0 && hi > lo, "%s: no async ops or channel kernels merged", mode);
  char window[64];
  snprintf(window, sizeof window, "%.3f:%.3f", (double)(lo - t0) / 1e6, (double)(lo + (hi - lo) / 2 - t0) / 1e6);
  /* a window keeps or leaves out each async slice whole (tr_load: every "b" closed, no "e"
   * without its "b"); its ops and channel kernels are fewer, not none */
  char *win_argv[] = {cli, "merge", (char *)dir, "--window", window, "-o", out, NULL};
  rc = finish(start(win_argv, NULL, "/dev/null"));
  CHECK(rc == 0, "%s: `commlens merge --window %s` exited %d", mode, window, rc);
  REQUIRE(tr_load(&m, merged, err, sizeof err) == 0, "%s: the windowed merge: %s", mode, err);
  size_t win_async = tr_count(&m, 'X', "proxy_op") + tr_count(&m, 'X', "kernel_ch");
  CHECK(win_async > 0 && win_async < all_async, "%s: %zu async ops and channel kernels in the window, %zu in all", mode,
        win_async, all_async);
  tr_free(&m);
  /* pftrace carries every async slice (no "left out" line) as lanes under one group per rank;
   * tools/track_count.py --check holds its slices to begin/end per track in time order and
   * counts each rank's top-level tracks */
  char cmd[2048], pft[700], errf[700], line[512];
  snprintf(pft, sizeof pft, "%s.merged.pftrace", dir);
  snprintf(errf, sizeof errf, "%s.merge.err", dir);
  snprintf(cmd, sizeof cmd, "'%s' merge '%s' -o '%s' 2>'%s'", cli, dir, pft, errf);
  char *sh_argv[] = {"/bin/sh", "-c", cmd, NULL};
  rc = finish(start(sh_argv, NULL, "/dev/null"));
  CHECK(rc == 0, "%s: `%s` exited %d", mode, cmd, rc);
  FILE *ef = fopen(errf, "r");
  int left_out = 0;
  while (ef && fgets(line, sizeof line, ef)) if (strstr(line, "left out")) { left_out = 1; fprintf(stderr, "  %s", line); }
  if (ef) fclose(ef);
  CHECK(!left_out, "%s: the pftrace merge left events out", mode);
  char max[16];
  snprintf(max, sizeof max, "%u", CL_TRACK_BUDGET);
  char *py_argv[] = {"/usr/bin/env", "python3", "tools/track_count.py", "--check", "--max", max, pft, NULL};
  rc = finish(start(py_argv, NULL, NULL));
  CHECK(rc == 0, "%s: tools/track_count.py --check --max %s %s exited %d", mode, max, pft, rc);
}

/* ---- one recorded run: both ranks replayed at once into one directory --------------------- */
/* Replays both ranks of `mode` into base/mode (base: a fresh directory); 0, or -1 (failed). */
static int replay_pair(const char *mode, char base[256], char dir[300], char rec[2][300]) {
  char envdir[400], replay_buf[512];
  char *replay = (char *)tool("COMMLENS_REPLAY", "commlens-replay", replay_buf, sizeof replay_buf);
  if (access(replay, X_OK) != 0) { CHECK(0, "%s not built (make replay)", replay); return -1; }
  h_fresh_dir(base, 256);
  if (!base[0]) { CHECK(0, "no temp dir"); return -1; }
  snprintf(dir, 300, "%s/%s", base, mode);
  snprintf(envdir, sizeof envdir, "COMMLENS_DIR=%s", dir);
  pid_t pid[2];
  for (int r = 0; r < 2; r++) {
    /* a mode is a recording's name after PREFIX, or a whole name (another machine's) */
    snprintf(rec[r], 300, DATA "/%s%s-r%d.rec.gz", strncmp(mode, "nccl", 4) ? PREFIX : "", mode, r);
    if (access(rec[r], R_OK) != 0) { CHECK(0, "missing recording %s", rec[r]); return -1; }
  }
  for (int r = 0; r < 2; r++) {
    const char *env[] = {envdir, r ? "RANK=1" : "RANK=0", "COMMLENS_CUPTI=0", "COMMLENS_EVENTS=full",
                         "COMMLENS_SUMMARY=off", "COMMLENS_GZIP=0", "COMMLENS_RECORD", "COMMLENS_WINDOW", NULL};
    char *argv[] = {replay, "--virtual-clock", rec[r], NULL};
    pid[r] = start(argv, env, "/dev/null");
  }
  int bad = 0;
  for (int r = 0; r < 2; r++) {
    int rc = finish(pid[r]);
    CHECK(rc == 0, "%s r%d: commlens-replay %s exited %d", mode, r, rec[r], rc);
    bad |= rc != 0;
  }
  return bad ? -1 : 0;
}

static void run_mode(const char *mode, int cli_checks) {
  char base[256], dir[300], rec[2][300];
  REQUIRE(replay_pair(mode, base, dir, rec) == 0, "%s: replay failed", mode);
  static rec_facts facts[2];
  static key_set timed[2];
  char *paths[8];
  int n = h_find_traces(dir, paths, 8);
  CHECK(n == 2, "%s: %d trace files in %s", mode, n, dir);
  for (int i = 0; i < n; i++) {
    tr_trace t;
    char err[512];
    int64_t rank = -1;
    if (tr_load(&t, paths[i], err, sizeof err)) { CHECK(0, "%s", err); free(paths[i]); continue; }
    tr_header_i64(&t, "rank", &rank);
    if (rank == 0 || rank == 1) {
      REQUIRE(read_recording(rec[rank], &facts[rank]) == 0, "cannot read %s", rec[rank]);
      check_rank(mode, (int)rank, &facts[rank], &t, &timed[rank]);
    } else {
      CHECK(0, "%s: %s has rank %lld", mode, paths[i], (long long)rank);
    }
    tr_free(&t);
    free(paths[i]);
  }
  if (cli_checks && n == 2) check_cli(mode, dir, &facts[0], timed);
  if (!tl_cur_failed) h_rm_rf(base);
  else fprintf(stderr, "  kept %s\n", base);
}

TL_TEST(real_nvlink) { run_mode("nvlink", 1); }
TL_TEST(real_socket) { run_mode("socket", 1); }
TL_TEST(real_twonode) { run_mode("twonode", 0); }
TL_TEST(real_multicomm) { run_mode("multicomm", 0); }
/* Two ranks sharing one H200 as two emulated nodes (sockets), recorded with each
 * communicator's GPU (examples/gpu_one_gpu.sh): the replay makes that GPU current at init
 * (test/fakes/fake_cuda.c), so each rank's trace is its GPU's, named -g0. */
TL_TEST(real_shared_gpu) {
  run_mode("nccl2.28.3-h200x1-sharedgpu", 1);
  char base[256], dir[300], rec[2][300];
  REQUIRE(replay_pair("nccl2.28.3-h200x1-sharedgpu", base, dir, rec) == 0, "replay failed");
  char *paths[8];
  int n = h_find_traces(dir, paths, 8);
  for (int i = 0; i < n; i++) {
    tr_trace t;
    char err[512];
    int64_t dev = -2;
    CHECK(strstr(paths[i], "-g0.trace.json") != NULL, "%s: not named after its GPU", paths[i]);
    if (tr_load(&t, paths[i], err, sizeof err) == 0) {
      tr_header_i64(&t, "cuda_device", &dev);
      CHECK(dev == 0, "%s: cuda_device %lld, want 0 (recorded)", paths[i], (long long)dev);
      tr_free(&t);
    } else CHECK(0, "%s", err);
    free(paths[i]);
  }
  CHECK(n == 2, "%d trace files", n);
  if (!tl_cur_failed) h_rm_rf(base);
}

/* One process driving two GPUs (2x H100, NCCL 2.28.3, examples/gpu_multigpu.sh RECORD=1):
 * nccl-tests -g 2 (one thread, both GPUs in one group), -t 2 -g 1 (a thread per GPU) and JAX psum
 * on both devices. One recording holds both ranks (two contexts of one communicator hash); the
 * replay must give each GPU its own trace, named after its GPU, with its own rank, holding
 * exactly the collectives NCCL started on that context: no rank of one process leaks into the
 * other's trace. */
static void one_process_two_gpus(const char *name) {
  char rec[300], base[256], dir[300], envdir[400], replay_buf[512];
  snprintf(rec, sizeof rec, DATA "/%s.rec.gz", name);
  REQUIRE(access(rec, R_OK) == 0, "missing recording %s", rec);
  /* per context: its rank, its device (from the init line) and how many collectives it started */
  struct { uint64_t ctx; int rank, dev, ncoll; } cx[4];
  int ncx = 0;
  gzFile gz = gzopen(rec, "rb");
  REQUIRE(gz != NULL, "cannot open %s", rec);
  static char line[1 << 16];
  while (gzgets(gz, line, (int)sizeof line)) {
    char *tok[16];
    int n = 0;
    line[strcspn(line, "\n")] = 0;
    for (char *p = strtok(line, " "); p && n < 16; p = strtok(NULL, " ")) tok[n++] = p;
    if (n >= 12 && !strcmp(tok[0], "I") && ncx < 4) {
      cx[ncx].ctx = strtoull(tok[5], NULL, 16);
      cx[ncx].rank = atoi(tok[10]);
      cx[ncx].dev = atoi(tok[11]);
      cx[ncx++].ncoll = 0;
    } else if (n >= 8 && !strcmp(tok[0], "S") && atoi(tok[4]) >= 5) {
      unsigned char d[16] = {0};
      unhex(tok[7], d, sizeof d);
      uint64_t ctx = strtoull(tok[5], NULL, 16), type = u64_at(d, 0);
      for (int i = 0; i < ncx; i++)   /* a copy-engine collective (v6+) is a collective too */
        if (cx[i].ctx == ctx && (type == CLABI_EV_COLL || type == CLABI_EV_CE_COLL)) cx[i].ncoll++;
    }
  }
  gzclose(gz);
  REQUIRE(ncx == 2 && cx[0].rank != cx[1].rank && cx[0].dev != cx[1].dev,
          "%s: %d contexts (want two ranks on two GPUs)", name, ncx);
  char *replay = (char *)tool("COMMLENS_REPLAY", "commlens-replay", replay_buf, sizeof replay_buf);
  REQUIRE(access(replay, X_OK) == 0, "%s not built (make replay)", replay);
  h_fresh_dir(base, sizeof base);
  REQUIRE(base[0], "no temp dir");
  snprintf(dir, sizeof dir, "%s/out", base);
  snprintf(envdir, sizeof envdir, "COMMLENS_DIR=%s", dir);
  const char *env[] = {envdir, "RANK", "COMMLENS_RANK", "COMMLENS_CUPTI=0", "COMMLENS_SUMMARY=off",
                       "COMMLENS_GZIP=0", "COMMLENS_RECORD", "COMMLENS_WINDOW", NULL};
  char *argv[] = {replay, "--virtual-clock", rec, NULL};
  int rc = finish(start(argv, env, "/dev/null"));
  REQUIRE(rc == 0, "%s: commlens-replay exited %d", name, rc);
  char *paths[8];
  int n = h_find_traces(dir, paths, 8), seen = 0;
  CHECK(n == 2, "%s: %d trace files, want one per GPU", name, n);
  for (int i = 0; i < n; i++) {
    tr_trace t;
    char err[512];
    int64_t rank = -1, dev = -1;
    if (tr_load(&t, paths[i], err, sizeof err)) { CHECK(0, "%s", err); free(paths[i]); continue; }
    tr_header_i64(&t, "rank", &rank);
    tr_header_i64(&t, "cuda_device", &dev);
    int k = -1, colls = 0;
    for (int c = 0; c < ncx; c++) if (cx[c].rank == rank) k = c;
    for (size_t e = 0; e < t.n; e++) {
      json_object *ev = tr_event(&t, e);
      const char *cat = tr_cat(ev);
      if (tr_ph(ev) == 'X' && cat && !strcmp(cat, "coll")) colls++;
    }
    if (k < 0) CHECK(0, "%s: %s has rank %lld, recorded none such", name, paths[i], (long long)rank);
    else {
      char want[32];
      snprintf(want, sizeof want, "-g%d.trace.json", cx[k].dev);
      CHECK(dev == cx[k].dev && strstr(paths[i], want), "%s: rank %lld's trace %s (device %lld), want GPU %d",
            name, (long long)rank, paths[i], (long long)dev, cx[k].dev);
      CHECK(colls == cx[k].ncoll && colls > 0, "%s: rank %lld has %d collective slices, NCCL started %d",
            name, (long long)rank, colls, cx[k].ncoll);
      seen |= 1 << k;
    }
    tr_free(&t);
    free(paths[i]);
  }
  CHECK(seen == 3, "%s: not every rank has its trace", name);
  if (!tl_cur_failed) h_rm_rf(base);
  else fprintf(stderr, "  kept %s\n", base);
}
TL_TEST(real_one_process_two_gpus_one_thread) { one_process_two_gpus("nccl2.28.3-h100x2-oneproc-nccltests-g2"); }
TL_TEST(real_one_process_two_gpus_thread_each) { one_process_two_gpus("nccl2.28.3-h100x2-oneproc-nccltests-t2"); }
TL_TEST(real_one_process_two_gpus_jax) { one_process_two_gpus("nccl2.28.3-h100x2-oneproc-jax-psum-delay"); }
/* NCCL 2.30.7's copy-engine AllGathers (ABI v6 CeColl/CeBatch): each a collective on its GPU's trace */
TL_TEST(real_one_process_copy_engine) { one_process_two_gpus("nccl2.30.7-h200x2-oneproc-ce-allgather"); }

/* PyTorch DDP, four ranks on one H100 as four emulated nodes (sockets; NCCL 2.28.9 in PyTorch
 * 2.11, default events; examples/gpu_verdict.sh persistent_ddp with COMMLENS_RECORD): DDP
 * launches its allreduces from the autograd thread, which starts after NCCL's proxy thread, so
 * the drain reads a ProxyOp's start before its collective's. Every ProxyOp NCCL started must
 * be drawn as its collective's (its seq and func), none left unlinked when the collective's
 * channels are done before a slow recv op is (9-35% of them were, per rank). */
TL_TEST(real_ddp_proxy_ops_reach_their_collectives) {
  char replay_buf[512], base[256];
  char *replay = (char *)tool("COMMLENS_REPLAY", "commlens-replay", replay_buf, sizeof replay_buf);
  REQUIRE(access(replay, X_OK) == 0, "%s not built (make replay)", replay);
  h_fresh_dir(base, sizeof base);
  REQUIRE(base[0], "no temp dir");
  char rec[4][300], dir[4][300], envdir[4][400];
  static rec_facts facts[4];
  int nops[4], ncoll[4];
  pid_t pid[4];
  for (int r = 0; r < 4; r++) {                 /* what NCCL started, then the replays, at once */
    snprintf(rec[r], sizeof rec[r], DATA "/nccl2.28.9-h100x1-ddp4-r%d.rec.gz", r);
    snprintf(dir[r], sizeof dir[r], "%s/r%d", base, r);
    snprintf(envdir[r], sizeof envdir[r], "COMMLENS_DIR=%.299s", dir[r]);
    REQUIRE(read_recording(rec[r], &facts[r]) == 0, "cannot read %s", rec[r]);
    nops[r] = facts[r].nproxy_op;
    ncoll[r] = facts[r].ncoll;
    REQUIRE(nops[r] > 0 && ncoll[r] > 0 && ncoll[r] < MAXC, "%s: %d proxy ops, %d collectives", rec[r], nops[r],
            ncoll[r]);
    const char *env[] = {envdir[r], "RANK", "COMMLENS_RANK", "COMMLENS_CUPTI=0", "COMMLENS_SUMMARY=off",
                         "COMMLENS_GZIP=0", "COMMLENS_RECORD", "COMMLENS_WINDOW", "COMMLENS_OUTPUT", NULL};
    char *argv[] = {replay, "--virtual-clock", rec[r], NULL};
    pid[r] = start(argv, env, "/dev/null");
  }
  for (int r = 0; r < 4; r++) {
    int rc = finish(pid[r]);
    CHECK(rc == 0, "%s: commlens-replay exited %d", rec[r], rc);
    char *paths[4];
    int nt = h_find_traces(dir[r], paths, 4);
    CHECK(nt == 1, "%s: %d trace files", rec[r], nt);
    for (int i = 0; i < nt; i++) {
      tr_trace t;
      char err[512];
      if (tr_load(&t, paths[i], err, sizeof err)) { CHECK(0, "%s", err); free(paths[i]); continue; }
      int ops = 0, linked = 0, colls = 0;
      for (size_t e = 0; e < t.n; e++) {
        json_object *ev = tr_event(&t, e);
        const char *cat = tr_cat(ev);
        char ph = tr_ph(ev);
        if (!cat) continue;
        if (ph == 'X' && !strcmp(cat, "coll")) colls++;
        if ((ph == 'b' || ph == 'X') && !strcmp(cat, "proxy_op")) {
          ops++;
          int64_t seq;
          linked += tr_arg_i64(ev, "seq", &seq) == 0 && tr_arg_str(ev, "func") != NULL;
        }
      }
      CHECK(colls == ncoll[r], "rank %d: %d collective slices, NCCL started %d", r, colls, ncoll[r]);
      CHECK(ops == nops[r], "rank %d: %d proxy op slices, NCCL started %d", r, ops, nops[r]);
      CHECK(linked == ops, "rank %d: %d of %d proxy ops drawn without their collective", r, ops - linked, ops);
      tr_free(&t);
      free(paths[i]);
    }
  }
  if (!tl_cur_failed) h_rm_rf(base);
  else fprintf(stderr, "  kept %s\n", base);
}

/* CUDA graphs (clex --graph 1 over sockets: 4 sizes of AllReduce and Send/Recv, each step
 * captured once, replayed 1 + 5 times): NCCL fires the API events and KernelLaunch once, at
 * capture, and Group/Coll/P2p and proxy events at every replay, from its host callback, with
 * the capture-time API events (long stopped) as parents. Every replay must become its own
 * collective, timed, with nothing stale or left open. NCCL does not advance seqNumber for
 * captured collectives without KernelCh, so all replays share seq 0. */
TL_TEST(real_graph_replays) {
  char base[256], dir[300], rec[2][300];
  REQUIRE(replay_pair("graphsocket", base, dir, rec) == 0, "replay failed");
  char *paths[8];
  int n = h_find_traces(dir, paths, 8);
  CHECK(n == 2, "%d trace files in %s", n, dir);
  for (int i = 0; i < n; i++) {
    tr_trace t;
    char err[512];
    int64_t rank = -1, v = -1;
    if (tr_load(&t, paths[i], err, sizeof err)) { CHECK(0, "%s", err); free(paths[i]); continue; }
    tr_header_i64(&t, "rank", &rank);
    static rec_facts f;
    REQUIRE(rank == 0 || rank == 1, "%s: rank %lld", paths[i], (long long)rank);
    REQUIRE(read_recording(rec[rank], &f) == 0, "cannot read %s", rec[rank]);
    int api = 0, api_graph = 0, launches = 0, seq0 = 0, timed = 0, timed_proxy = 0, ncoll = 0;
    for (size_t k = 0; k < t.n; k++) {
      json_object *ev = tr_event(&t, k);
      const char *cat = tr_cat(ev), *name = tr_name(ev);
      if (tr_ph(ev) != 'X' || !cat || !name) continue;
      if (!strcmp(cat, "api") && !strcmp(name, "ncclAllReduce")) { api++; api_graph += tr_arg_bool(ev, "graph_captured"); }
      if (!strcmp(cat, "api") && !strcmp(name, "KernelLaunch")) launches++;
      if (!strcmp(cat, "coll")) { int64_t sq = -1; ncoll++; tr_arg_i64(ev, "seq", &sq); seq0 += sq == 0; }
      if (!strcmp(cat, "coll_gpu")) {
        const char *src = NULL;
        json_object *a = tr_arg(ev, "source");
        if (a) src = json_object_get_string(a);
        timed++;
        timed_proxy += src && !strcmp(src, "proxy");
      }
    }
    CHECK(api == 4 && api_graph == 4, "r%lld: %d ncclAllReduce API slices (%d graph_captured), want 4: one per capture",
          (long long)rank, api, api_graph);
    CHECK(launches == 8, "r%lld: %d KernelLaunch slices, want 8 (4 AllReduce + 4 Send/Recv captures)", (long long)rank, launches);
    CHECK(ncoll == f.ncoll && ncoll == 24 && seq0 == 24, "r%lld: %d coll slices (%d with seq 0), %d recorded, want 24 replays",
          (long long)rank, ncoll, seq0, f.ncoll);
    CHECK(timed == ncoll + f.np2p && timed_proxy == timed, "r%lld: %d coll_gpu slices (%d by proxy), want %d", (long long)rank,
          timed, timed_proxy, ncoll + f.np2p);
    CHECK(tr_stats_i64(&t, "stale_handles", &v) == 0 && v == 0, "r%lld: %lld stale handles", (long long)rank, (long long)v);
    CHECK(tr_stats_i64(&t, "open_events", &v) == 0 && v == 0, "r%lld: %lld events never stopped", (long long)rank, (long long)v);
    CHECK(tr_stats_i64(&t, "dropped", &v) == 0 && v == 0, "r%lld: %lld dropped", (long long)rank, (long long)v);
    tr_free(&t);
    free(paths[i]);
  }
  if (!tl_cur_failed) h_rm_rf(base);
  else fprintf(stderr, "  kept %s\n", base);
}

/* Traces written by the plugin on the GPU (examples/gpu_verdict.sh on one H200, 4 ranks
 * as emulated nodes over sockets, default events, COMMLENS_OUTPUT=both, 2026-11-26): rank 0 of a
 * FSDP2 and of a DDP job. Each loads under Perfetto's import rules as the project checks them
 * (tr_load: thread slices nest; async slices pair by id, close, nest) and fits the track budget.
 * The plugin before the async layout gave the same jobs 53 and 21 top-level tracks. The "3comm"
 * pair: the same jobs with two more communicators (examples/verdict/train.py --groups: a metrics
 * group and rank pairs), 18 tracks each; the plugin before the shared overlap tracks gave 23. */
TL_TEST(real_gpu_traces_fit_one_screen) {
  static const char *const files[] = {"test/data/tracks/h200-fsdp-4rank-r0.trace.json.gz",
                                      "test/data/tracks/h200-ddp-4rank-r0.trace.json.gz",
                                      "test/data/tracks/h200-fsdp-4rank-3comm-r0.trace.json.gz",
                                      "test/data/tracks/h200-ddp-4rank-3comm-r0.trace.json.gz"};
  for (int i = 0; i < 4; i++) {
    tr_trace t;
    char err[512];
    if (tr_load(&t, files[i], err, sizeof err) != 0) { CHECK(0, "%s: %s", files[i], err); continue; }
    int nasync = 0, late = 0, ntop = tr_top_tracks(&t, 0, &nasync, &late);
    CHECK(nasync > 0 && ntop <= (int)CL_TRACK_BUDGET, "%s: %d top-level tracks (%d async), budget %u", files[i], ntop,
          nasync, CL_TRACK_BUDGET);
    CHECK(tr_count(&t, 'X', "coll_gpu") > 0, "%s: no coll_gpu slices", files[i]);
    tr_free(&t);
  }
}

/* A real run of copy-engine collectives (examples/ce/ce_allgather.cu on 2 H200s of one process,
 * NCCL 2.30.7 built from source, CTAPolicy ZERO with symmetric windows, COMMLENS_CUPTI=kernels,
 * default events, 2026-11-26): 205 AllGathers of 1 MiB that NCCL ran on the copy engines. Each
 * rank's trace loads under the import rules; every collective is on the enqueue track (algo CE)
 * and GPU-timed from its copies (source cupti_ce, about 1.1 us each, with its exposure); the
 * report matches all 205 across the ranks and takes their arrivals from the enqueues (a copy
 * starts after the peers' sync: by GPU starts, 104 of them were "impossible"). Before, the plugin
 * drew them as detail only: no collective, no GPU time, nothing for the report. */
TL_TEST(real_copy_engine_collectives_are_timed_and_matched) {
  static const char *const files[] = {"test/data/ce/h200x2-nccl2.30.7-ce-allgather-r0.trace.json.gz",
                                      "test/data/ce/h200x2-nccl2.30.7-ce-allgather-r1.trace.json.gz"};
  for (int i = 0; i < 2; i++) {
    tr_trace t;
    char err[512];
    if (tr_load(&t, files[i], err, sizeof err) != 0) { CHECK(0, "%s: %s", files[i], err); continue; }
    int ce_enq = 0, ce_gpu = 0, exposed = 0, short_span = 0;
    for (size_t k = 0; k < t.n; k++) {
      json_object *ev = tr_event(&t, k), *a, *v;
      const char *cat = tr_cat(ev);
      if (tr_ph(ev) != 'X' || !cat || !json_object_object_get_ex(ev, "args", &a)) continue;
      if (!strcmp(cat, "coll") && json_object_object_get_ex(a, "algo", &v) && !strcmp(json_object_get_string(v), "CE"))
        ce_enq++;
      if (strcmp(cat, "coll_gpu") || !json_object_object_get_ex(a, "source", &v) ||
          strcmp(json_object_get_string(v), "cupti_ce"))
        continue;
      ce_gpu++;
      int64_t dur;
      if (tr_dur_ns(ev, &dur) == 0 && dur > 0 && dur < 10000) short_span++;
      if (json_object_object_get_ex(a, "exposed_ns", &v) && json_object_get_int64(v) >= 0) exposed++;
    }
    CHECK(ce_enq == 205 && ce_gpu == 205 && short_span == 205 && exposed == 205,
          "%s: %d CE collectives enqueued, %d GPU-timed from their copies (%d under 10 us, %d with exposure); want 205",
          files[i], ce_enq, ce_gpu, short_span, exposed);
    tr_free(&t);
  }
  json_object *rep = h_report_json("test/data/ce");
  REQUIRE(rep, "report");
  json_object *vd = h_json_get(rep, "verdict"), *counts = vd ? h_json_get(vd, "counts") : NULL;
  const char *evid = vd ? json_object_get_string(h_json_get(vd, "evidence")) : NULL;
  CHECK(json_object_get_int(h_json_get(rep, "instances_matched")) == 205 && evid && !strcmp(evid, "host_enqueue") &&
        counts && json_object_get_int(h_json_get(counts, "impossible")) == 0,
        "report: %d instances matched, evidence %s, %d impossible (want 205, host_enqueue, 0)",
        json_object_get_int(h_json_get(rep, "instances_matched")), evid ? evid : "?",
        counts ? json_object_get_int(h_json_get(counts, "impossible")) : -1);
  json_object_put(rep);
}

H_MAIN("abi/real_runs")
