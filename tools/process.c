/*
 * process.c - the state a terrafort process has once: MPI, the liveness
 * monitor and libcoll context over it, and the stop flag (process.h).
 *
 * Set-up done once per process, never by the libraries: MPI only when
 * mpirun launched us, so a plain `terrafort` never needs an MPI runtime.
 * Every command, and the batch that runs commands as jobs, reads this state
 * from here; main.c only starts it before the command and ends it after.
 *
 * The end is the delicate part: under mpirun a rank that lost a peer must
 * not call MPI_Finalize (it would wait for the lost rank forever), and a
 * rank that has finished must still see every other alive before it does.
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "process.h"
#include "progress.h"
#include "twins.h"

#include "coll.h"
#include "coll_live.h"
#include "terrain.h"

#include <pthread.h>
#include <semaphore.h>

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>
#endif

/* One of each per process, like MPI itself. */
/* Under mpirun, from the command's end to MPI_Finalize's: JOB_ENDING. A
 * stop signal's handler that finds it so makes it JOB_CUT (a
 * compare-and-swap) and removes the outputs; the end of MPI_Finalize makes
 * it JOB_RUNNING the same way, unless it was cut. */
enum { JOB_RUNNING, JOB_ENDING, JOB_CUT };
static int job_ending;
static volatile sig_atomic_t interrupted; /* a stop signal came (the stop flag, below) */
static coll_live *live;
static coll_ctx *coll;
static int mpi_started;

coll_live *tf_live(void) { return live; }
coll_ctx *tf_coll(void) { return coll; }

int tf_process_speaks(void) {
  const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *r = getenv(vars[i]);
    if (r) return !strcmp(r, "0");
  }
  return 1;
}

#ifdef TERRAFORT_MPI_PEER
/* This program is built without MPI, so a plain run never loads MPI's
 * libraries (they cost every start a few milliseconds); its twin linked
 * with MPI, TERRAFORT_MPI_PEER, lies in the same folder. `terrafort`
 * (launcher.c) picks the twin before loading anything; this program
 * started by mpirun itself becomes that one all the same: the same
 * arguments, environment and pid, so mpirun sees no difference. Returns
 * only when it cannot. */
static void run_mpi_peer(char **argv) {
  char path[PATH_MAX];
  tf_exec_twin(argv, TERRAFORT_MPI_PEER, path, sizeof path);
  if (!path[0])
    fprintf(stderr,
            "terrafort: started by mpirun, but cannot find this program's folder (/proc/self/exe, argv[0], PATH)\n");
  else
    fprintf(stderr, "terrafort: started by mpirun, but cannot run %s, its MPI build: %s\n", path, strerror(errno));
}
#endif

/* A job of a batch (terrain.h, TR_BATCH_PARENT_ENV): the pid of the rank
 * that started it, 0 otherwise. Once that rank is gone - even killed
 * outright, when nobody can signal this job - its parent is another
 * process, and the run cancels itself as on a signal: no output. */
static long batch_rank;

int tf_batch_rank_gone(void) { return batch_rank > 0 && (long)getppid() != batch_rank; }

#ifdef TERRAFORT_HAVE_MPI
static void start_watchdog(char **argv); /* below: the step watchdog */
#endif

/* The user set glibc's own heap tunables: a glibc.malloc. tunable in
 * GLIBC_TUNABLES, or any MALLOC_* variable. */
static int user_heap(void) {
  extern char **environ;
  const char *t = getenv("GLIBC_TUNABLES");
  if (t && strstr(t, "glibc.malloc.")) return 1;
  for (char **e = environ; *e; e++)
    if (!strncmp(*e, "MALLOC_", 7)) return 1;
  return 0;
}

