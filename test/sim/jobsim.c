/* jobsim.c: see jobsim.h. Owns the job's timeline (host readiness, enqueues, GPU starts on a GPU
 * of one's own or on a time-shared one, collective ends, the next step), the planted truth, the
 * digests written through exporters/digest.c and the CLI's reading of them. Test support: it
 * decides nothing the verdict decides. */
#include "test/sim/jobsim.h"
#include "exporters/digest.h"
#include "tools/commlens/model/load.h"
#include "tools/commlens/analyse/clock_align.h"
#include "tools/commlens/analyse/verdict.h"
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T0 1790000000000000000LL        /* the job's first ns (Unix time) */
#define LAUNCH_NS 20000.0               /* an enqueue to its kernel's earliest start */
#define SLICE_NS 2260000.0              /* a time-shared GPU's scheduler slice (as measured) */
#define TAIL 0.15                       /* the optimizer and data loading after the last collective,
                                           a share of the step's compute */

void js_defaults(js_cfg *c) {
  memset(c, 0, sizeof *c);
  c->nranks = 4; c->nsteps = 100; c->work = JS_DDP; c->per_host = 4; c->per_gpu = 1;
  c->step_ns = 60e6; c->jitter_ns = 0.3e6; c->hiccup_p = 0.002; c->profiler_from = 1; c->profiler_to = 0;
  c->profiler_ns = 5e6; c->plant = JS_CLEAN; c->late_ns = 10e6; c->period = 3; c->share = 0.1; c->seed = 1;
}
const char *js_plant_name(enum js_plant p) {
  static const char *const n[] = {"clean", "persistent", "periodic", "turns", "random", "burst", "oneoff"};
  return p <= JS_ONEOFF ? n[p] : "?";
}
const char *js_work_name(enum js_work w) { return w == JS_DDP ? "ddp" : w == JS_FSDP ? "fsdp" : "tp"; }

/* ---- randomness: one stream per job, fixed by its seed ---- */
typedef struct { uint64_t s; } rng_t;
static double ur(rng_t *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL; z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL; z ^= z >> 31;
  return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}
static double laplace(rng_t *r, double b) { double u = ur(r) - 0.5; return (u < 0 ? b : -b) * log(1 - 2 * fabs(u)); }
static double expo(rng_t *r, double mean) { return -mean * log(ur(r)); }

/* ---- the step's collectives ---- */
typedef struct { int comm; const char *func; uint64_t bytes; double at, xfer; } plan_coll;
typedef struct { plan_coll *c; int n; int ncomm; int tp; } plan;

/* at: when the host enqueues it, as a share of the step's compute; xfer: its transfer, ns */
static void add(plan *p, int comm, const char *func, uint64_t bytes, double at) {
  p->c[p->n++] = (plan_coll){ comm, func, bytes, at, 150000.0 + (double)bytes / 40.0 };   /* ~40 GB/s */
}
static void make_plan(const js_cfg *c, plan *p) {
  p->c = calloc(64, sizeof *p->c); p->n = 0; p->ncomm = 1; p->tp = 1;
  switch (c->work) {
  case JS_DDP:   /* the backward pass's buckets, last layers first */
    for (int b = 0; b < 4; b++) add(p, 0, "AllReduce", (uint64_t)(25 - 5 * b) << 20, 0.4 + 0.15 * b);
    break;
  case JS_FSDP:  /* an all-gather per layer forward, all-gather and reduce-scatter per layer backward */
    for (int l = 0; l < 3; l++) add(p, 0, "AllGather", (uint64_t)(8 + l) << 20, 0.1 * l);
    for (int l = 0; l < 3; l++) {
      add(p, 0, "AllGather", (uint64_t)(10 - l) << 20, 0.35 + 0.15 * l);
      add(p, 0, "ReduceScatter", (uint64_t)(30 - 3 * l) << 20, 0.42 + 0.15 * l);
    }
    break;
  case JS_TP:    /* tensor-parallel groups of up to 4 ranks through the forward and backward
                    passes, then data-parallel over everyone */
    p->tp = c->nranks >= 8 ? 4 : 2;
    p->ncomm = 1 + c->nranks / p->tp;
    for (int l = 0; l < 3; l++) add(p, 1, "AllReduce", 4u << 20, 0.1 * l);
    for (int l = 0; l < 3; l++) add(p, 1, "AllReduce", 6u << 20, 0.35 + 0.15 * l);
    add(p, 0, "AllReduce", 40u << 20, 0.72);   /* right after the backward pass */
    break;
  }
}
static uint64_t comm_hash(int id) { return 0x51a0c0de00000000ULL + (uint64_t)id * 0x10001ULL; }

