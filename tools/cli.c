/*
 * cli.c - the shared part of every subcommand's argument parsing.
 *
 * gdaldem-style single-dash flags (-b, -of, -co, -q) and GNU long options
 * (--threads, --tile-size, ...) are both accepted anywhere on the line;
 * "--opt=value" works for long options. Numbers are parsed strictly: "12x",
 * "", "nan" or out-of-range values are usage errors, never silently clamped.
 */
#include "cli.h"
#include "options.h"
#include "process.h"
#include "progress.h"
#include "tools.h"

#include "coll_live.h"
#include "ft.h"

#include <cpl_conv.h>
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* ---- the common options (options.h): every command's, on tr_run_opts ---------------------- */

int tf_opt_help(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)row, (void)base, (void)argc, (void)argv, (void)i;
  if (tr_rank() == 0) tf_opt_print_help(cli->set);
  return TF_ARG_EXIT;
}

/* The table, then what batch needs besides it (tr_batch reads this): a
 * "#set" line (the last file name is the output, "--az" for "-az", a job of
 * a batch) and a "#form" line per TauDEM form (tools.h, tf_io_form; "-":
 * none). */
int tf_opt_options(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)row, (void)base, (void)argc, (void)argv, (void)i;
  if (tr_rank() != 0) return TF_ARG_EXIT;
  tf_opt_print_table(cli->set, cli->opts);
  const tf_command *c = tf_command_find(cli->cmd);
  printf("#set\tlast_positional\t%d\tdashdash\t%d\tjob\t%d\n", cli->set->last_positional, cli->set->dashdash,
         c && !c->not_a_job);
  for (int f = 0; c && c->forms && f < TF_IO_FORMS && c->forms[f].name; f++) {
    const tf_io_form *m = &c->forms[f];
#define OR_DASH(s) ((s) && *(s) ? (s) : "-")
    printf("#form\t%s\t%s\t%s\t%s\t%s\t%s\n", m->name, OR_DASH(m->all), OR_DASH(m->any), OR_DASH(m->none),
           OR_DASH(m->reads), OR_DASH(m->writes));
#undef OR_DASH
  }
  return TF_ARG_EXIT;
}

int tf_opt_quiet(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)row, (void)base, (void)argc, (void)argv, (void)i;
  cli->quiet = 1;
  return TF_ARG_TAKEN;
}

static int opt_progress(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)row, (void)base, (void)argc, (void)argv, (void)i;
  cli->progress = 1;
  return TF_ARG_TAKEN;
}

static int opt_co(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)row;
  tr_run_opts *run = base;
  const char *v = tf_value(cli, argc, argv, i);
  if (!v) return TF_ARG_ERROR;
  if (!strchr(v, '=')) {
    tf_usage_error(cli, "-co: '%s' is not NAME=VALUE", v);
    return TF_ARG_ERROR;
  }
  if (cli->nco >= 63) {
    tf_usage_error(cli, "too many -co options");
    return TF_ARG_ERROR;
  }
  cli->co[cli->nco++] = v;
  cli->co[cli->nco] = NULL;
  run->creation_options = cli->co;
  return TF_ARG_TAKEN;
}

/* applied before GDAL starts (tf_apply_config); here only taken */
static int opt_config(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)row, (void)base, (void)argv;
  if (cli->inline_value || *i + 2 >= argc) {
    tf_usage_error(cli, "--config needs a KEY and a VALUE");
    return TF_ARG_ERROR;
  }
  *i += 2;
  return TF_ARG_TAKEN;
}

static int opt_hist_buckets(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)cli, (void)row, (void)argc, (void)argv, (void)i;
  tr_run_opts *run = base;
  if (!run->hist_buckets) run->hist_buckets = TR_HIST_NONE;
  run->stats = 1;
  return TF_ARG_TAKEN;
}

