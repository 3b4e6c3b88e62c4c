/*
 * jobs.c - the job list of `terrafort batch`: a jobs file or a
 * directory with a command template, split into words, and the files each
 * job's options name as its outputs.
 *
 * Words are split as a POSIX shell splits a simple command, without any
 * expansion: blanks separate words, '...' is literal, "..." keeps \" \\ \$
 * and \` escapes, a backslash outside quotes takes the next character as is,
 * and a '#' that starts a word starts a comment. So a line can be pasted from
 * a shell script and mean the same.
 *
 * The outputs a job's options name are found from its command's option
 * table as the program prints it (grammar.c): the options that take values are skipped with their
 * values, so that what is left are the file names, and the output options
 * and (for most commands) the last file name are the files written. They serve only the checks made before any job
 * runs: a batch refuses when two jobs would write one file, or a job would
 * read a file another job writes (jobs run in any order, on any rank, at
 * the same time), and --dir does not take them for inputs. What a job did
 * write, for resuming and the summary, it reports itself (batch.h).
 */
#include "batch.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


#define LINE_MAX_BYTES TB_BATCH_ARGV_MAX

static int oom(char *err, size_t len) {
  snprintf(err, len, "out of memory");
  return TR_EXIT_NOMEM;
}

/* ---- words ---------------------------------------------------------------------------------- */

typedef struct {
  char **v;
  int n, cap;
} words;

static int words_add(words *w, const char *s, size_t n) {
  if (w->n + 2 > w->cap) {
    int cap = w->cap ? 2 * w->cap : 16;
    char **v = realloc(w->v, (size_t)cap * sizeof *v);
    if (!v) return -1;
    w->v = v;
    w->cap = cap;
  }
  char *c = malloc(n + 1);
  if (!c) return -1;
  memcpy(c, s, n);
  c[n] = 0;
  w->v[w->n++] = c;
  w->v[w->n] = NULL;
  return 0;
}

static void words_free(words *w) {
  for (int i = 0; i < w->n; i++) free(w->v[i]);
  free(w->v);
  memset(w, 0, sizeof *w);
}

/* Splits s (see the top of the file); 0, -1 out of memory, -2 an
 * unterminated quote. */
static int split(const char *s, words *w) {
  size_t cap = strlen(s) + 1;
  char *cur = malloc(cap);
  if (!cur) return -1;
  int rc = 0;
  const char *p = s;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    if (!*p || *p == '#') break;
    size_t n = 0;
    while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
      if (*p == '\'') {
        const char *e = strchr(p + 1, '\'');
        if (!e) {
          rc = -2;
          goto out;
        }
        memcpy(cur + n, p + 1, (size_t)(e - p - 1));
        n += (size_t)(e - p - 1);
        p = e + 1;
      } else if (*p == '"') {
        p++;
        while (*p && *p != '"') {
          if (*p == '\\' && p[1] && strchr("\"\\$`", p[1])) p++;
          cur[n++] = *p++;
        }
        if (*p != '"') {
          rc = -2;
          goto out;
        }
        p++;
      } else if (*p == '\\' && p[1]) {
        cur[n++] = p[1];
        p += 2;
      } else {
        cur[n++] = *p++;
      }
    }
    if (words_add(w, cur, n)) {
      rc = -1;
      break;
    }
  }
out:
  free(cur);
  return rc;
}

/* ---- outputs -------------------------------------------------------------------------------- */

static int is_number(const char *s) {
  char *end;
  if (!s || !*s) return 0;
  (void)strtod(s, &end);
  return !*end;
}

/* Fills j->out from j->argv with its command's option table (g): the values
 * of its output options, and its last file name when the table says so.
 * The form of the line (tr_argv_form over g's forms) turns some outputs
 * into reads, and some options written only with a DEM into outputs; a
 * form needs no DEM, which is learnt while the words are read: with one,
 * its reads and the options written only with a DEM are outputs. */