/* ---- the planted truth ---- */
static double planted(const js_cfg *c, int r, int s) {
  int v = -1;
  for (int i = 0; i < c->nvictim; i++) if (c->victim[i] == r) v = i;
  if (v < 0 || s < 1) return 0;
  switch (c->plant) {
  case JS_CLEAN: return 0;
  case JS_PERSISTENT: return c->late_ns;
  case JS_PERIODIC: return s % c->period == c->phase ? c->late_ns : 0;
  case JS_TURNS: return s % c->nvictim == v ? c->late_ns : 0;
  case JS_RANDOM: {   /* a fixed pseudo-random share of the steps, per victim */
    rng_t q = { c->seed * 7919 + (uint64_t)s * 104729 + (uint64_t)r };
    return ur(&q) < c->share ? c->late_ns : 0;
  }
  case JS_BURST: return s >= c->burst_from && s <= c->burst_to ? c->late_ns : 0;
  case JS_ONEOFF: return s == c->oneoff_step ? c->late_ns : 0;
  }
  return 0;
}

/* ---- output: one digest per rank ---- */
typedef struct { cl_digest *dg; cl_dg_buf out; char path[600]; int bad; } rank_out;

static void flush_rank(rank_out *o, int last) {
  if (cl_digest_take(o->dg, &o->out) != 0) o->bad = 1;
  if (!last && o->out.len < (1u << 20)) return;
  if (last) {
    char st[200];
    snprintf(st, sizeof st, "{\"final\":true,\"events\":%llu,\"dropped\":0,\"calls\":1,\"overhead_ns_per_call\":1,\"overhead_pct\":0.01}",
             (unsigned long long)cl_digest_taken(o->dg));
    cl_dg_block(&o->out, CL_DG_STATS, (const uint8_t *)st, strlen(st));
  }
  FILE *f = fopen(o->path, "ab");
  if (!f || o->out.oom || fwrite(o->out.p, 1, o->out.len, f) != o->out.len) o->bad = 1;
  if (f && fclose(f) != 0) o->bad = 1;
  o->out.len = 0;
}

static int open_ranks(const js_cfg *c, const char *dir, rank_out *o) {
  for (int r = 0; r < c->nranks; r++) {
    int h = r / c->per_host, dev = (r % c->per_host) / c->per_gpu;
    snprintf(o[r].path, sizeof o[r].path, "%s/commlens-r%d-h%d-%d-g%d.digest", dir, r, h, 1000 + r, dev);
    char head[512];
    /* hosts whose clocks are within 50 us say they are synchronised (100 us at most); hosts
     * apart say they are not */
    int synced = c->clock_err_ns <= 50e3;
    snprintf(head, sizeof head, "{\"format\":1,\"version\":\"0.1.0\",\"abi\":6,\"host\":\"h%d\",\"boot_id\":"
             "\"%08x-0000-4000-8000-%012llx\",\"clock_sync\":{\"synchronised\":%s,\"esterror_us\":%d,\"maxerror_us\":%d},"
             "\"cuda_device\":%d,\"os_pid\":%d,\"rank\":%d,\"rank_source\":\"RANK\",\"job\":\"sim-%llx\","
             "\"clock\":{\"realtime_offset_ns\":0,\"offset_error_ns\":100},\"mask\":4095,\"events\":\"default\"}",
             h, (unsigned)h, (unsigned long long)(c->seed & 0xffffffffffffULL), synced ? "true" : "false",
             synced ? 20 : 16000000, synced ? 100 : 16000000, dev, 1000 + r, r, (unsigned long long)c->seed);
    o[r].dg = cl_digest_new();
    FILE *f = fopen(o[r].path, "wbx");
    if (!o[r].dg || !f) { if (f) fclose(f); fprintf(stderr, "jobsim: cannot create %s\n", o[r].path); return -1; }
    fclose(f);
    cl_digest_file_head(&o[r].out, head, strlen(head));
  }
  return 0;
}

