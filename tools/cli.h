/*
 * cli.h - what every terrafort subcommand shares on the command line:
 * the options of tr_run_opts, number parsing, progress, errors, help.
 */
#ifndef TF_CLI_H
#define TF_CLI_H

#include "terrain.h"

/* Parse state for one subcommand invocation. */
typedef struct {
  const char *cmd;          /* "slope", ... */
  const char *usage;        /* help text printed by --help */
  int quiet;
  const char *positional[8];
  int npositional;
  const char *co[64];       /* -co values, NULL-terminated */
  int nco;
  const char *inline_value; /* the value of the "--opt=value" being parsed */
  double pct[TR_MAX_PERCENTILES]; /* --percentiles values (run->percentiles) */
  int progress;             /* --progress: the line even when stderr is no terminal */
} tf_cli;

/* Result of trying one argument as a common option. */
enum { TF_ARG_UNKNOWN = 0, TF_ARG_TAKEN = 1, TF_ARG_ERROR = -1, TF_ARG_EXIT = -2 };

/* Tries argv[*i] as a common option; advances *i past its value. */
int tf_cli_common(tf_cli *cli, tr_run_opts *run, int argc, char **argv, int *i);
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

/* A subcommand's own flags: handles argv[*i] (advancing *i past a value)
 * and returns TF_ARG_TAKEN, TF_ARG_UNKNOWN, or TF_ARG_ERROR after printing. */
typedef int (*tf_flag_fn)(tf_cli *cli, void *opts, int argc, char **argv, int *i);

/* Parses argv: common options, the command's flags, file names. Returns 0
 * to go on, or 1 with *exit_code set (--help: 0; a usage error: 2). */
int tf_cli_parse(tf_cli *cli, tr_run_opts *run, tf_flag_fn own, void *opts, int argc, char **argv, int *exit_code);

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

/* The AAP engine's options every graph command shares (--schedule,
 * --staleness, --ds-max, --l-bottom, --l-up, --straggler-ratio,
 * --cache-mb (fill: --z-cache-mb), --aap-stats): a TF_ARG_* code. */
int tf_graph_flag(tf_cli *cli, tr_graph_opts *g, int argc, char **argv, int *i);

/* Stream burning's options (tr_burn_opts), shared by the commands that take
 * a DEM into hydrology (fill, breach, flowgraph): --burn FILE, --burn-depth
 * D (a positive finite number), --burn-layer NAME, --burn-all-touched. A
 * TF_ARG_* code. TF_BURN_HELP is their lines of --help. */
int tf_burn_flag(tf_cli *cli, tr_burn_opts *b, int argc, char **argv, int *i);
#define TF_BURN_HELP                                                                                   \
  "Stream burning (before the DEM is conditioned; terrafort-fill(1), BURNING):\n"                     \
  "  --burn FILE            lines (any OGR vector; another CRS is reprojected) whose cells are\n"   \
  "                         lowered by --burn-depth first, so the flow follows them through\n"      \
  "                         embankments; points and polygons are refused\n"                         \
  "  --burn-depth D         how far, in the DEM's elevation units (> 0; required with --burn)\n"    \
  "  --burn-layer NAME      the layer of FILE (default: its first)\n"                               \
  "  --burn-all-touched     every cell a line passes through (GDAL's ALL_TOUCHED), not\n"           \
  "                         GDAL's line rule (one cell per step)\n"

/* -alg Horn|ZevenbergenThorne (gdaldem's names, any case): reads the
 * value after argv[*i]; returns a TF_ARG_* code. */
int tf_gradient_alg_flag(tf_cli *cli, int argc, char **argv, int *i, tr_gradient_alg *alg);

/* Option names for `terrafort batch` (cli.c): common and engine options
 * that take a value, and those whose value is an output file. */
extern const char *tf_common_values, *tf_common_outputs, *tf_graph_values, *tf_graph_outputs;

/* Common option help, appended to each subcommand's --help. */
extern const char *tf_common_help;

/* Edits (insertions, deletions, substitutions, swaps of neighbours; any
 * case) between a and b, counted up to 3; 4 means more (commands.c). */
int tf_edits(const char *a, const char *b);
/* The option of a help text (any word starting with '-' the help names, in
 * its option lines, usage lines and lists) that a mistyped option most likely meant: at
 * most two edits, or the leading part of exactly one option. Into buf;
 * NULL when none is near (commands.c). */
const char *tf_option_suggest(const char *help, const char *opt, char *buf, size_t len);

#endif
