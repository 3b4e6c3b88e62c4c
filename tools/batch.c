/*
 * batch.c - `terrafort batch`: many terrafort jobs, handed out dynamically
 * to mpirun's ranks (or run by one process), resumable, with a JSON summary.
 *
 * This file parses the command's options, builds the job list on rank 0
 * (batch_jobs.c), marks as skipped the jobs an earlier run did whose files
 * are all still there (the done list, batch_done.c), runs the rest
 * (batch_run.c) and writes the summary: one record per job (state, exit
 * code, rank, times, error line, the files it reported writing, the job's
 * own statistics) and the per-rank figures gathered at the end.
 */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "cli.h"
#include "coll_live.h"
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
  const char *file, *dir, *glob, *cmd, *summary;
  int force;
  tf_batch_opts run;
} batch_args;

#define O(f) offsetof(batch_args, f)
static const tf_opt rows[] = {
    {.kind = TF_INT, .names = "--jobs", .arg = "K", .off = O(run.jobs_per_rank), .lo = 1, .hi = 256,
     .doc = "jobs at once on each rank (default 1)"},
    {.kind = TF_FLAG, .names = "--force", .off = O(force), .doc = "run every job, even one done before"},
    {.kind = TF_STR, .names = "--summary", .arg = "FILE", .off = O(summary), .role = TF_ROLE_OUT,
     .doc = "the JSON summary (default: JOBS_FILE.summary.json; with --dir:\n"
            "terrafort-batch.summary.json here; '-': standard output)"},
    {.kind = TF_STR, .names = "--dir", .arg = "DIR", .off = O(dir), .role = TF_ROLE_IN, .doc = "the folder of the files"},
    {.kind = TF_STR, .names = "--glob", .arg = "PATTERN", .off = O(glob), .doc = "the files of DIR to run on (shell pattern)"},
    {.kind = TF_STR, .names = "--cmd", .arg = "TEMPLATE", .off = O(cmd), .doc = "a job's command line, its placeholders above"},
    TF_OPT_END,
};

/* batch's share of the common options: what a process of it needs */
static const tf_opt process_rows[] = {
    {.kind = TF_CUSTOM, .names = "--rank-timeout", .arg = "MS", .fn = tf_opt_rank_timeout, .lo = COLL_LIVE_MIN_TIMEOUT_MS,
     .hi = COLL_LIVE_MAX_TIMEOUT_MS,
     .doc = "under mpirun: a rank silent this long ends the batch, exit 10 (" COLL_LIVE_STR(COLL_LIVE_DEFAULT_TIMEOUT_MS) ")"},
    {.kind = TF_ACTION, .names = "-q --quiet", .fn = tf_opt_quiet, .doc = "no progress line"},
    {.kind = TF_ACTION, .names = "--options", .fn = tf_opt_options, .doc = "these options as a table, one a line"},
    {.kind = TF_ACTION, .names = "-h --help", .fn = tf_opt_help, .doc = "this help"},
    TF_OPT_END,
};

const tf_opt_set tf_batch_set = {.cmd = "batch",
                                 .head = head,
                                 .tail = tail,
                                 .column = 23,
                                 .groups = {{rows, 0}, {process_rows, 0}}};
#undef O

/* ---- the summary ---------------------------------------------------------------------------- */

static const char *state_name(tf_job_state s) {
  static const char *const names[] = {"pending", "skipped", "running", "done", "failed", "not_done"};
  return names[s];
}

/* One job's record. */
static tr_json *job_json(int i, const tf_job *j) {
  tr_json *o = tr_json_object(), *argv = tr_json_array(), *outs = tr_json_array();
  tr_json_set(o, "index", tr_json_int(i));
  tr_json_set(o, "line", tr_json_int(j->line));
  tr_json_set(o, "command", tr_json_str(j->text));
  for (int w = 0; w < j->argc; w++) tr_json_push(argv, tr_json_str(j->argv[w]));
  tr_json_set(o, "argv", argv);
  for (int m = 0; m < j->nwrote; m++) tr_json_push(outs, tr_json_str(j->wrote[m]));
  tr_json_set(o, "outputs", outs);
  tr_json_set(o, "state", tr_json_str(state_name(j->state)));
  if (j->state != TF_JOB_SKIPPED && j->state != TF_JOB_PENDING) {
    tr_json_set(o, "rank", tr_json_int(j->rank));
    tr_json_set(o, "exit", tr_json_int(j->state == TF_JOB_NOT_DONE ? -1 : j->res.exit));
    tr_json_set(o, "start_s", tr_json_fixed(j->t_start, 6));
    tr_json_set(o, "end_s", tr_json_fixed(j->t_end, 6));
    tr_json_set(o, "wall_s", tr_json_fixed(j->res.wall_s, 6));
    tr_json_set(o, "cpu_s", tr_json_fixed(j->res.cpu_s, 6));
    tr_json_set(o, "max_rss_kb", tr_json_int(j->res.max_rss_kb));
  }
  if (j->res.error[0]) tr_json_set(o, "error", tr_json_str(j->res.error));
  if (j->stats) tr_json_set(o, "stats", tr_json_verbatim(j->stats)); /* checked as it was read */
  else if (j->stats_json && j->state == TF_JOB_DONE) tr_json_set(o, "stats_file", tr_json_str(j->stats_json));
  return o;
}

