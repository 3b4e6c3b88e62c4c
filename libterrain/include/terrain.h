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
 * Using it from a program: the installed library is libterrafort.so
 * (`pkg-config --cflags --libs terrafort`, or find_package(terrafort) and
 * the target terrafort::terrafort in CMake). Register GDAL's drivers first
 * (GDALAllRegister), as for any library over GDAL.
 *
 * Thread safety: the calls may run concurrently on different files. Each
 * call uses OpenMP threads of its own (opts.threads). No call changes
 * GDAL's process-wide configuration: a run only tells its caller the block
 * cache it was planned for (tr_run_opts.gdal_cache), and the program, which
 * owns the process, sets it (tr_gdal_cache_apply). Nor the C library's
 * allocator settings: a graph run whose state spills tells its caller
 * (tr_run_opts.heap_spill), and terrafort, which owns its process, tunes
 * glibc's heap for it (tr_heap_spill_apply).
 */
#ifndef TERRAIN_H
#define TERRAIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TR_VERSION "0.1.0"

/* ---- JSON -----------------------------------------------------------------
 * Every JSON file terrafort writes (--stats-json, --ft-report, --aap-stats,
 * batch's summary) is a tree of these values over json-c, written by
 * tr_json_text or tr_json_write: one writer, so one rule for every string and
 * number (core/json.c).
 * - Strings are bytes, as file names and error lines are. Each valid UTF-8
 *   sequence (RFC 3629) is kept as it is, '"', '\' and control characters
 *   escaped (\", \\, \u00XX). Each byte that begins no valid sequence,
 *   0xXX (only 0x80..0xFF can), is written as the escape \udcXX: the lone
 *   surrogate U+DC80..U+DCFF that Python's os.fsdecode gives that byte
 *   (PEP 383's surrogateescape), which no valid UTF-8 holds. So the text is
 *   valid UTF-8 and valid JSON whatever a name holds, two names that differ
 *   stay different, and os.fsencode(name) gives the file's bytes back. A
 *   reader that takes no lone surrogate (json-c's own parser) reads U+FFFD.
 * - tr_json_num writes a double as %.17g, which reads back as the same
 *   double; tr_json_fixed with a fixed number of decimals (timings). A value
 *   that is not finite is null (JSON has no inf or nan).
 * - Objects keep their keys in the order they were set.
 * Ownership: a value belongs to its maker until tr_json_set or tr_json_push
 * gives it to a container (even when that fails: it is then freed); freeing
 * a container frees what it holds. Out of memory a constructor returns NULL,
 * and a container given NULL, or failing to grow, is marked: the text of it,
 * or of anything holding it, is NULL, so no report is ever written short.
 * Thread safety: one value is used by one thread at a time. */
typedef struct json_object tr_json;

tr_json *tr_json_object(void);
tr_json *tr_json_array(void);
/* An array written with each element on a line of its own (a batch
 * summary's jobs: one line per job, for a reader with grep). */
tr_json *tr_json_lines(void);
/* s (NULL: "") as a string, by the rule above. */
tr_json *tr_json_str(const char *s);
tr_json *tr_json_int(int64_t v);
tr_json *tr_json_uint(uint64_t v);
tr_json *tr_json_num(double v);
tr_json *tr_json_fixed(double v, int decimals);
tr_json *tr_json_bool(int v);
tr_json *tr_json_null(void);
/* A JSON text (one value, nothing after it but blanks), parsed; NULL when it
 * is not JSON (or out of memory). Numbers keep their text. Its strings are
 * json-c's reading: an escaped lone surrogate (\udcXX) reads as U+FFFD, so a
 * text naming a file by the rule above is embedded with tr_json_verbatim. */
tr_json *tr_json_parse(const char *text);
/* A JSON text embedded as it is, byte for byte, once checked to be one JSON
 * value (tr_json_parse's test); NULL when it is not. */
tr_json *tr_json_verbatim(const char *text);
/* Sets obj's key to v (given to obj); 0, or -1 when obj is not an object or
 * out of memory (obj is then marked, above). */
int tr_json_set(tr_json *obj, const char *key, tr_json *v);
/* Appends v (given to arr) to an array; 0 or -1 as tr_json_set. */
int tr_json_push(tr_json *arr, tr_json *v);
/* Sets each key of object `from` in obj, in from's order (shared, from is
 * kept); 0 or -1 as tr_json_set. */
int tr_json_merge(tr_json *obj, tr_json *from);
/* v's text, one line without its newline, in memory the caller frees; NULL
 * when v is NULL or marked, or out of memory. */
char *tr_json_text(tr_json *v);
/* v's text and a newline to f; 0, or -1 (v NULL or marked, out of memory, or
 * a write error). */
int tr_json_write(tr_json *v, FILE *f);
/* Frees v and what it holds (NULL: nothing). */
void tr_json_free(tr_json *v);

/* The version of the libterrafort.so a program has loaded (TR_VERSION of
 * the header it was built with); in the shared library only. */
const char *tr_library_version(void);

/* When set, the name of a file to which a run appends the absolute path of
 * every final file it writes, one per line (terrafort(1), ENVIRONMENT). */
#define TR_OUTPUTS_ENV "TERRAFORT_OUTPUTS_FILE"

/* When set, files no output of a run may be, one per line as
 * "ROLE<TAB>PATH" (a caller's own files: terrafort batch gives its jobs its
 * jobs file, summary and done list). An output that is one of them, by any
 * spelling and whether or not it exists yet, is refused as an input would be:
 * "cannot write output 'x': it is the batch's summary ('...')". */
#define TR_KEEP_ENV "TERRAFORT_KEEP_FILES"

/* Set by tr_batch in each job's environment to its rank's pid: a job whose
 * rank is gone cancels itself (the program's stop), so a job of a rank
 * killed outright stops instead of writing after the batch gave it up. (Not
 * the kernel's parent-death signal: it comes again at every re-parenting,
 * and a second signal ends a run at once, leaving its temporary.) */
