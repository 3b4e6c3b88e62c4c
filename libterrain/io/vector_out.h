/*
 * vector_out.h - vector outputs (OGR) as every output is written
 * (internal): under a temporary name beside the final one, then held for
 * the end of a run of several stages (held.h) or put in place at once; a
 * failure leaves nothing. flowgraph's --network and --moved-outlets.
 *
 * A driver may write several files (a shapefile's .shp, .shx, .dbf, .prj),
 * so the dataset is made in a temporary folder of its own under a short
 * name, and the folder's files are what is put in place.
 */
#ifndef TR_VECTOR_OUT_H
#define TR_VECTOR_OUT_H

#include "terrain.h"

/* The OGR driver for dst: `driver` when given, else by dst's extension
 * (.gpkg, .shp, .geojson, .json, .sqlite, .gml, .kml, .fgb, .csv), else
 * GPKG. */
const char *tr_vector_driver(const char *dst, const char *driver);

/* Whether that driver exists and can create files (a usage error naming
 * `flag`, the option that chose it, otherwise). */
int tr_vector_check(const char *dst, const char *driver, const char *flag, tr_error *err);

/* The writer's step of a vector output (run/step.h: tr_step_writer with
 * tr_vector_write and a tr_vector_job): write(path, drv, user, err) creates
 * the dataset at path (a temporary; its messages name dst) with driver drv;
 * the result is put in place (or held, run->held) when write succeeds,
 * removed when not. */
typedef int (*tr_vector_write_fn)(const char *path, const char *drv, void *user, tr_error *err);
typedef struct {
  const tr_run_opts *run;
  const char *dst, *driver;
  tr_vector_write_fn write;
  void *user;
} tr_vector_job;
int tr_vector_write(void *job, tr_error *err);

#endif
