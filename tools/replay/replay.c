/* replay.c: reads a whole recording into memory, then replays it with one thread per
 * recorded thread and a global sequencer. Owns every decoded copy of a string or blob for
 * the whole process (the plugin keeps NCCL's string pointers and may read them as late as
 * its exit flush), so those copies are never freed. */
#include "tools/replay/replay.h"
#include "tools/replay/driver.h"
#include "common/clock.h"
#include <stdio.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

typedef struct { unsigned off; unsigned char *data; unsigned len; } rp_ref;

typedef struct {
  char kind;                  /* I S E T F */
  int thr, abi;
  uint64_t t;                 /* recorded ns since the first call */
  uint64_t due;               /* uniform pacing: its time in the spread (plan_spread) */
  uint64_t a, b;              /* I: ctx; S: ctx, handle; E/T: handle; F: ctx */
  /* I */
  int mask, nnodes, nranks, rank;
  int dev;               /* the communicator's CUDA device, -1 not recorded */
  uint64_t hash;
  char *name;
  /* S */
  unsigned char *descr;
  unsigned dlen;
  int nrefs;
  rp_ref *refs;
  /* T */
  int state;
  unsigned char *args;
  unsigned alen;
} rp_call;

/* recorded pointer value -> live value */
typedef struct { uint64_t *k, *v; size_t cap, n; } rp_map;

static uint64_t mix(uint64_t x) { x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; return x; }
static void map_put(rp_map *m, uint64_t k, uint64_t v) {
  if (!k) return;
  if (2 * (m->n + 1) > m->cap) {
    rp_map nm = {calloc(m->cap ? m->cap * 2 : 1024, 8), calloc(m->cap ? m->cap * 2 : 1024, 8),
                 m->cap ? m->cap * 2 : 1024, 0};
    for (size_t i = 0; i < m->cap; i++) if (m->k[i]) map_put(&nm, m->k[i], m->v[i]);
    free(m->k); free(m->v);
    *m = nm;
  }
  size_t i = mix(k) & (m->cap - 1);
  while (m->k[i] && m->k[i] != k) i = (i + 1) & (m->cap - 1);
  if (!m->k[i]) m->n++;
  m->k[i] = k;
  m->v[i] = v;
}
static int map_get(const rp_map *m, uint64_t k, uint64_t *v) {
  if (!k || !m->cap) return 0;
  for (size_t i = mix(k) & (m->cap - 1); m->k[i]; i = (i + 1) & (m->cap - 1))
    if (m->k[i] == k) { *v = m->v[i]; return 1; }
  return 0;
}

/* The strings and blobs descriptors point to, one copy each for the life of the process: the
 * plugin keeps NCCL's string pointers (NCCL's are static), and a process that replays many
 * recordings (fuzz/fuzz_replay.c) must not grow with every replay. Takes b (freed if known). */
static unsigned char *intern(unsigned char *b, unsigned len) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static unsigned char **tab;
  static unsigned *lens;
  static size_t n, cap;
  pthread_mutex_lock(&mu);
  unsigned char *out = NULL;
  for (size_t i = 0; i < n && !out; i++)
    if (lens[i] == len && !memcmp(tab[i], b, len)) out = tab[i];
  if (out) free(b);
  else {
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      tab = realloc(tab, cap * sizeof *tab);
      lens = realloc(lens, cap * sizeof *lens);
    }
    tab[n] = b;
    lens[n++] = len;
    out = b;
  }
  pthread_mutex_unlock(&mu);
  return out;
}

static int hexval(int c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}
static unsigned char *unhex(const char *s, size_t n, unsigned *len) {
  if (n % 2) return NULL;
  unsigned char *b = malloc(n / 2 + 1);
  for (size_t i = 0; i < n / 2; i++) {
    int h = hexval(s[2 * i]), l = hexval(s[2 * i + 1]);
    if (h < 0 || l < 0) { free(b); return NULL; }
    b[i] = (unsigned char)(h << 4 | l);
  }
  b[n / 2] = 0;   /* strings were recorded with their NUL; blobs do not care */
  *len = (unsigned)(n / 2);
  return b;
}
/* %p as glibc prints it: "0x..." or "(nil)". */
static int parse_ptr(const char *s, uint64_t *v) {
  if (!strcmp(s, "(nil)")) { *v = 0; return 0; }
  char *end;
  *v = strtoull(s, &end, 16);
  return *end ? -1 : 0;
}

