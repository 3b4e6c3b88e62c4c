/*
 * fill_io.h - the fill tests' and benchmarks' way to run the "fill" program
 * over arrays or their own loaders (test code, header only).
 *
 * There is one run path: everything here fills a tr_graph_io and calls
 * tr_graph_run_io (hydro/graph_run.c), whose planner is the command's. A
 * test names a body only to compare bodies (FILL_WINDOW, FILL_PERIMETER);
 * with FILL_AUTO the planner chooses from the params and `mem`, as `terrafort
 * fill` does from --mem.
 */
#ifndef TR_TEST_FILL_IO_H
#define TR_TEST_FILL_IO_H

#include <math.h>
#include <string.h>

#include "fill.h"

typedef enum { FILL_AUTO = 0, FILL_WINDOW, FILL_PERIMETER } fill_method;

typedef int (*fill_load_fn)(void *user, int64_t row0, int64_t col0, int64_t rows, int64_t cols, float *dst);
typedef int (*fill_write_fn)(void *user, int64_t row0, int64_t col0, int64_t rows, int64_t cols, const float *w);

typedef struct {
  int64_t rows, cols;
  int64_t tile_rows, tile_cols; /* a square grid unless a layout is given (tile_rows counts) */
  const tr_aap_layout *layout;
  tr_aap_opts aap;
  tr_graph_backend backend;
  const tr_aap_sim_opts *sim;
  void *mpi_comm;
  int epsilon;
  float eps;
  int has_nodata;
  float nodata;
  size_t z_cache_bytes;
  int64_t state_budget;         /* forces the store's budget (graph.h); 0: the plan's */
  const char *spill_dir;
  tr_state_store_stats *spill_stats;
  fill_method method;
  int64_t mem;                  /* the planner's memory; 0: all in memory */
  const char *chosen;           /* after a run: the body that ran */
} fill_opts;

/* Tiles 512 x 512, threads, aap defaults, flat fill, no nodata value, 64 MiB cache. */
static inline void fill_opts_default(fill_opts *o) {
  memset(o, 0, sizeof *o);
  o->tile_rows = o->tile_cols = 512;
  tr_aap_opts_default(&o->aap);
  o->backend = TR_GRAPH_THREADS;
  o->nodata = NAN;
  o->z_cache_bytes = (size_t)64 << 20;
}

typedef struct {
  fill_load_fn load;
  fill_write_fn write;
  void *user;
} fill_callbacks;

static inline int fill_io_load(void *user, int64_t r0, int64_t c0, int64_t r, int64_t c, float *dst) {
  const fill_callbacks *cb = user;
  return cb->load(cb->user, r0, c0, r, c, dst);
}

static inline int fill_io_write(void *user, int64_t r0, int64_t c0, int64_t r, int64_t c, const void *cells) {
  const fill_callbacks *cb = user;
  return cb->write ? cb->write(cb->user, r0, c0, r, c, cells) : 0;
}

/* Runs the fill with the caller's loader and writer (write may be NULL). */
static inline int fill_run(fill_opts *o, fill_load_fn load, fill_write_fn write, void *user, tr_aap_stats *stats,
                           char *err, size_t errlen) {
  if (o->tile_rows != o->tile_cols && !o->layout) {
    if (err && errlen) snprintf(err, errlen, "fill_io: square tiles only");
    return TR_AAP_EINVAL;
  }
  fill_callbacks cb = {load, write, user};
  tr_graph_io io;
  memset(&io, 0, sizeof io);
  io.rows = o->rows;
  io.cols = o->cols;
  io.tile = o->tile_rows;
  io.layout = o->layout;
  io.ninputs = 1;
  io.load = load ? fill_io_load : NULL;
  io.load_user[0] = &cb;
  io.has_nodata = o->has_nodata;
  io.nodata = o->nodata;
  io.cache_bytes = o->z_cache_bytes;
  io.write = fill_io_write;
  io.write_user = &cb;
  io.out_has_nodata = o->has_nodata;
  io.out_nodata = o->nodata;
  io.eng.aap = o->aap;
  io.eng.backend = o->backend;
  io.eng.sim = o->sim;
  io.eng.mpi_comm = o->mpi_comm;
  io.eng.state_budget = o->state_budget;
  io.eng.spill_dir = o->spill_dir;
  io.eng.spill_stats = o->spill_stats;
  io.mem = o->mem;
  io.body = o->method == FILL_PERIMETER ? "fill_perimeter"
            : o->method == FILL_WINDOW  ? (o->epsilon ? "fill_eps" : "fill")
                                        : NULL;
  io.chosen = &o->chosen;
  const tr_fill_params prm = {o->epsilon, o->eps};
  return tr_graph_run_io("fill", &prm, &io, stats, err, errlen);
}

typedef struct {
  const float *z;
  float *w;
  int64_t cols;
} fill_arrays;

static inline int fill_arrays_load(void *user, int64_t row0, int64_t col0, int64_t rows, int64_t cols, float *dst) {
  fill_arrays *a = user;
  for (int64_t r = 0; r < rows; r++)
    memcpy(dst + r * cols, a->z + (row0 + r) * a->cols + col0, (size_t)cols * sizeof(float));
  return 0;
}

static inline int fill_arrays_write(void *user, int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                                    const float *w) {
  fill_arrays *a = user;
  for (int64_t r = 0; r < rows; r++)
    memcpy(a->w + (row0 + r) * a->cols + col0, w + r * cols, (size_t)cols * sizeof(float));
  return 0;
}

/* Fills z (rows x cols) into w (may not alias z). Under MPI, w is written on
 * rank 0 only (tiles reach it through the ordered sink). */
static inline int fill_array(fill_opts *o, const float *z, float *w, tr_aap_stats *stats, char *err,
                             size_t errlen) {
  fill_arrays a = {z, w, o->cols};
  return fill_run(o, fill_arrays_load, fill_arrays_write, &a, stats, err, errlen);
}

#endif
