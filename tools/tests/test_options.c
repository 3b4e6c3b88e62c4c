/*
 * test_options.c - every command's option table (options.h) against the two
 * readers that are not generated from its text: the parser, row by row (a
 * number at each end of its range taken, one past it refused, each choice
 * stored as its position, a flag's value set). What `terrafort batch`
 * (tr_batch) reads from a job's words is checked against the same table, as
 * the program prints it, by libterrain's terrain_batch_jobs; --help and the
 * man pages by help_man.sh, the Python signatures by the package's
 * test_options.py.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "tools.h"
#include "tr_test.h"

static int is_end(const tf_opt *r) { return r->kind == TF_HEADING && !r->names && !r->doc; }

/* Each spelling of a command is one row's: the parser finds that row. */
static int test_spellings_are_one_rows(void) {
  size_t n;
  const tf_command *cmds = tf_commands(&n);
  int spellings = 0;
  for (size_t c = 0; c < n; c++) {
    const tf_opt_set *set = cmds[c].opts;
    ASSERT(set != NULL);
    for (int g = 0; g < TF_OPT_GROUPS && set->groups[g].rows; g++)
      for (const tf_opt *r = set->groups[g].rows; !is_end(r); r++) {
        if (r->kind == TF_HEADING) continue;
        char names[256];
        snprintf(names, sizeof names, "%s", r->names);
        for (char *save, *w = strtok_r(names, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
          size_t base = 99;
          const tf_opt *found = tf_opt_find(set, w, &base);
          if (found != r || base != set->groups[g].base) {
            fprintf(stderr, "%s: %s is spelled by another row first\n", cmds[c].name, w);
            return 1;
          }
          ASSERT(w[0] == '-');
          spellings++;
        }
      }
  }
  ASSERT(spellings > 300);
  return 0;
}

static union {
  char c[1 << 16];
  max_align_t align;
} buf;

/* Takes "NAME VALUE..." for row of set into a zeroed buf: the TF_ARG_* code. */
static int take(const tf_opt_set *set, const tf_opt *row, size_t base, const char *name, const char *const *values,
                int nvalues) {
  char *argv[8] = {(char *)name};
  for (int k = 0; k < nvalues; k++) argv[1 + k] = (char *)values[k];
  memset(buf.c, 0, sizeof buf.c);
  tf_cli cli = {.cmd = set->cmd, .set = set, .opts = buf.c};
  int i = 0;
  const int rc = tf_opt_take(&cli, row, buf.c, base, 1 + nvalues, argv, &i);
  if (rc == TF_ARG_TAKEN && i != nvalues) return TF_ARG_ERROR; /* did not take exactly its words */
  return rc;
}

static int take1(const tf_opt_set *set, const tf_opt *row, size_t base, const char *name, const char *value) {
  return take(set, row, base, name, &value, 1);
}

static void *field(const tf_opt *row, size_t base) { return buf.c + base + row->off; }

/* A number row: its ends taken (or refused when open), one past refused. */
static int check_number(const tf_opt_set *set, const tf_opt *row, size_t base, const char *name) {
  char v[64];
  const int whole = row->kind != TF_DOUBLE;
  const int ranged = row->lo != 0 || row->hi != 0;
  if (!ranged) {
    ASSERT_EQ_INT(take1(set, row, base, name, "12"), TF_ARG_TAKEN);
    ASSERT(whole ? (row->kind == TF_INT ? *(int *)field(row, base) == 12 : *(long *)field(row, base) == 12)
                 : *(double *)field(row, base) == 12.0);
  } else {
    const double ends[2] = {row->lo, row->hi};
    const int open[2] = {row->lo_open, row->hi_open};
    for (int e = 0; e < 2; e++) {
      if (isinf(ends[e])) continue;
      snprintf(v, sizeof v, whole ? "%.0f" : "%.17g", ends[e]);
      const int rc = take1(set, row, base, name, v);
      if (open[e]) {
        ASSERT_EQ_INT(rc, TF_ARG_ERROR);
      } else {
        ASSERT_EQ_INT(rc, TF_ARG_TAKEN);
        if (row->kind == TF_DOUBLE) ASSERT(*(double *)field(row, base) == ends[e]);
        if (row->kind == TF_LONG) ASSERT(*(long *)field(row, base) == (long)ends[e]);
        if (row->kind == TF_INT && !row->fn) ASSERT(*(int *)field(row, base) == (int)ends[e]);
      }
      /* one past the end (a whole number's next, or a tenth of the range) */
      const double past = ends[e] + (e ? 1 : -1) * (isinf(ends[1 - e]) ? 1 : 0.1 * (row->hi - row->lo));
      if (whole)
        snprintf(v, sizeof v, "%ld", (long)ends[e] + (e ? 1 : -1)); /* exact beyond 2^53 too */
      else
        snprintf(v, sizeof v, "%.17g", past);
      if (take1(set, row, base, name, v) != TF_ARG_ERROR) {
        fprintf(stderr, "%s %s %s: taken, out of its range\n", set->cmd, name, v);
        return 1;
      }
    }
  }
  ASSERT_EQ_INT(take1(set, row, base, name, "12x"), TF_ARG_ERROR);
  ASSERT_EQ_INT(take1(set, row, base, name, "nan"), TF_ARG_ERROR);
  return 0;
}

static int check_choice(const tf_opt_set *set, const tf_opt *row, size_t base, const char *name) {
  int k = 0;
  for (const char *p = row->choices; *p; k++) {
    char v[64];
    const size_t n = strcspn(p, "|");
    snprintf(v, sizeof v, "%.*s", (int)n, p);
    ASSERT_EQ_INT(take1(set, row, base, name, v), TF_ARG_TAKEN);
    if (!row->fn) ASSERT_EQ_INT(*(int *)field(row, base), k);
    if (row->nocase) {
      for (char *c = v; *c; c++) *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
      ASSERT_EQ_INT(take1(set, row, base, name, v), TF_ARG_TAKEN);
      ASSERT_EQ_INT(*(int *)field(row, base), k);
    }
    p += n + (p[n] == '|');
  }
  ASSERT(k >= 2);
  ASSERT_EQ_INT(take1(set, row, base, name, "no-such-choice"), TF_ARG_ERROR);
  return 0;
}

static int test_rows_parse_as_declared(void) {
  size_t n;
  const tf_command *cmds = tf_commands(&n);
  int checked = 0;
  for (size_t c = 0; c < n; c++) {
    const tf_opt_set *set = cmds[c].opts;
    for (int g = 0; g < TF_OPT_GROUPS && set->groups[g].rows; g++)
      for (const tf_opt *r = set->groups[g].rows; !is_end(r); r++) {
        const size_t base = set->groups[g].base;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(r->names ? r->names : "", " "), r->names ? r->names : "");
        int rc = 0;
        switch (r->kind) {
          case TF_FLAG:
            ASSERT_EQ_INT(take(set, r, base, name, NULL, 0), TF_ARG_TAKEN);
            ASSERT_EQ_INT(*(int *)field(r, base), r->set ? r->set : 1);
            break;
          case TF_INT:
          case TF_LONG:
          case TF_DOUBLE:
            rc = check_number(set, r, base, name);
            break;
          case TF_CHOICE:
            rc = check_choice(set, r, base, name);
            break;
          case TF_STR: {
            const char *v = "some/value.tif";
            ASSERT_EQ_INT(take1(set, r, base, name, v), TF_ARG_TAKEN);
            ASSERT(*(const char **)field(r, base) == v);
            break;
          }
          case TF_SIZE:
            ASSERT_EQ_INT(take1(set, r, base, name, "4G"), TF_ARG_TAKEN);
            ASSERT(*(int64_t *)field(r, base) == (int64_t)4 << 30);
            ASSERT_EQ_INT(take1(set, r, base, name, "-1M"), TF_ARG_ERROR);
            break;
          default:
            continue; /* headings; custom rows are their commands' tests' */
        }
        if (rc) {
          fprintf(stderr, "%s: row %s\n", set->cmd, r->names);
          return 1;
        }
        checked++;
      }
  }
  printf("%d rows checked\n", checked);
  ASSERT(checked > 200);
  return 0;
}

TR_MAIN(TR_TEST(test_spellings_are_one_rows), TR_TEST(test_rows_parse_as_declared))
