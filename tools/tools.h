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

/* The option tables of the commands (each command's file; options.h). */
extern const tf_opt_set tf_slope_set, tf_aspect_set, tf_hillshade_set, tf_tri_set, tf_tpi_set, tf_roughness_set,
    tf_color_relief_set, tf_fill_set, tf_breach_set, tf_flowgraph_set, tf_interpolate_set, tf_smooth_set, tf_batch_set;

/* Forms of a command line, given with no DEM, in which some output options
 * are read, or an option written only with a DEM is written: every word of
 * `all` given (a word "A|B": either spelling), one of `any` (when it names
 * any) and none of `none`. The command decides its form from these when it
 * parses (flowgraph.c), and batch reads a job's files by them, so the two
 * cannot differ. A form with name NULL ends the list. */
#define TF_IO_FORMS 8
typedef struct {
  const char *name;   /* TauDEM's program: "streamnet", ... */
  const char *all, *any, *none;
  const char *reads;  /* output options read in this form */
  const char *writes; /* options of role out-if-dem written in this form */
} tf_io_form;

/* A row of the command table (commands.c). */
typedef struct {
  const char *name;
  int (*main)(int, char **);
  const char *summary;
  const tf_opt_set *opts;             /* its options */
  int not_a_job;                      /* batch cannot run it (batch itself) */
  const tf_io_form *forms;            /* its forms, or NULL */
  int graph_heap;                     /* runs graph programs: tf_process_heap_setup (process.h) */
} tf_command;

/* The row named `name`, NULL for an unknown command. */
const tf_command *tf_command_find(const char *name);
/* The command a mistyped name most likely meant (at most two edits, or the
 * leading part of exactly one command's name); NULL when none is near. */
const char *tf_command_suggest(const char *name);
/* Every row, in the order --help lists them; *n gets their count. */
const tf_command *tf_commands(size_t *n);
/* flowgraph's TauDEM forms (flowgraph.c). */
extern const tf_io_form tf_flowgraph_forms[TF_IO_FORMS];

/* The form of c's forms that the words argv[1..argc-1] take (see
 * tf_io_form), or NULL. Whether a DEM is given is the caller's to judge. */
const tf_io_form *tf_io_form_of(const tf_command *c, int argc, char *const *argv);

#endif
