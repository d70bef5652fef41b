/* test_spill.c: staging's spill path. The codec (plugin/pipeline/spill_codec.c) must give back
 * every slot bit for bit, whatever the records hold, and refuse a damaged encoding without
 * reading past it; staging must hand records back in order across memory and file chunks,
 * with the lock released around its file I/O (a concurrent drain and formatter, as in the
 * plugin; under ThreadSanitizer in make test's tsan variant). */
#include "tl.h"
#include <unistd.h>
#include "plugin/pipeline/spill_codec.h"
#include "plugin/pipeline/staging.h"
#include "plugin/pipeline/spill_strings.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

/* n slots of whole records: proxy-step starts and stops as the hot path writes them. */
static size_t proxy_steps(cl_rec *out, size_t pairs, uint64_t t0) {
  size_t n = 0;
  for (size_t i = 0; i < pairs; i++) {
    cl_rec *h = &out[n];
    memset(h, 0, 2 * sizeof *h);
    h->kind = CL_REC_START; h->nslots = 2; h->etype = CL_EV_PROXY_STEP; h->aux = 3;
    h->id = (7ull << CL_ID_SEQ_BITS) | (2 * i + 1); h->ts = t0 + 40 * i; h->arg = (7ull << CL_ID_SEQ_BITS) | 1;
    cl_payload *p = (cl_payload *)(h + 1);
    p->rank = 1; p->proxy_step.step = (int32_t)i;
    cl_rec *s = &out[n + 2];
    memset(s, 0, sizeof *s);
    s->kind = CL_REC_STOP; s->nslots = 1; s->id = h->id; s->ts = h->ts + 25;
    n += 3;
  }
  return n;
}

TL_TEST(codec_round_trips_any_slots) {
  enum { N = 4096 };
  static cl_rec in[N], out[N];
  static uint8_t enc[CL_SPILL_ENC_MAX(N)];
  for (int trial = 0; trial < 200; trial++) {
    size_t n = 0;
    while (n < N) {                             /* records of every shape, some malformed */
      unsigned ns = 1 + (unsigned)(rnd() % 4);
      if (n + ns > N) ns = (unsigned)(N - n);
      for (unsigned k = 0; k < ns; k++) {
        uint64_t w[4] = {rnd(), rnd(), rnd(), rnd()};
        int sparse = trial % 3;
        for (int j = 0; j < 4; j++) if (sparse && (rnd() & 1)) w[j] &= 0xff;
        memcpy(&in[n + k], w, sizeof w);
      }
      if (trial % 5) { in[n].kind = (uint8_t)(rnd() % 4); in[n].nslots = (uint8_t)ns; }
      n += ns;
    }
    size_t bytes = cl_spill_encode(in, N, enc);
    CHECK(bytes <= CL_SPILL_ENC_MAX(N), "bound");
    REQUIRE(cl_spill_decode(enc, bytes, out, N) == N, "trial %d: whole", trial);
    REQUIRE(!memcmp(in, out, sizeof in), "trial %d: bit for bit", trial);
  }
}

TL_TEST(codec_shrinks_proxy_steps_fourfold) {
  static cl_rec in[30000], out[30000];
  static uint8_t enc[CL_SPILL_ENC_MAX(30000)];
  size_t n = proxy_steps(in, 10000, 123456789000ull);
  size_t bytes = cl_spill_encode(in, n, enc);
  CHECK(bytes * 4 < n * CL_SLOT_BYTES, "%zu bytes for %zu", bytes, n * CL_SLOT_BYTES);
  CHECK(cl_spill_decode(enc, bytes, out, n) == n && !memcmp(in, out, n * sizeof *in), "round trip");
}

