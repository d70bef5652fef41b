/* flight_dump.c: see flight_dump.h. Each file is written to a temporary beside its name and
 * renamed into place without replacing anything (a reader never sees half a dump; nothing
 * planted at the name is opened or overwritten). Bodies are written as they grow, so a dump
 * holds no more than a few MiB of JSON in memory whatever the ring holds. */
#include "plugin/pipeline/flight_dump.h"
#include "common/config.h"
#include "common/log.h"
#include "common/newfile.h"
#include "plugin/capture/contexts.h"
#include "plugin/capture/ring.h"
#include "plugin/output/identity.h"
#include "plugin/output/tracks.h"
#include "plugin/pipeline/assemble.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BODY_WRITE_BYTES (512u << 10) /* a body is written out once it holds this much */
#define TICK_RECORDS 512               /* the dump's assembler finishes what it can this often, */
#define OPEN_MAX 1024                  /* and, holding more events than this, what waits for a grace */
#define TAIL_STEP_NS 10000000ull       /* and after the last record, in steps of this much time */

typedef struct {
  int fd;                   /* the temporary, -1 before it is made */
  int failed;
  char tmp[1500], target[1500];
  char base[1300];          /* target without ".trace.json" */
  cl_rank_output out;       /* its name and header (rank_output.c) */
} dump_file;

typedef struct {
  cl_parts *parts;
  cl_asm *asm_;
  dump_file files[CL_MAX_PARTS];
  char dir[1100];
  const cl_dump_req *req;
  int err;                  /* the first errno that stopped a file */
  uint64_t fed;             /* records fed so far */
  uint64_t last_ts;         /* the newest record's time */
} dump_run;

static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

/* <dir>/flight, made if missing; a link or a non-directory there is refused (a dump is never
 * written through a path someone else planted). 0, or -1 with errno. */
