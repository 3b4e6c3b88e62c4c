/*
 * tr_test.h - the tiny assertion kit every C test in terrafort uses.
 *
 * A test file defines functions `static int test_xxx(void)` that return 0 on
 * success and lists them in a TR_TESTS table; TR_MAIN runs each one (or the
 * one named on the command line, or those TR_TEST_CASES lists) and prints a
 * closing "N passed, N failed" line; each test's line carries its wall
 * time (the suite's budget is spent where those are large). ASSERT* macros
 * print file:line and the values, then fail the test.
 *
 * TR_TEST_SANITIZED is 1 in the ASan+UBSan tree (CMakeLists.txt): a test
 * whose matrix is large (types x modes x threads x tiles) runs a stated
 * subset there, chosen so that every code path of the full matrix is still
 * reached under the sanitizers; the Release tree runs the whole matrix.
 */
#ifndef TR_TEST_H
#define TR_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef TR_TEST_SANITIZED
#define TR_TEST_SANITIZED 0
#endif

#define ASSERT(cond)                                                              \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                                                   \
    }                                                                             \
  } while (0)

#define ASSERT_EQ_INT(a, b)                                                      \
  do {                                                                           \
    long long a_ = (long long)(a), b_ = (long long)(b);                          \
    if (a_ != b_) {                                                              \
      fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__,        \
              __LINE__, #a, #b, a_, b_);                                         \
      return 1;                                                                  \
    }                                                                            \
  } while (0)

#define ASSERT_NEAR(a, b, tol)                                                   \
  do {                                                                           \
    double a_ = (double)(a), b_ = (double)(b);                                   \
    if (!(fabs(a_ - b_) <= (tol))) {                                             \
      fprintf(stderr, "%s:%d: |%s - %s| <= %g failed: %.17g vs %.17g\n",        \
              __FILE__, __LINE__, #a, #b, (double)(tol), a_, b_);                \
      return 1;                                                                  \
    }                                                                            \
  } while (0)

typedef struct {
  const char *name;
  int (*fn)(void);
} tr_test_case;

#define TR_TEST(fn) {#fn, fn}

/* Runs the table; argv[1], when given, selects one test by name. A test
 * that returns TR_TEST_SKIP could not run here (it prints why): it counts
 * as neither, and a run that only skipped exits TR_TEST_SKIP (ctest's
 * SKIP_RETURN_CODE). */
#define TR_TEST_SKIP 77

/* Whether name is a word of the space-separated list. */
static inline int tr_test_listed(const char *list, const char *name) {
  const size_t n = strlen(name);
  for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ')) return 1;
  return 0;
}

/* Runs the case named by argv[1], or else the cases the environment's
 * TR_TEST_CASES lists (the sanitizer tree's choice for some CLI tests:
 * tools/tests/sanitized_cases.cmake), or else every case. A listed name that
 * is no case here fails the run rather than shrinking it unseen. */
static inline int tr_test_main(int argc, char **argv, const tr_test_case *cases, int n) {
  int passed = 0, failed = 0, skipped = 0;
  const char *only = argc > 1 ? NULL : getenv("TR_TEST_CASES");
  if (only) {
    char w[128];
    for (const char *p = only; sscanf(p, " %127s", w) == 1; p = strstr(p, w) + strlen(w)) {
      int found = 0;
      for (int i = 0; i < n && !found; i++) found = !strcmp(cases[i].name, w);
      if (!found) {
        printf("FAIL TR_TEST_CASES names '%s', which is not a case of this test\n", w);
        return 1;
      }
    }
    printf("the cases TR_TEST_CASES lists: %s\n", only);
  }
  for (int i = 0; i < n; i++) {
    if (argc > 1 && strcmp(argv[1], cases[i].name) != 0) continue;
    if (only && !tr_test_listed(only, cases[i].name)) continue;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = cases[i].fn();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%s %s (%.1f s)\n", rc == 0 ? "ok  " : rc == TR_TEST_SKIP ? "skip" : "FAIL", cases[i].name,
           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    fflush(stdout);
    if (rc == 0) passed++;
    else if (rc == TR_TEST_SKIP) skipped++;
    else failed++;
  }
  printf("%d passed, %d failed%s\n", passed, failed, skipped ? ", some skipped" : "");
  if (!passed && !failed && skipped) return TR_TEST_SKIP;
  return failed == 0 && passed > 0 ? 0 : 1;
}

#define TR_MAIN(...)                                                          \
  int main(int argc, char **argv) {                                           \
    static const tr_test_case cases_[] = {__VA_ARGS__};                       \
    return tr_test_main(argc, argv, cases_, (int)(sizeof cases_ / sizeof cases_[0])); \
  }

#endif
