/*
 * terrain.h - the public interface of libterrain.
 *
 * libterrain turns DEM files into derived rasters. Every `terrafort`
 * subcommand is one call here (tr_slope, tr_aspect, ...) taking an options
 * struct, so tests and scripts use the same code path as the command line;
 * the command only parses argv into these structs (the gdaldem_lib pattern).
 *
 * Conventions:
 * - Every call returns TR_OK (0) or a negative tr_status; when it fails and
 *   an error buffer is given, the buffer holds one line naming what failed,
 *   which file, and why. The library never prints and never exits.
 * - Outputs are written under a temporary name in the destination folder and
 *   renamed on success; on any failure nothing is left at the destination.
 * - Results are byte-identical for any thread count, tile size, rank count
 *   and fault-tolerance mode.
 *
 * Thread safety: the calls may run concurrently on different files. Each
 * call uses OpenMP threads of its own (opts.threads).
 */
#ifndef TERRAIN_H
#define TERRAIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TR_VERSION "0.1.0"

/* Status codes. tr_exit_code() maps them to the documented exit codes. */
typedef enum {
  TR_OK = 0,
  TR_EUSAGE = -1,       /* bad option or option value */
  TR_EINPUT = -2,       /* input missing, unreadable, corrupt or not a raster */
  TR_ETYPE = -3,        /* input data type not supported (complex, ...) */
  TR_EBAND = -4,        /* the requested band does not exist */
  TR_EOUTPUT = -5,      /* output cannot be created or written */
  TR_ENOSPC = -6,       /* no space left on the output device */
  TR_ENOMEM = -7,       /* out of memory */
  TR_EFT = -8,          /* fault tolerance could not produce a trusted result */
  TR_ECOLL = -9,        /* a collective failed (a rank never contributed) */
  TR_EINTERRUPTED = -10,/* cancelled by the progress callback (e.g. Ctrl-C) */
  TR_EINTERNAL = -11    /* a bug: please report */
} tr_status;

/* A short English name of a status code. */
const char *tr_strerror(int status);

/* The process exit code for a status (terrafort(1), EXIT STATUS):
 * 0 success, 2 usage, 3 input, 4 output, 5 fault tolerance,
 * 6 collective, 7 out of memory, 8 interrupted, 1 anything else. */
int tr_exit_code(int status);

/* One line of error text for the caller to print. */
typedef struct {
  char msg[1024];
} tr_error;

/* Progress callback, call-compatible with GDALProgressFunc: frac in [0,1];
 * returning 0 cancels the run (TR_EINTERRUPTED). */
typedef int (*tr_progress_fn)(double frac, const char *msg, void *user);

/* Fault-tolerance modes for local kernels (libft). */
typedef enum { TR_FT_OFF = 0, TR_FT_DUAL = 1 } tr_ft_mode;

/* Options every raster-producing call shares. */
typedef struct {
  int band;                 /* 1-based input band; default 1 */
  const char *format;       /* GDAL driver short name; NULL: from the
                               output extension, else GTiff */
  const char *const *creation_options; /* NULL-terminated "KEY=VALUE" list */
  int threads;              /* 0: all cores */
  int tile_size;            /* cells per tile side; 0: default (512) */
  tr_progress_fn progress;  /* may be NULL */
  void *progress_user;
  /* Global statistics of the output (libcoll): written as STATISTICS_*
   * band metadata when stats is set; as JSON to stats_json when given. */
  int stats;
  const char *stats_json;
  int coll_timeout_ms;      /* timeout-aggregation threshold; 0: default */
  /* Fault tolerance (libft). */
  tr_ft_mode ft;
  double ft_tolerance;      /* xi: cells differing by >= xi disagree; 0 = bit-exact */
  double ft_error_rate;     /* epsilon: a sub-block is wrong when the share of
                               disagreeing cells exceeds it; 0 = any cell */
  int ft_basic;             /* 1: detect-whole-block-then-recompute baseline */
  const char *ft_report;    /* JSON report path, or NULL */
  const char *inject;       /* fault-injection spec (TERRAFORT_INJECT syntax) */
} tr_run_opts;

/* Fills defaults (band 1, all cores, default tile size, no FT). */
void tr_run_opts_init(tr_run_opts *o);

typedef enum { TR_GRAD_HORN = 0, TR_GRAD_ZEVENBERGEN_THORNE = 1 } tr_gradient_alg;

/* gdaldem slope. */
typedef struct {
  tr_run_opts run;
  tr_gradient_alg alg;
  int percent;        /* -p: percent rise instead of degrees */
  double scale;       /* -s: ratio of vertical to horizontal units; 0: not
                         given (geographic CRS: metric cell size per row) */
  int compute_edges;  /* -compute_edges */
} tr_slope_opts;

/* gdaldem aspect. */
typedef struct {
  tr_run_opts run;
  tr_gradient_alg alg;
  int trigonometric;  /* -trigonometric: counter-clockwise from east */
  int zero_for_flat;  /* -zero_for_flat: 0 instead of nodata where flat */
  int compute_edges;  /* -compute_edges */
} tr_aspect_opts;

void tr_slope_opts_init(tr_slope_opts *o);
void tr_aspect_opts_init(tr_aspect_opts *o);

/* Slope of band opts->run.band of src, written to dst as Float32 with
 * nodata -9999, the georeferencing and CRS of src. */
int tr_slope(const tr_slope_opts *opts, const char *src, const char *dst, tr_error *err);

/* Aspect in degrees (azimuth: 0 = north, clockwise), Float32, nodata -9999. */
int tr_aspect(const tr_aspect_opts *opts, const char *src, const char *dst, tr_error *err);

/* Depression filling (TauDEM pitremove's convention) on the AAP engine. */
typedef struct {
  tr_run_opts run;          /* ft must stay TR_FT_OFF: fill is a graph kernel */
  int out_type;             /* a GDALDataType; 0: Float32 */
  int epsilon;              /* 1: no flats, every cell drains strictly downhill */
  double epsilon_step;      /* the epsilon variant's increment; 0: one ulp */
  const char *schedule;     /* "aap" (default), "bsp", "ap", "ssp", "random" */
  int staleness;            /* ssp's c; -1: default */
  double ds_max_ms;         /* longest delay stretch; 0: engine default */
  int l_bottom, l_up;       /* clamp of the messages a fragment expects; 0: default */
  double straggler_ratio;   /* aap: a neighbour this much slower per cell holds fragments
                               to its round; 0: default (2) */
  double z_cache_mb;        /* elevation tile cache; < 0: 16 MB */
  const char *aap_stats;    /* per-worker engine statistics as JSON, or NULL */
} tr_fill_dem_opts;

void tr_fill_dem_opts_init(tr_fill_dem_opts *o);

/* Fills the depressions of src into dst: the lowest surface W >= Z in which
 * every cell has a non-ascending path to an outlet (the DEM's edge or a
 * nodata cell). Nodata and georeferencing are kept. */
int tr_fill_dem(const tr_fill_dem_opts *opts, const char *src, const char *dst, tr_error *err);

#ifdef __cplusplus
}
#endif
#endif