static int opt_percentiles(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)row;
  tr_run_opts *run = base;
  const char *v = tf_value(cli, argc, argv, i);
  if (!v) return TF_ARG_ERROR;
  int k = 0;
  for (const char *p = v;; k++) {
    const char *comma = strchr(p, ',');
    const size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char item[64];
    double d;
    if (k == TR_MAX_PERCENTILES) {
      tf_usage_error(cli, "--percentiles: at most %d values", TR_MAX_PERCENTILES);
      return TF_ARG_ERROR;
    }
    if (len == 0 || len >= sizeof item) {
      tf_usage_error(cli, "--percentiles: '%s' is not a comma-separated list of numbers in [0, 100]", v);
      return TF_ARG_ERROR;
    }
    snprintf(item, sizeof item, "%.*s", (int)len, p);
    if (tf_parse_double(cli, "--percentiles", item, &d)) return TF_ARG_ERROR;
    if (!(d >= 0 && d <= 100)) {
      tf_usage_error(cli, "--percentiles: %s is out of range [0, 100]", item);
      return TF_ARG_ERROR;
    }
    cli->pct[k] = d;
    if (!comma) break;
    p = comma + 1;
  }
  run->percentiles = cli->pct;
  run->npercentiles = k + 1;
  run->stats = 1;
  return TF_ARG_TAKEN;
}

int tf_opt_rank_timeout(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)base;
  long n;
  const char *v = tf_value(cli, argc, argv, i);
  if (!v || tf_parse_int(cli, "--rank-timeout", v, (long)row->lo, (long)row->hi, &n)) return TF_ARG_ERROR;
  coll_live_set_timeout(tf_live(), (double)n);
  return TF_ARG_TAKEN;
}

/* --ft-profile: the source method's xi and epsilon replace any given before */
static int opt_ft_profile(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)cli, (void)row, (void)argc, (void)argv, (void)i;
  tr_run_opts *run = base;
  run->ft_tolerance = 0.0;
  run->ft_error_rate = 0.0;
  return TF_ARG_TAKEN;
}

static int opt_ft_max_errors(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)cli, (void)row, (void)argc, (void)argv, (void)i;
  tr_run_opts *run = base;
  if (!run->ft_max_errors) run->ft_max_errors = -1; /* 0 given: no fault is tolerated */
  return TF_ARG_TAKEN;
}

static int opt_device(tf_cli *cli, const tf_opt *row, void *base, int argc, char **argv, int *i) {
  (void)row;
  tr_run_opts *run = base;
  static const char *const names[] = {"cpu", "auto", "gpu"}; /* tr_device order */
  const char *v = tf_value(cli, argc, argv, i);
  if (!v) return TF_ARG_ERROR;
  for (int d = 0; d < 3; d++)
    if (!strcmp(v, names[d])) {
      run->device = (tr_device)d;
      run->device_pin = 0;
      return TF_ARG_TAKEN;
    }
  /* gpu:N, one device for every rank of the run */
  if (!strncmp(v, "gpu:", 4)) {
    char *end;
    const long n = v[4] >= '0' && v[4] <= '9' ? strtol(v + 4, &end, 10) : -1;
    if (n >= 0 && n < 4096 && *end == '\0') {
      run->device = TR_DEVICE_GPU;
      run->device_pin = (int)n + 1;
      return TF_ARG_TAKEN;
    }
    tf_usage_error(cli, "--device: '%s': gpu:N wants a device number N from 0", v);
    return TF_ARG_ERROR;
  }
  tf_usage_error(cli, "--device: '%s' is not one of auto, cpu, gpu, gpu:N", v);
  return TF_ARG_ERROR;
}

_Static_assert(sizeof(tr_ft_mode) == sizeof(int) && sizeof(tr_device) == sizeof(int), "choices are stored as int");

