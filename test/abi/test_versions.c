/* test_versions.c: every exported ABI version driven as NCCL drives it (harness scenarios
 * (a) collectives with kernel channels, network proxy ops/steps and proxy control, (b)
 * send/recv, (c) several communicators and threads), each in a fresh process with its own
 * COMMLENS_DIR; the trace is checked right after the last finalize (the writer's flush) and
 * again after exit (the final flush): header, per-category counts, hierarchy, GPU time
 * mapping, track sanity and zero drops. */
#include "harness.h"
#include "tr_load.h"
#include <ctype.h>
#include <dlfcn.h>
#include <sys/timex.h>
#include <unistd.h>

#define NCOLL 6
#define NSR 2
#define NCH 4

static int env_int(const char *k, int def) {
  const char *v = getenv(k);
  return v && *v ? atoi(v) : def;
}


/* The header's clock identity, against this process's own reading (the plugin ran on this
 * host): boot_id is the kernel's, in lower case, and absent only where the file cannot be read;
 * clock_sync has its three members exactly when adjtimex answers, and says what it says. */
static void check_clock_identity(const tr_trace *t) {
  char want[64] = "";
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f && fgets(want, sizeof want, f)) want[strcspn(want, "\n")] = 0;
  if (f) fclose(f);
  for (char *c = want; *c; c++) *c = (char)tolower((unsigned char)*c);
  json_object *v = NULL, *sync = NULL;
  int has = json_object_object_get_ex(t->header, "boot_id", &v);
  if (strlen(want) == 36) {
    CHECK(has && json_object_is_type(v, json_type_string) && !strcmp(json_object_get_string(v), want),
          "boot_id %s, the kernel's %s", has ? json_object_get_string(v) : "(absent)", want);
  } else {
    CHECK(!has, "boot_id %s written where the file reads \"%s\"", json_object_get_string(v), want);
  }
  struct timex tx = {0};
  int state = adjtimex(&tx);
  has = json_object_object_get_ex(t->header, "clock_sync", &sync);
  CHECK(has == (state >= 0), "clock_sync %s, adjtimex %d", has ? "present" : "absent", state);
  if (!has || state < 0) return;
  json_object *syn = NULL, *est = NULL, *max = NULL;
  CHECK(json_object_object_get_ex(sync, "synchronised", &syn) && json_object_is_type(syn, json_type_boolean),
        "clock_sync.synchronised");
  CHECK(json_object_object_get_ex(sync, "esterror_us", &est) && json_object_is_type(est, json_type_int) &&
        json_object_get_int64(est) >= 0, "clock_sync.esterror_us");
  CHECK(json_object_object_get_ex(sync, "maxerror_us", &max) && json_object_is_type(max, json_type_int) &&
        json_object_get_int64(max) >= 0, "clock_sync.maxerror_us");
  int unsync = (tx.status & STA_UNSYNC) || state == TIME_ERROR;
  if (syn) CHECK(json_object_get_boolean(syn) == !unsync, "synchronised %d, the kernel's status 0x%x state %d",
                 json_object_get_boolean(syn), tx.status, state);
  CHECK(json_object_object_length(sync) == 3, "clock_sync has %d members", json_object_object_length(sync));
}

/* Checks that do not depend on what was driven. */
static void check_common(const tr_trace *t, int abi) {
  int64_t v = -1;
  CHECK(t->header != NULL, "no commlens header");
  CHECK(tr_header_i64(t, "format", &v) == 0 && v == 1, "format %lld", (long long)v);
  CHECK(tr_header_i64(t, "abi", &v) == 0 && v == abi, "header abi %lld, drove v%d", (long long)v, abi);
  CHECK(tr_header_i64(t, "os_pid", &v) == 0 && v > 0, "os_pid");
  check_clock_identity(t);
  CHECK(t->stats != NULL, "no commlensStats");
  v = -1;
  CHECK(tr_stats_i64(t, "dropped", &v) == 0 && v == 0, "dropped = %lld", (long long)v);
}

