/* test_clock_identity.c: the boot id and clock-sync state the trace header carries
 * (plugin/output/clock_identity.c). A boot id is written only when the file holds exactly one UUID;
 * a missing, empty, oversized, malformed or linked file leaves it out, and so does a failed
 * adjtimex for clock_sync: never an empty string or a guess. */
#include "tl.h"
#include "plugin/output/clock_identity.h"
#include "exporters/strbuf.h"
#include <json-c/json.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/timex.h>
#include <unistd.h>

static char g_dir[] = "/tmp/commlens-bootid-XXXXXX";

/* Writes `text` (n bytes) to a fresh file in the test directory; returns its path (static). */
static const char *file_with(const char *name, const char *text, size_t n) {
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) return NULL;
  fwrite(text, 1, n, f);
  fclose(f);
  return path;
}

static void setup(void) {
  static int done;
  if (!done && mkdtemp(g_dir)) done = 1;
}

TL_TEST(a_uuid_with_its_newline_is_read_lower_case) {
  setup();
  char id[CL_BOOT_ID_LEN + 1] = "x";
  const char *why = NULL;
  const char *p = file_with("ok", "1E823CAE-436e-4e7e-a910-7e770bfba7cc\n", 37);
  REQUIRE(p, "cannot write the test file");
  CHECK(cl_boot_id_read(p, id, &why) == 0, "rejected: %s", why ? why : "?");
  CHECK(!strcmp(id, "1e823cae-436e-4e7e-a910-7e770bfba7cc"), "read \"%s\"", id);
  p = file_with("nonl", "1e823cae-436e-4e7e-a910-7e770bfba7cc", 36);
  CHECK(cl_boot_id_read(p, id, &why) == 0 && strlen(id) == 36, "without its newline: \"%s\"", id);
}

TL_TEST(a_missing_file_leaves_no_boot_id) {
  setup();
  char id[CL_BOOT_ID_LEN + 1] = "stale";
  const char *why = NULL;
  char path[256];
  snprintf(path, sizeof path, "%s/absent", g_dir);
  CHECK(cl_boot_id_read(path, id, &why) == -1, "a missing file was read");
  CHECK(id[0] == 0, "left \"%s\"", id);
  CHECK(why && !strcmp(why, "not present"), "why: %s", why ? why : "(none)");
}

TL_TEST(anything_but_one_uuid_is_refused) {
  setup();
  static const struct { const char *name, *text; size_t n; } bad[] = {
    {"empty", "", 0},
    {"newline", "\n", 1},
    {"short", "1e823cae-436e-4e7e-a910-7e770bfba7c\n", 36},
    {"long", "1e823cae-436e-4e7e-a910-7e770bfba7cca\n", 38},
    {"nodash", "1e823cae0436e04e7e0a91007e770bfba7cc\n", 37},
    {"nothex", "1e823cae-436e-4e7e-a910-7e770bfba7cg\n", 37},
    {"quote", "1e823cae-436e-4e7e-a910-7e770bfba7c\"\n", 37},
    {"twolines", "1e823cae-436e-4e7e-a910-7e770bfba7cc\n\n", 38},
    {"nul", "1e823cae-436e-4e7e-a910-7e770bfba7c\0\n", 37},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char id[CL_BOOT_ID_LEN + 1] = "stale";
    const char *why = NULL;
    const char *p = file_with(bad[i].name, bad[i].text, bad[i].n);
    REQUIRE(p, "cannot write %s", bad[i].name);
    CHECK(cl_boot_id_read(p, id, &why) == -1, "%s accepted as \"%s\"", bad[i].name, id);
    CHECK(id[0] == 0, "%s left \"%s\"", bad[i].name, id);
  }
  /* far more than a UUID: read bounded, refused */
  char big[100000];
  memset(big, 'a', sizeof big);
  char id[CL_BOOT_ID_LEN + 1];
  const char *why = NULL;
  CHECK(cl_boot_id_read(file_with("big", big, sizeof big), id, &why) == -1 && !id[0], "a 100 kB file accepted");
}

TL_TEST(a_link_is_not_followed) {
  setup();
  const char *p = file_with("target", "1e823cae-436e-4e7e-a910-7e770bfba7cc\n", 37);
  char link[256];
  snprintf(link, sizeof link, "%s/link", g_dir);
  REQUIRE(p && symlink(p, link) == 0, "cannot make the link");
  char id[CL_BOOT_ID_LEN + 1];
  const char *why = NULL;
  CHECK(cl_boot_id_read(link, id, &why) == -1 && !id[0], "read through a link: \"%s\"", id);
}