TL_TEST(codec_refuses_damage_without_overrun) {
  static cl_rec in[3000], out[3000];
  static uint8_t enc[CL_SPILL_ENC_MAX(3000)];
  size_t n = proxy_steps(in, 1000, 5);
  size_t bytes = cl_spill_encode(in, n, enc);
  for (size_t cut = 0; cut < bytes; cut += 1 + cut / 7) {   /* every truncation: refused or shorter */
    uint8_t *part = malloc(cut ? cut : 1);                  /* exact size: ASan sees an overrun */
    memcpy(part, enc, cut);
    size_t got = cl_spill_decode(part, cut, out, n);
    CHECK(got == (size_t)-1 || got < n, "cut %zu: %zu", cut, got);
    free(part);
  }
  CHECK(cl_spill_decode(enc, bytes, out, n - 1) == (size_t)-1, "more slots than room is refused");
  uint8_t bad[] = {0x05, 0xff, 0xff, 0xff, 0xff, 1};        /* kind 5 is no record */
  CHECK(cl_spill_decode(bad, sizeof bad, out, n) == (size_t)-1, "bad tag");
}

/* ---- staging: a drain thread appends while a formatter takes, through the spill file ---- */
typedef struct { cl_stage *st; size_t pairs; _Atomic int done; } feed_t;
static void *drain_like(void *arg) {
  feed_t *f = arg;
  static cl_rec buf[3 * 1000];
  for (size_t i = 0; i < f->pairs; i += 1000) {
    size_t n = proxy_steps(buf, 1000, 1000000ull * i);
    for (size_t k = 0; k < n; k += 3) {                      /* renumber: ids count up overall */
      buf[k].id = buf[k + 2].id = (7ull << CL_ID_SEQ_BITS) | (i + k / 3 + 1);
    }
    cl_stage_append(f->st, buf, n);
  }
  atomic_store(&f->done, 1);
  return NULL;
}
typedef struct { uint64_t next, bad, n, slots; } seen_t;
static void take_one(void *arg, const cl_rec *r) {
  seen_t *s = arg;
  if (r->kind == CL_REC_START && r->id != (7ull << CL_ID_SEQ_BITS) + ++s->next) s->bad++;
  s->n++;
  s->slots += r->nslots;
}

TL_TEST(staging_keeps_order_through_the_spill_file) {
  char dir[] = "/tmp/commlens-spill-XXXXXX";
  REQUIRE(mkdtemp(dir), "tmp");
  cl_stage *st = cl_stage_new(2u << 20, dir);               /* two chunks in memory, then the file */
  REQUIRE(st, "new");
  feed_t f = {.st = st, .pairs = 400000};
  seen_t seen = {0};
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, drain_like, &f) == 0, "drain");
  /* take nothing until the file is in use (38 MB go in, 2 MB fit): then take while it fills */
  while (!cl_stage_spilled(st) && !atomic_load(&f.done)) sched_yield();
  /* the counts (what "caught up" is judged by): taken is all that came out, never more than
   * went in, whatever the drain is doing (writing a chunk, lock released, included) */
  uint64_t in, out, bad_counts = 0;
  while (!atomic_load(&f.done) || cl_stage_take(st, 4096, take_one, &seen)) {
    cl_stage_take(st, 4096, take_one, &seen);
    cl_stage_counts(st, &in, &out);
    bad_counts += out != seen.slots || out > in;
  }
  pthread_join(t, NULL);
  while (cl_stage_take(st, 4096, take_one, &seen)) {}
  cl_stage_counts(st, &in, &out);
  CHECK(bad_counts == 0 && in == out && out == seen.slots && in == 3 * f.pairs,
        "counts: in %llu, out %llu, taken %llu slots, %llu inconsistent", (unsigned long long)in,
        (unsigned long long)out, (unsigned long long)seen.slots, (unsigned long long)bad_counts);
  CHECK(seen.bad == 0 && seen.next == f.pairs && seen.n == 2 * f.pairs, "%llu starts in order of %zu, %llu bad",
        (unsigned long long)seen.next, f.pairs, (unsigned long long)seen.bad);
  CHECK(cl_stage_spilled(st) > 0, "the file was used");
  CHECK(cl_stage_dropped(st) == 0, "nothing dropped");
  CHECK(rmdir(dir) == 0, "the open spill file has a name in %s (a crash would leave it)", dir);
  cl_stage_free(st);
}

