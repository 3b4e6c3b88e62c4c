/*
 * raster.c - GDAL input and output with clear errors and no partial files.
 *
 * GDAL reports problems through a per-thread error handler that prints by
 * default; a library must not print, so every GDAL call here runs under a
 * capturing handler (gdal_capture) that keeps the first failure message. The
 * caller turns it into one tr_error line naming the file.
 *
 * Outputs are created as "<dir>/.<name>.<pid>.tmp<ext>" and renamed with
 * GDALRenameDataset (which also moves side-car files) once everything,
 * including the final flush on close, succeeded. Drivers that can only
 * CreateCopy (PNG, JPEG, ...) get an intermediate GTiff that is copied at
 * commit time.
 */
#include "raster.h"

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>
#include <errno.h>
#include <math.h>
#include <ogr_srs_api.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
  int failed;
  int nospace;
  char msg[512];
} gdal_capture;

static void CPL_STDCALL capture_handler(CPLErr cls, CPLErrorNum no, const char *msg) {
  gdal_capture *c = (gdal_capture *)CPLGetErrorHandlerUserData();
  if (!c || cls < CE_Failure) return;
  (void)no;
  /* GDAL passes libtiff's and the OS's ENOSPC text through; the error number
   * alone (CPLE_FileIO) does not tell a full disk from other I/O errors. */
  if (strstr(msg, "No space left")) c->nospace = 1;
  if (!c->failed) {
    c->failed = 1;
    snprintf(c->msg, sizeof c->msg, "%s", msg);
  }
}

static void capture_begin(gdal_capture *c) {
  memset(c, 0, sizeof *c);
  CPLPushErrorHandlerEx(capture_handler, c);
}

static void capture_end(void) { CPLPopErrorHandler(); }

static const char *why(const gdal_capture *c, const char *fallback) {
  return c->failed && c->msg[0] ? c->msg : fallback;
}

/* ---------------------------------------------------------------- input */

static int type_supported(GDALDataType t) {
  switch (t) {
    case GDT_Byte: case GDT_UInt16: case GDT_Int16: case GDT_UInt32: case GDT_Int32:
    case GDT_Float32: case GDT_Float64:
#if GDAL_VERSION_NUM >= 3050000
    case GDT_UInt64: case GDT_Int64:
#endif
#if GDAL_VERSION_NUM >= 3070000
    case GDT_Int8:
#endif
      return 1;
    default:
      return 0;
  }
}

static void read_crs(tr_input *in) {
  const char *wkt = GDALGetProjectionRef(in->ds);
  if (!wkt || !wkt[0]) return;
  in->wkt = strdup(wkt);
  OGRSpatialReferenceH srs = OSRNewSpatialReference(NULL);
  if (OSRImportFromWkt(srs, (char **)&wkt) == OGRERR_NONE && OSRIsGeographic(srs)) {
    OGRErr e1 = OGRERR_NONE, e2 = OGRERR_NONE;
    in->semi_major = OSRGetSemiMajor(srs, &e1);
    in->inv_flattening = OSRGetInvFlattening(srs, &e2);
    in->geographic = e1 == OGRERR_NONE && e2 == OGRERR_NONE && in->semi_major > 0;
  }
  OSRDestroySpatialReference(srs);
}