static int find_outputs(tb_job *j, const tb_grammar *g) {
  words out = {0};
  const char *pos[64];
  int npos = 0, dem = 0;
  const tb_form *form = NULL;
  for (int f = 0; f < g->nforms && !form; f++)
    if (tr_argv_form(g->forms[f].all, g->forms[f].any, g->forms[f].none, j->argc, j->argv)) form = &g->forms[f];
  const char *cond[8];
  int ncond = 0;
  for (int i = 1; i < j->argc; i++) {
    const char *a = j->argv[i];
    if (a[0] != '-' || !a[1]) {
      if (npos < 64) pos[npos++] = a;
      continue;
    }
    char name[128];
    snprintf(name, sizeof name, "%s", a);
    const char *inline_v = NULL;
    char *eq = strchr(name, '=');
    if (name[1] == '-' && eq) {
      *eq = 0;
      inline_v = a + (eq - name) + 1;
    }
    const tb_opt *row = tb_grammar_opt(g, name);
    const char *own = name;
    if (!row && g->dashdash && name[1] == '-') row = tb_grammar_opt(g, own = name + 1);
    if (!row) continue; /* the job refuses it itself */
    if (row->role == TB_ROLE_OUT || row->role == TB_ROLE_OUT_IF_DEM) {
      const char *v = inline_v ? inline_v : (i + 1 < j->argc ? j->argv[++i] : NULL);
      if (!v) continue;
      const int written_anyway = form && row->role == TB_ROLE_OUT_IF_DEM && tb_listed(form->writes, own);
      if ((row->role == TB_ROLE_OUT_IF_DEM && !written_anyway) || (form && tb_listed(form->reads, own))) {
        if (ncond < 8) cond[ncond++] = v;
      } else if (words_add(&out, v, strlen(v))) {
        words_free(&out);
        return -1;
      }
      if (!strcmp(own, "--stats-json")) j->stats_json = v;
      continue;
    }
    if (!strcmp(own, "-z")) dem = 1;
    int count = row->nvalues;
    if (count == -4) count = i + 1 < j->argc && is_number(j->argv[i + 1]) ? 4 : 1;
    if (!inline_v) i += count;
  }
  if (g->last_positional && npos >= 2 && words_add(&out, pos[npos - 1], strlen(pos[npos - 1]))) {
    words_free(&out);
    return -1;
  }
  for (int k = 0; k < ncond && (dem || npos); k++)
    if (words_add(&out, cond[k], strlen(cond[k]))) {
      words_free(&out);
      return -1;
    }
  j->out = out.v;
  j->nout = out.n;
  return 0;
}

/* ---- the list ------------------------------------------------------------------------------- */

static tb_job *jobs_push(tb_jobs *jobs) {
  if (jobs->n == jobs->cap) {
    int cap = jobs->cap ? 2 * jobs->cap : 64;
    tb_job *v = realloc(jobs->v, (size_t)cap * sizeof *v);
    if (!v) return NULL;
    jobs->v = v;
    jobs->cap = cap;
  }
  tb_job *j = &jobs->v[jobs->n++];
  memset(j, 0, sizeof *j);
  j->rank = -1;
  return j;
}

/* One job from its words (taken over) at line `line`; what = "line" or the
 * file name of a --dir job, for messages. */
static int add_job(tb_jobs *jobs, words *w, const char *text, int line, const char *where, char *err, size_t len) {
  const char *cmd = w->v[0];
  if (!strcmp(cmd, "terrafort") && w->n > 1) { /* "terrafort slope ..." reads as "slope ..." */
    free(w->v[0]);
    memmove(w->v, w->v + 1, (size_t)w->n * sizeof *w->v);
    w->n--;
    cmd = w->v[0];
  }
  char why[600];
  const tb_grammar *g = tb_grammar_of(&jobs->grammars, jobs->program, cmd, why, sizeof why);
  if (!g) {
    snprintf(err, len, "%s %d: %s", where, line, why);
    return strstr(why, "out of memory") ? TR_EXIT_NOMEM : TR_EXIT_USAGE;
  }
  if (!g->job) {
    snprintf(err, len, "%s %d: '%s' cannot be a job of a batch (no recursion)", where, line, cmd);
    return TR_EXIT_USAGE;
  }
  tb_job *j = jobs_push(jobs);
  if (!j || !(j->text = strdup(text))) return oom(err, len);
  j->line = line;
  j->argv = w->v;
  j->argc = w->n;
  memset(w, 0, sizeof *w);
  char packed[TB_BATCH_ARGV_MAX];
  if (tb_job_pack(j, packed, sizeof packed) < 0) {
    snprintf(err, len, "%s %d: longer than %d bytes", where, line, TB_BATCH_ARGV_MAX);
    return TR_EXIT_USAGE;
  }
  if (find_outputs(j, g)) return oom(err, len);
  return 0;
}