static void check_counts(const tr_trace *t, int abi, const h_counts *c, int nch) {
  long api = c->started[8] + c->started[9] + c->started[10] + c->started[11];
  CHECK((long)tr_count(t, 'X', "coll") == c->started[1], "coll: trace %zu, driven %ld", tr_count(t, 'X', "coll"), c->started[1]);
  CHECK((long)tr_count(t, 'X', "p2p") == c->started[2], "p2p: trace %zu, driven %ld", tr_count(t, 'X', "p2p"), c->started[2]);
  CHECK((long)tr_count(t, 'X', "group") == c->started[0], "group: trace %zu, driven %ld", tr_count(t, 'X', "group"), c->started[0]);
  CHECK((long)tr_count(t, 'X', "api") == api, "api: trace %zu, driven %ld", tr_count(t, 'X', "api"), api);
  CHECK((long)tr_count(t, 'X', "proxy_op") == c->started[3], "proxy_op: trace %zu, driven %ld", tr_count(t, 'X', "proxy_op"), c->started[3]);
  CHECK((long)tr_count(t, 'X', "proxy_step") == c->started[4], "proxy_step: trace %zu, driven %ld", tr_count(t, 'X', "proxy_step"), c->started[4]);
  if (c->started[5]) CHECK(tr_count(t, 'X', "proxy_ctrl") >= 1, "no proxy_ctrl slices (%ld ProxyCtrl events driven)", c->started[5]);
  if (abi >= 4) {
    CHECK((long)tr_count(t, 'X', "kernel_ch") == c->started[6], "kernel_ch: trace %zu, driven %ld", tr_count(t, 'X', "kernel_ch"), c->started[6]);
    CHECK((long)tr_count(t, 'X', "coll_gpu") == c->colls + c->p2ps, "coll_gpu: trace %zu, driven %ld colls + %ld p2ps",
          tr_count(t, 'X', "coll_gpu"), c->colls, c->p2ps);
    (void)nch;
  }
}

/* kernel_ch slices: args.seq names their collective, nch per collective, near host time. */
static void check_kernel_ch(const tr_trace *t, int nch, int64_t tolerance_ns) {
  int64_t coll_ts[64];
  int per_seq[64] = {0};
  for (int i = 0; i < 64; i++) coll_ts[i] = -1;
  for (size_t i = 0; i < t->n; i++) {
    json_object *ev = tr_event(t, i);
    const char *cat = tr_cat(ev);
    int64_t seq, ts;
    if (!cat || strcmp(cat, "coll") || tr_ph(ev) != 'X') continue;
    if (tr_arg_i64(ev, "seq", &seq) || seq < 0 || seq >= 64 || tr_ts_ns(ev, &ts)) { CHECK(0, "coll without seq/ts"); continue; }
    coll_ts[seq] = ts;
  }
  int checked = 0;
  for (size_t i = 0; i < t->n; i++) {
    json_object *ev = tr_event(t, i);
    const char *cat = tr_cat(ev);
    if (!cat || strcmp(cat, "kernel_ch") || tr_ph(ev) != 'X' || tr_arg(ev, "phase")) continue;
    int64_t seq = -1, ch = -1, ts = 0;
    const char *func = tr_arg_str(ev, "func");
    if (func && (!strcmp(func, "Send") || !strcmp(func, "Recv"))) continue;   /* p2p: no seq */
    CHECK(tr_arg_i64(ev, "seq", &seq) == 0 && seq >= 0 && seq < 64 && coll_ts[seq] >= 0,
          "kernel_ch args.seq %lld names no collective", (long long)seq);
    CHECK(tr_arg_i64(ev, "channel", &ch) == 0 && ch >= 0 && ch < nch, "kernel_ch channel %lld", (long long)ch);
    CHECK(tr_arg_str(ev, "func") != NULL, "kernel_ch without args.func");
    if (seq < 0 || seq >= 64 || coll_ts[seq] < 0) continue;
    per_seq[seq]++;
    tr_ts_ns(ev, &ts);
    int64_t d = ts - coll_ts[seq];
    if (tolerance_ns > 0 && !tr_arg_bool(ev, "implausible"))
      CHECK(d > -tolerance_ns && d < tolerance_ns, "kernel_ch of seq %lld is %lld ns from its collective",
            (long long)seq, (long long)d);
    checked++;
  }
  for (int s = 0; s < 64; s++)
    if (coll_ts[s] >= 0 && per_seq[s]) CHECK(per_seq[s] % nch == 0, "seq %d: %d kernel_ch slices for %d channels", s, per_seq[s], nch);
  CHECK(checked > 0, "no kernel_ch slices");
}