TL_TEST(staging_without_a_spill_file_drops_and_counts) {
  cl_stage *st = cl_stage_new(2u << 20, "/nonexistent-dir");
  REQUIRE(st, "new");
  static cl_rec buf[3 * 100000];
  size_t n = proxy_steps(buf, 100000, 1);                   /* 9.6 MB: more than the budget */
  size_t lost = cl_stage_append(st, buf, n);
  seen_t seen = {0};
  while (cl_stage_take(st, 4096, take_one, &seen)) {}
  CHECK(lost > 0 && lost == cl_stage_dropped(st), "lost %zu, counted %llu", lost, (unsigned long long)cl_stage_dropped(st));
  CHECK(seen.slots + lost == n && seen.slots >= (2u << 20) / CL_SLOT_BYTES, "%llu slots taken + %zu lost of %zu",
        (unsigned long long)seen.slots, lost, n);
  uint64_t in, out;
  cl_stage_counts(st, &in, &out);
  CHECK(in == n && out == n, "lost slots count as out: in %llu, out %llu of %zu", (unsigned long long)in,
        (unsigned long long)out, n);
  cl_stage_free(st);
}

/* ---- the spill file holds no pointers, and nothing read back from it is trusted ---------- */
static const char *const g_names[] = {"AllReduce", "Float", "Ring", "Simple", "AllGather", "Bfloat16", "Tree", "LL128"};
enum { NNAMES = sizeof g_names / sizeof g_names[0] };
#define COLL_SLOTS (1 + (offsetof(cl_payload, group_api) + sizeof(cl_coll) + CL_SLOT_BYTES - 1) / CL_SLOT_BYTES)
/* n collectives (a START naming four strings and a STOP each); returns the slots. */
static size_t colls(cl_rec *out, size_t n, uint64_t first) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    cl_rec *h = &out[k];
    memset(h, 0, (COLL_SLOTS + 1) * sizeof *h);
    h->kind = CL_REC_START; h->nslots = COLL_SLOTS; h->etype = CL_EV_COLL;
    h->id = (9ull << CL_ID_SEQ_BITS) | (first + i); h->ts = 1000 * (first + i);
    cl_payload *p = (cl_payload *)(h + 1);
    p->coll = (cl_coll){.seq = first + i, .func = g_names[i % NNAMES], .datatype = g_names[(i + 1) % NNAMES],
                        .algo = g_names[(i + 2) % NNAMES], .proto = (i % 7) ? g_names[(i + 3) % NNAMES] : NULL, .count = i};
    cl_rec *st = &out[k + COLL_SLOTS];
    st->kind = CL_REC_STOP; st->nslots = 1; st->id = h->id; st->ts = h->ts + 500;
    k += COLL_SLOTS + 1;
  }
  return k;
}
typedef struct { uint64_t slots, colls, strings_bad, strings; } coll_seen;
static int known(const char *s) {
  for (int i = 0; i < NNAMES; i++) if (s == g_names[i]) return 1;
  return 0;
}
static void take_coll(void *arg, const cl_rec *r) {
  coll_seen *s = arg;
  s->slots += r->nslots;
  if (r->kind != CL_REC_START || r->etype != CL_EV_COLL) return;
  s->colls++;
  const cl_coll *c = &((const cl_start_rec *)r)->p.coll;
  const char *str[] = {c->func, c->datatype, c->algo, c->proto};
  for (int i = 0; i < 4; i++) {
    if (!str[i]) continue;
    if (!known(str[i])) { s->strings_bad++; continue; }   /* never followed: it could point anywhere */
    s->strings += strlen(str[i]) > 0;
  }
}
/* Stages enough collectives to spill; returns the slots appended. */
static size_t spill_colls(cl_stage *st) {
  static cl_rec buf[(COLL_SLOTS + 1) * 1000];
  size_t total = 0;
  for (uint64_t i = 0; i < 200; i++) {
    size_t n = colls(buf, 1000, 1 + 1000 * i);
    cl_stage_append(st, buf, n);       /* (nothing is dropped: the file takes the rest) */
    total += n;
  }
  return total;
}

