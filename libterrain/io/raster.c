/*
 * raster.c - GDAL input and output with clear errors and no partial files.
 *
 * GDAL reports problems through a per-thread error handler that prints by
 * default; a library must not print, so every GDAL call here runs under a
 * capturing handler (gdal_capture) that keeps the first failure message. The
 * caller turns it into one tr_error line naming the file.
 *
 * Outputs are created as "<dir>/.<name>.terrafort-<pid>-<host>.tmp<ext>"
 * and renamed with GDALRenameDataset (which also moves side-car files) once
 * everything, including the final flush on close, succeeded. Drivers that can
 * only CreateCopy (PNG, JPEG, AAIGrid, ...) get an intermediate GTiff
 * (".stage.tif") that is copied at commit time, under the run's progress
 * callback so a cancel stops the copy. A process killed outright (SIGKILL)
 * cannot clean up: the next output created in that folder removes the
 * temporaries whose process is gone (same host tag, no such PID).
 */
#include "raster.h"
#include "held.h"
#include "side_file.h"
#include "tmp_files.h"
#include "written.h"

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>
#include <ctype.h>
#include <gdal_utils.h>
#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <ogr_srs_api.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
  int failed;
  int nospace;
  char msg[512];
  char warning[512];  /* the first warning (GDALValidateCreationOptions reports through them) */
} gdal_capture;

