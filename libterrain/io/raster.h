/*
 * raster.h - GDAL input and output for libterrain (internal).
 *
 * tr_input wraps an opened source band: size, type, nodata, georeferencing.
 * tr_output is a destination raster under construction: it lives under a
 * temporary name beside the destination until tr_output_commit() renames it,
 * and tr_output_abort() deletes it, so a failed run leaves nothing behind.
 *
 * GDAL datasets are not thread-safe: callers serialise tr_input_read and
 * tr_output_write per object (the executor does). The exception: an input
 * read directly (tr_input.direct: an uncompressed, striped, little-endian
 * Float32 GeoTIFF band) is read with pread from its strips, outside GDAL,
 * and tr_input_read_f32 on it may run on any number of threads at once.
 */
#ifndef TR_RASTER_H
#define TR_RASTER_H

#include <gdal.h>
#include <stdint.h>
#include <sys/types.h>

#include "file_ids.h"
#include "status.h"
#include "terrain.h"

typedef struct {
  GDALDatasetH ds;
  GDALRasterBandH band;
  const char *path;
  int64_t rows, cols;
  GDALDataType type;
  int has_nodata;
  double nodata;
  double gt[6];
  int has_gt;
  char *wkt;             /* CRS as WKT, NULL when the file has none */
  int geographic;        /* CRS is geographic (lat/lon) */
  double semi_major, inv_flattening; /* ellipsoid, when geographic */
  int has_id;            /* a plain file: dev and ino identify it (an output must not be it) */
  dev_t dev;
  ino_t ino;
  /* The band's exact range over the whole raster, when the runner was asked
   * for it (tr_run_kernel_ranged: found by the ranks together). */
  int range_known;
  int range_valid;       /* some cell is valid: range_min/max hold */
  double range_min, range_max;
  /* Direct reads (see above; set by tr_input_open, off with the environment
   * variable TERRAFORT_GDAL_READS=1): the file, its rows per strip and each
   * strip's offset. GDAL's RasterIO gives these cells the same bits; this
   * skips its block cache's copies and locks. */
  int direct;
  int direct_fd;
  int64_t strip_rows;
  uint64_t *strip_off;
} tr_input;

typedef struct {
  GDALDatasetH ds;
  GDALRasterBandH band;
  GDALDriverH driver;     /* the requested driver */
  int copy_at_end;        /* driver lacks Create: write a GTiff, CreateCopy at commit */
  char *final_path;
  char *tmp_path;         /* what ds writes to */
  char *copy_tmp_path;    /* CreateCopy target before the rename */
  int64_t rows, cols;
  int bands;
  GDALDataType type;      /* the bands' type */
  int has_nodata;         /* declared nodata (representable in type) */
  double nodata;
  char **options;         /* creation options (CreateCopy's when copy_at_end) */
  int flush_blocks;       /* tiled: each write's whole blocks go out at once, in block order (raster.c) */
  tr_progress_fn progress; /* polled during a CreateCopy at commit: 0 cancels */
  void *progress_user;
  struct tr_held *held;   /* the run's (tr_run_opts.held): commit hands the finished file to it */
  int (*cancelled)(void *progress_user); /* tr_run_opts.cancelled: heard by writes and abort; may be NULL */
  /* What the driver said of the creation options it does not know or whose
   * value it does not accept ("-co: ..."), or "": the output is made with
   * them all the same, as gdaldem does, and the caller passes this on as a
   * warning (tr_run_opts.warning). */
  char warning[512];
} tr_output;

/* A runner's plan for GDAL's block cache, `mb` megabytes (terrafort(1),
 * MEMORY), goes to the run's caller (tr_run_opts.gdal_cache), who owns the
 * process-wide setting; the runner never sets it itself. */
void tr_io_cache_plan(const tr_run_opts *run, int mb);

/* For an output its driver writes by copy at commit (copy_at_end: COG), the
 * megabytes of GDAL's block cache that copy needs: a row of the copy's
 * blocks (BLOCKSIZE, default 512) across the raster, at least 16; 0 for any
 * other output. The runner plans it (tr_io_cache_plan) once the tile loop
 * is over, just before the commit, when it is below the loop's plan
 * (tr_job.cache_plan_mb: it lowers the cache, never raises it): the copy reads the staged file back
 * block row by block row, and a cache left at the loop's size filled up with
 * blocks the copy never reads again (COG slope at 8000², by hand, 2026-11-29:
 * peak 249-281 MB with it, 176-177 MB with 16 MB; time 6.3-6.6 s and
 * 5.9-7.0 s, within the runs' spread). */