static void put_row(rank_out *o, const js_cfg *c, int r, uint64_t comm, int members, const plan_coll *k, uint64_t seq,
                    double enq, double gs, double ge, double off) {
  if (!o->dg) return;   /* the clean twin: timeline only */
  cl_dg_coll row = { .comm_hash = comm, .comm_name = "", .rank = r, .nranks = members, .func = k->func,
                     .algo = "RING", .proto = "SIMPLE", .seq = seq, .bytes = k->bytes, .nchannels = 8,
                     .enq_start = (uint64_t)llround(enq + off), .enq_stop = (uint64_t)llround(enq + off + 3000),
                     .src = CL_DG_SRC_CUPTI, .gpu_start = (uint64_t)llround(gs + off), .gpu_end = (uint64_t)llround(ge + off),
                     .exposed_ns = -1, .tail_ch = -1 };
  (void)c;
  cl_digest_coll(o->dg, &row);
}

/* ---- the timeline ---- */
typedef struct {
  const js_cfg *c; plan p; rng_t rng;
  double *base;              /* per rank: when its host may start the step (saw the last end) */
  double *ready, *free_at, *gpu_lag, *enq, *start;   /* per rank, this step */
  double *hoff;              /* per host: its clock's offset from true time */
  int *slot;                 /* per rank: its place in its GPU's scheduler round this step */
  double *phase;             /* per GPU: where its rounds start this step */
  uint64_t *seq;             /* per communicator */
  rank_out *o;
} sim;

/* The start of rank r's next slice at or after t on a time-shared GPU (its place in the round
 * of `per_gpu` contexts, and the rounds' phase, drawn per step: an idle context gives the GPU up
 * early, so the schedule does not keep one order); t itself on a GPU of its own. */
static double on_gpu(const sim *m, int r, double t) {
  int k = m->c->per_gpu;
  if (k <= 1) return t;
  double round = k * SLICE_NS, ph = m->phase[r / k];
  double at = floor((t - ph) / round) * round + ph + m->slot[r] * SLICE_NS;
  return at >= t ? at : at + round;
}

/* One collective of the plan on one communicator: members arrive (enqueue, GPU start), all end
 * together one transfer after the last GPU start. */
static void collective(sim *m, const plan_coll *k, int comm, const int *mem, int nm) {
  double last = 0;
  for (int i = 0; i < nm; i++) {
    int r = mem[i];
    double enq = m->ready[r] + k->at * m->c->step_ns * m->c->per_gpu + laplace(&m->rng, 2000);
    /* more GPU work before the step's collectives delays each on its stream (the host's
     * enqueues stand for the compute before them) */
    double g = fmax(enq + LAUNCH_NS + m->gpu_lag[r], m->free_at[r]) + expo(&m->rng, 3000);
    m->start[r] = on_gpu(m, r, g);
    m->enq[r] = enq;
    if (m->start[r] > last) last = m->start[r];
  }
  double end = last + k->xfer;
  for (int i = 0; i < nm; i++) {
    int r = mem[i];
    double e = end + expo(&m->rng, 2000);
    put_row(&m->o[r], m->c, r, comm_hash(comm), nm, k, m->seq[comm], m->enq[r], m->start[r], e,
            m->hoff[r / m->c->per_host]);
    m->free_at[r] = e;
  }
  m->seq[comm]++;
}

/* The ranks of communicator `comm` (0: everyone; else a tensor-parallel group) into mem. */
static int members(const sim *m, int comm, int *mem) {
  int n = 0;
  for (int r = 0; r < m->c->nranks; r++) if (!comm || 1 + r / m->p.tp == comm) mem[n++] = r;
  return n;
}

/* Each GPU's scheduler round this step: its contexts in a random order. */
static void shuffle_slots(sim *m) {
  int k = m->c->per_gpu;
  for (int g = 0; g * k < m->c->nranks; g++) {
    int *s = &m->slot[g * k];
    m->phase[g] = ur(&m->rng) * k * SLICE_NS;
    for (int i = 0; i < k && g * k + i < m->c->nranks; i++) s[i] = i;
    for (int i = k - 1; i > 0; i--) {
      if (g * k + i >= m->c->nranks) continue;
      int j = (int)(ur(&m->rng) * (i + 1)), t = s[i]; s[i] = s[j]; s[j] = t;
    }
  }
}

/* One step: every rank's host readiness (jitter, hiccups, the profiler's window, what is
 * planted), the plan's collectives in order, and when each host sees the step's end. */
