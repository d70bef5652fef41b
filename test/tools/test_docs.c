/* test_docs.c: the documentation keeps up with the code. docs/environment.md's table is exactly
 * what `commlens env` prints (the plugin's one declaration of its variables, common/config.c,
 * through tools/env_doc.py); the README stays a page a newcomer reads in five minutes (at most
 * 250 lines), names the wheel of this version, and every file it links to exists. */
#include "harness.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define README_MAX_LINES 250

TL_TEST(environment_page_is_the_plugins_table) {
  const char *cli = getenv("COMMLENS_CLI");
  REQUIRE(cli, "COMMLENS_CLI is not set");
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "python3 tools/env_doc.py '%s' --check docs/environment.md 2>&1", cli);
  FILE *p = popen(cmd, "r");
  REQUIRE(p, "cannot run %s", cmd);
  char out[8192];
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = 0;
  int rc = pclose(p);
  CHECK(rc == 0, "docs/environment.md is not `commlens env`'s table:\n%s", out);
}

TL_TEST(readme_is_short_and_its_links_lead_somewhere) {
  char *readme = h_read_file("README.md", NULL);
  REQUIRE(readme, "README.md not readable from %s", getenv("PWD") ? getenv("PWD") : "?");
  int lines = 0;
  for (const char *c = readme; *c; c++) lines += *c == '\n';
  CHECK(lines <= README_MAX_LINES, "README.md has %d lines, more than %d: move the detail to docs/", lines,
        README_MAX_LINES);
  int links = 0;
  for (const char *c = strstr(readme, "]("); c; c = strstr(c + 2, "](")) {
    const char *t = c + 2, *e = t + strcspn(t, ")#\n ");
    if (!strncmp(t, "http", 4) || e == t) continue;
    char path[512];
    snprintf(path, sizeof path, "%.*s", (int)(e - t), t);
    CHECK(access(path, R_OK) == 0, "README.md links to %s, which is not in the tree", path);
    links++;
  }
  CHECK(links >= 5, "README.md links to %d files of the tree: the docs are reached from it", links);
  CHECK(strstr(readme, "docs/environment.md"), "README.md does not link the environment reference");
  CHECK(strstr(readme, "commlens-" COMMLENS_VERSION "-py3-none-manylinux_"), "README.md does not name this version's wheel "
        "(commlens-" COMMLENS_VERSION "-py3-none-manylinux_...)");
  free(readme);
}

TL_MAIN("tools/docs")