int tr_input_open(tr_input *in, const char *path, int band, tr_error *err) {
  memset(in, 0, sizeof *in);
  in->path = path;
  struct stat st;
  if (strncmp(path, "/vsi", 4) != 0 && stat(path, &st) != 0)
    return tr_fail(err, TR_EINPUT, "cannot open input '%s': %s", path, strerror(errno));
  if (strncmp(path, "/vsi", 4) != 0 && S_ISDIR(st.st_mode))
    return tr_fail(err, TR_EINPUT, "cannot open input '%s': it is a directory", path);
  if (strncmp(path, "/vsi", 4) != 0 && access(path, R_OK) != 0)
    return tr_fail(err, TR_EINPUT, "cannot open input '%s': %s", path, strerror(errno));
  if (strncmp(path, "/vsi", 4) != 0 && st.st_size == 0)
    return tr_fail(err, TR_EINPUT, "cannot open input '%s': the file is empty", path);

  gdal_capture c;
  capture_begin(&c);
  in->ds = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
  capture_end();
  if (!in->ds)
    return tr_fail(err, TR_EINPUT, "cannot open input '%s': %s", path,
                   why(&c, "not a raster format GDAL recognises"));
  int nbands = GDALGetRasterCount(in->ds);
  if (nbands < 1) {
    tr_input_close(in);
    return tr_fail(err, TR_EINPUT, "input '%s' has no raster bands", path);
  }
  if (band < 1 || band > nbands) {
    tr_input_close(in);
    return tr_fail(err, TR_EBAND, "input '%s' has %d band%s; band %d does not exist", path,
                   nbands, nbands == 1 ? "" : "s", band);
  }
  in->band = GDALGetRasterBand(in->ds, band);
  in->rows = GDALGetRasterYSize(in->ds);
  in->cols = GDALGetRasterXSize(in->ds);
  in->type = GDALGetRasterDataType(in->band);
  if (in->rows < 1 || in->cols < 1) {
    tr_input_close(in);
    return tr_fail(err, TR_EINPUT, "input '%s' has no cells", path);
  }
  if (!type_supported(in->type)) {
    const char *tn = GDALGetDataTypeName(in->type);
    tr_input_close(in);
    return tr_fail(err, TR_ETYPE, "input '%s': data type %s is not supported (use a real-valued band)",
                   path, tn ? tn : "unknown");
  }
  in->nodata = GDALGetRasterNoDataValue(in->band, &in->has_nodata);
  in->has_gt = GDALGetGeoTransform(in->ds, in->gt) == CE_None;
  if (!in->has_gt) {
    double id[6] = {0, 1, 0, 0, 0, 1};
    memcpy(in->gt, id, sizeof id);
  }
  read_crs(in);
  return TR_OK;
}

void tr_input_close(tr_input *in) {
  if (in->ds) GDALClose(in->ds);
  free(in->wkt);
  in->ds = NULL;
  in->wkt = NULL;
}

int tr_input_read_f32(tr_input *in, int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                      float *dst, int64_t stride, tr_error *err) {
  /* Clip the window to the raster; cells outside are NaN. */
  int64_t r0 = row0 < 0 ? 0 : row0, c0 = col0 < 0 ? 0 : col0;
  int64_t r1 = row0 + rows > in->rows ? in->rows : row0 + rows;
  int64_t c1 = col0 + cols > in->cols ? in->cols : col0 + cols;
  if (r0 > row0 || c0 > col0 || r1 < row0 + rows || c1 < col0 + cols) {
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 0; c < cols; c++) dst[r * stride + c] = NAN;
  }
  if (r1 <= r0 || c1 <= c0) return TR_OK;
  float *p = dst + (r0 - row0) * stride + (c0 - col0);
  gdal_capture c;
  capture_begin(&c);
  CPLErr e = GDALRasterIOEx(in->band, GF_Read, (int)c0, (int)r0, (int)(c1 - c0), (int)(r1 - r0), p,
                            (int)(c1 - c0), (int)(r1 - r0), GDT_Float32, sizeof(float),
                            (GSpacing)(stride * (int64_t)sizeof(float)), NULL);
  capture_end();
  if (e != CE_None)
    return tr_fail(err, TR_EINPUT, "cannot read input '%s' (rows %lld-%lld): %s", in->path,
                   (long long)r0, (long long)r1 - 1, why(&c, "read error (truncated or corrupt file?)"));
  return TR_OK;
}

/* --------------------------------------------------------------- output */

/* The driver for `path`: the named one, or the one whose extension list
 * contains the path's extension, else GTiff. */