int tb_jobs_read(tb_jobs *jobs, const char *path, char *err, size_t len) {
  struct stat st;
  const int sr = stat(path, &st);
  FILE *f = sr == 0 && S_ISREG(st.st_mode) ? fopen(path, "r") : NULL;
  if (!f) {
    snprintf(err, len, "cannot open jobs file '%s': %s", path,
             sr == 0 && !S_ISREG(st.st_mode) ? "not a regular file" : strerror(errno));
    return TR_EXIT_INPUT;
  }
  char *line = malloc(LINE_MAX_BYTES + 2);
  if (!line) {
    fclose(f);
    return oom(err, len);
  }
  int rc = 0, no = 0;
  while (!rc && fgets(line, LINE_MAX_BYTES + 2, f)) {
    no++;
    size_t n = strlen(line);
    if (n > LINE_MAX_BYTES && line[n - 1] != '\n') {
      snprintf(err, len, "%s: line %d: longer than %d bytes", path, no, LINE_MAX_BYTES);
      rc = TR_EXIT_USAGE;
      break;
    }
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
    words w = {0};
    int s = split(line, &w);
    if (s == -2) {
      snprintf(err, len, "%s: line %d: unterminated quote", path, no);
      rc = TR_EXIT_USAGE;
    } else if (s == -1) {
      rc = oom(err, len);
    } else if (w.n) {
      char where[PATH_MAX + 16];
      snprintf(where, sizeof where, "%s: line", path);
      rc = add_job(jobs, &w, line, no, where, err, len);
    }
    words_free(&w);
  }
  if (!rc && ferror(f)) {
    snprintf(err, len, "cannot read jobs file '%s': %s", path, strerror(errno));
    rc = TR_EXIT_INPUT;
  }
  fclose(f);
  free(line);
  if (!rc && jobs->n == 0) {
    snprintf(err, len, "jobs file '%s' holds no job (only blank lines and comments)", path);
    rc = TR_EXIT_INPUT;
  }
  return rc;
}

/* ---- --dir and a template ------------------------------------------------------------------- */

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* tmpl's word with the placeholders of one file, appended to w. */
static int expand(words *w, const char *word, const char *dir, const char *name) {
  char path[2 * PATH_MAX + 2], stem[2 * PATH_MAX + 2], base[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(base, sizeof base, "%s", name);
  char *dot = strrchr(base, '.');
  if (dot && dot != base) *dot = 0;
  snprintf(stem, sizeof stem, "%s/%s", dir, base);
  static const char *const keys[] = {"{}", "{name}", "{stem}", "{base}", "{dir}"};
  const char *vals[] = {path, name, stem, base, dir};
  size_t cap = strlen(word) + 1, n = 0;
  char *o = malloc(cap);
  if (!o) return -1;
  for (const char *p = word; *p;) {
    size_t k = 0;
    while (k < 5 && strncmp(p, keys[k], strlen(keys[k]))) k++;
    const char *v = k < 5 ? vals[k] : p;
    size_t vn = k < 5 ? strlen(v) : 1;
    if (n + vn + 1 > cap) {
      char *g = realloc(o, cap = 2 * (n + vn + 1));
      if (!g) {
        free(o);
        return -1;
      }
      o = g;
    }
    memcpy(o + n, v, vn);
    n += vn;
    p += k < 5 ? strlen(keys[k]) : 1;
  }
  int rc = words_add(w, o, n);
  free(o);
  return rc;
}

/* The name a path is known by when comparing outputs: its folder resolved
 * (the file itself may not exist yet), else the path as written. */
static void key_of(const char *path, char *key, size_t len) {
  char d[PATH_MAX], b[PATH_MAX], real[PATH_MAX];
  snprintf(d, sizeof d, "%s", path);
  snprintf(b, sizeof b, "%s", path);
  if (realpath(dirname(d), real)) snprintf(key, len, "%s/%s", real, basename(b));
  else snprintf(key, len, "%s", path);
}

/* Every output of a list by its key, sorted: who writes a file, found in
 * log time (a batch may hold many thousands of jobs). */
typedef struct {
  char *key;
  int job;
} out_key;

typedef struct {
  out_key *v;
  size_t n;
} out_index;

static int by_key(const void *a, const void *b) {
  const out_key *x = a, *y = b;
  const int c = strcmp(x->key, y->key);
  return c ? c : x->job - y->job;
}

static void index_free(out_index *ix) {
  for (size_t i = 0; i < ix->n; i++) free(ix->v[i].key);
  free(ix->v);
  memset(ix, 0, sizeof *ix);
}

static int index_build(const tb_jobs *jobs, out_index *ix) {
  size_t n = 0;
  for (int i = 0; i < jobs->n; i++) n += (size_t)jobs->v[i].nout;
  ix->n = 0;
  ix->v = calloc(n + 1, sizeof *ix->v);
  if (!ix->v) return -1;
  char k[2 * PATH_MAX];
  for (int i = 0; i < jobs->n; i++)
    for (int m = 0; m < jobs->v[i].nout; m++) {
      key_of(jobs->v[i].out[m], k, sizeof k);
      if (!(ix->v[ix->n].key = strdup(k))) {
        index_free(ix);
        return -1;
      }
      ix->v[ix->n++].job = i;
    }
  qsort(ix->v, ix->n, sizeof *ix->v, by_key);
  return 0;
}

/* The first job other than `except` that writes path, -1: none. */
static int index_writer(const out_index *ix, const char *path, int except) {
  char k[2 * PATH_MAX];
  key_of(path, k, sizeof k);
  size_t lo = 0, hi = ix->n;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (strcmp(ix->v[mid].key, k) < 0) lo = mid + 1;
    else hi = mid;
  }
  for (; lo < ix->n && !strcmp(ix->v[lo].key, k); lo++)
    if (ix->v[lo].job != except) return ix->v[lo].job;
  return -1;
}