/* glibc's heap: freed memory up to 32 MiB stays in the heap for the next
 * allocation, and blocks below 32 MiB come from the heap. By default glibc
 * hands a large freed block back to the kernel (munmap, or trimming the
 * heap's top past a threshold that follows the largest block freed), and
 * the rounds of the graph programs allocate and free their megabyte-sized
 * arrays tile after tile: every new one was fresh pages, a page fault each
 * (on a virtual machine a costly one). flowgraph --dir at 8000^2: system
 * time 3.80 s -> 2.82 s, the run 9.51 s -> 8.44 s, the peak +2%
 * (scripts/bench/heap, RESULTS.md). Only for the graph commands (the
 * command table's graph_heap: fill, flowgraph): slope, a local mode,
 * measured no gain (0.82 s without, 0.90 s with, within this machine's
 * noise). Not when the user set glibc's own tunables (a glibc.malloc.
 * tunable in GLIBC_TUNABLES, or any MALLOC_* variable): theirs stand
 * (terrafort(1), ENVIRONMENT; cli_heap_setup). */
void tf_process_heap_setup(void) {
#if defined(__GLIBC__) && defined(M_TRIM_THRESHOLD) && defined(M_MMAP_THRESHOLD)
  if (user_heap()) return;
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 32 << 20);
#endif
}

/* A graph run that spills hands glibc's heap to the program
 * (tr_heap_spill_apply, terrain.h), and the user's tunables stand here too. */
tr_heap_fn tf_process_heap_spill(void) { return user_heap() ? NULL : tr_heap_spill_apply; }

/* MPI is initialised only when a launcher started us (twins.h's
 * tf_launched_by_mpirun), so a plain `terrafort` never needs an MPI runtime. */
int tf_process_init(char **argv) {
#ifdef TERRAFORT_MPI_PEER
  if (tf_launched_by_mpirun()) {
    run_mpi_peer(argv);
    return 1;
  }
  /* the launcher made this process terrafort-solo: ps, top and killall
   * still know a plain run by the command's name */
  prctl(PR_SET_NAME, "terrafort", 0, 0, 0);
#else
  (void)argv;
#endif
#ifdef TERRAFORT_HAVE_MPI
  if (tf_launched_by_mpirun()) start_watchdog(argv);
#endif
  const char *br = getenv(TR_BATCH_PARENT_ENV);
  batch_rank = br ? atol(br) : 0;
  return 0;
}

#ifdef TERRAFORT_HAVE_MPI
/* ---- the step watchdog ----------------------------------------------------------------------
 *
 * Bounded from the first instruction. A few steps of a process under mpirun
 * wait for every other rank where no liveness monitor can bound them:
 * MPI_Init (the launcher's fence: the monitor cannot run before MPI), the
 * monitor's own start and the libcoll context's creation (collective
 * duplications of MPI_COMM_WORLD), and MPI_Finalize (after the monitor's
 * closing handshake). A rank stopped, hung or killed there would hold every
 * other until it is continued. One thread, started first thing in main
 * (tf_process_init), watches whichever of these steps is under way: each
 * has the rank timeout to complete (--rank-timeout, read from the command
 * line before the options are parsed, else the default), counted for
 * MPI_Init from the process's start. Past it the thread removes this
 * process's temporaries, names the step on stderr and ends the process
 * with exit 10, as a rank lost later does; mpirun, seeing a rank exit
 * non-zero, ends the rest of the job. Between these steps every wait goes
 * through the monitor (coll_live.h), itself started with that timeout. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  const char *step; /* NULL: none under way */
  const char *when; /* "while the job started", "at the end of the job" */
  unsigned gen;     /* bumped by every step_begin and step_end */
  struct timespec until;
} wd = {.mu = PTHREAD_MUTEX_INITIALIZER};
static double step_ms = (double)COLL_LIVE_DEFAULT_TIMEOUT_MS; /* the rank timeout */
static int wd_started;

/* This rank's number from the launcher's environment (MPI's may not be
 * there yet, or no longer). */
static const char *env_rank(void) {
  const char *r = getenv("OMPI_COMM_WORLD_RANK");
  if (!r) r = getenv("PMIX_RANK");
  if (!r) r = getenv("PMI_RANK");
  return r ? r : "?";
}

/* The line a step past its deadline ends the process with: write(), not
 * stdio, as the watchdog's thread says it while another may hold stderr's
 * lock. */
