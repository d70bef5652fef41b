/* harness.c: the NCCL stand-in behind harness.h. It owns the call sequences NCCL makes (the
 * descriptors come from h_encode.c, the calls themselves go through tools/replay/driver.c); it
 * never looks inside the plugin (only the exported ncclProfiler_vN tables), so tests see exactly
 * what NCCL would. */
#include "harness.h"
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- start ---------------------------------------------------------------------------- */
#define UNWRITTEN ((void *)(uintptr_t)0xDEADBEEFCAFEull)

void *h_start(h_plugin *p, void *ctx, const h_event *e, int *rc_out) {
  _Alignas(16) unsigned char buf[160];
  h_encode(p->abi, e, buf);
  void *h = UNWRITTEN;
  int rc = h_start_raw(p, ctx, &h, buf);
  h_note_rc(rc, "startEvent");
  if (rc_out) *rc_out = rc;
  if (h == UNWRITTEN) {
    __atomic_add_fetch(&h_bad_rc, 1, __ATOMIC_RELAXED);
    fprintf(stderr, "  startEvent(type 0x%llx) did not write *eHandle\n", (unsigned long long)e->type);
    h = NULL;
  }
  return h;
}

/* ---- time ------------------------------------------------------------------------------ */
uint64_t h_realtime_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
uint64_t h_monotonic_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
void h_sleep_until_mono(int64_t t) {
  struct timespec ts = {(time_t)(t / 1000000000ll), (long)(t % 1000000000ll)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
}
int64_t h_env_i64(const char *k, int64_t def) {
  const char *v = getenv(k);
  return v && *v ? strtoll(v, NULL, 10) : def;
}

/* ---- scenario drivers ------------------------------------------------------------------ */
int h_mask_wants(int mask, uint64_t type) {
  unsigned m = (unsigned)mask;
  const unsigned below_coll = CLABI_EV_PROXY_OP | CLABI_EV_PROXY_STEP | CLABI_EV_KERNEL_CH |
                              CLABI_EV_NET_PLUGIN | CLABI_EV_KERNEL_PHASE;
  const unsigned ce = CLABI_EV_CE_COLL | CLABI_EV_CE_SYNC | CLABI_EV_CE_BATCH;
  switch (type) {
  case CLABI_EV_GROUP: return (m & (CLABI_EV_GROUP | CLABI_EV_COLL | CLABI_EV_P2P | below_coll)) != 0;
  case CLABI_EV_COLL: return (m & (CLABI_EV_COLL | below_coll)) != 0;
  case CLABI_EV_P2P: return (m & (CLABI_EV_P2P | below_coll)) != 0;
  case CLABI_EV_COLL_API: return (m & (CLABI_EV_COLL_API | CLABI_EV_COLL | below_coll | ce)) != 0;
  case CLABI_EV_P2P_API: return (m & (CLABI_EV_P2P_API | CLABI_EV_P2P | below_coll)) != 0;
  case CLABI_EV_GROUP_API:
    return (m & (CLABI_EV_GROUP_API | CLABI_EV_COLL_API | CLABI_EV_P2P_API | CLABI_EV_GROUP |
                 CLABI_EV_COLL | CLABI_EV_P2P | below_coll | ce | CLABI_EV_KERNEL_LAUNCH)) != 0;
  case CLABI_EV_PROXY_OP: return (m & (CLABI_EV_PROXY_OP | CLABI_EV_PROXY_STEP | CLABI_EV_NET_PLUGIN)) != 0;
  case CLABI_EV_PROXY_STEP: return (m & (CLABI_EV_PROXY_STEP | CLABI_EV_NET_PLUGIN)) != 0;
  case CLABI_EV_KERNEL_CH: return (m & (CLABI_EV_KERNEL_CH | CLABI_EV_KERNEL_PHASE)) != 0;  /* v7 forces it */
  default: return (m & type) != 0;
  }
}

static int bitpos(uint64_t t) { return t ? __builtin_ctzll(t) : 0; }

/* A handle that records nothing (event.h: CL_ID_QUIET and the quiet API handles, thread serial 0
 * with the top bit set): NCCL stops it, the plugin ignores it. */
static int quiet_handle(const void *h) {
  uint64_t v = (uint64_t)(uintptr_t)h;
  return (v >> 63) && !((v >> 40) & 0x7fffff);
}

/* Starts an event if the snapshot mask wants it; counts it. NULL if not emitted. */
static void *emit(h_plugin *p, void *ctx, int mask, const h_event *e, h_counts *c) {
  if (!h_mask_wants(mask, e->type)) return NULL;
  void *h = h_start(p, ctx, e, NULL);
  if (c) __atomic_add_fetch(&c->started[bitpos(e->type) & 15], 1, __ATOMIC_RELAXED);
  if (c && h && !quiet_handle(h)) __atomic_add_fetch(&c->answered[bitpos(e->type) & 15], 1, __ATOMIC_RELAXED);
  return h;
}
static void state(h_plugin *p, void *h, int st, uint64_t arg, h_counts *c) {
  h_state(p, h, st, arg);
  if (c) __atomic_add_fetch(&c->states[st & 31], 1, __ATOMIC_RELAXED);
}

typedef struct {
  h_plugin *p;
  void *ctx;
  const h_opts *o;
  int mask;
  void *parent_send, *parent_recv;   /* Coll (both) or P2p send / recv */
  int only_send, only_recv;           /* p2p: which ops exist */
  int peer;
  h_counts *c;
} proxy_job;

static uint64_t gpu_now(const h_opts *o) {
  return (uint64_t)((int64_t)h_realtime_ns() - 3000 - o->gpu_delay_ns + o->gpu_offset_ns);
}

/* v7: what NCCL's profiler thread does when a channel's work completes, before its KernelChStop:
 * each phase started, given its GPU stop (KernelPhaseStop) and stopped, in phase order, parent
 * the KernelCh. initial_sync from the channel's start, final_sync ending at its stop. */
static void phases(proxy_job *j, void *kch, int ch, uint64_t start, uint64_t stop) {
  static const char *const names[3] = {"initial_sync", "compute", "final_sync"};
  uint64_t len = stop - start;
  uint64_t wait = j->o->sync_wait_ns > 0 ? (uint64_t)j->o->sync_wait_ns : len / 4;
  if (wait > len / 2) wait = len / 2;
  uint64_t ts[4] = {start, start + wait, stop - len / 8, stop};
  for (int i = 0; i < 3; i++) {
    h_event e = {.type = CLABI_EV_KERNEL_PHASE, .parent = kch, .channel = (uint8_t)ch, .phase = (uint8_t)i,
                 .phase_name = names[i], .ptimer = ts[i]};
    void *h = emit(j->p, j->ctx, j->mask, &e, j->c);
    if (!h) continue;
    state(j->p, h, CLABI_ST_KERNEL_PHASE_STOP, ts[i + 1], j->c);
    h_stop(j->p, h);
  }
}

/* What NCCL's proxy progress thread does for one plan: KernelCh per channel (the profiler
 * pseudo-transport), network ProxyOps and their steps, a ProxyCtrl period. */
static void proxy_work(proxy_job *j) {
  h_plugin *p = j->p;
  const h_opts *o = j->o;
  int nch = o->nchannels > 0 ? o->nchannels : 2;
  int npeers = o->npeers > 0 ? o->npeers : 1;
  int nsteps = o->nsteps > 0 ? o->nsteps : 4;
  int64_t kns = o->kernel_ns > 0 ? o->kernel_ns : 1000;
  pid_t pid = getpid();
  void *ctrl = NULL;
  if (o->proxy_ctrl) {
    h_event e = {.type = CLABI_EV_PROXY_CTRL};
    ctrl = emit(p, j->ctx, j->mask, &e, j->c);
    if (h_mask_wants(j->mask, CLABI_EV_PROXY_CTRL)) {
      state(p, ctrl, CLABI_ST_CTRL_IDLE, 0, j->c);
      state(p, ctrl, CLABI_ST_CTRL_ACTIVE, 0, j->c);
      state(p, ctrl, CLABI_ST_CTRL_APPEND, 0, j->c);
      state(p, ctrl, CLABI_ST_CTRL_APPEND_END, (uint64_t)(nch * npeers * 2), j->c);
    }
  }
  void *kch[64] = {0};
  uint64_t kstart[64] = {0};
  int want_k = p->abi >= 3 && h_mask_wants(j->mask, CLABI_EV_KERNEL_CH);
  for (int ch = 0; ch < nch && ch < 64 && want_k; ch++) {
    kstart[ch] = gpu_now(o);
    h_event e = {.type = CLABI_EV_KERNEL_CH, .parent = j->parent_send, .channel = (uint8_t)ch,
                 .ptimer = kstart[ch]};
    kch[ch] = emit(p, j->ctx, j->mask, &e, j->c);
  }
  if (o->network && h_mask_wants(j->mask, CLABI_EV_PROXY_OP)) {
    enum { MAXOPS = 256 };
    void *ops[MAXOPS];
    int is_send[MAXOPS], nops = 0;
    for (int ch = 0; ch < nch; ch++)
      for (int pe = 0; pe < npeers; pe++)
        for (int s = 1; s >= 0 && nops < MAXOPS; s--) {
          if ((s && j->only_recv) || (!s && j->only_send)) continue;
          h_event e = {.type = CLABI_EV_PROXY_OP, .parent = s ? j->parent_send : j->parent_recv,
                       .pid = pid, .channel = (uint8_t)ch, .peer = j->peer >= 0 ? j->peer : pe + 1,
                       .nsteps = nsteps, .chunk_size = 131072, .is_send = s};
          is_send[nops] = s;
          ops[nops++] = emit(p, j->ctx, j->mask, &e, j->c);
        }
    if (p->abi >= 4)
      for (int i = 0; i < nops; i++) state(p, ops[i], CLABI_ST_PROXY_OP_IN_PROGRESS, 0, j->c);
    int want_step = h_mask_wants(j->mask, CLABI_EV_PROXY_STEP);
    for (int st = 0; st < nsteps && want_step; st++)
      for (int i = 0; i < nops; i++) {
        h_event e = {.type = CLABI_EV_PROXY_STEP, .parent = ops[i], .step = st};
        void *sh = emit(p, j->ctx, j->mask, &e, j->c);
        uint64_t bytes = p->abi >= 4 ? 131072 : 0;   /* v1..v3 adapters zero the args */
        if (is_send[i]) {
          state(p, sh, CLABI_ST_STEP_SEND_GPU_WAIT, 0, j->c);
          if (p->abi >= 4) state(p, sh, CLABI_ST_STEP_SEND_PEER_WAIT, 0, j->c);
          state(p, sh, CLABI_ST_STEP_SEND_WAIT, bytes, j->c);
        } else {
          state(p, sh, CLABI_ST_STEP_RECV_WAIT, 0, j->c);
          state(p, sh, CLABI_ST_STEP_RECV_FLUSH_WAIT, bytes, j->c);
          state(p, sh, CLABI_ST_STEP_RECV_GPU_WAIT, 0, j->c);
        }
        h_stop(p, sh);
      }
    for (int i = 0; i < nops; i++) h_stop(p, ops[i]);
  }
  for (int ch = 0; ch < nch && ch < 64 && want_k; ch++) {
    if (!kch[ch]) continue;   /* as NCCL: no state or stop for a KernelCh answered with no handle */
    if (p->abi >= 4) {
      uint64_t stop = gpu_now(o);
      if (stop < kstart[ch] + (uint64_t)kns) stop = kstart[ch] + (uint64_t)kns;
      if (p->abi >= 7 && h_mask_wants(j->mask, CLABI_EV_KERNEL_PHASE)) phases(j, kch[ch], ch, kstart[ch], stop);
      state(p, kch[ch], CLABI_ST_KERNEL_CH_STOP, stop, j->c);
    }
    h_stop(p, kch[ch]);
  }
  if (o->proxy_ctrl && h_mask_wants(j->mask, CLABI_EV_PROXY_CTRL)) {
    state(p, ctrl, CLABI_ST_CTRL_SLEEP, 0, j->c);
    state(p, ctrl, CLABI_ST_CTRL_WAKEUP, 0, j->c);
    h_stop(p, ctrl);
  }
}

static void *proxy_thread(void *arg) { proxy_work(arg); return NULL; }

static void run_proxy(proxy_job *j) {
  if (j->o->same_thread_proxy) { proxy_work(j); return; }
  pthread_t t;
  if (pthread_create(&t, NULL, proxy_thread, j) != 0) { proxy_work(j); return; }
  pthread_join(t, NULL);
}

static h_opts defaults(const h_opts *o) {
  h_opts d = o ? *o : (h_opts){0};
  if (d.nchannels <= 0) d.nchannels = 2;
  if (!d.func) d.func = "AllReduce";
  if (!d.count) d.count = 1048576;
  return d;
}

void h_drive_coll(h_plugin *p, void *ctx, const h_opts *oin, uint64_t seq, h_counts *c) {
  h_opts o = defaults(oin);
  int mask = __atomic_load_n(&h_mask, __ATOMIC_RELAXED);   /* NCCL's per-group snapshot */
  void *stream = (void *)(uintptr_t)0x7f00aa00;
  static char sbuf[16], rbuf[16];
  void *gapi = NULL, *capi = NULL;
  if (p->abi >= 5) {
    h_event ga = {.type = CLABI_EV_GROUP_API, .group_depth = 1};
    gapi = emit(p, ctx, mask, &ga, c);
    h_event ca = {.type = CLABI_EV_COLL_API, .parent = gapi, .func = o.func, .count = o.count,
                  .datatype = "ncclFloat32", .root = 0, .stream = stream, .user_tag = o.user_tag};
    capi = emit(p, ctx, mask, &ca, c);
    if (capi || h_mask_wants(mask, CLABI_EV_COLL_API)) h_stop(p, capi);
    if (h_mask_wants(mask, CLABI_EV_GROUP_API)) state(p, gapi, CLABI_ST_GROUP_END_API_START, 0, c);
    h_event kl = {.type = CLABI_EV_KERNEL_LAUNCH, .parent = gapi, .stream = stream};
    void *k = emit(p, ctx, mask, &kl, c);
    if (h_mask_wants(mask, CLABI_EV_KERNEL_LAUNCH)) h_stop(p, k);
    if (h_mask_wants(mask, CLABI_EV_GROUP_API)) h_stop(p, gapi);
  }
  h_event g = {.type = CLABI_EV_GROUP};
  void *grp = emit(p, ctx, mask, &g, c);
  h_event ce = {.type = CLABI_EV_COLL, .parent = p->abi >= 5 ? capi : grp, .parent_group = grp,
                .func = o.func, .datatype = "ncclFloat32", .algo = "RING", .proto = "SIMPLE",
                .seq = seq, .count = o.count, .root = 0, .nchannels = (uint8_t)o.nchannels,
                .nwarps = 16, .sendbuff = sbuf, .recvbuff = rbuf, .comm_hash = 0x1234,
                .comm_name = "test-comm", .user_tag = o.user_tag};
  void *coll = emit(p, ctx, mask, &ce, c);
  if (c && h_mask_wants(mask, CLABI_EV_COLL)) __atomic_add_fetch(&c->colls, 1, __ATOMIC_RELAXED);
  if (h_mask_wants(mask, CLABI_EV_COLL)) h_stop(p, coll);
  if (h_mask_wants(mask, CLABI_EV_GROUP)) h_stop(p, grp);
  proxy_job j = {p, ctx, &o, mask, coll, coll, 0, 0, -1, c};
  run_proxy(&j);
  for (int r = 0; r < o.graph_replays; r++) run_proxy(&j);
}

void h_drive_sendrecv(h_plugin *p, void *ctx, const h_opts *oin, int peer, h_counts *c) {
  h_opts o = defaults(oin);
  int mask = __atomic_load_n(&h_mask, __ATOMIC_RELAXED);
  void *stream = (void *)(uintptr_t)0x7f00bb00;
  static char buf[16];
  void *gapi = NULL, *sapi = NULL, *rapi = NULL;
  if (p->abi >= 5) {
    h_event ga = {.type = CLABI_EV_GROUP_API, .group_depth = 1};
    gapi = emit(p, ctx, mask, &ga, c);
    if (h_mask_wants(mask, CLABI_EV_GROUP_API)) state(p, gapi, CLABI_ST_GROUP_START_API_STOP, 0, c);
    h_event sa = {.type = CLABI_EV_P2P_API, .parent = gapi, .func = "Send", .count = o.count,
                  .datatype = "ncclFloat32", .stream = stream};
    sapi = emit(p, ctx, mask, &sa, c);
    if (h_mask_wants(mask, CLABI_EV_P2P_API)) h_stop(p, sapi);
    h_event ra = sa;
    ra.func = "Recv";
    rapi = emit(p, ctx, mask, &ra, c);
    if (h_mask_wants(mask, CLABI_EV_P2P_API)) h_stop(p, rapi);
    if (h_mask_wants(mask, CLABI_EV_GROUP_API)) state(p, gapi, CLABI_ST_GROUP_END_API_START, 0, c);
    h_event kl = {.type = CLABI_EV_KERNEL_LAUNCH, .parent = gapi, .stream = stream};
    void *k = emit(p, ctx, mask, &kl, c);
    if (h_mask_wants(mask, CLABI_EV_KERNEL_LAUNCH)) h_stop(p, k);
    if (h_mask_wants(mask, CLABI_EV_GROUP_API)) h_stop(p, gapi);
  }
  h_event g = {.type = CLABI_EV_GROUP};
  void *grp = emit(p, ctx, mask, &g, c);
  h_event se = {.type = CLABI_EV_P2P, .parent = p->abi >= 5 ? sapi : grp, .parent_group = grp,
                .func = "Send", .datatype = "ncclFloat32", .count = o.count, .peer = peer,
                .nchannels = (uint8_t)o.nchannels, .recvbuff = buf, .comm_hash = 0x1234,
                .comm_name = "test-comm"};
  void *send = emit(p, ctx, mask, &se, c);
  h_event re = se;
  re.parent = p->abi >= 5 ? rapi : grp;
  re.func = "Recv";
  void *recv = emit(p, ctx, mask, &re, c);
  if (c && h_mask_wants(mask, CLABI_EV_P2P)) __atomic_add_fetch(&c->p2ps, 2, __ATOMIC_RELAXED);
  if (h_mask_wants(mask, CLABI_EV_P2P)) { h_stop(p, send); h_stop(p, recv); }
  if (h_mask_wants(mask, CLABI_EV_GROUP)) h_stop(p, grp);
  proxy_job j = {p, ctx, &o, mask, send, recv, 0, 0, peer, c};
  run_proxy(&j);
}

typedef struct { h_multi *m; int idx; h_counts c; } multi_arg;

static void *multi_thread(void *arg) {
  multi_arg *a = arg;
  h_multi *m = a->m;
  void *ctx[64] = {0};
  int n = m->ncomms_per_thread > 64 ? 64 : m->ncomms_per_thread;
  for (int i = 0; i < n; i++) {
    h_comm_info info = {0x9000 + (uint64_t)(a->idx * 64 + i), "multi", 1, 4, a->idx % 4};
    if (h_init(m->p, &ctx[i], &info) != 0) fprintf(stderr, "  multi: init failed\n");
  }
  for (int k = 0; k < m->ncoll; k++)
    for (int i = 0; i < n; i++) {
      if (k % 4 == 3) h_drive_sendrecv(m->p, ctx[i], m->o, (a->idx + 1) % 4, &a->c);
      else h_drive_coll(m->p, ctx[i], m->o, (uint64_t)k, &a->c);
    }
  for (int i = 0; i < n; i++) h_finalize(m->p, ctx[i]);
  return NULL;
}

void h_drive_multi(h_multi *m) {
  multi_arg args[64];
  pthread_t t[64];
  int n = m->nthreads > 64 ? 64 : m->nthreads;
  memset(&m->total, 0, sizeof m->total);
  for (int i = 0; i < n; i++) {
    memset(&args[i], 0, sizeof args[i]);
    args[i].m = m;
    args[i].idx = i;
    pthread_create(&t[i], NULL, multi_thread, &args[i]);
  }
  for (int i = 0; i < n; i++) {
    pthread_join(t[i], NULL);
    for (int k = 0; k < 16; k++) m->total.started[k] += args[i].c.started[k];
    for (int k = 0; k < 32; k++) m->total.states[k] += args[i].c.states[k];
    m->total.colls += args[i].c.colls;
    m->total.p2ps += args[i].c.p2ps;
  }
}

/* ---- directories and files --------------------------------------------------------- */
const char *h_fresh_dir(char *buf, size_t n) {
  const char *tmp = getenv("TMPDIR");
  snprintf(buf, n, "%s/commlens-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(buf)) { perror("mkdtemp"); buf[0] = 0; return buf; }
  setenv("COMMLENS_DIR", buf, 1);
  return buf;
}

void h_host_in_name(char *out, size_t n) {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  size_t k = 0;
  for (const char *s = host; *s && k + 1 < n; s++)
    out[k++] = (*s == '/' || *s == ' ' || (unsigned char)*s < 0x20) ? '_' : *s;
  out[k] = 0;
}

int h_find_files(const char *dir, const char *suffix, char **paths, int max) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  size_t sl = strlen(suffix);
  for (struct dirent *de; (de = readdir(d)) && n < max;) {
    size_t l = strlen(de->d_name);
    if (l < sl || strcmp(de->d_name + l - sl, suffix)) continue;
    size_t need = strlen(dir) + l + 2;
    paths[n] = malloc(need);
    snprintf(paths[n], need, "%s/%s", dir, de->d_name);
    n++;
  }
  closedir(d);
  return n;
}

int h_wait_trace_bytes(const char *dir, long min_bytes) { return h_wait_trace_bytes_ms(dir, min_bytes, 60000); }

int h_wait_trace_bytes_ms(const char *dir, long min_bytes, int ms) {
  for (int waited = 0; waited < ms; waited += 5) {
    char *paths[2];
    int n = h_find_traces(dir, paths, 2);
    struct stat sb;
    int big = n > 0 && stat(paths[0], &sb) == 0 && sb.st_size > min_bytes;
    for (int i = 0; i < n; i++) free(paths[i]);
    if (big) return 0;
    usleep(5000);
  }
  return -1;
}

int h_load_one_trace(const char *dir, tr_trace *t, char *path_out, size_t pn) {
  char *paths[8], err[512];
  int n = dir ? h_find_traces(dir, paths, 8) : 0;
  CHECK(n == 1, "%d trace files in %s (want exactly one)", n, dir ? dir : "(unset)");
  int rc = -1;
  if (n == 1) {
    if (path_out) snprintf(path_out, pn, "%s", paths[0]);
    rc = tr_load(t, paths[0], err, sizeof err);
    CHECK(rc == 0, "%s: %s", paths[0], err);
  }
  for (int i = 0; i < n; i++) free(paths[i]);
  return rc == 0 ? 0 : -1;
}

void h_open_init(h_plugin *p, int abi, void **ctx) {
  if (h_open(p, NULL, abi)) { CHECK(0, "load v%d", abi); exit(1); }
  if (h_init(p, ctx, NULL) != 0 || !*ctx) { CHECK(0, "init v%d", abi); exit(1); }
}

void h_short_job(int ncoll, const h_opts *o) {
  h_plugin p;
  void *ctx;
  h_open_init(&p, 5, &ctx);
  for (int i = 0; i < ncoll; i++) h_drive_coll(&p, ctx, o, (uint64_t)i, NULL);
  h_finalize(&p, ctx);
  h_close(&p);
}

int h_find_traces(const char *dir, char **paths, int max) {
  int n = h_find_files(dir, ".trace.json", paths, max);
  return n + h_find_files(dir, ".trace.json.gz", paths + n, max - n);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f) {
  (void)st; (void)flag; (void)f;
  return remove(path);
}
void h_rm_rf(const char *dir) {
  if (dir && *dir) nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *h_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
  if (b) b[n] = 0;
  if (b && len) *len = (size_t)n;
  fclose(f);
  return b;
}

/* ---- fresh-process cases --------------------------------------------------------------- */
static struct { const char *name; h_child_fn fn; } g_children[256];
static int g_nchildren;
static char g_self[4096];

void h_child_register(const char *name, h_child_fn fn) {
  if (g_nchildren < 256) { g_children[g_nchildren].name = name; g_children[g_nchildren].fn = fn; g_nchildren++; }
}

/* A TSan child that could not map its shadow memory at start-up (intermittent on this kernel:
 * "ThreadSanitizer failed to allocate ... errno: 12") ran none of the test: its log (TSAN_OPTIONS
 * log_path, one file per pid) says so and nothing else. */
static int tsan_startup_failure(pid_t pid) {
  const char *o = getenv("TSAN_OPTIONS"), *lp = o ? strstr(o, "log_path=") : NULL;
  if (!lp) return 0;
  char path[4096];
  size_t n = strcspn(lp + 9, ": ");
  if (n == 0 || n > sizeof path - 32) return 0;
  snprintf(path, sizeof path, "%.*s.%d", (int)n, lp + 9, (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char buf[4096];
  size_t len = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[len] = 0;
  int startup = strstr(buf, "ThreadSanitizer failed to allocate") && !strstr(buf, "WARNING:");
  if (startup) unlink(path);   /* no report about our code */
  return startup;
}

static int spawn_once(const char *name, const char *const *env, pid_t *out_pid);

int h_spawn(const char *name, const char *const *env) {
  for (int attempt = 0;; attempt++) {
    pid_t pid = -1;
    int rc = spawn_once(name, env, &pid);
    if ((rc != 23 && rc != 66) || attempt == 2 || pid <= 0 || !tsan_startup_failure(pid)) return rc;
    fprintf(stderr, "  child %s: TSan could not start (shadow memory); running it again\n", name);
  }
}

pid_t h_spawn_bg(const char *name, const char *const *env) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    for (int i = 0; env && env[i]; i++) {
      char kv[4096];
      snprintf(kv, sizeof kv, "%s", env[i]);
      char *eq = strchr(kv, '=');
      if (!eq) { unsetenv(kv); continue; }
      *eq = 0;
      setenv(kv, eq + 1, 1);
    }
    char *argv[] = {g_self, "--child", (char *)name, NULL};
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  return pid;
}

int h_wait_pid(pid_t pid, int timeout_s, int *status) {
  uint64_t deadline = h_monotonic_ns() + (uint64_t)timeout_s * 1000000000ull;
  for (;;) {
    pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return 0;
    if (r < 0 && errno != EINTR) return -1;
    if (h_monotonic_ns() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, status, 0);
      return 124;
    }
    usleep(2000);
  }
}

static int spawn_once(const char *name, const char *const *env, pid_t *out_pid) {
  pid_t pid = h_spawn_bg(name, env);
  if (pid < 0) return -1;
  *out_pid = pid;
  int status = 0;
  /* a hang detector, not a timing check: a child on a busy 2-core machine under a sanitizer,
   * checking a large trace (async slices pair and nest: two more passes), took over 60 s, and
   * pipeline/flight's bound_by_memory under tsan beside two busy loops (test/soak.sh) over 180 s */
  const char *san = getenv("COMMLENS_SANITIZED");
  int rc = h_wait_pid(pid, san && *san ? 420 : 180, &status);
  if (rc == 124) fprintf(stderr, "  child %s timed out; killed it\n", name);
  if (rc) return rc;
  if (WIFSIGNALED(status)) {
    fprintf(stderr, "  child %s killed by signal %d\n", name, WTERMSIG(status));
    return 128 + WTERMSIG(status);
  }
  return WEXITSTATUS(status);
}

void h_run_case(const char *name, const char *const *base, const char *const *extra, const char *subdir) {
  char dir[256], direnv[600];
  h_fresh_dir(dir, sizeof dir);
  snprintf(direnv, sizeof direnv, "COMMLENS_DIR=%s%s", dir, subdir ? subdir : "");
  const char *env[32];
  int n = 0;
  env[n++] = direnv;
  env[n++] = "COMMLENS_SUMMARY=off";
  for (int i = 0; base && base[i] && n < 31; i++) env[n++] = base[i];
  for (int i = 0; extra && extra[i] && n < 31; i++) env[n++] = extra[i];
  env[n] = NULL;
  int rc = h_spawn(name, env);
  CHECK(rc == 0, "case %s exited %d (dir %s)", name, rc, dir);
  if (!tl_cur_failed) h_rm_rf(dir);
  else fprintf(stderr, "  kept %s\n", dir);
}

int h_main(const char *suite, int argc, char **argv) {
  snprintf(g_self, sizeof g_self, "%s", argv[0]);
  if (argc >= 3 && !strcmp(argv[1], "--child")) {
    for (int i = 0; i < g_nchildren; i++)
      if (!strcmp(g_children[i].name, argv[2])) {
        tl_cur_failed = 0;
        g_children[i].fn();
        if (tl_cur_failed) fprintf(stderr, "FAIL child %s\n", argv[2]);
        fflush(stderr);
        exit(tl_cur_failed ? 1 : 0);   /* exit, not _exit: the plugin's exit flush runs */
      }
    fprintf(stderr, "no child case %s\n", argv[2]);
    return 2;
  }
  return tl_main(suite, argc, argv);
}

char *h_run_cli(const char *args, int *status) {
  const char *cli = getenv("COMMLENS_CLI");
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s %s", cli && *cli ? cli : "build/commlens", args);
  FILE *f = popen(cmd, "r");
  if (!f) { *status = -1; return NULL; }
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  for (size_t got; (got = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
    len += got;
    if (cap - len < 4096) buf = realloc(buf, cap *= 2);
  }
  buf[len] = 0;
  int st = pclose(f);
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return buf;
}

int h_cli_run(const char *args, char **out, char **err) {
  static char wrapped[1200];
  if (!wrapped[0]) {
    const char *c = getenv("COMMLENS_CLI");
    snprintf(wrapped, sizeof wrapped, "timeout 120 %s", c && *c ? c : "build/commlens");
    setenv("COMMLENS_CLI", wrapped, 1);
  }
  char e[64];
  snprintf(e, sizeof e, "/tmp/commlens_h_err.%d", (int)getpid());
  size_t n = strlen(args) + 100;
  char *a = malloc(n);
  snprintf(a, n, "%s 2>%s </dev/null", args, e);
  int st;
  *out = h_run_cli(a, &st); *err = h_read_file(e, NULL);
  unlink(e);
  free(a);
  if (!*out) *out = strdup("");
  if (!*err) *err = strdup("");
  return st;
}

json_object *h_report_json(const char *dir) {
  char args[600];
  int st;
  snprintf(args, sizeof args, "report '%s' --json", dir);
  char *out = h_run_cli(args, &st);
  CHECK(st == 0, "commlens report exited %d", st);
  json_object *j = out ? json_tokener_parse(out) : NULL;
  CHECK(j != NULL, "report --json output does not parse: %.300s", out ? out : "(none)");
  free(out);
  return j;
}

json_object *h_json_get(json_object *o, const char *k) {
  json_object *v = NULL;
  return o && json_object_object_get_ex(o, k, &v) ? v : NULL;
}
