/*
 * tools.h - the subcommands' entry points, for the dispatcher in main.c.
 * Each gets argv with argv[0] = the subcommand name.
 */
#ifndef TF_TOOLS_H
#define TF_TOOLS_H

#include "cli.h"
#include "terrain.h"

int tf_slope_main(int argc, char **argv);
int tf_aspect_main(int argc, char **argv);
int tf_hillshade_main(int argc, char **argv);
int tf_tri_main(int argc, char **argv);
int tf_tpi_main(int argc, char **argv);
int tf_roughness_main(int argc, char **argv);
int tf_color_relief_main(int argc, char **argv);
int tf_fill_main(int argc, char **argv);
int tf_flowgraph_main(int argc, char **argv);
int tf_interpolate_main(int argc, char **argv);
int tf_smooth_main(int argc, char **argv);
int tf_batch_main(int argc, char **argv);

/* The words of a command's line that name files it writes, so that
 * `terrafort batch` can skip a job whose outputs exist and refuse two jobs
 * writing one file: its own options taking values, its output options, and
 * whether its last file name is the output (main.c's command table; the
 * common options are in cli.c). values == NULL: a command batch cannot run. */
typedef struct {
  const char *values;  /* "NAME NAME:COUNT ..." */
  const char *outputs; /* "NAME ..."; "NAME?": an output only when a DEM is given */
  int last_positional; /* the last of two or more file names is the output */
  int graph;           /* the AAP engine's options (tf_graph_flag) apply */
} tf_io;
/* The row of a command, NULL for an unknown one. */
const tf_io *tf_command_io(const char *name);

/* -alg Horn|ZevenbergenThorne (gdaldem's names, any case): reads the
 * value after argv[*i]; returns a TF_ARG_* code (cli.h). */
/* The process's liveness monitor under mpirun (libcoll's coll_live.h; an
 * inert one otherwise), started and stopped by main.c. */
struct coll_live *tf_live(void);
/* The process's libcoll context (statistics), made and destroyed by main.c. */
struct coll_ctx *tf_coll(void);

int tf_gradient_alg_flag(tf_cli *cli, int argc, char **argv, int *i, tr_gradient_alg *alg);

#endif
