/* test_hostile.c: the CLI on a shared machine and on hostile traces (issue 23): outputs never
 * written through planted links or over an input, FIFOs among the inputs, damaged and torn
 * gzip traces (single and multi-member), flow ids and ranks at the edges of their ranges,
 * invalid UTF-8 and terminal escapes in trace strings, and numeric options out of range. */
#include "tl.h"
#include "harness.h"
#include "synth_gen.h"
#include <json-c/json.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../../tools/commlens/trace_read.c"
#include "../../tools/commlens/util.c"
#include "../../common/utf8.c"

static char *slurp(const char *path, size_t *len) { return h_read_file(path, len); }
static void spit(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb"); if (f) { fwrite(b, 1, n, f); fclose(f); }
}

/* "CLI args" under timeout(1) (a hang fails instead of stalling the suite), stdout and stderr
 * captured; returns the exit code (124: it hung). Caller frees. */
static int run_cli(const char *args, char **out, char **err) {
  static char wrapped[1200];
  if (!wrapped[0]) {
    const char *c = getenv("COMMLENS_CLI");
    snprintf(wrapped, sizeof wrapped, "timeout 120 %s", c && *c ? c : "build/commlens");
    setenv("COMMLENS_CLI", wrapped, 1);
  }
  char a[4096], e[64];
  snprintf(e, sizeof e, "/tmp/commlens_h_err.%d", (int)getpid());
  snprintf(a, sizeof a, "%s 2>%s </dev/null", args, e);
  int st;
  *out = h_run_cli(a, &st); *err = h_read_file(e, NULL);
  unlink(e);
  if (!*out) *out = strdup("");
  if (!*err) *err = strdup("");
  return st;
}
static char *mkdir_tmp(void) { char t[] = "/tmp/commlens_hostile_XXXXXX"; return strdup(mkdtemp(t)); }
static void rm_rf(const char *d) { h_rm_rf(d); }
static int contains(const char *hay, const char *needle) { return hay && strstr(hay, needle) != NULL; }

/* A synthetic job of nranks plain-JSON ranks in a fresh directory. Caller frees. */
static char *job_dir(int nranks, int ncoll) {
  char *d = mkdir_tmp(); synth_cfg c; synth_defaults(&c);
  c.nranks = nranks; c.ncoll = ncoll; c.nch = 2; c.nsteps = 1; c.dir = d;
  char p[600];
  for (int r = 0; r < nranks; r++) synth_write_rank(&c, r, p, sizeof p);
  return d;
}
static void rank_path(const char *d, int r, char *p, size_t n) {
  snprintf(p, n, "%s/commlens-r%d-node0-%d.trace.json", d, r, 1000 + r);
}

/* ---- item 1: outputs are new files renamed into place, never written through a link ---- */
TL_TEST(outputs_never_written_through_a_planted_link) {
  char *d = job_dir(2, 10), *o = mkdir_tmp();
  char victim[700], a[2400], link[700], *out, *err;
  snprintf(victim, sizeof victim, "%s/victim", o);
  spit(victim, "precious\n", 9);
  /* report --html F with F.tmp planted (the old fixed temporary name), and F itself a link */
  snprintf(link, sizeof link, "%s/page.html.tmp", o);
  CHECK(symlink(victim, link) == 0, "symlink");
  snprintf(a, sizeof a, "report %s --html %s/page.html", d, o);
  int rc = run_cli(a, &out, &err);
  char *v = slurp(victim, NULL);
  CHECK(rc == 0 && v && !strcmp(v, "precious\n"), "report --html: rc %d, victim now '%.40s': %s", rc, v ? v : "", err);
  free(v); free(out); free(err);
  snprintf(a, sizeof a, "%s/page.html", o);
  char *page = slurp(a, NULL);
  CHECK(page && !strncmp(page, "<!DOCTYPE html>", 15), "the page was not written");
  free(page);
  /* merge -o OUT where OUT (each format) and OUT.tmp are links to the victim */
  static const char *const names[] = { "m.json", "m.json.gz", "m.pftrace", "m.pftrace.gz" };
  for (int i = 0; i < 4; i++) {
    char t[800]; snprintf(link, sizeof link, "%s/%s", o, names[i]); snprintf(t, sizeof t, "%s.tmp", link);
    CHECK(symlink(victim, link) == 0 && symlink(victim, t) == 0, "symlinks");
    snprintf(a, sizeof a, "merge %s -o %s", d, link);
    rc = run_cli(a, &out, &err);
    v = slurp(victim, NULL);
    struct stat st;
    CHECK(rc == 0 && v && !strcmp(v, "precious\n"), "merge -o %s: rc %d, victim now '%.40s': %s", names[i], rc, v ? v : "", err);
    CHECK(lstat(link, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0, "merge -o %s: the output is not a new file", names[i]);
    free(v); free(out); free(err);
  }
  /* no temporaries left behind */
  snprintf(a, sizeof a, "ls %s | grep -c '\\.tmp$' | grep -qx 5", o);   /* the 5 planted links only */
  CHECK(system(a) == 0, "temporaries left in %s", o);
  rm_rf(d); rm_rf(o); free(d); free(o);
}

/* ---- item 2: an output that is one of the inputs is refused (by inode, not by name) ---- */
TL_TEST(merge_refuses_an_input_as_its_output) {
  char *d = job_dir(2, 10);
  char in[700], alias[700], a[2400], *out, *err;
  rank_path(d, 1, in, sizeof in);
  size_t n0; char *before = slurp(in, &n0);
  snprintf(alias, sizeof alias, "%s/alias.json", d);
  CHECK(link(in, alias) == 0, "hard link");
  const char *outs[] = { in, alias };
  for (int i = 0; i < 2; i++) {
    snprintf(a, sizeof a, "merge %s -o %s", d, outs[i]);
    int rc = run_cli(a, &out, &err);
    CHECK(rc == 2 && contains(err, "one of the inputs"), "-o %s: rc %d: %s", outs[i], rc, err);
    free(out); free(err);
    size_t n1; char *after = slurp(in, &n1);
    CHECK(after && n1 == n0 && !memcmp(before, after, n0), "-o %s: the input changed", outs[i]);
    free(after);
  }
  snprintf(a, sizeof a, "report %s --html %s", d, alias);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 2 && contains(err, "an input"), "--html onto an input: rc %d: %s", rc, err);
  free(out); free(err);
  free(before); rm_rf(d); free(d);
}

