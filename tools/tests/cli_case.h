/*
 * cli_case.h - what a CLI test that works in a folder of its own needs
 * (test code, header only): the test DEMs' folder and the terrafort binary
 * (dir, tf, set by main), its output folder and stderr file (outdir,
 * errfile), paths in both, and `expect`, which runs one command line there
 * and checks its exit code and one-line error.
 */
#ifndef TR_CLI_CASE_H
#define TR_CLI_CASE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc_check.h"
#include "raster_check.h"

static const char *dir, *tf;
static char outdir[600], errfile[600];

static void reset(const char *d) {
  char c[1400];
  snprintf(c, sizeof c, "rm -rf '%s' && mkdir -p '%s'", d, d);
  if (system(c) != 0) fprintf(stderr, "cannot reset %s\n", d);
}

/* NAME in the test DEMs' folder, or in the output folder (eight of each
 * may be held at once). */
static const char *in(const char *name) {
  static char b[8][1024];
  static int k;
  k = (k + 1) % 8;
  snprintf(b[k], sizeof b[k], "%s/%s", dir, name);
  return b[k];
}

static const char *out(const char *name) {
  static char b[8][1024];
  static int k;
  k = (k + 1) % 8;
  snprintf(b[k], sizeof b[k], "%s/%s", outdir, name);
  return b[k];
}

/* `terrafort ARGS` run from outdir: exit `code`; when it fails, one stderr
 * line containing needle. */
static int expect(const char *args, int code, const char *needle) {
  char c[4096];
  if (snprintf(c, sizeof c, "cd '%s' && '%s' %s", outdir, tf, args) >= (int)sizeof c) {
    fprintf(stderr, "command line too long for the test: %.100s...\n", args);
    return 1;
  }
  int rc = rc_run(c, errfile);
  const char *err = rc_slurp(errfile);
  if (rc != code || (code != 0 && (pc_lines(err) != 1 || !strstr(err, needle)))) {
    fprintf(stderr, "`terrafort %s`: exit %d (want %d), stderr:\n%s(want one line containing '%s')\n", args, rc, code,
            err, needle ? needle : "");
    return 1;
  }
  return 0;
}

#endif