#define RUN(f) offsetof(tr_run_opts, f)
const tf_opt tf_common_opts[] = {
    {.kind = TF_INT, .names = "-b --band", .arg = "N", .off = RUN(band), .lo = 1, .hi = 1000000,
     .doc = "input band (default 1)"},
    {.kind = TF_STR, .names = "-of --format", .arg = "FMT", .off = RUN(format),
     .doc = "GDAL output driver (default: from the extension, else GTiff)"},
    {.kind = TF_CUSTOM, .names = "-co --co", .arg = "NAME=VALUE", .fn = opt_co,
     .doc = "creation option for the output driver (repeatable)"},
    {.kind = TF_CUSTOM, .names = "--config", .nvalues = 2, .fn = opt_config, .left = "--config KEY VALUE",
     .doc = "a GDAL configuration option, as in GDAL's utilities (repeatable)"},
    TF_QUIET_ROW,
    {.kind = TF_ACTION, .names = "--progress -progress", .fn = opt_progress,
     .doc = "the progress line even when stderr is not a terminal (a log,\n"
            "mpirun: the writer's line, as GDAL's utilities' -progress)"},
    {.kind = TF_INT, .names = "--threads", .arg = "N", .off = RUN(threads), .lo = 1, .hi = 4096,
     .doc = "worker threads, 1..4096, at most 4 per core (default: all cores)"},
    {.kind = TF_INT, .names = "--tile-size", .arg = "N", .off = RUN(tile_size), .lo = 1, .hi = 16384,
     .doc = "cells per tile side (default 512)"},
    {.kind = TF_SIZE, .names = "--mem", .arg = "SIZE", .off = RUN(mem),
     .doc = "memory the run (each rank) may keep, e.g. 512M, 4G (default:\n"
            "3/4 of what it may have; fill: 1.2x its DEM, flowgraph: 1.3x a\n"
            "stage, where that holds half of its state, terrafort-fill(1));\n"
            "fill and flowgraph spill beyond it"},
    {.kind = TF_FLAG, .names = "--stats", .off = RUN(stats),
     .doc = "write min/max/mean/stddev as band metadata, and each band's\n"
            "exact histogram (gdalinfo reads it with its hist flag; GTiff: OUTPUT.aux.xml)"},
    {.kind = TF_INT, .names = "--hist-buckets", .arg = "N", .off = RUN(hist_buckets), .lo = 0, .hi = TR_HIST_MAX_BUCKETS,
     .fn = opt_hist_buckets,
     .doc = "histogram buckets, 1..65536 (default 256; 0: no histogram,\n"
            "so no rank waits for the others' range); implies --stats"},
    {.kind = TF_CUSTOM, .names = "--percentiles", .fn = opt_percentiles, .left = "--percentiles P,...",
     .doc = "exact cell values at these percentiles (0..100, numpy's\n"
            "'inverted_cdf'), as STATISTICS_PERCENTILE_P; implies --stats"},
    {.kind = TF_STR, .names = "--stats-json", .arg = "FILE", .off = RUN(stats_json), .role = TF_ROLE_OUT,
     .doc = "write the statistics and the collective's report as JSON (-: stdout)"},
    {.kind = TF_INT, .names = "--coll-timeout", .arg = "MS", .off = RUN(coll_timeout_ms), .lo = 1, .hi = 86400000,
     .doc = "timeout-aggregation threshold for statistics"},
    {.kind = TF_INT, .names = "--coll-arity", .arg = "K", .off = RUN(coll_arity), .lo = 2, .hi = 1024,
     .doc = "children per interior rank of the statistics' aggregation tree\n"
            "(2..1024; default: every rank a child of the writer)"},
    {.kind = TF_CHOICE, .names = "--ft", .choices = "off|dual|replay", .off = RUN(ft),
     .doc = "fault tolerance: dual-redundant tiles (fill, flowgraph: rounds),\n"
            "or tracked launches replayed when a fault is detected (default off)"},
    {.kind = TF_DOUBLE, .names = "--ft-tolerance", .arg = "XI", .off = RUN(ft_tolerance), .lo = 0, .hi = INFINITY,
     .doc = "cells differing by >= XI disagree (default 0: bit-exact)"},
    {.kind = TF_DOUBLE, .names = "--ft-error-rate", .arg = "EPS", .off = RUN(ft_error_rate), .lo = 0, .hi = 1,
     .doc = "a sub-block is wrong above this share of cells (default 0)"},
    {.kind = TF_CHOICE, .names = "--ft-profile", .choices = "strict|source", .off = RUN(ft_source_profile),
     .fn = opt_ft_profile, .left = "--ft-profile source", .doc = "XI = 0.1, EPS = 0.15, the source method's values"},
    {.kind = TF_CHOICE, .names = "--ft-mode", .choices = "fast|basic", .off = RUN(ft_basic),
     .doc = "sub-block overlap (default) or whole-block baseline"},
    {.kind = TF_STR, .names = "--ft-report", .arg = "FILE", .off = RUN(ft_report), .role = TF_ROLE_OUT,
     .doc = "fault-tolerance counters as JSON (-: stdout)"},
    {.kind = TF_INT, .names = "--ft-timeout", .arg = "MS", .off = RUN(ft_timeout_ms), .lo = 1, .hi = 3600000,
     .doc = "a worker silent this long loses its work to another (" FT_STRINGIFY(FT_TIMEOUT_RUN_MS) ")"},
    {.kind = TF_INT, .names = "--ft-max-errors", .arg = "N", .off = RUN(ft_max_errors), .lo = 0, .hi = 1000000,
     .fn = opt_ft_max_errors,
     .doc = "--ft replay: faults repaired before giving up (exit 9; default " FT_STRINGIFY(FT_MAX_ERRORS_DEFAULT) ")"},
    {.kind = TF_DOUBLE, .names = "--ft-check", .arg = "R", .off = RUN(ft_check), .lo = 0, .hi = 1,
     .doc = "--ft replay: re-execute this share of launches and compare checksums"},
    {.kind = TF_CUSTOM, .names = "--device", .choices = "cpu|auto|gpu", .fn = opt_device, .left = "--device cpu|auto|gpu",
     .doc = "where kernels with a GPU version run (default cpu; auto: a GPU\n"
            "when one is usable); under mpirun each rank takes its node's\n"
            "GPU (node rank modulo GPUs); gpu:N: GPU N for every rank"},
    {.kind = TF_CHOICE, .names = "--replay-on", .choices = "gpu|cpu", .off = RUN(replay_on_cpu),
     .doc = "where a faulty GPU launch is replayed (default gpu)"},
    TF_RANK_TIMEOUT_ROW,
    {.kind = TF_STR, .names = "--inject", .arg = "SPEC", .off = RUN(inject),
     .doc = "fault injection, as TERRAFORT_INJECT (see terrafort(1))"},
    TF_OPTIONS_ROW,
    TF_HELP_ROW,
    TF_OPT_END,
};
#undef RUN