/* v7: every driven phase is a kernel_phase slice on its channel's lane, inside a kernel_ch
 * slice of that channel, in phase order; every collective's GPU span and enqueue carry the
 * tag driven and its phases' split (the driver's initial_sync is `wait_ns` per channel). */
/* v7 kernel phases: children of their channel's async kernel_ch slice, marked args.phase. */
static size_t count_phases(const tr_trace *t) {
  size_t n = 0;
  for (size_t i = 0; i < t->n; i++) {
    json_object *ev = tr_event(t, i);
    const char *cat = tr_cat(ev);
    n += cat && !strcmp(cat, "kernel_ch") && tr_ph(ev) == 'X' && tr_arg(ev, "phase");
  }
  return n;
}
static void check_v7(const tr_trace *t, const h_counts *c, uint64_t tag, int64_t wait_ns) {
  CHECK((long)count_phases(t) == c->started[15], "kernel phases: trace %zu, driven %ld", count_phases(t), c->started[15]);
  CHECK(c->started[15] == 3 * c->started[6], "%ld phases driven for %ld channels", c->started[15], c->started[6]);
  size_t nested = 0, ph = 0;
  for (size_t i = 0; i < t->n; i++) {
    json_object *ev = tr_event(t, i);
    const char *cat = tr_cat(ev);
    if (!cat || strcmp(cat, "kernel_ch") || tr_ph(ev) != 'X' || !tr_arg(ev, "phase")) continue;
    ph++;
    int64_t ts, dur;
    char key[64], k2[64];
    tr_ts_ns(ev, &ts); tr_dur_ns(ev, &dur);
    tr_tid_key(ev, key, sizeof key);
    for (size_t j = 0; j < t->n; j++) {
      json_object *k = tr_event(t, j);
      const char *kc = tr_cat(k);
      int64_t kts, kdur, kch = -2;
      if (!kc || strcmp(kc, "kernel_ch") || tr_arg(k, "phase") || tr_pid(k) != tr_pid(ev)) continue;
      tr_tid_key(k, k2, sizeof k2);
      if (strcmp(k2, key) || tr_ts_ns(k, &kts) || tr_dur_ns(k, &kdur) || tr_arg_i64(k, "channel", &kch)) continue;
      if (ts >= kts && ts + dur <= kts + kdur) { nested++; break; }
    }
  }
  CHECK(ph > 0 && nested == ph, "%zu of %zu kernel phase slices nest in their channel's kernel_ch", nested, ph);
  size_t gpu = 0, tagged = 0, split = 0, enq_tagged = 0;
  for (size_t i = 0; i < t->n; i++) {
    json_object *ev = tr_event(t, i);
    const char *cat = tr_cat(ev), *tg;
    int64_t w = -1, work = -1;
    if (!cat || tr_ph(ev) != 'X') continue;
    if (!strcmp(cat, "coll") && (tg = tr_arg_str(ev, "user_tag")) && strtoull(tg, NULL, 10) == tag) enq_tagged++;
    if (strcmp(cat, "coll_gpu") || tr_arg_str(ev, "p2p_peer") || tr_arg(ev, "p2p_peer")) continue;
    gpu++;
    if ((tg = tr_arg_str(ev, "user_tag")) && strtoull(tg, NULL, 10) == tag) tagged++;
    if (tr_arg_i64(ev, "sync_wait_ns", &w) == 0 && tr_arg_i64(ev, "compute_ns", &work) == 0 && w == wait_ns && work > 0) split++;
  }
  CHECK(gpu == (size_t)c->colls && tagged == gpu && enq_tagged == gpu,
        "%zu collective GPU spans, %zu with user_tag %llu (%zu enqueues), %ld driven", gpu, tagged,
        (unsigned long long)tag, enq_tagged, c->colls);
  CHECK(split == gpu, "%zu of %zu GPU spans carry sync_wait_ns %lld and compute_ns", split, gpu, (long long)wait_ns);
}

