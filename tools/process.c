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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "process.h"

#include "batch.h"
#include "coll.h"
#include "coll_live.h"
#include "terrain.h"

#include <pthread.h>
#include <semaphore.h>

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>
#endif

/* One of each per process, like MPI itself. */
static coll_live *live;
static coll_ctx *coll;
static int mpi_started;

coll_live *tf_live(void) { return live; }
coll_ctx *tf_coll(void) { return coll; }

/* MPI is initialised only when a launcher started us (mpirun sets these),
 * so a plain `terrafort` never needs an MPI runtime. */
static int launched_by_mpirun(void) {
  const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (getenv(vars[i])) return 1;
  return 0;
}

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
 * with MPI, TERRAFORT_MPI_PEER, lies in the same folder. Started by
 * mpirun, this process becomes that one: the same arguments, environment
 * and pid, so mpirun sees no difference. Returns only when it cannot. */
static void run_mpi_peer(char **argv) {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  path[n > 0 ? n : 0] = 0;
  char *slash = strrchr(path, '/');
  if (!slash || (size_t)(slash + 1 - path) + sizeof TERRAFORT_MPI_PEER > sizeof path) {
    fprintf(stderr, "terrafort: started by mpirun, but cannot find this program's folder (/proc/self/exe)\n");
    return;
  }
  memcpy(slash + 1, TERRAFORT_MPI_PEER, sizeof TERRAFORT_MPI_PEER);
  execv(path, argv);
  fprintf(stderr, "terrafort: started by mpirun, but cannot run %s, its MPI build: %s\n", path, strerror(errno));
}
#endif

/* A job of a batch (batch.h, TF_BATCH_PARENT_ENV): the pid of the rank
 * that started it, 0 otherwise. Once that rank is gone - even killed
 * outright, when nobody can signal this job - its parent is another
 * process, and the run cancels itself as on a signal: no output. */
static long batch_rank;

int tf_batch_rank_gone(void) { return batch_rank > 0 && (long)getppid() != batch_rank; }

int tf_process_init(char **argv) {
#ifdef TERRAFORT_MPI_PEER
  if (launched_by_mpirun()) {
    run_mpi_peer(argv);
    return 1;
  }
#else
  (void)argv;
#endif
  const char *br = getenv(TF_BATCH_PARENT_ENV);
  batch_rank = br ? atol(br) : 0;
  return 0;
}

#ifdef TERRAFORT_HAVE_MPI
/* Start-up. MPI_Init waits for every rank of the job to start (the launcher's
 * fence) without a bound, and the liveness monitor cannot run before it: a
 * rank stopped or killed while the job starts would hold the others until
 * it is continued. A watchdog thread bounds it by the rank timeout
 * (--rank-timeout when given on the command line, else the default): past
 * it the rank says so and exits 10, as for a rank lost later. */
static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t init_cv;
static int init_done;
static double init_ms;

/* This rank's number before MPI_Init, from the launcher's environment. */
static const char *env_rank(void) {
  const char *r = getenv("OMPI_COMM_WORLD_RANK");
  if (!r) r = getenv("PMIX_RANK");
  if (!r) r = getenv("PMI_RANK");
  return r ? r : "?";
}

static void *init_watchdog(void *arg) {
  (void)arg;
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  const double s = (double)until.tv_sec + until.tv_nsec * 1e-9 + init_ms / 1000.0;
  until.tv_sec = (time_t)s;
  until.tv_nsec = (long)((s - (double)until.tv_sec) * 1e9);
  pthread_mutex_lock(&init_mu);
  int rc = 0;
  while (!init_done && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&init_cv, &init_mu, &until);
  const int done = init_done;
  pthread_mutex_unlock(&init_mu);
  if (!done) {
    fprintf(stderr,
            "terrafort: rank %s: the job's start-up did not finish within %.0f ms: a rank stopped or died while "
            "starting\n",
            env_rank(), init_ms);
    fflush(NULL);
    _exit(TR_EXIT_RANK);
  }
  return NULL;
}

/* The rank timeout the command line asks for (--rank-timeout MS), else the default. */
static double startup_timeout_ms(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], "--rank-timeout")) {
      char *end;
      const double v = strtod(argv[i + 1], &end);
      if (*end == 0 && v >= COLL_LIVE_MIN_TIMEOUT_MS && v <= COLL_LIVE_MAX_TIMEOUT_MS) return v;
    }
  return (double)COLL_LIVE_DEFAULT_TIMEOUT_MS;
}