static void CPL_STDCALL capture_handler(CPLErr cls, CPLErrorNum no, const char *msg) {
  gdal_capture *c = (gdal_capture *)CPLGetErrorHandlerUserData();
  if (c && cls == CE_Warning && !c->warning[0]) snprintf(c->warning, sizeof c->warning, "%s", msg);
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

/* GDAL's NUM_THREADS option for a run of `threads` threads (input decoding,
 * output compression), added to a list of options. */
static char **with_threads(char **opts, int threads) {
  char n[32];
  snprintf(n, sizeof n, "%d", threads > 0 ? threads : 1);
  return CSLSetNameValue(opts, "NUM_THREADS", n);
}

/* GDAL's own threads (a GeoTIFF's block decoding under NUM_THREADS) have no
 * capture of ours: their errors go to the process's handler, which would
 * print them as a second line ("ERROR 1: ZIPDecode: ..."). Once an input is
 * opened with decoding threads, the process's handler is this one: while one
 * of our reads is in flight (reads_in_flight) it keeps the first failure for
 * the read that fails (worker_error) and drops warnings, as the reading
 * thread's capture does (cli_fuzz: a damaged directory's warning, printed by
 * a decoding thread, was a second line); everything else, and everything
 * outside our reads (a program using libterrain has its own), goes on to the
 * handler before it. */
static pthread_mutex_t worker_mu = PTHREAD_MUTEX_INITIALIZER;
static char worker_msg[512];
static CPLErrorHandler worker_prev;
static pthread_once_t worker_once = PTHREAD_ONCE_INIT;
static int reads_in_flight;

static void CPL_STDCALL worker_handler(CPLErr cls, CPLErrorNum no, const char *msg) {
  if (cls >= CE_Warning && __atomic_load_n(&reads_in_flight, __ATOMIC_ACQUIRE) > 0) {
    /* a decoding thread's warning (it reads the TIFF directory again: a
     * damaged one warns there) is as quiet as the reading thread's own */
    if (cls == CE_Warning) return;
    pthread_mutex_lock(&worker_mu);
    if (!worker_msg[0]) snprintf(worker_msg, sizeof worker_msg, "%s", msg);
    pthread_mutex_unlock(&worker_mu);
    return;
  }
  if (worker_prev) worker_prev(cls, no, msg);
  else CPLDefaultErrorHandler(cls, no, msg);
}

static void worker_install(void) { worker_prev = CPLSetErrorHandler(worker_handler); }

/* The first failure a GDAL thread reported (taken: the next read starts
 * afresh), or `fallback`. */
static const char *worker_error(char *buf, size_t n, const char *fallback) {
  pthread_mutex_lock(&worker_mu);
  const int have = worker_msg[0] != 0;
  if (have) snprintf(buf, n, "%s", worker_msg);
  worker_msg[0] = 0;
  pthread_mutex_unlock(&worker_mu);
  return have ? buf : fallback;
}

void tr_io_cache_plan(const tr_run_opts *run, int mb) {
  if (run && run->gdal_cache) run->gdal_cache((int64_t)mb << 20, run->gdal_cache_user);
}

/* The one place GDAL's cache is set, called by the program only: a runner
 * setting it would change the cache under a concurrent call's feet. */
void tr_gdal_cache_apply(int64_t bytes, void *user) {
  (void)user;
  if (!CPLGetConfigOption("GDAL_CACHEMAX", NULL)) GDALSetCacheMax64((GIntBig)bytes); /* env or --config */
}

int tr_output_copy_cache_mb(const tr_output *out) {
  if (!out->copy_at_end) return 0;
  const char *bs = CSLFetchNameValue(out->options, "BLOCKSIZE");
  const int64_t block = bs && atoi(bs) > 0 ? atoi(bs) : 512;
  const int64_t bytes = out->cols * block * GDALGetDataTypeSizeBytes(out->type) * (out->bands > 0 ? out->bands : 1);
  const int64_t mb = (bytes >> 20) + 1;
  return mb < 16 ? 16 : mb > INT32_MAX ? INT32_MAX : (int)mb;
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

/* A GDAL name rather than a file: "/vsi..." or "DRIVER:..." (NETCDF:f.nc:var,
 * GPKG:f.gpkg:table, ...; two or more letters before the colon). */
static int gdal_name(const char *path) {
  if (!strncmp(path, "/vsi", 4)) return 1;
  const char *colon = strchr(path, ':');
  if (!colon || colon - path < 2) return 0;
  for (const char *p = path; p < colon; p++)
    if (!isalnum((unsigned char)*p) && *p != '_') return 0;
  return 1;
}

/* What a file that is not regular is, for the error line; NULL when regular. */
const char *tr_file_not_regular(mode_t m) {
  if (S_ISREG(m)) return NULL;
  if (S_ISDIR(m)) return "it is a directory";
  if (S_ISFIFO(m)) return "it is a FIFO (named pipe)";
  if (S_ISCHR(m) || S_ISBLK(m)) return "it is a device";
  if (S_ISSOCK(m)) return "it is a socket";
  return "it is not a regular file";
}

static int inspect(tr_input *in, int band, tr_error *err);

/* Sets in->direct when the band is one whose cells pread can fetch as they
 * are: a plain file, GDAL's GTiff driver, one Float32 band, no compression
 * and no NBITS, strips the raster's width, a little-endian TIFF on a
 * little-endian machine, and every strip present and whole inside the file.
 * Anything else (and any doubt) leaves the reads to GDAL. */
static void direct_open(tr_input *in) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  const char *off_env = getenv("TERRAFORT_GDAL_READS");
  if (off_env && *off_env && strcmp(off_env, "0")) return;
  if (!in->has_id || in->type != GDT_Float32 || GDALGetRasterCount(in->ds) != 1) return;
  GDALDriverH drv = GDALGetDatasetDriver(in->ds);
  if (!drv || strcmp(GDALGetDriverShortName(drv), "GTiff") != 0) return;
  if (GDALGetMetadataItem(in->ds, "COMPRESSION", "IMAGE_STRUCTURE") ||
      GDALGetMetadataItem(in->band, "NBITS", "IMAGE_STRUCTURE"))
    return;
  int bx = 0, by = 0;
  GDALGetBlockSize(in->band, &bx, &by);
  if (bx != in->cols || by < 1) return;
  const int fd = open(in->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  unsigned char hdr[2];
  struct stat st;
  const int64_t nstrips = (in->rows + by - 1) / by;
  uint64_t *off = NULL;
  if (pread(fd, hdr, 2, 0) != 2 || hdr[0] != 'I' || hdr[1] != 'I' || fstat(fd, &st) != 0 ||
      !(off = malloc((size_t)nstrips * sizeof *off)))
    goto no;
  for (int64_t s = 0; s < nstrips; s++) {
    char key[64];
    snprintf(key, sizeof key, "BLOCK_OFFSET_0_%lld", (long long)s);
    const char *o = GDALGetMetadataItem(in->band, key, "TIFF");
    snprintf(key, sizeof key, "BLOCK_SIZE_0_%lld", (long long)s);
    const char *z = GDALGetMetadataItem(in->band, key, "TIFF");
    const int64_t rows = in->rows - s * by < by ? in->rows - s * by : by;
    const unsigned long long at = o ? strtoull(o, NULL, 10) : 0, bytes = z ? strtoull(z, NULL, 10) : 0;
    if (!at || bytes != (unsigned long long)(rows * in->cols * 4) || at + bytes > (unsigned long long)st.st_size)
      goto no;
    off[s] = at;
  }
  in->direct = 1;
  in->direct_fd = fd;
  in->strip_rows = by;
  in->strip_off = off;
  return;
no:
  free(off);
  close(fd);
#else
  (void)in;
#endif
}

int tr_input_open(tr_input *in, const char *path, int band, tr_error *err) {
  return tr_input_open_threads(in, path, band, 1, err);
}

int tr_input_open_threads(tr_input *in, const char *path, int band, int threads, tr_error *err) {
  memset(in, 0, sizeof *in);
  in->path = path;
  struct stat st;
  /* A plain path is checked here (GDAL's messages for these are vague, and
   * opening a FIFO would block); a GDAL name that is not a file goes to GDAL. */
  const int plain = stat(path, &st) == 0;
  if (!plain && !gdal_name(path))
    return tr_fail(err, TR_EINPUT, "cannot open input '%s': %s", path, strerror(errno));
  if (plain) {
    const char *what = tr_file_not_regular(st.st_mode);
    if (what) return tr_fail(err, TR_EINPUT, "cannot open input '%s': %s", path, what);
    if (access(path, R_OK) != 0)
      return tr_fail(err, TR_EINPUT, "cannot open input '%s': %s", path, strerror(errno));
    if (st.st_size == 0) return tr_fail(err, TR_EINPUT, "cannot open input '%s': the file is empty", path);
    in->has_id = 1;
    in->dev = st.st_dev;
    in->ino = st.st_ino;
  }

  gdal_capture c;
  capture_begin(&c);
  char **oo = NULL;
  if (threads > 1 && !CPLGetConfigOption("GDAL_NUM_THREADS", NULL)) {
    GDALDriverH d = GDALIdentifyDriver(path, NULL);
    if (d && !strcmp(GDALGetDriverShortName(d), "GTiff")) {
      oo = with_threads(oo, threads);
      pthread_once(&worker_once, worker_install);
    }
  }
  in->ds = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, (const char *const *)oo, NULL);
  CSLDestroy(oo);
  capture_end();
  if (!in->ds)
    return tr_fail(err, TR_EINPUT, "cannot open input '%s': %s", path,
                   why(&c, plain ? "not a raster format GDAL recognises"
                                 : "no such file, or not a raster GDAL recognises"));
  /* GDAL reads some metadata lazily and reports damage in it (GeoTIFF keys,
   * ...) as it goes on without it: quietly, as a library must */
  capture_begin(&c);
  const int status = inspect(in, band, err);
  if (!status) direct_open(in);
  capture_end();
  if (status) tr_input_close(in);
  return status;
}

/* The opened dataset's band, size, type, nodata and georeferencing. */
static int inspect(tr_input *in, int band, tr_error *err) {
  const char *path = in->path;
  int nbands = GDALGetRasterCount(in->ds);
  if (nbands < 1) return tr_fail(err, TR_EINPUT, "input '%s' has no raster bands", path);
  if (band < 1 || band > nbands)
    return tr_fail(err, TR_EBAND, "input '%s' has %d band%s; band %d does not exist", path,
                   nbands, nbands == 1 ? "" : "s", band);
  in->band = GDALGetRasterBand(in->ds, band);
  in->rows = GDALGetRasterYSize(in->ds);
  in->cols = GDALGetRasterXSize(in->ds);
  in->type = GDALGetRasterDataType(in->band);
  if (in->rows < 1 || in->cols < 1) return tr_fail(err, TR_EINPUT, "input '%s' has no cells", path);
  if (!type_supported(in->type)) {
    const char *tn = GDALGetDataTypeName(in->type);
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

int tr_input_same_size(const tr_input *in, const char *path, const tr_input *ref, const char *ref_what,
                       const char *ref_path, tr_error *err) {
  if (in->rows == ref->rows && in->cols == ref->cols) return TR_OK;
  return tr_fail(err, TR_EINPUT, "'%s' is %lld x %lld cells but %s'%s' is %lld x %lld", path, (long long)in->cols,
                 (long long)in->rows, ref_what, ref_path, (long long)ref->cols, (long long)ref->rows);
}

void tr_input_close(tr_input *in) {
  gdal_capture c;
  capture_begin(&c);
  if (in->ds) GDALClose(in->ds);
  capture_end();
  free(in->wkt);
  in->ds = NULL;
  in->wkt = NULL;
  if (in->direct) {
    close(in->direct_fd);
    free(in->strip_off);
    in->direct = 0;
    in->strip_off = NULL;
  }
}

int tr_input_minmax_rows(const tr_input *in, int64_t row0, int64_t rows, double mm[2], int *valid, tr_error *err) {
  *valid = 0;
  gdal_capture c;
  capture_begin(&c);
  GDALDatasetH win = NULL;
  GDALRasterBandH b = in->band;
  if (row0 != 0 || rows != in->rows) {
    char band[32], r0[32], nc[32], nr[32];
    snprintf(band, sizeof band, "%d", GDALGetBandNumber(in->band));
    snprintf(r0, sizeof r0, "%lld", (long long)row0);
    snprintf(nc, sizeof nc, "%lld", (long long)in->cols);
    snprintf(nr, sizeof nr, "%lld", (long long)rows);
    char *args[] = {"-of", "VRT", "-b", band, "-srcwin", "0", r0, nc, nr, NULL};
    GDALTranslateOptions *o = GDALTranslateOptionsNew(args, NULL);
    win = o ? GDALTranslate("", in->ds, o, NULL) : NULL;
    GDALTranslateOptionsFree(o);
    if (!win) {
      capture_end();
      return tr_fail(err, TR_EINPUT, "cannot read input '%s' (rows %lld-%lld): %s", in->path, (long long)row0,
                     (long long)(row0 + rows - 1), why(&c, "cannot make a window over them"));
    }
    b = GDALGetRasterBand(win, 1);
  }
  /* no valid cell: GDAL fails the call; that is an answer, not an error */
  const CPLErr e = GDALComputeRasterMinMax(b, FALSE, mm);
  if (win) GDALClose(win);
  capture_end();
  *valid = e != CE_Failure;
  return TR_OK;
}

/* The window at (row0, col0) of rows x cols cells of `type` (Float32 or
 * Int32, 4 bytes) into dst (stride cells per row), clipped to the raster:
 * the cells outside get `outside`'s 4 bytes. *at: where the clipped part
 * starts in dst, *nr x *nc its size (0 when nothing is inside). */
static int read_window(tr_input *in, int64_t row0, int64_t col0, int64_t rows, int64_t cols, void *dst, int64_t stride,
                       GDALDataType type, const void *outside, char **at, int64_t *nr, int64_t *nc, tr_error *err) {
  const int64_t r0 = row0 < 0 ? 0 : row0, c0 = col0 < 0 ? 0 : col0;
  const int64_t r1 = row0 + rows > in->rows ? in->rows : row0 + rows;
  const int64_t c1 = col0 + cols > in->cols ? in->cols : col0 + cols;
  char *d = dst;
  if (r0 > row0 || c0 > col0 || r1 < row0 + rows || c1 < col0 + cols)
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 0; c < cols; c++) memcpy(d + 4 * (r * stride + c), outside, 4);
  *nr = r1 > r0 ? r1 - r0 : 0, *nc = c1 > c0 ? c1 - c0 : 0;
  *at = d + 4 * ((r0 - row0) * stride + (c0 - col0));
  if (!*nr || !*nc) return TR_OK;
  if (in->direct && type == GDT_Float32) {
    /* each row's cells straight from its strip */
    for (int64_t r = r0; r < r1; r++) {
      const int64_t s = r / in->strip_rows;
      const uint64_t off = in->strip_off[s] + (uint64_t)(((r - s * in->strip_rows) * in->cols + c0) * 4);
      char *q = *at + 4 * (r - r0) * stride;
      size_t want = (size_t)(*nc * 4), got = 0;
      while (got < want) {
        const ssize_t k = pread(in->direct_fd, q + got, want - got, (off_t)(off + got));
        if (k > 0) got += (size_t)k;
        else if (k < 0 && errno == EINTR) continue;
        else
          return tr_fail(err, TR_EINPUT, "cannot read input '%s' (rows %lld-%lld): %s", in->path, (long long)r0,
                         (long long)r1 - 1, k < 0 ? strerror(errno) : "read error (truncated or corrupt file?)");
      }
    }
    return TR_OK;
  }
  gdal_capture c;
  capture_begin(&c);
  __atomic_add_fetch(&reads_in_flight, 1, __ATOMIC_ACQ_REL);
  CPLErr e = GDALRasterIOEx(in->band, GF_Read, (int)c0, (int)r0, (int)*nc, (int)*nr, *at, (int)*nc, (int)*nr, type, 4,
                            (GSpacing)(stride * 4), NULL);
  __atomic_sub_fetch(&reads_in_flight, 1, __ATOMIC_ACQ_REL);
  capture_end();
  if (e != CE_None) {
    char wbuf[512];
    return tr_fail(err, TR_EINPUT, "cannot read input '%s' (rows %lld-%lld): %s", in->path, (long long)r0,
                   (long long)r1 - 1,
                   why(&c, worker_error(wbuf, sizeof wbuf, "read error (truncated or corrupt file?)")));
  }
  return TR_OK;
}

int tr_input_read_f32(tr_input *in, int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                      float *dst, int64_t stride, tr_error *err) {
  /* cells outside the raster are NaN */
  const float nan = NAN;
  char *at;
  int64_t nr, nc;
  const int st = read_window(in, row0, col0, rows, cols, dst, stride, GDT_Float32, &nan, &at, &nr, &nc, err);
  if (st || !(in->type == GDT_Float32 || in->type == GDT_Float64)) return st;
  /* +-Inf (and Float64 values beyond Float32's range, which GDAL turns
   * into +-Inf) become NaN: every kernel treats NaN as nodata. */
  for (int64_t r = 0; r < nr; r++) {
    float *q = (float *)at + r * stride;
    /* a select, not a conditional store, so that the loop vectorises */
    for (int64_t k = 0; k < nc; k++) q[k] = fabsf(q[k]) == INFINITY ? NAN : q[k];
  }
  return TR_OK;
}

int tr_input_read_i32(tr_input *in, int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                      int32_t *dst, int64_t stride, tr_error *err) {
  const int32_t outside = INT32_MIN;
  char *at;
  int64_t nr, nc;
  return read_window(in, row0, col0, rows, cols, dst, stride, GDT_Int32, &outside, &at, &nr, &nc, err);
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

/* ------------------------------------------------------ temporary names */

#define TMP_MARK TR_TMP_MARK

static uint32_t fnv1a(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 16777619u;
  }
  return h;
}

/* The host tag in temporary names: a process of another machine writing to a
 * shared folder is never taken for a dead one of this machine. */
uint32_t tr_tmp_host_tag(void) {
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  host[sizeof host - 1] = 0;
  return fnv1a(host);
}

/* "<dir>/.<stem>.terrafort-<pid>-<host>.<tag>[<seq>]<ext>" for destination
 * path (seq tells apart the outputs of one process; 0 is left out); ext: the
 * destination's, or `ext_override` when given. A stem that would make the
 * name longer than NAME_MAX is cut and followed by "~" and a hash of the
 * destination's name. */
static char *tmp_name(const char *path, const char *tag, int seq, const char *ext_override) {
  const char *slash = strrchr(path, '/');
  const size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
  const char *base = slash ? slash + 1 : path;
  const char *dot = strrchr(base, '.');
  if (dot == base) dot = NULL; /* ".name": no extension */
  const char *ext = ext_override ? ext_override : dot ? dot : "";
  if (strlen(ext) > 32) ext = "";
  size_t stem = dot ? (size_t)(dot - base) : strlen(base);
  char mid[96], hash[16] = "";
  snprintf(mid, sizeof mid, "%s%ld-%08x.%s", TMP_MARK, (long)getpid(), (unsigned)tr_tmp_host_tag(), tag);
  if (seq > 0) snprintf(mid + strlen(mid), sizeof mid - strlen(mid), "%d", seq);
  const size_t fixed = 1 + strlen(mid) + strlen(ext);
  if (fixed + stem > NAME_MAX) {
    snprintf(hash, sizeof hash, "~%08x", (unsigned)fnv1a(base));
    stem = NAME_MAX - fixed - strlen(hash);
  }
  const size_t n = dirlen + 1 + stem + strlen(hash) + strlen(mid) + strlen(ext) + 1;
  char *s = malloc(n);
  if (!s) return NULL;
  snprintf(s, n, "%.*s.%.*s%s%s%s", (int)dirlen, path, (int)stem, base, hash, mid, ext);
  return s;
}

/* Temporaries this process named: their names differ. */
static int next_seq(void) {
  static int made;
  return __atomic_fetch_add(&made, 1, __ATOMIC_RELAXED);
}

char *tr_output_scratch_folder(const char *path) {
  const char *slash = strrchr(path, '/');
  const int dirlen = slash ? (int)(slash - path + 1) : 0;
  const size_t n = (size_t)dirlen + 96;
  char *s = malloc(n);
  if (s)
    snprintf(s, n, "%.*s%s%ld-%08x.tmpfolder%d", dirlen, path, TMP_MARK, (long)getpid(), (unsigned)tr_tmp_host_tag(), next_seq());
  return s;
}

char *tr_output_scratch_name(const char *path, const char *tag) {
  char t[64];
  snprintf(t, sizeof t, "tmp%s", tag);
  char *s = tmp_name(path, t, 0, ".tif");
  if (s) tr_tmp_track(s);
  return s;
}

char *tr_output_side_tmp_name(const char *path) {
  static int sides; /* side files this process wrote: their temporaries' names differ */
  char *s = tmp_name(path, "tmpside", __atomic_fetch_add(&sides, 1, __ATOMIC_RELAXED), NULL);
  if (s) tr_tmp_track(s);
  return s;
}

void tr_output_scratch_remove(const char *path) {
  if (!path || !path[0]) return;
  struct stat st;
  if (stat(path, &st) == 0) {
    gdal_capture c;
    capture_begin(&c);
    GDALDriverH d = GDALIdentifyDriver(path, NULL);
    if (!d || GDALDeleteDataset(d, path) != CE_None) unlink(path);
    capture_end();
  }
  tr_tmp_untrack(path);
}

/* The pid of a temporary name of this host ("...terrafort-<pid>-<host>.tmp..."
 * or ".stage..."), or 0 when `name` is not one. */
static long tmp_pid(const char *name, uint32_t host) {
  if (name[0] != '.') return 0;
  for (const char *m = strstr(name, TMP_MARK); m; m = strstr(m + 1, TMP_MARK)) {
    const char *p = m + strlen(TMP_MARK);
    char *end;
    errno = 0;
    long pid = strtol(p, &end, 10);
    if (end == p || errno || pid <= 0 || *end != '-') continue;
    unsigned h = 0;
    int k;
    for (k = 1; k <= 8 && isxdigit((unsigned char)end[k]); k++) h = h * 16 + (unsigned)(isdigit((unsigned char)end[k]) ? end[k] - '0' : (tolower((unsigned char)end[k]) - 'a' + 10));
    if (k != 9 || end[9] != '.' || h != host) continue;
    if (strncmp(end + 10, "tmp", 3) != 0 && strncmp(end + 10, "stage", 5) != 0) continue;
    return pid;
  }
  return 0;
}

/* Is process pid gone? A zombie counts as gone: it will never clean up (and
 * where nothing reaps orphans, as in some containers, it stays a zombie). */
static int process_gone(long pid) {
  if (kill((pid_t)pid, 0) != 0) return errno == ESRCH;
  char p[64], buf[256];
  snprintf(p, sizeof p, "/proc/%ld/stat", pid);
  FILE *f = fopen(p, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *close_paren = strrchr(buf, ')'); /* "pid (comm) S ..." */
  return close_paren && close_paren[1] == ' ' && (close_paren[2] == 'Z' || close_paren[2] == 'X');
}

/* Removes the regular files in folder `dir`, then the folder (when that
 * leaves it empty). */
static void remove_files_and_folder(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      char f[PATH_MAX];
      struct stat st;
      if (snprintf(f, sizeof f, "%s/%s", dir, e->d_name) < (int)sizeof f && lstat(f, &st) == 0 && S_ISREG(st.st_mode))
        unlink(f);
    }
    closedir(d);
  }
  rmdir(dir);
}

/* Removes the regular files (and the folders of files) in folder `dir` that
 * are temporaries of this host's processes that no longer exist (a SIGKILL,
 * a killed MPI job). */
static void remove_stale(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  const uint32_t host = tr_tmp_host_tag();
  struct dirent *e;
  while ((e = readdir(d))) {
    long pid = tmp_pid(e->d_name, host);
    if (pid <= 0 || pid == (long)getpid() || pid > INT_MAX) continue;
    if (!process_gone(pid)) continue; /* alive (or not ours to judge) */
    char f[PATH_MAX];
    struct stat st;
    if (snprintf(f, sizeof f, "%s/%s", dir, e->d_name) >= (int)sizeof f || lstat(f, &st) != 0) continue;
    if (S_ISREG(st.st_mode)) unlink(f);
    else if (S_ISDIR(st.st_mode)) remove_files_and_folder(f); /* a network's (tr_output_scratch_folder) */
  }
  closedir(d);
}

/* Removes every file of one temporary (side-cars of a partial CreateCopy
 * included): the names that begin as tmp_path's up to the end of its tag. The
 * temporary's own mark is the last one: a scratch output (flowgraph's directions,
 * tr_output_scratch_name) has one in its own name, and matching from that one
 * removed the other scratch files named after it (the filled DEM of --slope). */
static void remove_ours(const char *tmp_path) {
  if (!tmp_path) return;
  const char *slash = strrchr(tmp_path, '/');
  const char *base = slash ? slash + 1 : tmp_path;
  const char *m = NULL;
  for (const char *k = strstr(base, TMP_MARK); k; k = strstr(k + 1, TMP_MARK)) m = k;
  const char *tag = m ? strchr(m + strlen(TMP_MARK), '.') : NULL;
  if (!tag) return;
  const char *tag_end = strchr(tag + 1, '.');
  const size_t plen = tag_end ? (size_t)(tag_end - base) : strlen(base);
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash == tmp_path ? 1 : slash - tmp_path) : 1,
           slash ? tmp_path : ".");
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, base, plen) != 0 || (e->d_name[plen] != '.' && e->d_name[plen] != 0)) continue;
    char f[PATH_MAX];
    struct stat st;
    if (snprintf(f, sizeof f, "%s/%s", dir, e->d_name) < (int)sizeof f && lstat(f, &st) == 0 && S_ISREG(st.st_mode))
      unlink(f);
  }
  closedir(d);
}