int tf_usage_error(tf_cli *cli, const char *fmt, ...) {
  /* under mpirun every rank parses the same line: rank 0 speaks */
  if (tr_rank() != 0) return tr_exit_code(TR_EUSAGE);
  va_list ap;
  fprintf(stderr, "terrafort %s: ", cli->cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (see 'terrafort %s --help')\n", cli->cmd);
  return tr_exit_code(TR_EUSAGE);
}

int tf_parse_int(tf_cli *cli, const char *opt, const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (!s[0] || *end || errno) {
    tf_usage_error(cli, "%s: '%s' is not an integer", opt, s);
    return -1;
  }
  if (v < lo || v > hi) {
    tf_usage_error(cli, "%s: %ld is out of range [%ld, %ld]", opt, v, lo, hi);
    return -1;
  }
  *out = v;
  return 0;
}

int tf_parse_size(tf_cli *cli, const char *opt, const char *s, int64_t *out) {
  char *end;
  errno = 0;
  const double v = strtod(s, &end);
  static const char units[] = "BKMGT";
  const char *u = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
  double scale = 1 << 20; /* a plain number is MiB, as GDAL_CACHEMAX */
  if (u && *u) {
    scale = pow(1024.0, (double)(u - units));
    end++;
    if (u != units && (*end == 'i' || *end == 'I')) end++;
    if (u != units && (*end == 'b' || *end == 'B')) end++;
  }
  if (!s[0] || end == s || *end || errno || !isfinite(v) || v <= 0 || v * scale >= 9.0e18) {
    tf_usage_error(cli, "%s: '%s' is not a size (a positive number with B, K, M, G or T; plain numbers are MiB)", opt, s);
    return -1;
  }
  *out = (int64_t)(v * scale);
  return 0;
}

int tf_parse_double(tf_cli *cli, const char *opt, const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (!s[0] || *end || !isfinite(v) || (errno && errno != ERANGE)) {
    tf_usage_error(cli, "%s: '%s' is not a finite number", opt, s);
    return -1;
  }
  if (errno == ERANGE || (v != 0 && fabs(v) < DBL_MIN)) {
    /* a denormal (or an underflow to 0): no meaningful scale, step or tolerance */
    tf_usage_error(cli, "%s: '%s' is too close to zero (below %g)", opt, s, DBL_MIN);
    return -1;
  }
  *out = v;
  return 0;
}

/* For "--opt=value" the value follows '='; otherwise it is the next arg. */
const char *tf_value(tf_cli *cli, int argc, char **argv, int *i) {
  if (cli->inline_value) {
    const char *v = cli->inline_value;
    cli->inline_value = NULL;
    return v;
  }
  if (*i + 1 >= argc) {
    tf_usage_error(cli, "option %s needs a value", argv[*i]);
    return NULL;
  }
  return argv[++*i];
}

void tf_apply_config(int argc, char **argv) {
  for (int k = 2; k < argc; k++)
    if (!strcmp(argv[k], "--config") && k + 2 < argc) {
      CPLSetConfigOption(argv[k + 1], argv[k + 2]);
      k += 2;
    }
}

int tf_cli_parse(tf_cli *cli, void *opts, int argc, char **argv, int *exit_code) {
  cli->opts = opts;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    cli->inline_value = NULL;
    if (a[0] != '-' || !a[1]) { /* a file name ("-" too) */
      if (cli->npositional >= 8) {
        tf_usage_error(cli, "too many file names");
        *exit_code = tr_exit_code(TR_EUSAGE);
        return 1;
      }
      cli->positional[cli->npositional++] = a;
      continue;
    }
    /* "--name=value" for long options */
    char name[64];
    const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
    snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - a) : (int)strlen(a), a);
    size_t base = 0;
    const tf_opt *row = strlen(a) < sizeof name || eq ? tf_opt_find(cli->set, name, &base) : NULL;
    /* gdaldem hillshade's single-dash names also with two dashes */
    if (!row && cli->set->dashdash && name[1] == '-') row = tf_opt_find(cli->set, name + 1, &base);
    int r;
    if (!row) {
      char s[64];
      if (tf_opt_suggest(cli->set, a, s, sizeof s)) tf_usage_error(cli, "unknown option '%s': did you mean '%s'?", a, s);
      else tf_usage_error(cli, "unknown option '%s'", a);
      r = TF_ARG_ERROR;
    } else {
      cli->inline_value = eq ? eq + 1 : NULL;
      r = tf_opt_take(cli, row, opts, base, argc, argv, &i);
      if (r == TF_ARG_TAKEN && cli->inline_value) { /* "--quiet=1": a flag's value left */
        tf_usage_error(cli, "option %s takes no value ('%s')", name, a);
        r = TF_ARG_ERROR;
      }
      cli->inline_value = NULL;
    }
    if (r == TF_ARG_TAKEN) continue;
    *exit_code = r == TF_ARG_EXIT ? 0 : tr_exit_code(TR_EUSAGE);
    return 1;
  }
  return 0;
}