static void step(sim *m, int s, int *mem) {
  const js_cfg *c = m->c;
  shuffle_slots(m);
  for (int r = 0; r < c->nranks; r++) {
    double d = planted(c, r, s), x = expo(&m->rng, c->jitter_ns);
    if (ur(&m->rng) < c->hiccup_p) x += fmin(50e6, 0.2e6 * pow(ur(&m->rng), -1 / 1.5));
    if (s >= c->profiler_from && s <= c->profiler_to) x += expo(&m->rng, c->profiler_ns);
    m->ready[r] = m->base[r] + x + (c->gpu_side ? 0 : d);
    m->gpu_lag[r] = c->gpu_side ? d : 0;
  }
  for (int j = 0; j < m->p.n; j++) {
    const plan_coll *k = &m->p.c[j];
    for (int comm = k->comm ? 1 : 0; comm < (k->comm ? m->p.ncomm : 1); comm++) {
      int nm = members(m, comm, mem);
      if (nm >= 2) collective(m, k, comm, mem, nm);
    }
  }
  /* each host sees the end when its context next holds the GPU: within a slice, at random */
  for (int r = 0; r < c->nranks; r++)
    m->base[r] = m->free_at[r] + (c->per_gpu > 1 ? ur(&m->rng) * SLICE_NS : 0) + TAIL * c->step_ns * c->per_gpu +
                 expo(&m->rng, 5000);
}

/* Start-up: a small all-gather with one rank 20 ms late, the model's broadcast, and a first
 * step whose collectives set up their connections. */
static void startup(sim *m, int *mem) {
  static const plan_coll init[2] = { {0, "AllGather", 4096, 0, 200000}, {0, "Broadcast", 64u << 20, 0.01, 2e6} };
  int nm = members(m, 0, mem);
  shuffle_slots(m);
  for (int r = 0; r < m->c->nranks; r++) m->ready[r] = m->base[r] + (r == (int)(m->c->seed % (uint64_t)nm) ? 20e6 : 0);
  for (int j = 0; j < 2; j++) collective(m, &init[j], 0, mem, nm);
  for (int r = 0; r < m->c->nranks; r++) m->base[r] = m->free_at[r] + 30e6;
}

/* Runs the job; writes each rank's digest into dir (NULL: writes nothing). Its span into *span.
 * 0, or -1 when a file could not be written. */
static int simulate(const js_cfg *c, const char *dir, double *span) {
  sim m = { .c = c, .rng = { c->seed } };
  make_plan(c, &m.p);
  size_t n = (size_t)c->nranks;
  double **arr[] = { &m.base, &m.ready, &m.free_at, &m.gpu_lag, &m.enq, &m.start };
  for (size_t k = 0; k < sizeof arr / sizeof *arr; k++) *arr[k] = calloc(n, sizeof(double));
  int nhost = (c->nranks + c->per_host - 1) / c->per_host;
  m.hoff = calloc((size_t)nhost, sizeof *m.hoff);
  for (int h = 1; h < nhost; h++) m.hoff[h] = (2 * ur(&m.rng) - 1) * (c->clock_err_ns > 50e3 ? c->clock_err_ns : 50e3);
  m.slot = calloc(n + (size_t)c->per_gpu, sizeof *m.slot);
  m.phase = calloc(n / (size_t)c->per_gpu + 1, sizeof *m.phase);
  m.seq = calloc((size_t)m.p.ncomm + 1, sizeof *m.seq);
  m.o = calloc(n, sizeof *m.o);
  int *mem = calloc(n, sizeof *mem), rc = dir ? open_ranks(c, dir, m.o) : 0;
  for (int r = 0; r < c->nranks; r++) m.base[r] = T0;
  if (!rc) {
    startup(&m, mem);
    for (int s = 0; s < c->nsteps; s++) {
      step(&m, s, mem);
      for (int r = 0; dir && r < c->nranks && (s % 64 == 63 || s + 1 == c->nsteps); r++) flush_rank(&m.o[r], s + 1 == c->nsteps);
    }
    for (int r = 0; r < c->nranks; r++) if (m.o[r].bad) { fprintf(stderr, "jobsim: cannot write %s\n", m.o[r].path); rc = -1; }
  }
  *span = 0;
  for (int r = 0; r < c->nranks; r++) *span = fmax(*span, m.free_at[r] - T0);
  for (int r = 0; r < c->nranks; r++) { cl_digest_free(m.o[r].dg); free(m.o[r].out.p); }
  for (size_t k = 0; k < sizeof arr / sizeof *arr; k++) free(*arr[k]);
  free(m.hoff); free(m.slot); free(m.phase); free(m.seq); free(m.o); free(mem); free(m.p.c);
  return rc;
}

