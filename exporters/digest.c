/* digest.c: see digest.h. Rows are columns at encoding time: each field of a block is written
 * for every row before the next field, times as zigzag deltas, so zlib sees long runs of
 * small, similar numbers. Each block carries its own string and communicator tables, so any
 * block decodes alone (a damaged one costs only its rows). */
#include "exporters/digest.h"
#include "common/grow.h"
#include "common/hash.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
  uint32_t comm, func, algo, proto;      /* indexes into the block's tables */
  uint8_t p2p, src, untimed; int16_t tail_ch; int32_t nchannels, peer;
  uint64_t seq, bytes, enq_start, enq_stop, gpu_start, gpu_end;
  int64_t exposed_ns;
} row;
typedef struct { uint64_t hash; uint32_t name; int32_t rank, nranks; } comm_ent;
/* (comm, channel, peer): KernelCh durations under peer -1, proxy-step waits under their peer */
typedef struct { uint64_t comm; int32_t channel, peer; uint64_t n, sum, max; int64_t max_seq; uint64_t nsteps, w[CL_DG_NWAITS]; } chan_ent;
typedef struct { uint64_t id, start, end; } step_ent;

#define MAX_STR 255
#define MAX_STRS 4096
#define MAX_CHANS 65536

/* Every finished collective and channel asks for its strings and its channel entry: a string
 * remembers the address it was last asked by (a hit is checked against the text unless the
 * caller vouches for its names, cl_dg_coll.static_names), and channel entries are found
 * through a hash of their key. */
#define STR_MEMO 64
#define KC_CACHE 64   /* channels of the last communicator a KernelCh row was asked for */
typedef struct { const char *at; uint32_t id; } str_memo;

struct cl_digest {
  row *rows; size_t nrows, caprows;
  char **strs; size_t nstrs, capstrs;
  str_memo memo[STR_MEMO];
  comm_ent *comms; size_t ncomms, capcomms;
  chan_ent *chans; size_t nchans, capchans;
  uint32_t *chix; size_t chcap;            /* index + 1 into chans by key hash; 0: empty */
  uint64_t kc_comm;                        /* the communicator whose KernelCh rows ... */
  uint32_t kc_ix[KC_CACHE];                /* ... are at chans[kc_ix[channel] - 1] (0: not known) */
  step_ent *steps; size_t nsteps, capsteps;
  uint64_t lost, taken;
  cl_dg_buf enc;                           /* a block's encoding, kept from take to take */
  uint64_t *col; size_t capcol;            /* one column of the collectives, the same */
};

cl_digest *cl_digest_new(void) { return calloc(1, sizeof(cl_digest)); }

static void forget(cl_digest *d) {
  for (size_t i = 0; i < d->nstrs; i++) free(d->strs[i]);
  d->nrows = d->nstrs = d->ncomms = d->nchans = d->nsteps = 0;
  memset(d->memo, 0, sizeof d->memo);
  if (d->chix) memset(d->chix, 0, d->chcap * sizeof *d->chix);
  memset(d->kc_ix, 0, sizeof d->kc_ix);
}
void cl_digest_free(cl_digest *d) {
  if (!d) return;
  forget(d);
  free(d->rows); free(d->strs); free(d->comms); free(d->chans); free(d->chix); free(d->steps);
  free(d->enc.p); free(d->col);
  free(d);
}

/* Room for one more element in *arr (count n, capacity *cap); -1 when out of memory. */
static int room(void *arr, size_t n, size_t *cap, size_t elem) { return cl_grow(arr, cap, n + 1, elem, 64, 0); }

/* str_id's search by text, and the string's addition when new; it remembers the address in m. */
static __attribute__((noinline)) uint32_t str_find(cl_digest *d, const char *s, str_memo *m) {
  size_t n = strnlen(s, MAX_STR);
  for (size_t i = d->nstrs; i-- > 0;)
    if (!strncmp(d->strs[i], s, n) && d->strs[i][n] == 0) { *m = (str_memo){s, (uint32_t)i}; return (uint32_t)i; }
  if (d->nstrs >= MAX_STRS || room(&d->strs, d->nstrs, &d->capstrs, sizeof *d->strs)) return UINT32_MAX;
  char *c = malloc(n + 1);
  if (!c) return UINT32_MAX;
  memcpy(c, s, n);
  c[n] = 0;
  d->strs[d->nstrs] = c;
  *m = (str_memo){s, (uint32_t)d->nstrs};   /* a cut string never passes the check: found by its text */
  return (uint32_t)d->nstrs++;
}
/* The block's index of string s ("" for NULL), added when new; UINT32_MAX when out of room.
 * fixed: s is a static name (cl_dg_coll.static_names). The memo's hit is inline. */