static int flight_dir(char *out, size_t n) {
  if ((size_t)snprintf(out, n, "%s/flight", cl_cfg.dir) >= n) { errno = ENAMETOOLONG; return -1; }
  if (mkdir(cl_cfg.dir, 0755) != 0 && errno != EEXIST) return -1;
  if (mkdir(out, 0755) != 0 && errno != EEXIST) return -1;
  struct stat st;
  if (lstat(out, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) { errno = ENOTDIR; return -1; }
  return 0;
}

static dump_file *file_of(dump_run *d, cl_part *p) { return &d->files[p->index < CL_MAX_PARTS ? p->index : CL_MAX_PARTS - 1]; }

/* The participant's temporary, made at its first write, with the header in front of its body. */
static int open_file(dump_run *d, cl_part *p) {
  dump_file *f = file_of(d, p);
  if (f->fd >= 0 || f->failed) return f->failed ? -1 : 0;
  cl_parts_settle_rank(d->parts, p);
  cl_out_who who = {.rank = p->rank, .dev = p->dev};
  snprintf(who.rank_source, sizeof who.rank_source, "%s", p->rank_source);
  cl_out_name(&f->out, d->dir, 0, &who);
  char base[sizeof f->base];
  snprintf(base, sizeof base, "%s.%s-%d", f->out.base, d->req->trigger, d->req->number);
  memcpy(f->base, base, sizeof base);
  snprintf(f->target, sizeof f->target, "%s.trace.json", base);
  f->fd = cl_file_create_temp(f->tmp, sizeof f->tmp, f->target, 0644);
  if (f->fd < 0) { f->failed = 1; d->err = errno; return -1; }
  cl_out_header(&f->out, p->ct);
  return 0;
}

static void write_body(dump_run *d, cl_part *p) {
  cl_sb *body = ct_body(p->ct);
  if (!body->len || open_file(d, p) != 0) { sb_reset(body); return; }
  dump_file *f = file_of(d, p);
  if (write_all(f->fd, body->p, body->len) != 0) { f->failed = 1; d->err = errno; }
  sb_reset(body);
}

static void write_bodies(dump_run *d) {
  for (size_t i = 0; i < cl_parts_count(d->parts); i++) write_body(d, cl_parts_at(d->parts, i));
}

/* Every record of the window, oldest first; now and then the assembler finishes what it can at
 * the record's time, so that what the dump holds stays bounded by what is in flight, not by the
 * window. */
static void feed(void *arg, const cl_rec *r) {
  dump_run *d = arg;
  cl_asm_feed(d->asm_, r);
  if (r->ts > d->last_ts) d->last_ts = r->ts;
  if (++d->fed % TICK_RECORDS == 0) {
    cl_asm_stats st;
    cl_asm_get_stats(d->asm_, &st);
    /* past OPEN_MAX, collectives waiting for late children (their grace) are finished now: a
     * child later still is an orphan, counted, in a dump of a window that dense */
    cl_asm_tick(d->asm_, st.open_now > OPEN_MAX ? r->ts + CL_ASM_GRACE_NS : r->ts, 0);
  }
  if (cl_parts_pending_bytes(d->parts) > BODY_WRITE_BYTES) write_bodies(d);
}
/* After the last record: the collectives still waiting (for a grace time, for channels) are
 * finished as time would have finished them, step by step with the bodies written between,
 * then whatever is left; never all at once into one body. */
static void finish_tail(dump_run *d) {
  uint64_t end = d->last_ts + CL_ASM_GRACE_NS + TAIL_STEP_NS;
  for (uint64_t t = d->last_ts; d->last_ts && t < end && t < d->req->now; t += TAIL_STEP_NS) {
    cl_asm_tick(d->asm_, t, 0);
    if (cl_parts_pending_bytes(d->parts) > BODY_WRITE_BYTES) write_bodies(d);
  }
  cl_asm_tick(d->asm_, d->req->now, 1);
}

/* ---- the collectives this rank had not finished ---- */
static void channel_list(cl_sb *b, uint64_t set) {
  sb_puts(b, "[");
  int first = 1;
  for (int ch = 0; ch < CL_WATCH_MAX_CH; ch++)
    if (set >> ch & 1) { sb_printf(b, "%s%d", first ? "" : ",", ch); first = 0; }
  sb_puts(b, "]");
}

/* The channels it still waits on: with KernelCh expected, every channel without its stop;
 * otherwise the channels whose KernelCh started and did not stop or whose proxy ops are open. */
static uint64_t not_done(const cl_watch_coll *c) {
  if (c->kch_expected) {
    uint64_t all = c->kch_expected >= 64 ? ~0ull : (1ull << c->kch_expected) - 1;
    return all & ~c->ch_done;
  }
  return (c->ch_started & ~c->ch_done) | c->proxy_open_ch;
}

typedef struct { dump_run *d; cl_part *p; uint32_t comm; cl_sb *json; int first; } pend_ctx;

static void pending_json(cl_sb *b, const cl_watch_coll *c, uint64_t now) {
  sb_puts(b, "{\"func\":");
  sb_jstr(b, c->func ? c->func : "?");
  sb_printf(b, ",\"seq\":%llu,\"age_ms\":%llu,\"enqueued\":%s,\"channels\":%d,\"kernel_ch_expected\":%d,"
            "\"channels_not_done\":", (unsigned long long)c->seq,
            (unsigned long long)(now > c->start ? (now - c->start) / 1000000u : 0), c->stopped ? "true" : "false",
            c->nchannels, c->kch_expected);
  channel_list(b, not_done(c));
  sb_puts(b, ",\"channels_started\":");
  channel_list(b, c->ch_started);
  sb_puts(b, ",\"channels_done\":");
  channel_list(b, c->ch_done);
  sb_puts(b, ",\"proxy_open_channels\":");
  channel_list(b, c->proxy_open_ch);
  sb_puts(b, "}");
}

/* Draws one unfinished collective of the participant's communicator `comm` on its own track,
 * from its enqueue to the dump, and describes it in the JSON list. */
static void pending_one(void *arg, const cl_watch_coll *c) {
  pend_ctx *x = arg;
  if (c->comm != x->comm) return;
  uint64_t now = x->d->req->now, end = now > c->start ? now : c->start;
  cl_comm_info ci;
  char fam[128], name[96];
  if (cl_comm_lookup(c->comm, &ci) == 0 && ci.d.name[0]) snprintf(fam, sizeof fam, "comm %s: not done at the dump", ci.d.name);
  else snprintf(fam, sizeof fam, "comm #%u: not done at the dump", c->comm);
  snprintf(name, sizeof name, "%s seq %llu not done", c->func ? c->func : "?", (unsigned long long)c->seq);
  uint32_t tid = cl_track_lane(x->p->ct, CL_TRACK_NOT_DONE, c->comm, 0, fam, c->start, end);
  int first = ct_slice_begin(x->p->ct, tid, name, "flight", c->start, end - c->start);
  cl_sb *b = ct_body(x->p->ct);
  sb_key(b, &first, "seq"); sb_u64(b, c->seq);
  sb_key(b, &first, "channels_not_done"); channel_list(b, not_done(c));
  ct_slice_end(x->p->ct);
  if (!x->first) sb_puts(x->json, ",");
  x->first = 0;
  pending_json(x->json, c, now);
}

typedef struct { dump_run *d; cl_part *p; cl_watch *w; cl_sb *json; int first; } comm_ctx;

static void comm_one(void *arg, uint32_t comm, int64_t started, int64_t done) {
  comm_ctx *x = arg;
  if (cl_parts_of_comm(x->d->parts, comm) != x->p) return;
  cl_comm_info ci;
  int known = cl_comm_lookup(comm, &ci) == 0;
  cl_sb *b = x->json;
  sb_puts(b, x->first ? "{\"comm\":\"" : ",{\"comm\":\"");
  x->first = 0;
  sb_hex(b, known ? ci.d.hash : 0);
  sb_puts(b, "\",\"name\":");
  sb_jstr(b, known ? ci.d.name : "");
  sb_printf(b, ",\"rank\":%d,\"nranks\":%d,\"last_started_seq\":%lld,\"last_done_seq\":%lld,\"not_done\":[",
            known ? ci.d.rank : -1, known ? ci.d.nranks : -1, (long long)started, (long long)done);
  pend_ctx pc = {x->d, x->p, comm, b, 1};
  cl_watch_each(x->w, pending_one, &pc);
  sb_puts(b, "]}");
}

/* Finishes one participant's file: the unfinished collectives, the rest of its body, the
 * tail, then the rename into place. 1 if the file is there, else 0. */
static int finish_file(dump_run *d, cl_part *p, const cl_fring *fr, cl_watch *w, char *first, size_t n) {
  cl_sb json = {0};
  comm_ctx cc = {d, p, w, &json, 1};
  sb_puts(&json, "[");
  cl_watch_each_comm(w, comm_one, &cc);
  sb_puts(&json, "]");
  write_body(d, p);
  dump_file *f = file_of(d, p);
  if (f->fd < 0) { sb_free(&json); return 0; }   /* nothing of this GPU in the window */
  cl_fring_stats fs;
  cl_fring_get_stats(fr, &fs);
  cl_ring_totals rt;
  cl_rings_totals(&rt);
  cl_sb tail = {0};
  sb_printf(&tail, "\n],\"commlensStats\":{\"final\":true,\"events\":%llu,\"dropped\":%llu},"
            "\"commlensFlight\":{\"trigger\":", (unsigned long long)ct_events(p->ct),
            (unsigned long long)(rt.dropped + rt.dropped_children + rt.unclaimed));
  sb_jstr(&tail, d->req->trigger);
  sb_printf(&tail, ",\"dump\":%d,\"at_us\":", d->req->number);
  sb_us(&tail, (int64_t)d->req->now + cl_proc.realtime_offset_ns);
  sb_printf(&tail, ",\"window_s\":%d,\"records\":%llu,\"records_put\":%llu,\"evicted_age\":%llu,"
            "\"evicted_room\":%llu,\"bytes\":%llu,\"cap_bytes\":%llu,\"oldest_us\":",
            cl_cfg.flight_s, (unsigned long long)fs.kept, (unsigned long long)fs.put,
            (unsigned long long)fs.evicted_age, (unsigned long long)fs.evicted_room,
            (unsigned long long)fs.bytes, (unsigned long long)fs.cap_bytes);
  sb_us(&tail, fs.oldest_ts ? (int64_t)fs.oldest_ts + cl_proc.realtime_offset_ns : 0);
  sb_printf(&tail, ",\"untracked\":%llu,\"why\":{%s},\"comms\":%s}}\n", (unsigned long long)cl_watch_untracked(w),
            d->req->why ? d->req->why : "", json.p ? json.p : "[]");
  int ok = !tail.oom && !json.oom && !f->failed && write_all(f->fd, tail.p, tail.len) == 0;
  if (!ok && !d->err) d->err = tail.oom || json.oom ? ENOMEM : errno;
  sb_free(&tail);
  sb_free(&json);
  if (close(f->fd) != 0 && ok) { ok = 0; d->err = errno; }
  f->fd = -1;
  if (ok && renameat2(AT_FDCWD, f->tmp, AT_FDCWD, f->target, RENAME_NOREPLACE) != 0) {
    /* the name is taken (or the file system cannot say so atomically): a fresh name beside
     * it, made exclusively, which the rename then replaces (our own empty file) */
    int fresh, fd = cl_file_create_new(f->target, sizeof f->target, f->base, ".trace.json", 0644, &fresh);
    if (fd >= 0) close(fd);
    if (fd < 0 || rename(f->tmp, f->target) != 0) { ok = 0; d->err = errno; }
    else if (fresh) cl_log(CL_LOG_WARN, "flight recorder: %s.trace.json exists (another process's file or a planted link); "
                           "not touching it, the dump is %s", f->base, f->target);
  }
  if (!ok) { unlink(f->tmp); return 0; }
  if (!first[0]) snprintf(first, n, "%s", f->target);
  return 1;
}

int cl_flight_dump(const cl_fring *fr, cl_watch *w, const cl_dump_req *req, const cl_asm *clocks, char *first, size_t n) {
  first[0] = 0;
  dump_run *d = calloc(1, sizeof *d);
  if (!d) { cl_log(CL_LOG_WARN, "flight recorder: out of memory; no %s dump", req->trigger); return 0; }
  d->req = req;
  for (int i = 0; i < CL_MAX_PARTS; i++) d->files[i].fd = -1;
  if (flight_dir(d->dir, sizeof d->dir) != 0) {
    cl_log(CL_LOG_WARN, "flight recorder: cannot use %s/flight: %s; no %s dump", cl_cfg.dir, strerror(errno), req->trigger);
    free(d);
    return 0;
  }
  cl_parts_deps pd = {.comm_count = cl_comm_count, .comm_lookup = cl_comm_lookup,
                      .env_rank = cl_proc.env_rank, .env_source = cl_proc.rank_source,
                      .forced_rank = cl_cfg.rank, .os_pid = (int)cl_proc.pid,
                      .epoch_offset_ns = cl_proc.realtime_offset_ns, .output = CL_OUT_TRACE};
  static const cl_asm_deps deps = {cl_comm_lookup, cl_comm_learn, cl_ring_os_tid};
  d->parts = cl_parts_new(&pd);
  d->asm_ = d->parts ? cl_asm_new(d->parts, NULL, &deps) : NULL;
  int wrote = 0;
  if (d->asm_) {
    if (clocks) cl_asm_clocks_from(d->asm_, clocks);
    cl_parts_discover(d->parts);
    cl_fring_each(fr, feed, d);
    finish_tail(d);
    for (size_t i = 0; i < cl_parts_count(d->parts); i++) {
      wrote += finish_file(d, cl_parts_at(d->parts, i), fr, w, first, n);
    }
  } else {
    d->err = ENOMEM;
  }
  for (int i = 0; i < CL_MAX_PARTS; i++)
    if (d->files[i].fd >= 0) { close(d->files[i].fd); unlink(d->files[i].tmp); }
  if (!wrote) cl_log(CL_LOG_WARN, "flight recorder: no %s dump written to %s: %s", req->trigger, d->dir,
                     d->err ? strerror(d->err) : "no events in the window");
  cl_asm_free(d->asm_);
  cl_parts_free(d->parts);
  free(d);
  return wrote;
}