static int progress_quiet(double frac, const char *msg, void *user) {
  (void)frac;
  (void)msg;
  (void)user;
  return !tf_stop_asked();
}

static int cancelled(void *user) {
  (void)user;
  return tf_stop_asked();
}

int tf_progress_line(double frac, const char *msg, void *user) {
  (void)msg;
  (void)user;
  static int shown = -1; /* the last tick on the line: 40 of them, a number every fourth */
  const int tick = frac >= 1 ? 40 : frac > 0 ? (int)(frac * 40) : 0;
  if (tick < shown && shown >= 39) shown = -1; /* the last line ended: a new one */
  if (tick <= shown) return 1;
  for (int t = shown + 1; t <= tick; t++) {
    if (t % 4) fputc('.', stderr);
    else fprintf(stderr, "%d", t / 4 * 10);
  }
  shown = tick;
  fputs(tick == 40 ? " - done.\n" : "", stderr);
  fflush(stderr);
  return 1;
}

static int progress_term(double frac, const char *msg, void *user) {
  if (tf_stop_asked()) return 0;
  return tf_progress_line(frac, msg, user);
}

/* A warning of the run (tr_run_opts.warning): one line, the run goes on. */
static void warning_line(const char *msg, void *user) {
  static char last[600]; /* a command of several products warns once, not per product */
  if (!strncmp(last, msg, sizeof last - 1)) return;
  snprintf(last, sizeof last, "%s", msg);
  fprintf(stderr, "terrafort %s: warning: %s\n", (const char *)user, msg);
}