#define TR_BATCH_PARENT_ENV "TERRAFORT_BATCH_PARENT"

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
  TR_EINTERNAL = -11,   /* a bug: please report */
  TR_EFTLIMIT = -12,    /* --ft replay: more faults detected than --ft-max-errors */
  TR_ERANK = -13,       /* under mpirun: a rank stopped answering (killed, stopped, hung) */
  TR_EBATCH = -14       /* tr_batch: at least one job failed (the others ran) */
} tr_status;

/* A short English name of a status code. */
const char *tr_strerror(int status);

/* The exit codes of terrafort(1), EXIT STATUS, by name: the values are that
 * table's, which scripts rely on, and never change. */
typedef enum {
  TR_EXIT_OK = 0,
  TR_EXIT_INTERNAL = 1,     /* internal error, and any status without a code of its own */
  TR_EXIT_USAGE = 2,        /* unknown option, bad value, missing file name */
  TR_EXIT_INPUT = 3,        /* input missing, unreadable, corrupt, no such band */
  TR_EXIT_OUTPUT = 4,       /* output cannot be created or written */
  TR_EXIT_FT = 5,           /* fault tolerance could not produce a trusted result */
  TR_EXIT_COLL = 6,         /* a collective failed (a rank never contributed) */
  TR_EXIT_NOMEM = 7,        /* out of memory, or state that would not fit */
  TR_EXIT_INTERRUPTED = 8,  /* a signal of terrafort(1), SIGNALS */
  TR_EXIT_FTLIMIT = 9,      /* --ft replay: more faults than --ft-max-errors */
  TR_EXIT_RANK = 10,        /* under mpirun: a rank stopped answering */
  TR_EXIT_BATCH = 11        /* terrafort batch: at least one job failed */
} tr_exit;

/* The process exit code (a tr_exit) for a status. */
int tr_exit_code(int status);

/* This process's MPI rank (0 without MPI or before MPI_Init): the one rank
 * helper, for the library and the command (only rank 0 prints). */
int tr_rank(void);

/* Unlinks every temporary and scratch file this process has made and not
 * yet renamed into place or deleted. Async-signal-safe: for a command's
 * handler of SIGTERM and the like, which cancels the run, because a
 * launcher may send SIGKILL milliseconds later (mpirun does). The cancelled
 * run then finds its temporaries gone, which is no error. */
void tr_remove_temporaries(void);

/* Unlinks every final file (outputs, their .aux.xml, side files) this
 * process has put in place, for a process that learns only after its
 * commit that the job failed: under mpirun, a rank lost in the closing
 * exchange or in MPI_Finalize makes the writer leave with exit 10, which
 * leaves no output (a file an output replaced is not restored). No
 * allocation, no lock: callable from a watchdog thread while other threads
 * are stopped anywhere, and by several at once: each call has unlinked
 * them all when it returns. */
void tr_remove_outputs(void);

/* One line of error text for the caller to print. */
typedef struct {
  char msg[1024];
} tr_error;

/* Progress callback, call-compatible with GDALProgressFunc: frac in [0,1];
 * returning 0 cancels the run (TR_EINTERRUPTED). */
typedef int (*tr_progress_fn)(double frac, const char *msg, void *user);

/* Fault-tolerance modes (libft): dual-redundant tiles of local kernels and
 * rounds of graph programs (fill, flowgraph), or tracked launches and rounds
 * replayed when a fault is detected. */
typedef enum { TR_FT_OFF = 0, TR_FT_DUAL = 1, TR_FT_REPLAY = 2 } tr_ft_mode;

/* Where local kernels run: the CPU (the default), a GPU when one is present
 * and the kernel has a GPU version (auto), or a GPU or fail (gpu). */
typedef enum { TR_DEVICE_CPU = 0, TR_DEVICE_AUTO = 1, TR_DEVICE_GPU = 2 } tr_device;

/* Told, before a run reads its first tile, the GDAL block cache in bytes
 * the run was planned for (terrafort(1), MEMORY): 64 MB for local kernels,
 * less to fit --mem; the job's 16 MB shared among its ranks for graph
 * programs (the writer's row of output tiles is the sink's own). A command
 * made of several runs (flowgraph) is told once per run. */
typedef void (*tr_cache_fn)(int64_t bytes, void *user);

/* Sets GDAL's block cache to `bytes` unless the user set GDAL_CACHEMAX: what
 * terrafort passes as tr_run_opts.gdal_cache. GDAL's cache is one per
 * process, so only a program that runs one call at a time should: a library
 * user who wants terrafort's figures passes it too; user is unused. */
void tr_gdal_cache_apply(int64_t bytes, void *user);

/* Told, before a graph program's rounds start, that its tile state will not
 * all stay in memory (--mem, terrafort-fill(1) MEMORY) and whether more of it
 * spills than stays (mostly_spilled 1). */
typedef void (*tr_heap_fn)(int mostly_spilled, void *user);

/* glibc's heap tuned for a spilling graph run: what terrafort passes as
 * tr_run_opts.heap_spill. One arena (a tile's state is freed and allocated
 * again by whichever thread spills or restores it; per-thread arenas keep
 * what other threads freed), and where more spills than stays, arrays of
 * 256 KiB and more mapped each on its own, so that the holes between tiles'
 * arrays go back to the system. These settings are the process's, and
 * stay: only a program that owns its process should pass it; user is
 * unused. Elsewhere than glibc it does nothing. */
void tr_heap_spill_apply(int mostly_spilled, void *user);

/* A file a run reads or writes, and what it is in a line about it ("the
 * colour file", "--stats-json"). */
typedef struct {
  const char *path;
  const char *what;
} tr_file_role;

