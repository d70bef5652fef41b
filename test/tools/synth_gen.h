/* synth_gen.h: writes synthetic per-rank commlens traces in exactly the documented format
 * (docs/trace-format.md) with known injected behaviour: one rank late by a known amount on
 * every (or every Nth) collective, one rank's one-off wait at start-up, one (rank, channel) slow by a known factor, known clock offsets.
 * Shared by test/tools/test_cli.c, test/tools/test_digest.c and bench/gen_traces.c (static
 * functions only). synth_write_rank_digest writes the same job as digests (docs/digest.md) with
 * the plugin's own encoder (exporters/digest.c). */
#ifndef COMMLENS_SYNTH_GEN_H
#define COMMLENS_SYNTH_GEN_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "exporters/digest.h"

typedef struct {
  const char *dir, *job, *host_fmt;   /* host_fmt: e.g. "node%d" with rank / ranks_per_host */
  int nranks, ncoll, nch, nsteps;     /* collectives per rank, channels, proxy steps/channel */
  int late_rank; int64_t late_ns;     /* -1: none */
  int late_every;                     /* the late rank is late on every Nth collective only (0: all) */
  int warmup_rank; int64_t warmup_ns; /* one rank's first collective is this late (-1: none) */
  int slow_rank, slow_ch; double slow_factor;
  int gz, nvtx_every, format;         /* nvtx_every: a "step K" slice every N collectives */
  int no_exposed;                     /* 1: no exposed_ns (a job recorded without CUPTI) */
  int gpu_lost;                       /* >0: the tail says this many collectives lacked CUPTI's timing */
  int64_t period_ns, transfer_ns;
  uint64_t comm;
  int ranks_per_host;                 /* ranks of one host read one clock: one offset per host */
  int phases;                         /* 1: v7 kernel phases on coll_gpu (sync_wait_ns = the GPU's
                                         wait for the last arrival, compute_ns) */
  int tag_every;                      /* >0: v7 user_tag = 1 + (collective % tag_every) */
  int64_t host_skew_ns;               /* planted on top: every host but the first reads a clock
                                         this far off (nothing in the trace says so) */
} synth_cfg;

static void synth_defaults(synth_cfg *c) {
  memset(c, 0, sizeof *c);
  c->job = "job42"; c->host_fmt = "node%d"; c->nranks = 8; c->ncoll = 200; c->nch = 4; c->nsteps = 2;
  c->late_rank = -1; c->warmup_rank = -1; c->slow_rank = -1; c->slow_ch = -1; c->slow_factor = 1; c->format = 1;
  c->period_ns = 2000000; c->transfer_ns = 400000; c->comm = 0x5eedc0de12345678ull;
  c->ranks_per_host = 8;
}

/* Known clock offset of each rank (ns): ms-scale, signed, different per host, one per host
 * (its ranks read one clock). */
static int64_t synth_offset(const synth_cfg *c, int rank) {
  int h = rank / (c->ranks_per_host > 0 ? c->ranks_per_host : 1);
  if (h == 0) return 0;
  return (int64_t)((h * 7919) % 23 - 11) * 250000 + h * 13000 + c->host_skew_ns;
}

static uint64_t synth_h(uint64_t a, uint64_t b) {
  uint64_t x = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL);
  x ^= x >> 31; x *= 0xbf58476d1ce4e5b9ULL; x ^= x >> 27; x *= 0x94d049bb133111ebULL; x ^= x >> 31;
  return x;
}
/* True (un-offset) arrival of rank r at collective i. */
static int64_t synth_arrival(const synth_cfg *c, int i, int r) {
  int64_t t = 1763799170000000000LL + (int64_t)i * c->period_ns + (int64_t)(synth_h((uint64_t)i, (uint64_t)r) % 5000);
  if (r == c->late_rank && (!c->late_every || i % c->late_every == 0)) t += c->late_ns;
  if (r == c->warmup_rank && i == 0) t += c->warmup_ns;
  return t;
}

/* Channel ch of rank r in collective i (arrival a, last arrival, end of the span): its start and
 * end. Normal channels do `work` after the last arrival; the slow one work * slow_factor. */
