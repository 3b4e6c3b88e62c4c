/*
 * cli.c - the shared part of every subcommand's argument parsing.
 *
 * gdaldem-style single-dash flags (-b, -of, -co, -q) and GNU long options
 * (--threads, --tile-size, ...) are both accepted anywhere on the line;
 * "--opt=value" works for long options. Numbers are parsed strictly: "12x",
 * "", "nan" or out-of-range values are usage errors, never silently clamped.
 */
#include "cli.h"
#include "process.h"

#include "coll_live.h"
#include "ft.h"

#include <cpl_conv.h>
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

const char *tf_common_help =
    "Common options:\n"
    "  -b N, --band N          input band (default 1)\n"
    "  -of FMT, --format FMT   GDAL output driver (default: from the extension, else GTiff)\n"
    "  -co NAME=VALUE          creation option for the output driver (repeatable)\n"
    "  --config KEY VALUE      a GDAL configuration option, as in GDAL's utilities (repeatable)\n"
    "  -q, --quiet             no progress line\n"
    "  --progress, -progress   the progress line even when stderr is not a terminal (a log,\n"
    "                          mpirun: the writer's line, as GDAL's utilities' -progress)\n"
    "  --threads N             worker threads, 1..4096, at most 4 per core (default: all cores)\n"
    "  --tile-size N           cells per tile side (default 512)\n"
    "  --mem SIZE              memory the run (each rank) may keep, e.g. 512M, 4G (default:\n"
    "                          3/4 of what it may have); fill and flowgraph spill beyond it\n"
    "  --stats                 write min/max/mean/stddev as band metadata, and each band's\n"
    "                          exact histogram (gdalinfo -hist reads it; GTiff: OUTPUT.aux.xml)\n"
    "  --hist-buckets N        histogram buckets, 1..65536 (default 256; 0: no histogram,\n"
    "                          so no rank waits for the others' range); implies --stats\n"
    "  --percentiles P,...     exact cell values at these percentiles (0..100, numpy's\n"
    "                          'inverted_cdf'), as STATISTICS_PERCENTILE_P; implies --stats\n"
    "  --stats-json FILE       write the statistics and the collective's report as JSON (-: stdout)\n"
    "  --coll-timeout MS       timeout-aggregation threshold for statistics\n"
    "  --coll-arity K          children per interior rank of the statistics' aggregation tree\n"
    "                          (2..1024; default: every rank a child of the writer)\n"
    "  --ft off|dual|replay    fault tolerance: dual-redundant tiles (fill, flowgraph: rounds),\n"
    "                          or tracked launches replayed when a fault is detected (default off)\n"
    "  --ft-tolerance XI       cells differing by >= XI disagree (default 0: bit-exact)\n"
    "  --ft-error-rate EPS     a sub-block is wrong above this share of cells (default 0)\n"
    "  --ft-profile source     XI = 0.1, EPS = 0.15, the source method's values\n"
    "  --ft-mode fast|basic    sub-block overlap (default) or whole-block baseline\n"
    "  --ft-report FILE        fault-tolerance counters as JSON (-: stdout)\n"
    "  --ft-timeout MS         a worker silent this long loses its work to another (" FT_STRINGIFY(FT_TIMEOUT_RUN_MS) ")\n"
    "  --ft-max-errors N       --ft replay: faults repaired before giving up (exit 9; default " FT_STRINGIFY(FT_MAX_ERRORS_DEFAULT) ")\n"
    "  --ft-check R            --ft replay: re-execute this share of launches and compare checksums\n"
    "  --device cpu|auto|gpu   where kernels with a GPU version run (default cpu; auto: a GPU\n"
    "                          when one is usable); under mpirun each rank takes its node's\n"
    "                          GPU (node rank modulo GPUs); gpu:N: GPU N for every rank\n"
    "  --replay-on gpu|cpu     where a faulty GPU launch is replayed (default gpu)\n"
    "  --rank-timeout MS       under mpirun: a rank silent this long ends the run, exit 10 (" COLL_LIVE_STR(
        COLL_LIVE_DEFAULT_TIMEOUT_MS) ")\n"
    "  --inject SPEC           fault injection, as TERRAFORT_INJECT (see terrafort(1))\n"
    "  -h, --help              this help\n";

/* For `terrafort batch` (tools.h, tf_io): the common and engine options
 * above that take a value, and those whose value is a file written. Keep in
 * step with tf_cli_common and tf_graph_flag. */
const char *tf_common_values =
    "-b --band -of --format -co --co --config:2 --threads --tile-size --mem --rank-timeout --coll-timeout --coll-arity --ft --ft-tolerance "
    "--ft-error-rate --ft-profile --ft-mode --ft-timeout --ft-max-errors --ft-check --device --replay-on --inject "
    "--hist-buckets --percentiles";
