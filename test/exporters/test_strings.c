/* test_strings.c: every string the plugin writes is escaped for where it goes. In the trace
 * (exporters/strbuf.c's sb_jstr): valid UTF-8 kept, each invalid byte U+FFFD and counted in the
 * tail's invalid_utf8_replaced, control characters escaped. In Prometheus labels
 * (exporters/prom.c): valid UTF-8, the format's three escapes. Unit checks, then a job whose
 * communicator name and NCCL strings carry invalid UTF-8, driven through the ABI. */
#include "harness.h"
#include "exporters/strbuf.h"
#include "exporters/prom.h"
#include "exporters/summary.h"
#include "common/utf8.h"
#include "common/newfile.h"
#include "common/nccl.h"
#include "common/grow.h"
#include "common/clock.h"
#include <json-c/json.h>

/* Whether the whole of s[0..n) is valid UTF-8 with no raw control character. */
static int clean_utf8(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s, *e = p + n;
  while (p < e) {
    size_t l = cl_utf8_len(p, e);
    if (!l || (*p < 0x20 && *p != '\n')) return 0;
    p += l;
  }
  return 1;
}

TL_TEST(json_strings_keep_utf8_replace_invalid_bytes_escape_controls) {
  cl_sb b = {0};
  uint64_t before = sb_utf8_replaced();
  sb_jstr(&b, "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80|\xFF|\xC3|\xED\xA0\x80|\x01\x1f\x7f|\t\n|\"\\");
  REQUIRE(b.p, "no text");
  const char *want = "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80|\xEF\xBF\xBD|\xEF\xBF\xBD|"
                     "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD|\\u0001\\u001f\\u007f|\\t\\n|\\\"\\\\\"";
  CHECK(!strcmp(b.p, want), "got %s\nwant %s", b.p, want);
  CHECK(sb_utf8_replaced() - before == 5, "%llu replacements counted, want 5 (ff, c3, ed a0 80)",
        (unsigned long long)(sb_utf8_replaced() - before));
  json_object *o = json_tokener_parse(b.p);
  CHECK(o && !strcmp(json_object_get_string(o), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80|\xEF\xBF\xBD|\xEF\xBF\xBD|"
        "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD|\x01\x1f\x7f|\t\n|\"\\"), "json-c reads it back differently");
  json_object_put(o);
  sb_free(&b);
}

TL_TEST(prometheus_labels_are_valid_utf8) {
  cl_summary *sum = cl_summary_new();
  cl_summary_add(sum, "All\xFFReduce", 1 << 20, 1, 10);
  cl_prom_rank r = {.rank = 0, .gpu = 0, .host = "n\xC3\xB6\x64\x65\xFE", .job = "j\"\\\n\xC0\xAF", .version = "0.1.0", .abi = 5};
  cl_sb b = {0};
  cl_prom_format(&b, &r, sum);
  REQUIRE(b.p, "no text");
  CHECK(clean_utf8(b.p, b.len), "the exposition text is not clean UTF-8");
  CHECK(strstr(b.p, "host=\"n\xC3\xB6" "de\xEF\xBF\xBD\""), "host label: %s", b.p);
  CHECK(strstr(b.p, "job=\"j\\\"\\\\\\n\xEF\xBF\xBD\xEF\xBF\xBD\""), "job label: %s", b.p);
  CHECK(strstr(b.p, "func=\"All\xEF\xBF\xBDReduce\""), "func label: %s", b.p);
  sb_free(&b);
  cl_summary_free(sum);
}

/* A communicator named with invalid UTF-8 and a control character, a collective whose NCCL
 * strings hold invalid bytes: the trace is clean UTF-8, keeps what was valid, and counts. */
H_CHILD(bad_strings_job) {
  h_plugin p;
  void *ctx;
  REQUIRE(h_open(&p, NULL, 5) == 0, "load");
  h_comm_info info = {0xBAD5, "gr\xC3\xBCn\xFF\xFE\x01", 1, 2, 0};
  REQUIRE(h_init(&p, &ctx, &info) == 0 && ctx, "init");
  h_drive_coll(&p, ctx, &(h_opts){.func = "AllReduce\xF5"}, 0, NULL);
  h_finalize(&p, ctx);
  h_close(&p);
  char path[1024];
  tr_trace t;
  if (h_load_one_trace(getenv("COMMLENS_DIR"), &t, path, sizeof path)) return;
  size_t len = 0;
  char *raw = h_read_file(path, &len);
  REQUIRE(raw, "read %s", path);
  CHECK(clean_utf8(raw, len), "the trace is not clean UTF-8");
  CHECK(strstr(raw, "gr\xC3\xBCn\xEF\xBF\xBD\xEF\xBF\xBD\\u0001"), "the communicator's name is not kept as UTF-8 "
        "with U+FFFD for its invalid bytes and its control escaped");
  CHECK(strstr(raw, "AllReduce\xEF\xBF\xBD"), "the NCCL string lost its valid part or kept its invalid byte");
  free(raw);
  int64_t replaced = -1;
  CHECK(tr_stats_i64(&t, "invalid_utf8_replaced", &replaced) == 0 && replaced >= 3, "invalid_utf8_replaced %lld",
        (long long)replaced);
  tr_free(&t);
}
TL_TEST(a_job_with_invalid_utf8_names_writes_clean_utf8_and_counts) {
  h_run_case("bad_strings_job", (const char *const[]){"COMMLENS_CUPTI=0", NULL}, NULL, NULL);
}

H_MAIN("exporters/strings")