/* Splits on single spaces, keeping empty fields (an empty comm name is an empty field). */
static int split(char *line, char **tok, int max) {
  int n = 0;
  char *p = line;
  while (n < max) {
    tok[n++] = p;
    char *sp = strchr(p, ' ');
    if (!sp) break;
    *sp = 0;
    p = sp + 1;
  }
  return n;
}

static int parse_line(char *line, rp_call *c, char *err, size_t errn) {
  char *tok[256];
  int n = split(line, tok, 256);
  uint64_t seq;
  memset(c, 0, sizeof *c);
  if (n < 5 || strlen(tok[0]) != 1) goto bad;
  c->kind = tok[0][0];
  seq = strtoull(tok[1], NULL, 10);
  (void)seq;
  c->thr = atoi(tok[2]);
  c->t = strtoull(tok[3], NULL, 10);
  c->abi = atoi(tok[4]);
  if (c->thr < 0 || c->thr > 4095 || c->abi < 1 || c->abi > 7) goto bad;
  switch (c->kind) {
  case 'I':
    if (n < 12 || parse_ptr(tok[5], &c->a)) goto bad;
    c->mask = atoi(tok[6]);
    c->hash = strtoull(tok[7], NULL, 16);
    c->nnodes = atoi(tok[8]); c->nranks = atoi(tok[9]); c->rank = atoi(tok[10]);
    { unsigned l; c->name = (char *)unhex(tok[11], strlen(tok[11]), &l); if (!c->name) goto bad; }
    c->dev = n > 12 ? atoi(tok[12]) : -1;   /* recordings before the device was kept end at the name */
    return 0;
  case 'S': {
    if (n < 9 || parse_ptr(tok[5], &c->a) || parse_ptr(tok[6], &c->b)) goto bad;
    c->descr = unhex(tok[7], strlen(tok[7]), &c->dlen);
    if (!c->descr || c->dlen > 160) goto bad;
    c->nrefs = atoi(tok[8]);
    if (c->nrefs < 0 || 9 + c->nrefs > n) goto bad;
    c->refs = calloc((size_t)c->nrefs + 1, sizeof *c->refs);
    for (int i = 0; i < c->nrefs; i++) {
      char *t = tok[9 + i], *colon = strchr(t, ':');
      if (!colon) goto bad;
      *colon = 0;
      c->refs[i].off = (unsigned)strtoul(t, NULL, 10);
      if (c->refs[i].off + 8 > c->dlen) goto bad;
      if (strcmp(colon + 1, "-")) {
        unsigned char *b = unhex(colon + 1, strlen(colon + 1), &c->refs[i].len);
        c->refs[i].data = b ? intern(b, c->refs[i].len) : NULL;
        if (!c->refs[i].data) goto bad;
      }
    }
    return 0;
  }
  case 'E':
    if (parse_ptr(tok[5], &c->a)) goto bad;
    return 0;
  case 'T':
    if (n < 8 || parse_ptr(tok[5], &c->a)) goto bad;
    c->state = atoi(tok[6]);
    if (strcmp(tok[7], "-")) {
      c->args = unhex(tok[7], strlen(tok[7]), &c->alen);
      if (!c->args || c->alen > 16) goto bad;
    }
    return 0;
  case 'F':
    if (parse_ptr(tok[5], &c->a)) goto bad;
    return 0;
  }
bad:
  snprintf(err, errn, "cannot parse a '%s' line (%d fields)", n ? tok[0] : "?", n);
  return -1;
}

static void free_call(rp_call *c) {
  free(c->name);
  free(c->descr);
  /* refs[].data are interned (intern): the plugin may keep those string pointers until exit */
  free(c->refs);
  free(c->args);
}

