/*
 * held.c - the outputs a run of several stages keeps back until its end
 * (held.h).
 *
 * A list of items in the order the stages finished them: a raster (its
 * finished temporary, its destination and driver) or a vector output's
 * folder (the files an OGR driver wrote there under a short name). The
 * commit renames them in that order and remembers what it put in place, so
 * that a failure or a signal part way through deletes those again: the
 * destination folder then holds none of the run's products. The moment the
 * run is done is the cancel check after the last rename; a signal after it
 * finds a finished run.
 */
#include "held.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "path_max.h"
#include "raster.h"
#include "tmp_files.h"
#include "written.h"

typedef struct {
  char *final; /* the destination (a link's target) */
  char *ready; /* a raster's temporary, or the folder */
  char *inner; /* a folder's: the name the driver wrote */
  char *where; /* what a later stage reads: ready, or folder/inner */
  GDALDriverH driver;
  int folder;
  int placed, aux; /* put in place; a raster's side file came along */
  char **moved;    /* a folder's files, where they went */
  int nmoved;
} item;

struct tr_held {
  item *v;
  int n, cap;
};

tr_held *tr_held_new(void) { return calloc(1, sizeof(tr_held)); }

static void item_free(item *it) {
  free(it->final);
  free(it->ready);
  free(it->inner);
  free(it->where);
  for (int k = 0; k < it->nmoved; k++) free(it->moved[k]);
  free(it->moved);
  memset(it, 0, sizeof *it);
}

static void clear(tr_held *h) {
  for (int i = 0; i < h->n; i++) item_free(&h->v[i]);
  h->n = 0;
}

void tr_held_free(tr_held *h) {
  if (!h) return;
  clear(h);
  free(h->v);
  free(h);
}

static item *push(tr_held *h) {
  if (h->n == h->cap) {
    const int cap = h->cap ? 2 * h->cap : 8;
    item *v = realloc(h->v, (size_t)cap * sizeof *v);
    if (!v) return NULL;
    h->v = v;
    h->cap = cap;
  }
  item *it = &h->v[h->n];
  memset(it, 0, sizeof *it);
  return it;
}

int tr_held_raster(tr_held *h, const char *final, const char *ready, GDALDriverH d) {
  item *it = push(h);
  if (!it) return -1;
  it->final = strdup(final);
  it->ready = strdup(ready);
  it->where = strdup(ready);
  it->driver = d;
  if (!it->final || !it->ready || !it->where) {
    item_free(it);
    return -1;
  }
  h->n++;
  return 0;
}

int tr_held_folder(tr_held *h, const char *final, const char *folder, const char *inner) {
  item *it = push(h);
  if (!it) return -1;
  const size_t n = strlen(folder) + strlen(inner) + 2;
  it->final = strdup(final);
  it->ready = strdup(folder);
  it->inner = strdup(inner);
  it->where = malloc(n);
  it->folder = 1;
  if (!it->final || !it->ready || !it->inner || !it->where) {
    item_free(it);
    return -1;
  }
  snprintf(it->where, n, "%s/%s", folder, inner);
  h->n++;
  return 0;
}

const char *tr_held_where(const tr_held *h, const char *path) {
  if (!h || !path) return NULL;
  char buf[TR_PATH_MAX];
  const char *target = tr_output_link_target(path, buf, sizeof buf);
  for (int i = 0; i < h->n; i++)
    if (!strcmp(h->v[i].final, path) || !strcmp(h->v[i].final, target)) return h->v[i].where;
  return NULL;
}

/* The stem of file name `base` and where its extension starts ("" when it
 * has none; a leading dot is no extension). */
static const char *ext_of(const char *base) {
  const char *dot = strrchr(base, '.');
  return dot && dot != base ? dot : base + strlen(base);
}

/* Moves the folder's entries beside it->final (see held.h) and removes the
 * folder; each destination is remembered in it->moved. */
