/*
 * batch.c - tr_batch (terrain.h): many terrafort jobs, handed out
 * dynamically to mpirun's ranks (or run by one process), resumable, with a
 * JSON summary.
 *
 * It builds the job list on rank 0 (jobs.c, reading each job's files from
 * its command's option table, grammar.c), marks as skipped the jobs an
 * earlier run did whose files are all still there (the done list, done.c),
 * runs the rest (run.c) and writes the summary: one record per job (state,
 * exit code, rank, times, error line, the files it reported writing, the
 * job's own statistics) and the per-rank figures gathered at the end.
 */
#include "batch.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coll.h"
#include "status.h"

/* ---- the summary ---------------------------------------------------------------------------- */

static const char *state_name(tb_job_state s) {
  static const char *const names[] = {"pending", "skipped", "running", "done", "failed", "not_done"};
  return names[s];
}

/* One job's record. */
static tr_json *job_json(int i, const tb_job *j) {
  tr_json *o = tr_json_object(), *argv = tr_json_array(), *outs = tr_json_array();
  tr_json_set(o, "index", tr_json_int(i));
  tr_json_set(o, "line", tr_json_int(j->line));
  tr_json_set(o, "command", tr_json_str(j->text));
  for (int w = 0; w < j->argc; w++) tr_json_push(argv, tr_json_str(j->argv[w]));
  tr_json_set(o, "argv", argv);
  for (int m = 0; m < j->nwrote; m++) tr_json_push(outs, tr_json_str(j->wrote[m]));
  tr_json_set(o, "outputs", outs);
  tr_json_set(o, "state", tr_json_str(state_name(j->state)));
  if (j->state != TB_JOB_SKIPPED && j->state != TB_JOB_PENDING) {
    tr_json_set(o, "rank", tr_json_int(j->rank));
    tr_json_set(o, "exit", tr_json_int(j->state == TB_JOB_NOT_DONE ? -1 : j->res.exit));
    tr_json_set(o, "start_s", tr_json_fixed(j->t_start, 6));
    tr_json_set(o, "end_s", tr_json_fixed(j->t_end, 6));
    tr_json_set(o, "wall_s", tr_json_fixed(j->res.wall_s, 6));
    tr_json_set(o, "cpu_s", tr_json_fixed(j->res.cpu_s, 6));
    tr_json_set(o, "max_rss_kb", tr_json_int(j->res.max_rss_kb));
  }
  if (j->res.error[0]) tr_json_set(o, "error", tr_json_str(j->res.error));
  if (j->stats)
    tr_json_set(o, "stats", tr_json_verbatim(j->stats)); /* checked as it was read */
  else if (j->stats_json && j->state == TB_JOB_DONE)
    tr_json_set(o, "stats_file", tr_json_str(j->stats_json));
  return o;
}

/* The summary: the counts, what the batch was given, the per-rank figures,
 * then one record per job, each on a line of its own. */