/* ---- the sequencer ------------------------------------------------------------------ */
typedef struct {
  rp_call *calls;
  size_t ncalls, next;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  h_plugin plug[8];
  rp_map ctx, handle;
  rp_map untimed;             /* rp_set_follow_mask: recorded API, Coll/P2p and KernelCh handles whose
                                 operation's snapshot of the mask lacked KernelCh */
  rp_stats *st;
  int rec_pid;                /* the recorded process: its proxy ops carry this pid */
  const char *lib;            /* the plugin (the stand-in libcuda is looked for beside it) */
  double speed;               /* > 0: paced at this multiple of the recorded time */
  struct timespec t0;         /* CLOCK_MONOTONIC when the replay started */
  /* uniform pacing: the recorded timeline's map onto the spread, (recorded, new) times in
   * recorded order, new times never decreasing; GPU timers go through it (warp_timer) */
  uint64_t *wt, *wT;
  size_t nw;
  int64_t gpu_off;            /* recorded host - GPU timer, the least seen (with nw > 0) */
} rp_run;

static rp_clock_hook g_clock_hook;
void rp_set_clock_hook(rp_clock_hook fn) { g_clock_hook = fn; }
static rp_call_hook g_call_hook;
void rp_set_call_hook(rp_call_hook fn) { g_call_hook = fn; }

/* Runs one call into the plugin, adding the time it took to st->FIELD and setting v.ns. */
#define TIMED(r, field, call) do {                                                                   \
    struct timespec t0_, t1_;                                                                 \
    clock_gettime(CLOCK_MONOTONIC_RAW, &t0_);                                                 \
    call;                                                                                     \
    clock_gettime(CLOCK_MONOTONIC_RAW, &t1_);                                                 \
    v.ns = (t1_.tv_sec - t0_.tv_sec) * 1000000000LL + (t1_.tv_nsec - t0_.tv_nsec);            \
    (r)->st->field += v.ns;                                                                   \
  } while (0)

/* Pacing runs on real time: the kernel's clock, never the interposed one (cl_mono_kernel). */
static void real_now(struct timespec *ts) { cl_mono_kernel(ts); }

static _Atomic uint64_t g_uniform_ns;   /* rp_set_uniform_span */
void rp_set_uniform_span(uint64_t ns) { atomic_store(&g_uniform_ns, ns); }
static _Atomic uint64_t g_burst_ns;     /* rp_set_burst */
void rp_set_burst(uint64_t ns) { atomic_store(&g_burst_ns, ns); }
static _Atomic uint64_t g_first_pause_ns;   /* rp_set_first_pause */
void rp_set_first_pause(uint64_t ns) { atomic_store(&g_first_pause_ns, ns); }
static _Atomic int g_follow_mask;           /* rp_set_follow_mask */
void rp_set_follow_mask(int on) { atomic_store(&g_follow_mask, on); }

/* rp_set_follow_mask, ABI v5+: NCCL's snapshot of the mask at an operation's API call (read at
 * the recorded CollApi or P2pApi start) decides whether its KernelCh (and their phases) come.
 * 1 when the start `type` with recorded handle `rec` and recorded parent `par` is not made. */
static int not_made(rp_run *r, uint64_t type, uint64_t rec, uint64_t par) {
  uint64_t x;
  if (type == CLABI_EV_COLL_API || type == CLABI_EV_P2P_API) {
    if (!(__atomic_load_n(&h_mask, __ATOMIC_RELAXED) & CLABI_EV_KERNEL_CH)) map_put(&r->untimed, rec, 1);
    return 0;
  }
  if (!map_get(&r->untimed, par, &x)) return 0;
  map_put(&r->untimed, rec, 1);   /* its Coll or P2p, then those below it */
  return type == CLABI_EV_KERNEL_CH || type == CLABI_EV_KERNEL_PHASE;
}

/* The event type of a start ('S') whose descriptor holds at least 8 bytes: a uint64_t from v5
 * on, a byte before. */
static uint64_t start_type(const rp_call *c) {
  uint64_t type = c->descr[0];
  if (c->abi >= 5) memcpy(&type, c->descr, sizeof type);
  return type;
}

