/* tl.c: the runner behind tl.h. An optional argument runs only tests whose name contains it. */
#include "tl.h"
struct tl_case tl_cases[256];
int tl_ncases, tl_cur_failed;

int tl_main(const char *suite, int argc, char **argv) {
  int passed = 0, failed = 0;
  for (int i = 0; i < tl_ncases; i++) {
    if (argc > 1 && !strstr(tl_cases[i].name, argv[1])) continue;
    tl_cur_failed = 0;
    tl_cases[i].fn();
    if (tl_cur_failed) { failed++; fprintf(stderr, "FAIL %s/%s\n", suite, tl_cases[i].name); }
    else passed++;
    fflush(stderr);
  }
  printf("%s: %d passed, %d failed\n", suite, passed, failed);
  return failed ? 1 : 0;
}
