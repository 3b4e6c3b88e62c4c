/*
 * raster_check.h - helpers for tests that read rasters back through GDAL:
 * load a band, compare two rasters' values, masks and georeferencing, run a
 * command and capture its exit code and stderr.
 */
#ifndef TR_RASTER_CHECK_H
#define TR_RASTER_CHECK_H

#include <cpl_error.h>
#include <dirent.h>
#include <gdal.h>
#include <gdal_utils.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

typedef struct {
  int rows, cols;
  double *v;
  int has_nodata;
  double nodata;
  double gt[6];
  char wkt[4096];
  GDALDataType type;
} rc_raster;

static inline int rc_load(const char *path, rc_raster *r) {
  memset(r, 0, sizeof *r);
  GDALDatasetH ds = GDALOpen(path, GA_ReadOnly);
  if (!ds) {
    fprintf(stderr, "cannot open %s\n", path);
    return -1;
  }
  GDALRasterBandH b = GDALGetRasterBand(ds, 1);
  r->rows = GDALGetRasterYSize(ds);
  r->cols = GDALGetRasterXSize(ds);
  r->type = GDALGetRasterDataType(b);
  r->nodata = GDALGetRasterNoDataValue(b, &r->has_nodata);
  GDALGetGeoTransform(ds, r->gt);
  snprintf(r->wkt, sizeof r->wkt, "%s", GDALGetProjectionRef(ds));
  r->v = malloc(sizeof(double) * (size_t)r->rows * (size_t)r->cols);
  CPLErr e = GDALRasterIO(b, GF_Read, 0, 0, r->cols, r->rows, r->v, r->cols, r->rows, GDT_Float64, 0, 0);
  GDALClose(ds);
  return e == CE_None ? 0 : -1;
}

static inline void rc_free(rc_raster *r) { free(r->v); r->v = NULL; }

static inline int rc_is_nodata(const rc_raster *r, double v) {
  return r->has_nodata && (v == r->nodata || (isnan(r->nodata) && isnan(v)));
}

/* Compares b against reference a: same size, georeferencing, CRS, nodata
 * declaration, identical nodata and NaN masks, values within tol. Prints the
 * first difference; returns 0 when they agree. */
static inline int rc_compare(const rc_raster *a, const rc_raster *b, double tol, const char *what) {
  if (a->rows != b->rows || a->cols != b->cols) {
    fprintf(stderr, "%s: size %dx%d vs %dx%d\n", what, a->cols, a->rows, b->cols, b->rows);
    return 1;
  }
  for (int i = 0; i < 6; i++)
    if (a->gt[i] != b->gt[i]) {
      fprintf(stderr, "%s: geotransform[%d] %.17g vs %.17g\n", what, i, a->gt[i], b->gt[i]);
      return 1;
    }
  if (strcmp(a->wkt, b->wkt) != 0) {
    fprintf(stderr, "%s: CRS differs\n", what);
    return 1;
  }
  if (a->has_nodata != b->has_nodata || (a->has_nodata && a->nodata != b->nodata)) {
    fprintf(stderr, "%s: nodata %d/%g vs %d/%g\n", what, a->has_nodata, a->nodata, b->has_nodata, b->nodata);
    return 1;
  }
  double maxd = 0;
  for (long i = 0; i < (long)a->rows * a->cols; i++) {
    double x = a->v[i], y = b->v[i];
    int nx = rc_is_nodata(a, x), ny = rc_is_nodata(b, y);
    if (nx != ny || isnan(x) != isnan(y)) {
      fprintf(stderr, "%s: mask differs at row %ld col %ld: %g vs %g\n", what, i / a->cols, i % a->cols, x, y);
      return 1;
    }
    if (nx || isnan(x) || x == y) continue;
    double d = fabs(x - y);
    if (d > maxd) maxd = d;
    if (!(d <= tol)) {
      fprintf(stderr, "%s: value differs at row %ld col %ld: %.9g vs %.9g\n", what, i / a->cols, i % a->cols, x, y);
      return 1;
    }
  }
  return 0;
}

/* Runs a shell command; returns its exit code (or -1). stderr goes to
 * errfile when given. */
static inline int rc_run(const char *cmd, const char *errfile) {
  char buf[8192];
  if (errfile) snprintf(buf, sizeof buf, "%s 2>%s", cmd, errfile);
  else snprintf(buf, sizeof buf, "%s", cmd);
  int st = system(buf);
  if (st == -1 || !WIFEXITED(st)) return -1;
  return WEXITSTATUS(st);
}

