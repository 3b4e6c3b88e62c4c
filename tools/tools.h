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
int tf_fill_main(int argc, char **argv);

/* This process's MPI rank (0 without MPI): only rank 0 prints. */
int tf_rank(void);

/* -alg Horn|ZevenbergenThorne (gdaldem's names, any case): reads the
 * value after argv[*i]; returns a TF_ARG_* code (cli.h). */
int tf_gradient_alg_flag(tf_cli *cli, int argc, char **argv, int *i, tr_gradient_alg *alg);

#endif
