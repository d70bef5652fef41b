/* fuzz_abi.c: libFuzzer target over the plugin's exported ABI tables (ncclProfiler_v1..v6),
 * linked with the plugin's objects. Each input is decoded into a call sequence as NCCL (or a
 * broken NCCL) might make it: inits of any version, starts with arbitrary descriptor bytes
 * (any type, parents that are earlier handles, garbage or NULL, foreign pids, huge counts),
 * stops and states in any order and any number of times, finalizes (also twice), then every
 * live communicator is finalized so the writer flushes. Oracle: no sanitizer report, every
 * call but init returns success, and what the writer appended to the trace parses as JSON.
 * String fields only ever point at NUL-terminated strings that live for the whole process
 * (the plugin keeps NCCL's string pointers, as NCCL's are static). */
#include "commlens/nccl_profiler_abi.h"
#include "trace_check.h"
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern const clabi_profiler_v1 ncclProfiler_v1;
extern const clabi_profiler_v2 ncclProfiler_v2;
extern const clabi_profiler_v3 ncclProfiler_v3;
extern const clabi_profiler_v4 ncclProfiler_v4;
extern const clabi_profiler_v5 ncclProfiler_v5;
extern const clabi_profiler_v6 ncclProfiler_v6;
extern const clabi_profiler_v7 ncclProfiler_v7;

typedef struct { const uint8_t *p; size_t n; } rd;
static uint8_t u8(rd *r) { if (!r->n) return 0; r->n--; return *r->p++; }
static uint64_t u64(rd *r) { uint64_t v = 0; for (int i = 0; i < 8; i++) v = v << 8 | u8(r); return v; }
static void bytes(rd *r, void *out, size_t n) {
  size_t k = n < r->n ? n : r->n;
  memcpy(out, r->p, k);
  memset((char *)out + k, 0, n - k);
  r->p += k; r->n -= k;
}

/* Strings: fixed ones NCCL sends, plus slots whose text the input writes (never freed). */
enum { NFIXED = 12, NSLOT = 32, SLOTLEN = 40 };
static const char *const g_fixed[NFIXED] = {"AllReduce", "ncclFloat32", "RING", "SIMPLE", "Send", "Recv",
  "", "\"quote\\back", "ncclAllGather", "MC", "\xff\xfe\x01\x1f", "a-long-communicator-name-........................................................................."};
static char g_slots[NSLOT][SLOTLEN];
static const char *str(rd *r) {
  uint8_t b = u8(r);
  if (b < 16) return NULL;
  if (b < 160) return g_fixed[b % NFIXED];
  char *s = g_slots[b % NSLOT];
  size_t len = u8(r) % SLOTLEN;
  bytes(r, s, len);
  s[len] = 0;                           /* s[SLOTLEN-1] stays 0 whatever happens */
  return s;
}

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)level; (void)flags; (void)file; (void)line; (void)fmt;
}

static int g_mask;                      /* NCCL's process-global mask (the plugin writes it) */
static uint8_t g_netdata[64];           /* a NetPlugin descriptor's data */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  fz_env_init();
  return 0;
}

#define TAB(V) (&ncclProfiler_##V)
#define CALL(abi, fn, ...)                                                                   \
  (abi == 1 ? TAB(v1)->fn(__VA_ARGS__) : abi == 2 ? TAB(v2)->fn(__VA_ARGS__)                \
   : abi == 3 ? TAB(v3)->fn(__VA_ARGS__) : abi == 4 ? TAB(v4)->fn(__VA_ARGS__)              \
   : abi == 5 ? TAB(v5)->fn(__VA_ARGS__) : abi == 6 ? TAB(v6)->fn(__VA_ARGS__)              \
   : TAB(v7)->fn(__VA_ARGS__))

static const uint64_t g_types[] = {CLABI_EV_GROUP, CLABI_EV_COLL, CLABI_EV_P2P, CLABI_EV_PROXY_OP,
  CLABI_EV_PROXY_STEP, CLABI_EV_PROXY_CTRL, CLABI_EV_KERNEL_CH, CLABI_EV_NET_PLUGIN,
  CLABI_EV_GROUP_API, CLABI_EV_COLL_API, CLABI_EV_P2P_API, CLABI_EV_KERNEL_LAUNCH,
  CLABI_EV_CE_COLL, CLABI_EV_CE_SYNC, CLABI_EV_CE_BATCH, CLABI_EV_KERNEL_PHASE};
