/*
 * child.c - one rank's jobs of a batch as child processes.
 *
 * Each job is the terrafort program (tb_batch_opts.program) run with the job's words,
 * without the MPI launcher's variables (so it runs as a plain one-process
 * terrafort: its output is the one it gives run alone), with the signals a
 * run handles at their defaults, in its own process group (a Ctrl-C on the
 * terminal reaches the batch, which forwards it), stdin from /dev/null and
 * stdout and stderr to an unlinked temporary file whose last line is the
 * job's error line. posix_spawn, not fork: the rank is a threaded MPI
 * process. Children are reaped with wait4 (their CPU time and peak memory)
 * and never waited for without a bound.
 *
 * Each job also gets, in its environment, TR_OUTPUTS_ENV naming a temporary
 * file of its own, to which it appends every file it writes (terrain.h);
 * read back when it is reaped, that is the job's list of outputs. That file
 * is unlinked too: the job has it as descriptor OUTPUTS_FD and the variable
 * names /proc/self/fd/OUTPUTS_FD, so a rank killed with its jobs running
 * leaves nothing in TMPDIR. And
 * TR_BATCH_PARENT_ENV: the job cancels itself should this process die
 * (terrain.h). And TR_KEEP_ENV: the batch's jobs file, summary and done
 * list, which a job refuses to write as it refuses its input. A signal for
 * the jobs goes to each one's process group.
 */
#include "batch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


extern char **environ;

double tb_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void tb_nap(void) {
  struct timespec t = {0, 2000000};
  nanosleep(&t, NULL);
}

/* The launcher's variables make a child think it is a rank of this job;
 * the two set per child (below) are not inherited. */
static int launcher_var(const char *e) {
  static const char *const prefixes[] = {"OMPI_", "PMIX_", "PMI_", "MPI_LOCALNRANKS=", "MPI_LOCALRANKID=",
                                         TR_OUTPUTS_ENV "=", TR_BATCH_PARENT_ENV "=", TR_KEEP_ENV "="};
  for (size_t k = 0; k < sizeof prefixes / sizeof prefixes[0]; k++)
    if (!strncmp(e, prefixes[k], strlen(prefixes[k]))) return 1;
  return 0;
}

char **tb_child_env(size_t extra) {
  size_t ne = 0;
  while (environ[ne]) ne++;
  char **envp = calloc(ne + extra + 1, sizeof *envp);
  if (!envp) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < ne; i++)
    if (!launcher_var(environ[i])) envp[k++] = environ[i];
  return envp;
}

int tb_runner_init(tb_runner *r, const tb_batch_opts *o) {
  memset(r, 0, sizeof *r);
  r->o = o;
  if (!o->program || strlen(o->program) >= sizeof r->exe) return -1;
  snprintf(r->exe, sizeof r->exe, "%s", o->program);
  r->envp = tb_child_env(3);
  r->kids = calloc((size_t)o->jobs_per_rank, sizeof *r->kids);
  if (!r->envp || !r->kids) return -1;
  size_t k = 0;
  while (r->envp[k]) k++;
  /* the batch's own files, which no job may write (terrain.h) */
  if (o->keep_env) r->envp[k++] = (char *)o->keep_env;
  /* the two slots of each child's own variables */
  snprintf(r->env_parent, sizeof r->env_parent, "%s=%ld", TR_BATCH_PARENT_ENV, (long)getpid());
  r->envp[k] = r->env_parent;
  r->envp[k + 1] = r->env_out;
  return 0;
}

void tb_runner_free(tb_runner *r) {
  free(r->envp);
  free(r->kids);
}

/* The descriptor a job has its list of outputs on (after stdin, stdout,
 * stderr). */
#define OUTPUTS_FD 3

/* A temporary file in TMPDIR (or /tmp), not inherited by children: its
 * descriptor, the path in path; -1 with res filled. */
static int temp_file(char *path, size_t len, const char *what, tb_job_result *res) {
  const char *tmp = getenv("TMPDIR");
  snprintf(path, len, "%s/terrafort-batch-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0) {
    memset(res, 0, sizeof *res);
    res->exit = -1;
    snprintf(res->error, sizeof res->error, "cannot create a temporary file for its %s in %s: %s", what,
             tmp && *tmp ? tmp : "/tmp", strerror(errno));
    return -1;
  }
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  return fd;
}

