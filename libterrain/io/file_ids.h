/*
 * file_ids.h - the files a run reads, by identity (internal to libterrain).
 *
 * "The input" is not only the path a user gave: a VRT reads its sources, a
 * subdataset (GPKG:dem.gpkg:elev) lives in a container with other tables, a
 * /vsizip/ path reads an archive, a GeoTIFF may have side-car files. Writing
 * any output onto one of them destroys data the run (or the user) still
 * needs. A tr_file_ids holds each such file's device and inode, so an output
 * is compared by identity (hard links, ./x/../ spellings, symbolic links
 * alike) before any work.
 */
#ifndef TR_FILE_IDS_H
#define TR_FILE_IDS_H

#include <gdal.h>
#include <sys/types.h>

typedef struct {
  int n, cap;
  dev_t *dev;
  ino_t *ino;
  char **name; /* as GDAL or the caller gave it, for messages */
} tr_file_ids;

/* Adds the file `path` names, when it names one: a plain path (followed
 * through symbolic links), or a GDAL virtual path whose archive is a file
 * (/vsizip/a.zip/dem.tif: a.zip). Nothing when it names no file. 0, or -1
 * when out of memory. */
int tr_file_ids_add_path(tr_file_ids *s, const char *path);

/* Adds every file GDAL lists for the opened dataset ds (GDALGetFileList). */
int tr_file_ids_add_dataset(tr_file_ids *s, GDALDatasetH ds);

/* Adds the files a run reads through `path`, a file it opens besides its
 * input raster (the DEM of flowgraph, --weights, the points, a colour file):
 * the path's own file and, when GDAL opens it as a raster or vector dataset,
 * every file GDAL lists for it (a VRT's sources, the GeoPackage behind
 * GPKG:file:table, a shapefile's .shx and .dbf). A path GDAL does not open
 * (a colour file) adds its own file only; a FIFO, device or /vsistdin/ is
 * not opened (that would read what the run is to read). 0, or -1 when out
 * of memory. */
int tr_file_ids_add_read(tr_file_ids *s, const char *path);

/* The index of the file `path` names in s, or -1 (also when path names no
 * existing file). */
int tr_file_ids_find(const tr_file_ids *s, const char *path);

void tr_file_ids_free(tr_file_ids *s);

#endif