#define NTYPES (sizeof g_types / sizeof g_types[0])

/* Points every string and data pointer the member for `type` has at something valid. */
static void fix_pointers(int abi, uint64_t type, void *buf, rd *r) {
  void *data = u8(r) & 1 ? g_netdata : NULL;
  if (data) bytes(r, g_netdata, sizeof g_netdata);
  switch (abi) {
  case 1: {
    clabi_descr_v1 *d = buf;
    if (type == CLABI_EV_COLL) d->coll.name = str(r);
    if (type == CLABI_EV_P2P) d->p2p.name = str(r);
    break;
  }
  case 2: case 3: {
    clabi_descr_v3 *d = buf;   /* v2 and v3 put the string fields at the same places */
    if (type == CLABI_EV_COLL) {
      d->coll.name = str(r); d->coll.func = str(r); d->coll.datatype = str(r);
      if (abi == 3) { d->coll.algo = str(r); d->coll.proto = str(r); }
      else { clabi_descr_v2 *d2 = buf; d2->coll.algo = str(r); d2->coll.proto = str(r); }
    }
    if (type == CLABI_EV_P2P) { d->p2p.name = str(r); d->p2p.func = str(r); d->p2p.datatype = str(r); }
    if (type == CLABI_EV_NET_PLUGIN && abi == 3) d->netPlugin.data = data;
    break;
  }
  case 4: {
    clabi_descr_v4 *d = buf;
    if (type == CLABI_EV_COLL) { d->coll.func = str(r); d->coll.datatype = str(r); d->coll.algo = str(r); d->coll.proto = str(r); }
    if (type == CLABI_EV_P2P) { d->p2p.func = str(r); d->p2p.datatype = str(r); }
    if (type == CLABI_EV_NET_PLUGIN) d->netPlugin.data = data;
    break;
  }
  default: {
    clabi_descr_v6 *d = buf;
    if (type == CLABI_EV_COLL_API) { d->collApi.func = str(r); d->collApi.datatype = str(r); }
    if (type == CLABI_EV_P2P_API) { d->p2pApi.func = str(r); d->p2pApi.datatype = str(r); }
    if (type == CLABI_EV_COLL) { d->coll.func = str(r); d->coll.datatype = str(r); d->coll.algo = str(r); d->coll.proto = str(r); }
    if (type == CLABI_EV_P2P) { d->p2p.func = str(r); d->p2p.datatype = str(r); }
    if (type == CLABI_EV_NET_PLUGIN) d->netPlugin.data = data;
    /* v7 keeps v6's offsets for these (nccl_profiler_abi.h) */
    if (type == CLABI_EV_CE_COLL && abi >= 6) { d->ceColl.func = str(r); d->ceColl.datatype = str(r); d->ceColl.syncStrategy = str(r); }
    if (type == CLABI_EV_KERNEL_PHASE && abi == 7) ((clabi_descr_v7 *)buf)->kernelPhase.phaseName = str(r);
    break;
  }
  }
}