void tf_cli_finish(tf_cli *cli, tr_run_opts *run) {
  tf_stop_on_signals(cli->cmd);
  /* Threads beyond 4 per core only cost stacks (and can make libgomp abort
   * under a memory limit); terrafort(1), --threads. */
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const long most = cores > 0 ? 4 * cores : 4;
  if (run->threads > most) run->threads = (int)most;
  /* Under mpirun --progress (every rank has the same options): the
   * writer's line from every rank's figures (progress.h). Otherwise the
   * writer's own line, on a terminal or when asked (--progress: a log);
   * -q wins. */
  const int ranks_line = cli->progress && !cli->quiet && tf_progress_start(run, cli->cmd, 1, run->coll_arity);
  run->progress = (!cli->quiet && !ranks_line && (isatty(STDERR_FILENO) || cli->progress) && tr_rank() == 0)
                      ? progress_term
                      : progress_quiet;
  run->progress_user = NULL;
  run->cancelled = cancelled;
  run->warning = warning_line;
  run->warning_user = (void *)cli->cmd;
  run->live = tf_live();
  run->coll = tf_coll();
  /* GDAL's block cache and glibc's heap are the process's, so the program
   * sets them, to each run's plan (terrafort(1), MEMORY) */
  run->gdal_cache = tr_gdal_cache_apply;
  run->heap_spill = tf_process_heap_spill();
  if (!run->inject) run->inject = getenv("TERRAFORT_INJECT");
  /* --device auto: say so when there is no GPU to use */
  char why[256] = "";
  if (run->device == TR_DEVICE_AUTO && !cli->quiet && tr_rank() == 0 && tr_gpu_count(why, sizeof why) == 0)
    fprintf(stderr, "terrafort %s: note: --device auto: running on the CPU (%s)\n", cli->cmd, why);
}

int tf_report(tf_cli *cli, int status, const tr_error *err) {
  /* Every rank agreed on the same error; one line is enough. A lost rank is
   * seen by each survivor on its own (rank 0 may be the lost one): each
   * says so, naming itself. */
  const int code = tr_exit_code(status);
  if (!tf_process_report(code)) return code; /* the stop deadline spoke and is ending the process */
  if (status == TR_ERANK)
    fprintf(stderr, "terrafort %s: rank %d: %s\n", cli->cmd, tr_rank(), err->msg[0] ? err->msg : tr_strerror(status));
  else if (status && tr_rank() == 0)
    fprintf(stderr, "terrafort %s: %s\n", cli->cmd, err->msg[0] ? err->msg : tr_strerror(status));
  return code;
}

