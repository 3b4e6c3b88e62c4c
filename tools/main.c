/*
 * main.c - the `terrafort` command: global set-up and the subcommand table.
 *
 * Set-up done once per process, never by the libraries: GDAL drivers, and
 * MPI when launched by mpirun. (The GDAL block cache is the library's
 * decision: each runner sets it, see terrafort(1), MEMORY.)
 */
#include <gdal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "tools.h"

#include "batch.h"
#include "coll.h"
#include "coll_live.h"

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>
#include <pthread.h>
#endif
#ifdef TERRAFORT_MPI_PEER
#include <errno.h>
#endif
#include <unistd.h>

/* The liveness monitor of this process (tools.h): one per process, owned
 * here, like MPI itself. */
static coll_live *live;
static coll_ctx *coll;

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

#ifdef TERRAFORT_MPI_PEER
/* This program is built without MPI, so a plain run never loads MPI's
 * libraries (they cost every start a few milliseconds); its twin linked
 * with MPI, TERRAFORT_MPI_PEER, lies in the same folder. Started by
 * mpirun, this process becomes that one: the same arguments, environment
 * and pid, so mpirun sees no difference. Returns only when it cannot. */
static void run_mpi_peer(char **argv) {
  char path[4096];
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

static int mpi_start(int *argc, char ***argv) {
#ifdef TERRAFORT_HAVE_MPI
  if (!launched_by_mpirun()) return 0;
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
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
  _exit(10);
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

/* Ends MPI for the command's exit code rc. Under mpirun a rank that lost a
 * peer (exit 10), or was told to stop (exit 8: a signal, e.g. from mpirun
 * after a rank died), leaves at once without MPI_Finalize, which would wait
 * for the lost rank; mpirun then ends the others. Otherwise the monitor's
 * closing handshake (bounded) shows every rank alive before finalizing. */
static int mpi_stop(int started, int rc) {
#ifdef TERRAFORT_HAVE_MPI
  if (!started) {
    coll_ctx_destroy(coll);
    coll_live_stop(live, NULL);
    return rc;
  }
  if (rc != 10 && rc != 8) {
    /* collective and bounded by the monitor; a rank lost here is exit 10 */
    coll_ctx_destroy(coll);
    const int lost = coll_live_lost(live, NULL);
    if (lost != -1) {
      lost_line(lost);
      rc = 10;
    }
  }
  if (rc == 10 || rc == 8) {
    /* Whatever gave up left requests posted on released memory: from here
     * no thread makes MPI progress that could complete them (the monitor's
     * polling during the nap below once wrote a tile header into a dead
     * stack frame: SIGSEGV instead of exit 10). */
    coll_live_quiesce(live);
    fflush(NULL);
    /* The other survivors have all seen the loss (the monitor's loss round,
     * live.c) and were released with this rank, within a poll of the
     * monitor: let them print before mpirun, seeing this exit, ends them. */
    if (rc == 10) nap_ms(300);
    _exit(rc);
  }
  int lost = -1;
  double ms = coll_live_timeout(live);
  if (coll_live_stop(live, &lost) != COLL_LIVE_OK) {
    lost_line(lost);
    fflush(NULL);
    _exit(10);
  }
  if (unmatched_message() && rc == 0) rc = 1;
  pthread_t wd;
  if (pthread_create(&wd, NULL, finalize_watchdog, &ms) == 0) pthread_detach(wd);
  MPI_Finalize();
#else
  (void)started;
  coll_ctx_destroy(coll);
  coll_live_stop(live, NULL);
#endif
  return rc;
}

typedef struct {
  const char *name;
  int (*main)(int, char **);
  const char *summary;
  tf_io io; /* the files it writes, for batch (tools.h) */
} tf_command;

/* Own options taking values (NAME or NAME:COUNT; -clipsrc:box takes 4 when
 * its first value is a number), own output options (NAME? : an output only
 * when a DEM is given), whether the last of >= 2 file names is the output,
 * and whether the AAP engine's options apply (cli.c holds the common ones). */
#define TF_GRAPH_IO 1
static const tf_command commands[] = {
    {"slope", tf_slope_main, "slope in degrees or percent (gdaldem slope)", {"-s -scale -alg", "", 1, 0}},
    {"aspect", tf_aspect_main, "aspect in degrees (gdaldem aspect)", {"-alg", "", 1, 0}},
    {"hillshade", tf_hillshade_main, "shaded relief (gdaldem hillshade)",
     {"-z -s -scale -az -azimuth -alt -altitude -alg", "", 1, 0}},
    {"tri", tf_tri_main, "terrain ruggedness index (gdaldem TRI)", {"-alg", "", 1, 0}},
    {"tpi", tf_tpi_main, "topographic position index (gdaldem TPI)", {"", "", 1, 0}},
    {"roughness", tf_roughness_main, "roughness (gdaldem roughness)", {"", "", 1, 0}},
    {"color-relief", tf_color_relief_main, "colour a DEM through a colour table (gdaldem color-relief)", {"", "", 1, 0}},
    {"fill", tf_fill_main, "fill depressions (TauDEM pitremove)", {"-z -ot --epsilon-step", "-fel", 1, TF_GRAPH_IO}},
    {"flowgraph", tf_flowgraph_main, "D8 accumulation, streams, order, basins, network (TauDEM)",
     {"--dir-in --weights -wg --filled-in -fel -nf -z --outlets -o --dir-encoding --units --acc-type --basins-by "
      "--snap -md --threshold -thresh",
      "--dir --acc -ad8 --streams -src --order -ord --basins -w --network -net --slope -sd8 -p?", 0, TF_GRAPH_IO}},
    {"interpolate", tf_interpolate_main, "scattered points to a grid (gdal_grid)",
     {"-a -zfield -where -sql -a_srs -clipsrclayer -clipsrcwhere -clipsrcsql -z_increase -z_multiply -txe:2 -tye:2 "
      "-tr:2 -spat:4 -outsize:2 -clipsrc:box -ot -l -oo -md -si --tmp",
      "", 1, 0}},
    {"smooth", tf_smooth_main, "iterated 3x3 mean filter", {"--passes", "", 1, 0}},
    {"batch", tf_batch_main, "run many terrafort jobs, dynamically over mpirun's ranks", {NULL, NULL, 0, 0}},
};

const tf_io *tf_command_io(const char *name) {
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(name, commands[i].name)) return &commands[i].io;
  return NULL;
}

int tf_gradient_alg_flag(tf_cli *cli, int argc, char **argv, int *i, tr_gradient_alg *alg) {
  const char *v = tf_value(cli, argc, argv, i);
  if (!v) return TF_ARG_ERROR;
  if (!strcasecmp(v, "Horn")) *alg = TR_GRAD_HORN;
  else if (!strcasecmp(v, "ZevenbergenThorne")) *alg = TR_GRAD_ZEVENBERGEN_THORNE;
  else {
    tf_usage_error(cli, "-alg: unknown algorithm '%s'", v);
    return TF_ARG_ERROR;
  }
  return TF_ARG_TAKEN;
}

static void usage(FILE *f) {
  fprintf(f, "Usage: terrafort COMMAND [options] ...\n\nCommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\n'terrafort COMMAND --help' for a command's options; man terrafort for the rest.\n");
}

/* Before MPI starts (no command, an unknown one): is this rank 0 of a
 * launch, or no launch at all? Under mpirun only rank 0 speaks. */
static int launcher_rank0(void) {
  const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *r = getenv(vars[i]);
    if (r) return !strcmp(r, "0");
  }
  return 1;
}

