/* test_exports.c: the built library exports exactly ncclProfiler_v1..v7 (nothing else is
 * visible), and each table is well-formed: name "commlens" and six non-NULL functions. */
#include "harness.h"
#include <dlfcn.h>

TL_TEST(export_list_is_exactly_the_seven_tables) {
  char cmd[2048], line[512];
  snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s' 2>&1", h_lib_path());
  FILE *f = popen(cmd, "r");
  REQUIRE(f != NULL, "popen nm");
  int seen[8] = {0}, others = 0, total = 0;
  while (fgets(line, sizeof line, f)) {
    char addr[64], kind[8], name[400];
    if (sscanf(line, "%63s %7s %399s", addr, kind, name) != 3) {
      CHECK(0, "unexpected nm output: %s", line);
      continue;
    }
    total++;
    int v;
    char tail;
    if (sscanf(name, "ncclProfiler_v%d%c", &v, &tail) == 1 && v >= 1 && v <= 7) { seen[v]++; continue; }
    others++;
    CHECK(0, "unexpected exported symbol %s (%s)", name, kind);
  }
  int rc = pclose(f);
  CHECK(rc == 0, "nm exited %d", rc);
  for (int v = 1; v <= 7; v++) CHECK(seen[v] == 1, "ncclProfiler_v%d exported %d times", v, seen[v]);
  CHECK(others == 0 && total == 7, "%d symbols, %d unexpected", total, others);
}

TL_TEST(tables_are_well_formed) {
  for (int v = 1; v <= 7; v++) {
    h_plugin p;
    REQUIRE(h_open(&p, NULL, v) == 0, "load v%d", v);
    const void *const *fn = (const void *const *)p.table;
    CHECK(p.name && !strcmp(p.name, "commlens"), "v%d name %s", v, p.name ? p.name : "(null)");
    for (int i = 1; i < 6; i++) CHECK(fn[i] != NULL, "v%d function %d is NULL", v, i);
    h_close(&p);
  }
}

TL_TEST(internal_symbols_are_hidden) {
  void *dl = dlopen(h_lib_path(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(dl != NULL, "dlopen: %s", dlerror());
  const char *names[] = {"cl_event_start", "cl_event_stop", "cl_comm_init", "cl_cfg", "cl_rings",
                         "ncclProfiler_v8", "ncclProfiler_v0"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    CHECK(dlsym(dl, names[i]) == NULL, "%s is visible", names[i]);
  dlclose(dl);
}

H_MAIN("abi/exports")