static void step_line(const char *step, const char *when) {
  char line[512];
  const int n = snprintf(line, sizeof line,
                         "terrafort: rank %s: %s did not complete within %.0f ms: a rank stopped, hung or died %s\n",
                         env_rank(), step, step_ms, when);
  if (n > 0 && write(STDERR_FILENO, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1)) < 0) {
    /* nothing more to say it with */
  }
}

static void *step_watchdog(void *arg) {
  (void)arg;
  pthread_mutex_lock(&wd.mu);
  for (;;) {
    while (!wd.step) pthread_cond_wait(&wd.cv, &wd.mu);
    const unsigned gen = wd.gen;
    int rc = 0;
    while (wd.gen == gen && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&wd.cv, &wd.mu, &wd.until);
    if (wd.gen == gen) break; /* the same step, past its deadline */
  }
  const char *step = wd.step, *when = wd.when;
  pthread_mutex_unlock(&wd.mu);
  /* exit 10 leaves no output: at MPI_Finalize, rank 0's are in place */
  tr_remove_temporaries();
  tr_remove_outputs();
  step_line(step, when);
  _exit(TR_EXIT_RANK);
  return NULL;
}

/* Step `step` starts now (its deadline: the rank timeout from now). */
static void step_begin(const char *step, const char *when) {
  if (!wd_started) return;
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  const double s = (double)t.tv_sec + t.tv_nsec * 1e-9 + step_ms / 1000.0;
  pthread_mutex_lock(&wd.mu);
  wd.until.tv_sec = (time_t)s;
  wd.until.tv_nsec = (long)((s - (double)wd.until.tv_sec) * 1e9);
  wd.step = step;
  wd.when = when;
  wd.gen++;
  pthread_cond_signal(&wd.cv);
  pthread_mutex_unlock(&wd.mu);
}

/* The step under way completed. */
static void step_end(void) {
  if (!wd_started) return;
  pthread_mutex_lock(&wd.mu);
  wd.step = NULL;
  wd.gen++;
  pthread_cond_signal(&wd.cv);
  pthread_mutex_unlock(&wd.mu);
}

/* The rank timeout the command line asks for (--rank-timeout MS or
 * --rank-timeout=MS), else the default. */
static double startup_timeout_ms(char **argv) {
  for (int i = 1; argv[i]; i++) {
    const char *v = NULL;
    if (!strcmp(argv[i], "--rank-timeout")) v = argv[i + 1];
    else if (!strncmp(argv[i], "--rank-timeout=", 15)) v = argv[i] + 15;
    if (!v) continue;
    char *end;
    const double ms = strtod(v, &end);
    if (*end == 0 && ms >= COLL_LIVE_MIN_TIMEOUT_MS && ms <= COLL_LIVE_MAX_TIMEOUT_MS) return ms;
  }
  return (double)COLL_LIVE_DEFAULT_TIMEOUT_MS;
}

/* Started first thing in a process mpirun launched, with its first step,
 * MPI_Init, already counting. */
static void start_watchdog(char **argv) {
  step_ms = startup_timeout_ms(argv);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&wd.cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_t th;
  if (pthread_create(&th, NULL, step_watchdog, NULL) != 0) return;
  pthread_detach(th);
  wd_started = 1;
  step_begin("MPI_Init", "while the job started");
}

/* The injector's stop points outside any command (TERRAFORT_INJECT only:
 * read before the options), kind:rank=R - rank R stops itself (SIGSTOP):
 * stop-start before MPI_Init, stop-started after it (before the monitor
 * starts), stop-end before the closing handshake, stop-finalize before
 * MPI_Finalize (after the handshake). */
static void inject_stop(const char *kind) {
  const char *spec = getenv("TERRAFORT_INJECT");
  const size_t n = strlen(kind);
  for (const char *k = spec; k && (k = strstr(k, kind)); k += n) {
    if ((k != spec && k[-1] != ';') || k[n] != ':') continue;
    const char *r = strstr(k, "rank="), *end = strchr(k, ';');
    if (!r || (end && r > end)) continue;
    if (atol(r + 5) == atol(env_rank()) && strcmp(env_rank(), "?")) raise(SIGSTOP);
  }
}
#endif