/* A job of a batch (batch.h, TF_BATCH_PARENT_ENV): the pid of the rank
 * that started it, 0 otherwise. Once that rank is gone - even killed
 * outright, when nobody can signal this job - its parent is another
 * process, and the run cancels itself (cli.c) as on a signal: no output. */
static long batch_rank;

int tf_batch_rank_gone(void) { return batch_rank > 0 && (long)getppid() != batch_rank; }

int main(int argc, char **argv) {
#ifdef TERRAFORT_MPI_PEER
  if (launched_by_mpirun()) {
    run_mpi_peer(argv);
    return 1;
  }
#endif
  const char *br = getenv(TF_BATCH_PARENT_ENV);
  batch_rank = br ? atol(br) : 0;
  if (argc < 2) {
    if (launcher_rank0()) usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
    printf("terrafort %s (GDAL %s)\n", TR_VERSION, GDALVersionInfo("RELEASE_NAME"));
    return 0;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (strcmp(argv[1], commands[i].name) != 0) continue;
    int mpi = mpi_start(&argc, &argv);
    if (mpi < 0) return 1;
#ifdef TERRAFORT_HAVE_MPI
    MPI_Comm world = MPI_COMM_WORLD;
    int lrc = coll_live_start(&live, mpi ? &world : NULL, COLL_LIVE_DEFAULT_TIMEOUT_MS);
#else
    int lrc = coll_live_start(&live, NULL, COLL_LIVE_DEFAULT_TIMEOUT_MS);
#endif
    if (!live) return 7;
    if (lrc == COLL_LIVE_LOST) {
      fprintf(stderr, "terrafort: rank %d: not every rank of the job started within %.0f ms\n", tr_rank(),
              COLL_LIVE_DEFAULT_TIMEOUT_MS);
      fflush(NULL);
      _exit(10);
    }
    /* The process's libcoll context (statistics): made while every rank is
     * starting, so a run's non-writing ranks never wait in its creation or
     * destruction (tools.h, tf_coll). */
    coll_opts co;
    coll_opts_init(&co);
    co.live = live;
    if (coll_ctx_create_world(&coll, &co) != COLL_OK) {
      fprintf(stderr, "terrafort: rank %d: not every rank of the job started within %.0f ms\n", tr_rank(),
              COLL_LIVE_DEFAULT_TIMEOUT_MS);
      fflush(NULL);
      _exit(10);
    }
    GDALAllRegister();
    int rc = commands[i].main(argc - 1, argv + 1);
    GDALDestroyDriverManager();
    return mpi_stop(mpi, rc);
  }
  if (launcher_rank0()) fprintf(stderr, "terrafort: unknown command '%s' (see 'terrafort --help')\n", argv[1]);
  return 2;
}