/* Name of the track (pid, tid) of ev, from its thread_name metadata; "" if none. An async
 * slice (tid "async ...": tr_async_as_slices) carries its track's name. */
static const char *track_name(const tr_trace *t, json_object *ev) {
  char want[256], k[256];
  tr_tid_key(ev, want, sizeof want);
  if (!strncmp(want, "async ", 6)) return tr_name(ev) ? tr_name(ev) : "";
  for (size_t i = 0; i < t->n; i++) {
    json_object *m = tr_event(t, i);
    if (tr_ph(m) != 'M' || !tr_name(m) || strcmp(tr_name(m), "thread_name") || tr_pid(m) != tr_pid(ev)) continue;
    tr_tid_key(m, k, sizeof k);
    if (!strcmp(k, want)) return tr_arg_str(m, "name") ? tr_arg_str(m, "name") : "";
  }
  return "";
}

/* proxy_step slices carry the state breakdown of their direction. */
static void check_proxy_steps(const tr_trace *t, int abi) {
  static const char *send_keys[] = {"gpu_wait_ns", "send_wait_ns"};
  static const char *recv_keys[] = {"recv_wait_ns", "flush_wait_ns", "recv_gpu_wait_ns"};
  long nsend = 0, nrecv = 0;
  for (size_t i = 0; i < t->n; i++) {
    json_object *ev = tr_event(t, i);
    const char *cat = tr_cat(ev);
    if (!cat || strcmp(cat, "proxy_step") || tr_ph(ev) != 'X' || tr_arg_bool(ev, "phase")) continue;
    int64_t v;
    const char *track = track_name(t, ev);
    int is_send = strstr(track, "send") != NULL;
    CHECK(is_send || strstr(track, "recv"), "proxy_step on track \"%s\"", track);
    const char **keys = is_send ? send_keys : recv_keys;
    int nk = is_send ? 2 : 3;
    for (int k = 0; k < nk; k++)
      CHECK(tr_arg_i64(ev, keys[k], &v) == 0 && v >= 0, "proxy_step (%s) lacks %s", is_send ? "send" : "recv", keys[k]);
    if (is_send && abi >= 4) CHECK(tr_arg_i64(ev, "peer_wait_ns", &v) == 0 && v >= 0, "send step lacks peer_wait_ns");
    if (abi >= 4) CHECK(tr_arg_i64(ev, "bytes", &v) == 0 && v == 131072, "step bytes %lld", (long long)v);
    CHECK(tr_arg_i64(ev, "channel", &v) == 0, "proxy_step without channel");
    if (is_send) nsend++; else nrecv++;
  }
  CHECK(nsend > 0 && nrecv > 0, "send steps %ld, recv steps %ld", nsend, nrecv);
}

static void check_appended_ops(const tr_trace *t, int expect) {
  int found = 0;
  for (size_t i = 0; i < t->n; i++) {
    json_object *ev = tr_event(t, i);
    const char *cat = tr_cat(ev);
    int64_t v;
    if (!cat || strcmp(cat, "proxy_ctrl") || tr_arg_i64(ev, "appended_ops", &v)) continue;
    found++;
    CHECK(v == expect, "proxy_ctrl appended_ops %lld, NCCL passed %d (an int: upper bytes of the "
          "8-byte args are garbage)", (long long)v, expect);
  }
  CHECK(found > 0, "no proxy_ctrl slice with appended_ops");
}