/* ------------------------------------------------------------- checks */

int tr_path_same_file(const char *a, const char *b) {
  if (!a || !b) return 0;
  if (!strcmp(a, b)) return 1;
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The folder of `path` into buf ("." when it has none). */
static void folder_of(const char *path, char *buf, size_t n) {
  const char *slash = strrchr(path, '/');
  snprintf(buf, n, "%.*s", slash ? (int)(slash == path ? 1 : slash - path) : 1, slash ? path : ".");
}

/* The files input `in` reads, found when an output is checked (NULL when
 * there is no dataset): its path's own file and every file GDAL lists. */
static int input_files(const tr_input *in, tr_file_ids *ids, tr_error *err) {
  memset(ids, 0, sizeof *ids);
  if (!in || !in->ds) return TR_OK;
  if (tr_file_ids_add_path(ids, in->path) || tr_file_ids_add_dataset(ids, in->ds)) {
    tr_file_ids_free(ids);
    return tr_fail(err, TR_ENOMEM, "out of memory");
  }
  return TR_OK;
}

static int refuse_one(const char *path, const char *what, const tr_input *in, const tr_file_ids *ids,
                      tr_error *err) {
  /* GDAL forms names in 2048-byte buffers (CPLFormFilename): a longer one
   * would be written and then fail on its side files; the temporary's name
   * adds up to 64 bytes */
  if (strlen(path) > TR_GDAL_NAME_MAX)
    return tr_fail(err, TR_EOUTPUT, "cannot write %s '%s': a name of %zu bytes, GDAL handles at most %d here", what,
                   path, strlen(path), TR_GDAL_NAME_MAX);
  /* and the file's own name: too long for its folder, it was found only
   * when the finished temporary was renamed */
  const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
  if (strlen(base) > NAME_MAX)
    return tr_fail(err, TR_EOUTPUT, "cannot write %s '%s': a file name of %zu bytes, the limit is %d", what,
                   path, strlen(base), NAME_MAX);
  struct stat st;
  if (stat(path, &st) == 0) {
    const char *why_not = tr_file_not_regular(st.st_mode);
    if (why_not) return tr_fail(err, TR_EOUTPUT, "cannot write %s '%s': %s", what, path, why_not);
    if (in && in->has_id && st.st_dev == in->dev && st.st_ino == in->ino)
      return tr_fail(err, TR_EOUTPUT, "cannot write %s '%s': it is the input file", what, path);
  }
  const int k = ids ? tr_file_ids_find(ids, path) : -1;
  if (k >= 0)
    return tr_fail(err, TR_EOUTPUT, "cannot write %s '%s': the input '%s' reads it ('%s')", what, path, in->path,
                   ids->name[k]);
  /* its folder: found missing or read-only only after other outputs of the
   * run were written, it would leave them */
  char folder[PATH_MAX];
  folder_of(path, folder, sizeof folder);
  if (stat(folder, &st) != 0 || !S_ISDIR(st.st_mode))
    return tr_fail(err, TR_EOUTPUT, "cannot write %s '%s': folder '%s' does not exist", what, path, folder);
  if (access(folder, W_OK) != 0)
    return tr_fail(err, TR_EOUTPUT, "cannot write %s '%s': folder '%s' is not writable", what, path, folder);
  return TR_OK;
}

/* Whether a and b name one place: the same file, or (either not there yet)
 * the same name in the same folder, the folders resolved. */
static int same_place(const char *a, const char *b) {
  if (tr_path_same_file(a, b)) return 1;
  const char *sa = strrchr(a, '/'), *sb = strrchr(b, '/');
  if (strcmp(sa ? sa + 1 : a, sb ? sb + 1 : b)) return 0;
  char fa[PATH_MAX], fb[PATH_MAX], ra[PATH_MAX], rb[PATH_MAX];
  folder_of(a, fa, sizeof fa);
  folder_of(b, fb, sizeof fb);
  return realpath(fa, ra) && realpath(fb, rb) && !strcmp(ra, rb);
}

/* The caller's files (TR_KEEP_ENV): output `path` must be none of them. */
static int refuse_kept(const char *path, const char *what, tr_error *err) {
  const char *env = getenv(TR_KEEP_ENV);
  if (!env || !*env) return TR_OK;
  int st = TR_OK;
  for (const char *line = env; *line && !st;) {
    const char *end = strchr(line, '\n'), *tab = strchr(line, '\t');
    const size_t len = end ? (size_t)(end - line) : strlen(line);
    if (tab && tab < line + len) {
      char role[256], kept[PATH_MAX];
      snprintf(role, sizeof role, "%.*s", (int)(tab - line), line);
      const size_t plen = len - (size_t)(tab + 1 - line);
      if (plen < sizeof kept) {
        memcpy(kept, tab + 1, plen);
        kept[plen] = 0;
        if (same_place(path, kept))
          st = tr_fail(err, TR_EOUTPUT, "cannot write %s '%s': it is %s ('%s')", what, path, role, kept);
      }
    }
    line += len + (end != NULL);
  }
  return st;
}

int tr_output_refuse(const char *path, const char *what, const tr_input *in, tr_error *err) {
  if (!path) return TR_OK;
  tr_file_ids ids;
  int st = input_files(in, &ids, err);
  if (!st) st = refuse_one(path, what, in, &ids, err);
  if (!st) st = refuse_kept(path, what, err);
  tr_file_ids_free(&ids);
  return st;
}

int tr_outputs_refuse(const tr_file_role *outs, int nouts, const tr_file_role *reads, int nreads, const tr_input *in,
                      tr_error *err) {
  tr_file_ids ids;
  int st = input_files(in, &ids, err);
  /* the files behind each read too: a VRT given as --weights reads its
   * sources, GPKG:file:table its container, the points their side files */
  tr_file_ids *behind = nreads > 0 ? calloc((size_t)nreads, sizeof *behind) : NULL;
  if (!st && nreads > 0 && !behind) st = tr_fail(err, TR_ENOMEM, "out of memory");
  for (int r = 0; r < nreads && !st; r++)
    if (tr_file_ids_add_read(&behind[r], reads[r].path)) st = tr_fail(err, TR_ENOMEM, "out of memory");
  for (int i = 0; i < nouts && !st; i++) {
    const char *p = outs[i].path, *what = outs[i].what;
    if (!p) continue;
    /* a report to standard output ("-", io/side_file.h) is no file; two
     * of them are still refused below */
    const int to_stdout = tr_side_is_stdout(p) && tr_side_role(what);
    if (!to_stdout) st = refuse_one(p, what, in, &ids, err);
    if (!st && !to_stdout) st = refuse_kept(p, what, err);
    for (int r = 0; r < nreads && !st && !to_stdout; r++) {
      if (!reads[r].path) continue;
      const int k = tr_file_ids_find(&behind[r], p);
      if (tr_path_same_file(p, reads[r].path))
        st = tr_fail(err, TR_EOUTPUT, "cannot write %s '%s': it is %s ('%s')", what, p, reads[r].what, reads[r].path);
      else if (k >= 0)
        st = tr_fail(err, TR_EOUTPUT, "cannot write %s '%s': %s ('%s') reads it ('%s')", what, p, reads[r].what,
                     reads[r].path, behind[r].name[k]);
    }
    for (int j = i + 1; j < nouts && !st; j++)
      if (outs[j].path && same_place(p, outs[j].path))
        st = tr_fail(err, TR_EOUTPUT, "cannot write %s '%s': it is also %s ('%s')", what, p, outs[j].what,
                     outs[j].path);
  }
  for (int r = 0; r < nreads && behind; r++) tr_file_ids_free(&behind[r]);
  free(behind);
  tr_file_ids_free(&ids);
  return st;
}

/* The destination: refused as tr_output_refuse says; else its folder goes
 * into dir. */
static int check_destination(const char *path, const tr_input *in, char *dir, size_t dirsz, tr_error *err) {
  const int rc = tr_output_refuse(path, "output", in, err);
  if (!rc) folder_of(path, dir, dirsz);
  return rc;
}

/* Where an output named by a symbolic link goes: its target, so the link
 * stays a link (as cp and gdal_translate write through one); `path` itself
 * when it is no link. A dangling link's target is the file it names,
 * relative to the link's folder. */
const char *tr_output_link_target(const char *path, char *buf, size_t n) {
  struct stat st;
  if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode)) return path;
  char *real = realpath(path, NULL);
  if (real) {
    const int fits = snprintf(buf, n, "%s", real) < (int)n;
    free(real);
    return fits ? buf : path;
  }
  char l[PATH_MAX];
  const ssize_t k = readlink(path, l, sizeof l - 1);
  if (k <= 0) return path;
  l[k] = 0;
  const char *slash = strrchr(path, '/');
  const int len = l[0] == '/' || !slash ? snprintf(buf, n, "%s", l) : snprintf(buf, n, "%.*s/%s", (int)(slash - path), path, l);
  return len < (int)n ? buf : path;
}