/* Options every raster-producing call shares. */
typedef struct tr_run_opts {
  int band;                 /* 1-based input band; default 1 */
  const char *format;       /* GDAL driver short name; NULL: from the
                               output extension, else GTiff */
  const char *const *creation_options; /* NULL-terminated "KEY=VALUE" list */
  int threads;              /* 0: all cores */
  int tile_size;            /* cells per tile side; 0: default (512) */
  /* What this run (each rank under mpirun) may keep in memory, bytes. Local
   * kernels stream tiles: a run that cannot fit its tile buffers is refused,
   * and the GDAL cache shrinks to fit. Graph programs spill tile state beyond
   * it to disk (tr_graph_opts.tmp_dir). 0: 3/4 of what this rank may have
   * (physical memory, or a cgroup's or ulimit -v's limit, shared by the
   * node's ranks). */
  int64_t mem;
  tr_progress_fn progress;  /* may be NULL */
  void *progress_user;
  /* What the caller should tell its user and the run goes on regardless (a
   * creation option the output's driver does not know, as gdaldem warns);
   * called on the writing rank. May be NULL. */
  void (*warning)(const char *msg, void *user);
  void *warning_user;
  /* Global statistics of the output (libcoll): written as STATISTICS_*
   * band metadata when stats is set; as JSON to stats_json when given. */
  int stats;
  const char *stats_json;
  /* With stats: each band's exact histogram of hist_buckets buckets (0:
   * 256; TR_HIST_NONE: none) over its min - h .. max + h, h = (max - min) / (2 (buckets - 1))
   * (gdalinfo -hist's own bounds for 256), stored as the output's default
   * histogram (GTiff: OUTPUT.aux.xml); and, when npercentiles > 0, the exact
   * cell values at those percentiles (numpy's method 'inverted_cdf'), as
   * STATISTICS_PERCENTILE_<p> metadata and under "percentiles" in
   * stats_json. Both re-read this rank's cells from an unlinked scratch file
   * beside the output (libterrain/core/stats_hist.h). */
  int hist_buckets;
  const double *percentiles; /* npercentiles values in [0, 100] */
  int npercentiles;
  int coll_timeout_ms;      /* timeout-aggregation threshold; 0: default */
  /* Fault tolerance (libft). */
  tr_ft_mode ft;
  double ft_tolerance;      /* xi: cells differing by >= xi disagree; 0 = bit-exact */
  double ft_error_rate;     /* epsilon: a sub-block is wrong when the share of
                               disagreeing cells exceeds it; 0 = any cell */
  int ft_basic;             /* 1: detect-whole-block-then-recompute baseline */
  int ft_source_profile;    /* 1: the source method's xi and epsilon (libft's
                               ft_opts_source_profile); ft_tolerance and
                               ft_error_rate, when set, still override */
  int ft_timeout_ms;        /* a worker silent this long is given up on and its work
                               re-dispatched; 0: libft's FT_TIMEOUT_RUN_MS
                               (FT_TIMEOUT_INJECTED_MS when a stall or kill is
                               injected) */
  const char *ft_report;    /* JSON report path, or NULL */
  const char *inject;       /* fault-injection spec (TERRAFORT_INJECT syntax) */
  /* --ft replay (specs/idempotent-replay.md) and devices. */
  int ft_max_errors;        /* faults repaired per rank before failing with TR_EFTLIMIT; 0: libft's FT_MAX_ERRORS_DEFAULT; < 0: none */
  double ft_check;          /* share of idempotent launches re-executed and checksummed, [0, 1] */
  tr_device device;
  int replay_on_cpu;        /* 1: a GPU launch found faulty is replayed on the CPU */
  /* Under mpirun: the job's liveness monitor (libcoll's coll_live.h; NULL:
   * waits are unbounded) bounds every wait for another rank, and
   * cancelled(progress_user) != 0 (a signal) ends any wait at once. It also
   * stops the tile loop's threads and GDAL's writes of the output, and
   * makes the run abandon its output rather than close it: the temporary
   * is unlinked, but GDAL's dataset stays open, unreachable, until the
   * process ends (closing it would have GDAL finish the whole file first,
   * minutes for a large one). A caller that sets it must then end the
   * process without GDALDestroyDriverManager, which would close it
   * (terrafort leaves with _exit). NULL: a cancel comes only through
   * progress, and an aborted output is closed. */
  struct coll_live *live;
  int (*cancelled)(void *user);
  struct coll_ctx *coll;    /* the command's libcoll context (statistics); NULL: one per run */
  /* The GDAL block cache the run was planned for goes to gdal_cache(bytes,
   * gdal_cache_user) before the first tile is read; NULL: GDAL's setting
   * stays as the program left it. */
  tr_cache_fn gdal_cache;
  void *gdal_cache_user;
  /* Files the run reads besides its input raster (a colour file; the
   * library calls fill them): no output of the run may be one of them.
   * Entries with a NULL path are none. */
  tr_file_role reads[4];
  /* NULL: each output is renamed into place when its run completes. Else
   * a run of several stages (flowgraph) keeps each finished output under
   * its temporary name in this list and puts them all in place at its end,
   * or deletes them all (libterrain/io/held.h). */
  struct tr_held *held;
  /* A stage of a run of several (flowgraph's sd8 kernel): its --ft report
   * line is appended to ft_report, a scratch file the run puts in place.
   * (Last, as every field added since the library's first release.) */
  int ft_report_append;
  /* --device gpu:N sets N + 1: this process uses GPU N. 0 (the default):
   * the rank's place on its node modulo the node's GPUs, so the ranks of a
   * node spread over its devices (terrafort(1) DEVICES). */
  int device_pin;
  /* --coll-arity: under mpirun, children per interior rank of the tree the
   * statistics are aggregated over (libcoll's timeout aggregation, the
   * writer its root). 0 (the default): one level, every other rank a child
   * of the writer (scripts/bench/RESULTS.md: no deeper tree was faster on
   * the machines measured). */
  int coll_arity;
  /* Where this rank counts its own progress (NULL: nowhere), for a program
   * that shows every rank's under mpirun (terrafort's progress line gathers
   * them by timeout aggregation, tools/progress.c): the library writes it
   * with atomic operations and the program may read it from any thread. */
  struct tr_rank_progress *rank_progress;
  /* 1: this run is a stage of a run of several (flowgraph's products, the
   * fill before flowdir's directions), and every rank learns its outcome
   * when it ends, as the next stage needs. 0 (the default): the outcome is
   * the writer's, and the other ranks go on as soon as their part is done. */
  int stage_of_several;
  /* A graph run whose state spills calls heap_spill(mostly_spilled,
   * heap_spill_user) once, before its rounds; NULL: the allocator stays as
   * the host process set it (the output's bytes are the same; the peak may
   * be higher where glibc keeps freed arrays). */
  tr_heap_fn heap_spill;
  void *heap_spill_user;
} tr_run_opts;

