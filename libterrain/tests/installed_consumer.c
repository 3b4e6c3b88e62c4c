/*
 * installed_consumer.c - a program of a library user, built against the
 * installed tree (installed_tree.sh: once with pkg-config, once with
 * find_package(terrafort)), not against the build: it includes the
 * installed terrain.h and links libterrafort.so.
 * Usage: installed_consumer DEM SLOPE_OUT FILL_OUT
 * Writes the DEM's slope and filled DEM with default options, checks the
 * loaded library's version and that a failing call explains itself.
 */
#include <gdal.h>
#include <stdio.h>
#include <string.h>
#include <terrain.h>

int main(int argc, char **argv) {
  if (argc != 4) return 2;
  GDALAllRegister();
  if (strcmp(tr_library_version(), TR_VERSION) != 0) {
    fprintf(stderr, "loaded library %s, header %s\n", tr_library_version(), TR_VERSION);
    return 1;
  }
  tr_error err;
  tr_slope_opts s;
  tr_slope_opts_init(&s);
  if (tr_slope(&s, argv[1], argv[2], &err) != TR_OK) {
    fprintf(stderr, "slope: %s\n", err.msg);
    return 1;
  }
  tr_fill_dem_opts f;
  tr_fill_dem_opts_init(&f);
  if (tr_fill_dem(&f, argv[1], argv[3], &err) != TR_OK) {
    fprintf(stderr, "fill: %s\n", err.msg);
    return 1;
  }
  const int st = tr_slope(&s, "/nonexistent/dem.tif", argv[2], &err);
  if (st == TR_OK || tr_exit_code(st) != 3 || !strstr(err.msg, "/nonexistent/dem.tif")) {
    fprintf(stderr, "a missing input: status %d, '%s'\n", st, err.msg);
    return 1;
  }
  return 0;
}