/* Can driver d create bands of type t? Its list goes to types (empty: any). */
static int driver_holds(GDALDriverH d, GDALDataType t, char *types, size_t n) {
  const char *list = GDALGetMetadataItem(d, GDAL_DMD_CREATIONDATATYPES, NULL);
  types[0] = 0;
  if (!list || !list[0]) return 1;
  snprintf(types, n, "%s", list);
  char **l = CSLTokenizeString(list);
  const int hit = CSLFindString(l, GDALGetDataTypeName(t)) >= 0;
  CSLDestroy(l);
  return hit;
}

/* Integer band types whose values a double holds exactly (up to 32 bits). */
static int int_type(GDALDataType t) {
  return GDALDataTypeIsInteger(t) && !GDALDataTypeIsComplex(t) && GDALGetDataTypeSizeBytes(t) <= 4;
}

static void type_range(GDALDataType t, double *lo, double *hi) {
  int clamped, rounded;
  *lo = GDALAdjustValueToDataType(t, -1e300, &clamped, &rounded);
  *hi = GDALAdjustValueToDataType(t, 1e300, &clamped, &rounded);
}

/* Can a band of type t hold nodata value v exactly? */
static int nodata_fits(GDALDataType t, double v) {
  if (t == GDT_Float64) return 1;
  if (t == GDT_Float32) return isnan(v) || isinf(v) || fabs(v) <= FLT_MAX;
  if (isnan(v) || isinf(v)) return 0;
  if (!GDALDataTypeIsInteger(t)) return 1;
  if (!int_type(t)) return v == floor(v) && fabs(v) < 9007199254740992.0;
  double lo, hi;
  type_range(t, &lo, &hi);
  return v == floor(v) && v >= lo && v <= hi;
}

