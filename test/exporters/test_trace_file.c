/* test_trace_file.c: the gzip layout of a trace (exporters/trace_file.c). A trace of more than
 * 8 MiB is several independent gzip members, none holding more than CL_GZ_MEMBER_BYTES of text,
 * each starting at an event boundary (an optional ',' and a newline, then '{' or the closing
 * ']'), so a reader can start again at any member; zcat still reads the whole trace. */
#include "tl.h"
#include "exporters/trace_file.h"
#include <unistd.h>
#include <zlib.h>
#include <json-c/json.h>
#include <stdint.h>

/* A body of n events as the Chrome-trace writer separates them. */
static char *events(size_t n, size_t *len, size_t first) {
  size_t cap = n * 200 + 16, k = 0;
  char *b = malloc(cap);
  for (size_t i = 0; i < n; i++)
    k += (size_t)snprintf(b + k, cap - k, "%s{\"ph\":\"X\",\"pid\":1,\"tid\":%zu,\"ts\":%zu.5,\"dur\":1.25,\"cat\":\"coll\",\"name\":\"AllReduce\"}",
                          first + i ? ",\n" : "\n", (first + i) % 7, first + i);
  *len = k;
  return b;
}

/* Splits the file into members: their uncompressed texts, concatenated into *all. */
static int members(const unsigned char *f, size_t n, char **all, size_t *all_len, size_t *max_member, int *bad_start) {
  size_t cap = 64u << 20, k = 0;
  *all = malloc(cap);
  int count = 0;
  *max_member = 0;
  *bad_start = 0;
  size_t at = 0;
  while (at < n) {
    z_stream z = {0};
    if (inflateInit2(&z, 16 + 15) != Z_OK) return -1;
    z.next_in = (unsigned char *)f + at;
    z.avail_in = (uInt)(n - at);
    size_t start = k;
    int rc;
    do {
      z.next_out = (unsigned char *)*all + k;
      z.avail_out = (uInt)(cap - k);
      rc = inflate(&z, Z_NO_FLUSH);
      k = cap - z.avail_out;
    } while (rc == Z_OK);
    if (rc != Z_STREAM_END) { inflateEnd(&z); return -1; }
    at = n - z.avail_in;
    inflateEnd(&z);
    const char *t = *all + start;
    size_t len = k - start;
    if (len > *max_member) *max_member = len;
    if (count > 0) {                       /* the header member aside */
      size_t s = len && t[0] == ',' ? 1 : 0;
      if (len < s + 2 || t[s] != '\n' || (t[s + 1] != '{' && t[s + 1] != ']')) (*bad_start)++;
    }
    count++;
  }
  *all_len = k;
  return count;
}

TL_TEST(a_large_gzip_trace_is_several_members_at_event_boundaries) {
  char path[] = "/tmp/commlens-tfile-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0, "mkstemp");
  cl_tfile *f = cl_tfile_open(fd, 1);
  REQUIRE(f, "open");
  const char *head = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", *tail = "\n],\"commlensStats\":{\"final\":true}}\n";
  size_t l1, l2;
  char *b1 = events(40000, &l1, 0), *b2 = events(60000, &l2, 40000);   /* ~4 MiB, then ~6 MiB in one flush */
  CHECK(l1 + l2 > (8u << 20), "only %zu bytes", l1 + l2);
  CHECK(cl_tfile_flush(f, head, strlen(head), tail, strlen(tail)) == 0, "flush header");
  CHECK(cl_tfile_flush(f, b1, l1, tail, strlen(tail)) == 0, "flush 1");
  CHECK(cl_tfile_flush(f, b2, l2, tail, strlen(tail)) == 0, "flush 2");
  cl_tfile_close(f);
  size_t n = 0;
  FILE *in = fopen(path, "rb");
  REQUIRE(in, "read back");
  unsigned char *file = malloc(64u << 20);
  n = fread(file, 1, 64u << 20, in);
  fclose(in);
  char *all;
  size_t all_len = 0, max_member = 0;
  int bad_start = 0;
  int count = members(file, n, &all, &all_len, &max_member, &bad_start);
  CHECK(count >= 5, "%d gzip members", count);          /* header, >= 3 for the body, the tail */
  CHECK(max_member <= CL_GZ_MEMBER_BYTES, "a member holds %zu bytes", max_member);
  CHECK(bad_start == 0, "%d members start inside an event", bad_start);
  /* independent: every member inflates alone from its own header */
  size_t want_len = strlen(head) + l1 + l2 + strlen(tail);
  CHECK(all_len == want_len && !memcmp(all, head, strlen(head)) && !memcmp(all + strlen(head), b1, l1) &&
        !memcmp(all + strlen(head) + l1, b2, l2), "the members' text is not the trace");
  char cmd[128];
  snprintf(cmd, sizeof cmd, "zcat %s | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d[\"traceEvents\"]))'", path);
  FILE *p = popen(cmd, "r");
  long got = -1;
  if (p) { if (fscanf(p, "%ld", &got) != 1) got = -1; pclose(p); }
  CHECK(got == 100000, "zcat + json: %ld events", got);
  free(all); free(file); free(b1); free(b2);
  unlink(path);
}

TL_MAIN("exporters/trace_file")
