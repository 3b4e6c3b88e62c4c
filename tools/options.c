/*
 * options.c - the one parser of every command's options, their --help and
 * their table as text, all from the command's rows (options.h).
 */
#include "options.h"
#include "cli.h"

#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Calls fn(word, len, user) for each blank-separated word of list until it returns non-zero. */
static int each_word(const char *list, int (*fn)(const char *w, size_t n, void *user), void *user) {
  for (const char *p = list; p && *p;) {
    while (*p == ' ') p++;
    const char *e = p;
    while (*e && *e != ' ') e++;
    if (e > p) {
      const int r = fn(p, (size_t)(e - p), user);
      if (r) return r;
    }
    p = e;
  }
  return 0;
}

static int word_is(const char *w, size_t n, void *name) { return strlen(name) == n && !strncmp(w, name, n); }

int tf_opt_spells(const tf_opt *row, const char *name) {
  return row->kind != TF_HEADING && each_word(row->names, word_is, (void *)name);
}

static int is_end(const tf_opt *r) { return r->kind == TF_HEADING && !r->names && !r->doc; }

const tf_opt *tf_opt_find(const tf_opt_set *set, const char *name, size_t *base) {
  for (int g = 0; g < TF_OPT_GROUPS && set->groups[g].rows; g++)
    for (const tf_opt *r = set->groups[g].rows; !is_end(r); r++)
      if (tf_opt_spells(r, name)) {
        if (base) *base = set->groups[g].base;
        return r;
      }
  return NULL;
}

static const char *first_name(const tf_opt *row, char *buf, size_t len) {
  const char *p = row->names;
  while (*p == ' ') p++;
  const size_t n = strcspn(p, " ");
  snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), p);
  return buf;
}

/* The position of v among row's choices, or -1. */
static int choice_of(const tf_opt *row, const char *v) {
  int k = 0;
  for (const char *p = row->choices; p && *p; k++) {
    const size_t n = strcspn(p, "|");
    if (strlen(v) == n && (row->nocase ? !strncasecmp(p, v, n) : !strncmp(p, v, n))) return k;
    p += n;
    if (*p == '|') p++;
  }
  return -1;
}

static void choices_listed(const tf_opt *row, char *buf, size_t len) {
  size_t o = 0;
  buf[0] = '\0';
  for (const char *p = row->choices; p && *p && o + 2 < len;) {
    const size_t n = strcspn(p, "|");
    o += (size_t)snprintf(buf + o, len - o, "%s%.*s", o ? ", " : "", (int)n, p);
    p += n;
    if (*p == '|') p++;
  }
}

/* The range of a number row as text: "[1, 4096]", "(0, 100]", "above 0". */
static void range_text(const tf_opt *row, char *buf, size_t len) {
  if (isinf(row->hi))
    snprintf(buf, len, "%s %g", row->lo_open ? "above" : "at least", row->lo);
  else
    snprintf(buf, len, "%c%.17g, %.17g%c", row->lo_open ? '(' : '[', row->lo, row->hi, row->hi_open ? ')' : ']');
}

static int has_range(const tf_opt *row) { return row->lo != 0 || row->hi != 0; }

