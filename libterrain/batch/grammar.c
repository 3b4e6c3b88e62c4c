/*
 * grammar.c - which words of a job are options taking values and which name
 * files it writes, read from its command's option table as the terrafort
 * program prints it (`PROGRAM CMD --options`: a row per option, then "#set"
 * and "#form" lines; tools/options.h). One table, the program's: the batch
 * reads jobs exactly as the program parses them.
 *
 * The program runs once per command met, with the environment a job gets
 * (no MPI launcher's variables: it must not take itself for a rank), its
 * output read through a pipe within a bound (a program that does not answer
 * in TB_GRAMMAR_WAIT_MS is killed and the batch refused).
 */
#include "batch.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TB_GRAMMAR_WAIT_MS 30000
#define TB_GRAMMAR_MAX (1 << 20)

/* PROGRAM CMD --options: its output (stdout and stderr) into *text, its
 * exit status into *status; 0, or -1 with err. */
static int ask(const char *program, const char *cmd, char **text, int *status, char *err, size_t len) {
  int fds[2];
  *text = NULL;
  if (pipe(fds) || fcntl(fds[0], F_SETFD, FD_CLOEXEC) || fcntl(fds[1], F_SETFD, FD_CLOEXEC)) {
    snprintf(err, len, "cannot run %s: %s", program, strerror(errno));
    return -1;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  char **envp = tb_child_env(0);
  char *argv[] = {(char *)program, (char *)cmd, "--options", NULL};
  pid_t pid;
  const int rc = envp ? posix_spawnp(&pid, program, &fa, NULL, argv, envp) : ENOMEM;
  posix_spawn_file_actions_destroy(&fa);
  free(envp);
  close(fds[1]);
  if (rc) {
    close(fds[0]);
    snprintf(err, len, "cannot run %s: %s", program, strerror(rc));
    return -1;
  }
  size_t n = 0, cap = 65536;
  char *buf = malloc(cap);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int timed_out = 0;
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &t);
    const long left = TB_GRAMMAR_WAIT_MS - (long)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    const int ready = left > 0 ? poll(&p, 1, (int)left) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      timed_out = 1;
      break;
    }
    if (buf && n + 4096 > cap && cap < TB_GRAMMAR_MAX) {
      char *b = realloc(buf, cap *= 2);
      if (!b) break;
      buf = b;
    }
    const ssize_t k = buf && n + 1 < cap ? read(fds[0], buf + n, cap - n - 1) : 0;
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    n += (size_t)k;
  }
  close(fds[0]);
  /* its output ended: it ends too, within what is left of the bound */
  int st = 0;
  for (pid_t w = 0; !timed_out && (w = waitpid(pid, &st, WNOHANG)) == 0;) {
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= TB_GRAMMAR_WAIT_MS) timed_out = 1;
    else nanosleep(&(struct timespec){0, 2000000}, NULL);
    if (w < 0 && errno != EINTR) break;
  }
  if (timed_out) {
    kill(pid, SIGKILL);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  }
  if (!buf || timed_out) {
    free(buf);
    snprintf(err, len, timed_out ? "%s %s --options did not answer within %d s" : "out of memory", program, cmd,
             TB_GRAMMAR_WAIT_MS / 1000);
    return -1;
  }
  buf[n] = '\0';
  *text = buf;
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return 0;
}

/* The next tab-separated field of *p (NUL-terminated in place); "-" is "". */
static char *field(char **p) {
  char *s = *p;
  if (!s) return "";
  char *t = strchr(s, '\t');
  if (t) {
    *t = '\0';
    *p = t + 1;
  } else {
    *p = NULL;
  }
  return strcmp(s, "-") ? s : "";
}

static int role_of(const char *s) {
  return !strcmp(s, "in")           ? TB_ROLE_IN
         : !strcmp(s, "out")        ? TB_ROLE_OUT
         : !strcmp(s, "out-if-dem") ? TB_ROLE_OUT_IF_DEM
                                    : TB_ROLE_VALUE;
}