TL_TEST(spilled_strings_go_to_disk_as_indices_and_come_back) {
  char dir[] = "/tmp/commlens-spill-XXXXXX";
  REQUIRE(mkdtemp(dir), "tmp");
  cl_stage *st = cl_stage_new(2u << 20, dir);
  REQUIRE(st, "new");
  size_t total = spill_colls(st);
  REQUIRE(cl_stage_spilled(st) > 0 && cl_stage_spill_fd(st) >= 0, "the file was used");
  size_t len = (size_t)cl_stage_spill_end(st);
  uint8_t *file = malloc(len);
  REQUIRE(file && pread(cl_stage_spill_fd(st), file, len, 0) == (ssize_t)len, "read the spill file");
  int found = 0;                       /* a chunk's first record is stored as itself: its words */
  for (int i = 0; i < NNAMES; i++) {   /* would be there whole if they were pointers */
    uint64_t v = (uint64_t)(uintptr_t)g_names[i];
    for (size_t k = 0; k + 6 <= len && !found; k++) found = !memcmp(file + k, &v, 6);
  }
  CHECK(!found, "a string's address is in the spill file");
  free(file);
  coll_seen seen = {0};
  while (cl_stage_take(st, 4096, take_coll, &seen)) {}
  CHECK(seen.slots == total && seen.colls == 200000 && seen.strings_bad == 0 && cl_stage_dropped(st) == 0,
        "%llu of %zu slots, %llu collectives, %llu bad strings", (unsigned long long)seen.slots, total,
        (unsigned long long)seen.colls, (unsigned long long)seen.strings_bad);
  cl_stage_free(st);
  rmdir(dir);
}

/* Whoever can write the spill file (another process through /proc, a disk error) changes
 * bytes under the reader: records are lost and counted, never followed, never a crash. */
TL_TEST(corrupted_spill_file_loses_counted_records_without_a_crash) {
  char dir[] = "/tmp/commlens-spill-XXXXXX";
  REQUIRE(mkdtemp(dir), "tmp");
  for (int trial = 0; trial < 6; trial++) {
    cl_stage *st = cl_stage_new(2u << 20, dir);
    REQUIRE(st, "new");
    size_t total = spill_colls(st);
    REQUIRE(cl_stage_spill_fd(st) >= 0 && cl_stage_spill_end(st) > 4096, "spilled");
    char fdpath[64];                       /* as an outsider would: through the file's /proc name */
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", cl_stage_spill_fd(st));
    int w = open(fdpath, O_WRONLY);
    REQUIRE(w >= 0, "open %s: %s", fdpath, strerror(errno));
    size_t step = trial < 3 ? 101 + 37 * (size_t)trial : (size_t)cl_stage_spill_end(st) / 50;
    for (uint64_t off = 17 * (uint64_t)trial; off < cl_stage_spill_end(st); off += step) {
      uint8_t b = (uint8_t)rnd();
      if (trial % 2) b = 0xff;
      REQUIRE(pwrite(w, &b, 1, (off_t)off) == 1, "corrupt");
    }
    close(w);
    coll_seen seen = {0};
    while (cl_stage_take(st, 4096, take_coll, &seen)) {}
    uint64_t lost = cl_stage_dropped(st);
    CHECK(seen.strings_bad == 0, "trial %d: %llu strings read back as addresses nobody interned", trial,
          (unsigned long long)seen.strings_bad);
    CHECK(lost > 0 && seen.slots + lost == total, "trial %d: %llu slots handed over + %llu lost of %zu", trial,
          (unsigned long long)seen.slots, (unsigned long long)lost, total);
    cl_stage_free(st);
  }
  rmdir(dir);
}

TL_MAIN("pipeline/spill")