int tf_opt_take(tf_cli *cli, const tf_opt *row, void *opts, size_t base, int argc, char **argv, int *i) {
  /* messages name the option as it was typed ("-thresh", "--az"), without a "=value" */
  char name[64];
  if (*i < argc && argv[*i][0] == '-')
    snprintf(name, sizeof name, "%.*s", (int)strcspn(argv[*i], "="), argv[*i]);
  else
    first_name(row, name, sizeof name);
  char *field = (char *)opts + base + row->off;
  const char *v = NULL;
  if (row->kind == TF_CUSTOM || row->kind == TF_ACTION) return row->fn(cli, row, (char *)opts + base, argc, argv, i);
  if (row->kind == TF_FLAG) {
    *(int *)field = row->set ? row->set : 1;
  } else {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    char range[96];
    switch (row->kind) {
      case TF_INT:
      case TF_LONG: {
        long n;
        if (tf_parse_int(cli, name, v, has_range(row) ? (long)row->lo : LONG_MIN,
                         has_range(row) ? (long)row->hi : LONG_MAX, &n))
          return TF_ARG_ERROR;
        if (row->kind == TF_INT)
          *(int *)field = (int)n;
        else
          *(long *)field = n;
        break;
      }
      case TF_DOUBLE: {
        double d;
        if (tf_parse_double(cli, name, v, &d)) return TF_ARG_ERROR;
        if (has_range(row) &&
            (d < row->lo || d > row->hi || (row->lo_open && d == row->lo) || (row->hi_open && d == row->hi))) {
          range_text(row, range, sizeof range);
          if (row->lo == 0 && row->lo_open && isinf(row->hi))
            tf_usage_error(cli, "%s must be positive, got %s", name, v);
          else
            tf_usage_error(cli, "%s: %s is out of range %s", name, v, range);
          return TF_ARG_ERROR;
        }
        *(double *)field = d;
        break;
      }
      case TF_STR:
        *(const char **)field = v;
        break;
      case TF_CHOICE: {
        const int k = choice_of(row, v);
        if (k < 0) {
          char list[256];
          choices_listed(row, list, sizeof list);
          tf_usage_error(cli, "%s: '%s' is not one of %s", name, v, list);
          return TF_ARG_ERROR;
        }
        *(int *)field = k;
        break;
      }
      case TF_SIZE:
        if (tf_parse_size(cli, name, v, (int64_t *)field)) return TF_ARG_ERROR;
        break;
      default:
        return TF_ARG_ERROR;
    }
  }
  return row->fn ? row->fn(cli, row, (char *)opts + base, argc, argv, i) : TF_ARG_TAKEN;
}

/* ---- --help ------------------------------------------------------------------------------- */

struct left_buf {
  char *s;
  size_t len, o;
  const char *arg;
};

static int add_spelling(const char *w, size_t n, void *user) {
  struct left_buf *b = user;
  if (b->o < b->len)
    b->o += (size_t)snprintf(b->s + b->o, b->len - b->o, "%s%.*s%s%s", b->o ? ", " : "", (int)n, w, b->arg ? " " : "",
                             b->arg ? b->arg : "");
  return 0;
}

static void left_of(const tf_opt *row, char *buf, size_t len) {
  if (row->left) {
    snprintf(buf, len, "%s", row->left);
    return;
  }
  const char *arg = row->arg;
  if (!arg && row->kind == TF_CHOICE) arg = row->choices;
  const int takes = row->kind != TF_FLAG && row->kind != TF_ACTION;
  if (!arg && takes) arg = "VALUE";
  struct left_buf b = {buf, len, 0, takes ? arg : NULL};
  buf[0] = '\0';
  each_word(row->names, add_spelling, &b);
}

static void help_rows(const tf_opt *rows, int column) {
  for (const tf_opt *r = rows; !is_end(r); r++) {
    if (!r->doc) continue;
    if (r->kind == TF_HEADING) {
      printf("%s\n", r->doc);
      continue;
    }
    char left[256];
    left_of(r, left, sizeof left);
    const int w = printf("  %s", left);
    const char *d = r->doc;
    size_t n = strcspn(d, "\n");
    if (w + 1 > column)
      printf("\n%*s%.*s\n", column, "", (int)n, d); /* a long left column: the text below it */
    else
      printf("%*s%.*s\n", column - w, "", (int)n, d);
    for (d += n; *d == '\n';) {
      d++;
      n = strcspn(d, "\n");
      printf("%*s%.*s\n", column, "", (int)n, d);
      d += n;
    }
  }
}

void tf_opt_print_help(const tf_opt_set *set) {
  const int column = set->column ? set->column : 25;
  int common = 0;
  printf("%s", set->head);
  for (int g = 0; g < TF_OPT_GROUPS && set->groups[g].rows; g++) {
    if (set->groups[g].rows == tf_common_opts)
      common = 1;
    else
      help_rows(set->groups[g].rows, column);
  }
  if (set->tail) printf("%s", set->tail);
  if (!common) return;
  printf("\nCommon options:\n");
  help_rows(tf_common_opts, 26);
}