/* The summary: the counts, what the batch was given, the per-rank figures,
 * then one record per job, each on a line of its own. */
static tr_json *summary_json(const batch_args *a, const tf_jobs *jobs, const tf_batch_outcome *o, int exit_code) {
  int count[TF_JOB_NOT_DONE + 1] = {0};
  for (int i = 0; i < jobs->n; i++) count[jobs->v[i].state]++;
  tr_json *s = tr_json_object();
  tr_json_set(s, "terrafort_batch", tr_json_int(1));
  tr_json_set(s, "exit", tr_json_int(exit_code));
  tr_json_set(s, "total", tr_json_int(jobs->n));
  tr_json_set(s, "done", tr_json_int(count[TF_JOB_DONE]));
  tr_json_set(s, "failed", tr_json_int(count[TF_JOB_FAILED]));
  tr_json_set(s, "skipped", tr_json_int(count[TF_JOB_SKIPPED]));
  tr_json_set(s, "not_done", tr_json_int(count[TF_JOB_NOT_DONE] + count[TF_JOB_PENDING] + count[TF_JOB_RUNNING]));
  if (a->file) {
    tr_json_set(s, "jobs_file", tr_json_str(a->file));
  } else {
    tr_json_set(s, "dir", tr_json_str(a->dir));
    tr_json_set(s, "glob", tr_json_str(a->glob));
    tr_json_set(s, "cmd", tr_json_str(a->cmd));
  }
  tr_json_set(s, "ranks", tr_json_int(o->nranks));
  tr_json_set(s, "jobs_per_rank", tr_json_int(a->run.jobs_per_rank));
  tr_json_set(s, "force", tr_json_bool(a->force));
  tr_json_set(s, "wall_s", tr_json_fixed(o->wall_s, 6));
  tr_json_set(s, "lost_rank", tr_json_int(o->lost_rank));
  double busy = 0;
  tr_json *ranks = tr_json_lines();
  for (int r = 0; o->per_rank && r < o->nranks; r++) {
    const double *p = o->per_rank + (size_t)r * TF_BATCH_RANK_FIELDS;
    busy += p[TF_RANK_BUSY_S];
    tr_json *one = tr_json_object();
    tr_json_set(one, "rank", tr_json_int(r));
    tr_json_set(one, "jobs", tr_json_fixed(p[TF_RANK_JOBS], 0));
    tr_json_set(one, "failed", tr_json_fixed(p[TF_RANK_FAILED], 0));
    tr_json_set(one, "busy_s", tr_json_fixed(p[TF_RANK_BUSY_S], 6));
    tr_json_set(one, "cpu_s", tr_json_fixed(p[TF_RANK_CPU_S], 6));
    tr_json_set(one, "wall_s", tr_json_fixed(p[TF_RANK_WALL_S], 6));
    tr_json_push(ranks, one);
  }
  tr_json_set(s, "busy_s", tr_json_fixed(busy, 6));
  tr_json_set(s, "per_rank", ranks);
  tr_json *g = tr_json_object(), *all = tr_json_lines();
  tr_json_set(g, "method", tr_json_str("libcoll timeout aggregation, reduce to rank 0"));
  tr_json_set(g, "gathered", tr_json_bool(o->per_rank != NULL));
  tr_json_set(g, "waited_ms", tr_json_fixed(o->reduce_waited_ms, 3));
  tr_json_set(s, "gather", g);
  for (int i = 0; i < jobs->n; i++) tr_json_push(all, job_json(i, &jobs->v[i]));
  tr_json_set(s, "jobs", all);
  return s;
}

/* The summary to `path`, or to standard output for "-"; a file is written
 * under a temporary name beside it and renamed, as every terrafort output:
 * a reader never sees half of one. 0, or -1 (out of memory, or it could not
 * be written). */