static int mpi_start(int *argc, char ***argv) {
#ifdef TERRAFORT_HAVE_MPI
  if (!tf_launched_by_mpirun()) return 0;
  int provided = 0;
  inject_stop("stop-start");
  const int irc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  step_end();
  if (irc != MPI_SUCCESS) {
    fprintf(stderr, "terrafort: MPI_Init_thread failed\n");
    return -1;
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    fprintf(stderr, "terrafort: this MPI library does not support threads (MPI_THREAD_SERIALIZED)\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return 1;
#else
  (void)argc;
  (void)argv;
  if (tf_launched_by_mpirun()) fprintf(stderr, "terrafort: built without MPI; running as a single process\n");
  return 0;
#endif
}

int tf_process_start(int *argc, char ***argv) {
  int mpi = mpi_start(argc, argv);
  if (mpi < 0) return TR_EXIT_INTERNAL;
  mpi_started = mpi;
#ifdef TERRAFORT_HAVE_MPI
  /* The monitor runs with the rank timeout from here on (the command's
   * parser sets it again), so that every wait before the options are
   * parsed is bounded by it too. */
  inject_stop("stop-started");
  MPI_Comm world = MPI_COMM_WORLD;
  static const char monitor_step[] = "the liveness monitor's start (MPI_Comm_idup)";
  static const char context_step[] = "the libcoll context's creation (MPI_Comm_idup)";
  step_begin(monitor_step, "while the job started");
  int lrc = coll_live_start(&live, mpi ? &world : NULL, step_ms);
  if (live && lrc == COLL_LIVE_LOST) {
    tr_remove_temporaries();
    step_line(monitor_step, "while the job started");
    _exit(TR_EXIT_RANK);
  }
  step_begin(context_step, "while the job started");
#else
  coll_live_start(&live, NULL, COLL_LIVE_DEFAULT_TIMEOUT_MS);
#endif
  if (!live) return TR_EXIT_NOMEM;
  /* The process's libcoll context (statistics): made while every rank is
   * starting, so a run's non-writing ranks never wait in its creation or
   * destruction (tf_coll). */
  coll_opts co;
  coll_opts_init(&co);
  co.live = live;
  if (coll_ctx_create_world(&coll, &co) != COLL_OK) {
#ifdef TERRAFORT_HAVE_MPI
    const int lost = coll_live_lost(live, NULL);
    if (lost >= 0)
      fprintf(stderr, "terrafort: rank %s: rank %d stopped answering (silent for more than %.0f ms) while the job started\n",
              env_rank(), lost, coll_live_timeout(live));
    else
      step_line(context_step, "while the job started");
#else
    fprintf(stderr, "terrafort: the libcoll context could not be made\n");
#endif
    fflush(NULL);
    _exit(TR_EXIT_RANK);
  }
#ifdef TERRAFORT_HAVE_MPI
  step_end();
#endif
  return 0;
}

#ifdef TERRAFORT_HAVE_MPI
static void nap_ms(double ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)((ms - 1000.0 * (double)(time_t)(ms / 1000)) * 1e6)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Before MPI_Finalize: a message nobody received is a protocol bug. */
static int unmatched_message(void) {
  int flag = 0;
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
  if (flag)
    fprintf(stderr, "terrafort: rank %d: internal error: unmatched message from rank %d (tag %d) at the end\n",
            tr_rank(), st.MPI_SOURCE, st.MPI_TAG);
  return flag;
}

/* The line a rank prints when it finds another lost at the end of the job. */
static void lost_line(int lost) {
  const double ms = coll_live_timeout(live);
  if (lost >= 0)
    fprintf(stderr, "terrafort: rank %d: rank %d stopped answering (silent for more than %.0f ms) at the end of the job\n",
            tr_rank(), lost, ms);
  else
    fprintf(stderr, "terrafort: rank %d: not every rank reached the end of the job within %.0f ms\n", tr_rank(), ms);
}
#endif

/* An interrupted command leaves without exit(): GDAL's own destructor would
 * close an output the run abandoned (tr_run_opts.cancelled), writing the
 * whole file into its unlinked temporary first. */
static void leave_interrupted(void) {
  fflush(NULL);
  _exit(TR_EXIT_INTERRUPTED);
}

/* Under mpirun a rank that lost a peer (exit 10), or was told to stop
 * (exit 8: a signal, e.g. from mpirun after a rank died), leaves at once
 * without MPI_Finalize, which would wait for the lost rank; mpirun then
 * ends the others. Otherwise the monitor's closing handshake (bounded)
 * shows every rank alive before finalizing. */
int tf_process_end(int rc) {
#ifdef TERRAFORT_HAVE_MPI
  if (!mpi_started) {
    coll_ctx_destroy(coll);
    coll_live_stop(live, NULL);
    if (rc == TR_EXIT_INTERRUPTED) leave_interrupted();
    return rc;
  }
  __atomic_store_n(&job_ending, JOB_ENDING, __ATOMIC_SEQ_CST);
  inject_stop("stop-end");
  if (rc != TR_EXIT_RANK && rc != TR_EXIT_INTERRUPTED) {
    /* collective and bounded by the monitor; a rank lost here is exit 10 */
    tf_progress_stop(rc);
    coll_ctx_destroy(coll);
    const int lost = coll_live_lost(live, NULL);
    if (lost != -1) {
      lost_line(lost);
      rc = TR_EXIT_RANK;
    }
  }
  if (rc == TR_EXIT_RANK || rc == TR_EXIT_INTERRUPTED) {
    /* Whatever gave up left requests posted on released memory: from here
     * no thread makes MPI progress that could complete them (the monitor's
     * polling during the nap below once wrote a tile header into a dead
     * stack frame: SIGSEGV instead of exit 10). */
    coll_live_quiesce(live);
    fflush(NULL);
    /* The other survivors have all seen the loss (the monitor's loss round,
     * live.c) and were released with this rank, within a poll of the
     * monitor: let them print before mpirun, seeing this exit, ends them. */
    if (rc == TR_EXIT_RANK) {
      /* exit 10 leaves no output, also one rank 0 put in place before a
       * rank was found lost in the closing exchange */
      tr_remove_outputs();
      nap_ms(300);
    }
    _exit(rc);
  }
  int lost = -1;
  step_ms = coll_live_timeout(live); /* the command's --rank-timeout */
  if (coll_live_stop(live, &lost) != COLL_LIVE_OK) {
    tr_remove_outputs();
    lost_line(lost);
    fflush(NULL);
    _exit(TR_EXIT_RANK);
  }
  if (unmatched_message() && rc == TR_EXIT_OK) rc = TR_EXIT_INTERNAL;
  /* MPI_Finalize waits for every rank. The closing handshake has just seen
   * each of them alive, but one could still stop in between: the step
   * watchdog bounds it. */
  inject_stop("stop-finalize");
  step_begin("MPI_Finalize", "at the end of the job");
  MPI_Finalize();
  step_end();
  /* A signal whose handler cut the job's end may be removing the outputs
   * on another thread: this one must not end the process half-way through
   * that, so it removes them too. */
  int ending = JOB_ENDING;
  if (!__atomic_compare_exchange_n(&job_ending, &ending, JOB_RUNNING, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    tr_remove_outputs();
    leave_interrupted();
  }
#else
  coll_ctx_destroy(coll);
  coll_live_stop(live, NULL);
  if (rc == TR_EXIT_INTERRUPTED) leave_interrupted();
#endif
  return rc;
}

/* ---- the stop flag ---------------------------------------------------------------------------- */

/* Ctrl-C, SIGTERM and the other signals whose default is to end the process
 * (terrafort(1), SIGNALS) cancel through the progress callback, and the
 * command exits (8). The temporaries are unlinked in the handler itself:
 * the cancel is seen at the next progress call or wait, and a launcher may
 * not wait that long (mpirun sends SIGKILL about 10 ms after SIGTERM). A
 * second such signal ends the process at once, as the signal would.
 *
 * The stop deadline: the run hears the cancel within milliseconds (the
 * tile loop's threads, GDAL's writes line by line, an output abandoned
 * rather than closed: tr_run_opts.cancelled), except in a GDAL call that
 * is already under way and asks nobody: the first block a 10^6 x 10^6
 * tiled GeoTIFF flushes makes libtiff write and reread a directory of 15
 * million tile offsets, 5 s here (issue 28). TF_STOP_GRACE_MS after the
 * signal, a process still here is ended by the watchdog thread as the run
 * would have ended: the temporaries unlinked once more (one made since the
 * handler's pass), the command's one line, exit 8; or, when the command
 * has already reported its outcome, with that outcome's code. */
#define TF_STOP_GRACE_MS 300
static long stop_grace_ms = TF_STOP_GRACE_MS; /* TERRAFORT_STOP_GRACE_MS: terrafort(1), ENVIRONMENT */
static sem_t stop_sem;       /* posted by the handler: the watchdog's alarm */
static const char *stop_cmd; /* the command, for the line */
static int reported;         /* the command's exit code + 1, once tf_process_report took it */

static void on_signal(int sig) {
  if (interrupted) {
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  interrupted = 1;
  const int saved = errno; /* the interrupted code's, which unlink may change */
  tr_remove_temporaries();
  /* Under mpirun, a signal between the command's end and MPI_Finalize's is
   * mpirun ending the job because another rank failed there (exit 10): a
   * rank 0 stopped in the closing exchange is continued and sent SIGTERM.
   * The job's outcome is a failure: no output. */
  int ending = JOB_ENDING;
  if (__atomic_compare_exchange_n(&job_ending, &ending, JOB_CUT, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
    tr_remove_outputs();
  sem_post(&stop_sem); /* async-signal-safe */
  errno = saved;
}

int tf_process_report(int code) {
  int none = 0;
  return __atomic_compare_exchange_n(&reported, &none, code + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

static void *stop_watchdog(void *arg) {
  (void)arg;
  while (sem_wait(&stop_sem) != 0) {
  }
  struct timespec ts = {(time_t)(stop_grace_ms / 1000), (stop_grace_ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
  tr_remove_temporaries();
  /* the job's end was cut and its outputs are gone: not the command's
   * success any more (the handler's pass is whole, once more all the
   * same) */
  if (__atomic_load_n(&job_ending, __ATOMIC_SEQ_CST) == JOB_CUT) {
    tr_remove_outputs();
    _exit(TR_EXIT_INTERRUPTED);
  }
  if (tf_process_report(TR_EXIT_INTERRUPTED)) {
    if (tr_rank() == 0) {
      /* write(), not stdio: another thread may hold stderr's lock */
      char line[256];
      const int n = snprintf(line, sizeof line, "terrafort %s: interrupted\n", stop_cmd ? stop_cmd : "");
      if (n > 0 && write(STDERR_FILENO, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1)) < 0) {
        /* nothing more to say it with */
      }
    }
    _exit(TR_EXIT_INTERRUPTED);
  }
  _exit(__atomic_load_n(&reported, __ATOMIC_SEQ_CST) - 1);
  return NULL;
}

const int tf_cancel_signals[TF_NCANCEL_SIGNALS] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGUSR1,
                                                   SIGUSR2, SIGALRM, SIGXCPU, SIGXFSZ, SIGPIPE};

void tf_catch_signals(void (*fn)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  for (size_t k = 0; k < TF_NCANCEL_SIGNALS; k++) {
    struct sigaction old;
    /* a signal ignored by whoever started us (nohup's SIGHUP) stays ignored */
    if (sigaction(tf_cancel_signals[k], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    sigaction(tf_cancel_signals[k], &sa, NULL);
  }
}

void tf_stop_on_signals(const char *cmd) {
  static int armed;
  stop_cmd = cmd;
  const char *g = getenv("TERRAFORT_STOP_GRACE_MS");
  char *end;
  const long ms = g && *g ? strtol(g, &end, 10) : -1;
  if (g && *g && !*end && ms >= 0 && ms <= 3600000) stop_grace_ms = ms;
  if (!armed && sem_init(&stop_sem, 0, 0) == 0) {
    pthread_t wd;
    armed = 1;
    if (pthread_create(&wd, NULL, stop_watchdog, NULL) == 0) pthread_detach(wd);
  }
  tf_catch_signals(on_signal);
}

int tf_stop_asked(void) { return interrupted || tf_batch_rank_gone(); }