/* Runs a gdaldem command line in this process: "gdaldem MODE 'IN' 'OUT'
 * FLAGS..." ("gdaldem color-relief 'IN' 'COLOURS' 'OUT' FLAGS..."), words
 * split at blanks, a word in '...' taken whole. It makes the call the gdaldem
 * program makes once it has read its arguments, GDALDEMProcessing of GDAL's
 * library with the same option list, and closes the output as the program
 * does: the same code on the same input, so the same file. What it saves is
 * the program's start: GDAL's ~115 shared libraries loaded again, 0.13 s of
 * CPU a run on the 2-core machine (scripts/bench/startup), in the 681 peer
 * runs of the four gdaldem parity tests (counted 2026-11-29). GDAL's
 * messages are dropped, as the program's stderr was. 0 on success, -1 on a
 * command it cannot read (not gdaldem, too few words, more than 127 words or
 * 8 KiB) or a failed run. */
static inline int rc_gdaldem(const char *cmd) {
  char buf[8192], *w[128];
  int n = 0;
  /* a line too long for these buffers is refused, never run cut short */
  if (snprintf(buf, sizeof buf, "%s", cmd) >= (int)sizeof buf) return -1;
  char *p = buf;
  for (; *p && n < 127;) {
    while (*p == ' ') p++;
    if (!*p) break;
    if (*p == '\'') {
      w[n++] = ++p;
      while (*p && *p != '\'') p++;
    } else {
      w[n++] = p;
      while (*p && *p != ' ') p++;
    }
    if (*p) *p++ = 0;
  }
  while (*p == ' ') p++;
  if (*p) return -1;
  w[n] = NULL;
  const int colours = n > 1 && !strcmp(w[1], "color-relief"), first_flag = colours ? 5 : 4;
  if (n < first_flag || strcmp(w[0], "gdaldem")) return -1;
  const char *src = w[2], *ramp = colours ? w[3] : NULL, *dst = w[first_flag - 1];
  GDALAllRegister();
  CPLPushErrorHandler(CPLQuietErrorHandler);
  GDALDEMProcessingOptions *o = GDALDEMProcessingOptionsNew(w + first_flag, NULL);
  GDALDatasetH in = o ? GDALOpen(src, GA_ReadOnly) : NULL;
  int usage = 0;
  GDALDatasetH out = in ? GDALDEMProcessing(dst, in, w[1], ramp, o, &usage) : NULL;
  const int ok = out != NULL && !usage;
  if (out) GDALClose(out);
  if (in) GDALClose(in);
  if (o) GDALDEMProcessingOptionsFree(o);
  CPLPopErrorHandler();
  return ok ? 0 : -1;
}

/* Runs the peer's command (its stderr dropped; a gdaldem line in this
 * process, rc_gdaldem), then terrafort's; 0 when both succeed, else 1 with
 * the failing command printed. What every parity test against gdaldem runs
 * before comparing the two outputs. */
static inline int rc_run_pair(const char *peer_cmd, const char *tf_cmd) {
  const int in_process = !strncmp(peer_cmd, "gdaldem ", 8);
  if ((in_process ? rc_gdaldem(peer_cmd) : rc_run(peer_cmd, "/dev/null")) != 0) {
    fprintf(stderr, "peer failed: %s\n", peer_cmd);
    return 1;
  }
  int rc = rc_run(tf_cmd, NULL);
  if (rc != 0) {
    fprintf(stderr, "terrafort failed (%d): %s\n", rc, tf_cmd);
    return 1;
  }
  return 0;
}

/* Number of directory entries other than . and .. */
static inline int rc_count_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

/* A whole file in a malloc'd buffer; *n = its size (-1 on error). */
static inline unsigned char *rc_file_bytes(const char *path, long *n) {
  *n = -1;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(len > 0 ? (size_t)len : 1);
  if (b && fread(b, 1, (size_t)len, f) == (size_t)len) *n = len;
  fclose(f);
  return b;
}

/* 1 when both files exist, are non-empty and hold the same bytes. */
static inline int rc_same_file(const char *a, const char *b) {
  long na, nb;
  unsigned char *x = rc_file_bytes(a, &na), *y = rc_file_bytes(b, &nb);
  int same = x && y && na == nb && na > 0 && memcmp(x, y, (size_t)na) == 0;
  if (!same) fprintf(stderr, "files differ: %s %s\n", a, b);
  free(x);
  free(y);
  return same;
}

/* Reads a whole small file into a static buffer. */
static inline const char *rc_slurp(const char *path) {
  static char buf[65536];
  FILE *f = fopen(path, "rb");
  if (!f) return "";
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

#endif
