/*
 * batch.h - tr_batch (terrain.h) inside: the job list and what each job
 * writes (jobs.c, through each command's option table, grammar.c), the done
 * list (done.c), running the list over the ranks (run.c), each job a child
 * process of the terrafort program (child.c), and the call with its summary
 * (batch.c).
 *
 * A job is one terrafort command line. Rank 0 reads the list, skips the jobs
 * an earlier run did whose files are all still there (the done list,
 * done.c), and hands the rest out one at a time to whichever rank
 * asks; each rank runs its jobs as child processes of this same executable,
 * so a job's output is the one it would give run alone. Each job tells what
 * it wrote itself (TR_OUTPUTS_ENV, terrain.h): that list, not one derived
 * from its options, is what the summary shows and the done list keeps. The
 * files a job's options name (its command's option table) only serve the checks
 * made before anything runs (two jobs writing one file, a job reading
 * another's output, --dir's own outputs taken for inputs).
 */
#ifndef TB_BATCH_H
#define TB_BATCH_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "terrain.h"

struct coll_live;
struct coll_ctx;

/* A job's words, packed NUL-separated, travel to its rank in one message. */
#define TB_BATCH_ARGV_MAX 16384
#define TB_BATCH_ERROR_MAX 512
#define TB_BATCH_STATS_MAX 8192
/* What a job reported writing ('\n'-separated absolute paths) travels in
 * its result: beyond this, the job counts as having reported nothing. */
#define TB_BATCH_OUTPUTS_MAX 16384


typedef enum {
  TB_JOB_PENDING,  /* not run yet */
  TB_JOB_SKIPPED,  /* every output already exists (a resumed batch) */
  TB_JOB_RUNNING,
  TB_JOB_DONE,     /* exit 0 */
  TB_JOB_FAILED,   /* another exit, a signal, or no start */
  TB_JOB_NOT_DONE  /* the batch ended first (signal, lost rank) */
} tb_job_state;

/* What the rank that ran a job reports. */
typedef struct {
  int exit;                        /* the child's exit code; 128+N: killed by signal N; -1: not started */
  double wall_s, cpu_s;            /* wall and user+system time of the child */
  long long max_rss_kb;
  char error[TB_BATCH_ERROR_MAX];  /* a failed job's last stderr line */
  char outputs[TB_BATCH_OUTPUTS_MAX]; /* the files it reported writing, one per line */
} tb_job_result;

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
  tb_job_state state;
  int rank;          /* who ran it, -1: nobody */
  double t_start, t_end; /* seconds from the batch's start, on rank 0's clock */
  tb_job_result res;
  char *stats;       /* its --stats-json file's text (a JSON object), read by rank 0 once it is done */
} tb_job;

/* grammar.c: a command's words as its program's option table gives them
 * (`PROGRAM CMD --options`, one run per command of a batch). */
enum { TB_ROLE_VALUE, TB_ROLE_IN, TB_ROLE_OUT, TB_ROLE_OUT_IF_DEM };
typedef struct {
  char *names; /* its spellings, blank-separated */
  int role;    /* TB_ROLE_* */
  int nvalues; /* words after it; -4: four numbers, or one word */
} tb_opt;
typedef struct {
  char *name, *all, *any, *none, *reads, *writes; /* tr_argv_form's lists; "" for none */
} tb_form;
typedef struct tb_grammar {
  char *cmd;           /* as asked (the program takes any case) */
  int last_positional; /* the last of two or more file names is the output */
  int dashdash;        /* a single-dash spelling answers to two dashes too */
  int job;             /* batch may run it (not batch itself) */
  tb_opt *opts;
  int nopts;
  tb_form *forms;
  int nforms;
  struct tb_grammar *next;
} tb_grammar;
/* cmd's grammar from program, kept in *cache: NULL with a line in err (the
 * program's own, for an unknown command). */
const tb_grammar *tb_grammar_of(tb_grammar **cache, const char *program, const char *cmd, char *err, size_t len);
void tb_grammar_free(tb_grammar *cache);
/* Is name one of the blank-separated words of list (NULL: none)? */
int tb_listed(const char *list, const char *name);
/* The row spelling name, or NULL. */
const tb_opt *tb_grammar_opt(const tb_grammar *g, const char *name);
/* The environment a child gets: this process's without the MPI launcher's
 * variables and the per-job ones (child.c); NULL out of memory. extra
 * slots are left NULL at the end for the caller's own. */
char **tb_child_env(size_t extra);

typedef struct {
  tb_job *v;
  int n, cap;
  const char *program;  /* the terrafort program (its option tables, and the jobs) */
  tb_grammar *grammars; /* the commands' tables, as they are first met */
} tb_jobs;

/* jobs.c. Each returns 0, or an exit code (2 usage, 3 input, 7 memory)
 * with a one-line message in err. */
int tb_jobs_read(tb_jobs *jobs, const char *path, char *err, size_t len);
/* Every regular, non-hidden file of dir matching glob, sorted by name, one
 * job each from tmpl (placeholders: batch.c's help). A file that another of
 * these jobs writes is not an input. */
