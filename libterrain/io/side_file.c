/*
 * side_file.c - side files written whole, then put in place with the run's
 * output (see side_file.h).
 */
#include "side_file.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raster.h"
#include "tmp_files.h"
#include "written.h"

struct tr_side_file {
  char *path, *tmp;
  const char *what;
  FILE *f;
  tr_side_file *next;
};

/* closed and checked, waiting for the run's end: oldest first */
static tr_side_file *waiting, **waiting_end = &waiting;

int tr_side_is_stdout(const char *path) { return path && !strcmp(path, "-"); }

int tr_side_role(const char *what) {
  return what && (!strcmp(what, TR_ROLE_STATS_JSON) || !strcmp(what, TR_ROLE_FT_REPORT) || !strcmp(what, TR_ROLE_AAP_STATS));
}

static void side_free(tr_side_file *s) {
  if (s->f && s->f != stdout) fclose(s->f);
  if (s->tmp) {
    unlink(s->tmp);
    tr_tmp_untrack(s->tmp);
  }
  free(s->path);
  free(s->tmp);
  free(s);
}

int tr_side_open(const char *path, const char *what, tr_side_file **s, FILE **f, tr_error *err) {
  *s = NULL;
  *f = NULL;
  if (tr_side_is_stdout(path)) {
    tr_side_file *n = calloc(1, sizeof *n);
    if (!n || !(n->path = strdup(path))) {
      free(n);
      return tr_fail(err, TR_ENOMEM, "out of memory");
    }
    n->what = what;
    n->f = stdout;
    *s = n;
    *f = stdout;
    return TR_OK;
  }
  tr_side_file *n = calloc(1, sizeof *n);
  if (!n || !(n->path = strdup(path)) || !(n->tmp = tr_output_side_tmp_name(path))) {
    if (n) side_free(n);
    return tr_fail(err, TR_ENOMEM, "out of memory");
  }
  n->what = what;
  n->f = fopen(n->tmp, "w");
  if (!n->f) {
    const int e = errno;
    side_free(n);
    return tr_fail(err, e == ENOSPC ? TR_ENOSPC : TR_EOUTPUT, "cannot write %s '%s': %s", what, path, strerror(e));
  }
  tr_tmp_created(n->tmp);
  *s = n;
  *f = n->f;
  return TR_OK;
}

int tr_side_close(tr_side_file *s, tr_error *err) {
  if (s->f == stdout) { /* written where it goes: nothing to put in place */
    const int bad = ferror(stdout) || fflush(stdout) != 0;
    const int e = errno;
    const char *what = s->what;
    s->f = NULL;
    side_free(s);
    return bad ? tr_fail(err, TR_EOUTPUT, "cannot write the %s to standard output: %s", what, strerror(e ? e : EIO))
               : TR_OK;
  }
  int e = 0;
  if (ferror(s->f)) e = errno ? errno : EIO;
  if (!e && fflush(s->f) != 0) e = errno;
  if (!e && fsync(fileno(s->f)) != 0 && errno != EINVAL) e = errno;
  const int c = fclose(s->f);
  s->f = NULL;
  if (!e && c != 0) e = errno;
  if (e) {
    const int st = tr_fail(err, e == ENOSPC ? TR_ENOSPC : TR_EOUTPUT, "cannot write %s '%s': %s", s->what, s->path,
                           strerror(e));
    side_free(s);
    return st;
  }
  *waiting_end = s;
  waiting_end = &s->next;
  return TR_OK;
}

void tr_side_abort(tr_side_file *s) {
  if (s) side_free(s);
}

/* Renames `ready` into place as side file `path` (a link's target; refused
 * when path is now something other than a regular file). */
static int side_place(const char *ready, const char *path, const char *what, tr_error *err) {
  char target[PATH_MAX];
  const char *to = tr_output_link_target(path, target, sizeof target);
  struct stat st;
  const char *why = stat(to, &st) == 0 ? tr_file_not_regular(st.st_mode) : NULL;
  if (why) return tr_fail(err, TR_EOUTPUT, "cannot write %s '%s': %s", what, path, why);
  if (rename(ready, to) != 0) {
    const int e = errno;
    return tr_fail(err, e == ENOSPC ? TR_ENOSPC : TR_EOUTPUT, "cannot put %s '%s' in place: %s", what, path,
                   strerror(e));
  }
  tr_output_written(to);
  return TR_OK;
}

int tr_side_commit_waiting(tr_error *err) {
  int st = TR_OK;
  while (waiting) {
    tr_side_file *s = waiting;
    waiting = s->next;
    if (!st) {
      st = side_place(s->tmp, s->path, s->what, err);
      if (!st) {
        tr_tmp_untrack(s->tmp);
        free(s->tmp);
        s->tmp = NULL;
      }
    }
    side_free(s);
  }
  waiting_end = &waiting;
  return st;
}

void tr_side_abort_waiting(void) {
  while (waiting) {
    tr_side_file *s = waiting;
    waiting = s->next;
    side_free(s);
  }
  waiting_end = &waiting;
}

/* What write(f, user) writes (nonzero when a write failed), as
 * tr_side_write_json says. */
static int side_write(const char *path, int append, const char *what, int (*write)(FILE *f, void *user), void *user,
                      tr_error *err) {
  tr_side_file *side = NULL;
  FILE *f = NULL;
  if (!append) {
    const int st = tr_side_open(path, what, &side, &f, err);
    if (st) return st;
  } else if (!(f = fopen(path, "a"))) {
    return tr_fail(err, TR_EOUTPUT, "cannot write %s '%s': %s", what, path, strerror(errno));
  }
  errno = 0;
  int bad = write(f, user) != 0;
  if (side) {
    if (!bad) return tr_side_close(side, err);
    tr_side_abort(side);
  } else {
    bad |= ferror(f) != 0;
    bad |= fclose(f) != 0;
    if (!bad) return TR_OK;
  }
  return tr_fail(err, errno == ENOSPC ? TR_ENOSPC : TR_EOUTPUT, "cannot write %s '%s': %s", what, path,
                 strerror(errno ? errno : EIO));
}

typedef struct {
  char **text;
  int n;
} lines;

static int write_lines(FILE *f, void *user) {
  const lines *l = user;
  for (int i = 0; i < l->n; i++)
    if (fputs(l->text[i], f) == EOF || fputc('\n', f) == EOF) return 1;
  return 0;
}

int tr_side_write_json(const char *path, int append, const char *what, tr_json *const *v, int n, tr_error *err) {
  char *text[8] = {0};
  if (n < 0 || n > 8) return tr_fail(err, TR_EINTERNAL, "%s: %d JSON lines", what, n);
  int st = TR_OK;
  for (int i = 0; i < n && !st; i++)
    if (!(text[i] = tr_json_text(v[i]))) st = tr_fail(err, TR_ENOMEM, "%s: out of memory", what);
  lines l = {text, n};
  if (!st) st = side_write(path, append, what, write_lines, &l, err);
  for (int i = 0; i < n; i++) free(text[i]);
  return st;
}