int js_write(const js_cfg *c, const char *dir, js_truth *t) {
  memset(t, 0, sizeof *t);
  if (c->nranks < 2 || c->per_host < 1 || c->per_gpu < 1 || c->per_host % c->per_gpu || c->nsteps < 1) {
    fprintf(stderr, "jobsim: bad layout\n");
    return -1;
  }
  int rc = simulate(c, dir, &t->job_ns);
  if (c->plant != JS_CLEAN) {   /* the same job, the same noise, nothing planted */
    js_cfg twin = *c;
    twin.plant = JS_CLEAN;
    double clean = 0;
    simulate(&twin, NULL, &clean);
    t->cost_ns = t->job_ns - clean;
  }
  size_t n = (size_t)c->nranks;
  t->nranks = c->nranks; t->nsteps = c->nsteps; t->gpu_side = c->gpu_side;
  t->late = calloc(n * (size_t)c->nsteps, sizeof *t->late);
  for (int s = 0; s < c->nsteps; s++) {
    double most = 0;
    for (int r = 0; r < c->nranks; r++) {
      t->late[(size_t)r * (size_t)c->nsteps + (size_t)s] = planted(c, r, s);
      most = fmax(most, planted(c, r, s));
    }
    t->planted_ns += most;
  }
  for (int i = 0; i < c->nvictim && c->plant != JS_CLEAN; i++) t->planted[t->nplanted++] = c->victim[i];
  return rc;
}

void js_truth_free(js_truth *t) { free(t->late); memset(t, 0, sizeof *t); }

int js_judge(const char *dir, int threads, js_verdict *out) {
  memset(out, 0, sizeof *out);
  out->largest = -1;
  cl_job job;
  char *paths[1] = { (char *)dir };
  if (!cl_job_load(&job, paths, 1, threads)) { cl_job_free(&job); return -1; }
  cl_job_instances(&job);
  cl_clock_model cm;
  cl_clock_align(&job, &cm);
  cl_verdict_an vd;
  cl_verdict_compute(&job, &cm, &vd);
  const cl_sg_verdict *v = &vd.v;
  out->kind = (int)v->kind;
  for (int k = 0; k < v->nstraggler && k < 64; k++) out->named[out->nnamed++] = job.r[v->straggler[k].who]->rank;
  if (v->nstraggler) {
    out->pattern = (int)v->straggler[0].pattern; out->period = v->straggler[0].period; out->gpu_side = v->straggler[0].gpu_side;
  }
  for (size_t k = 0; k < v->nstall && k < 8; k++) out->stalls[out->nstalls++] = job.r[v->stall[k].who]->rank;
  if (v->largest.who >= 0) {
    out->largest = job.r[v->largest.who]->rank;
    out->largest_share = v->job_ns > 0 ? v->largest.cost_ns / v->job_ns : 0;
  }
  snprintf(out->line, sizeof out->line, "%s", vd.line);
  cl_verdict_free(&vd);
  cl_cm_free(&cm);
  cl_job_free(&job);
  return 0;
}

/* ---- scoring and running ---- */
static int in_list(const int *a, int n, int x) {
  for (int i = 0; i < n; i++) if (a[i] == x) return 1;
  return 0;
}

void js_score_of(const js_cfg *c, const js_truth *t, const js_verdict *v, js_score *s) {
  memset(s, 0, sizeof *s);
  s->accused = v->nnamed > 0;
  s->stalls = v->nstalls;
  if (c->plant == JS_CLEAN) return;
  s->first = v->nnamed > 0 && in_list(t->planted, t->nplanted, v->named[0]);
  s->all = 1;
  for (int i = 0; i < t->nplanted; i++) s->all &= in_list(v->named, v->nnamed, t->planted[i]);
  for (int i = 0; i < v->nnamed; i++) s->wrong |= !in_list(t->planted, t->nplanted, v->named[i]);
  s->oneoff = in_list(v->stalls, v->nstalls, c->victim[0]) || in_list(v->named, v->nnamed, c->victim[0]);
  static const int want[] = { -1, CL_SG_EVERY, CL_SG_EVERY_KTH, CL_SG_TURNS, CL_SG_SOME, CL_SG_BURST, -1 };
  int p = want[c->plant];
  s->pattern = s->first && v->gpu_side == c->gpu_side &&
               (p == v->pattern || (c->plant == JS_PERIODIC && v->pattern == CL_SG_TURNS) ||
                (c->plant == JS_TURNS && c->nvictim == c->nranks && v->pattern == CL_SG_TURNS)) &&
               (c->plant != JS_PERIODIC || v->period == c->period);
}