/* A GPU timer a call carries (KernelCh and kernel-phase starts, KernelChStop and KernelPhaseStop
 * states): where its value sits, 0 when none. */
static unsigned char *timer_of(rp_call *c, unsigned char *d) {
  if (c->kind == 'S' && c->abi >= 4 && c->dlen >= 8) {
    uint64_t type = start_type(c);
    size_t off = type == CLABI_EV_KERNEL_CH ? offsetof(clabi_descr_v5, kernelCh.pTimer)
                 : c->abi >= 7 && type == CLABI_EV_KERNEL_PHASE ? offsetof(clabi_descr_v7, kernelPhase.pTimer) : 0;
    return off && off + 8 <= c->dlen ? d + off : NULL;
  }
  if (c->kind == 'T' && c->args && c->alen >= 8 &&
      (c->state == CLABI_ST_KERNEL_CH_STOP || c->state == CLABI_ST_KERNEL_PHASE_STOP))
    return d;
  return NULL;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Uniform pacing (rp_set_uniform_span): each call's place in the spread (`due`; the rest of a
 * burst keeps its distance from the burst's first call), and the map of the recorded timeline
 * onto the spread that the GPU timers go through: a timer moved as far as its own call was would
 * break the order the GPU kept (a kernel's stop timer observed 270 ms after its start in the
 * job, the two calls now 14 us apart, moved 270 ms less than the start: before it). Through one
 * monotone map, a timer stays between the calls around its time, and before its observation. */
static void plan_spread(rp_run *r, uint64_t span, uint64_t burst) {
  uint64_t pause = atomic_load_explicit(&g_first_pause_ns, memory_order_relaxed), held = 0;
  for (size_t i = 0; i < r->ncalls; i++) {
    rp_call *c = &r->calls[i];
    if (burst && i && c->t - c[-1].t < burst) c->due = c[-1].due + (c->t - c[-1].t);
    else c->due = (uint64_t)((double)i * ((double)span / (double)r->ncalls)) + held;
    uint64_t type = pause && !held && c->kind == 'S' && c->dlen >= 8 ? start_type(c) : 0;
    if (type == CLABI_EV_COLL || type == CLABI_EV_P2P) held = pause;   /* the first operation's start */
  }
  /* the GPU timers' offset from the recorded host clock: the tightest observation */
  int have_off = 0;
  for (size_t i = 0; i < r->ncalls; i++) {
    rp_call *c = &r->calls[i];
    unsigned char *at = timer_of(c, c->kind == 'S' ? c->descr : c->args);
    uint64_t g;
    if (!at) continue;
    memcpy(&g, at, 8);
    if (!g) continue;
    int64_t off = (int64_t)(c->t - g);
    if (!have_off || off < r->gpu_off) { r->gpu_off = off; have_off = 1; }
  }
  if (!have_off) return;
  /* (recorded, new) pairs in recorded-time order, packed as two sorted arrays */
  uint64_t (*pr)[2] = malloc(r->ncalls * sizeof *pr);
  r->wt = malloc(r->ncalls * sizeof *r->wt);
  r->wT = malloc(r->ncalls * sizeof *r->wT);
  if (!pr || !r->wt || !r->wT) { free(pr); return; }   /* nw stays 0: timers left as recorded */
  for (size_t i = 0; i < r->ncalls; i++) { pr[i][0] = r->calls[i].t; pr[i][1] = r->calls[i].due; }
  qsort(pr, r->ncalls, sizeof *pr, cmp_u64);   /* by recorded time (the first member) */
  for (size_t i = 0; i < r->ncalls; i++) {
    r->wt[i] = pr[i][0];
    r->wT[i] = i && pr[i][1] < r->wT[i - 1] ? r->wT[i - 1] : pr[i][1];
  }
  r->nw = r->ncalls;
  free(pr);
}

/* A GPU timer's new value: its recorded host time (timer + offset) through the map, linear
 * between the two calls around it, back to the GPU clock. */
static void warp_timer(const rp_run *r, unsigned char *at) {
  uint64_t g;
  memcpy(&g, at, 8);
  if (!g || !r->nw) return;
  int64_t h = (int64_t)g + r->gpu_off, T;
  if (h <= (int64_t)r->wt[0]) T = h + (int64_t)(r->wT[0] - r->wt[0]);
  else if (h >= (int64_t)r->wt[r->nw - 1]) T = h + (int64_t)(r->wT[r->nw - 1] - r->wt[r->nw - 1]);
  else {
    size_t lo = 0, hi = r->nw - 1;   /* wt[lo] <= h < wt[hi] */
    while (hi - lo > 1) {
      size_t mid = lo + (hi - lo) / 2;
      if ((int64_t)r->wt[mid] <= h) lo = mid; else hi = mid;
    }
    double f = (double)(h - (int64_t)r->wt[lo]) / (double)(r->wt[hi] - r->wt[lo]);
    T = (int64_t)r->wT[lo] + (int64_t)(f * (double)(r->wT[hi] - r->wT[lo]));
  }
  g = (uint64_t)(T - r->gpu_off);
  memcpy(at, &g, 8);
}

/* Sleeps until the call's recorded time (scaled), or its place in an even spread, has passed
 * since the replay started. A call already due runs at once (no system call): recorded calls
 * come microseconds apart. */
static void pace(rp_run *r, rp_call *c) {
  if (r->speed <= 0) return;
  uint64_t span = atomic_load_explicit(&g_uniform_ns, memory_order_relaxed);
  uint64_t due_ns = span ? c->due : (uint64_t)((double)c->t / r->speed);
  struct timespec due = r->t0, now;
  due.tv_sec += (time_t)(due_ns / 1000000000u);
  due.tv_nsec += (long)(due_ns % 1000000000u);
  if (due.tv_nsec >= 1000000000L) { due.tv_sec++; due.tv_nsec -= 1000000000L; }
  real_now(&now);
  long long late = (long long)(now.tv_sec - due.tv_sec) * 1000000000LL + (now.tv_nsec - due.tv_nsec);
  if (late < 0) {
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL) == EINTR) {}
    return;
  }
  if (late > r->st->max_late_ns) r->st->max_late_ns = late;
}

