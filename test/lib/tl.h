/* tl.h: commlens' minimal test framework. A suite is one program; each TL_TEST runs in
 * order; CHECK records a failure and continues, REQUIRE stops the test. The program ends
 * with "SUITE: N passed, N failed" (read by test/run.sh) and exits non-zero on failure. */
#ifndef COMMLENS_TL_H
#define COMMLENS_TL_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*tl_fn)(void);
struct tl_case { const char *name; tl_fn fn; };
extern struct tl_case tl_cases[256];
extern int tl_ncases, tl_cur_failed;

#define TL_TEST(name)                                                                 \
  static void name(void);                                                             \
  __attribute__((constructor)) static void tl_reg_##name(void) {                      \
    tl_cases[tl_ncases++] = (struct tl_case){#name, name}; }                          \
  static void name(void)

#define CHECK(cond, ...) do { if (!(cond)) { tl_cur_failed = 1;                       \
    fprintf(stderr, "  FAIL %s:%d: %s", __FILE__, __LINE__, #cond);                   \
    fprintf(stderr, " -- " __VA_ARGS__); fprintf(stderr, "\n"); } } while (0)
#define REQUIRE(cond, ...) do { if (!(cond)) { CHECK(cond, __VA_ARGS__); return; } } while (0)

/* Runs every registered test; `suite` names the result line. */
int tl_main(const char *suite, int argc, char **argv);
#define TL_MAIN(suite) int main(int argc, char **argv) { return tl_main(suite, argc, argv); }
#endif
