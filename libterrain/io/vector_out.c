/*
 * vector_out.c - vector outputs under a temporary folder, then held or put
 * in place (vector_out.h).
 */
#include "vector_out.h"

#include <dirent.h>
#include <errno.h>
#include <gdal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dist.h"
#include "held.h"
#include "path_max.h"
#include "raster.h"
#include "tmp_files.h"

const char *tr_vector_driver(const char *dst, const char *driver) {
  if (driver) return driver;
  const char *dot = strrchr(dst, '.');
  static const struct {
    const char *ext, *drv;
  } by_ext[] = {{".gpkg", "GPKG"}, {".shp", "ESRI Shapefile"}, {".geojson", "GeoJSON"}, {".json", "GeoJSON"},
                {".sqlite", "SQLite"}, {".gml", "GML"}, {".kml", "KML"}, {".fgb", "FlatGeobuf"}, {".csv", "CSV"}};
  for (size_t i = 0; dot && i < sizeof by_ext / sizeof by_ext[0]; i++)
    if (!strcasecmp(dot, by_ext[i].ext)) return by_ext[i].drv;
  return "GPKG";
}

int tr_vector_check(const char *dst, const char *driver, const char *flag, tr_error *err) {
  const char *name = tr_vector_driver(dst, driver);
  GDALDriverH d = GDALGetDriverByName(name);
  if (!d || !GDALGetMetadataItem(d, GDAL_DCAP_VECTOR, NULL))
    return tr_fail(err, TR_EUSAGE, "%s: '%s' is not a GDAL vector driver", flag, name);
  if (!GDALGetMetadataItem(d, GDAL_DCAP_CREATE, NULL))
    return tr_fail(err, TR_EUSAGE, "%s: the %s driver cannot create files", flag, name);
  return TR_OK;
}

static void remove_tree(const char *tmp) {
  DIR *d = opendir(tmp);
  if (!d) return;
  struct dirent *e;
  char a[TR_PATH_MAX];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    const int na = snprintf(a, sizeof a, "%s/%s", tmp, e->d_name);
    if (na > 0 && (size_t)na < sizeof a) unlink(a);
  }
  closedir(d);
  rmdir(tmp);
}

int tr_vector_write(void *job, tr_error *err) {
  const tr_vector_job *j = job;
  const tr_run_opts *run = j->run;
  const char *dst = j->dst, *driver = j->driver;
  int st = TR_OK;
  {
    /* Written into a folder of its own under a short name, whatever dst's
     * (a driver may write several files; the folder's name and the inner
     * one stay far from NAME_MAX and from SQLite's path limit), then held
     * for the run's end or put in place at once. */
    char target[TR_PATH_MAX], inner[48], path[TR_PATH_MAX];
    const char *final = tr_output_link_target(dst, target, sizeof target);
    const char *slash = strrchr(final, '/'), *base = slash ? slash + 1 : final, *dot = strrchr(base, '.');
    const char *ext = dot && dot != base && strlen(dot) <= 32 ? dot : "";
    snprintf(inner, sizeof inner, "n%s", ext);
    tr_held *own = run->held ? NULL : tr_held_new();
    tr_held *held = run->held ? run->held : own;
    char *folder = tr_output_scratch_folder(final);
    struct stat sb;
    if (!held || !folder) st = tr_fail(err, TR_ENOMEM, "out of memory");
    else if (!stat(dst, &sb) && S_ISDIR(sb.st_mode)) st = tr_fail(err, TR_EOUTPUT, "'%s' is a directory", dst);
    else if (snprintf(path, sizeof path, "%s/%s", folder, inner) >= (int)sizeof path)
      st = tr_fail(err, TR_EOUTPUT, "'%s': path too long", dst);
    else if (mkdir(folder, 0700))
      st = tr_fail(err, TR_EOUTPUT, "cannot write '%s': cannot make a temporary folder beside it: %s", dst, strerror(errno));
    else {
      tr_tmp_track_folder(folder);
      st = j->write(path, tr_vector_driver(dst, driver), j->user, err);
      if (!st && tr_held_folder(held, final, folder, inner)) st = tr_fail(err, TR_ENOMEM, "out of memory");
      if (st) {
        remove_tree(folder);
        tr_tmp_untrack(folder);
      }
    }
    if (!st && own) st = tr_held_commit(own, run, err);
    free(folder);
    tr_held_free(own);
  }
  return st;
}
