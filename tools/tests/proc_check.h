/*
 * proc_check.h - running terrafort as a child process the test can signal:
 * spawn with stderr to a file, wait with a deadline, find its temporary files
 * (".NAME.terrafort-PID-HOST.tmp.EXT", terrafort(1) FILES).
 */
#ifndef TF_PROC_CHECK_H
#define TF_PROC_CHECK_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  int exited, code;     /* WIFEXITED and its status */
  int signaled, sig;    /* killed by a signal (a crash, or our SIGKILL after the deadline) */
  int timed_out;        /* the deadline passed: the test killed it */
  double secs;          /* from pc_wait's call to the end */
} pc_result;

static inline double pc_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline void pc_sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* Starts argv[0] with stdout to /dev/null, stderr to errfile (or /dev/null),
 * the signals terrafort handles at their defaults, and an address-space limit
 * of as_limit bytes when > 0. Returns the pid, or -1. */
static inline pid_t pc_spawn(char *const argv[], const char *errfile, long long as_limit) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGXCPU, SIGXFSZ, SIGPIPE};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  int nul = open("/dev/null", O_RDWR);
  int ef = errfile ? open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644) : nul;
  if (nul >= 0) {
    dup2(nul, 0);
    dup2(nul, 1);
  }
  if (ef >= 0) dup2(ef, 2);
  if (as_limit > 0) {
    struct rlimit rl = {(rlim_t)as_limit, (rlim_t)as_limit};
    setrlimit(RLIMIT_AS, &rl);
  }
  execv(argv[0], argv);
  _exit(127);
}

/* An mpirun's status as the job's: its exit code; or, when Open MPI 4.1's
 * mpirun crashed in its own tear-down (SIGSEGV in PMIx_server_finalize,
 * after every rank ended and it had printed the exit code of the rank that
 * ended the job: a few runs in a hundred here), that printed code; else
 * -1. err: mpirun's stderr. */
static inline int pc_mpirun_status(const pc_result *r, const char *err) {
  if (r->exited) return r->code;
  const char *x = err ? strstr(err, "Exit code:") : NULL;
  if (r->signaled && r->sig == SIGSEGV && x && strstr(err, "PMIx_server_finalize")) {
    printf("  (mpirun crashed in PMIx_server_finalize after reporting the job's end: its report is used)\n");
    return atoi(x + 10);
  }
  return -1;
}

/* Waits for pid up to timeout_s (then SIGKILLs it and reaps it). */
static inline int pc_wait(pid_t pid, double timeout_s, pc_result *r) {
  memset(r, 0, sizeof *r);
  const double t0 = pc_now();
  int st = 0;
  for (;;) {
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return -1;
    if (pc_now() - t0 > timeout_s) {
      r->timed_out = 1;
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      break;
    }
    pc_sleep_ms(2);
  }
  r->secs = pc_now() - t0;
  r->exited = WIFEXITED(st);
  r->code = r->exited ? WEXITSTATUS(st) : -1;
  r->signaled = WIFSIGNALED(st);
  r->sig = r->signaled ? WTERMSIG(st) : 0;
  return 0;
}

/* Entries of dir whose name contains `needle` (NULL: any entry). The first
 * one's name goes to first when given. */
static inline int pc_count(const char *dir, const char *needle, char *first, size_t n) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int k = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (needle && !strstr(e->d_name, needle)) continue;
    if (first && k == 0) snprintf(first, n, "%s", e->d_name);
    k++;
  }
  closedir(d);
  return k;
}

/* Polls dir until an entry containing needle exists (1) or timeout_s passed
 * or pid ended (0). */
static inline int pc_wait_for_entry(const char *dir, const char *needle, pid_t pid, double timeout_s) {
  const double t0 = pc_now();
  while (pc_now() - t0 < timeout_s) {
    if (pc_count(dir, needle, NULL, 0) > 0) return 1;
    if (pid > 0) {
      siginfo_t si;
      memset(&si, 0, sizeof si);
      if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) return 0;
    }
    pc_sleep_ms(1);
  }
  return 0;
}

/* The children of process p's main thread, at most max of them. */
static inline int pc_children(pid_t p, pid_t *out, int max) {
  char path[128], kids[8192];
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)p, (int)p);
  FILE *f = fopen(path, "rb");
  size_t nk = f ? fread(kids, 1, sizeof kids - 1, f) : 0;
  if (f) fclose(f);
  kids[nk] = 0;
  int n = 0;
  for (char *q = kids, *end; n < max; q = end) {
    long k = strtol(q, &end, 10);
    if (end == q) break;
    out[n++] = (pid_t)k;
  }
  return n;
}

/* Process pid has ended (gone, or a zombie nobody reaps). */
static inline int pc_ended(pid_t pid) {
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *c = strrchr(buf, ')');
  return c && (c[2] == 'Z' || c[2] == 'X');
}

/* The pid of rank r among mpirun's children (found by
 * OMPI_COMM_WORLD_RANK in /proc/PID/environ), 0 when not (yet) there. */
static inline pid_t pc_rank_pid(pid_t mpirun, int r) {
  pid_t kids[1024];
  const int nk = pc_children(mpirun, kids, 1024);
  char want[64], p[128];
  snprintf(want, sizeof want, "OMPI_COMM_WORLD_RANK=%d", r);
  for (int i = 0; i < nk; i++) {
    const long k = kids[i];
    snprintf(p, sizeof p, "/proc/%ld/environ", k);
    FILE *f = fopen(p, "rb");
    if (!f) continue;
    char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    for (size_t i = 0; i < n;) {
      if (!strcmp(buf + i, want)) return (pid_t)k;
      i += strlen(buf + i) + 1;
    }
  }
  return 0;
}

/* Lines in a string. */
static inline int pc_lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

#endif
