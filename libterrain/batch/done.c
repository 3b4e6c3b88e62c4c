/*
 * done.c - the done list of `terrafort batch` (see batch.h): which
 * jobs an earlier run did, and the files each reported writing.
 *
 * Why: a resumed batch must skip the jobs that are done, and a job is done
 * when the files it wrote are still there - the files it wrote, as it
 * reported them (TR_OUTPUTS_ENV), not the ones its options seem to name:
 * no list of output options per command to keep up to date.
 *
 * How: one line per job, appended by rank 0 as the job ends well: the job's
 * words, the folder the batch ran in, and each file, tab-separated.
 * Backslash, tab, newline and carriage return are escaped (\\ \t \n \r),
 * and in the words a space as well (\s), so that the words are one field,
 * compared as text with those of the job now. A job resumed from another
 * folder counts as done only when none of its words is a relative name of
 * a file there or in the folder it ran in (the same words would name other
 * files). Read back whole; a later line for the same
 * words replaces an earlier one (a --force run); a line without its
 * newline (a batch killed while writing it) is ignored.
 */
#include "batch.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct tb_done {
  char **key;   /* escaped words */
  char **cwd;   /* the folder it ran in */
  char **files; /* the rest of the line, escaped, tab-separated */
  size_t n, cap;
};

enum { AS_IS, ESCAPED, ESCAPED_SPACES };

/* Each escaped character and the letter after its backslash; the last
 * (space) only in the words. */
static const char esc_from[] = "\\\t\n\r ", esc_to[] = "\\tnrs";

/* Appends s to *buf (growing) as `how` says; 0, -1 out of memory. */
static int put(char **buf, size_t *len, size_t *cap, const char *s, int how) {
  for (;; s++) {
    if (*len + 3 > *cap) {
      size_t c = *cap ? 2 * *cap : 256;
      char *b = realloc(*buf, c);
      if (!b) return -1;
      *buf = b;
      *cap = c;
    }
    if (!*s) break;
    const char *e = how == AS_IS ? NULL : strchr(esc_from, *s);
    if (e && (*s != ' ' || how == ESCAPED_SPACES)) {
      (*buf)[(*len)++] = '\\';
      (*buf)[(*len)++] = esc_to[e - esc_from];
    } else {
      (*buf)[(*len)++] = *s;
    }
  }
  (*buf)[*len] = 0;
  return 0;
}

/* The job's words as one escaped field (malloc'd), NULL out of memory. */
static char *key_of(const tb_job *j) {
  char *b = NULL;
  size_t len = 0, cap = 0;
  for (int w = 0; w < j->argc; w++)
    if ((w && put(&b, &len, &cap, " ", AS_IS)) || put(&b, &len, &cap, j->argv[w], ESCAPED_SPACES)) {
      free(b);
      return NULL;
    }
  return b;
}

/* Does a word of j (or an --option=VALUE's value) name, relatively, a file
 * here or in folder `then`? */
static int relative_names(const tb_job *j, const char *then) {
  for (int w = 1; w < j->argc; w++) {
    const char *a = j->argv[w], *eq = a[0] == '-' ? strchr(a, '=') : NULL;
    const char *name = eq ? eq + 1 : a[0] == '-' ? NULL : a;
    if (!name || !*name || name[0] == '/') continue;
    char there[2 * PATH_MAX + 2];
    snprintf(there, sizeof there, "%s/%s", then, name);
    if (access(name, F_OK) == 0 || access(there, F_OK) == 0) return 1;
  }
  return 0;
}

/* One escaped field back, in place. */
static void unesc(char *s) {
  char *o = s;
  for (; *s; s++) {
    const char *e = *s == '\\' && s[1] ? strchr(esc_to, s[1]) : NULL;
    if (e) {
      *o++ = esc_from[e - esc_to];
      s++;
    } else {
      *o++ = *s;
    }
  }
  *o = 0;
}

