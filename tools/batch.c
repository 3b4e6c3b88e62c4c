/*
 * batch.c - `terrafort batch`: its options over tr_batch (libterrain's
 * batch/), with this program as the jobs' program, the process's liveness
 * monitor and collective context, and its signals as the batch's stop.
 */
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#include "cli.h"
#include "process.h"
#include "tools.h"

static const char head[] =
    "Usage: terrafort batch [options] JOBS_FILE\n"
    "       terrafort batch [options] --dir DIR --glob PATTERN --cmd TEMPLATE\n"
    "Runs many terrafort jobs: one command line per line of JOBS_FILE (blank lines and '#'\n"
    "comments ignored, words quoted as in a shell, e.g. slope a.tif a_slope.tif), or one\n"
    "job per file of DIR matching PATTERN from TEMPLATE, where {} is the file's path, {name}\n"
    "its name, {stem} its path without the extension, {base} its name without the extension\n"
    "and {dir} DIR (e.g. --cmd 'slope {} {stem}_slope.tif').\n"
    "Under mpirun, rank 0 hands the jobs out one at a time to whichever rank is free (rank 0\n"
    "runs jobs too); each job runs as a child process, exactly as it would alone. A failing job\n"
    "is reported and the batch goes on. Each job reports the files it writes; the jobs done are\n"
    "kept in SUMMARY.done as they end, and a job found there whose files all still exist is\n"
    "skipped, so a second run resumes a batch (even one killed outright).\n\n";
static const char tail[] =
    "Exit: 0 every job done or skipped, 11 a job failed, 2 usage or a bad line, 3 a missing or\n"
    "empty jobs file, 8 interrupted, 10 a rank lost (terrafort-batch(1)).\n";

typedef struct {
  tr_batch_opts o;
} batch_args;

#define O(f) offsetof(batch_args, f)
static const tf_opt rows[] = {
    {.kind = TF_INT,
     .names = "--jobs",
     .arg = "K",
     .off = O(o.jobs_per_rank),
     .lo = 1,
     .hi = 256,
     .doc = "jobs at once on each rank (default 1)"},
    {.kind = TF_FLAG, .names = "--force", .off = O(o.force), .doc = "run every job, even one done before"},
    {.kind = TF_STR,
     .names = "--summary",
     .arg = "FILE",
     .off = O(o.summary),
     .role = TF_ROLE_OUT,
     .doc = "the JSON summary (default: JOBS_FILE.summary.json; with --dir:\n"
            "terrafort-batch.summary.json here; '-': standard output)"},
    {.kind = TF_STR,
     .names = "--dir",
     .arg = "DIR",
     .off = O(o.dir),
     .role = TF_ROLE_IN,
     .doc = "the folder of the files"},
    {.kind = TF_STR,
     .names = "--glob",
     .arg = "PATTERN",
     .off = O(o.glob),
     .doc = "the files of DIR to run on (shell pattern)"},
    {.kind = TF_STR,
     .names = "--cmd",
     .arg = "TEMPLATE",
     .off = O(o.cmd),
     .doc = "a job's command line, its placeholders above"},
    TF_OPT_END,
};

/* batch's share of the common options: what a process of it needs */
static const tf_opt process_rows[] = {TF_RANK_TIMEOUT_ROW, TF_QUIET_ROW, TF_OPTIONS_ROW, TF_HELP_ROW, TF_OPT_END};

const tf_opt_set tf_batch_set = {
    .cmd = "batch", .head = head, .tail = tail, .column = 23, .groups = {{rows, 0}, {process_rows, 0}}};
#undef O

/* The first signal that asked the batch to stop: its jobs get it too. */
static volatile sig_atomic_t got_signal;

static void on_signal(int sig) {
  if (!got_signal) got_signal = sig;
}

static int stop_asked(void *user) {
  (void)user;
  return got_signal;
}

int tf_batch_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "batch", .set = &tf_batch_set};
  batch_args a;
  tr_batch_opts_init(&a.o);
  int code = 0;
  if (tf_cli_parse(&cli, &a, argc, argv, &code)) return code;
  if (cli.npositional > 1)
    return tf_usage_error(&cli, "expected one JOBS_FILE, got '%s' and '%s'", cli.positional[0], cli.positional[1]);
  a.o.jobs_file = cli.npositional ? cli.positional[0] : NULL;
  if (a.o.dir || a.o.glob || a.o.cmd) {
    if (a.o.jobs_file) return tf_usage_error(&cli, "give either JOBS_FILE or --dir/--glob/--cmd, not both");
    if (!a.o.dir || !a.o.glob || !a.o.cmd) return tf_usage_error(&cli, "--dir, --glob and --cmd go together");
  } else if (!a.o.jobs_file) {
    return tf_usage_error(&cli, "expected a JOBS_FILE (or --dir, --glob and --cmd)");
  }
  /* the jobs are this program, whichever way it was started */
  static char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    fprintf(stderr, "terrafort batch: cannot find this program (/proc/self/exe)\n");
    return TR_EXIT_NOMEM;
  }
  self[n] = '\0';
  a.o.program = self;
  tf_catch_signals(on_signal);
  a.o.run.cancelled = stop_asked;
  a.o.run.progress = !cli.quiet && isatty(STDERR_FILENO) && tr_rank() == 0 ? tf_progress_line : NULL;
  a.o.run.live = tf_live();
  a.o.run.coll = tf_coll();
  tr_error err = {{0}};
  const int status = tr_batch(&a.o, &err);
  /* an interrupted batch and a lost rank said so as it happened */
  if (status == TR_EINTERRUPTED || status == TR_ERANK) return tr_exit_code(status);
  return tf_report(&cli, status, &err);
}
