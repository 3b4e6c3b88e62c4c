/*
 * fill_run.c - tr_fill_run: the fill program on the engine over caller-given
 * loaders and writers (tests, benchmarks, tr_fill_array), through the same
 * graph runner pieces as `terrafort fill`: the tile store in front of load_z,
 * and the ordered sink in front of write_w (on rank 0 under MPI).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "fill.h"

static void fill_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

void tr_fill_opts_default(tr_fill_opts *o) {
  memset(o, 0, sizeof *o);
  o->tile_rows = o->tile_cols = TR_DEFAULT_TILE;
  tr_aap_opts_default(&o->aap);
  o->backend = TR_FILL_THREADS;
  o->nodata = NAN;
  o->z_cache_bytes = (size_t)64 << 20;
}

static int store_load(void *user, const tr_tile *t, int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                      float *dst) {
  (void)t;
  const tr_fill_io *io = user;
  return io->load_z(io->user, row0, col0, rows, cols, dst);
}

static tr_tile layout_tile(const void *geom, int64_t i) {
  const tr_aap_frag *f = &((const tr_aap_layout *)geom)->frags[i];
  tr_tile t = {i, f->row0, f->col0, f->rows, f->cols};
  return t;
}

static int sink_write(void *user, const tr_tile *t, const void *cells, tr_error *e) {
  const tr_fill_io *io = user;
  if (io->write_w && io->write_w(io->user, t->row0, t->col0, t->rows, t->cols, cells) != 0)
    return tr_fail(e, TR_EOUTPUT, "the writer failed on tile %lld", (long long)t->index);
  return TR_OK;
}

const char *tr_fill_program(tr_fill_method m, int epsilon) {
  if (epsilon) return "fill_eps";
  return m == TR_FILL_METHOD_PERIMETER ? "fill_perimeter" : "fill";
}

int tr_fill_run(const tr_fill_opts *o, const tr_fill_io *io, tr_aap_stats *stats, char *err, size_t errlen) {
  if (!o || !io || !io->load_z || o->rows < 1 || o->cols < 1) {
    fill_err(err, errlen, "fill: need rows, cols and a Z loader");
    return TR_AAP_EINVAL;
  }
  tr_aap_layout own;
  memset(&own, 0, sizeof own);
  const tr_aap_layout *L = o->layout;
  if (L) {
    if (L->rows != o->rows || L->cols != o->cols) {
      fill_err(err, errlen, "fill: layout does not match the grid");
      return TR_AAP_EINVAL;
    }
  } else {
    int rc = tr_aap_layout_grid(&own, o->rows, o->cols, o->tile_rows, o->tile_cols);
    if (rc) {
      fill_err(err, errlen, "fill: bad tile size %lld x %lld", (long long)o->tile_rows, (long long)o->tile_cols);
      return rc;
    }
    L = &own;
  }
  int64_t max_cells = 0;
  for (int64_t f = 0; f < L->nfrags; f++) {
    const int64_t n = L->frags[f].rows * L->frags[f].cols;
    if (n > max_cells) max_cells = n;
    if ((L->frags[f].rows + 2) * (L->frags[f].cols + 2) > (int64_t)UINT32_MAX) {
      tr_aap_layout_free(&own);
      fill_err(err, errlen, "fill: a tile is too large (at most 2^32 cells with its halo)");
      return TR_AAP_EINVAL;
    }
  }
#ifndef TERRAFORT_HAVE_MPI
  if (o->backend == TR_FILL_MPI) {
    tr_aap_layout_free(&own);
    fill_err(err, errlen, "fill: built without MPI");
    return TR_AAP_ENOMPI;
  }
#endif
  tr_graph_engine eng = {o->aap,         (tr_graph_backend)o->backend, o->sim, o->mpi_comm,
                         o->state_budget, o->spill_dir,                 o->spill_stats, 0};
  tr_product prod = {GDT_Float32, 1, o->has_nodata, o->has_nodata ? o->nodata : NAN, GDT_Unknown};
  tr_sink sink;
  tr_error e = {{0}};
  int rc = TR_AAP_OK;
  tr_tile_store *store = tr_tile_store_create(o->rows, o->cols, L->nfrags, o->z_cache_bytes, o->has_nodata,
                                              o->nodata, store_load, (void *)io);
  const tr_sink_mode mode = o->backend == TR_FILL_MPI ? TR_SINK_SPREAD : TR_SINK_LOCAL;
  if (!store || tr_sink_init(&sink, NULL, L->nfrags, layout_tile, L, max_cells, &prod, mode, sink_write,
                             (void *)io, &e) != TR_OK)
    rc = TR_AAP_ENOMEM;
  tr_fill_params prm = {o->epsilon, o->eps};
  if (!rc) {
    /* out of core, flat fill keeps only the tiles' perimeters (as `terrafort fill`) */
    const tr_fill_method m = o->method == TR_FILL_METHOD_AUTO && o->state_budget > 0 ? TR_FILL_METHOD_PERIMETER
                                                                                      : o->method;
    rc = tr_graph_exec(tr_graph_program_find(tr_fill_program(m, o->epsilon)), &prm, L, store, &sink, &eng, stats, err, errlen);
    int st = tr_sink_drain(&sink, &e);
    if (!rc && st) {
      fill_err(err, errlen, "%s", e.msg);
      rc = TR_AAP_EPROGRAM;
    }
  }
  if (store) tr_sink_close(&sink);
  tr_tile_store_destroy(store);
  tr_aap_layout_free(&own);
  return rc;
}

typedef struct {
  const float *z;
  float *w;
  int64_t cols;
} array_io;

static int array_load(void *user, int64_t row0, int64_t col0, int64_t rows, int64_t cols, float *dst) {
  array_io *a = user;
  for (int64_t r = 0; r < rows; r++)
    memcpy(dst + r * cols, a->z + (row0 + r) * a->cols + col0, (size_t)cols * sizeof(float));
  return 0;
}

static int array_write(void *user, int64_t row0, int64_t col0, int64_t rows, int64_t cols, const float *w) {
  array_io *a = user;
  for (int64_t r = 0; r < rows; r++)
    memcpy(a->w + (row0 + r) * a->cols + col0, w + r * cols, (size_t)cols * sizeof(float));
  return 0;
}

int tr_fill_array(const tr_fill_opts *o, const float *z, float *w, tr_aap_stats *stats, char *err, size_t errlen) {
  array_io a = {z, w, o->cols};
  tr_fill_io io = {array_load, array_write, &a};
  return tr_fill_run(o, &io, stats, err, errlen);
}