int tr_output_copy_cache_mb(const tr_output *out);

/* Opens band `band` of `path` read-only and validates it. A plain path must
 * be a regular file; GDAL names (/vsi..., DRIVER:file:sub) go to GDAL as is. */
int tr_input_open(tr_input *in, const char *path, int band, tr_error *err);
/* The same, for a run of `threads` threads: a GeoTIFF is opened with GDAL's
 * NUM_THREADS, so that a read spanning several compressed blocks decodes
 * them on that many threads (unless GDAL_NUM_THREADS is set: the user's
 * choice stands). A decoding thread's error then reaches the read's error
 * message, not stderr (raster.c: worker_errors). */
int tr_input_open_threads(tr_input *in, const char *path, int band, int threads, tr_error *err);
void tr_input_close(tr_input *in);
/* TR_OK when `in` (opened from `path`) has the size of `ref` (from `ref_path`),
 * else an input error naming both; `ref_what` ("" or e.g. "the DEM ") goes
 * before the reference's name. */
int tr_input_same_size(const tr_input *in, const char *path, const tr_input *ref, const char *ref_what,
                       const char *ref_path, tr_error *err);

/* The exact minimum and maximum of the valid cells of rows [row0, row0 +
 * rows), as GDALComputeRasterMinMax finds them for a band (nodata and NaN
 * left out; the whole raster: the band itself, else a VRT window over those
 * rows); *valid 0 when no cell there is valid. */
int tr_input_minmax_rows(const tr_input *in, int64_t row0, int64_t rows, double mm[2], int *valid, tr_error *err);

/* Reads the window (row0, col0, rows x cols) as Float32 into dst (stride in
 * elements). Cells outside the raster, and non-finite cells (NaN, +-Inf, or
 * values beyond Float32's range), are NaN: NaN is always nodata. */
int tr_input_read_f32(tr_input *in, int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                      float *dst, int64_t stride, tr_error *err);

/* The same window as Int32 (labels beyond Float32's 2^24, exact): cells
 * outside the raster are INT32_MIN; the caller compares with the nodata. */
int tr_input_read_i32(tr_input *in, int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                      int32_t *dst, int64_t stride, tr_error *err);

/* Creates the temporary destination raster: like `in` in size and
 * georeferencing, `bands` bands of `type`, nodata set on each when has_nodata.
 * Refused before anything is written: a driver that cannot hold `type`
 * (DMD_CREATIONDATATYPES) or rejects a creation option, or a nodata that
 * `type` cannot represent (TR_EUSAGE); a destination that is the input (same
 * file by any path), a directory, a device, a FIFO or a socket (TR_EOUTPUT).
 * The temporary is "<dir>/.<name>.terrafort-<pid>-<host>.tmp<ext>" (the name
 * shortened with a hash when it would pass NAME_MAX); temporaries of this
 * host's dead processes in that folder are removed first. A compressed
 * GeoTIFF or COG has its blocks compressed on `threads` threads (the job's)
 * unless -co NUM_THREADS or GDAL_NUM_THREADS says otherwise. */
int tr_output_create(tr_output *out, const tr_input *in, const char *path, const char *format,
                     const char *const *creation_options, GDALDataType type, int bands,
                     int has_nodata, double nodata, int threads, tr_error *err);
/* Writes a window of every band from `src`: cells of `type`, the bands of a
 * cell next to each other (pixel-interleaved), rows `stride` cells apart.
 * Floating-point cells into an integer band: NaN and the nodata value become
 * the band's nodata, others are rounded to nearest (halves up, as GDAL) and
 * clamped to the type's range, never onto the nodata value. */
int tr_output_write(tr_output *out, int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                    const void *src, GDALDataType type, int64_t stride, tr_error *err);
/* A name for an intermediate file of this process beside `path`:
 * "<dir>/.<name>.terrafort-<pid>-<host>.tmp<tag>.tif", which the stale
 * temporaries' clean-up (above) removes after a crash, and which a signal
 * handler's tr_remove_temporaries unlinks until tr_output_scratch_remove.
 * Free it. */