/* --------------------------------------------------------------- create */

int tr_output_create(tr_output *out, const tr_input *in, const char *path, const char *format,
                     const char *const *creation_options, GDALDataType type, int bands,
                     int has_nodata, double nodata, int threads, tr_error *err) {
  memset(out, 0, sizeof *out);
  if (!path[0]) return tr_fail(err, TR_EUSAGE, "empty output file name");
  int st;
  out->driver = pick_driver(path, format, err, &st);
  if (!out->driver) return st ? st : tr_fail(err, TR_EOUTPUT, "no GTiff driver in this GDAL");
  /* what the driver cannot hold is refused, as gdaldem does: a PNG slope
   * would be cut to bytes */
  const char *dname = GDALGetDriverShortName(out->driver), *tname = GDALGetDataTypeName(type);
  char types[256];
  if (!driver_holds(out->driver, type, types, sizeof types))
    return tr_fail(err, TR_EUSAGE,
                   "output '%s': the %s driver cannot hold this product's %s cells (it writes %s); use GeoTIFF "
                   "(.tif) or a format that does",
                   path, dname, tname ? tname : "?", types);
  if (has_nodata && !nodata_fits(type, nodata))
    return tr_fail(err, TR_EUSAGE, "output '%s': nodata %.17g cannot be represented in a %s band", path, nodata,
                   tname ? tname : "?");
  if (creation_options && creation_options[0]) {
    gdal_capture c;
    capture_begin(&c);
    const int ok = GDALValidateCreationOptions(out->driver, (CSLConstList)creation_options);
    capture_end();
    if (!ok)
      snprintf(out->warning, sizeof out->warning, "-co: %.500s",
               c.warning[0] ? c.warning : why(&c, "the driver does not accept these creation options"));
  }
  char dir[PATH_MAX], target[PATH_MAX];
  /* a link stays: the raster goes to its target */
  path = tr_output_link_target(path, target, sizeof target);
  st = check_destination(path, in, dir, sizeof dir, err);
  if (st) return st;
  remove_stale(dir);
  out->rows = in->rows;
  out->cols = in->cols;
  out->type = type;
  out->has_nodata = has_nodata;
  out->nodata = nodata;
  out->final_path = strdup(path);
  out->options = CSLDuplicate((char **)creation_options);
  /* GDAL compresses a GeoTIFF's (or COG's) blocks on one thread unless
   * told: the run's thread count, as --threads promises (terrafort(1)).
   * The input's decoding threads are tr_input_open_threads'. */
  const char *dn = GDALGetDriverShortName(out->driver);
  if ((!strcmp(dn, "GTiff") || !strcmp(dn, "COG")) && !CSLFetchNameValue(out->options, "NUM_THREADS") &&
      !CPLGetConfigOption("GDAL_NUM_THREADS", NULL))
    out->options = with_threads(out->options, threads);
  const int seq = next_seq();
  GDALDriverH create_drv = out->driver;
  if (!GDALGetMetadataItem(out->driver, GDAL_DCAP_CREATE, NULL)) {
    out->copy_at_end = 1;
    create_drv = GDALGetDriverByName("GTiff");
    out->tmp_path = tmp_name(path, "stage", seq, ".tif");
    out->copy_tmp_path = tmp_name(path, "tmp", seq, NULL);
  } else {
    out->tmp_path = tmp_name(path, "tmp", seq, NULL);
  }
  if (!out->final_path || !out->tmp_path || (out->copy_at_end && !out->copy_tmp_path) ||
      (creation_options && creation_options[0] && !out->options)) {
    tr_output_abort(out);
    return tr_fail(err, TR_ENOMEM, "out of memory");
  }
  /* a signal's handler may unlink them from now on (tmp_files.h) */
  tr_tmp_track(out->tmp_path);
  if (out->copy_tmp_path) tr_tmp_track(out->copy_tmp_path);
  gdal_capture c;
  capture_begin(&c);
  out->bands = bands;
  out->ds = GDALCreate(create_drv, out->tmp_path, (int)in->cols, (int)in->rows, bands, type,
                       out->copy_at_end ? NULL : out->options);
  if (out->ds) {
    tr_tmp_created(out->tmp_path);
    out->band = GDALGetRasterBand(out->ds, 1);
    int bx = 0, by = 0;
    GDALGetBlockSize(out->band, &bx, &by);
    out->flush_blocks = bx < in->cols;
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

/* ---------------------------------------------------------------- write */

/* A floating-point cell as an integer band holds it (see raster.h). */
static double to_int_cell(const tr_output *o, double v, int f32, double lo, double hi) {
  if (isnan(v)) return o->has_nodata ? o->nodata : 0.0;
  if (o->has_nodata && (f32 ? (float)v == (float)o->nodata : v == o->nodata)) return o->nodata;
  double r = floor(v + 0.5);
  if (r < lo) r = lo;
  if (r > hi) r = hi;
  if (o->has_nodata && r == o->nodata) r = r == hi ? hi - 1 : r == lo ? lo + 1 : v >= o->nodata ? r + 1 : r - 1;
  return r;
}

static int out_cancelled(const tr_output *o) { return o->cancelled && o->cancelled(o->progress_user); }

/* A write's progress: go on unless the run is cancelled. */
static int CPL_STDCALL write_progress(double frac, const char *msg, void *user) {
  (void)frac;
  (void)msg;
  return !out_cancelled(user);
}

/* The window starts and ends on the output's block edges (or its raster's). */
static int block_aligned(const tr_output *out, int64_t row0, int64_t col0, int64_t rows, int64_t cols) {
  int bx = 0, by = 0;
  GDALGetBlockSize(out->band, &bx, &by);
  if (bx <= 0 || by <= 0) return 0;
  return col0 % bx == 0 && row0 % by == 0 && ((col0 + cols) % bx == 0 || col0 + cols == out->cols) &&
         ((row0 + rows) % by == 0 || row0 + rows == out->rows);
}

int tr_output_write(tr_output *out, int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                    const void *src, GDALDataType type, int64_t stride, tr_error *err) {
  double *conv = NULL;
  if ((type == GDT_Float32 || type == GDT_Float64) && int_type(out->type)) {
    /* GDAL would turn NaN into 0 and clamp onto the nodata value */
    const int64_t nb = out->bands;
    conv = malloc((size_t)(rows * cols * nb) * sizeof *conv);
    if (!conv) return tr_fail(err, TR_ENOMEM, "out of memory converting cells for '%s'", out->final_path);
    double lo, hi;
    type_range(out->type, &lo, &hi);
    const int f32 = type == GDT_Float32;
    for (int64_t r = 0; r < rows; r++)
      for (int64_t k = 0; k < cols * nb; k++) {
        const int64_t i = r * stride * nb + k;
        const double v = f32 ? (double)((const float *)src)[i] : ((const double *)src)[i];
        conv[r * cols * nb + k] = to_int_cell(out, v, f32, lo, hi);
      }
    src = conv;
    type = GDT_Float64;
    stride = cols;
  }
  gdal_capture c;
  capture_begin(&c);
  const GSpacing es = GDALGetDataTypeSizeBytes(type);
  const GSpacing px = es * out->bands;
  /* GDAL asks the progress callback after each line it writes (a line may
   * flush and compress blocks): a cancel stops a long write there */
  GDALRasterIOExtraArg ea;
  INIT_RASTERIO_EXTRA_ARG(ea);
  ea.pfnProgress = write_progress;
  ea.pProgressData = out;
  CPLErr e = GDALDatasetRasterIOEx(out->ds, GF_Write, (int)col0, (int)row0, (int)cols, (int)rows,
                                   (void *)src, (int)cols, (int)rows, type, out->bands, NULL, px,
                                   (GSpacing)stride * px, es, &ea);
  /* Blocks this write completed go to the file now, in block order. Left
   * to the cache, they would go when evicted, and the eviction order
   * depends on which input blocks the tile threads read meanwhile: the
   * same cells, but a compressed or tiled file's blocks in another order
   * from run to run (seen on 8000 x 8000 DEFLATE output: two runs, two
   * files). Only a tiled file's (a tile's few blocks at a time), and only a
   * write that ends on block edges; a block it leaves partly written waits
   * for the write that completes it. A striped file is left to the cache:
   * flushing a whole row of tiles at once cost a third more time, and a
   * wide one's flush could not be cancelled. */
  if (e == CE_None && !c.failed && out->flush_blocks && block_aligned(out, row0, col0, rows, cols))
    for (int b = 1; b <= out->bands && e == CE_None; b++)
      e = GDALFlushRasterCache(GDALGetRasterBand(out->ds, b));
  capture_end();
  free(conv);
  if (e != CE_None && out_cancelled(out)) return tr_fail(err, TR_EINTERRUPTED, "interrupted");
  if (e != CE_None || c.failed)
    return tr_fail(err, c.nospace ? TR_ENOSPC : TR_EOUTPUT, "cannot write output '%s': %s",
                   out->final_path, why(&c, "write error"));
  return TR_OK;
}

/* --------------------------------------------------------------- commit */

typedef struct {
  tr_output *out;
  int cancelled;
} copy_watch;

/* GDALCreateCopy's progress: the run's callback decides whether to go on
 * (the tiles are all written: progress stays at 1). */
static int CPL_STDCALL copy_progress(double frac, const char *msg, void *user) {
  (void)frac;
  (void)msg;
  copy_watch *w = user;
  tr_tmp_created(w->out->copy_tmp_path); /* the copy exists now */
  if (w->out->progress && !w->out->progress(1.0, NULL, w->out->progress_user)) w->cancelled = 1;
  return !w->cancelled;
}

/* Moves the finished raster at `ready` to `final` with driver d (side-cars
 * such as OUTPUT.aux.xml go with it). An existing destination is replaced
 * the way gdaldem does, delete then move, and only ever a regular file (it
 * was checked at create: something else may have appeared since). 0, or -1
 * with c saying why. */
static int place(GDALDriverH d, const char *ready, const char *final, gdal_capture *c) {
  struct stat st;
  if (stat(final, &st) == 0) {
    const char *what = tr_file_not_regular(st.st_mode);
    if (what) {
      c->failed = 1;
      snprintf(c->msg, sizeof c->msg, "%s", what);
      return -1;
    }
    GDALDriverH old = GDALIdentifyDriver(final, NULL);
    if (!old || GDALDeleteDataset(old, final) != CE_None) unlink(final);
  }
  if (GDALRenameDataset(d, final, ready) != CE_None) {
    c->failed = 1;
    snprintf(c->msg, sizeof c->msg, "cannot rename temporary file into place");
    return -1;
  }
  return 0;
}

int tr_output_place(GDALDriverH d, const char *ready, const char *final, tr_error *err) {
  gdal_capture c;
  capture_begin(&c);
  const int rc = place(d, ready, final, &c);
  capture_end();
  if (rc) return tr_fail(err, c.nospace ? TR_ENOSPC : TR_EOUTPUT, "cannot write output '%s': %s", final, c.msg);
  tr_tmp_untrack(ready);
  return TR_OK;
}

void tr_output_discard(GDALDriverH d, const char *path) {
  struct stat st;
  if (stat(path, &st) == 0) {
    gdal_capture c;
    capture_begin(&c);
    if (GDALDeleteDataset(d, path) != CE_None) unlink(path);
    capture_end();
  }
  remove_ours(path);
  tr_tmp_untrack(path);
}


int tr_output_commit(tr_output *out, tr_error *err) {
  gdal_capture c;
  capture_begin(&c);
  GDALFlushCache(out->ds);
  GDALClose(out->ds);
  out->ds = NULL;
  const char *ready = out->tmp_path;
  copy_watch watch = {out, 0};
  if (!c.failed && out->copy_at_end) {
    GDALDatasetH stage = GDALOpen(out->tmp_path, GA_ReadOnly);
    GDALDatasetH cp = stage ? GDALCreateCopy(out->driver, out->copy_tmp_path, stage, FALSE, out->options,
                                             copy_progress, &watch)
                            : NULL;
    if (!cp && !c.failed) {
      c.failed = 1;
      snprintf(c.msg, sizeof c.msg, "the %s driver could not write this raster", GDALGetDriverShortName(out->driver));
    }
    if (cp) GDALClose(cp);
    if (cp) tr_tmp_created(out->copy_tmp_path);
    if (stage) GDALClose(stage);
    GDALDeleteDataset(GDALGetDriverByName("GTiff"), out->tmp_path);
    ready = out->copy_tmp_path;
  }
  /* a scratch raster (tr_output_scratch_name) is no product: the run reads
   * it and deletes it, so it goes to its name at once */
  if (out->held && tr_is_scratch_name(out->final_path)) out->held = NULL;
  if (!c.failed && out->held) {
    /* the caller puts it in place with the run's other outputs (held.h) */
    if (tr_held_raster(out->held, out->final_path, ready, out->driver)) {
      c.failed = 1;
      snprintf(c.msg, sizeof c.msg, "out of memory");
    }
  } else if (!c.failed) {
    place(out->driver, ready, out->final_path, &c);
  }
  capture_end();
  /* a signal's handler may have unlinked the temporary under us: then the
   * failure is the interruption */
  if (c.failed && !watch.cancelled && out->progress && !out->progress(1.0, NULL, out->progress_user))
    watch.cancelled = 1;
  if (c.failed) {
    int st = watch.cancelled ? TR_EINTERRUPTED : c.nospace ? TR_ENOSPC : TR_EOUTPUT;
    if (watch.cancelled) tr_fail(err, st, "interrupted");
    else tr_fail(err, st, "cannot write output '%s': %s", out->final_path, c.msg);
    tr_output_abort(out);
    return st;
  }
  if (out->held) {
    /* the finished file stays, tracked, where it is: a signal still removes it */
    if (ready != out->tmp_path) {
      remove_ours(out->tmp_path);
      tr_tmp_untrack(out->tmp_path);
    }
  } else {
    remove_ours(out->tmp_path);
    remove_ours(out->copy_tmp_path);
    tr_tmp_untrack(out->tmp_path);
    tr_tmp_untrack(out->copy_tmp_path);
    tr_output_written(out->final_path);
  }
  free(out->final_path);
  free(out->tmp_path);
  free(out->copy_tmp_path);
  CSLDestroy(out->options);
  memset(out, 0, sizeof *out);
  return TR_OK;
}

void tr_output_abort(tr_output *out) {
  gdal_capture c;
  capture_begin(&c);
  /* The name goes first: closing flushes the block cache, which can take
   * longer than a launcher's grace between SIGTERM and SIGKILL (Open MPI:
   * 1 s), and a killed process must not leave the temporary behind. */
  if (out->ds && out->tmp_path && !out->copy_at_end) unlink(out->tmp_path);
  if (out->ds && out_cancelled(out)) {
    /* cancelled: abandoned, not closed (raster.h). GDAL 3.6 has no call
     * that drops a dataset's dirty blocks, and its GeoTIFF close of a
     * 10^6 x 10^6 DEFLATE grid spent 16 s writing its directory and filling
     * the unwritten tiles into the unlinked file (issue 28). The names go
     * without GDAL, which would open the file to list them. */
    out->ds = NULL;
    if (out->tmp_path) unlink(out->tmp_path);
    if (out->copy_tmp_path) unlink(out->copy_tmp_path);
  }
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
  /* what the drivers did not know of (side-cars of a partial copy) */
  remove_ours(out->tmp_path);
  remove_ours(out->copy_tmp_path);
  tr_tmp_untrack(out->tmp_path);
  tr_tmp_untrack(out->copy_tmp_path);
  free(out->final_path);
  free(out->tmp_path);
  free(out->copy_tmp_path);
  CSLDestroy(out->options);
  memset(out, 0, sizeof *out);
}