/* One rank's progress (tr_run_opts.rank_progress). stage: the runs this
 * rank has started (a command of several, flowgraph, has one per product);
 * done of total: the current run's tile steps on this rank - a local
 * kernel's tiles it computes (steps_per_tile 1), or a graph program's
 * fragments it loads and then its tiles it hands to the writer (2). Read
 * each field with __atomic_load_n. */
typedef struct tr_rank_progress {
  int64_t stage, done, total, steps_per_tile;
} tr_rank_progress;

/* Number of usable GPUs (0 when built without CUDA or none is present);
 * why (may be NULL) says why there is none. */
int tr_gpu_count(char *why, size_t len);

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

/* gdaldem hillshade's shading models. */
typedef enum {
  TR_SHADE_STANDARD = 0,         /* one light from azimuth/altitude */
  TR_SHADE_COMBINED = 1,         /* -combined: the shade darkened by the slope */
  TR_SHADE_MULTIDIRECTIONAL = 2, /* -multidirectional: lights from 225, 270, 315, 360 degrees */
  TR_SHADE_IGOR = 3              /* -igor: Igor's shading, no shadows on slopes facing the light */
} tr_shade_mode;

/* gdaldem hillshade. */
typedef struct {
  tr_run_opts run;
  tr_gradient_alg alg;
  tr_shade_mode mode;
  double z;           /* -z: vertical exaggeration (default 1) */
  double scale;       /* -s: as tr_slope_opts.scale */
  double azimuth;     /* -az: light from, degrees clockwise from north (default 315) */
  double altitude;    /* -alt: light above the horizon, degrees (default 45) */
  int compute_edges;  /* -compute_edges */
} tr_hillshade_opts;

void tr_hillshade_opts_init(tr_hillshade_opts *o);

/* Shaded relief of band opts->run.band of src: Byte 1..255 with nodata 0,
 * the georeferencing and CRS of src. */
int tr_hillshade(const tr_hillshade_opts *opts, const char *src, const char *dst, tr_error *err);

/* gdaldem TRI: Riley's root of the summed squared differences to the eight
 * neighbours (gdaldem's default since 3.3) or Wilson's mean absolute one. */
typedef enum { TR_TRI_RILEY = 0, TR_TRI_WILSON = 1 } tr_tri_alg;

typedef struct {
  tr_run_opts run;
  tr_tri_alg alg;     /* -alg Wilson|Riley */
  int compute_edges;  /* -compute_edges */
} tr_tri_opts;

/* gdaldem TPI (centre minus the neighbours' mean) and roughness (largest
 * minus smallest of the 3x3 window). */
typedef struct {
  tr_run_opts run;
  int compute_edges;  /* -compute_edges */
} tr_tpi_opts;

typedef struct {
  tr_run_opts run;
  int compute_edges;  /* -compute_edges */
} tr_roughness_opts;

void tr_tri_opts_init(tr_tri_opts *o);
void tr_tpi_opts_init(tr_tpi_opts *o);
void tr_roughness_opts_init(tr_roughness_opts *o);

/* TRI, TPI and roughness of band opts->run.band of src, written to dst as
 * Float32 with nodata -9999, the georeferencing and CRS of src. */
int tr_tri(const tr_tri_opts *opts, const char *src, const char *dst, tr_error *err);
int tr_tpi(const tr_tpi_opts *opts, const char *src, const char *dst, tr_error *err);
int tr_roughness(const tr_roughness_opts *opts, const char *src, const char *dst, tr_error *err);

/* gdaldem color-relief: how a cell's colour comes from the table. */
typedef enum {
  TR_COLOR_INTERPOLATE = 0, /* blend the two entries around the value (default) */
  TR_COLOR_EXACT = 1,       /* -exact_color_entry */
  TR_COLOR_NEAREST = 2      /* -nearest_color_entry */
} tr_color_mode;

/* Most entries a colour file may hold. */
/* --hist-buckets and --percentiles limits (tr_run_opts.hist_buckets, .npercentiles) */
#define TR_HIST_MAX_BUCKETS 65536
#define TR_HIST_DEFAULT_BUCKETS 256
#define TR_HIST_NONE (-1) /* --hist-buckets 0: moments only (no wait for the global range) */
#define TR_MAX_PERCENTILES 64

#define TR_COLOR_RELIEF_MAX_ENTRIES 256

typedef struct {
  tr_run_opts run;
  tr_color_mode mode;
  int alpha;          /* -alpha: RGBA instead of RGB */
} tr_color_relief_opts;

void tr_color_relief_opts_init(tr_color_relief_opts *o);

/* Colours band opts->run.band of src through the gdaldem colour text file
 * color_file (terrafort-color-relief(1)) into dst: 3 Byte bands (4 with
 * alpha), no nodata, the georeferencing and CRS of src. A colour file that
 * cannot be read fails with TR_EINPUT, one with a bad line with TR_EUSAGE. */
int tr_color_relief(const tr_color_relief_opts *opts, const char *src, const char *color_file, const char *dst,
                    tr_error *err);

