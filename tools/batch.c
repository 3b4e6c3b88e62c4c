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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "cli.h"
#include "coll_live.h"
#include "process.h"
#include "tools.h"

static const char *usage =
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
    "skipped, so a second run resumes a batch (even one killed outright).\n\n"
    "  --jobs K             jobs at once on each rank (default 1)\n"
    "  --force              run every job, even one done before\n"
    "  --summary FILE       the JSON summary (default: JOBS_FILE.summary.json; with --dir:\n"
    "                       terrafort-batch.summary.json here; '-': standard output)\n"
    "  --rank-timeout MS    under mpirun: a rank silent this long ends the batch, exit 10 (" COLL_LIVE_STR(
        COLL_LIVE_DEFAULT_TIMEOUT_MS) ")\n"
    "  -q, --quiet          no progress line\n"
    "  -h, --help           this help\n"
    "Exit: 0 every job done or skipped, 11 a job failed, 2 usage or a bad line, 3 a missing or\n"
    "empty jobs file, 8 interrupted, 10 a rank lost (terrafort-batch(1)).\n";

typedef struct {
  const char *file, *dir, *glob, *cmd, *summary;
  int force;
  tf_batch_opts run;
} batch_args;

static int parse(tf_cli *cli, batch_args *a, int argc, char **argv, int *code) {
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i], *v;
    long n;
    cli->inline_value = NULL;
    char name[64];
    snprintf(name, sizeof name, "%s", s);
    char *eq = strchr(name, '=');
    if (s[0] == '-' && s[1] == '-' && eq) {
      *eq = 0;
      cli->inline_value = s + (eq - name) + 1;
    }
    if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
      if (tr_rank() == 0) printf("%s", usage);
      *code = 0;
      return 1;
    } else if (!strcmp(name, "-q") || !strcmp(name, "--quiet")) {
      a->run.quiet = 1;
    } else if (!strcmp(name, "--force")) {
      a->force = 1;
    } else if (!strcmp(name, "--jobs")) {
      if (!(v = tf_value(cli, argc, argv, &i)) || tf_parse_int(cli, "--jobs", v, 1, 256, &n)) goto bad;
      a->run.jobs_per_rank = (int)n;
    } else if (!strcmp(name, "--rank-timeout")) {
      if (!(v = tf_value(cli, argc, argv, &i)) || tf_parse_int(cli, "--rank-timeout", v, COLL_LIVE_MIN_TIMEOUT_MS,
                                                                   COLL_LIVE_MAX_TIMEOUT_MS, &n))
        goto bad;
      coll_live_set_timeout(tf_live(), (double)n);
    } else if (!strcmp(name, "--summary") || !strcmp(name, "--dir") || !strcmp(name, "--glob") ||
               !strcmp(name, "--cmd")) {
      if (!(v = tf_value(cli, argc, argv, &i))) goto bad;
      const char **slot = name[2] == 's' ? &a->summary : name[2] == 'd' ? &a->dir : name[2] == 'g' ? &a->glob : &a->cmd;
      *slot = v;
    } else if (s[0] == '-' && s[1]) {
      char near[64];
      if (tf_option_suggest(usage, s, near, sizeof near))
        tf_usage_error(cli, "unknown option '%s': did you mean '%s'?", s, near);
      else
        tf_usage_error(cli, "unknown option '%s'", s);
      goto bad;
    } else if (a->file) {
      tf_usage_error(cli, "expected one JOBS_FILE, got '%s' and '%s'", a->file, s);
      goto bad;
    } else {
      a->file = s;
    }
  }
  if (a->dir || a->glob || a->cmd) {
    if (a->file) return *code = tf_usage_error(cli, "give either JOBS_FILE or --dir/--glob/--cmd, not both"), 1;
    if (!a->dir || !a->glob || !a->cmd) return *code = tf_usage_error(cli, "--dir, --glob and --cmd go together"), 1;
  } else if (!a->file) {
    return *code = tf_usage_error(cli, "expected a JOBS_FILE (or --dir, --glob and --cmd)"), 1;
  }
  return 0;
bad:
  *code = tr_exit_code(TR_EUSAGE);
  return 1;
}

/* ---- the summary ---------------------------------------------------------------------------- */

/* a file name or a message as a JSON string (valid whatever its bytes) */
static void jstr(FILE *f, const char *s) {
  tr_json *j = tr_json_str(s);
  char *q = tr_json_text(j);
  tr_json_free(j);
  fputs(q ? q : "null", f);
  free(q);
}

static const char *state_name(tf_job_state s) {
  static const char *const names[] = {"pending", "skipped", "running", "done", "failed", "not_done"};
  return names[s];
}