/* ---- the child: one version, scenarios (a) and (b) ---------------------------------- */
H_CHILD(drive_version) {
  int abi = env_int("H_ABI", 5);
  h_plugin p;
  REQUIRE(h_open(&p, NULL, abi) == 0, "load v%d", abi);
  CHECK(p.name && !strcmp(p.name, "commlens"), "name %s", p.name ? p.name : "(null)");
  void *ctx = NULL;
  h_comm_info info = {0xabcdef12345ull, "versions", 1, 2, 0};
  REQUIRE(h_init(&p, &ctx, &info) == 0, "init");
  REQUIRE(ctx != NULL, "init gave no context");
  CHECK(h_mask == 0x7FFF || h_mask == 0xFFF || h_mask != 0, "mask %#x", h_mask);
  h_counts c;
  memset(&c, 0, sizeof c);
  h_opts o = {.nchannels = NCH, .network = 1, .npeers = 1, .nsteps = 3, .proxy_ctrl = 1};
  if (abi >= 7) { o.user_tag = 0x8000000000000007ull; o.sync_wait_ns = 4000; o.kernel_ns = 20000; }
  const char *off = getenv("H_GPU_OFFSET_NS"), *delay = getenv("H_GPU_DELAY_NS");
  if (off) o.gpu_offset_ns = atoll(off);
  if (delay) o.gpu_delay_ns = atoll(delay);
  for (int i = 0; i < NCOLL; i++) h_drive_coll(&p, ctx, &o, (uint64_t)i, &c);
  for (int i = 0; i < NSR; i++) h_drive_sendrecv(&p, ctx, &o, 1, &c);
  CHECK(h_bad_rc == 0, "%d calls did not return ncclSuccess", h_bad_rc);
  h_finalize(&p, ctx);
  h_close(&p);

  /* the writer flushed and stopped at the last finalize: the file is complete JSON now */
  tr_trace t;
  if (h_load_one_trace(getenv("COMMLENS_DIR"), &t, NULL, 0)) return;
  check_common(&t, abi);
  check_counts(&t, abi, &c, NCH);
  /* A KernelCh is drawn where its GPU timer says, which is when the stand-in proxy thread
   * emitted it: normally within 50 ms of its collective, but on a loaded 2-core machine those
   * threads start late (seen: 57-172 ms under TSan, 56-148 ms without a sanitizer while a CI
   * build and another make test ran beside it). So 1 s; a mis-mapped GPU clock is off by far
   * more: the planted offset below is 2.5 s, the other an hour. */
  int64_t tol = 1000 * 1000000ll;
  if (abi >= 4) check_kernel_ch(&t, NCH, tol);
  check_proxy_steps(&t, abi);
  check_appended_ops(&t, NCH * 2);
  if (abi >= 7) {
    check_v7(&t, &c, o.user_tag, o.sync_wait_ns);
    /* the CLI reads the tag back whole (past 2^53) and groups by it */
    json_object *rep = h_report_json(getenv("COMMLENS_DIR"));
    json_object *rows = h_json_get(rep, "by_tag"), *row = NULL;
    for (size_t k = 0; rows && k < json_object_array_length(rows); k++) {
      const char *tg = json_object_get_string(h_json_get(json_object_array_get_idx(rows, k), "tag"));
      if (tg && !strcmp(tg, "9223372036854775815")) row = json_object_array_get_idx(rows, k);
    }
    CHECK(rows && json_object_array_length(rows) == 2 && row && json_object_get_int64(h_json_get(row, "colls")) == NCOLL,
          "report by_tag: %s", rows ? json_object_to_json_string(rows) : "(none)");
    if (rep) json_object_put(rep);
  }
  if (getenv("H_VERBOSE")) {
    const char *cats[] = {"api", "group", "coll", "p2p", "coll_gpu", "kernel_ch", "proxy_op", "proxy_step", "proxy_state", "proxy_ctrl"};
    for (size_t i = 0; i < sizeof cats / sizeof *cats; i++) fprintf(stderr, "  v%d %s: %zu\n", abi, cats[i], tr_count(&t, 'X', cats[i]));
  }
  tr_free(&t);
}

