/*
 * tools.h - the subcommands' entry points and the command table
 * (commands.c) that main.c dispatches from and batch reads.
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
int tf_breach_main(int argc, char **argv);
int tf_batch_main(int argc, char **argv);

/* The words of a command's line that name files it writes, so that
 * `terrafort batch` can skip a job whose outputs exist and refuse two jobs
 * writing one file: its own options taking values, its output options, and
 * whether its last file name is the output (commands.c's table; the
 * common options are in cli.c). values == NULL: a command batch cannot run. */
#define TF_IO_FORMS 5
typedef struct {
  const char *values;  /* "NAME NAME:COUNT ..." */
  const char *outputs; /* "NAME ..."; "NAME?": an output only when a DEM is given */
  int last_positional; /* the last of two or more file names is the output */
  int graph;           /* the AAP engine's options (tf_graph_flag) apply */
  /* Forms of the command line in which some output options are inputs:
   * with no DEM, every flag of `all`, one of `any` and none of `none`
   * given, the flags of `reads` are read, not written (flowgraph: TauDEM
   * streamnet's -p -src -ad8 with -ord, -tree, -coord, -net or -w reads
   * -src and -ad8; areadinf's -ang -sca, without dinfflowdir's -fel and the
   * products that need a DEM, reads -ang; twi's -slp -sca -twi, with no
   * other product, reads -slp and -sca; dinfdistdown's -ang -fel -src -dd
   * reads -ang and -src; moveoutletstostreams' -p -src -o -om reads -src). A
   * form with all NULL ends the
   * list; at most TF_IO_FORMS. */
  struct {
    const char *all, *any, *none, *reads;
  } forms[TF_IO_FORMS];
} tf_io;
/* A row of the command table (commands.c). */
typedef struct {
  const char *name;
  int (*main)(int, char **);
  const char *summary;
  tf_io io; /* the files it writes, for batch */
} tf_command;

/* The row named `name`, NULL for an unknown command. */
const tf_command *tf_command_find(const char *name);
/* The command a mistyped name most likely meant (at most two edits, or the
 * leading part of exactly one command's name); NULL when none is near. */
const char *tf_command_suggest(const char *name);
/* Every row, in the order --help lists them; *n gets their count. */
const tf_command *tf_commands(size_t *n);
/* The io of a command's row, NULL for an unknown one. */
const tf_io *tf_command_io(const char *name);

#endif