static tr_json *summary_json(const tr_batch_opts *a, const tb_jobs *jobs, const tb_batch_outcome *o, int exit_code) {
  int count[TB_JOB_NOT_DONE + 1] = {0};
  for (int i = 0; i < jobs->n; i++) count[jobs->v[i].state]++;
  tr_json *s = tr_json_object();
  tr_json_set(s, "terrafort_batch", tr_json_int(1));
  tr_json_set(s, "exit", tr_json_int(exit_code));
  tr_json_set(s, "total", tr_json_int(jobs->n));
  tr_json_set(s, "done", tr_json_int(count[TB_JOB_DONE]));
  tr_json_set(s, "failed", tr_json_int(count[TB_JOB_FAILED]));
  tr_json_set(s, "skipped", tr_json_int(count[TB_JOB_SKIPPED]));
  tr_json_set(s, "not_done", tr_json_int(count[TB_JOB_NOT_DONE] + count[TB_JOB_PENDING] + count[TB_JOB_RUNNING]));
  if (a->jobs_file) {
    tr_json_set(s, "jobs_file", tr_json_str(a->jobs_file));
  } else {
    tr_json_set(s, "dir", tr_json_str(a->dir));
    tr_json_set(s, "glob", tr_json_str(a->glob));
    tr_json_set(s, "cmd", tr_json_str(a->cmd));
  }
  tr_json_set(s, "ranks", tr_json_int(o->nranks));
  tr_json_set(s, "jobs_per_rank", tr_json_int(a->jobs_per_rank));
  tr_json_set(s, "force", tr_json_bool(a->force));
  tr_json_set(s, "wall_s", tr_json_fixed(o->wall_s, 6));
  tr_json_set(s, "lost_rank", tr_json_int(o->lost_rank));
  double busy = 0;
  tr_json *ranks = tr_json_lines();
  for (int r = 0; o->per_rank && r < o->nranks; r++) {
    const double *p = o->per_rank + (size_t)r * TB_BATCH_RANK_FIELDS;
    busy += p[TB_RANK_BUSY_S];
    tr_json *one = tr_json_object();
    tr_json_set(one, "rank", tr_json_int(r));
    tr_json_set(one, "jobs", tr_json_fixed(p[TB_RANK_JOBS], 0));
    tr_json_set(one, "failed", tr_json_fixed(p[TB_RANK_FAILED], 0));
    tr_json_set(one, "busy_s", tr_json_fixed(p[TB_RANK_BUSY_S], 6));
    tr_json_set(one, "cpu_s", tr_json_fixed(p[TB_RANK_CPU_S], 6));
    tr_json_set(one, "wall_s", tr_json_fixed(p[TB_RANK_WALL_S], 6));
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
static int save_summary(const char *path, const tr_batch_opts *a, const tb_jobs *jobs, const tb_batch_outcome *o,
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
    if (!f)
      rc = -1;
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

void tr_batch_opts_init(tr_batch_opts *o) {
  memset(o, 0, sizeof *o);
  tr_run_opts_init(&o->run);
  o->jobs_per_rank = 1;
  o->kill_after_s = 10.0;
}

/* The program the jobs run, as an absolute path into buf: given, else
 * $TERRAFORT_PROGRAM, else "terrafort" on PATH. 0, or -1 with err. */
static int find_program(const tr_batch_opts *o, char *buf, size_t len, tr_error *err) {
  const char *p = o->program ? o->program : getenv("TERRAFORT_PROGRAM");
  if (!p || !*p) p = "terrafort";
  if (strchr(p, '/')) {
    if (access(p, X_OK)) return tr_fail(err, TR_EUSAGE, "the program '%s' cannot be run: %s", p, strerror(errno));
    snprintf(buf, len, "%s", p);
    return 0;
  }
  const char *path = getenv("PATH");
  for (const char *d = path ? path : "/usr/local/bin:/usr/bin:/bin"; *d;) {
    const size_t n = strcspn(d, ":");
    if (n && (size_t)snprintf(buf, len, "%.*s/%s", (int)n, d, p) < len && !access(buf, X_OK)) return 0;
    d += n + (d[n] == ':');
  }
  return tr_fail(err, TR_EUSAGE,
                 "no program '%s' on PATH to run the jobs (set tr_batch_opts.program or TERRAFORT_PROGRAM)", p);
}

/* An exit code of the batch's insides as the status tr_exit_code maps back. */
static int status_of(int code) {
  switch (code) {
    case TR_EXIT_OK:
      return TR_OK;
    case TR_EXIT_USAGE:
      return TR_EUSAGE;
    case TR_EXIT_INPUT:
      return TR_EINPUT;
    case TR_EXIT_OUTPUT:
      return TR_EOUTPUT;
    case TR_EXIT_NOMEM:
      return TR_ENOMEM;
    case TR_EXIT_INTERRUPTED:
      return TR_EINTERRUPTED;
    case TR_EXIT_RANK:
      return TR_ERANK;
    case TR_EXIT_BATCH:
      return TR_EBATCH;
    default:
      return TR_EINTERNAL;
  }
}

int tr_batch(const tr_batch_opts *a, tr_error *err) {
  if (a->jobs_file && (a->dir || a->glob || a->cmd))
    return tr_fail(err, TR_EUSAGE, "give either a jobs file or dir/glob/cmd, not both");
  if (!a->jobs_file && (!a->dir || !a->glob || !a->cmd))
    return tr_fail(err, TR_EUSAGE,
                   a->dir || a->glob || a->cmd ? "--dir, --glob and --cmd go together"
                                               : "expected a JOBS_FILE (or --dir, --glob and --cmd)");
  if (a->jobs_per_rank < 1 || a->jobs_per_rank > 256)
    return tr_fail(err, TR_EUSAGE, "jobs per rank: %d is out of range [1, 256]", a->jobs_per_rank);
  char program[PATH_MAX];
  const int found = find_program(a, program, sizeof program, err);
  if (found) return found;
  /* one process without a context of the caller's: a single-rank one of its own */
  coll_ctx *own = NULL;
  if (!a->run.coll && coll_ctx_create_world(&own, NULL) != COLL_OK)
    return tr_fail(err, TR_ENOMEM, "cannot start the batch's collective context");
  tb_batch_opts run = {.jobs_per_rank = a->jobs_per_rank,
                       .kill_after_s = a->kill_after_s > 0 ? a->kill_after_s : 10.0,
                       .program = program,
                       .live = a->run.live,
                       .coll = a->run.coll ? a->run.coll : own,
                       .progress = a->run.progress,
                       .progress_user = a->run.progress_user,
                       .cancelled = a->run.cancelled,
                       .cancel_user = a->run.progress_user};
  tb_jobs jobs = {.program = program};
  char summary[PATH_MAX + 32], done_list[PATH_MAX + 40];
  const char *dflt = a->jobs_file ? a->jobs_file : "terrafort-batch";
  if (a->summary)
    snprintf(summary, sizeof summary, "%s", a->summary);
  else
    snprintf(summary, sizeof summary, "%s.summary.json", dflt);
  /* beside the summary, or where it would be when it goes to stdout */
  if (strcmp(summary, "-"))
    snprintf(done_list, sizeof done_list, "%s.done", summary);
  else
    snprintf(done_list, sizeof done_list, "%s.summary.json.done", dflt);
  /* the batch's own files: no job may write one (every rank's jobs) */
  static char keep[3 * PATH_MAX + 200];
  snprintf(keep, sizeof keep, "%s=the batch's jobs file\t%s\nthe batch's summary\t%s\nthe batch's done list\t%s",
           TR_KEEP_ENV, a->jobs_file ? a->jobs_file : "", strcmp(summary, "-") ? summary : "", done_list);
  run.keep_env = keep;
  int startup = 0;
  char why[1024] = "";
  if (tr_rank() == 0) {
    startup = a->jobs_file ? tb_jobs_read(&jobs, a->jobs_file, why, sizeof why)
                           : tb_jobs_from_dir(&jobs, a->dir, a->glob, a->cmd, why, sizeof why);
    if (!startup) startup = tb_jobs_check(&jobs, why, sizeof why);
    run.done_list = done_list;
    tb_done *done = startup || a->force ? NULL : tb_done_load(done_list);
    if (!startup && !a->force && !done) startup = TR_EXIT_NOMEM, snprintf(why, sizeof why, "out of memory");
    for (int i = 0; done && i < jobs.n; i++)
      if (tb_done_complete(done, &jobs.v[i])) jobs.v[i].state = TB_JOB_SKIPPED;
    tb_done_free(done);
  }
  tb_batch_outcome out;
  int rc = tb_batch_run(tr_rank() == 0 ? &jobs : NULL, startup, &run, &out);
  int status = status_of(rc);
  if (startup)
    status = tr_fail(err, status_of(startup), "%s", why);
  else if (tr_rank() != 0 && rc != TR_EXIT_OK)
    status = tr_fail(err, status, "%s", tr_strerror(status));
  if (tr_rank() == 0 && !startup && (rc == TR_EXIT_OK || rc == TR_EXIT_INTERRUPTED || rc == TR_EXIT_RANK)) {
    int failed = 0;
    for (int i = 0; i < jobs.n; i++) failed += jobs.v[i].state == TB_JOB_FAILED;
    if (!rc && failed) rc = TR_EXIT_BATCH;
    if (save_summary(summary, a, &jobs, &out, rc)) {
      status = tr_fail(err, TR_EOUTPUT, "cannot write the summary '%s'", summary);
    } else if (failed && rc == TR_EXIT_BATCH) {
      status = tr_fail(err, TR_EBATCH, "%d of %d jobs failed (see %s)", failed, jobs.n,
                       strcmp(summary, "-") ? summary : "the summary");
    } else if (rc) {
      status = tr_fail(err, status_of(rc), "%s", tr_strerror(status_of(rc)));
    }
  } else if (!startup && rc) {
    status = tr_fail(err, status_of(rc), "%s", tr_strerror(status_of(rc)));
  }
  free(out.per_rank);
  tb_jobs_free(&jobs);
  if (own && !(rc == TR_EXIT_INTERRUPTED || rc == TR_EXIT_RANK)) coll_ctx_destroy(own);
  return status;
}