/* Iterated 3x3 mean filter (terrafort-smooth(1)): `passes` passes, each
 * cell the mean of the valid cells of its 3x3 neighbourhood. Float32, nodata
 * -9999 (where the input is nodata), the georeferencing and CRS of src. */
#define TR_SMOOTH_MAX_PASSES 8

typedef struct {
  tr_run_opts run;
  int passes;         /* 1..TR_SMOOTH_MAX_PASSES; default 2 */
} tr_smooth_opts;

void tr_smooth_opts_init(tr_smooth_opts *o);
int tr_smooth(const tr_smooth_opts *opts, const char *src, const char *dst, tr_error *err);

/* Stream burning (terrafort-fill(1), BURNING; fill, breach and flowgraph
 * from a DEM): before the DEM is conditioned, every cell a line of an OGR
 * vector touches is lowered by `depth` (in the DEM's elevation units), so
 * filling, directions and everything after them follow the mapped streams
 * through embankments and bridges. Cells are chosen by GDAL's rasterizer:
 * its line rule (Bresenham between the cells holding a segment's ends; the
 * whole grid's cells whatever the tiles, ranks or memory cap), or with
 * all_touched every cell a segment passes through. Lines in another CRS are
 * transformed into the DEM's; lines without one are taken in the DEM's (a
 * warning says so). Only lines are burnt: a point or polygon is refused.
 * A burnt cell is z - depth in double, rounded to Float32 (the precision of
 * every hydrology stage); nodata cells stay nodata. */
typedef struct {
  const char *file;   /* --burn: the lines (any OGR source); NULL: no burning */
  const char *layer;  /* --burn-layer: NULL: the source's first layer */
  double depth;       /* --burn-depth: > 0, required with file (no default: it depends on the
                         DEM's units and on the embankments the streams must cut through) */
  int all_touched;    /* --burn-all-touched: every cell a line touches (GDAL's ALL_TOUCHED) */
} tr_burn_opts;

/* Depression breaching (terrafort-breach(1)): Lindsay (2016) as RichDEM's
 * rd_depressions_breach computes it. Each pit's least-cost (Priority-Flood)
 * path towards the edge is cut down to the pit, down to the first cell
 * lower than it; pits strictly below all their neighbours are first raised
 * to the lowest. complete: every path is cut. selective: only a path within
 * max_length cells and max_depth map units, the others left as they are.
 * constrained: every path is cut, but only along its first max_length cells
 * and no cell more than max_depth below the DEM. fill: what is left is then
 * filled (each cell at least as high as the cell the flood reached it from).
 * Float32, the input's nodata, georeferencing and CRS. The whole raster is
 * held in memory (about 26 bytes a cell; 4 more with fill, 4 more constrained
 * with a depth); not
 * out of core. Bad combinations (a limit or fill in complete mode, no limit
 * in the others, a limit negative or not finite) fail with TR_EUSAGE before
 * anything is read. */
typedef enum { TR_BREACH_COMPLETE = 0, TR_BREACH_SELECTIVE = 1, TR_BREACH_CONSTRAINED = 2 } tr_breach_mode;

typedef struct {
  tr_run_opts run;
  int epsilon;        /* 1: RichDEM's EPS: each cell of a cut path one float below the one
                         upstream of it, raised pits one float below their lowest neighbour,
                         filled cells one float above the cell the flood came from: every
                         cut and every filled cell drains strictly downhill */
  tr_burn_opts burn;  /* lines burnt into the DEM before breaching */
  tr_breach_mode mode;
  int64_t max_length; /* cells of a path (the pit and each cell to cut); 0: no limit */
  double max_depth;   /* the deepest cut of a path, map units; 0: no limit */
  int fill;           /* 1: fill what selective or constrained breaching left */
} tr_breach_opts;

void tr_breach_opts_init(tr_breach_opts *o);
int tr_breach(const tr_breach_opts *opts, const char *src, const char *dst, tr_error *err);

/* Options of the AAP engine every graph command (fill, flowgraph) shares. */
typedef struct {
  const char *schedule;     /* "aap" (default), "bsp", "ap", "ssp", "random" */
  int staleness;            /* ssp's c; -1: default */
  double ds_max_ms;         /* longest delay stretch; 0: engine default */
  int l_bottom, l_up;       /* clamp of the messages a fragment expects; 0: default */
  double straggler_ratio;   /* aap: > 1 turns on the bound that holds fragments to the
                               round of a neighbour this much slower per cell; 0: off */
  double cache_mb;          /* input tiles kept by the tile store; < 0: 16 MB */
  const char *aap_stats;    /* per-worker engine statistics as JSON, or NULL */
  int aap_stats_append;     /* runs of several programs (flowgraph): each appends its lines */
  /* Out of core (terrafort-fill(1), MEMORY): graph programs' tile state
   * beyond run->mem is spilled to a file in tmp_dir (NULL: the output's
   * folder). */
  const char *tmp_dir;
  int ft_report_append;     /* as aap_stats_append, for run->ft_report's lines (one per program) */
  /* Without --mem (run->mem 0): what each rank plans for, as a multiple of
   * its share of the input's cells as Float32 (at least what the run needs,
   * at most the default --mem), the state beyond it spilled; 0: the default
   * --mem. tr_fill_dem_opts_init sets TR_FILL_MEM_OF_INPUT,
   * tr_flowgraph_opts_init TR_FLOWGRAPH_MEM_OF_INPUT. */
  double mem_of_input;
} tr_graph_opts;

/* fill's default memory: 1.2 times its DEM as Float32 (terrafort-fill(1), MEMORY) */
#define TR_FILL_MEM_OF_INPUT 1.2
/* flowgraph's, for each stage (terrafort-flowgraph(1), MEMORY): at 8000²
 * the D-infinity chain then peaks at 1.29x its DEM, D8 directions at 1.15x
 * (scripts/bench/hydrology) */
#define TR_FLOWGRAPH_MEM_OF_INPUT 1.3