static void job_free(tb_job *j) {
  for (int i = 0; i < j->argc; i++) free(j->argv[i]);
  for (int i = 0; i < j->nout; i++) free(j->out[i]);
  for (int i = 0; i < j->nwrote; i++) free(j->wrote[i]);
  free(j->argv);
  free(j->out);
  free(j->wrote);
  free(j->text);
  free(j->stats);
}

int tb_jobs_from_dir(tb_jobs *jobs, const char *dir, const char *glob, const char *tmpl, char *err, size_t len) {
  words t = {0};
  int s = split(tmpl, &t);
  if (s || t.n == 0) {
    words_free(&t);
    snprintf(err, len, "--cmd '%s': %s", tmpl, s == -2 ? "unterminated quote" : s == -1 ? "out of memory" : "no command");
    return s == -1 ? TR_EXIT_NOMEM : TR_EXIT_USAGE;
  }
  DIR *d = opendir(dir);
  if (!d) {
    words_free(&t);
    snprintf(err, len, "cannot open folder '%s': %s", dir, strerror(errno));
    return TR_EXIT_INPUT;
  }
  words names = {0};
  int rc = 0;
  struct dirent *e;
  while (!rc && (e = readdir(d))) {
    /* FNM_PERIOD: hidden files, terrafort's temporaries among them, never match */
    if (fnmatch(glob, e->d_name, FNM_PERIOD) != 0) continue;
    char p[PATH_MAX];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && words_add(&names, e->d_name, strlen(e->d_name))) rc = TR_EXIT_NOMEM;
  }
  closedir(d);
  if (names.n) qsort(names.v, (size_t)names.n, sizeof *names.v, by_name);
  for (int i = 0; !rc && i < names.n; i++) {
    words w = {0};
    for (int k = 0; !rc && k < t.n; k++)
      if (expand(&w, t.v[k], dir, names.v[i])) rc = TR_EXIT_NOMEM;
    size_t tl = 1;
    for (int k = 0; k < w.n; k++) tl += strlen(w.v[k]) + 1;
    char *text = rc ? NULL : calloc(1, tl);
    if (!rc && !text) rc = TR_EXIT_NOMEM;
    for (int k = 0; !rc && k < w.n; k++) {
      if (k) strcat(text, " ");
      strcat(text, w.v[k]);
    }
    if (!rc) rc = add_job(jobs, &w, text, i + 1, "--dir file", err, len);
    free(text);
    words_free(&w);
  }
  if (rc == TR_EXIT_NOMEM) oom(err, len);
  /* A file this template writes for another file is that job's output, not
   * an input: a second run must not take a_slope.tif for a new DEM. */
  char *drop = rc ? NULL : calloc((size_t)jobs->n + 1, 1);
  out_index ix = {0};
  if (!rc && (!drop || index_build(jobs, &ix))) rc = oom(err, len);
  for (int i = 0; !rc && i < jobs->n; i++) {
    char p[2 * PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", dir, names.v[i]);
    drop[i] = index_writer(&ix, p, i) >= 0;
  }
  index_free(&ix);
  int keep = 0;
  for (int i = 0; !rc && i < jobs->n; i++) {
    if (drop[i]) job_free(&jobs->v[i]);
    else jobs->v[keep++] = jobs->v[i];
  }
  if (!rc) jobs->n = keep;
  free(drop);
  words_free(&names);
  words_free(&t);
  if (!rc && jobs->n == 0) {
    snprintf(err, len, "no file in '%s' matches '%s'", dir, glob);
    rc = TR_EXIT_INPUT;
  }
  return rc;
}

