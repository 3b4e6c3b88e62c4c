/*
 * argv_form.c - tr_argv_form (terrain.h): does a command line take one of
 * the forms of TauDEM's programs, by the words it gives. flowgraph decides
 * its form with it and tr_batch reads a job's files with it, from the same
 * rows (the program's option table).
 */
#include <string.h>

#include "terrain.h"

/* Does a word of argv[1..argc-1] (a long option's "=value" cut off) spell
 * one of the '|'-separated alternatives of w (n bytes)? */
static int given(const char *w, size_t n, int argc, char *const *argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const size_t len = a[0] == '-' && a[1] == '-' ? strcspn(a, "=") : strlen(a);
    for (const char *p = w; p < w + n;) {
      const size_t k = strcspn(p, "|");
      const size_t m = k < (size_t)(w + n - p) ? k : (size_t)(w + n - p);
      if (m == len && !strncmp(p, a, m)) return 1;
      p += m + 1;
    }
  }
  return 0;
}

/* How many words of list argv gives (each once); *words gets how many list has. */
static int count_given(const char *list, int argc, char *const *argv, int *words) {
  int got = 0;
  *words = 0;
  for (const char *p = list; p && *p;) {
    while (*p == ' ') p++;
    const size_t k = strcspn(p, " ");
    if (!k) break;
    (*words)++;
    got += given(p, k, argc, argv);
    p += k;
  }
  return got;
}

int tr_argv_form(const char *all, const char *any, const char *none, int argc, char *const *argv) {
  int want, n_any, n_none;
  if (count_given(all, argc, argv, &want) < want) return 0;
  if (count_given(any, argc, argv, &n_any) == 0 && n_any) return 0;
  return count_given(none, argc, argv, &n_none) == 0;
}