void tr_graph_opts_init(tr_graph_opts *o);

/* Depression filling (TauDEM pitremove's convention) on the AAP engine. */
typedef struct {
  tr_run_opts run;          /* ft: each round of the fill dual or replayed */
  tr_graph_opts graph;
  int out_type;             /* a GDALDataType; 0: Float32 */
  int epsilon;              /* 1: no flats, every cell drains strictly downhill */
  double epsilon_step;      /* the epsilon variant's increment; 0: one ulp */
  tr_burn_opts burn;        /* lines burnt into the DEM before filling */
} tr_fill_dem_opts;

void tr_fill_dem_opts_init(tr_fill_dem_opts *o);

/* Fills the depressions of src into dst: the lowest surface W >= Z in which
 * every cell has a non-ascending path to an outlet (the DEM's edge or a
 * nodata cell). Nodata and georeferencing are kept. */
int tr_fill_dem(const tr_fill_dem_opts *opts, const char *src, const char *dst, tr_error *err);

/* D8 direction encodings of a direction raster (codes of the 8 neighbours):
 * TR_DIR_TAUDEM  Int16, 1 = E, 2 = NE, 3 = N, 4 = NW, 5 = W, 6 = SW, 7 = S, 8 = SE
 *                (counter-clockwise from east), nodata -32768 (TauDEM d8flowdir -p)
 * TR_DIR_ESRI    Byte, 1 = E, 2 = SE, 4 = S, 8 = SW, 16 = W, 32 = NW, 64 = N, 128 = NE,
 *                nodata 0 (ArcGIS Flow Direction's powers of two)
 * TR_DIR_GRASS   Byte, 1 = NE, 2 = N, 3 = NW, 4 = W, 5 = SW, 6 = S, 7 = SE, 8 = E (code x 45
 *                = degrees counter-clockwise from east, r.watershed's drainage= map), nodata 0
 *                (r.watershed writes a negative code where runoff leaves the region; a Byte
 *                band has no negative, so such cells are nodata here as in the other two) */
typedef enum { TR_DIR_TAUDEM = 0, TR_DIR_ESRI, TR_DIR_GRASS } tr_dir_encoding;

/* How flow leaves a cell: D8 (one neighbour), D-infinity (Tarboton 1997:
 * an angle, the flow split between the two neighbours bounding it), or to
 * every lower neighbour (multiple flow directions, accumulation only, as
 * RichDEM computes them): Quinn et al. (1991), Holmgren (1994), Freeman
 * (1991). */
typedef enum {
  TR_FLOW_D8 = 0,
  TR_FLOW_DINF = 1,
  TR_FLOW_QUINN = 2,
  TR_FLOW_HOLMGREN = 3,
  TR_FLOW_FREEMAN = 4,
  TR_FLOW_RHO8 = 5 /* Fairfield & Leymarie (1991): one receiver, the diagonals' drops
                      divided by 2 - r (r uniform in [0, 1), tr_flowgraph_opts.seed) */
} tr_flow_method;

/* D8 flow directions (flowgraph's first half). Output format and creation
 * options are run->format / run->creation_options. */
typedef struct {
  int filled;               /* 1: src is already depression-free, skip filling */
  tr_dir_encoding encoding;
  const char *slope;        /* TauDEM's sd8 (drop / distance along the direction), or NULL */
  const char *filled_out;   /* also keep the filled DEM here (Float32), or NULL */
  tr_flow_method method;    /* TR_FLOW_D8 (default) or TR_FLOW_DINF: dir_dst is then TauDEM
                               dinfflowdir's angle (-ang, Float32, nodata -FLT_MAX) and slope
                               its slope (-slp, Float32, nodata -1) */
  tr_burn_opts burn;        /* lines burnt into the DEM before filling (not with filled) */
} tr_flowdir_opts;

void tr_flowdir_opts_init(tr_flowdir_opts *o);

/* D8 directions of DEM src into dir_dst, TauDEM d8flowdir's conventions:
 * - the DEM is filled first (tr_fill_dem) unless o->filled, with o->burn's
 *   lines burnt into it first when given (refused with o->filled);
 * - a cell drains to its steepest lower neighbour, drop / distance with the
 *   true distance (diagonal sqrt(dx^2 + dy^2); geographic DEMs: metric cell
 *   sizes per row, as tr_slope), compared as Float32; ties go to the first in
 *   the order E, N, W, S, NE, NW, SW, SE;
 * - cells on the DEM's edge and cells next to NoData get nodata: they are the
 *   outlets, where water leaves the DEM;
 * - flats (cells with no lower neighbour) drain by Barnes, Lehman & Mulla
 *   (2014): towards lower terrain and away from higher terrain, on the AAP
 *   engine (`flowdir` graph program), so every flat cell reaches an outlet
 *   without cycles; a closed depression (only where o->filled is given for a
 *   DEM that has one) gets nodata.
 * o->slope is written by the `d8` local kernel: Float32, 0 on flats, -1
 * (nodata) where the direction is nodata. run->ft applies to that kernel; the
 * fill and the flats are graph programs and run without it.
 * Stages run one after the other (fill, directions, slope); a failure
 * deletes every output already written by the call. */
int tr_flowdir(const tr_run_opts *run, const tr_graph_opts *g, const tr_flowdir_opts *o, const char *src,
               const char *dir_dst, tr_error *err);

/* flowgraph: what is computed from a D8 direction raster, in one run. */
typedef enum { TR_ACC_CELLS = 0, TR_ACC_AREA = 1 } tr_acc_units;
/* What a basin is: one per stream link (TauDEM streamnet -w), per edge
 * outlet (where flow leaves the data), or per outlet point (gagewatershed). */
typedef enum { TR_BASINS_LINKS = 0, TR_BASINS_EDGES = 1, TR_BASINS_OUTLETS = 2 } tr_basin_mode;