const char *tf_common_outputs = "--stats-json --ft-report";
const char *tf_graph_values =
    "--schedule --staleness --straggler-ratio --ds-max --z-cache-mb --cache-mb --l-bottom --l-up --tmp";
const char *tf_graph_outputs = "--aap-stats";

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

/* Does arg name option `name` (also as "--name=value", for long options)? */
static int is(tf_cli *cli, const char *arg, const char *name) {
  size_t n = strlen(name);
  if (strncmp(arg, name, n) != 0) return 0;
  if (arg[n] == 0) return 1;
  if (arg[n] == '=' && name[0] == '-' && name[1] == '-') {
    cli->inline_value = arg + n + 1;
    return 1;
  }
  return 0;
}

void tf_apply_config(int argc, char **argv) {
  for (int k = 2; k < argc; k++)
    if (!strcmp(argv[k], "--config") && k + 2 < argc) {
      CPLSetConfigOption(argv[k + 1], argv[k + 2]);
      k += 2;
    }
}

int tf_cli_common(tf_cli *cli, tr_run_opts *run, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  const char *v;
  long n;
  cli->inline_value = NULL;
  if (is(cli, a, "-h") || is(cli, a, "--help")) {
    if (tr_rank() == 0) printf("%s\n%s", cli->usage, tf_common_help);
    return TF_ARG_EXIT;
  }
  if (is(cli, a, "-q") || is(cli, a, "--quiet")) {
    cli->quiet = 1;
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--progress") || is(cli, a, "-progress")) {
    cli->progress = 1;
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "-b") || is(cli, a, "--band")) {
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_int(cli, "-b", v, 1, 1000000, &n)) return TF_ARG_ERROR;
    run->band = (int)n;
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "-of") || is(cli, a, "--format")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    run->format = v;
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "-co") || is(cli, a, "--co")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
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
  if (!strcmp(a, "--config")) {
    /* applied before GDAL starts (tf_apply_config); here only taken */
    if (*i + 2 >= argc) {
      tf_usage_error(cli, "--config needs a KEY and a VALUE");
      return TF_ARG_ERROR;
    }
    *i += 2;
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--threads")) {
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_int(cli, "--threads", v, 1, 4096, &n)) return TF_ARG_ERROR;
    run->threads = (int)n;
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--mem")) {
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_size(cli, "--mem", v, &run->mem)) return TF_ARG_ERROR;
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--tile-size")) {
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_int(cli, "--tile-size", v, 1, 16384, &n))
      return TF_ARG_ERROR;
    run->tile_size = (int)n;
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--stats")) {
    run->stats = 1;
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--hist-buckets")) {
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_int(cli, "--hist-buckets", v, 0, TR_HIST_MAX_BUCKETS, &n))
      return TF_ARG_ERROR;
    run->hist_buckets = n ? (int)n : TR_HIST_NONE;
    run->stats = 1;
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--percentiles")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
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
  if (is(cli, a, "--stats-json")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    run->stats_json = v;
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--rank-timeout")) {
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_int(cli, "--rank-timeout", v, COLL_LIVE_MIN_TIMEOUT_MS,
                                                                     COLL_LIVE_MAX_TIMEOUT_MS, &n))
      return TF_ARG_ERROR;
    coll_live_set_timeout(tf_live(), (double)n);
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--coll-timeout")) {
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_int(cli, "--coll-timeout", v, 1, 86400000, &n))
      return TF_ARG_ERROR;
    run->coll_timeout_ms = (int)n;
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--coll-arity")) {
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_int(cli, "--coll-arity", v, 2, 1024, &n)) return TF_ARG_ERROR;
    run->coll_arity = (int)n;
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--ft")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    if (!strcmp(v, "off")) run->ft = TR_FT_OFF;
    else if (!strcmp(v, "dual")) run->ft = TR_FT_DUAL;
    else if (!strcmp(v, "replay")) run->ft = TR_FT_REPLAY;
    else {
      tf_usage_error(cli, "--ft: '%s' is not one of off, dual, replay", v);
      return TF_ARG_ERROR;
    }
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--ft-tolerance") || is(cli, a, "--ft-error-rate")) {
    int tol = !strncmp(a, "--ft-tolerance", 14);
    double d;
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_double(cli, tol ? "--ft-tolerance" : "--ft-error-rate", v, &d))
      return TF_ARG_ERROR;
    if (d < 0 || (!tol && d > 1)) {
      tf_usage_error(cli, "%s: %s is out of range", tol ? "--ft-tolerance" : "--ft-error-rate", v);
      return TF_ARG_ERROR;
    }
    if (tol) run->ft_tolerance = d;
    else run->ft_error_rate = d;
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--ft-profile")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    if (strcmp(v, "source") != 0 && strcmp(v, "strict") != 0) {
      tf_usage_error(cli, "--ft-profile: '%s' is not one of strict, source", v);
      return TF_ARG_ERROR;
    }
    run->ft_source_profile = !strcmp(v, "source");
    run->ft_tolerance = 0.0;
    run->ft_error_rate = 0.0;
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--ft-mode")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    if (!strcmp(v, "fast")) run->ft_basic = 0;
    else if (!strcmp(v, "basic")) run->ft_basic = 1;
    else {
      tf_usage_error(cli, "--ft-mode: '%s' is not one of fast, basic", v);
      return TF_ARG_ERROR;
    }
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--ft-timeout")) {
    long ms;
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_int(cli, "--ft-timeout", v, 1, 3600000, &ms)) return TF_ARG_ERROR;
    run->ft_timeout_ms = (int)ms;
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--ft-report")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    run->ft_report = v;
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--ft-max-errors")) {
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_int(cli, "--ft-max-errors", v, 0, 1000000, &n))
      return TF_ARG_ERROR;
    run->ft_max_errors = n ? (int)n : -1; /* 0 given: no fault is tolerated */
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--ft-check")) {
    double d;
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_double(cli, "--ft-check", v, &d)) return TF_ARG_ERROR;
    if (d < 0 || d > 1) {
      tf_usage_error(cli, "--ft-check: %s is out of range [0, 1]", v);
      return TF_ARG_ERROR;
    }
    run->ft_check = d;
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--device")) {
    static const char *const names[] = {"cpu", "auto", "gpu"}; /* tr_device order */
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
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
  if (is(cli, a, "--replay-on")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    if (strcmp(v, "gpu") != 0 && strcmp(v, "cpu") != 0) {
      tf_usage_error(cli, "--replay-on: '%s' is not one of gpu, cpu", v);
      return TF_ARG_ERROR;
    }
    run->replay_on_cpu = !strcmp(v, "cpu");
    return TF_ARG_TAKEN;
  }
  if (is(cli, a, "--inject")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    run->inject = v;
    return TF_ARG_TAKEN;
  }
  if (a[0] == '-' && a[1] != 0) return TF_ARG_UNKNOWN;
  if (cli->npositional >= 8) {
    tf_usage_error(cli, "too many file names");
    return TF_ARG_ERROR;
  }
  cli->positional[cli->npositional++] = a;
  return TF_ARG_TAKEN;
}