static void synth_channel(const synth_cfg *c, int r, int i, int ch, int64_t a, int64_t last, int64_t end,
                          int64_t *cs, int64_t *ce) {
  double f = (r == c->slow_rank && ch == c->slow_ch) ? c->slow_factor : 1.0;
  *cs = a + 500 + ch * 100;
  *ce = last + (int64_t)((double)(c->transfer_ns / 3) * f) + (int64_t)(synth_h((uint64_t)i * 131 + (uint64_t)ch, (uint64_t)r) % 20000);
  if (*ce > end - 1000) *ce = end - 1000;
}

typedef struct { char *b; size_t n, cap; FILE *f; gzFile gz; } synth_out;
static void so_flush(synth_out *o) {
  if (o->gz) gzwrite(o->gz, o->b, (unsigned)o->n); else fwrite(o->b, 1, o->n, o->f);
  o->n = 0;
}
static inline void so_s(synth_out *o, const char *s) {
  size_t n = strlen(s);
  if (o->n + n > o->cap) so_flush(o);
  memcpy(o->b + o->n, s, n); o->n += n;
}
static inline void so_u(synth_out *o, uint64_t v) {
  char t[24]; int k = 0;
  do { t[k++] = (char)('0' + v % 10); v /= 10; } while (v);
  if (o->n + 24 > o->cap) so_flush(o);
  while (k) o->b[o->n++] = t[--k];
}
static inline void so_i(synth_out *o, int64_t v) { if (v < 0) { so_s(o, "-"); v = -v; } so_u(o, (uint64_t)v); }
static inline void so_us(synth_out *o, int64_t ns) {   /* us with exactly three decimals */
  so_u(o, (uint64_t)(ns / 1000));
  char t[5] = { '.', (char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10), (char)('0' + ns % 10), 0 };
  so_s(o, t);
}
static void so_slice(synth_out *o, const char *cat, const char *name, int pid, int tid, int64_t ts, int64_t dur) {
  so_s(o, ",\n{\"ph\":\"X\",\"cat\":\""); so_s(o, cat); so_s(o, "\",\"name\":\""); so_s(o, name);
  so_s(o, "\",\"pid\":"); so_i(o, pid); so_s(o, ",\"tid\":"); so_i(o, tid);
  so_s(o, ",\"ts\":"); so_us(o, ts); so_s(o, ",\"dur\":"); so_us(o, dur);
}
static void so_common(synth_out *o, const synth_cfg *c, int r) {
  char h[32]; snprintf(h, sizeof h, "0x%llx", (unsigned long long)c->comm);
  so_s(o, ",\"args\":{\"comm\":\""); so_s(o, h); so_s(o, "\",\"comm_name\":\"world\",\"rank\":"); so_i(o, r);
  so_s(o, ",\"nranks\":"); so_i(o, c->nranks);
}

/* Writes rank r's trace; returns its path in `path`. The first event written is a comma-led
 * line, so the array opens with a metadata event. Returns 0 on success. */