/* (c) several communicators and threads at once */
H_CHILD(drive_multi) {
  int abi = env_int("H_ABI", 5);
  h_plugin p;
  REQUIRE(h_open(&p, NULL, abi) == 0, "load v%d", abi);
  h_opts o = {.nchannels = 2, .network = 1, .nsteps = 2, .same_thread_proxy = 0};
  h_multi m = {.p = &p, .nthreads = 4, .ncomms_per_thread = 2, .ncoll = 8, .o = &o};
  /* a keeper communicator so the writer is not stopped between threads' finalizes */
  void *keep = NULL;
  REQUIRE(h_init(&p, &keep, NULL) == 0, "init");
  h_drive_multi(&m);
  h_finalize(&p, keep);
  h_close(&p);
  CHECK(h_bad_rc == 0, "%d calls did not return ncclSuccess", h_bad_rc);
  tr_trace t;
  if (h_load_one_trace(getenv("COMMLENS_DIR"), &t, NULL, 0)) return;
  check_common(&t, abi);
  check_counts(&t, abi, &m.total, 2);
  tr_free(&t);
}

/* Spawns a child for one version and rechecks the final file after its exit. */
static const char *g_extra_env[4];
static void run_version(int abi, const char *child) {
  char dir[256], abienv[32], direnv[300];
  h_fresh_dir(dir, sizeof dir);
  snprintf(abienv, sizeof abienv, "H_ABI=%d", abi);
  snprintf(direnv, sizeof direnv, "COMMLENS_DIR=%s", dir);
  /* drive_multi's stand-in proxies start a thread per collective (NCCL keeps one per comm):
   * some 70 short-lived threads. A dead thread's ring is reusable once the drain has emptied it;
   * under TSan the drain can lag enough that the default budget (24 rings) runs out and an
   * event is dropped, as designed (test_robust's full_ring covers that). This case is about
   * nothing lost across threads and communicators, so it gets room for every thread. */
  const char *env[8] = {abienv, direnv, "COMMLENS_EVENTS=full", "COMMLENS_SUMMARY=off"};
  int k = 4;
  if (!strcmp(child, "drive_multi")) env[k++] = "COMMLENS_BUFFER_MB=256";
  for (int i = 0; i < 2 && g_extra_env[i]; i++) env[k++] = g_extra_env[i];
  env[k] = NULL;
  int rc = h_spawn(child, env);
  CHECK(rc == 0, "child %s v%d exited %d (dir %s)", child, abi, rc, dir);
  tr_trace t;
  if (h_load_one_trace(dir, &t, NULL, 0) == 0) {
    json_object *fin = NULL;
    CHECK(t.stats && json_object_object_get_ex(t.stats, "final", &fin) && json_object_get_boolean(fin),
          "after exit commlensStats.final is not true");
    int64_t v = -1;
    CHECK(tr_header_i64(&t, "abi", &v) == 0 && v == abi, "abi %lld after exit", (long long)v);
    tr_free(&t);
  }
  if (!tl_cur_failed) h_rm_rf(dir);
  else fprintf(stderr, "  kept %s\n", dir);
}

TL_TEST(v1_scenarios) { run_version(1, "drive_version"); }
TL_TEST(v2_scenarios) { run_version(2, "drive_version"); }
TL_TEST(v3_scenarios) { run_version(3, "drive_version"); }
TL_TEST(v4_scenarios) { run_version(4, "drive_version"); }
TL_TEST(v5_scenarios) { run_version(5, "drive_version"); }
TL_TEST(v6_scenarios) { run_version(6, "drive_version"); }
TL_TEST(v7_scenarios) { run_version(7, "drive_version"); }
/* GPU globaltimer offset from host time: the mapping must bring kernel_ch slices back next
 * to their collective (or flag them implausible). */