char *tr_output_scratch_name(const char *path, const char *tag);
/* The temporary name of side file `path` (io/side_file.h), beside it, of
 * the same form (tag "tmpside<n>"), tracked for the signal handler. Free it. */
char *tr_output_side_tmp_name(const char *path);
/* Where an output named by a symbolic link goes (its target: the link
 * stays); `path` itself when it is no link. buf holds the target. */
const char *tr_output_link_target(const char *path, char *buf, size_t n);
/* What a file that is not regular is ("it is a directory", ...), for an
 * error line; NULL when it is regular. */
const char *tr_file_not_regular(mode_t m);
/* Deletes the scratch raster at `path` (any driver; nothing when it does
 * not exist) and stops tracking the name. */
void tr_output_scratch_remove(const char *path);

/* Whether paths a and b name one file: the same string, or (both existing)
 * the same device and inode. 0 when either is NULL. */
int tr_path_same_file(const char *a, const char *b);

/* Refuses `path`, a file the run writes (`what` names it in the line:
 * "output", "--stats-json", ...), before any work: when its name is longer
 * than GDAL handles (TR_GDAL_NAME_MAX), when it exists and is not a regular
 * file (a directory, device, FIFO or socket; a symbolic link is its
 * target), when its folder is missing or not writable, or when it is a file
 * input `in` reads (the input itself by any spelling, a VRT's source, the
 * container of a subdataset, the archive behind a /vsizip/ path: every file
 * GDAL lists for it; in may be NULL or without a dataset). NULL path: TR_OK.
 * TR_EOUTPUT with one line. */
int tr_output_refuse(const char *path, const char *what, const tr_input *in, tr_error *err);

/* The same for every output of a run (entries with a NULL path skipped),
 * each also refused when it is another of them or one of the files the run
 * reads besides `in` (`reads`, named in the line: "it is the DEM ('d.tif')"),
 * by any spelling, or a file GDAL reads for one of them
 * (tr_file_ids_add_read: "the DEM ('m.vrt') reads it ('d.tif')"). */
int tr_outputs_refuse(const tr_file_role *outs, int nouts, const tr_file_role *reads, int nreads, const tr_input *in,
                      tr_error *err);

/* The longest output name tr_output_refuse lets through: GDAL's 2048-byte
 * name buffers less the temporary's suffix. */
#define TR_GDAL_NAME_MAX (2048 - 64)
/* Flushes, closes and renames into place; with out->held, a product (not
 * a scratch raster: tr_is_scratch_name) stays under its temporary name,
 * still tracked for a signal's handler, and goes to the held list instead
 * (held.h). On failure the output is removed. */
int tr_output_commit(tr_output *out, tr_error *err);
/* Moves the finished raster at `ready` (a temporary of this process) to
 * `final` with driver d, replacing a regular file there, side-cars with it,
 * and stops tracking `ready`. TR_EOUTPUT naming `final`. */
int tr_output_place(GDALDriverH d, const char *ready, const char *final, tr_error *err);
/* Deletes the raster at `path` (driver d; its side-cars too) and stops
 * tracking the name. */
void tr_output_discard(GDALDriverH d, const char *path);
/* A folder name for temporaries of this process beside `path`, short
 * whatever path's own name ("<dir>/.terrafort-<pid>-<host>.tmpfolder<seq>":
 * a driver's path limits then see the folder and a short inner name, not
 * the destination's name twice); the stale clean-up removes such a folder
 * of a dead process with its files. Free it. */
char *tr_output_scratch_folder(const char *path);
/* Closes and deletes the temporary raster; safe after a failed create.
 * When out->cancelled says the run was cancelled, the temporary is
 * unlinked and GDAL's dataset abandoned instead of closed: closing makes
 * GDAL finish the file first (its directory, every dirty block compressed,
 * every block never written filled in), which for a large output takes
 * from seconds to minutes, all of it into an unlinked file. The abandoned
 * dataset stays open until the process ends, which must then not close it
 * (GDALDestroyDriverManager would): tr_run_opts.cancelled. */
void tr_output_abort(tr_output *out);

#endif