int tf_cli_parse(tf_cli *cli, tr_run_opts *run, tf_flag_fn own, void *opts, int argc, char **argv, int *exit_code) {
  for (int i = 1; i < argc; i++) {
    int r = tf_cli_common(cli, run, argc, argv, &i);
    if (r == TF_ARG_TAKEN && cli->inline_value) { /* "--quiet=1": a flag's value left */
      tf_usage_error(cli, "option %.*s takes no value ('%s')", (int)strcspn(argv[i], "="), argv[i], argv[i]);
      r = TF_ARG_ERROR;
    }
    cli->inline_value = NULL;
    if (r == TF_ARG_UNKNOWN) r = own(cli, opts, argc, argv, &i);
    /* "--name=value" for a command's own long options (the common ones are
     * matched so above): the name alone to the command's parser, the value
     * handed over by tf_value; an option that takes no value leaves it */
    const char *eq = r == TF_ARG_UNKNOWN && argv[i][0] == '-' && argv[i][1] == '-' ? strchr(argv[i], '=') : NULL;
    if (eq && eq - argv[i] < 64) {
      char name[64];
      snprintf(name, sizeof name, "%.*s", (int)(eq - argv[i]), argv[i]);
      char *whole = argv[i];
      const int at = i;
      argv[at] = name;
      cli->inline_value = eq + 1;
      r = own(cli, opts, argc, argv, &i);
      argv[at] = whole;
      if (r == TF_ARG_TAKEN && cli->inline_value) {
        tf_usage_error(cli, "option %s takes no value ('%s')", name, whole);
        r = TF_ARG_ERROR;
      }
      cli->inline_value = NULL;
    }
    if (r == TF_ARG_TAKEN) continue;
    if (r == TF_ARG_UNKNOWN) {
      char a[64], b[64];
      const char *s = tf_option_suggest(cli->usage, argv[i], a, sizeof a);
      const char *t = tf_option_suggest(tf_common_help, argv[i], b, sizeof b);
      if (!s || (t && tf_edits(argv[i], t) < tf_edits(argv[i], s))) s = t;
      if (s) tf_usage_error(cli, "unknown option '%s': did you mean '%s'?", argv[i], s);
      else tf_usage_error(cli, "unknown option '%s'", argv[i]);
    }
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
  /* the writer's line, on a terminal or when asked (--progress: a log, or
   * under mpirun, whose ranks' stderr is a pipe to it); -q wins */
  run->progress =
      (!cli->quiet && (isatty(STDERR_FILENO) || cli->progress) && tr_rank() == 0) ? progress_term : progress_quiet;
  run->progress_user = NULL;
  run->cancelled = cancelled;
  run->warning = warning_line;
  run->warning_user = (void *)cli->cmd;
  run->live = tf_live();
  run->coll = tf_coll();
  /* GDAL's block cache is the process's, so the program sets it, to each
   * run's plan (terrafort(1), MEMORY) */
  run->gdal_cache = tr_gdal_cache_apply;
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

int tf_gradient_alg_flag(tf_cli *cli, int argc, char **argv, int *i, tr_gradient_alg *alg) {
  const char *v = tf_value(cli, argc, argv, i);
  if (!v) return TF_ARG_ERROR;
  if (!strcasecmp(v, "Horn")) *alg = TR_GRAD_HORN;
  else if (!strcasecmp(v, "ZevenbergenThorne")) *alg = TR_GRAD_ZEVENBERGEN_THORNE;
  else {
    tf_usage_error(cli, "-alg: unknown algorithm '%s'", v);
    return TF_ARG_ERROR;
  }
  return TF_ARG_TAKEN;
}

int tf_burn_flag(tf_cli *cli, tr_burn_opts *b, int argc, char **argv, int *i) {
  const char *a = argv[*i], *v;
  if (!strcmp(a, "--burn") || !strcmp(a, "--burn-layer")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    if (a[6]) b->layer = v;
    else b->file = v;
  } else if (!strcmp(a, "--burn-depth")) {
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_double(cli, a, v, &b->depth)) return TF_ARG_ERROR;
    if (!(b->depth > 0)) {
      tf_usage_error(cli, "--burn-depth must be positive (the DEM's elevation units), got %s", v);
      return TF_ARG_ERROR;
    }
  } else if (!strcmp(a, "--burn-all-touched")) {
    b->all_touched = 1;
  } else {
    return TF_ARG_UNKNOWN;
  }
  return TF_ARG_TAKEN;
}

int tf_graph_flag(tf_cli *cli, tr_graph_opts *g, int argc, char **argv, int *i) {
  const char *a = argv[*i], *v;
  long n;
  double d;
  if (!strcmp(a, "--schedule")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    g->schedule = v;
  } else if (!strcmp(a, "--staleness")) {
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_int(cli, a, v, 0, 1000000, &n)) return TF_ARG_ERROR;
    g->staleness = (int)n;
  } else if (!strcmp(a, "--straggler-ratio")) {
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_double(cli, a, v, &d)) return TF_ARG_ERROR;
    if (d <= 1) {
      tf_usage_error(cli, "--straggler-ratio must be above 1, got %s", v);
      return TF_ARG_ERROR;
    }
    g->straggler_ratio = d;
  } else if (!strcmp(a, "--ds-max") || (!strcmp(a, "--z-cache-mb") || !strcmp(a, "--cache-mb"))) {
    int ds = !strcmp(a, "--ds-max");
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_double(cli, a, v, &d)) return TF_ARG_ERROR;
    if (ds ? d <= 0 : d < 0) {
      tf_usage_error(cli, "%s must be %s, got %s", a, ds ? "positive" : "0 or more", v);
      return TF_ARG_ERROR;
    }
    if (ds) g->ds_max_ms = d;
    else g->cache_mb = d;
  } else if (!strcmp(a, "--l-bottom") || !strcmp(a, "--l-up")) {
    if (!(v = tf_value(cli, argc, argv, i)) || tf_parse_int(cli, a, v, 1, 1000000, &n)) return TF_ARG_ERROR;
    if (!strcmp(a, "--l-bottom")) g->l_bottom = (int)n;
    else g->l_up = (int)n;
  } else if (!strcmp(a, "--aap-stats")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    g->aap_stats = v;
  } else if (!strcmp(a, "--tmp")) {
    if (!(v = tf_value(cli, argc, argv, i))) return TF_ARG_ERROR;
    g->tmp_dir = v;
  } else {
    return TF_ARG_UNKNOWN;
  }
  return TF_ARG_TAKEN;
}