static int synth_write_rank(const synth_cfg *c, int r, char *path, size_t pathlen) {
  char host[64]; snprintf(host, sizeof host, c->host_fmt, r / (c->ranks_per_host > 0 ? c->ranks_per_host : 1));
  snprintf(path, pathlen, "%s/commlens-r%d-%s-%d.trace.json%s", c->dir, r, host, 1000 + r, c->gz ? ".gz" : "");
  synth_out o = { malloc(1 << 20), 0, 1 << 20, NULL, NULL };
  if (c->gz) o.gz = gzopen(path, "wb1"); else o.f = fopen(path, "wb");
  if (!o.f && !o.gz) { free(o.b); return -1; }
  int64_t off = synth_offset(c, r), n = 0;
  char b[512];
  snprintf(b, sizeof b, "{\"displayTimeUnit\":\"ns\",\"commlens\":{\"format\":%d,\"version\":\"0.1.0\",\"abi\":6,"
           "\"host\":\"%s\",\"os_pid\":%d,\"rank\":%d,\"rank_source\":\"RANK\",\"job\":\"%s\","
           "\"clock\":{\"realtime_offset_ns\":1763700000000000000,\"offset_error_ns\":120},\"mask\":4095},\"traceEvents\":[\n",
           c->format, host, 1000 + r, r, c->job);
  so_s(&o, b);
  snprintf(b, sizeof b, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"rank %d (%s, GPU %d)\"}},\n"
           "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":{\"sort_index\":%d}},\n"
           "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":10,\"args\":{\"name\":\"comm 5eedc0de: GPU\"}}",
           r, r, host, r % 8, r, r, r);
  so_s(&o, b); n += 3;
  int64_t *arr = malloc(sizeof(int64_t) * (size_t)c->nranks);
  for (int i = 0; i < c->ncoll; i++) {
    int64_t last = 0;
    for (int k = 0; k < c->nranks; k++) { arr[k] = synth_arrival(c, i, k); if (arr[k] > last) last = arr[k]; }
    int64_t a = r < c->nranks ? arr[r] : synth_arrival(c, i, r);   /* a rank outside nranks (the format-2 file) */
    int64_t end = last + c->transfer_ns + (int64_t)(synth_h((uint64_t)i + 77, (uint64_t)r) % 1000);
    if (c->nvtx_every && i % c->nvtx_every == 0) {
      char nm[32]; snprintf(nm, sizeof nm, "step %d", i / c->nvtx_every);
      so_slice(&o, "nvtx", nm, r, 1, a - 50000 + off, (int64_t)c->nvtx_every * c->period_ns - 100000);
      so_s(&o, "}"); n++;
    }
    /* enqueue slice */
    so_slice(&o, "coll", "AllReduce", r, 5, a - 20000 + off, 8000); so_common(&o, c, r);
    so_s(&o, ",\"seq\":"); so_i(&o, i);
    so_s(&o, ",\"count\":262144,\"datatype\":\"ncclFloat32\",\"root\":0,\"algo\":\"RING\",\"proto\":\"SIMPLE\",\"nchannels\":");
    so_i(&o, c->nch); so_s(&o, ",\"nwarps\":8,\"bytes\":1048576,\"Collective name\":\"AllReduce\",\"In msg nelems\":262144,\"Group size\":");
    so_i(&o, c->nranks); so_s(&o, ",\"Seq\":"); so_i(&o, i); so_s(&o, "}}"); n++;
    int64_t tail_end = 0; int tail = 0;
    for (int ch = 0; ch < c->nch; ch++) {
      int64_t cs, ce;
      synth_channel(c, r, i, ch, a, last, end, &cs, &ce);
      if (ce > tail_end) { tail_end = ce; tail = ch; }
      char nm[16]; snprintf(nm, sizeof nm, "ch %d", ch);
      so_slice(&o, "kernel_ch", nm, r, 100 + ch, cs + off, ce - cs); so_common(&o, c, r);
      so_s(&o, ",\"channel\":"); so_i(&o, ch); so_s(&o, ",\"seq\":"); so_i(&o, i);
      so_s(&o, ",\"func\":\"AllReduce\",\"gpu_start_ns\":"); so_i(&o, cs + 12345); so_s(&o, ",\"gpu_stop_ns\":"); so_i(&o, ce + 12345);
      so_s(&o, "}}"); n++;
      int64_t sd = (ce - last) / (c->nsteps ? c->nsteps : 1);
      for (int s = 0; s < c->nsteps; s++) {
        int64_t ss = last + s * sd;
        int64_t gw = (r == c->slow_rank && ch == c->slow_ch) ? sd / 2 : sd / 50, pw = (r == c->slow_rank && ch == c->slow_ch) ? sd / 50 : sd / 10;
        snprintf(nm, sizeof nm, "step %d", s);
        so_slice(&o, "proxy_step", nm, r, 200 + ch, ss + off, sd > 10 ? sd - 10 : 1); so_common(&o, c, r);
        so_s(&o, ",\"channel\":"); so_i(&o, ch); so_s(&o, ",\"peer\":"); so_i(&o, (r + 1) % c->nranks);
        so_s(&o, ",\"step\":"); so_i(&o, s); so_s(&o, ",\"bytes\":131072,\"gpu_wait_ns\":"); so_i(&o, gw);
        so_s(&o, ",\"peer_wait_ns\":"); so_i(&o, pw); so_s(&o, ",\"send_wait_ns\":"); so_i(&o, sd / 4);
        so_s(&o, ",\"recv_wait_ns\":0,\"flush_wait_ns\":0,\"recv_gpu_wait_ns\":0}}"); n++;
      }
    }
    so_slice(&o, "coll_gpu", "AllReduce", r, 10, a + off, end - a); so_common(&o, c, r);
    so_s(&o, ",\"seq\":"); so_i(&o, i); so_s(&o, ",\"bytes\":1048576,\"algo\":\"RING\",\"proto\":\"SIMPLE\",\"nchannels\":");
    so_i(&o, c->nch); so_s(&o, ",\"source\":\"kernel_ch\",\"tail_channel\":"); so_i(&o, tail);
    if (!c->no_exposed) { so_s(&o, ",\"exposed_ns\":"); so_i(&o, (end - a) * 3 / 10); }
    if (c->tag_every > 0) { so_s(&o, ",\"user_tag\":\""); so_i(&o, 1 + i % c->tag_every); so_s(&o, "\""); }
    if (c->phases) {   /* the GPU waits for the last arrival (plus noise), then works */
      int64_t work = c->transfer_ns / 3;   /* as synth_channel's channels */
      so_s(&o, ",\"sync_wait_ns\":"); so_i(&o, last - a + (int64_t)(synth_h((uint64_t)i + 991, (uint64_t)r) % 3000));
      so_s(&o, ",\"compute_ns\":"); so_i(&o, work); so_s(&o, ",\"final_sync_ns\":1000,\"phase_channels\":"); so_i(&o, c->nch);
    }
    so_s(&o, "}}"); n++;
  }
  free(arr);
  char lost[96] = "";
  if (c->gpu_lost > 0)
    snprintf(lost, sizeof lost, "\"collectives\":%d,\"collectives_gpu_lost\":%d,", c->ncoll, c->gpu_lost);
  snprintf(b, sizeof b, "\n],\"commlensStats\":{\"final\":true,\"events\":%lld,\"dropped\":0,\"stale_handles\":0,\"foreign\":0,%s"
           "\"overhead_ns_per_call\":85,\"calls\":%lld,\"overhead_pct\":0.04,\"gpu_offsets\":[],\"comms\":[]}}\n",
           (long long)n, lost, (long long)n * 2);
  so_s(&o, b);
  so_flush(&o);
  int rc = 0;
  if (o.gz) rc = gzclose(o.gz) != Z_OK; else rc = fclose(o.f) != 0;
  free(o.b);
  return rc;
}

/* Writes every rank of `c` into a fresh directory $TMPDIR/<prefix>-XXXXXX (its path into dir;
 * c->dir is not changed). 0, or -1. */
static inline int synth_write_job(const synth_cfg *c, const char *prefix, char *dir, size_t n) {
  snprintf(dir, n, "%s/%s-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", prefix);
  if (!mkdtemp(dir)) return -1;
  synth_cfg k = *c;
  k.dir = dir;
  char path[1024];
  for (int r = 0; r < k.nranks; r++)
    if (synth_write_rank(&k, r, path, sizeof path)) return -1;
  return 0;
}
/* Rank r as a digest (the collectives, channels and steps its trace above holds, on its clock:
 * the header's realtime offset is 0 and the rows carry the trace's times), a block per 64
 * collectives as a plugin's flushes would write them. 0 on success. */
__attribute__((unused)) static int synth_write_rank_digest(const synth_cfg *c, int r, char *path, size_t pathlen) {
  char host[64], b[512];
  snprintf(host, sizeof host, c->host_fmt, r / (c->ranks_per_host > 0 ? c->ranks_per_host : 1));
  snprintf(path, pathlen, "%s/commlens-r%d-%s-%d.digest", c->dir, r, host, 1000 + r);
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  snprintf(b, sizeof b, "{\"format\":1,\"version\":\"0.1.0\",\"abi\":6,\"host\":\"%s\",\"os_pid\":%d,\"rank\":%d,"
           "\"rank_source\":\"RANK\",\"job\":\"%s\",\"clock\":{\"realtime_offset_ns\":0,"
           "\"offset_error_ns\":120},\"mask\":4095,\"events\":\"full\"}", host, 1000 + r, r, c->job);
  cl_dg_buf out = {0};
  cl_digest_file_head(&out, b, strlen(b));
  cl_digest *dg = cl_digest_new();
  /* each collective's last arrival, once per job (4,096 ranks: not 4,096 times) */
  static const synth_cfg *last_of; static int64_t *lasts; static int last_n, last_r;
  if (last_of != c || !lasts || last_n != c->ncoll || last_r != c->nranks) {
    free(lasts);
    lasts = malloc(sizeof(int64_t) * (size_t)(c->ncoll ? c->ncoll : 1));
    for (int i = 0; lasts && i < c->ncoll; i++) {
      lasts[i] = 0;
      for (int k = 0; k < c->nranks; k++) { int64_t t = synth_arrival(c, i, k); if (t > lasts[i]) lasts[i] = t; }
    }
    last_of = c; last_n = c->ncoll; last_r = c->nranks;
  }
  if (!lasts) { fclose(f); free(out.p); cl_digest_free(dg); return -1; }
  int64_t off = synth_offset(c, r);
  int rc = 0;
  for (int i = 0; i < c->ncoll; i++) {
    int64_t last = lasts[i];
    int64_t a = synth_arrival(c, i, r), end = last + c->transfer_ns + (int64_t)(synth_h((uint64_t)i + 77, (uint64_t)r) % 1000);
    if (c->nvtx_every && i % c->nvtx_every == 0)
      cl_digest_step(dg, (uint64_t)(i / c->nvtx_every), (uint64_t)(a - 50000 + off),
                     (uint64_t)(a - 50000 + off + (int64_t)c->nvtx_every * c->period_ns - 100000));
    int64_t tail_end = 0; int tail = 0;
    for (int ch = 0; ch < c->nch; ch++) {
      int64_t cs, ce;
      synth_channel(c, r, i, ch, a, last, end, &cs, &ce);
      if (ce > tail_end) { tail_end = ce; tail = ch; }
      cl_digest_chan(dg, c->comm, ch, (uint64_t)(ce - cs), i);
      int64_t sd = (ce - last) / (c->nsteps ? c->nsteps : 1);
      for (int s = 0; s < c->nsteps; s++) {
        int slow = r == c->slow_rank && ch == c->slow_ch;
        uint64_t w[CL_DG_NWAITS] = {(uint64_t)(slow ? sd / 2 : sd / 50), (uint64_t)(slow ? sd / 50 : sd / 10), (uint64_t)(sd / 4), 0, 0, 0};
        cl_digest_proxy_step(dg, c->comm, ch, (r + 1) % c->nranks, w);
      }
    }
    cl_dg_coll row = {.comm_hash = c->comm, .comm_name = "world", .rank = r, .nranks = c->nranks, .func = "AllReduce",
                      .algo = "RING", .proto = "SIMPLE", .seq = (uint64_t)i, .bytes = 1048576, .nchannels = c->nch,
                      .enq_start = (uint64_t)(a - 20000 + off), .enq_stop = (uint64_t)(a - 12000 + off),
                      .src = CL_DG_SRC_KERNEL_CH, .gpu_start = (uint64_t)(a + off), .gpu_end = (uint64_t)(end + off),
                      .exposed_ns = c->no_exposed ? -1 : (end - a) * 3 / 10, .tail_ch = tail};
    cl_digest_coll(dg, &row);
    if (i % 64 == 63 || i + 1 == c->ncoll) {
      cl_digest_take(dg, &out);
      if (out.len > (1u << 20) || i + 1 == c->ncoll) {
        if (i + 1 == c->ncoll) {
          snprintf(b, sizeof b, "{\"final\":true,\"events\":%d,\"dropped\":0,\"overhead_ns_per_call\":85,\"calls\":%d,"
                   "\"overhead_pct\":0.04}", c->ncoll, c->ncoll * 10);
          cl_dg_block(&out, CL_DG_STATS, (const uint8_t *)b, strlen(b));
        }
        if (out.oom || fwrite(out.p, 1, out.len, f) != out.len) rc = -1;
        out.len = 0;
      }
    }
  }
  cl_digest_free(dg);
  free(out.p);
  if (fclose(f) != 0) rc = -1;
  return rc;
}
#endif