static void write_summary(FILE *f, const batch_args *a, const tf_jobs *jobs, const tf_batch_outcome *o, int exit_code) {
  int count[TF_JOB_NOT_DONE + 1] = {0};
  for (int i = 0; i < jobs->n; i++) count[jobs->v[i].state]++;
  fprintf(f, "{\"terrafort_batch\":1,\"exit\":%d,\"total\":%d,\"done\":%d,\"failed\":%d,\"skipped\":%d,\"not_done\":%d,",
          exit_code, jobs->n, count[TF_JOB_DONE], count[TF_JOB_FAILED], count[TF_JOB_SKIPPED],
          count[TF_JOB_NOT_DONE] + count[TF_JOB_PENDING] + count[TF_JOB_RUNNING]);
  if (a->file) {
    fprintf(f, "\"jobs_file\":");
    jstr(f, a->file);
  } else {
    fprintf(f, "\"dir\":");
    jstr(f, a->dir);
    fprintf(f, ",\"glob\":");
    jstr(f, a->glob);
    fprintf(f, ",\"cmd\":");
    jstr(f, a->cmd);
  }
  fprintf(f, ",\"ranks\":%d,\"jobs_per_rank\":%d,\"force\":%s,\"wall_s\":%.6f,\"lost_rank\":%d,\n", o->nranks,
          a->run.jobs_per_rank, a->force ? "true" : "false", o->wall_s, o->lost_rank);
  double busy = 0;
  for (int r = 0; o->per_rank && r < o->nranks; r++) busy += o->per_rank[(size_t)r * TF_BATCH_RANK_FIELDS + TF_RANK_BUSY_S];
  fprintf(f, "\"busy_s\":%.6f,\"per_rank\":[", busy);
  for (int r = 0; o->per_rank && r < o->nranks; r++) {
    const double *p = o->per_rank + (size_t)r * TF_BATCH_RANK_FIELDS;
    fprintf(f, "%s{\"rank\":%d,\"jobs\":%.0f,\"failed\":%.0f,\"busy_s\":%.6f,\"cpu_s\":%.6f,\"wall_s\":%.6f}",
            r ? ",\n  " : "\n  ", r, p[TF_RANK_JOBS], p[TF_RANK_FAILED], p[TF_RANK_BUSY_S], p[TF_RANK_CPU_S],
            p[TF_RANK_WALL_S]);
  }
  fprintf(f, "],\n\"gather\":{\"method\":\"libcoll timeout aggregation, reduce to rank 0\",\"gathered\":%s,"
             "\"waited_ms\":%.3f},\n\"jobs\":[",
          o->per_rank ? "true" : "false", o->reduce_waited_ms);
  for (int i = 0; i < jobs->n; i++) {
    const tf_job *j = &jobs->v[i];
    fprintf(f, "%s{\"index\":%d,\"line\":%d,\"command\":", i ? ",\n  " : "\n  ", i, j->line);
    jstr(f, j->text);
    fprintf(f, ",\"argv\":[");
    for (int w = 0; w < j->argc; w++) {
      if (w) fputc(',', f);
      jstr(f, j->argv[w]);
    }
    fprintf(f, "],\"outputs\":[");
    for (int m = 0; m < j->nwrote; m++) {
      if (m) fputc(',', f);
      jstr(f, j->wrote[m]);
    }
    fprintf(f, "],\"state\":\"%s\"", state_name(j->state));
    if (j->state != TF_JOB_SKIPPED && j->state != TF_JOB_PENDING)
      fprintf(f, ",\"rank\":%d,\"exit\":%d,\"start_s\":%.6f,\"end_s\":%.6f,\"wall_s\":%.6f,\"cpu_s\":%.6f,\"max_rss_kb\":%lld",
              j->rank, j->state == TF_JOB_NOT_DONE ? -1 : j->res.exit, j->t_start, j->t_end, j->res.wall_s,
              j->res.cpu_s, j->res.max_rss_kb);
    if (j->res.error[0]) {
      fprintf(f, ",\"error\":");
      jstr(f, j->res.error);
    }
    if (j->stats) fprintf(f, ",\"stats\":%s", j->stats);
    else if (j->stats_json && j->state == TF_JOB_DONE) {
      fprintf(f, ",\"stats_file\":");
      jstr(f, j->stats_json);
    }
    fputc('}', f);
  }
  fprintf(f, "]}\n");
}

/* The summary, written under a temporary name beside it and renamed, as
 * every terrafort output: a reader never sees half of one. */
static int save_summary(const char *path, const batch_args *a, const tf_jobs *jobs, const tf_batch_outcome *o,
                        int exit_code) {
  if (!strcmp(path, "-")) {
    write_summary(stdout, a, jobs, o, exit_code);
    return fflush(stdout) == 0 ? 0 : -1;
  }
  char tmp[PATH_MAX + 64];
  snprintf(tmp, sizeof tmp, "%s.terrafort-%ld.tmp", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) return -1;
  write_summary(f, a, jobs, o, exit_code);
  if (fclose(f) != 0 || rename(tmp, path) != 0) {
    remove(tmp);
    return -1;
  }
  return 0;
}

int tf_batch_main(int argc, char **argv) {
  tf_cli cli = {.cmd = "batch", .usage = usage};
  batch_args a;
  memset(&a, 0, sizeof a);
  a.run.jobs_per_rank = 1;
  a.run.kill_after_s = 10.0;
  int code = 0;
  if (parse(&cli, &a, argc, argv, &code)) return code;

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