TL_TEST(v5_gpu_clock_offset_and_delay) {
  g_extra_env[0] = "H_GPU_OFFSET_NS=2500000000";
  g_extra_env[1] = "H_GPU_DELAY_NS=100000";
  run_version(5, "drive_version");
  g_extra_env[0] = g_extra_env[1] = NULL;
}
TL_TEST(v4_gpu_clock_far_off) {
  g_extra_env[0] = "H_GPU_OFFSET_NS=-3600000000000";
  run_version(4, "drive_version");
  g_extra_env[0] = NULL;
}
/* ---- v7 is NVIDIA's from NCCL 2.31 on: an earlier NCCL asking for it gets a failed init ---- */
/* The child loads the stand-in libnccl.so.2 (version from COMMLENS_FAKE_NCCL_VERSION) with the
 * scope H_NCCL_SCOPE says (global: an application linked with NCCL; local: PyTorch's extension
 * modules), then inits v7 and drives one collective. H_WANT=refused|accepted. */
H_CHILD(v7_gate) {
  char fake[600];
  h_fake_path(NULL, "libcommlens-fakenccl.so", fake, sizeof fake);
  int global = !strcmp(getenv("H_NCCL_SCOPE") ? getenv("H_NCCL_SCOPE") : "", "global");
  REQUIRE(dlopen(fake, RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL)), "load %s: %s", fake, dlerror());
  int refused = !strcmp(getenv("H_WANT") ? getenv("H_WANT") : "", "refused");
  h_plugin p;
  REQUIRE(h_open(&p, NULL, 7) == 0, "load v7");
  void *ctx = NULL;
  int mask = 0x7FFF;
  h_comm_info info = {0xabcdef12345ull, "gate", 1, 2, 0};
  int rc = h_init_ex(&p, &ctx, &mask, &info);
  if (refused) {
    CHECK(rc != 0 && ctx == NULL && mask == 0, "v7 init from an NCCL before 2.31: rc %d, ctx %p, mask %#x", rc, ctx, mask);
    CHECK(h_log_count(-1, "asks for profiler ABI v7") == 1, "one message saying why (%d)",
          h_log_count(-1, "asks for profiler ABI v7"));
  } else {
    CHECK(rc == 0 && ctx != NULL && mask != 0, "v7 init from NCCL 2.31: rc %d, ctx %p, mask %#x", rc, ctx, mask);
    CHECK(h_log_count(-1, "asks for profiler ABI v7") == 0, "no refusal message");
    h_counts c;
    memset(&c, 0, sizeof c);
    h_opts o = {.nchannels = 2, .user_tag = 7, .sync_wait_ns = 4000, .kernel_ns = 20000};
    h_drive_coll(&p, ctx, &o, 0, &c);
    CHECK(h_bad_rc == 0, "%d calls did not return ncclSuccess", h_bad_rc);
    h_finalize(&p, ctx);
  }
  h_close(&p);
}
static void run_gate(const char *version, const char *scope, const char *want) {
  char v[64], sc[64], w[64];
  snprintf(v, sizeof v, "COMMLENS_FAKE_NCCL_VERSION=%s", version);
  snprintf(sc, sizeof sc, "H_NCCL_SCOPE=%s", scope);
  snprintf(w, sizeof w, "H_WANT=%s", want);
  const char *extra[] = {v, sc, w, NULL};
  h_run_case("v7_gate", NULL, extra, NULL);
}
TL_TEST(v7_refused_by_nccl_before_2_31) {
  run_gate("22907", "global", "refused");   /* NVIDIA/nccl pull request 2045: another v7 on 2.29.7 */
  run_gate("23007", "local", "refused");    /* a fork's v7 (device FIFO) on 2.30.7, NCCL loaded RTLD_LOCAL */
}
TL_TEST(v7_accepted_from_nccl_2_31) {
  run_gate("23102", "local", "accepted");
  run_gate("23200", "global", "accepted");
}

TL_TEST(v4_multi_comm_threads) { run_version(4, "drive_multi"); }
TL_TEST(v5_multi_comm_threads) { run_version(5, "drive_multi"); }
TL_TEST(v7_multi_comm_threads) { run_version(7, "drive_multi"); }

H_MAIN("abi/versions")