static GDALDriverH pick_driver(const char *path, const char *format, tr_error *err, int *status) {
  *status = TR_OK;
  if (format) {
    GDALDriverH d = GDALGetDriverByName(format);
    if (!d || !GDALGetMetadataItem(d, GDAL_DCAP_RASTER, NULL)) {
      *status = tr_fail(err, TR_EUSAGE, "unknown output format '%s' (see gdalinfo --formats)", format);
      return NULL;
    }
    if (!GDALGetMetadataItem(d, GDAL_DCAP_CREATE, NULL) &&
        !GDALGetMetadataItem(d, GDAL_DCAP_CREATECOPY, NULL)) {
      *status = tr_fail(err, TR_EUSAGE, "output format '%s' cannot write files", format);
      return NULL;
    }
    return d;
  }
  const char *dot = strrchr(path, '.');
  const char *slash = strrchr(path, '/');
  if (dot && (!slash || dot > slash) && dot[1]) {
    const char *ext = dot + 1;
    if (!strcasecmp(ext, "tif") || !strcasecmp(ext, "tiff")) return GDALGetDriverByName("GTiff");
    for (int i = 0; i < GDALGetDriverCount(); i++) {
      GDALDriverH d = GDALGetDriver(i);
      if (!GDALGetMetadataItem(d, GDAL_DCAP_RASTER, NULL)) continue;
      if (!GDALGetMetadataItem(d, GDAL_DCAP_CREATE, NULL) &&
          !GDALGetMetadataItem(d, GDAL_DCAP_CREATECOPY, NULL))
        continue;
      const char *exts = GDALGetMetadataItem(d, GDAL_DMD_EXTENSIONS, NULL);
      if (!exts) continue;
      char **list = CSLTokenizeString(exts);
      int hit = 0;
      for (char **e = list; e && *e; e++)
        if (!strcasecmp(*e, ext)) hit = 1;
      CSLDestroy(list);
      if (hit) return d;
    }
  }
  return GDALGetDriverByName("GTiff");
}

static char *tmp_name(const char *path, const char *tag) {
  const char *slash = strrchr(path, '/');
  size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
  const char *base = slash ? slash + 1 : path;
  const char *dot = strrchr(base, '.');
  const char *ext = dot ? dot : "";
  size_t n = strlen(path) + strlen(tag) + 64;
  char *s = malloc(n);
  if (!s) return NULL;
  snprintf(s, n, "%.*s.%.*s.%ld.%s%s", (int)dirlen, path, (int)(dot ? (size_t)(dot - base) : strlen(base)),
           base, (long)getpid(), tag, ext);
  return s;
}

static int check_destination(const char *path, tr_error *err) {
  if (!path[0]) return tr_fail(err, TR_EUSAGE, "empty output file name");
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    return tr_fail(err, TR_EOUTPUT, "cannot write output '%s': it is a directory", path);
  const char *slash = strrchr(path, '/');
  char dir[4096];
  if (slash) {
    snprintf(dir, sizeof dir, "%.*s", (int)(slash == path ? 1 : slash - path), path);
  } else {
    snprintf(dir, sizeof dir, ".");
  }
  if (stat(dir, &st) != 0)
    return tr_fail(err, TR_EOUTPUT, "cannot write output '%s': folder '%s' does not exist", path, dir);
  if (access(dir, W_OK) != 0)
    return tr_fail(err, TR_EOUTPUT, "cannot write output '%s': folder '%s' is not writable", path, dir);
  return TR_OK;
}

int tr_output_create(tr_output *out, const tr_input *in, const char *path, const char *format,
                     const char *const *creation_options, GDALDataType type, int bands,
                     int has_nodata, double nodata, tr_error *err) {
  memset(out, 0, sizeof *out);
  int st = check_destination(path, err);
  if (st) return st;
  out->driver = pick_driver(path, format, err, &st);
  if (!out->driver) return st ? st : tr_fail(err, TR_EOUTPUT, "no GTiff driver in this GDAL");
  out->rows = in->rows;
  out->cols = in->cols;
  out->final_path = strdup(path);
  GDALDriverH create_drv = out->driver;
  if (!GDALGetMetadataItem(out->driver, GDAL_DCAP_CREATE, NULL)) {
    out->copy_at_end = 1;
    create_drv = GDALGetDriverByName("GTiff");
    out->tmp_path = tmp_name(path, "stage.tif");
    out->copy_tmp_path = tmp_name(path, "tmp");
  } else {
    out->tmp_path = tmp_name(path, "tmp");
  }
  if (!out->final_path || !out->tmp_path || (out->copy_at_end && !out->copy_tmp_path)) {
    tr_output_abort(out);
    return tr_fail(err, TR_ENOMEM, "out of memory");
  }
  gdal_capture c;
  capture_begin(&c);
  out->bands = bands;
  out->ds = GDALCreate(create_drv, out->tmp_path, (int)in->cols, (int)in->rows, bands, type,
                       out->copy_at_end ? NULL : (char **)creation_options);
  if (out->ds) {
    out->band = GDALGetRasterBand(out->ds, 1);
    if (in->has_gt) GDALSetGeoTransform(out->ds, (double *)in->gt);
    if (in->wkt) GDALSetProjection(out->ds, in->wkt);
    for (int b = 1; has_nodata && b <= bands; b++) GDALSetRasterNoDataValue(GDALGetRasterBand(out->ds, b), nodata);
  }
  capture_end();
  if (!out->ds) {
    int nospace = c.nospace;
    tr_output_abort(out);
    return tr_fail(err, nospace ? TR_ENOSPC : TR_EOUTPUT, "cannot create output '%s': %s", path,
                   why(&c, "the driver refused"));
  }
  return TR_OK;
}