static int save_summary(const char *path, const batch_args *a, const tf_jobs *jobs, const tf_batch_outcome *o,
                        int exit_code) {
  tr_json *s = summary_json(a, jobs, o, exit_code);
  char *text = tr_json_text(s);
  tr_json_free(s);
  if (!text) return -1;
  int rc = 0;
  if (!strcmp(path, "-")) {
    rc = printf("%s\n", text) < 0 || fflush(stdout) != 0 ? -1 : 0;
  } else {
    char tmp[PATH_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s.terrafort-%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) rc = -1;
    else {
      const int bad = fprintf(f, "%s\n", text) < 0;
      if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        remove(tmp);
        rc = -1;
      }
    }
  }
  free(text);
  return rc;
}

int tf_batch_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "batch", .set = &tf_batch_set};
  batch_args a;
  memset(&a, 0, sizeof a);
  a.run.jobs_per_rank = 1;
  a.run.kill_after_s = 10.0;
  int code = 0;
  if (tf_cli_parse(&cli, &a, argc, argv, &code)) return code;
  a.run.quiet = cli.quiet;
  if (cli.npositional > 1)
    return tf_usage_error(&cli, "expected one JOBS_FILE, got '%s' and '%s'", cli.positional[0], cli.positional[1]);
  a.file = cli.npositional ? cli.positional[0] : NULL;
  if (a.dir || a.glob || a.cmd) {
    if (a.file) return tf_usage_error(&cli, "give either JOBS_FILE or --dir/--glob/--cmd, not both");
    if (!a.dir || !a.glob || !a.cmd) return tf_usage_error(&cli, "--dir, --glob and --cmd go together");
  } else if (!a.file) {
    return tf_usage_error(&cli, "expected a JOBS_FILE (or --dir, --glob and --cmd)");
  }

  tf_jobs jobs = {0};
  char summary[PATH_MAX + 32], done_list[PATH_MAX + 40];
  const char *dflt = a.file ? a.file : "terrafort-batch";
  if (a.summary) snprintf(summary, sizeof summary, "%s", a.summary);
  else snprintf(summary, sizeof summary, "%s.summary.json", dflt);
  /* beside the summary, or where it would be when it goes to stdout */
  if (strcmp(summary, "-")) snprintf(done_list, sizeof done_list, "%s.done", summary);
  else snprintf(done_list, sizeof done_list, "%s.summary.json.done", dflt);
  /* the batch's own files: no job may write one (every rank's jobs) */
  static char keep[3 * PATH_MAX + 200];
  snprintf(keep, sizeof keep, "%s=the batch's jobs file\t%s\nthe batch's summary\t%s\nthe batch's done list\t%s",
           TR_KEEP_ENV, a.file ? a.file : "", strcmp(summary, "-") ? summary : "", done_list);
  a.run.keep_env = keep;
  int startup = 0;
  if (tr_rank() == 0) {
    char err[1024] = "";
    startup = a.file ? tf_jobs_read(&jobs, a.file, err, sizeof err)
                     : tf_jobs_from_dir(&jobs, a.dir, a.glob, a.cmd, err, sizeof err);
    if (!startup) startup = tf_jobs_check(&jobs, err, sizeof err);
    a.run.done_list = done_list;
    tf_done *done = startup || a.force ? NULL : tf_done_load(done_list);
    if (!startup && !a.force && !done) startup = TR_EXIT_NOMEM, snprintf(err, sizeof err, "out of memory");
    for (int i = 0; done && i < jobs.n; i++)
      if (tf_done_complete(done, &jobs.v[i])) jobs.v[i].state = TF_JOB_SKIPPED;
    tf_done_free(done);
    if (startup) fprintf(stderr, "terrafort batch: %s\n", err);
  }
  tf_batch_outcome out;
  int rc = tf_batch_run(tr_rank() == 0 ? &jobs : NULL, startup, &a.run, &out);
  if (tr_rank() == 0 && !startup && (rc == TR_EXIT_OK || rc == TR_EXIT_INTERRUPTED || rc == TR_EXIT_RANK)) {
    int failed = 0;
    for (int i = 0; i < jobs.n; i++) failed += jobs.v[i].state == TF_JOB_FAILED;
    if (!rc && failed) rc = TR_EXIT_BATCH;
    if (save_summary(summary, &a, &jobs, &out, rc)) {
      fprintf(stderr, "terrafort batch: cannot write the summary '%s'\n", summary);
      if (!rc || rc == TR_EXIT_BATCH) rc = tr_exit_code(TR_EOUTPUT);
    }
    if (failed && rc == TR_EXIT_BATCH)
      fprintf(stderr, "terrafort batch: %d of %d jobs failed (see %s)\n", failed, jobs.n,
              strcmp(summary, "-") ? summary : "the summary");
  }
  free(out.per_rank);
  tf_jobs_free(&jobs);
  return rc;
}
