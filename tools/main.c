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

#include "tools.h"

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>
#endif

/* MPI is initialised only when a launcher started us (mpirun sets these),
 * so a plain `terrafort` never needs an MPI runtime. */
static int launched_by_mpirun(void) {
  const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (getenv(vars[i])) return 1;
  return 0;
}

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

static void mpi_stop(int started) {
#ifdef TERRAFORT_HAVE_MPI
  if (started) MPI_Finalize();
#else
  (void)started;
#endif
}

typedef struct {
  const char *name;
  int (*main)(int, char **);
  const char *summary;
} tf_command;

static const tf_command commands[] = {
    {"slope", tf_slope_main, "slope in degrees or percent (gdaldem slope)"},
    {"aspect", tf_aspect_main, "aspect in degrees (gdaldem aspect)"},
    {"hillshade", tf_hillshade_main, "shaded relief (gdaldem hillshade)"},
    {"tri", tf_tri_main, "terrain ruggedness index (gdaldem TRI)"},
    {"tpi", tf_tpi_main, "topographic position index (gdaldem TPI)"},
    {"roughness", tf_roughness_main, "roughness (gdaldem roughness)"},
    {"color-relief", tf_color_relief_main, "colour a DEM through a colour table (gdaldem color-relief)"},
    {"fill", tf_fill_main, "fill depressions (TauDEM pitremove)"},
    {"flowgraph", tf_flowgraph_main, "D8 accumulation, streams, order, basins, network (TauDEM)"},
    {"interpolate", tf_interpolate_main, "scattered points to a grid (gdal_grid)"},
    {"smooth", tf_smooth_main, "iterated 3x3 mean filter"},
};

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

int main(int argc, char **argv) {
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
    GDALAllRegister();
    int rc = commands[i].main(argc - 1, argv + 1);
    GDALDestroyDriverManager();
    mpi_stop(mpi);
    return rc;
  }
  if (launcher_rank0()) fprintf(stderr, "terrafort: unknown command '%s' (see 'terrafort --help')\n", argv[1]);
  return 2;
}
