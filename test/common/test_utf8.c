/* test_utf8.c: the shared UTF-8 rule (common/utf8.c) against the sequences RFC 3629 allows
 * and the ones it forbids. */
#include "tl.h"
#include "common/utf8.h"
#include <string.h>

static size_t len_of(const char *s, size_t n) { return cl_utf8_len((const unsigned char *)s, (const unsigned char *)s + n); }

TL_TEST(valid_sequences_have_their_length) {
  CHECK(len_of("a", 1) == 1, "ASCII");
  CHECK(len_of("\x01", 1) == 1, "a control byte is the writer's to escape");
  CHECK(len_of("\xC3\xA9", 2) == 2, "2-byte");
  CHECK(len_of("\xE2\x82\xAC", 3) == 3, "3-byte");
  CHECK(len_of("\xF0\x9F\x98\x80", 4) == 4, "4-byte");
  CHECK(len_of("\xF4\x8F\xBF\xBF", 4) == 4, "U+10FFFF");
}

TL_TEST(invalid_sequences_are_refused) {
  CHECK(len_of("\x80", 1) == 0, "stray continuation");
  CHECK(len_of("\xC0\xAF", 2) == 0 && len_of("\xC1\xBF", 2) == 0, "overlong 2-byte");
  CHECK(len_of("\xE0\x80\xAF", 3) == 0, "overlong 3-byte");
  CHECK(len_of("\xED\xA0\x80", 3) == 0, "surrogate");
  CHECK(len_of("\xF0\x80\x80\xAF", 4) == 0, "overlong 4-byte");
  CHECK(len_of("\xF4\x90\x80\x80", 4) == 0 && len_of("\xF5\x80\x80\x80", 4) == 0, "past U+10FFFF");
  CHECK(len_of("\xE2\x82", 2) == 0, "cut by the end");
  CHECK(len_of("\xE2\x28\xA1", 3) == 0, "bad continuation");
}

TL_TEST(clean_replaces_and_counts) {
  char out[64];
  CHECK(cl_utf8_clean("ok \xC3\xA9", 5, out, sizeof out) == 0 && !strcmp(out, "ok \xC3\xA9"), "valid kept");
  CHECK(cl_utf8_clean("a\xFF" "b\xE2\x82", 5, out, sizeof out) == 3, "three bad bytes counted");
  CHECK(!strcmp(out, "a" CL_UTF8_REPLACEMENT "b" CL_UTF8_REPLACEMENT CL_UTF8_REPLACEMENT), "each replaced");
  CHECK(cl_utf8_clean("ab\xE2\x82\xAC", 5, out, 5) == 0 && !strcmp(out, "ab"), "never cut inside a sequence");
  CHECK(cl_utf8_clean("x", 1, out, 1) == 0 && out[0] == 0, "always terminated");
}

TL_MAIN("common/utf8")