/* Starts job words argv; 0, or -1 with res filled (the job failed to start). */
int tb_child_start(tb_runner *r, int job, char **argv, tb_job_result *res) {
  char path[PATH_MAX], out_path[PATH_MAX];
  int fd = temp_file(path, sizeof path, "messages", res);
  if (fd < 0) return -1;
  unlink(path); /* only this job's child gets it, as its stdout and stderr */
  /* the job opens this one by name (TR_OUTPUTS_ENV), through its own
   * descriptor OUTPUTS_FD: the file has no name left */
  int out_fd = temp_file(out_path, sizeof out_path, "list of outputs", res);
  if (out_fd < 0) {
    close(fd);
    return -1;
  }
  unlink(out_path);
  snprintf(r->env_out, sizeof r->env_out, "%s=/proc/self/fd/%d", TR_OUTPUTS_ENV, OUTPUTS_FD);
  int argc = 0;
  while (argv[argc]) argc++;
  char **cargv = calloc((size_t)argc + 2, sizeof *cargv);
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fd, 1);
  posix_spawn_file_actions_adddup2(&fa, fd, 2);
  posix_spawn_file_actions_adddup2(&fa, out_fd, OUTPUTS_FD);
  posix_spawnattr_init(&at);
  sigset_t def, none;
  sigemptyset(&def);
  sigemptyset(&none);
  /* the signals this process handles (the batch's stop) start at their
   * defaults in the job; one ignored by whoever started us stays ignored */
  for (int s = 1; s < NSIG; s++) {
    struct sigaction sa;
    if (s != SIGKILL && s != SIGSTOP && !sigaction(s, NULL, &sa) && sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN)
      sigaddset(&def, s);
  }
  posix_spawnattr_setsigdefault(&at, &def);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setpgroup(&at, 0);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  pid_t pid = -1;
  int rc = ENOMEM;
  if (cargv) {
    cargv[0] = "terrafort";
    memcpy(cargv + 1, argv, (size_t)argc * sizeof *argv);
    rc = posix_spawn(&pid, r->exe, &fa, &at, cargv, r->envp);
  }
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  free(cargv);
  if (rc != 0) {
    close(fd);
    close(out_fd);
    memset(res, 0, sizeof *res);
    res->exit = -1;
    snprintf(res->error, sizeof res->error, "cannot start %.400s: %s", r->exe, strerror(rc));
    return -1;
  }
  tb_child *c = &r->kids[r->nkids++];
  c->pid = pid;
  c->job = job;
  c->fd = fd;
  c->out_fd = out_fd;
  c->t0 = tb_now_s();
  return 0;
}

/* What the child reported writing, whole or not at all (too long: none). */
static void read_outputs(tb_child *c, char *out, size_t len) {
  out[0] = 0;
  ssize_t n = pread(c->out_fd, out, len, 0);
  if (n < 0 || (size_t)n >= len) n = 0;
  out[n] = 0;
}

/* The last non-empty line of what the child printed. */
static void last_line(int fd, char *out, size_t len) {
  out[0] = 0;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size <= 0) return;
  const off_t want = st.st_size < 4096 ? st.st_size : 4096;
  char buf[4097];
  ssize_t n = pread(fd, buf, (size_t)want, st.st_size - want);
  if (n <= 0) return;
  buf[n] = 0;
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) buf[--n] = 0;
  const char *p = strrchr(buf, '\n');
  p = p ? p + 1 : buf;
  const size_t k = strlen(p) < len ? strlen(p) : len - 1;
  memcpy(out, p, k);
  out[k] = 0;
}

/* Reaps child k if it ended (block: wait for it); 1 with its job and res
 * when it did, removing it from the list. */
int tb_child_reap(tb_runner *r, int k, int block, int *job, tb_job_result *res) {
  tb_child *c = &r->kids[k];
  struct rusage ru;
  int st;
  pid_t p = wait4(c->pid, &st, block ? 0 : WNOHANG, &ru);
  if (p == 0 || (p < 0 && errno == EINTR)) return 0;
  memset(res, 0, sizeof *res);
  res->wall_s = tb_now_s() - c->t0;
  if (p < 0) {
    res->exit = -1;
    snprintf(res->error, sizeof res->error, "lost track of its process: %s", strerror(errno));
  } else {
    res->exit = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    res->cpu_s = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
                 1e-6 * (double)ru.ru_stime.tv_usec;
    res->max_rss_kb = ru.ru_maxrss;
    if (res->exit != 0) last_line(c->fd, res->error, sizeof res->error);
    if (WIFSIGNALED(st) && !res->error[0])
      snprintf(res->error, sizeof res->error, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
  }
  read_outputs(c, res->outputs, sizeof res->outputs);
  close(c->fd);
  close(c->out_fd);
  *job = c->job;
  r->run++;
  r->failed += res->exit != 0;
  r->busy_s += res->wall_s;
  r->cpu_s += res->cpu_s;
  r->kids[k] = r->kids[--r->nkids];
  return 1;
}

/* Forwards sig to every child's process group (whatever a job started goes
 * too), then waits for them: kill_after_s at most, then SIGKILL (a child
 * that ignores the signal cannot hold the batch). */
void tb_children_stop(tb_runner *r, int sig) {
  for (int k = 0; k < r->nkids; k++) kill(-r->kids[k].pid, sig);
  const double until = tb_now_s() + r->o->kill_after_s;
  int killed = 0;
  while (r->nkids) {
    int job, any = 0;
    tb_job_result res;
    for (int k = r->nkids - 1; k >= 0; k--) any |= tb_child_reap(r, k, killed, &job, &res);
    if (!killed && tb_now_s() > until) {
      for (int k = 0; k < r->nkids; k++) kill(-r->kids[k].pid, SIGKILL);
      killed = 1;
    }
    if (!any) tb_nap();
  }
}
