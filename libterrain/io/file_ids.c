/*
 * file_ids.c - the files a run reads, by device and inode (file_ids.h).
 *
 * GDAL's virtual file systems name a file inside an archive by the
 * archive's path followed by the member's: the archive is the longest
 * leading part of the path (after the /vsi.../ prefix) that is a regular
 * file. Network file systems (/vsicurl/, /vsis3/, ...) name no local file
 * and add nothing.
 */
#include "file_ids.h"

#include <cpl_error.h>
#include <cpl_string.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int push(tr_file_ids *s, const struct stat *st, const char *name) {
  for (int i = 0; i < s->n; i++)
    if (s->dev[i] == st->st_dev && s->ino[i] == st->st_ino) return 0;
  if (s->n == s->cap) {
    const int cap = s->cap ? 2 * s->cap : 8;
    dev_t *d = realloc(s->dev, (size_t)cap * sizeof *d);
    if (!d) return -1;
    s->dev = d;
    ino_t *i = realloc(s->ino, (size_t)cap * sizeof *i);
    if (!i) return -1;
    s->ino = i;
    char **n = realloc(s->name, (size_t)cap * sizeof *n);
    if (!n) return -1;
    s->name = n;
    s->cap = cap;
  }
  if (!(s->name[s->n] = strdup(name))) return -1;
  s->dev[s->n] = st->st_dev;
  s->ino[s->n] = st->st_ino;
  s->n++;
  return 0;
}

/* The archive behind a /vsi<archive>/ path: its longest leading part that
 * is a regular file. 0 and *st filled when found. */
static int archive_of(const char *path, struct stat *st) {
  static const char *const prefixes[] = {"/vsizip/", "/vsitar/", "/vsigzip/", "/vsi7z/", "/vsirar/"};
  const char *rest = NULL;
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0] && !rest; i++)
    if (!strncmp(path, prefixes[i], strlen(prefixes[i]))) rest = path + strlen(prefixes[i]);
  if (!rest) return -1;
  /* a nested /vsi path (/vsizip//vsigzip/...) is its own archive's */
  if (!strncmp(rest, "/vsi", 4)) return archive_of(rest, st);
  char *p = strdup(rest);
  if (!p) return -1;
  int found = -1;
  for (;;) {
    if (stat(p, st) == 0 && S_ISREG(st->st_mode)) {
      found = 0;
      break;
    }
    char *slash = strrchr(p, '/');
    if (!slash || slash == p) break;
    *slash = 0;
  }
  free(p);
  return found;
}

static int id_of(const char *path, struct stat *st) {
  if (!path || !path[0]) return -1;
  if (!strncmp(path, "/vsi", 4)) return archive_of(path, st);
  return stat(path, st) == 0 ? 0 : -1;
}

int tr_file_ids_add_path(tr_file_ids *s, const char *path) {
  struct stat st;
  return id_of(path, &st) == 0 ? push(s, &st, path) : 0;
}

int tr_file_ids_add_dataset(tr_file_ids *s, GDALDatasetH ds) {
  char **files = GDALGetFileList(ds);
  int rc = 0;
  for (char **f = files; f && *f && !rc; f++) rc = tr_file_ids_add_path(s, *f);
  CSLDestroy(files);
  return rc;
}

int tr_file_ids_add_read(tr_file_ids *s, const char *path) {
  if (!path || tr_file_ids_add_path(s, path)) return path ? -1 : 0;
  struct stat st;
  const int there = stat(path, &st) == 0;
  if ((there && !S_ISREG(st.st_mode)) || !strncmp(path, "/vsistdin", 9)) return 0;
  CPLPushErrorHandler(CPLQuietErrorHandler);
  GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_VECTOR | GDAL_OF_READONLY, NULL, NULL, NULL);
  CPLPopErrorHandler();
  if (!ds) return 0;
  const int rc = tr_file_ids_add_dataset(s, ds);
  GDALClose(ds);
  return rc;
}

int tr_file_ids_find(const tr_file_ids *s, const char *path) {
  struct stat st;
  if (id_of(path, &st) != 0) return -1;
  for (int i = 0; i < s->n; i++)
    if (s->dev[i] == st.st_dev && s->ino[i] == st.st_ino) return i;
  return -1;
}

void tr_file_ids_free(tr_file_ids *s) {
  for (int i = 0; i < s->n; i++) free(s->name[i]);
  free(s->dev);
  free(s->ino);
  free(s->name);
  memset(s, 0, sizeof *s);
}