static inline uint32_t str_id(cl_digest *d, const char *s, int fixed) {
  if (!s) s = "";
  str_memo *m = &d->memo[cl_hash_slot((uint64_t)(uintptr_t)s, STR_MEMO)];
  if (m->at == s && m->id < d->nstrs && (fixed || !strcmp(d->strs[m->id], s))) return m->id;
  return str_find(d, s, m);
}

static uint32_t comm_id(cl_digest *d, const cl_dg_coll *c) {
  for (size_t i = d->ncomms; i-- > 0;)
    if (d->comms[i].hash == c->comm_hash && d->comms[i].rank == c->rank) return (uint32_t)i;
  uint32_t name = str_id(d, c->comm_name, 0);
  if (name == UINT32_MAX || room(&d->comms, d->ncomms, &d->capcomms, sizeof *d->comms)) return UINT32_MAX;
  d->comms[d->ncomms] = (comm_ent){c->comm_hash, name, c->rank, c->nranks};
  return (uint32_t)d->ncomms++;
}

void cl_digest_coll(cl_digest *d, const cl_dg_coll *c) {
  if (!d) return;
  if (d->nrows >= CL_DG_MAX_ROWS || room(&d->rows, d->nrows, &d->caprows, sizeof *d->rows)) { d->lost++; return; }
  int fixed = c->static_names;
  row r = {.comm = comm_id(d, c), .func = str_id(d, c->func, fixed), .algo = str_id(d, c->algo, fixed),
           .proto = str_id(d, c->proto, fixed), .p2p = c->p2p != 0, .src = (uint8_t)(c->src | (c->expo_est ? CL_DG_SRC_EST : 0)),
           .tail_ch = (int16_t)(c->tail_ch >= 0 && c->tail_ch < 32767 ? c->tail_ch : -1),
           .nchannels = c->nchannels, .peer = c->peer, .seq = c->seq, .bytes = c->bytes,
           .enq_start = c->enq_start, .enq_stop = c->enq_stop, .gpu_start = c->gpu_start,
           .gpu_end = c->gpu_end, .exposed_ns = c->exposed_ns, .untimed = c->untimed != 0};
  if (r.comm == UINT32_MAX || r.func == UINT32_MAX || r.algo == UINT32_MAX || r.proto == UINT32_MAX) { d->lost++; return; }
  d->rows[d->nrows++] = r;
}

static uint64_t chan_key(uint64_t comm, int channel, int peer) {
  return comm ^ ((uint64_t)(uint32_t)channel << 32 | (uint32_t)peer) * 0x9E3779B97F4A7C15ull;
}
/* The slot of (comm, channel, peer) in chix: its entry's, else the empty one it would take. */
static uint32_t *chan_slot(cl_digest *d, uint64_t comm, int channel, int peer) {
  uint32_t i = cl_hash_slot(chan_key(comm, channel, peer), d->chcap);
  for (;; i = (i + 1) & (uint32_t)(d->chcap - 1)) {
    uint32_t k = d->chix[i];
    if (!k) return &d->chix[i];
    const chan_ent *c = &d->chans[k - 1];
    if (c->comm == comm && c->channel == channel && c->peer == peer) return &d->chix[i];
  }
}
/* Keeps chix at most half full: doubled and refilled from chans. -1 when out of memory. */
static int chix_room(cl_digest *d) {
  if (2 * (d->nchans + 1) <= d->chcap) return 0;
  size_t ncap = d->chcap ? 2 * d->chcap : 256;
  uint32_t *nx = calloc(ncap, sizeof *nx);
  if (!nx) return -1;
  free(d->chix);
  d->chix = nx;
  d->chcap = ncap;
  for (size_t k = 0; k < d->nchans; k++) {
    const chan_ent *c = &d->chans[k];
    *chan_slot(d, c->comm, c->channel, c->peer) = (uint32_t)k + 1;
  }
  return 0;
}
static chan_ent *chan_of(cl_digest *d, uint64_t comm, int channel, int peer) {
  if (d->chcap) {
    uint32_t k = *chan_slot(d, comm, channel, peer);
    if (k) return &d->chans[k - 1];
  }
  if (d->nchans >= MAX_CHANS || chix_room(d) || room(&d->chans, d->nchans, &d->capchans, sizeof *d->chans)) {
    d->lost++;
    return NULL;
  }
  chan_ent *c = &d->chans[d->nchans];
  *c = (chan_ent){.comm = comm, .channel = channel, .peer = peer, .max_seq = -1};
  *chan_slot(d, comm, channel, peer) = (uint32_t)++d->nchans;
  return c;
}

