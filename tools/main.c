/*
 * main.c - the `terrafort` command: global set-up and the subcommand table.
 *
 * Set-up done once per process, never by the libraries: GDAL drivers, a
 * block cache capped so memory stays bounded by the tiles in flight (unless
 * the user sets GDAL_CACHEMAX), and MPI when launched by mpirun.
 */
#include <gdal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tools.h"

typedef struct {
  const char *name;
  int (*main)(int, char **);
  const char *summary;
} tf_command;

static const tf_command commands[] = {
    {"slope", tf_slope_main, "slope in degrees or percent (gdaldem slope)"},
    {"aspect", tf_aspect_main, "aspect in degrees (gdaldem aspect)"},
};

int tf_parse_gradient_alg(const char *s, tr_gradient_alg *alg) {
  if (!strcasecmp(s, "Horn")) *alg = TR_GRAD_HORN;
  else if (!strcasecmp(s, "ZevenbergenThorne")) *alg = TR_GRAD_ZEVENBERGEN_THORNE;
  else return -1;
  return 0;
}

static void usage(FILE *f) {
  fprintf(f, "Usage: terrafort COMMAND [options] ...\n\nCommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\n'terrafort COMMAND --help' for a command's options; man terrafort for the rest.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
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
    GDALAllRegister();
    if (!getenv("GDAL_CACHEMAX")) GDALSetCacheMax64((GIntBig)64 << 20);
    int rc = commands[i].main(argc - 1, argv + 1);
    GDALDestroyDriverManager();
    return rc;
  }
  fprintf(stderr, "terrafort: unknown command '%s' (see 'terrafort --help')\n", argv[1]);
  return 2;
}
