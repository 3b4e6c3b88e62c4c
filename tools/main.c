/*
 * main.c - the `terrafort` command: finds the subcommand in the command
 * table (commands.c) and runs it inside the process's set-up (process.c).
 *
 * Set-up done once per process, never by the libraries: GDAL drivers here,
 * GDAL's block cache in cli.c (to each run's plan), MPI and the liveness
 * monitor in process.c. Everything this file calls lies below it; nothing
 * calls back into it.
 */
#include <gdal.h>
#include <stdio.h>
#include <string.h>

#include "process.h"
#include "tools.h"

static void usage(FILE *f) {
  size_t n;
  const tf_command *c = tf_commands(&n);
  fprintf(f, "Usage: terrafort COMMAND [options] ...\n\nCommands:\n");
  for (size_t i = 0; i < n; i++) fprintf(f, "  %-12s %s\n", c[i].name, c[i].summary);
  fprintf(f, "\n'terrafort COMMAND --help' for a command's options; man terrafort for the rest.\n");
}

int main(int argc, char **argv) {
  if (tf_process_init(argv)) return TR_EXIT_INTERNAL;
  if (argc < 2) {
    if (tf_process_speaks()) usage(stderr);
    return TR_EXIT_USAGE;
  }
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
    printf("terrafort %s (GDAL %s)\n", TR_VERSION, GDALVersionInfo("RELEASE_NAME"));
    return TR_EXIT_OK;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return TR_EXIT_OK;
  }
  const tf_command *cmd = tf_command_find(argv[1]);
  if (!cmd) {
    const char *near = tf_command_suggest(argv[1]);
    if (tf_process_speaks() && near)
      fprintf(stderr, "terrafort: unknown command '%s': did you mean '%s'? (see 'terrafort --help')\n", argv[1], near);
    else if (tf_process_speaks())
      fprintf(stderr, "terrafort: unknown command '%s' (see 'terrafort --help')\n", argv[1]);
    return TR_EXIT_USAGE;
  }
  /* the graph programs allocate and free their arrays round after round */
  if (cmd->graph_heap) tf_process_heap_setup();
  const int prc = tf_process_start(&argc, &argv);
  if (prc) return prc;
  tf_apply_config(argc, argv); /* before the drivers: GDAL_SKIP and the like too */
  GDALAllRegister();
  const int rc = cmd->main(argc - 1, argv + 1);
  /* interrupted: an output may be abandoned open (tr_run_opts.cancelled),
   * which this would close, writing it whole into its unlinked file first;
   * tf_process_end then leaves with _exit */
  if (rc != TR_EXIT_INTERRUPTED) GDALDestroyDriverManager();
  return tf_process_end(rc);
}