/* The table text into g (the text is cut up in place; every string copied). */
static int parse(tb_grammar *g, char *text) {
  int cap_o = 0, cap_f = 0;
  for (char *line = text, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    char *p = line;
    const char *first = field(&p);
    if (!strcmp(first, "#set")) {
      for (const char *k; p && *(k = field(&p));) {
        const int v = atoi(field(&p));
        if (!strcmp(k, "last_positional"))
          g->last_positional = v;
        else if (!strcmp(k, "dashdash"))
          g->dashdash = v;
        else if (!strcmp(k, "job"))
          g->job = v;
      }
    } else if (!strcmp(first, "#form")) {
      if (g->nforms == cap_f) {
        cap_f = cap_f ? 2 * cap_f : 8;
        tb_form *f = realloc(g->forms, (size_t)cap_f * sizeof *f);
        if (!f) return -1;
        g->forms = f;
      }
      tb_form *f = &g->forms[g->nforms++];
      memset(f, 0, sizeof *f);
      char **slots[] = {&f->name, &f->all, &f->any, &f->none, &f->reads, &f->writes};
      for (size_t k = 0; k < sizeof slots / sizeof slots[0]; k++)
        if (!(*slots[k] = strdup(field(&p)))) return -1;
    } else if (first[0] == '-') {
      if (g->nopts == cap_o) {
        cap_o = cap_o ? 2 * cap_o : 64;
        tb_opt *o = realloc(g->opts, (size_t)cap_o * sizeof *o);
        if (!o) return -1;
        g->opts = o;
      }
      tb_opt *o = &g->opts[g->nopts];
      if (!(o->names = strdup(first))) return -1;
      g->nopts++;
      (void)field(&p); /* kind */
      o->role = role_of(field(&p));
      o->nvalues = atoi(field(&p));
    }
  }
  return 0;
}

static void grammar_free1(tb_grammar *g) {
  for (int i = 0; i < g->nopts; i++) free(g->opts[i].names);
  for (int i = 0; i < g->nforms; i++) {
    tb_form *f = &g->forms[i];
    free(f->name), free(f->all), free(f->any), free(f->none), free(f->reads), free(f->writes);
  }
  free(g->opts);
  free(g->forms);
  free(g->cmd);
  free(g);
}

void tb_grammar_free(tb_grammar *cache) {
  while (cache) {
    tb_grammar *next = cache->next;
    grammar_free1(cache);
    cache = next;
  }
}

const tb_grammar *tb_grammar_of(tb_grammar **cache, const char *program, const char *cmd, char *err, size_t len) {
  for (tb_grammar *g = *cache; g; g = g->next)
    if (!strcasecmp(g->cmd, cmd)) return g;
  /* a word that is no command name is not worth a run of the program */
  for (const char *c = cmd; *c; c++)
    if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_') {
      snprintf(err, len, "unknown command '%s' (see 'terrafort --help')", cmd);
      return NULL;
    }
  char *text;
  int status;
  if (!*cmd || cmd[0] == '-') {
    snprintf(err, len, "unknown command '%s' (see 'terrafort --help')", cmd);
    return NULL;
  }
  if (ask(program, cmd, &text, &status, err, len)) return NULL;
  if (status != 0) {
    /* the program's own line ("terrafort: unknown command 'x': did you mean 'y'? ..."), less its name */
    char *line = text;
    line[strcspn(line, "\n")] = '\0';
    const char *msg = !strncmp(line, "terrafort: ", 11) ? line + 11 : line;
    snprintf(err, len, "%s", *msg ? msg : "unknown command");
    free(text);
    return NULL;
  }
  tb_grammar *g = calloc(1, sizeof *g);
  if (!g || !(g->cmd = strdup(cmd)) || parse(g, text)) {
    free(text);
    if (g) grammar_free1(g);
    snprintf(err, len, "out of memory");
    return NULL;
  }
  free(text);
  g->next = *cache;
  *cache = g;
  return g;
}

int tb_listed(const char *names, const char *name) {
  const size_t n = strlen(name);
  for (const char *p = names; p && *p;) {
    while (*p == ' ') p++;
    const size_t k = strcspn(p, " ");
    if (k == n && !strncmp(p, name, n)) return 1;
    p += k;
  }
  return 0;
}

const tb_opt *tb_grammar_opt(const tb_grammar *g, const char *name) {
  for (int i = 0; i < g->nopts; i++)
    if (tb_listed(g->opts[i].names, name)) return &g->opts[i];
  return NULL;
}