/* The header members parse as JSON and are left out when unknown. */
static json_object *members_id(const char *boot_id, const char *clock_id, const cl_clock_sync *s) {
  cl_sb b = {0};
  sb_puts(&b, "{\"host\":\"h\"");
  cl_clock_identity_json(&b, boot_id, clock_id, s);
  sb_puts(&b, "}");
  sb_put(&b, "", 1);
  json_object *o = json_tokener_parse(b.p);
  sb_free(&b);
  return o;
}
static json_object *members(const char *boot_id, const cl_clock_sync *s) { return members_id(boot_id, NULL, s); }

TL_TEST(header_members_are_present_when_known_and_absent_when_not) {
  cl_clock_sync s = {.known = 1, .synchronised = 0, .esterror_us = 16000000, .maxerror_us = 16000000};
  json_object *o = members("1e823cae-436e-4e7e-a910-7e770bfba7cc", &s), *v, *c;
  REQUIRE(o, "not JSON");
  CHECK(json_object_object_get_ex(o, "boot_id", &v) &&
        !strcmp(json_object_get_string(v), "1e823cae-436e-4e7e-a910-7e770bfba7cc"), "boot_id");
  REQUIRE(json_object_object_get_ex(o, "clock_sync", &c), "no clock_sync");
  CHECK(json_object_object_get_ex(c, "synchronised", &v) && json_object_is_type(v, json_type_boolean) &&
        !json_object_get_boolean(v), "synchronised");
  CHECK(json_object_object_get_ex(c, "esterror_us", &v) && json_object_get_int64(v) == 16000000, "esterror_us");
  CHECK(json_object_object_get_ex(c, "maxerror_us", &v) && json_object_get_int64(v) == 16000000, "maxerror_us");
  json_object_put(o);

  cl_clock_sync unknown = {0};
  o = members("", &unknown);
  REQUIRE(o, "not JSON without them");
  CHECK(!json_object_object_get_ex(o, "boot_id", NULL), "an unread boot_id was written");
  CHECK(!json_object_object_get_ex(o, "clock_sync", NULL), "an unread clock_sync was written");
  CHECK(json_object_object_length(o) == 1, "%d members", json_object_object_length(o));
  json_object_put(o);
  o = members_id("", "", &unknown);
  CHECK(o && json_object_object_length(o) == 1, "an empty clock_id was written");
  json_object_put(o);
}

/* A replay's clock id (COMMLENS_CLOCK_ID) reaches the header beside the boot id. */
TL_TEST(a_clock_id_is_written_beside_the_boot_id) {
  cl_clock_sync unknown = {0};
  json_object *o = members_id("1e823cae-436e-4e7e-a910-7e770bfba7cc", "replay-42-7", &unknown), *v;
  REQUIRE(o, "not JSON");
  CHECK(json_object_object_get_ex(o, "clock_id", &v) && !strcmp(json_object_get_string(v), "replay-42-7"), "clock_id");
  CHECK(json_object_object_get_ex(o, "boot_id", NULL), "boot_id lost");
  json_object_put(o);
}

/* The query form reads what the kernel says and changes nothing: the same state read
 * independently before and after agrees (a clock being disciplined can change its errors
 * between reads, never its flags this fast: the flags are compared, the errors bounded). */
TL_TEST(clock_sync_reads_the_kernel_state) {
  struct timex before = {0}, after = {0};
  int st0 = adjtimex(&before);
  cl_clock_sync s;
  cl_clock_sync_read(&s);
  int st1 = adjtimex(&after);
  if (st0 < 0 || st1 < 0) {
    CHECK(!s.known, "adjtimex fails here, yet the state is known");
    return;
  }
  REQUIRE(s.known, "adjtimex answers here, yet the state is unknown");
  int unsync = (before.status & STA_UNSYNC) || st0 == TIME_ERROR;
  CHECK(s.synchronised == !unsync, "synchronised %d, the kernel's status 0x%x state %d", s.synchronised,
        before.status, st0);
  CHECK(before.status == after.status && before.freq == after.freq, "the clock's status or frequency changed");
  CHECK(s.maxerror_us >= 0 && s.esterror_us >= 0, "negative errors %ld %ld", s.esterror_us, s.maxerror_us);
}

TL_MAIN("output/clock_identity")