typedef struct { rp_run *r; int thr; } rp_thread;

static uint64_t map_or_pass(rp_run *r, rp_map *m, uint64_t v) {
  uint64_t live;
  if (map_get(m, v, &live)) return live;
  if (v) r->st->foreign_passed++;
  return v;
}

/* A recorded handle the library answered with NULL (an event it chose not to record): NCCL keeps
 * the NULL and calls neither stopEvent nor recordEventState on it, so the replay does not. */
static int unanswered(rp_run *r, uint64_t recorded) {
  uint64_t live;
  if (!map_get(&r->handle, recorded, &live) || live) return 0;
  r->st->calls--;
  r->st->unmade++;
  return 1;
}

static void patch_parent(rp_run *r, unsigned char *d, unsigned off) {
  uint64_t v, live;
  memcpy(&v, d + off, 8);
  if (map_get(&r->handle, v, &live)) { memcpy(d + off, &live, 8); r->st->mapped_parents++; }
  else if (v) r->st->foreign_passed++;
}

/* Makes the call, then tells the call hook what it was. */
static void do_call(rp_run *r, rp_call *c) {
  h_plugin *p = &r->plug[c->abi];
  rp_call_view v = {c->kind, c->abi, 0, NULL, 0};
  _Alignas(16) unsigned char d[160];   /* an S call's descriptor, as passed (v7: 136 bytes) */
  r->st->calls++;
  r->st->abi = c->abi;
  switch (c->kind) {
  case 'I': {
    h_comm_info info = {c->hash, c->name, c->nnodes, c->nranks, c->rank};
    void *ctx = NULL;
    /* the recorded communicator's GPU is current on this thread, as it was in the job (a
     * process driving several GPUs); without the stand-in, every communicator is GPU-less */
    if (c->dev >= 0) h_cuda_set_device(r->lib, c->dev);
    TIMED(r, lifecycle_ns, h_init(p, &ctx, &info));
    map_put(&r->ctx, c->a, (uint64_t)(uintptr_t)ctx);
    r->st->inits++;
    break;
  }
  case 'S': {
    memset(d, 0, sizeof d);
    memcpy(d, c->descr, c->dlen);
    for (int i = 0; i < c->nrefs; i++) {
      void *ptr = c->refs[i].data;   /* lives until the end of the replay */
      memcpy(d + c->refs[i].off, &ptr, sizeof ptr);
    }
    uint64_t type = c->abi >= 5 ? *(uint64_t *)d : d[0];
    /* a ProxyOp created by the recorded process is ours now; other pids stay foreign */
    int32_t pid;
    memcpy(&pid, d + 24, 4);
    if (type == CLABI_EV_PROXY_OP && r->rec_pid && pid == r->rec_pid) {
      pid = (int32_t)getpid();
      memcpy(d + 24, &pid, 4);
    }
    uint64_t rec_parent;
    memcpy(&rec_parent, d + 8, 8);
    if (c->abi >= 5 && atomic_load_explicit(&g_follow_mask, memory_order_relaxed) &&
        not_made(r, type, c->b, rec_parent)) {
      map_put(&r->handle, c->b, 0);   /* as a NULL answer: its state and stop are not made either */
      r->st->calls--;
      r->st->unmade++;
      break;
    }
    patch_parent(r, d, 8);
    unsigned char *tm = r->nw ? timer_of(c, d) : NULL;   /* uniform pacing: through the map */
    if (tm) warp_timer(r, tm);
    if (c->abi >= 5 && type == CLABI_EV_COLL) patch_parent(r, d, offsetof(clabi_descr_v5, coll.parentGroup));
    if (c->abi >= 5 && type == CLABI_EV_P2P) patch_parent(r, d, offsetof(clabi_descr_v5, p2p.parentGroup));
    void *ctx = (void *)(uintptr_t)map_or_pass(r, &r->ctx, c->a);
    void *h = NULL;
    int rc;
    TIMED(r, plugin_ns, rc = h_start_raw(p, ctx, &h, d));
    if (rc != 0) r->st->bad_rc++;
    v.type = type;
    v.descr = d;
    map_put(&r->handle, c->b, (uint64_t)(uintptr_t)h);
    r->st->starts++;
    break;
  }
  case 'E': {
    if (unanswered(r, c->a)) break;
    void *h = (void *)(uintptr_t)map_or_pass(r, &r->handle, c->a);
    int rc;
    TIMED(r, plugin_ns, rc = h_stop(p, h));
    if (rc != 0) r->st->bad_rc++;
    r->st->stops++;
    break;
  }
  case 'T': {
    _Alignas(16) unsigned char a[16];
    memset(a, 0, sizeof a);
    if (c->args) memcpy(a, c->args, c->alen);
    unsigned char *tm = r->nw ? timer_of(c, a) : NULL;
    if (tm) warp_timer(r, tm);
    if (unanswered(r, c->a)) break;
    void *h = (void *)(uintptr_t)map_or_pass(r, &r->handle, c->a);
    int rc;
    TIMED(r, plugin_ns, rc = c->args ? h_state_raw(p, h, c->state, a) : h_state_noargs(p, h, c->state));
    if (rc != 0) r->st->bad_rc++;
    r->st->states++;
    break;
  }
  case 'F': {
    void *ctx = (void *)(uintptr_t)map_or_pass(r, &r->ctx, c->a);
    int rc;
    TIMED(r, lifecycle_ns, rc = h_finalize(p, ctx));
    if (rc != 0) r->st->bad_rc++;
    r->st->finalizes++;
    break;
  }
  }
  if (g_call_hook) g_call_hook(&v);
}

