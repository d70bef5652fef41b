/* staging.c: see staging.h. Chunks of CHUNK_SLOTS slots; a queue of chunk descriptors, each in
 * memory or at an offset of the spill file. One producer (the drain thread: append) and one
 * consumer (the format thread: take); a mutex guards the queue at chunk granularity and is
 * never held across file I/O: the format thread runs at nice 19, and a drain thread blocked
 * on a lock the starved formatter holds over a read lets the rings overflow (the lossless
 * rate in bench-hotpath). Spill writes, read-backs and the file's truncation happen with the
 * lock released, each on a region nobody else touches until the lock is taken again. */
#include "plugin/pipeline/staging.h"
#include "plugin/pipeline/spill_codec.h"
#include "plugin/pipeline/spill_strings.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK_SLOTS 32768u                 /* 1 MiB */

typedef struct { cl_rec *mem; uint64_t off; uint32_t used, read, enc_bytes; } chunk;   /* enc_bytes: in the file */

struct cl_stage {
  pthread_mutex_t mu;
  chunk *q;
  uint32_t head, tail, cap;                /* queue of chunks [head, tail) */
  cl_rec *fill;                            /* chunk being filled (in memory) */
  uint32_t fill_used;
  cl_rec *rbuf;                            /* a spilled chunk read back (consumer's) */
  uint8_t *ebuf;                           /* its encoding, as read (consumer's) */
  uint8_t *wbuf;                           /* a chunk's encoding, to write (drain's) */
  int rbuf_for;                            /* queue index rbuf holds, -1 none */
  uint64_t mem_chunks, mem_budget_chunks, backlog, spilled, dropped;
  uint64_t appended, taken;                /* slots ever handed in / consumed (cl_stage_counts) */
  uint64_t file_end;
  int fd, spilling;
  int writing;                             /* the drain writes a chunk, lock released */
  int resetting;                           /* the consumer truncates the file, lock released */
  char dir[1400];                          /* where the spill file lives, unnamed */
  cl_spill_strings *strs;                  /* the spilled records' strings, by index */
  cl_rec **pool;                           /* free chunk buffers */
  uint32_t npool;
};

int cl_stage_spill_fd(const cl_stage *s) { return s->fd; }
uint64_t cl_stage_spill_end(const cl_stage *s) { return s->file_end; }

cl_stage *cl_stage_new(uint64_t mem_budget, const char *spill_dir) {
  cl_stage *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->cap = 64;
  s->q = calloc(s->cap, sizeof *s->q);
  s->pool = calloc(64, sizeof *s->pool);
  s->mem_budget_chunks = mem_budget / (CHUNK_SLOTS * CL_SLOT_BYTES);
  if (s->mem_budget_chunks < 2) s->mem_budget_chunks = 2;
  s->fd = -1;
  s->rbuf_for = -1;
  pthread_mutex_init(&s->mu, NULL);
  snprintf(s->dir, sizeof s->dir, "%s", spill_dir ? spill_dir : "");
  s->strs = cl_spill_strings_new();
  if (!s->q || !s->pool || !s->strs) { free(s->q); free(s->pool); cl_spill_strings_free(s->strs); free(s); return NULL; }
  s->wbuf = malloc(CL_SPILL_ENC_MAX(CHUNK_SLOTS));
  if (s->wbuf) memset(s->wbuf, 0, CL_SPILL_ENC_MAX(CHUNK_SLOTS));
  /* The in-memory chunks are allocated and touched now, not at the first burst: a page
   * fault per 4 KiB inside the drain is time the rings do not have at millions of events/s. */
  for (uint64_t i = 0; i < s->mem_budget_chunks && s->npool < 64; i++) {
    cl_rec *b = malloc(CHUNK_SLOTS * CL_SLOT_BYTES);
    if (!b) break;
    memset(b, 0, CHUNK_SLOTS * CL_SLOT_BYTES);
    s->pool[s->npool++] = b;
  }
  return s;
}

static cl_rec *get_buf(cl_stage *s) {
  if (s->npool) return s->pool[--s->npool];
  return malloc(CHUNK_SLOTS * CL_SLOT_BYTES);
}
static void put_buf(cl_stage *s, cl_rec *b) {
  if (s->npool < 64) s->pool[s->npool++] = b;
  else free(b);
}

void cl_stage_free(cl_stage *s) {
  if (!s) return;
  for (uint32_t i = s->head; i != s->tail; i++) free(s->q[i % s->cap].mem);
  free(s->fill);
  free(s->rbuf);
  free(s->ebuf);
  free(s->wbuf);
  for (uint32_t i = 0; i < s->npool; i++) free(s->pool[i]);
  if (s->fd >= 0) close(s->fd);              /* it has no name: closing frees it */
  free(s->pool);
  free(s->q);
  cl_spill_strings_free(s->strs);
  free(s);
}