static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    for (struct dirent *e; (e = readdir(d));)
      if (e->d_name[0] != '.') unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
  }
  rmdir(dir);
}

int js_run(const js_cfg *c, const char *base, int threads, js_truth *t, js_verdict *v) {
  char dir[600];
  snprintf(dir, sizeof dir, "%s/jobsim-XXXXXX", base);
  if (!mkdtemp(dir)) { perror(dir); memset(t, 0, sizeof *t); return -1; }
  int rc = js_write(c, dir, t);
  if (!rc) rc = js_judge(dir, threads, v);
  remove_dir(dir);
  return rc;
}

/* ---- the calibration's jobs ---- */
void js_layout_job(const js_layout *l, uint64_t seed, js_cfg *c) {
  js_defaults(c);
  rng_t q = { seed * 0x2545f4914f6cdd1dULL + 17 };
  c->seed = seed;
  c->nranks = l->nranks; c->nsteps = l->nsteps;
  c->per_gpu = l->shared ? (l->nranks >= 4 ? 4 : 2) : 1;
  int host = l->nranks < 8 ? l->nranks : 8;
  if (l->clocks) host = host / 2 >= c->per_gpu ? host / 2 : c->per_gpu;   /* two hosts at least, where a GPU allows */
  c->per_host = host;
  c->clock_err_ns = l->clocks ? 2e6 : 0;
  double w = ur(&q);
  c->work = w < 0.5 ? JS_DDP : w < 0.8 ? JS_FSDP : JS_TP;
  static const double jit[3] = { 0.1e6, 0.3e6, 1e6 }, step[3] = { 30e6, 60e6, 120e6 };
  c->jitter_ns = jit[(int)(ur(&q) * 3)];
  c->step_ns = step[(int)(ur(&q) * 3)];
  if (ur(&q) < 0.3) {   /* a profiler's window of host work on every rank */
    c->profiler_from = 1 + (int)(ur(&q) * (l->nsteps / 2));
    c->profiler_to = c->profiler_from + (l->nsteps >= 20 ? l->nsteps / 10 : 2);
  }
}

double js_late_for(const js_cfg *c, double share, double freq, int gpu_side) {
  double res = gpu_side && c->per_gpu > 1 ? (c->per_gpu - 0.9) * SLICE_NS : 50e3;
  if (c->clock_err_ns > 50e3 && c->nranks > c->per_host) res = fmax(res, 2 * c->clock_err_ns);   /* two hosts' clocks */
  return fmax(share * c->step_ns * c->per_gpu / (freq > 0 ? freq : 1), 3 * res);
}

void js_plant_on(js_cfg *c, enum js_plant plant, double late_ns, int gpu_side, double share, int nvictim, uint64_t seed) {
  rng_t q = { seed * 0x9e3779b97f4a7c15ULL + 5 };
  c->plant = plant; c->late_ns = late_ns; c->gpu_side = gpu_side; c->share = share;
  c->nvictim = plant == JS_TURNS ? (nvictim < c->nranks ? nvictim : c->nranks) : 1;
  for (int i = 0; i < c->nvictim; i++) {
    int v;
    do v = (int)(ur(&q) * c->nranks); while (in_list(c->victim, i, v));
    c->victim[i] = v;
  }
  c->period = share > 0 && share < 1 ? (int)lround(1 / share) : 4;
  c->phase = (int)(ur(&q) * c->period);
  int len = (int)lround(share * c->nsteps);
  if (len < 2) len = 2;
  c->burst_from = 1 + (int)(ur(&q) * (c->nsteps - len > 1 ? c->nsteps - len - 1 : 1));
  c->burst_to = c->burst_from + len - 1;
  c->oneoff_step = 1 + (int)(ur(&q) * (c->nsteps - 1));
}