int tb_jobs_check(const tb_jobs *jobs, char *err, size_t len) {
  out_index ix;
  if (index_build(jobs, &ix)) return oom(err, len);
  int rc = 0;
  for (size_t i = 1; i < ix.n && !rc; i++) {
    const out_key *a = &ix.v[i - 1], *b = &ix.v[i];
    if (strcmp(a->key, b->key)) continue;
    const tb_job *x = &jobs->v[a->job], *y = &jobs->v[b->job];
    if (a->job == b->job) snprintf(err, len, "line %d writes '%s' twice", x->line, b->key);
    else snprintf(err, len, "lines %d and %d both write '%s': two jobs cannot write one file", x->line, y->line, b->key);
    rc = TR_EXIT_USAGE;
  }
  /* any other file name of a job that some job writes: that one would have to run first */
  for (int i = 0; i < jobs->n && !rc; i++) {
    const tb_job *j = &jobs->v[i];
    for (int w = 1; w < j->argc && !rc; w++) {
      int is_out = 0;
      for (int m = 0; m < j->nout; m++) is_out |= !strcmp(j->out[m], j->argv[w]);
      const int other = is_out || j->argv[w][0] == '-' ? -1 : index_writer(&ix, j->argv[w], i);
      if (other < 0) continue;
      snprintf(err, len, "line %d reads '%s', which line %d writes: jobs run in any order (put them in two batches)",
               j->line, j->argv[w], jobs->v[other].line);
      rc = TR_EXIT_USAGE;
    }
  }
  index_free(&ix);
  return rc;
}

int tb_job_set_wrote(tb_job *j, const char *lines) {
  words w = {0};
  for (const char *p = lines; p && *p;) {
    const char *e = strchr(p, '\n');
    const size_t n = e ? (size_t)(e - p) : strlen(p);
    int seen = 0; /* a file written twice (--stats-json of each product) is listed once */
    for (int i = 0; i < w.n && !seen; i++) seen = strlen(w.v[i]) == n && !strncmp(w.v[i], p, n);
    if (n && !seen && words_add(&w, p, n)) {
      words_free(&w);
      return -1;
    }
    p += n + (e != NULL);
  }
  for (int i = 0; i < j->nwrote; i++) free(j->wrote[i]);
  free(j->wrote);
  j->wrote = w.v;
  j->nwrote = w.n;
  return 0;
}

void tb_jobs_free(tb_jobs *jobs) {
  for (int i = 0; i < jobs->n; i++) job_free(&jobs->v[i]);
  free(jobs->v);
  tb_grammar_free(jobs->grammars);
  memset(jobs, 0, sizeof *jobs);
}

int tb_job_pack(const tb_job *j, char *buf, size_t len) {
  size_t n = 0;
  for (int i = 0; i < j->argc; i++) {
    size_t k = strlen(j->argv[i]) + 1;
    if (n + k > len) return -1;
    memcpy(buf + n, j->argv[i], k);
    n += k;
  }
  return (int)n;
}

int tb_job_unpack(char *buf, int n, char **argv, int max) {
  int argc = 0;
  for (int i = 0; i < n && argc < max - 1; i += (int)strlen(buf + i) + 1) argv[argc++] = buf + i;
  argv[argc] = NULL;
  return argc;
}