static int place_folder(item *it, tr_error *err) {
  const char *slash = strrchr(it->final, '/');
  const char *fbase = slash ? slash + 1 : it->final;
  const int dirlen = slash ? (int)(slash - it->final) : 0;
  const char *fext = ext_of(fbase), *iext = ext_of(it->inner);
  const int fstem = (int)(fext - fbase), istem = (int)(iext - it->inner);
  DIR *d = opendir(it->ready);
  if (!d) return tr_fail(err, TR_EOUTPUT, "cannot write output '%s': %s", it->final, strerror(errno));
  /* as for a raster: a regular file there is replaced only now */
  struct stat st;
  if (lstat(it->final, &st) == 0 && S_ISREG(st.st_mode)) unlink(it->final);
  int status = TR_OK;
  struct dirent *e;
  while (!status && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char from[TR_PATH_MAX], to[TR_PATH_MAX];
    int nt;
    if (!strcmp(e->d_name, it->inner)) /* the output itself */
      nt = snprintf(to, sizeof to, "%.*s%s%s", dirlen, it->final, slash ? "/" : "", fbase);
    else if (!strncmp(e->d_name, it->inner, (size_t)istem) && e->d_name[istem] == '.') /* its side files */
      nt =
          snprintf(to, sizeof to, "%.*s%s%.*s%s", dirlen, it->final, slash ? "/" : "", fstem, fbase, e->d_name + istem);
    else
      nt = snprintf(to, sizeof to, "%.*s%s%s", dirlen, it->final, slash ? "/" : "", e->d_name);
    const int nf = snprintf(from, sizeof from, "%s/%s", it->ready, e->d_name);
    char **m = realloc(it->moved, (size_t)(it->nmoved + 1) * sizeof *m);
    if (m) it->moved = m;
    if (nt < 0 || nf < 0 || (size_t)nt >= sizeof to || (size_t)nf >= sizeof from)
      status = tr_fail(err, TR_EOUTPUT, "cannot write output '%s': path too long", it->final);
    else if (!m || !(it->moved[it->nmoved] = strdup(to)))
      status = tr_fail(err, TR_ENOMEM, "out of memory");
    else if (rename(from, to)) {
      free(it->moved[it->nmoved]);
      status = tr_fail(err, TR_EOUTPUT, "cannot write output '%s': cannot rename '%s' into place: %s", it->final,
                       e->d_name, strerror(errno));
    } else
      it->nmoved++;
  }
  closedir(d);
  if (!status) {
    rmdir(it->ready);
    tr_tmp_untrack(it->ready);
  }
  return status;
}

static int place_item(item *it, tr_error *err) {
  if (it->folder) {
    it->placed = 1; /* what moved goes again on a failure */
    return place_folder(it, err);
  }
  char aux[TR_PATH_MAX];
  struct stat st;
  it->aux = snprintf(aux, sizeof aux, "%s.aux.xml", it->ready) < (int)sizeof aux && stat(aux, &st) == 0;
  const int status = tr_output_place(it->driver, it->ready, it->final, err);
  it->placed = status == TR_OK;
  return status;
}

/* Deletes what `it` put in place, or what it still holds. */
static void remove_item(item *it) {
  if (it->folder) {
    for (int k = 0; k < it->nmoved; k++) unlink(it->moved[k]);
    /* what is left in the folder (all of it when nothing moved) */
    DIR *d = opendir(it->ready);
    struct dirent *e;
    while (d && (e = readdir(d))) {
      char f[TR_PATH_MAX];
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
          snprintf(f, sizeof f, "%s/%s", it->ready, e->d_name) < (int)sizeof f)
        unlink(f);
    }
    if (d) closedir(d);
    rmdir(it->ready);
    tr_tmp_untrack(it->ready);
  } else {
    tr_output_discard(it->driver, it->placed ? it->final : it->ready);
    if (it->placed) tr_tmp_untrack(it->ready);
  }
}

static int cancelled(const tr_run_opts *run) { return run && run->cancelled && run->cancelled(run->progress_user); }

int tr_held_commit(tr_held *h, const tr_run_opts *run, tr_error *err) {
  if (!h) return TR_OK;
  int status = TR_OK;
  for (int i = 0; i < h->n && !status; i++) status = cancelled(run) ? TR_EINTERRUPTED : place_item(&h->v[i], err);
  if (cancelled(run)) status = TR_EINTERRUPTED;
  if (status == TR_EINTERRUPTED) tr_fail(err, status, "interrupted");
  if (status) {
    tr_held_abort(h);
    return status;
  }
  for (int i = 0; i < h->n; i++) {
    item *it = &h->v[i];
    if (it->folder) {
      for (int k = 0; k < it->nmoved; k++) tr_output_written(it->moved[k]);
      continue;
    }
    tr_output_written(it->final);
    char aux[TR_PATH_MAX];
    struct stat st;
    if (it->aux && snprintf(aux, sizeof aux, "%s.aux.xml", it->final) < (int)sizeof aux && stat(aux, &st) == 0)
      tr_output_written(aux);
  }
  clear(h);
  return TR_OK;
}

void tr_held_abort(tr_held *h) {
  if (!h) return;
  for (int i = 0; i < h->n; i++) remove_item(&h->v[i]);
  clear(h);
}