int tb_jobs_from_dir(tb_jobs *jobs, const char *dir, const char *glob, const char *tmpl, char *err, size_t len);
/* Refuses two jobs writing one file, and a job reading a file another one
 * writes (jobs run in any order). */
int tb_jobs_check(const tb_jobs *jobs, char *err, size_t len);
void tb_jobs_free(tb_jobs *jobs);
/* j->wrote from '\n'-separated paths (replacing what was there): 0, -1 out of memory. */
int tb_job_set_wrote(tb_job *j, const char *lines);

/* done.c: the done list, one line per job done - its words and the
 * files it reported writing - appended as each job ends well, so that a
 * batch killed outright still resumes. */
typedef struct tb_done tb_done;
/* The list at path (none yet: empty); NULL only out of memory. */
tb_done *tb_done_load(const char *path);
void tb_done_free(tb_done *d);
/* 1 when the list holds j (its words; from another folder, none of them a
 * relative file name) and every file it wrote then is a regular file now;
 * j->wrote gets them. */
int tb_done_complete(const tb_done *d, tb_job *j);
/* Appends j with j->wrote (a job that wrote nothing is not kept: it runs
 * every time); 0, or -1 (errno). */
int tb_done_append(const char *path, const tb_job *j);

/* Words <-> one NUL-separated buffer: bytes used, or -1 when too long. */
int tb_job_pack(const tb_job *j, char *buf, size_t len);
/* argv pointers into buf (n bytes); returns argc. */
int tb_job_unpack(char *buf, int n, char **argv, int max);

/* run.c: what the run of the list needs (batch.c fills it from tr_batch_opts). */
typedef struct {
  int jobs_per_rank; /* children at once on each rank */
  double kill_after_s; /* children still running this long after a forwarded signal get SIGKILL */
  const char *done_list; /* rank 0: the done list to append to (done.c) */
  const char *keep_env;  /* TR_KEEP_ENV=... for every job: the batch's own files (every rank) */
  const char *program;   /* the terrafort program each job runs (an absolute path) */
  struct coll_live *live; /* the ranks' liveness monitor (NULL: waits unbounded, one process) */
  struct coll_ctx *coll;  /* the ranks' libcoll context */
  tr_progress_fn progress; /* jobs ended of those to run; NULL: none */
  void *progress_user;
  int (*cancelled)(void *user); /* nonzero (the signal, when one asked): stop, forwarding it to the jobs */
  void *cancel_user;
} tb_batch_opts;

/* child.c: one rank's running jobs. */
typedef struct {
  pid_t pid; /* also its process group */
  int job;
  int fd; /* its stdout and stderr */
  int out_fd; /* the file it reports its outputs to (TR_OUTPUTS_ENV) */
  double t0;
} tb_child;

typedef struct {
  const tb_batch_opts *o;
  char exe[PATH_MAX];
  char **envp; /* this process's environment without the launcher's variables,
                  and two slots at the end for each child's own */
  char env_out[PATH_MAX + 32], env_parent[48];
  tb_child *kids;
  int nkids;
  int run, failed; /* jobs this rank ran, of which failed */
  double busy_s, cpu_s;
} tb_runner;

int tb_runner_init(tb_runner *r, const tb_batch_opts *o);
void tb_runner_free(tb_runner *r);
/* Starts job `job` (words argv, NULL-terminated): 0, or -1 with res filled
 * (the job could not start: a failure of its own). */
int tb_child_start(tb_runner *r, int job, char **argv, tb_job_result *res);
/* Reaps child k if it ended (block: waits for it): 1 with its job and res,
 * the child removed from the list; 0 while it runs. */
int tb_child_reap(tb_runner *r, int k, int block, int *job, tb_job_result *res);
/* Forwards sig to every child's process group and waits for them
 * (kill_after_s, then SIGKILL). */
void tb_children_stop(tb_runner *r, int sig);
double tb_now_s(void); /* CLOCK_MONOTONIC seconds */
void tb_nap(void);     /* 2 ms: a polling loop's pause */

/* Per-rank figures gathered on rank 0 at the end (libcoll's timeout reduce). */
typedef struct {
  int nranks;
  double *per_rank; /* nranks x TB_BATCH_RANK_FIELDS */
  double reduce_waited_ms;
  double wall_s;
  int lost_rank;    /* -1, or the rank lost */
} tb_batch_outcome;
enum { TB_RANK_JOBS, TB_RANK_FAILED, TB_RANK_BUSY_S, TB_RANK_CPU_S, TB_RANK_WALL_S, TB_BATCH_RANK_FIELDS };

/* Runs the batch on every rank. jobs: rank 0's list (NULL elsewhere), with
 * the skipped jobs already marked; startup: rank 0's verdict on the list (0
 * or an exit code), shared with every rank before any job. Returns this
 * rank's exit code: 0, 8 (a signal), 10 (a rank lost) or startup's code. */
int tb_batch_run(tb_jobs *jobs, int startup, const tb_batch_opts *o, tb_batch_outcome *out);

#endif
