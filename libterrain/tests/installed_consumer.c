/*
 * installed_consumer.c - a program of a library user, built against the
 * installed tree (installed_tree.sh: once with pkg-config, once with
 * find_package(terrafort)), not against the build: it includes the
 * installed terrain.h and links libterrafort.so.
 * Usage: installed_consumer DEM SLOPE_OUT FILL_OUT [BATCH_DIR]
 * Writes the DEM's slope and filled DEM with default options, checks the
 * loaded library's version and that a failing call explains itself. With
 * BATCH_DIR: a batch (tr_batch) there of two jobs, the DEM's slope and a
 * slope of a missing file, run by the terrafort program found on PATH, then
 * run again: the first time one job fails and one is done, the second time
 * the done one is skipped (its file still there) and the failing one fails
 * again.
 */
#include <gdal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <terrain.h>

/* The number after "key": in the summary file. */
static long summary_count(const char *path, const char *key) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  static char text[1 << 16];
  const size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  char k[64];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *p = strstr(text, k);
  return p ? strtol(p + strlen(k), NULL, 10) : -1;
}

static int batch(const char *dem, const char *dir) {
  char jobs[4096], summary[4096];
  snprintf(jobs, sizeof jobs, "%s/jobs.txt", dir);
  snprintf(summary, sizeof summary, "%s/jobs.txt.summary.json", dir);
  FILE *f = fopen(jobs, "w");
  if (!f) return 1;
  fprintf(f, "slope '%s' '%s/slope.tif'\nslope /nonexistent/dem.tif '%s/bad.tif'\n", dem, dir, dir);
  fclose(f);
  for (int round = 0; round < 2; round++) {
    tr_batch_opts b;
    tr_batch_opts_init(&b);
    b.jobs_file = jobs;
    tr_error err;
    const int st = tr_batch(&b, &err);
    if (st != TR_EBATCH || tr_exit_code(st) != 11 || !strstr(err.msg, "1 of 2 jobs failed")) {
      fprintf(stderr, "batch, round %d: status %d, '%s'\n", round, st, err.msg);
      return 1;
    }
    const long done = summary_count(summary, "done"), skipped = summary_count(summary, "skipped"),
               failed = summary_count(summary, "failed");
    if (done != (round ? 0 : 1) || skipped != (round ? 1 : 0) || failed != 1) {
      fprintf(stderr, "batch, round %d: summary says done %ld, skipped %ld, failed %ld\n", round, done, skipped, failed);
      return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5) return 2;
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
  return argc == 5 ? batch(argv[1], argv[4]) : 0;
}