/* ---- item 3: a FIFO named like a trace is skipped with one message, never waited on ---- */
TL_TEST(fifo_among_the_inputs_is_skipped) {
  char *d = job_dir(2, 10);
  char f[700], a[2400], *out, *err;
  snprintf(f, sizeof f, "%s/evil.trace.json", d);
  REQUIRE(mkfifo(f, 0600) == 0, "mkfifo");
  snprintf(a, sizeof a, "report %s --json", d);
  int rc = run_cli(a, &out, &err);
  CHECK(rc == 0 && contains(err, "evil.trace.json: not a regular file (a FIFO)"), "report: rc %d: %s", rc, err);
  CHECK(!contains(strstr(err, "evil.trace.json") + 1, "evil.trace.json"), "more than one message: %s", err);
  free(out); free(err);
  snprintf(a, sizeof a, "merge %s -o %s/m.json", d, d);
  rc = run_cli(a, &out, &err);
  CHECK(rc == 0 && contains(err, "evil.trace.json: not a regular file (a FIFO)") && contains(err, "2 rank(s)"),
        "merge: rc %d: %s", rc, err);
  free(out); free(err);
  rm_rf(d); free(d);
}

/* ---- item 4: damaged and torn gzip traces keep what precedes the damage ---- */
/* text compressed as one gzip member */
static unsigned char *gz_member(const char *t, size_t n, size_t *outn) {
  z_stream z; memset(&z, 0, sizeof z);
  deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
  size_t cap = deflateBound(&z, n) + 64;
  unsigned char *o = malloc(cap);
  z.next_in = (Bytef *)t; z.avail_in = (uInt)n; z.next_out = o; z.avail_out = (uInt)cap;
  deflate(&z, Z_FINISH);
  *outn = cap - z.avail_out;
  deflateEnd(&z);
  return o;
}
typedef struct { int colls; int64_t max_seq; } coll_count;
static void count_colls(const cl_ev *ev, void *arg) {
  coll_count *c = arg;
  if (ev->cat == CAT_COLL_GPU) { c->colls++; if (ev->seq > c->max_seq) c->max_seq = ev->seq; }
}
static int count_in(const char *t, size_t n, const char *needle) {
  int k = 0; size_t l = strlen(needle);
  for (const char *p = t; (p = memmem(p, (size_t)(t + n - p), needle, l)); p += l) k++;
  return k;
}