/* The injector's stop-start:rank=R (TERRAFORT_INJECT only: read before the
 * options): rank R stops itself (SIGSTOP) before MPI_Init, as a rank
 * stopped while the job starts. */
static void inject_stop_start(void) {
  const char *spec = getenv("TERRAFORT_INJECT"), *k = spec ? strstr(spec, "stop-start:") : NULL;
  const char *r = k ? strstr(k, "rank=") : NULL, *end = k ? strchr(k, ';') : NULL;
  if (!r || (end && r > end)) return;
  if (atol(r + 5) == atol(env_rank()) && strcmp(env_rank(), "?")) raise(SIGSTOP);
}
#endif

static int mpi_start(int *argc, char ***argv) {
#ifdef TERRAFORT_HAVE_MPI
  if (!launched_by_mpirun()) return 0;
  int provided = 0;
  init_ms = startup_timeout_ms(*argc, *argv);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&init_cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_t wd;
  const int have_wd = pthread_create(&wd, NULL, init_watchdog, NULL) == 0;
  inject_stop_start();
  const int irc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  pthread_mutex_lock(&init_mu);
  init_done = 1;
  pthread_cond_signal(&init_cv);
  pthread_mutex_unlock(&init_mu);
  if (have_wd) pthread_join(wd, NULL);
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
  if (launched_by_mpirun()) fprintf(stderr, "terrafort: built without MPI; running as a single process\n");
  return 0;
#endif
}

int tf_process_start(int *argc, char ***argv) {
  int mpi = mpi_start(argc, argv);
  if (mpi < 0) return TR_EXIT_INTERNAL;
  mpi_started = mpi;
#ifdef TERRAFORT_HAVE_MPI
  MPI_Comm world = MPI_COMM_WORLD;
  int lrc = coll_live_start(&live, mpi ? &world : NULL, COLL_LIVE_DEFAULT_TIMEOUT_MS);
#else
  int lrc = coll_live_start(&live, NULL, COLL_LIVE_DEFAULT_TIMEOUT_MS);
#endif
  if (!live) return TR_EXIT_NOMEM;
  if (lrc == COLL_LIVE_LOST) {
    fprintf(stderr, "terrafort: rank %d: not every rank of the job started within %.0f ms\n", tr_rank(),
            (double)COLL_LIVE_DEFAULT_TIMEOUT_MS);
    fflush(NULL);
    _exit(TR_EXIT_RANK);
  }
  /* The process's libcoll context (statistics): made while every rank is
   * starting, so a run's non-writing ranks never wait in its creation or
   * destruction (tf_coll). */
  coll_opts co;
  coll_opts_init(&co);
  co.live = live;
  if (coll_ctx_create_world(&coll, &co) != COLL_OK) {
    fprintf(stderr, "terrafort: rank %d: not every rank of the job started within %.0f ms\n", tr_rank(),
            (double)COLL_LIVE_DEFAULT_TIMEOUT_MS);
    fflush(NULL);
    _exit(TR_EXIT_RANK);
  }
  return 0;
}

#ifdef TERRAFORT_HAVE_MPI
static void nap_ms(double ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)((ms - 1000.0 * (double)(time_t)(ms / 1000)) * 1e6)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* MPI_Finalize waits for every rank. The closing handshake has just seen
 * each of them alive, but one could still stop in between: past the rank
 * timeout this thread ends the process instead of letting it hang. */
static void *finalize_watchdog(void *arg) {
  const double ms = *(const double *)arg;
  nap_ms(ms);
  fprintf(stderr, "terrafort: rank %d: MPI_Finalize did not return within the rank timeout (%.0f ms)\n", tr_rank(), ms);
  _exit(TR_EXIT_RANK);
  return NULL;
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
  if (rc != TR_EXIT_RANK && rc != TR_EXIT_INTERRUPTED) {
    /* collective and bounded by the monitor; a rank lost here is exit 10 */
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
    if (rc == TR_EXIT_RANK) nap_ms(300);
    _exit(rc);
  }
  int lost = -1;
  double ms = coll_live_timeout(live);
  if (coll_live_stop(live, &lost) != COLL_LIVE_OK) {
    lost_line(lost);
    fflush(NULL);
    _exit(TR_EXIT_RANK);
  }
  if (unmatched_message() && rc == TR_EXIT_OK) rc = TR_EXIT_INTERNAL;
  pthread_t wd;
  if (pthread_create(&wd, NULL, finalize_watchdog, &ms) == 0) pthread_detach(wd);
  MPI_Finalize();
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
static volatile sig_atomic_t interrupted;
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
