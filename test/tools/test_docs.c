/* test_docs.c: README.md documents every COMMLENS_* variable the plugin declares (as printed
 * by `commlens env`), so the one table in common/config.c and the README cannot drift apart. */
#include "harness.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TL_TEST(readme_lists_every_variable) {
  const char *cli = getenv("COMMLENS_CLI");
  REQUIRE(cli, "COMMLENS_CLI is not set");
  char *readme = h_read_file("README.md", NULL);
  REQUIRE(readme, "README.md not readable from %s", getenv("PWD") ? getenv("PWD") : "?");
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "%s env", cli);
  FILE *p = popen(cmd, "r");
  REQUIRE(p, "cannot run %s", cmd);
  char line[2048];
  int n = 0;
  while (fgets(line, sizeof line, p)) {
    char *tab = strchr(line, '\t');
    if (!tab) continue;
    *tab = 0;
    char row[2100];
    snprintf(row, sizeof row, "| `%s` |", line);
    CHECK(strstr(readme, row), "README.md has no table row for %s", line);
    n++;
  }
  CHECK(pclose(p) == 0, "commlens env failed");
  CHECK(n >= 10, "commlens env printed only %d variables", n);
  free(readme);
}

TL_MAIN("tools/docs")
