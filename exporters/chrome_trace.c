/* chrome_trace.c: see chrome_trace.h. Everything is appended to one buffer that the writer
 * hands to the trace file at each flush. Timestamps: monotonic ns + the process's realtime
 * offset, printed as exact microseconds. */
#include "exporters/chrome_trace.h"
#include "common/hash.h"
#include "common/clock.h"
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* A thread family (lanes: nlanes, tids) or an async track (async: 1, name its track's). */
typedef struct { uint64_t key; uint32_t nlanes, cap; uint64_t *last_end; int64_t *last_vend; uint32_t *tids;
                 char name[96]; int sort, async; } ct_family;

struct cl_ct {
  int pid;
  int64_t off;
  cl_sb body;
  uint64_t nevents;
  uint32_t next_tid, nasync;  /* thread tracks made: next_tid - 1; async track names: nasync */
  uint64_t next_async_id;
  ct_family *fam;          /* open-addressed by key */
  uint32_t fam_cap, fam_n;
};

cl_ct *ct_new(int pid, int64_t off) {
  cl_ct *ct = calloc(1, sizeof *ct);
  if (!ct) return NULL;
  ct->pid = pid;
  ct->off = off;
  ct->next_tid = 1;
  ct->fam_cap = 256;
  ct->fam = calloc(ct->fam_cap, sizeof *ct->fam);
  if (!ct->fam) { free(ct); return NULL; }
  return ct;
}

void ct_free(cl_ct *ct) {
  if (!ct) return;
  for (uint32_t i = 0; i < ct->fam_cap; i++) { free(ct->fam[i].last_end); free(ct->fam[i].last_vend); free(ct->fam[i].tids); }
  free(ct->fam);
  sb_free(&ct->body);
  free(ct);
}

cl_sb *ct_body(cl_ct *ct) { return &ct->body; }
uint64_t ct_events(const cl_ct *ct) { return ct->nevents; }

static void ev_open(cl_ct *ct) {
  /* the comma depends on events ever written, not on this chunk: chunks are concatenated */
  if (ct->nevents) sb_put(&ct->body, ",\n", 2);
  else sb_put(&ct->body, "\n", 1);
  ct->nevents++;
}

static void meta(cl_ct *ct, const char *what, uint32_t tid, const char *key, const char *sval, long ival) {
  ev_open(ct);
  sb_printf(&ct->body, "{\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"name\":\"%s\",\"args\":{\"%s\":", ct->pid, tid, what, key);
  if (sval) sb_jstr(&ct->body, sval); else sb_i64(&ct->body, ival);
  sb_puts(&ct->body, "}}");
}

void ct_process_meta(cl_ct *ct, const char *name, int sort) {
  meta(ct, "process_name", 0, "name", name, 0);
  meta(ct, "process_sort_index", 0, "sort_index", NULL, sort);
}

static ct_family *family(cl_ct *ct, uint64_t key) {
  if (ct->fam_n * 2 >= ct->fam_cap) {         /* grow */
    uint32_t ncap = ct->fam_cap * 2;
    ct_family *n = calloc(ncap, sizeof *n);
    if (!n) return NULL;
    for (uint32_t i = 0; i < ct->fam_cap; i++) {
      if (!ct->fam[i].cap) continue;
      uint32_t j = cl_hash_slot(ct->fam[i].key, ncap);
      while (n[j].cap) j = (j + 1) & (ncap - 1);
      n[j] = ct->fam[i];
    }
    free(ct->fam);
    ct->fam = n;
    ct->fam_cap = ncap;
  }
  uint32_t j = cl_hash_slot(key, ct->fam_cap);
  while (ct->fam[j].cap && ct->fam[j].key != key) j = (j + 1) & (ct->fam_cap - 1);
  return &ct->fam[j];
}

static int64_t ct_viewer_ns(const cl_ct *ct, uint64_t t);
uint32_t ct_lane(cl_ct *ct, uint64_t key, const char *name, int sort, uint64_t start, uint64_t end) {
  return ct_lane_bounded(ct, key, name, sort, start, end, 0, 1);
}

int ct_lane_made(cl_ct *ct, uint64_t key) {
  ct_family *f = family(ct, key);
  return f && f->cap && !f->async;
}

uint32_t ct_lane_bounded(cl_ct *ct, uint64_t key, const char *name, int sort, uint64_t start, uint64_t end,
                         uint32_t max_lanes, int may_make) {
  if (end < start) end = start;               /* drawn as an instant (ct_slice_begin) */
  ct_family *f = family(ct, key);
  if (!f) return 0;
  if (!f->cap) {
    if (!may_make) return 0;
    f->key = key;
    f->cap = 4;
    f->last_end = calloc(f->cap, sizeof *f->last_end);
    f->last_vend = calloc(f->cap, sizeof *f->last_vend);
    f->tids = calloc(f->cap, sizeof *f->tids);
    snprintf(f->name, sizeof f->name, "%s", name);
    f->sort = sort;
    ct->fam_n++;
    if (!f->last_end || !f->last_vend || !f->tids) return 0;
  }
  /* a lane is free when the slice starts after its last end both exactly and as a viewer that
   * reads ts as a double sees it (ct_viewer_ns) */
  int64_t vstart = ct_viewer_ns(ct, start);
  uint32_t k;
  for (k = 0; k < f->nlanes && (f->last_end[k] > start || f->last_vend[k] > vstart); k++) {}
  if (k == f->nlanes && max_lanes && k >= max_lanes) return 0;
  if (k == f->nlanes) {
    if (f->nlanes == f->cap) {
      uint32_t nc = f->cap * 2;
      uint64_t *le = realloc(f->last_end, nc * sizeof *le);
      if (le) f->last_end = le;
      int64_t *lv = realloc(f->last_vend, nc * sizeof *lv);
      if (lv) f->last_vend = lv;
      uint32_t *td = realloc(f->tids, nc * sizeof *td);
      if (td) f->tids = td;
      if (!le || !lv || !td) return f->tids[0];
      f->cap = nc;
    }
    f->nlanes++;
    f->tids[k] = ct->next_tid++;
    char nm[128];
    if (k) snprintf(nm, sizeof nm, "%s lane %u", f->name, k);
    else snprintf(nm, sizeof nm, "%s", f->name);
    meta(ct, "thread_name", f->tids[k], "name", nm, 0);
    meta(ct, "thread_sort_index", f->tids[k], "sort_index", NULL, (long)f->sort * 64 + k);
  }
  if (end > f->last_end[k]) f->last_end[k] = end;
  if (vstart + (int64_t)(end - start) > f->last_vend[k]) f->last_vend[k] = vstart + (int64_t)(end - start);
  return f->tids[k];
}

/* Top-level tracks so far: thread tracks (lanes included) and async track names. */
static uint32_t ct_tracks(const cl_ct *ct) { return ct->next_tid - 1 + ct->nasync; }
uint32_t ct_track_count(const cl_ct *ct) { return ct_tracks(ct); }
uint64_t ct_async_id(cl_ct *ct) { return ++ct->next_async_id; }

/* The async track `key`: made on first use with `name` (or taken from the fold track). */
static ct_family *async_family(cl_ct *ct, uint64_t key, const char *name) {
  ct_family *f = family(ct, key);
  if (!f) return NULL;
  if (!f->cap) {
    f->key = key;
    f->cap = 1;               /* marks the slot used; an async family has no lanes */
    f->async = 1;
    snprintf(f->name, sizeof f->name, "%s", name);
    ct->fam_n++;
  }
  return f;
}

const char *ct_async_track(cl_ct *ct, uint64_t key, const char *name, uint64_t fold_key, const char *fold_name,
                           uint32_t budget) {
  ct_family *f = family(ct, key);
  if (f && f->cap) return f->name;
  /* a new key: its own track within the budget, else the fold track, counted when first named */
  int own = ct_tracks(ct) < budget;
  if (!own) {
    ct_family *fold = family(ct, fold_key);
    if (fold && !fold->cap) { async_family(ct, fold_key, fold_name); ct->nasync++; }
  } else {
    ct->nasync++;
  }
  f = async_family(ct, key, own ? name : fold_name);   /* after the fold's: a grown table moves slots */
  return f ? f->name : fold_name;
}

/* name: NULL for an "e" (it closes the innermost slice open on its track, whatever its name) */
static void async_head(cl_ct *ct, char ph, uint64_t id, const char *name, const char *cat, uint64_t ts) {
  cl_sb *b = &ct->body;
  ev_open(ct);
  sb_printf(b, "{\"ph\":\"%c\",\"pid\":%d,\"ts\":", ph, ct->pid);
  sb_us(b, (int64_t)ts + ct->off);
  sb_puts(b, ",\"cat\":\"");
  sb_puts(b, cat);
  sb_puts(b, "\"");
  if (name) { sb_puts(b, ",\"name\":"); sb_jstr(b, name); }
  sb_puts(b, ",\"id2\":{\"local\":\"");
  sb_hex(b, id);
  sb_puts(b, "\"}");
}

int ct_async_begin(cl_ct *ct, uint64_t id, const char *name, const char *cat, uint64_t start, uint64_t dur) {
  if ((int64_t)dur < 0) dur = 0;              /* as ct_slice_begin */
  async_head(ct, 'b', id, name, cat, start);
  sb_puts(&ct->body, ",\"dur\":");
  sb_us(&ct->body, (int64_t)dur);
  sb_puts(&ct->body, ",\"args\":{");
  return 1;
}

void ct_async_end(cl_ct *ct, uint64_t id, const char *cat, uint64_t end) {
  async_head(ct, 'e', id, NULL, cat, end);
  sb_puts(&ct->body, "}");
}

/* What a viewer reading this trace's ts as a double of microseconds (Perfetto's JSON importer:
 * llround(ts * 1000.0)) takes monotonic time t for, in the same monotonic ns. At Unix-epoch
 * magnitudes it is off by up to ~256 ns, so slices that touch exactly can overlap there. */
static int64_t ct_viewer_ns(const cl_ct *ct, uint64_t t) {
  /* The trace carries ts as the decimal N/1000 us (N = ns); a double-reading viewer holds the
   * double nearest to it. N/1000 in long double (64-bit mantissa) rounded to double is that
   * same double: a decimal N/1000 is never within long double's error of a double's halfway
   * point unless it is one exactly (then both round to even). Then x1000, rounded. */
  int64_t n = (int64_t)t + ct->off;
  double us = (double)((long double)n / 1000.0L), v = us * 1000.0;
  return (int64_t)(v < 0 ? v - 0.5 : v + 0.5) - ct->off;   /* llround, without libm */
}

int ct_slice_begin(cl_ct *ct, uint32_t tid, const char *name, const char *cat, uint64_t start, uint64_t dur) {
  if ((int64_t)dur < 0) dur = 0;              /* an end before the start, subtracted unsigned */
  ev_open(ct);
  cl_sb *b = &ct->body;
  sb_puts(b, "{\"ph\":\"X\",\"pid\":");
  sb_i64(b, ct->pid);
  sb_puts(b, ",\"tid\":");
  sb_u64(b, tid);
  sb_puts(b, ",\"ts\":");
  sb_us(b, (int64_t)start + ct->off);
  sb_puts(b, ",\"dur\":");
  sb_us(b, (int64_t)dur);
  sb_puts(b, ",\"cat\":\"");
  sb_puts(b, cat);
  sb_puts(b, "\",\"name\":");
  sb_jstr(b, name);
  sb_puts(b, ",\"args\":{");
  return 1;
}

void ct_slice_end(cl_ct *ct) { sb_puts(&ct->body, "}}"); }

void ct_flow(cl_ct *ct, uint64_t id, uint32_t from_tid, uint64_t from_ts, uint32_t to_tid, uint64_t to_ts) {
  cl_sb *b = &ct->body;
  ev_open(ct);
  sb_printf(b, "{\"ph\":\"s\",\"cat\":\"flow\",\"name\":\"enqueue->gpu\",\"pid\":%d,\"tid\":%u,\"ts\":", ct->pid, from_tid);
  sb_us(b, (int64_t)from_ts + ct->off);
  sb_puts(b, ",\"id\":");
  sb_u64(b, id);
  sb_puts(b, "}");
  ev_open(ct);
  sb_printf(b, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"flow\",\"name\":\"enqueue->gpu\",\"pid\":%d,\"tid\":%u,\"ts\":", ct->pid, to_tid);
  sb_us(b, (int64_t)to_ts + ct->off);
  sb_puts(b, ",\"id\":");
  sb_u64(b, id);
  sb_puts(b, "}");
}

void ct_counter(cl_ct *ct, const char *name, uint64_t ts, const char *series, int64_t value) {
  cl_sb *b = &ct->body;
  ev_open(ct);
  sb_printf(b, "{\"ph\":\"C\",\"pid\":%d,\"name\":", ct->pid);
  sb_jstr(b, name);
  sb_puts(b, ",\"ts\":");
  sb_us(b, (int64_t)ts + ct->off);
  sb_puts(b, ",\"args\":{");
  sb_jstr(b, series);
  sb_puts(b, ":");
  sb_i64(b, value);
  sb_puts(b, "}}");
}