TL_TEST(gz_damage_keeps_the_events_before_it) {
  char *d = job_dir(1, 450);
  char in[700], gzp[800];
  rank_path(d, 0, in, sizeof in);
  size_t n; char *t = slurp(in, &n);
  int total = count_in(t, n, "\"cat\":\"coll_gpu\"");
  size_t zn; unsigned char *z = gz_member(t, n, &zn);
  snprintf(gzp, sizeof gzp, "%s.gz", in);
  unlink(in);
  z[zn * 2 / 3] ^= 0x10;   /* one flipped byte two thirds in */
  spit(gzp, z, zn);
  coll_count c = { 0, -1 }; cl_info info;
  int rc = cl_trace_scan(gzp, count_colls, &c, &info, 0);
  CHECK(rc == 0, "the rank is discarded: %s", info.msg);
  /* what precedes the damage: two thirds less a deflate block or two */
  CHECK(c.colls >= total / 2 && c.colls <= total, "%d of %d collectives kept", c.colls, total);
  CHECK(contains(info.msg, "compressed byte") && contains(info.msg, "uncompressed byte") && info.bad,
        "message: '%s'", info.msg);
  cl_info_free(&info);
  /* the CLI says which file, where and what, and reports the rank */
  char a[1600], *out, *err;
  snprintf(a, sizeof a, "report %s --json", d);
  int crc = run_cli(a, &out, &err);
  CHECK(crc == 0 && contains(err, gzp) && contains(err, "gzip data damaged at compressed byte"), "report: rc %d: %s", crc, err);
  free(out); free(err);
  /* torn: the same file cut two thirds in keeps the events before the tear */
  z[zn * 2 / 3] ^= 0x10;
  spit(gzp, z, zn * 2 / 3);
  c = (coll_count){ 0, -1 };
  rc = cl_trace_scan(gzp, count_colls, &c, &info, 0);
  CHECK(rc == 0 && c.colls >= total / 2 && info.truncated && contains(info.msg, "cut short"),
        "torn: rc %d, %d of %d, '%s'", rc, c.colls, total, info.msg);
  cl_info_free(&info);
  free(z); free(t); rm_rf(d); free(d);
}

/* A file of four gzip members, each starting at an event line (the plugin's writer), with a
 * byte flipped inside the second: the first, third and fourth members' events are all read. */
TL_TEST(gz_damage_resumes_at_the_next_member) {
  char *d = job_dir(1, 400);
  char in[700], gzp[800];
  rank_path(d, 0, in, sizeof in);
  size_t n; char *t = slurp(in, &n);
  int total = count_in(t, n, "\"cat\":\"coll_gpu\"");
  size_t cut[5] = { 0, 0, 0, 0, n };
  for (int k = 1; k < 4; k++) {   /* before the ",\n{" that follows each quarter */
    const char *q = memmem(t + n * (size_t)k / 4, n - n * (size_t)k / 4, ",\n{", 3);
    REQUIRE(q, "no event line");
    cut[k] = (size_t)(q - t);
  }
  unsigned char *all = NULL; size_t alln = 0, start2 = 0, len2 = 0;
  for (int k = 0; k < 4; k++) {
    size_t zn; unsigned char *z = gz_member(t + cut[k], cut[k + 1] - cut[k], &zn);
    if (k == 1) { start2 = alln; len2 = zn; }
    all = realloc(all, alln + zn); memcpy(all + alln, z, zn); alln += zn; free(z);
  }
  all[start2 + len2 / 2] ^= 0x20;
  snprintf(gzp, sizeof gzp, "%s.gz", in);
  unlink(in);
  spit(gzp, all, alln);
  int want = total - count_in(t + cut[1], cut[2] - cut[1], "\"cat\":\"coll_gpu\"");
  coll_count c = { 0, -1 }; cl_info info;
  int rc = cl_trace_scan(gzp, count_colls, &c, &info, 0);
  CHECK(rc == 0 && c.colls >= want && c.colls < total && c.max_seq == 399,
        "rc %d: %d collectives (last seq %lld), want at least %d of %d: %s", rc, c.colls, (long long)c.max_seq, want, total, info.msg);
  CHECK(info.has_stats && info.final, "the stats after the damage were not read");
  CHECK(contains(info.msg, "gzip data damaged"), "message: '%s'", info.msg);
  cl_info_free(&info);
  /* a damaged gzip header of a member: also resumed at the next */
  all[start2 + len2 / 2] ^= 0x20;
  all[start2 + 2] = 0x07;   /* compression method */
  spit(gzp, all, alln);
  c = (coll_count){ 0, -1 };
  rc = cl_trace_scan(gzp, count_colls, &c, &info, 0);
  CHECK(rc == 0 && c.colls >= want && c.max_seq == 399, "bad member header: %d of %d: %s", c.colls, total, info.msg);
  cl_info_free(&info);
  free(all); free(t); rm_rf(d); free(d);
}

TL_MAIN("tools/hostile")