/* ---- the table as text -------------------------------------------------------------------- */

static const char *const kind_names[] = {"heading", "flag",   "int",  "int",    "number",
                                         "text",    "choice", "size", "custom", "flag"};
static const char *const role_names[] = {"value", "in", "out", "out-if-dem"};

void tf_opt_print_table(const tf_opt_set *set, const void *defaults) {
  for (int g = 0; g < TF_OPT_GROUPS && set->groups[g].rows; g++)
    for (const tf_opt *r = set->groups[g].rows; !is_end(r); r++) {
      if (r->kind == TF_HEADING) continue;
      const char *f = (const char *)defaults + set->groups[g].base + r->off;
      char def[128] = "-", range[96] = "-";
      switch (r->kind) {
        case TF_FLAG:
        case TF_INT:
          snprintf(def, sizeof def, "%d", *(const int *)f);
          break;
        case TF_LONG:
          snprintf(def, sizeof def, "%ld", *(const long *)f);
          break;
        case TF_DOUBLE:
          snprintf(def, sizeof def, "%.17g", *(const double *)f);
          break;
        case TF_SIZE:
          snprintf(def, sizeof def, "%" PRId64, *(const int64_t *)f);
          break;
        case TF_STR:
          if (*(const char *const *)f) snprintf(def, sizeof def, "%s", *(const char *const *)f);
          break;
        case TF_CHOICE: {
          const int k = *(const int *)f;
          const char *p = r->choices;
          for (int c = 0; p && *p && c < k; c++) p += strcspn(p, "|") + (p[strcspn(p, "|")] == '|');
          if (p && *p) snprintf(def, sizeof def, "%.*s", (int)strcspn(p, "|"), p);
          break;
        }
        default:
          break;
      }
      if (has_range(r)) range_text(r, range, sizeof range);
      const int nv = r->nvalues ? r->nvalues : r->kind == TF_FLAG || r->kind == TF_ACTION ? 0 : 1;
      const tf_opt *g0 = set->groups[g].rows;
      const char *group = g0 == tf_common_opts       ? "common"
                          : g0 == tf_graph_opts_rows ? "engine"
                          : g0 == tf_burn_opts_rows  ? "burn"
                                                     : "own";
      printf("%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r->names, kind_names[r->kind], role_names[r->role], nv,
             r->choices ? r->choices : "-", range, def, group);
    }
}

/* ---- did you mean ------------------------------------------------------------------------- */

struct suggest {
  const char *opt;
  size_t n;
  int best;
  char *buf;
  size_t len;
  char prefix[64];
  int ambiguous;
};

static int consider(const char *w, size_t k, void *user) {
  struct suggest *s = user;
  char word[64];
  snprintf(word, sizeof word, "%.*s", (int)(k < sizeof word ? k : sizeof word - 1), w);
  const int e = tf_edits(s->opt, word);
  if (e < s->best && (size_t)e + 1 < s->n) {
    s->best = e;
    snprintf(s->buf, s->len, "%s", word);
  }
  if (s->n >= 4 && !strncmp(word, s->opt, s->n)) {
    if (!s->prefix[0])
      snprintf(s->prefix, sizeof s->prefix, "%s", word);
    else if (strcmp(word, s->prefix))
      s->ambiguous = 1;
  }
  return 0;
}

const char *tf_opt_suggest(const tf_opt_set *set, const char *opt, char *buf, size_t len) {
  struct suggest s = {.opt = opt, .n = strlen(opt), .best = 3, .buf = buf, .len = len};
  buf[0] = '\0';
  for (int g = 0; g < TF_OPT_GROUPS && set->groups[g].rows; g++)
    for (const tf_opt *r = set->groups[g].rows; !is_end(r); r++)
      if (r->kind != TF_HEADING) each_word(r->names, consider, &s);
  if (buf[0]) return buf;
  if (s.prefix[0] && !s.ambiguous) {
    snprintf(buf, len, "%s", s.prefix);
    return buf;
  }
  return NULL;
}