tb_done *tb_done_load(const char *path) {
  tb_done *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  FILE *f = fopen(path, "r");
  if (!f) return d;
  char *line = NULL;
  size_t n = 0;
  ssize_t got;
  while ((got = getline(&line, &n, f)) > 0) {
    if (line[got - 1] != '\n') break; /* cut short */
    line[got - 1] = 0;
    char *tab = strchr(line, '\t'), *tab2 = tab ? strchr(tab + 1, '\t') : NULL;
    if (!tab2 || tab == line) continue;
    *tab = *tab2 = 0;
    if (d->n == d->cap) {
      size_t c = d->cap ? 2 * d->cap : 64;
      char **k = realloc(d->key, c * sizeof *k);
      if (k) d->key = k;
      char **h = realloc(d->cwd, c * sizeof *h);
      if (h) d->cwd = h;
      char **v = realloc(d->files, c * sizeof *v);
      if (v) d->files = v;
      if (!k || !h || !v) break;
      d->cap = c;
    }
    d->key[d->n] = strdup(line);
    d->cwd[d->n] = strdup(tab + 1);
    d->files[d->n] = strdup(tab2 + 1);
    if (!d->key[d->n] || !d->cwd[d->n] || !d->files[d->n]) {
      free(d->key[d->n]);
      free(d->cwd[d->n]);
      free(d->files[d->n]);
      break;
    }
    unesc(d->cwd[d->n]);
    d->n++;
  }
  free(line);
  fclose(f);
  return d;
}

void tb_done_free(tb_done *d) {
  if (!d) return;
  for (size_t i = 0; i < d->n; i++) {
    free(d->key[i]);
    free(d->cwd[i]);
    free(d->files[i]);
  }
  free(d->key);
  free(d->cwd);
  free(d->files);
  free(d);
}

int tb_done_complete(const tb_done *d, tb_job *j) {
  char *k = d ? key_of(j) : NULL;
  if (!k) return 0;
  const char *files = NULL;
  size_t at = 0;
  for (size_t i = d->n; i-- > 0 && !files;)
    if (!strcmp(d->key[i], k)) files = d->files[i], at = i;
  free(k);
  char here[PATH_MAX];
  if (!files || !getcwd(here, sizeof here)) return 0;
  if (strcmp(here, d->cwd[at]) && relative_names(j, d->cwd[at])) return 0;
  /* tab-separated escaped paths -> '\n'-separated plain ones (a reported
   * path never holds a newline: io/written.c) */
  char *list = malloc(strlen(files) + 1), *o = list;
  if (!list) return 0;
  const char *p = files;
  for (;;) {
    const char *e = strchr(p, '\t');
    const size_t n = e ? (size_t)(e - p) : strlen(p);
    memcpy(o, p, n);
    o[n] = 0;
    unesc(o);
    o += strlen(o);
    if (!e) break;
    *o++ = '\n';
    p = e + 1;
  }
  *o = 0;
  int ok = tb_job_set_wrote(j, list) == 0 && j->nwrote > 0;
  for (int m = 0; ok && m < j->nwrote; m++) {
    struct stat st;
    ok = stat(j->wrote[m], &st) == 0 && S_ISREG(st.st_mode);
  }
  free(list);
  return ok;
}

int tb_done_append(const char *path, const tb_job *j) {
  if (j->nwrote == 0) return 0;
  char *line = key_of(j), here[PATH_MAX];
  if (!line) return -1;
  size_t len = strlen(line), cap = len + 1;
  if (!getcwd(here, sizeof here) || put(&line, &len, &cap, "\t", AS_IS) || put(&line, &len, &cap, here, ESCAPED)) {
    free(line);
    return -1;
  }
  for (int m = 0; m < j->nwrote; m++)
    if (put(&line, &len, &cap, "\t", AS_IS) || put(&line, &len, &cap, j->wrote[m], ESCAPED)) {
      free(line);
      return -1;
    }
  FILE *f = fopen(path, "a");
  int rc = f && fprintf(f, "%s\n", line) > 0 ? 0 : -1;
  if (f && fclose(f) != 0) rc = -1;
  free(line);
  return rc;
}