typedef struct {
  tr_run_opts run;          /* ft: every graph program's rounds, and the sd8 kernel */
  tr_graph_opts graph;
  const char *dir_in;       /* an existing direction raster; NULL: from the DEM */
  tr_dir_encoding encoding; /* of dir_in (and of dir_out) */
  const char *dir_out;      /* --dir: the directions computed from the DEM */
  const char *filled_in;    /* --filled-in: elevations for strmDrop/Slope (else the filled DEM) */
  int filled;               /* --filled: the DEM is already depression-free */
  const char *slope;        /* --slope: TauDEM's sd8 from the DEM's directions, or NULL */
  const char *weights;      /* --weights: a weight per cell (TauDEM -wg) */
  tr_acc_units units;       /* contributing cells, or area in map units */
  int no_edge_check;        /* TauDEM -nc */
  int acc_float32;          /* Float32 accumulation instead of Float64 */
  double threshold;         /* streams: no-edge-check accumulation >= threshold */
  tr_basin_mode basins_by;  /* TR_BASINS_OUTLETS needs outlets */
  const char *outlets;      /* outlet points (any OGR source), labelled by feature id */
  int snap;                 /* outlets move down the flow path at most this many cells to a stream (50) */
  const char *acc, *streams, *order, *basins, *network; /* products; NULL: not asked */
  const char *network_format; /* OGR driver; NULL: from the extension, else GPKG */
  const char *basin_stats;  /* --basin-stats: a CSV row per basin (basins made, if not asked, in a scratch raster) */
  /* D-infinity (--method dinf; TauDEM dinfflowdir, areadinf, twi): */
  tr_flow_method method;    /* TR_FLOW_D8 (default), TR_FLOW_DINF, or an MFD rule (--acc alone) */
  const char *ang, *slp;    /* --ang, --slp: dinfflowdir's angle and slope (Float32) */
  const char *sca;          /* --sca: areadinf's specific catchment area (Float32, nodata -1;
                               edge-checked unless no_edge_check) */
  const char *twi;          /* --twi: ln(sca / slp) from the no-edge-check sca (Float32, nodata -1) */
  /* Outlets (TauDEM moveoutletstostreams, gagewatershed): */
  const char *moved_outlets; /* --moved-outlets: where each outlet went (points: id, Dist_moved) */
  double snap_distance;     /* > 0: outlets move to the largest accumulation within this distance
                               (map units) instead of down the flow path (snap) */
  const char *id_field;     /* basins labelled by this integer field of the outlets; NULL: feature id */
  const char *outlet_table; /* --outlet-table: "id iddown" per outlet, the outlet its flow meets next
                               (-1: none; TauDEM gagewatershed's -id) */
  /* Downstream of each cell to the streams (cells: no-edge-check accumulation
   * >= threshold, as --streams), Float32, nodata -FLT_MAX as TauDEM: */
  const char *hand;         /* --hand: height above the nearest drainage, TauDEM dinfdistdown
                               -m ave v (the drop along the D-infinity angles from the filled
                               DEM, averaged by the proportions) */
  const char *d8_dist;      /* --d8-dist: TauDEM d8hdisttostrm, the length of the D8 path */
  /* TauDEM gridnet over the D8 directions (no mask, no outlets), nodata -1: */
  const char *plen, *tlen;  /* --plen, --tlen: longest and total upslope path length (Float32) */
  const char *gord;         /* --gord: grid Strahler order of every cell (Int16) */
  /* Multiple flow directions (--method quinn|holmgren|freeman: --acc only, in
   * cells, Float64, nodata -1; RichDEM's weights, flats drained as dinf): */
  double holmgren_x;        /* --holmgren-x: Holmgren's exponent, in [1, 100] (default 4) */
  double freeman_p;         /* --freeman-p: Freeman's exponent, in (0, 100] (default 1.1) */
  /* TauDEM streamnet's text files of the stream links (the links of
   * --network; every rank builds them, rank 0 writes): */
  const char *tree;         /* --tree: one line per link, TauDEM's tree.txt */
  const char *coord;        /* --coord: one line per point of each link, TauDEM's coord.txt */
  /* streamnet's inputs, on the directions' grid: */
  const char *streams_in;   /* --streams-in: the stream cells (value >= 1) instead of the
                               no-edge-check accumulation >= threshold */
  const char *acc_in;       /* --acc-in: the contributing area (in cells, or in area with
                               units TR_ACC_AREA) instead of computing it: the network's
                               areas, and the streams (>= threshold) without streams_in */
  /* Stream burning (with a DEM, not with --filled or --dir-in): the DEM's
   * fill sees the burnt cells, and so every product made from it;
   * --basin-stats' elevations are the DEM as given. */
  tr_burn_opts burn;
  const char *ang_in;       /* --ang-in: existing D-infinity angles (TauDEM areadinf's -ang, radians
                               in [0, 2 pi], its nodata or NaN for none) instead of a DEM: --sca
                               alone is made from them */
  const char *slp_in;       /* --slp-in, --sca-in: an existing D-infinity slope and specific */
  const char *sca_in;       /* catchment area (TauDEM twi's -slp and -sca) instead of a DEM: --twi
                               alone is made from them, ln(sca / slp) */
  uint64_t seed;            /* --seed: Rho8's draws, a hash of (seed, cell, neighbour): the same
                               bytes for any tiling, thread or rank count (default 1) */
  const char *spi;          /* --spi: stream power index sca x slp (the D-infinity slope as a
                               tangent; SAGA's Stream Power Index), from the sca without the edge
                               check as --twi (Float32, nodata -1); also from --slp-in --sca-in */
} tr_flowgraph_opts;

void tr_flowgraph_opts_init(tr_flowgraph_opts *o);

/* Computes the products asked for from the DEM dem (may be NULL with
 * dir_in). Each raster keeps the grid, georeferencing and CRS of the
 * directions; every output is written under a temporary name and renamed. */