void cl_digest_chan(cl_digest *d, uint64_t comm_hash, int channel, uint64_t dur, int64_t seq) {
  if (!d || channel < 0) return;
  chan_ent *c;
  if (channel < KC_CACHE && comm_hash == d->kc_comm && d->kc_ix[channel]) {   /* a collective's next channel */
    c = &d->chans[d->kc_ix[channel] - 1];
  } else {
    if (!(c = chan_of(d, comm_hash, channel, -1))) return;
    if (channel < KC_CACHE) {
      if (comm_hash != d->kc_comm) { memset(d->kc_ix, 0, sizeof d->kc_ix); d->kc_comm = comm_hash; }
      d->kc_ix[channel] = (uint32_t)(c - d->chans) + 1;
    }
  }
  c->n++; c->sum += dur;
  if (dur > c->max || c->n == 1) { c->max = dur; c->max_seq = seq; }
}

void cl_digest_proxy_step(cl_digest *d, uint64_t comm_hash, int channel, int peer, const uint64_t w[CL_DG_NWAITS]) {
  chan_ent *c = d && channel >= 0 ? chan_of(d, comm_hash, channel, peer < 0 ? -1 : peer) : NULL;
  if (!c) return;
  c->nsteps++;
  for (int k = 0; k < CL_DG_NWAITS; k++) c->w[k] += w[k];
}

void cl_digest_step(cl_digest *d, uint64_t id, uint64_t start, uint64_t end) {
  if (!d) return;
  if (d->nsteps >= CL_DG_MAX_ROWS || room(&d->steps, d->nsteps, &d->capsteps, sizeof *d->steps)) { d->lost++; return; }
  d->steps[d->nsteps++] = (step_ent){id, start, end};
}

uint64_t cl_digest_lost(const cl_digest *d) { return d ? d->lost : 0; }
uint64_t cl_digest_taken(const cl_digest *d) { return d ? d->taken : 0; }

/* ---- encoding ---- */
static void strings(cl_dg_buf *b, const cl_digest *d) {
  cl_dg_varint(b, d->nstrs);
  for (size_t i = 0; i < d->nstrs; i++) {
    size_t n = strlen(d->strs[i]);
    cl_dg_varint(b, n);
    cl_dg_put(b, d->strs[i], n);
  }
}

/* A column: in runs of equal values when that halves what is written (most columns repeat
 * from row to row: communicator, function, algorithm, size, source, even the seq delta), else
 * value by value (`runs`: how many runs v[0..n) makes). The block is stored as it is
 * (cl_dg_block_stored): fewer bytes, no zlib. Either way at most 10 bytes a row are written
 * (in runs: two varints a run, at most n/2 runs), reserved once; the values then go out
 * through a local pointer, unchecked. */
static void put_col(cl_dg_buf *b, const uint64_t *v, size_t n, size_t runs) {
  if (cl_dg_reserve(b, 10 * n + 10)) return;
  uint8_t *p = b->p + b->len;
  if (2 * runs > n) {
    *p++ = CL_DG_COL_RAW;
    for (size_t i = 0; i < n; i++) p = cl_dg_varint_at(p, v[i]);
  } else {
    *p++ = CL_DG_COL_RUNS;
    for (size_t i = 0, j; i < n; i = j) {
      for (j = i + 1; j < n && v[j] == v[i]; j++) {}
      p = cl_dg_varint_at(p, j - i);
      p = cl_dg_varint_at(p, v[i]);
    }
  }
  b->len = (size_t)(p - b->p);
}

/* Column k of row r (docs/digest.md, block R); prev: the previous row's, for the deltas.
 * Inlined into colls_block's unrolled loop over k: each column's loop gets its own case. */
static inline __attribute__((always_inline)) uint64_t col_of(int k, const row *r, const row *prev) {
  switch (k) {
  case 0: return r->p2p;
  case 1: return r->comm;
  case 2: return r->func;
  case 3: return r->algo;
  case 4: return r->proto;
  case 5: return cl_dg_zz((int64_t)(r->seq - (prev ? prev->seq : 0)));
  case 6: return r->bytes;
  case 7: return cl_dg_zz(r->nchannels);
  case 8: return cl_dg_zz(r->peer);
  case 9: return cl_dg_zz((int64_t)(r->enq_start - (prev ? prev->enq_start : 0)));
  case 10: return cl_dg_zz((int64_t)(r->enq_stop - r->enq_start));
  case 11: return r->src;
  case 12: return cl_dg_zz((int64_t)(r->gpu_start - r->enq_start));
  case 13: return cl_dg_zz((int64_t)(r->gpu_end - r->gpu_start));
  case 14: return r->exposed_ns < 0 ? 0 : (uint64_t)r->exposed_ns + 1;
  case 15: return (uint64_t)(r->tail_ch + 1);
  default: return r->untimed;
  }
}
#define NCOLS 17   /* version 3: the timers column last */

