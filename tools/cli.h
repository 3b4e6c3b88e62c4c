/*
 * cli.h - what every terrafort subcommand shares on the command line:
 * the options of tr_run_opts, number parsing, progress, errors, help.
 */
#ifndef TF_CLI_H
#define TF_CLI_H

#include <math.h>

#include "coll_live.h"
#include "options.h"
#include "terrain.h"

/* Parse state for one subcommand invocation. */
struct tf_cli {
  const char *cmd;          /* "slope", ... */
  const tf_opt_set *set;    /* its options (options.h) */
  void *opts;               /* the struct they are parsed into */
  int quiet;
  const char *positional[8];
  int npositional;
  const char *co[64];       /* -co values, NULL-terminated */
  int nco;
  const char *inline_value; /* the value of the "--opt=value" being parsed */
  double pct[TR_MAX_PERCENTILES]; /* --percentiles values (run->percentiles) */
  int progress;             /* --progress: the line even when stderr is no terminal */
};

/* Result of trying one argument as a common option. */
enum { TF_ARG_UNKNOWN = 0, TF_ARG_TAKEN = 1, TF_ARG_ERROR = -1, TF_ARG_EXIT = -2 };

/* Sets every "--config KEY VALUE" of a command line (argv[1] the command)
 * as a GDAL configuration option: called before GDAL registers its drivers,
 * as GDAL's utilities do, so options read then (GDAL_SKIP) work too. */
void tf_apply_config(int argc, char **argv);

/* Strict number parsing: the whole string must be a number in range. */
int tf_parse_int(tf_cli *cli, const char *opt, const char *s, long lo, long hi, long *out);
/* A size for --mem: a positive number with B, K, M, G or T (powers of 1024);
 * a plain number is MiB. 0, or -1 after a usage error. */
int tf_parse_size(tf_cli *cli, const char *opt, const char *s, int64_t *out);
int tf_parse_double(tf_cli *cli, const char *opt, const char *s, double *out);
/* The value after an option, or an error if it is missing. */
const char *tf_value(tf_cli *cli, int argc, char **argv, int *i);

/* Prints "terrafort CMD: message" and returns the usage exit code (2). */
int tf_usage_error(tf_cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parses argv with cli->set into opts (the command's parse struct): options
 * anywhere on the line, file names into cli->positional. Returns 0 to go on,
 * or 1 with *exit_code set (--help, --options: 0; a usage error: 2). */
int tf_cli_parse(tf_cli *cli, void *opts, int argc, char **argv, int *exit_code);

/* GDAL's progress line ("0...10...20...100 - done.") on stderr: GDAL's own
 * GDALTermProgress prints it on stdout, where a report to "-" goes
 * (--stats-json -, batch --summary -). A fraction lower than the last one
 * starts a new line. Always 1 (go on). */
int tf_progress_line(double frac, const char *msg, void *user);

/* Installs progress (GDAL style on a terminal unless -q) and Ctrl-C
 * cancellation; finishes the run options before the library call. */
void tf_cli_finish(tf_cli *cli, tr_run_opts *run);

/* Maps a library status to the exit code, printing the error line. */
int tf_report(tf_cli *cli, int status, const tr_error *err);

/* The rows of a process's own options, in the common group (cli.c) and in
 * batch's table: --rank-timeout, -q, --options, -h. */
#define TF_RANK_TIMEOUT_ROW                                                                                          \
  {.kind = TF_CUSTOM, .names = "--rank-timeout", .arg = "MS", .fn = tf_opt_rank_timeout,                             \
   .lo = COLL_LIVE_MIN_TIMEOUT_MS, .hi = COLL_LIVE_MAX_TIMEOUT_MS,                                                    \
   .doc = "under mpirun: a rank silent this long ends the run, exit 10 (" COLL_LIVE_STR(COLL_LIVE_DEFAULT_TIMEOUT_MS) ")"}
#define TF_QUIET_ROW {.kind = TF_ACTION, .names = "-q --quiet", .fn = tf_opt_quiet, .doc = "no progress line"}
#define TF_OPTIONS_ROW                                            \
  {.kind = TF_ACTION, .names = "--options", .fn = tf_opt_options, \
   .doc = "this command's options as a table, one a line (terrafort(1), OPTIONS TABLE)"}
#define TF_HELP_ROW {.kind = TF_ACTION, .names = "-h --help", .fn = tf_opt_help, .doc = "this help"}

/* gdaldem's -compute_edges (an int flag at OFF) and -s SCALE (a positive
 * double at OFF), rows of several commands' tables. */
#define TF_EDGES_ROW(OFF) \
  {.kind = TF_FLAG, .names = "-compute_edges", .off = (OFF), .doc = "compute edge cells too"}
#define TF_SCALE_ROW(OFF)                                                                                      \
  {.kind = TF_DOUBLE, .names = "-s -scale", .arg = "SCALE", .off = (OFF), .lo = 0, .lo_open = 1, .hi = INFINITY, \
   .doc = "vertical / horizontal units (gdaldem -s); without it a\n"                                            \
          "geographic DEM gets metric cell sizes from its ellipsoid"}

/* gdaldem's -alg Horn|ZevenbergenThorne (any case) into a tr_gradient_alg
 * at offset OFF of the command's struct: a row of its table. */
#define TF_ALG_ROW(OFF)                                                                                \
  {.kind = TF_CHOICE, .names = "-alg", .choices = "Horn|ZevenbergenThorne", .nocase = 1, .off = (OFF), \
   .doc = "gradient (default Horn)"}

/* Edits (insertions, deletions, substitutions, swaps of neighbours; any
 * case) between a and b, counted up to 3; 4 means more (commands.c). */
int tf_edits(const char *a, const char *b);
#endif