enum { MAXH = 64, MAXC = 8 };
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rd r = {data, size};
  int abi = 1 + u8(&r) % 7;
  void *handles[MAXH] = {0};
  int nh = 0;
  void *ctxs[MAXC] = {0};
  int live[MAXC] = {0}, nc = 0, bad = 0;
  for (int ops = 0; r.n && ops < 400; ops++) {
    uint8_t op = u8(&r);
    switch (op % 8) {
    case 0: {                                           /* init */
      if (nc == MAXC) break;
      void *ctx = NULL;
      const char *name = str(&r);
      uint64_t hash = u64(&r);
      int nranks = (int)(u8(&r) % 9) - 1, rank = (int)(u8(&r) % 9) - 1;
      int rc;
      switch (abi) {
      case 1: rc = TAB(v1)->init(&ctx, &g_mask); break;
      case 2: rc = TAB(v2)->init(&ctx, &g_mask); break;
      case 3: rc = TAB(v3)->init(&ctx, &g_mask); break;
      case 4: rc = TAB(v4)->init(&ctx, &g_mask, name, hash, 1, nranks, rank, logger); break;
      case 5: rc = TAB(v5)->init(&ctx, hash, &g_mask, name, 1, nranks, rank, logger); break;
      case 6: rc = TAB(v6)->init(&ctx, hash, &g_mask, name, 1, nranks, rank, logger); break;
      default: rc = TAB(v7)->init(&ctx, hash, &g_mask, name, 1, nranks, rank, logger); break;
      }
      (void)rc;                                         /* init may fail */
      ctxs[nc] = ctx; live[nc] = 1; nc++;
      break;
    }
    case 1: {                                           /* finalize: live, finalized or garbage */
      uint8_t b = u8(&r);
      void *ctx = nc && b < 200 ? ctxs[b % nc] : (void *)(uintptr_t)u64(&r);
      if (nc && b < 200) live[b % nc] = 0;
      bad += CALL(abi, finalize, ctx) != CLABI_SUCCESS;
      break;
    }
    case 2: case 3: {                                   /* startEvent */
      _Alignas(16) unsigned char buf[160];
      bytes(&r, buf, sizeof buf);
      uint8_t tb = u8(&r);
      uint64_t type = tb < 200 ? g_types[tb % NTYPES] : tb < 230 ? (uint64_t)u8(&r) : u64(&r);
      if (abi <= 4) type = (uint8_t)type;              /* v1..v4 descriptors carry an 8-bit type */
      uint8_t pb = u8(&r);
      void *parent = pb < 128 && nh ? handles[pb % nh] : pb < 192 ? NULL : (void *)(uintptr_t)u64(&r);
      void *ctx = nc && u8(&r) < 224 ? ctxs[u8(&r) % nc] : (void *)(uintptr_t)(u8(&r) & 1 ? u64(&r) : 0);
      if (abi <= 4) { ((clabi_descr_v4 *)buf)->type = (uint8_t)type; ((clabi_descr_v4 *)buf)->parentObj = parent; }   /* (v1..v3 alike) */
      else { ((clabi_descr_v6 *)buf)->type = type; ((clabi_descr_v6 *)buf)->parentObj = parent; }
      if (type == CLABI_EV_PROXY_OP && u8(&r) < 200) {  /* mostly our own pid */
        if (abi <= 4) ((clabi_descr_v4 *)buf)->proxyOp.pid = getpid();
        else ((clabi_descr_v6 *)buf)->proxyOp.pid = getpid();
      }
      fix_pointers(abi, type, buf, &r);
      void *h = (void *)(uintptr_t)0xDEADBEEF;
      bad += CALL(abi, startEvent, ctx, &h, (void *)buf) != CLABI_SUCCESS;
      if (nh < MAXH) handles[nh++] = h; else handles[u8(&r) % MAXH] = h;
      break;
    }
    case 4: case 5: {                                   /* stopEvent, any handle any number of times */
      uint8_t b = u8(&r);
      void *h = b < 220 && nh ? handles[b % nh] : (void *)(uintptr_t)(b & 1 ? u64(&r) : 0);
      bad += CALL(abi, stopEvent, h) != CLABI_SUCCESS;
      break;
    }
    default: {                                          /* recordEventState */
      uint8_t b = u8(&r);
      void *h = b < 220 && nh ? handles[b % nh] : (void *)(uintptr_t)(b & 1 ? u64(&r) : 0);
      uint8_t sb = u8(&r);
      int st = sb < 200 ? sb % 32 : (int)u64(&r);
      _Alignas(16) unsigned char args[16];
      bytes(&r, args, sizeof args);
      if (abi >= 4 && st >= 0 && u8(&r) & 1) memcpy(args, &(void *){g_netdata}, sizeof(void *));
      bad += CALL(abi, recordEventState, h, st, u8(&r) < 32 ? NULL : (void *)args) != CLABI_SUCCESS;
      break;
    }
    }
  }
  for (int i = 0; i < nc; i++)
    if (live[i]) bad += CALL(abi, finalize, ctxs[i]) != CLABI_SUCCESS;
  if (bad) { fprintf(stderr, "%d calls did not return ncclSuccess\n", bad); abort(); }
  check_trace();
  return 0;
}