static void colls_block(cl_dg_buf *b, cl_digest *d) {
  cl_dg_varint(b, d->nrows);
  strings(b, d);
  cl_dg_varint(b, d->ncomms);
  for (size_t i = 0; i < d->ncomms; i++) {
    const comm_ent *c = &d->comms[i];
    cl_dg_varint(b, c->hash); cl_dg_varint(b, c->name);
    cl_dg_varint(b, cl_dg_zz(c->rank)); cl_dg_varint(b, cl_dg_zz(c->nranks));
  }
  if (cl_grow(&d->col, &d->capcol, d->nrows ? d->nrows : 1, sizeof *d->col, 256, 0) != 0) { b->oom = 1; return; }
  uint64_t *v = d->col;
#pragma GCC unroll 17
  for (int k = 0; k < NCOLS; k++) {
    if (!d->nrows) { put_col(b, v, 0, 0); continue; }
    /* the runs are counted as the column is made: each value is compared in a register */
    uint64_t prev = v[0] = col_of(k, &d->rows[0], NULL);
    size_t runs = 1;
    for (size_t i = 1; i < d->nrows; i++) {
      uint64_t x = col_of(k, &d->rows[i], &d->rows[i - 1]);
      runs += x != prev;
      v[i] = prev = x;
    }
    put_col(b, v, d->nrows, runs);
  }
}

static void chans_block(cl_dg_buf *b, cl_digest *d) {
  cl_dg_varint(b, d->nchans);
  for (size_t i = 0; i < d->nchans; i++) {
    const chan_ent *c = &d->chans[i];
    cl_dg_varint(b, c->comm); cl_dg_varint(b, (uint64_t)c->channel); cl_dg_varint(b, cl_dg_zz(c->peer));
    cl_dg_varint(b, c->n); cl_dg_varint(b, c->sum); cl_dg_varint(b, c->max); cl_dg_varint(b, cl_dg_zz(c->max_seq));
    cl_dg_varint(b, c->nsteps);
    for (int k = 0; k < CL_DG_NWAITS; k++) cl_dg_varint(b, c->w[k]);
  }
}

static void steps_block(cl_dg_buf *b, cl_digest *d) {
  cl_dg_varint(b, d->nsteps);
  for (size_t i = 0; i < d->nsteps; i++) {
    const step_ent *s = &d->steps[i];
    cl_dg_varint(b, s->id); cl_dg_varint(b, s->start); cl_dg_varint(b, cl_dg_zz((int64_t)(s->end - s->start)));
  }
}

int cl_digest_take(cl_digest *d, cl_dg_buf *out) {
  if (!d) return 0;
  cl_dg_buf *raw = &d->enc;
  int rc = 0;
  void (*enc[3])(cl_dg_buf *, cl_digest *) = {colls_block, chans_block, steps_block};
  const int type[3] = {CL_DG_COLLS_RUNS, CL_DG_CHANS, CL_DG_STEPS};
  const size_t n[3] = {d->nrows, d->nchans, d->nsteps};
  for (int k = 0; k < 3; k++) {
    if (!n[k]) continue;
    raw->len = 0;
    raw->oom = 0;
    enc[k](raw, d);
    int bad = raw->oom || (type[k] == CL_DG_COLLS_RUNS ? cl_dg_block_stored : cl_dg_block)(out, type[k], raw->p, raw->len) != 0;
    if (bad) { d->lost += n[k]; rc = -1; }
    else d->taken += n[k];
  }
  forget(d);
  return rc;
}

int cl_digest_file_head(cl_dg_buf *out, const char *json, size_t n) {
  uint8_t v[4] = {CL_DG_VERSION & 0xff, 0, 0, 0};
  cl_dg_put(out, CL_DG_MAGIC, CL_DG_MAGIC_LEN);
  cl_dg_put(out, v, 4);
  if (out->oom) return -1;
  return cl_dg_block(out, CL_DG_HEADER, (const uint8_t *)json, n);
}
