/*
 * batch.h - `terrafort batch` inside the tools: the job list (batch_jobs.c),
 * running it over the ranks (batch_run.c) and the command with its summary
 * (batch.c), each job a child process (batch_child.c).
 *
 * A job is one terrafort command line. Rank 0 reads the list, knows which
 * files each job writes (main.c's tf_io rows), skips jobs whose outputs all
 * exist, and hands the rest out one at a time to whichever rank asks; each
 * rank runs its jobs as child processes of this same executable, so a job's
 * output is the one it would give run alone.
 */
#ifndef TF_BATCH_H
#define TF_BATCH_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

/* A job's words, packed NUL-separated, travel to its rank in one message. */
#define TF_BATCH_ARGV_MAX 16384
#define TF_BATCH_ERROR_MAX 512
#define TF_BATCH_STATS_MAX 8192

/* Exit code of `terrafort batch` when at least one job failed (terrafort(1)). */
#define TF_BATCH_EXIT_JOBS 11

typedef enum {
  TF_JOB_PENDING,  /* not run yet */
  TF_JOB_SKIPPED,  /* every output already exists (a resumed batch) */
  TF_JOB_RUNNING,
  TF_JOB_DONE,     /* exit 0 */
  TF_JOB_FAILED,   /* another exit, a signal, or no start */
  TF_JOB_NOT_DONE  /* the batch ended first (signal, lost rank) */
} tf_job_state;

/* What the rank that ran a job reports. */
typedef struct {
  int exit;                        /* the child's exit code; 128+N: killed by signal N; -1: not started */
  double wall_s, cpu_s;            /* wall and user+system time of the child */
  long long max_rss_kb;
  char error[TF_BATCH_ERROR_MAX];  /* a failed job's last stderr line */
} tf_job_result;

typedef struct {
  int line;          /* line of the jobs file (--dir: 1-based position in the listing) */
  char *text;        /* the line as written, or the expanded template */
  int argc;
  char **argv;       /* argv[0]: the command */
  int nout;
  char **out;        /* files the job writes */
  const char *stats_json; /* its --stats-json FILE (in argv), or NULL */
  tf_job_state state;
  int rank;          /* who ran it, -1: nobody */
  double t_start, t_end; /* seconds from the batch's start, on rank 0's clock */
  tf_job_result res;
  char *stats;       /* its --stats-json file's text, read by rank 0 once it is done */
} tf_job;

typedef struct {
  tf_job *v;
  int n, cap;
} tf_jobs;

/* batch_jobs.c. Each returns 0, or an exit code (2 usage, 3 input, 7 memory)
 * with a one-line message in err. */
int tf_jobs_read(tf_jobs *jobs, const char *path, char *err, size_t len);
/* Every regular, non-hidden file of dir matching glob, sorted by name, one
 * job each from tmpl (placeholders: batch.c's help). A file that another of
 * these jobs writes is not an input. */
int tf_jobs_from_dir(tf_jobs *jobs, const char *dir, const char *glob, const char *tmpl, char *err, size_t len);
/* Refuses two jobs writing one file, and a job reading a file another one
 * writes (jobs run in any order). */
int tf_jobs_check(const tf_jobs *jobs, char *err, size_t len);
/* 1 when the job names outputs and each exists as a regular file. */
int tf_job_complete(const tf_job *j);
void tf_jobs_free(tf_jobs *jobs);

/* Words <-> one NUL-separated buffer: bytes used, or -1 when too long. */
int tf_job_pack(const tf_job *j, char *buf, size_t len);
/* argv pointers into buf (n bytes); returns argc. */
int tf_job_unpack(char *buf, int n, char **argv, int max);

/* batch_run.c */
typedef struct {
  int jobs_per_rank; /* children at once on each rank */
  int quiet;
  double kill_after_s; /* children still running this long after a forwarded signal get SIGKILL */
} tf_batch_opts;

/* batch_child.c: one rank's running jobs. */
typedef struct {
  pid_t pid;
  int job;
  int fd; /* its stdout and stderr */
  double t0;
} tf_child;

typedef struct {
  const tf_batch_opts *o;
  char exe[PATH_MAX];
  char **envp; /* this process's environment without the launcher's variables */
  tf_child *kids;
  int nkids;
  int run, failed; /* jobs this rank ran, of which failed */
  double busy_s, cpu_s;
} tf_runner;

int tf_runner_init(tf_runner *r, const tf_batch_opts *o);
void tf_runner_free(tf_runner *r);
/* Starts job `job` (words argv, NULL-terminated): 0, or -1 with res filled
 * (the job could not start: a failure of its own). */
int tf_child_start(tf_runner *r, int job, char **argv, tf_job_result *res);
/* Reaps child k if it ended (block: waits for it): 1 with its job and res,
 * the child removed from the list; 0 while it runs. */
int tf_child_reap(tf_runner *r, int k, int block, int *job, tf_job_result *res);
/* Forwards sig to every child and waits for them (kill_after_s, then SIGKILL). */
void tf_children_stop(tf_runner *r, int sig);
double tf_now_s(void); /* CLOCK_MONOTONIC seconds */
void tf_nap(void);     /* 2 ms: a polling loop's pause */

/* Per-rank figures gathered on rank 0 at the end (libcoll's timeout reduce). */
typedef struct {
  int nranks;
  double *per_rank; /* nranks x TF_BATCH_RANK_FIELDS */
  double reduce_waited_ms;
  double wall_s;
  int lost_rank;    /* -1, or the rank lost */
} tf_batch_outcome;
enum { TF_RANK_JOBS, TF_RANK_FAILED, TF_RANK_BUSY_S, TF_RANK_CPU_S, TF_RANK_WALL_S, TF_BATCH_RANK_FIELDS };

/* Runs the batch on every rank. jobs: rank 0's list (NULL elsewhere), with
 * the skipped jobs already marked; startup: rank 0's verdict on the list (0
 * or an exit code), shared with every rank before any job. Returns this
 * rank's exit code: 0, 8 (a signal), 10 (a rank lost) or startup's code. */
int tf_batch_run(tf_jobs *jobs, int startup, const tf_batch_opts *o, tf_batch_outcome *out);

#endif