int tr_flowgraph(const tr_flowgraph_opts *o, const char *dem, tr_error *err);

/* gdal_grid's algorithms (-a NAME:k=v:...). */
typedef enum {
  TR_GRID_INVDIST = 0,
  TR_GRID_INVDISTNN,
  TR_GRID_AVERAGE,
  TR_GRID_NEAREST,
  TR_GRID_LINEAR,
  TR_GRID_MINIMUM,
  TR_GRID_MAXIMUM,
  TR_GRID_RANGE,
  TR_GRID_COUNT,
  TR_GRID_AVERAGE_DISTANCE,
  TR_GRID_AVERAGE_DISTANCE_PTS
} tr_grid_alg;

/* Points to a grid (gdal_grid's options; terrafort-interpolate(1)). */
typedef struct {
  tr_run_opts run;
  const char *algorithm;      /* -a: "invdist:power=2:..." (NULL: invdist) */
  const char *zfield;         /* -zfield: attribute with the value; NULL: the geometry's Z */
  double z_increase;          /* -z_increase: added to each value (before z_multiply) */
  double z_multiply;          /* -z_multiply (default 1) */
  const char *const *layers;  /* -l (NULL-terminated; NULL: the first layer) */
  const char *where;          /* -where: attribute filter */
  const char *sql;            /* -sql: the points come from this statement's result */
  int has_spat;               /* -spat xmin ymin xmax ymax */
  double spat[4];
  const char *clipsrc;        /* -clipsrc: "xmin ymin xmax ymax", WKT, a vector file, or "spat_extent" */
  const char *clipsrc_layer, *clipsrc_where, *clipsrc_sql;
  int has_txe, has_tye;       /* -txe xmin xmax, -tye ymin ymax (default: the points' extent) */
  double txe[2], tye[2];
  int64_t outsize[2];         /* -outsize cols rows (0: 256 x 256 unless -tr) */
  double tr[2];               /* -tr xres yres */
  int out_type;               /* -ot: a GDALDataType; 0: Float64 */
  const char *a_srs;          /* -a_srs: output CRS (any form OGR reads); NULL: the layer's */
  const char *const *open_options; /* -oo NAME=VALUE for the vector input (NULL-terminated) */
  int xyz;                    /* 1: the input is "x y z" text whatever its name (*.xyz always is) */
  int fill_voids;             /* 1: src is a raster whose NoData cells are filled (gdal_fillnodata) */
  double max_distance;        /* -md: cells to search for valid values (default 100; 0: everything) */
  int smoothing_iterations;   /* -si: 3x3 smoothing passes over the filled cells (default 0) */
  const char *tmp_dir;        /* --tmp: the on-disk point index's folder (NULL: the output's) */
} tr_interpolate_opts;

void tr_interpolate_opts_init(tr_interpolate_opts *o);

/* Interpolates the points of src onto a regular grid written to dst:
 * gdal_grid's algorithms and values, north-up, the algorithm's nodata
 * declared on the band, the CRS of the points' layer or a_srs. */
int tr_interpolate(const tr_interpolate_opts *opts, const char *src, const char *dst, tr_error *err);

/* gdal_fillnodata: the NoData cells of band opts->run.band of src filled by
 * inverse distance from the valid cells around them (max_distance,
 * smoothing_iterations), written to dst in src's type, nodata, georeferencing
 * and CRS. tr_interpolate calls it when opts->fill_voids is set. */
int tr_fill_voids(const tr_interpolate_opts *opts, const char *src, const char *dst, tr_error *err);

/* terrafort batch: many terrafort jobs, each one command line run as a child
 * process of the terrafort program, handed out one at a time to whichever
 * rank is free (under mpirun; one process otherwise), resumable through a
 * done list, with a JSON summary (terrafort-batch(1)). Which words of a job
 * are files it writes is read from its command's option table, as the
 * program prints it (`terrafort CMD --options`), so the library and the
 * program cannot disagree. */
typedef struct {
  tr_run_opts run;         /* progress (jobs ended of those to run), cancelled (its return: the
                              signal that asked, forwarded to the jobs, or 1), live and coll (the
                              ranks' monitor and context under mpirun); the rest is unused */
  const char *jobs_file;   /* one command line a line ('#' comments, shell quoting) */
  const char *dir, *glob, *cmd; /* instead: a job per file of dir matching glob, from the template cmd
                              ({} {name} {stem} {base} {dir}) */
  const char *summary;     /* the JSON summary; NULL: JOBS_FILE.summary.json, with dir:
                              terrafort-batch.summary.json; "-": standard output */
  int force;               /* run every job, even one the done list has */
  int jobs_per_rank;       /* children at once on each rank (default 1, at most 256) */
  double kill_after_s;     /* after a forwarded signal, children still running get SIGKILL (10) */
  const char *program;     /* the terrafort program the jobs run; NULL: $TERRAFORT_PROGRAM, else
                              "terrafort" found on PATH */
} tr_batch_opts;

void tr_batch_opts_init(tr_batch_opts *o);

/* Runs the batch on every rank (each calls it). TR_OK: every job done or
 * skipped; TR_EBATCH: a job failed (the others ran; err says how many);
 * TR_EUSAGE a bad option or job line, TR_EINPUT a missing or empty jobs
 * file, TR_EINTERRUPTED (cancelled), TR_ERANK (a rank lost; both already
 * said on standard error as they happened), TR_EOUTPUT (the summary could
 * not be written), TR_ENOMEM. */
int tr_batch(const tr_batch_opts *opts, tr_error *err);

/* Do the words argv[1..argc-1] (a long option's "=value" cut off) take this
 * form of a command line: every blank-separated word of all given (a word
 * "A|B": either spelling), one word of any (when it names one), and no word
 * of none? flowgraph's TauDEM command lines, which batch reads the same way. */
int tr_argv_form(const char *all, const char *any, const char *none, int argc, char *const *argv);

#ifdef __cplusplus
}
#endif
#endif