int tr_output_write(tr_output *out, int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                    const void *src, GDALDataType type, int64_t stride, tr_error *err) {
  gdal_capture c;
  capture_begin(&c);
  const GSpacing es = GDALGetDataTypeSizeBytes(type);
  const GSpacing px = es * out->bands;
  CPLErr e = GDALDatasetRasterIOEx(out->ds, GF_Write, (int)col0, (int)row0, (int)cols, (int)rows,
                                   (void *)src, (int)cols, (int)rows, type, out->bands, NULL, px,
                                   (GSpacing)stride * px, es, NULL);
  capture_end();
  if (e != CE_None || c.failed)
    return tr_fail(err, c.nospace ? TR_ENOSPC : TR_EOUTPUT, "cannot write output '%s': %s",
                   out->final_path, why(&c, "write error"));
  return TR_OK;
}

int tr_output_commit(tr_output *out, tr_error *err) {
  gdal_capture c;
  capture_begin(&c);
  GDALFlushCache(out->ds);
  GDALClose(out->ds);
  out->ds = NULL;
  const char *ready = out->tmp_path;
  if (!c.failed && out->copy_at_end) {
    GDALDatasetH stage = GDALOpen(out->tmp_path, GA_ReadOnly);
    GDALDatasetH cp = stage ? GDALCreateCopy(out->driver, out->copy_tmp_path, stage, FALSE, NULL, NULL, NULL) : NULL;
    if (!cp && !c.failed) {
      c.failed = 1;
      snprintf(c.msg, sizeof c.msg, "the %s driver could not write this raster", GDALGetDriverShortName(out->driver));
    }
    if (cp) GDALClose(cp);
    if (stage) GDALClose(stage);
    GDALDeleteDataset(GDALGetDriverByName("GTiff"), out->tmp_path);
    ready = out->copy_tmp_path;
  }
  if (!c.failed) {
    /* Replace an existing destination the way gdaldem does: delete, then
     * move ours into place. */
    struct stat st;
    if (stat(out->final_path, &st) == 0) {
      GDALDriverH d = GDALIdentifyDriver(out->final_path, NULL);
      if (!d || GDALDeleteDataset(d, out->final_path) != CE_None) unlink(out->final_path);
    }
    if (GDALRenameDataset(out->driver, out->final_path, ready) != CE_None && !c.failed) {
      c.failed = 1;
      snprintf(c.msg, sizeof c.msg, "cannot rename temporary file into place");
    }
  }
  capture_end();
  if (c.failed) {
    int st = c.nospace ? TR_ENOSPC : TR_EOUTPUT;
    tr_fail(err, st, "cannot write output '%s': %s", out->final_path, c.msg);
    tr_output_abort(out);
    return st;
  }
  free(out->final_path);
  free(out->tmp_path);
  free(out->copy_tmp_path);
  memset(out, 0, sizeof *out);
  return TR_OK;
}

void tr_output_abort(tr_output *out) {
  gdal_capture c;
  capture_begin(&c);
  if (out->ds) GDALClose(out->ds);
  out->ds = NULL;
  GDALDriverH gtiff = GDALGetDriverByName("GTiff");
  struct stat st;
  if (out->tmp_path && stat(out->tmp_path, &st) == 0) {
    if (GDALDeleteDataset(out->copy_at_end ? gtiff : out->driver, out->tmp_path) != CE_None)
      unlink(out->tmp_path);
  }
  if (out->copy_tmp_path && stat(out->copy_tmp_path, &st) == 0) {
    if (GDALDeleteDataset(out->driver, out->copy_tmp_path) != CE_None) unlink(out->copy_tmp_path);
  }
  capture_end();
  free(out->final_path);
  free(out->tmp_path);
  free(out->copy_tmp_path);
  memset(out, 0, sizeof *out);
}