static void *rp_thread_main(void *arg) {
  rp_thread *t = arg;
  rp_run *r = t->r;
  if (r->speed > 0) prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);   /* wake within ~1 us, not 50 */
  pthread_mutex_lock(&r->mu);
  for (;;) {
    while (r->next < r->ncalls && r->calls[r->next].thr != t->thr) pthread_cond_wait(&r->cv, &r->mu);
    if (r->next >= r->ncalls) break;
    /* our turn: nobody else runs until we advance `next` */
    pace(r, &r->calls[r->next]);
    if (g_clock_hook) g_clock_hook(r->calls[r->next].t);
    do_call(r, &r->calls[r->next]);
    r->next++;
    pthread_cond_broadcast(&r->cv);
  }
  struct timespec cpu;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
    r->st->threads_cpu_ns += cpu.tv_sec * 1000000000LL + cpu.tv_nsec;
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

int rp_replay(const char *rec_path, const char *lib, rp_stats *st) {
  return rp_replay_paced(rec_path, lib, 0, st);
}

int rp_replay_paced(const char *rec_path, const char *lib, double speed, rp_stats *st) {
  memset(st, 0, sizeof *st);
  gzFile gz = gzopen(rec_path, "rb");
  if (!gz) { snprintf(st->err, sizeof st->err, "cannot open %s", rec_path); return -1; }
  rp_run r;
  memset(&r, 0, sizeof r);
  r.st = st;
  r.speed = speed;
  r.lib = lib;
  size_t cap = 1024, linecap = 1 << 20;
  r.calls = malloc(cap * sizeof *r.calls);
  char *line = malloc(linecap);
  int rc = 0, maxthr = -1, need[8] = {0};
  long lineno = 0;
  while (gzgets(gz, line, (int)linecap)) {
    lineno++;
    size_t l = strlen(line);
    if (l && line[l - 1] == '\n') line[--l] = 0;
    else if (!gzeof(gz)) { snprintf(st->err, sizeof st->err, "line %ld too long", lineno); rc = -1; break; }
    if (line[0] == '#') { sscanf(line, "# commlens-record %*d pid %d", &r.rec_pid); continue; }
    if (!l) continue;
    if (r.ncalls == cap) r.calls = realloc(r.calls, (cap *= 2) * sizeof *r.calls);
    char why[128];
    if (parse_line(line, &r.calls[r.ncalls], why, sizeof why)) {
      snprintf(st->err, sizeof st->err, "%s: line %ld: %s", rec_path, lineno, why);
      rc = -1;
      break;
    }
    if (r.calls[r.ncalls].thr > maxthr) maxthr = r.calls[r.ncalls].thr;
    need[r.calls[r.ncalls].abi] = 1;
    r.ncalls++;
  }
  free(line);
  gzclose(gz);
  /* a recording replayed whole has every KernelCh NCCL gave then: the library is told to time
   * every collective (else its sample would mark some untimed whose KernelCh still come) */
  if (!atomic_load(&g_follow_mask)) setenv("COMMLENS_TIMERS", "all", 0);
  for (int v = 1; v <= 7 && rc == 0; v++)
    if (need[v] && h_open(&r.plug[v], lib, v)) {
      snprintf(st->err, sizeof st->err, "cannot load ncclProfiler_v%d", v);
      rc = -1;
    }
  if (rc == 0 && r.ncalls) {
    pthread_mutex_init(&r.mu, NULL);
    pthread_cond_init(&r.cv, NULL);
    uint64_t span = atomic_load_explicit(&g_uniform_ns, memory_order_relaxed);
    if (speed > 0 && span) plan_spread(&r, span, atomic_load_explicit(&g_burst_ns, memory_order_relaxed));
    real_now(&r.t0);
    int n = maxthr + 1;
    st->nthreads = n;
    pthread_t *tids = calloc((size_t)n, sizeof *tids);
    rp_thread *args = calloc((size_t)n, sizeof *args);
    for (int i = 0; i < n; i++) {
      args[i] = (rp_thread){&r, i};
      pthread_create(&tids[i], NULL, rp_thread_main, &args[i]);
    }
    for (int i = 0; i < n; i++) pthread_join(tids[i], NULL);
    free(tids);
    free(args);
  }
  for (int v = 1; v <= 7; v++) h_close(&r.plug[v]);
  for (size_t i = 0; i < r.ncalls; i++) free_call(&r.calls[i]);
  free(r.calls);
  free(r.wt);
  free(r.wT);
  free(r.ctx.k); free(r.ctx.v); free(r.handle.k); free(r.handle.v); free(r.untimed.k); free(r.untimed.v);
  return rc;
}