/* ---- stream burning's options (tr_burn_opts) and the AAP engine's (tr_graph_opts) ---------- */

#define BURN(f) offsetof(tr_burn_opts, f)
const tf_opt tf_burn_opts_rows[] = {
    {.kind = TF_HEADING, .doc = "Stream burning (before the DEM is conditioned; terrafort-fill(1), BURNING):"},
    {.kind = TF_STR, .names = "--burn", .arg = "FILE", .off = BURN(file), .role = TF_ROLE_IN,
     .doc = "lines (any OGR vector; another CRS is reprojected) whose cells are\n"
            "lowered by --burn-depth first, so the flow follows them through\n"
            "embankments; points and polygons are refused"},
    {.kind = TF_DOUBLE, .names = "--burn-depth", .arg = "D", .off = BURN(depth), .lo = 0, .lo_open = 1, .hi = INFINITY,
     .doc = "how far, in the DEM's elevation units (> 0; required with --burn)"},
    {.kind = TF_STR, .names = "--burn-layer", .arg = "NAME", .off = BURN(layer), .doc = "the layer of FILE (default: its first)"},
    {.kind = TF_FLAG, .names = "--burn-all-touched", .off = BURN(all_touched),
     .doc = "every cell a line passes through (GDAL's ALL_TOUCHED), not\n"
            "GDAL's line rule (one cell per step)"},
    TF_OPT_END,
};
#undef BURN

#define GRAPH(f) offsetof(tr_graph_opts, f)
const tf_opt tf_graph_opts_rows[] = {
    {.kind = TF_HEADING, .doc = "Engine (the AAP engine of the graph computations; terrafort(1), ENGINE):"},
    {.kind = TF_STR, .names = "--schedule", .arg = "S", .off = GRAPH(schedule),
     .doc = "aap (default), bsp, ap, ssp, random: how fragments wait for messages"},
    {.kind = TF_INT, .names = "--staleness", .arg = "C", .off = GRAPH(staleness), .lo = 0, .hi = 1000000,
     .doc = "ssp: how many rounds a fragment may run ahead (default 1)"},
    {.kind = TF_DOUBLE, .names = "--ds-max", .arg = "MS", .off = GRAPH(ds_max_ms), .lo = 0, .lo_open = 1, .hi = INFINITY,
     .doc = "aap: longest delay stretch before a round"},
    {.kind = TF_INT, .names = "--l-bottom", .arg = "N", .off = GRAPH(l_bottom), .lo = 1, .hi = 1000000,
     .left = "--l-bottom N, --l-up N", .doc = "aap: clamp of the messages a fragment waits for"},
    {.kind = TF_INT, .names = "--l-up", .arg = "N", .off = GRAPH(l_up), .lo = 1, .hi = 1000000},
    {.kind = TF_DOUBLE, .names = "--straggler-ratio", .arg = "R", .off = GRAPH(straggler_ratio), .lo = 1, .lo_open = 1,
     .hi = INFINITY,
     .doc = "aap: hold fragments to the round of a neighbour R times\n"
            "slower per cell (less work, not faster; off by default)"},
    {.kind = TF_DOUBLE, .names = "--cache-mb --z-cache-mb", .arg = "MB", .off = GRAPH(cache_mb), .lo = 0, .hi = INFINITY,
     .doc = "elevation tiles kept in memory (default 16)"},
    {.kind = TF_STR, .names = "--tmp", .arg = "DIR", .off = GRAPH(tmp_dir),
     .doc = "folder for the spilled state beyond --mem (default: the output's)"},
    {.kind = TF_STR, .names = "--aap-stats", .arg = "FILE", .off = GRAPH(aap_stats), .role = TF_ROLE_OUT,
     .doc = "per-worker engine statistics as JSON (-: stdout)"},
    TF_OPT_END,
};
#undef GRAPH

