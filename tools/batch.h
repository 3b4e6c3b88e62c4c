/*
 * batch.h - `terrafort batch` inside the tools: the job list (batch_jobs.c),
 * running it over the ranks (batch_run.c) and the command with its summary
 * (batch.c), each job a child process (batch_child.c).
 *
 * A job is one terrafort command line. Rank 0 reads the list, skips the jobs
 * an earlier run did whose files are all still there (the done list,
 * batch_done.c), and hands the rest out one at a time to whichever rank
 * asks; each rank runs its jobs as child processes of this same executable,
 * so a job's output is the one it would give run alone. Each job tells what
 * it wrote itself (TR_OUTPUTS_ENV, terrain.h): that list, not one derived
 * from its options, is what the summary shows and the done list keeps. The
 * files a job's options name (its command's option table) only serve the checks
 * made before anything runs (two jobs writing one file, a job reading
 * another's output, --dir's own outputs taken for inputs).
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
/* What a job reported writing ('\n'-separated absolute paths) travels in
 * its result: beyond this, the job counts as having reported nothing. */
#define TF_BATCH_OUTPUTS_MAX 16384

/* Set in each job's environment to the rank's pid: a job whose rank is
 * gone cancels itself (process.c, tf_stop_asked), so a job of a rank killed outright
 * stops instead of writing after the batch gave it up. (Not the kernel's
 * parent-death signal: it comes again at every re-parenting, and a second
 * signal ends a run at once, leaving its temporary.) */
#define TF_BATCH_PARENT_ENV "TERRAFORT_BATCH_PARENT"

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
  char outputs[TF_BATCH_OUTPUTS_MAX]; /* the files it reported writing, one per line */
} tf_job_result;

typedef struct {
  int line;          /* line of the jobs file (--dir: 1-based position in the listing) */
  char *text;        /* the line as written, or the expanded template */
  int argc;
  char **argv;       /* argv[0]: the command */
  int nout;
  char **out;        /* files its options name (for the checks before the run) */
  int nwrote;
  char **wrote;      /* files it reported writing; skipped: those of the run that did it */
  const char *stats_json; /* its --stats-json FILE (in argv), or NULL */
  tf_job_state state;
  int rank;          /* who ran it, -1: nobody */
  double t_start, t_end; /* seconds from the batch's start, on rank 0's clock */
  tf_job_result res;
  char *stats;       /* its --stats-json file's text (a JSON object), read by rank 0 once it is done */
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
void tf_jobs_free(tf_jobs *jobs);
/* j->wrote from '\n'-separated paths (replacing what was there): 0, -1 out of memory. */
int tf_job_set_wrote(tf_job *j, const char *lines);

/* batch_done.c: the done list, one line per job done - its words and the
 * files it reported writing - appended as each job ends well, so that a
 * batch killed outright still resumes. */
typedef struct tf_done tf_done;
/* The list at path (none yet: empty); NULL only out of memory. */
tf_done *tf_done_load(const char *path);
void tf_done_free(tf_done *d);
/* 1 when the list holds j (its words; from another folder, none of them a
 * relative file name) and every file it wrote then is a regular file now;
 * j->wrote gets them. */
int tf_done_complete(const tf_done *d, tf_job *j);
/* Appends j with j->wrote (a job that wrote nothing is not kept: it runs
 * every time); 0, or -1 (errno). */
int tf_done_append(const char *path, const tf_job *j);

/* Words <-> one NUL-separated buffer: bytes used, or -1 when too long. */
int tf_job_pack(const tf_job *j, char *buf, size_t len);
/* argv pointers into buf (n bytes); returns argc. */
int tf_job_unpack(char *buf, int n, char **argv, int max);

/* batch_run.c */
typedef struct {
  int jobs_per_rank; /* children at once on each rank */
  int quiet;
  double kill_after_s; /* children still running this long after a forwarded signal get SIGKILL */
  const char *done_list; /* rank 0: the done list to append to (batch_done.c) */
  const char *keep_env;  /* TR_KEEP_ENV=... for every job: the batch's own files (every rank) */
} tf_batch_opts;

/* batch_child.c: one rank's running jobs. */
typedef struct {
  pid_t pid; /* also its process group */
  int job;
  int fd; /* its stdout and stderr */
  int out_fd; /* the file it reports its outputs to (TR_OUTPUTS_ENV) */
  double t0;
} tf_child;

typedef struct {
  const tf_batch_opts *o;
  char exe[PATH_MAX];
  char **envp; /* this process's environment without the launcher's variables,
                  and two slots at the end for each child's own */
  char env_out[PATH_MAX + 32], env_parent[48];
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
/* Forwards sig to every child's process group and waits for them
 * (kill_after_s, then SIGKILL). */
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
