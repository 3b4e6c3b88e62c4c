/*
 * cli_kit.h - what a test of the terrafort command needs around
 * raster_check.h: an output folder, paths in it, running a command on a
 * test DEM into it, and reading integer fields of a JSON report.
 * ck_init() once, then ck_run()/ck_out(); the folder is DIR/../out_NAME.
 */
#ifndef TR_CLI_KIT_H
#define TR_CLI_KIT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "raster_check.h"

static const char *ck_dir, *ck_tf; /* test DEMs, the terrafort binary */
static char ck_outdir[512];

static inline void ck_init(const char *dir, const char *tf, const char *name) {
  ck_dir = dir;
  ck_tf = tf;
  snprintf(ck_outdir, sizeof ck_outdir, "%s/../out_%s", dir, name);
  mkdir(ck_outdir, 0755);
}

/* NAME in the output folder (eight results may be held at once). */
static inline const char *ck_out(const char *name) {
  static char p[8][1024];
  static int k;
  k = (k + 1) % 8;
  snprintf(p[k], sizeof p[k], "%s/%s", ck_outdir, name);
  return p[k];
}

/* Runs `[prefix] terrafort CMD IN [extra] OUT FLAGS -q` with IN in the DEM
 * folder (or a path, when it holds a '/') and OUT in the output folder;
 * returns the exit code. */
static inline int ck_run(const char *prefix, const char *cmd, const char *extra, const char *in, const char *out,
                         const char *flags) {
  char c[4096];
  const int path = strchr(in, '/') != NULL;
  snprintf(c, sizeof c, "%s '%s' %s '%s%s%s' %s '%s/%s' %s -q", prefix, ck_tf, cmd, path ? "" : ck_dir, path ? "" : "/",
           in, extra, ck_outdir, out, flags);
  return rc_run(c, NULL);
}

/* The mpirun prefix for MPI tests, or "" when MPI is not built or mpirun
 * is missing (the MPI cases then skip). */
static inline void ck_mpirun(char *buf, size_t len) {
  buf[0] = 0;
#ifdef TERRAFORT_HAVE_MPI
  if (rc_run("command -v mpirun >/dev/null", NULL) == 0)
    snprintf(buf, len, "mpirun --allow-run-as-root --oversubscribe");
#else
  (void)len;
#endif
}

/* An integer field "key": of a flat JSON text, or -1. */
static inline long long ck_json_int(const char *json, const char *key) {
  char k[128];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *p = strstr(json, k);
  return p ? atoll(p + strlen(k)) : -1;
}

#endif