/* A new private file in dir that no other process can open and that nothing outlives: an
 * O_TMPFILE where the file system has them, else a fresh random name made exclusively (0600,
 * never an existing file or link) and unlinked at once. -1 if neither can be had. */
static int open_unnamed(const char *dir) {
#ifdef O_TMPFILE
  int fd = open(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return fd;
#endif
  char path[1500];
  if (snprintf(path, sizeof path, "%s/.commlens-spill-XXXXXX", dir) >= (int)sizeof path) return -1;
  int t = mkostemp(path, O_CLOEXEC);
  if (t >= 0) unlink(path);
  return t;
}

static int push(cl_stage *s, chunk c) {
  if (s->tail - s->head == s->cap) {
    chunk *n = malloc(2 * s->cap * sizeof *n);
    if (!n) return -1;
    for (uint32_t i = 0; i < s->cap; i++) n[i] = s->q[(s->head + i) % s->cap];
    free(s->q);
    s->q = n;
    s->tail = s->cap;
    s->head = 0;
    s->cap *= 2;
  }
  s->q[s->tail++ % s->cap] = c;
  return 0;
}

/* Moves the filled chunk into the queue: in memory within budget, else to the spill file.
 * Called with the lock held. The drain (may_unlock) writes a spilled chunk with the lock
 * released: the chunk is detached first, so the consumer sees nothing to seal meanwhile and
 * queued chunks keep their order (only the drain pushes while it writes). */
static void seal(cl_stage *s, int may_unlock) {
  if (!s->fill || !s->fill_used) return;
  chunk c = {.used = s->fill_used};
  cl_rec *buf = s->fill;
  s->fill = NULL;
  s->fill_used = 0;
  if (s->resetting || (!s->spilling && s->mem_chunks < s->mem_budget_chunks)) {
    c.mem = buf;                 /* (over budget only while a truncation is under way) */
    s->mem_chunks++;
  } else {
    if (s->fd < 0 && s->dir[0]) s->fd = open_unnamed(s->dir);
    c.off = s->file_end;
    s->spilling = 1;
    ssize_t w = -1;
    size_t bytes = 0;
    if (s->fd >= 0 && s->wbuf) {
      s->writing = 1;
      if (may_unlock) pthread_mutex_unlock(&s->mu);
      cl_spill_strings_out(s->strs, buf, c.used);   /* no pointer goes to disk */
      bytes = cl_spill_encode(buf, c.used, s->wbuf);
      w = pwrite(s->fd, s->wbuf, bytes, (off_t)c.off);
      if (may_unlock) pthread_mutex_lock(&s->mu);
      s->writing = 0;
    }
    put_buf(s, buf);
    if (w != (ssize_t)bytes) {                 /* disk full or no file: these records are lost */
      s->dropped += c.used;
      s->backlog -= c.used;
      return;
    }
    c.enc_bytes = (uint32_t)bytes;
    s->file_end += bytes;
    s->spilled += c.used;
  }
  if (push(s, c) != 0) { s->dropped += c.used; s->backlog -= c.used; if (c.mem) { free(c.mem); s->mem_chunks--; } }
}

size_t cl_stage_append(cl_stage *s, const cl_rec *recs, size_t n) {
  pthread_mutex_lock(&s->mu);
  size_t dropped0 = s->dropped;
  s->appended += n;
  while (n) {
    if (!s->fill) {
      s->fill = get_buf(s);
      s->fill_used = 0;
      if (!s->fill) { s->dropped += n; break; }
    }
    size_t room = CHUNK_SLOTS - s->fill_used, take = 0;
    while (take < n && take + recs[take].nslots <= room && recs[take].nslots) take += recs[take].nslots;
    if (take > n) take = n;
    if (take) {
      memcpy(s->fill + s->fill_used, recs, take * CL_SLOT_BYTES);
      s->fill_used += (uint32_t)take;
      s->backlog += take;
      recs += take;
      n -= take;
    }
    if (n) seal(s, 1);
  }
  size_t lost = (size_t)(s->dropped - dropped0);
  pthread_mutex_unlock(&s->mu);
  return lost;
}

/* The oldest records not yet consumed (a run of whole records), or 0. A peeked run stays
 * valid until consumed: the drain thread never touches a queued chunk. Called with the lock
 * held; drops it to read a spilled chunk back or to truncate the file read empty. */
static size_t peek_locked(cl_stage *s, const cl_rec **out) {
  for (;;) {
    if (s->head == s->tail) {
      if (!s->fill_used) return 0;
      seal(s, 0);                               /* the formatter has caught up: take the rest */
      if (s->head == s->tail) return 0;
    }
    uint32_t at = s->head % s->cap;
    chunk *c = &s->q[at];
    if (c->read < c->used) {
      if (c->mem) { *out = c->mem + c->read; return c->used - c->read; }
      if (s->rbuf_for != (int)at) {
        /* The chunk at the head is the consumer's: the drain only pushes at the tail (which
         * may move the queue, so keep values, not the pointer) and never rewrites the file
         * below file_end while chunks there are queued. */
        uint64_t off = c->off;
        size_t bytes = c->enc_bytes, used = c->used;
        if (!s->rbuf) s->rbuf = malloc(CHUNK_SLOTS * CL_SLOT_BYTES);
        if (!s->ebuf) s->ebuf = malloc(CL_SPILL_ENC_MAX(CHUNK_SLOTS));
        int ok = 0;
        if (s->rbuf && s->ebuf) {
          pthread_mutex_unlock(&s->mu);
          /* the file is not trusted: a chunk that decodes to anything but whole, well-formed
           * records naming known strings is lost (counted), never followed */
          ok = pread(s->fd, s->ebuf, bytes, (off_t)off) == (ssize_t)bytes &&
               cl_spill_decode(s->ebuf, bytes, s->rbuf, CHUNK_SLOTS) == used &&
               cl_spill_strings_in(s->strs, s->rbuf, used) == 0;
          pthread_mutex_lock(&s->mu);
        }
        c = &s->q[at];
        if (!ok) {
          s->dropped += c->used - c->read;    /* unreadable: lost */
          s->backlog -= c->used - c->read;
          c->read = c->used;
          continue;
        }
        s->rbuf_for = (int)at;
      }
      *out = s->rbuf + c->read;
      return c->used - c->read;
    }
    if (c->mem) { put_buf(s, c->mem); s->mem_chunks--; }
    s->rbuf_for = -1;
    s->head++;
    if (s->head == s->tail && s->spilling && !s->writing) {  /* the file is read empty: back to memory */
      s->spilling = 0;
      s->file_end = 0;
      if (s->fd >= 0) {
        s->resetting = 1;           /* the drain keeps new chunks in memory until this ends */
        pthread_mutex_unlock(&s->mu);
        if (ftruncate(s->fd, 0) != 0) { /* a stale tail is harmless: offsets restart */ }
        pthread_mutex_lock(&s->mu);
        s->resetting = 0;
      }
    }
  }
}

static size_t peek(cl_stage *s, const cl_rec **out) {
  pthread_mutex_lock(&s->mu);
  size_t n = peek_locked(s, out);
  pthread_mutex_unlock(&s->mu);
  return n;
}

static void consume(cl_stage *s, size_t n) {
  pthread_mutex_lock(&s->mu);
  chunk *c = &s->q[s->head % s->cap];
  c->read += (uint32_t)n;
  s->backlog -= n;
  s->taken += n;
  pthread_mutex_unlock(&s->mu);
}

size_t cl_stage_take(cl_stage *s, size_t max, cl_stage_sink fn, void *arg) {
  size_t done = 0;
  const cl_rec *recs;
  size_t n;
  while (done < max && (n = peek(s, &recs)) > 0) {
    size_t k = 0;
    while (k < n && done < max) {
      fn(arg, &recs[k]);
      k += recs[k].nslots ? recs[k].nslots : 1;
      done++;
    }
    consume(s, k);
  }
  return done;
}
/* Counters are written by the drain thread under the lock; read them under it too. */
static uint64_t locked_read(const cl_stage *s, const uint64_t *v) {
  pthread_mutex_lock((pthread_mutex_t *)&s->mu);
  uint64_t x = *v;
  pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
  return x;
}
uint64_t cl_stage_spilled(const cl_stage *s) { return locked_read(s, &s->spilled); }
void cl_stage_counts(const cl_stage *s, uint64_t *in, uint64_t *out) {
  pthread_mutex_lock((pthread_mutex_t *)&s->mu);
  *in = s->appended;
  *out = s->taken + s->dropped;
  pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
}
int cl_stage_empty(const cl_stage *s) {
  uint64_t in = 0, out = 0;
  if (s) cl_stage_counts(s, &in, &out);
  return in == out;
}
uint64_t cl_stage_dropped(const cl_stage *s) { return locked_read(s, &s->dropped); }

void cl_read_mark_now(cl_read_mark *m) {
  cl_rings_mark_now(&m->rings);
  m->target_set = 0;
}
void cl_read_mark_unread(cl_read_mark *m, const cl_stage *st, uint64_t *ring_slots, uint64_t *staged_slots) {
  *ring_slots = cl_rings_behind(&m->rings);
  *staged_slots = 0;
  if (!st) return;
  uint64_t in, out;
  cl_stage_counts(st, &in, &out);
  if (!*ring_slots && !m->target_set) {   /* read after the tails: includes every copy before them */
    m->stage_target = in;
    m->target_set = 1;
  }
  uint64_t want = m->target_set ? m->stage_target : in;
  *staged_slots = want > out ? want - out : 0;
}
