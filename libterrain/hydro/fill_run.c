/*
 * fill_run.c - tr_fill_run: the entry point `terrafort fill` calls, and an in-memory helper.
 *
 * It builds the fragment layout (the tile grid, or the caller's), the fill program
 * (fill_program.c) and runs it on the chosen back-end: threads (default), the virtual-clock
 * simulator (tests), or MPI ranks. Finished tiles reach io->write_w from Assemble; under
 * MPI every rank assembles its own fragments and sends them to rank 0, which writes them
 * after the engine returns (rank 0 is the only writer, as GDAL's GeoTIFF writer needs).
 */
#define TR_FILL_INTERNAL
#include "fill.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stdio.h>

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>
#endif

static void fill_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

void tr_fill_opts_default(tr_fill_opts *o) {
  memset(o, 0, sizeof *o);
  o->tile_rows = o->tile_cols = 512;
  tr_aap_opts_default(&o->aap);
  o->backend = TR_FILL_THREADS;
  o->nodata = NAN;
  o->z_cache_bytes = (size_t)64 << 20;
}

int fill_deliver_tile(fill_ctx *x, const tr_aap_frag *f, const float *tile) {
  if (x->write_rank < 0) {
    pthread_mutex_lock(&x->io_mu);
    int rc = x->io->write_w ? x->io->write_w(x->io->user, f->row0, f->col0, f->rows, f->cols, tile) : 0;
    pthread_mutex_unlock(&x->io_mu);
    return rc;
  }
#ifdef TERRAFORT_HAVE_MPI
  MPI_Comm comm = *(MPI_Comm *)x->mpi_comm;
  int me;
  MPI_Comm_rank(comm, &me);
  if (me == x->write_rank) {
    int rc = x->io->write_w ? x->io->write_w(x->io->user, f->row0, f->col0, f->rows, f->cols, tile) : 0;
    return rc;
  }
  /* tag 7001: tiles go to the writer; the engine's own traffic is done by now */
  long long id = (long long)f->id;
  if (MPI_Send(&id, 1, MPI_LONG_LONG, x->write_rank, 7001, comm) != MPI_SUCCESS) return -1;
  if (MPI_Send(tile, (int)(f->rows * f->cols), MPI_FLOAT, x->write_rank, 7002, comm) !=
      MPI_SUCCESS)
    return -1;
  return 0;
#else
  return -1;
#endif
}

#ifdef TERRAFORT_HAVE_MPI
/* rank 0: receive the tiles of every fragment it does not own and write them */
static int gather_tiles(fill_ctx *x, int size) {
  MPI_Comm comm = *(MPI_Comm *)x->mpi_comm;
  int64_t remote = 0, maxcells = 0;
  for (int64_t f = 0; f < x->L->nfrags; f++) {
    if (f % size != 0) remote++;
    int64_t n = x->L->frags[f].rows * x->L->frags[f].cols;
    if (n > maxcells) maxcells = n;
  }
  float *buf = malloc((size_t)maxcells * sizeof(float));
  if (!buf) return TR_AAP_ENOMEM;
  int rc = 0;
  for (int64_t k = 0; k < remote; k++) {
    long long id;
    MPI_Status st;
    MPI_Recv(&id, 1, MPI_LONG_LONG, MPI_ANY_SOURCE, 7001, comm, &st);
    if (id < 0 || id >= x->L->nfrags) {
      rc = TR_AAP_ESYS;
      break;
    }
    const tr_aap_frag *f = &x->L->frags[id];
    MPI_Recv(buf, (int)(f->rows * f->cols), MPI_FLOAT, st.MPI_SOURCE, 7002, comm, MPI_STATUS_IGNORE);
    if (rc == 0 && x->io->write_w &&
        x->io->write_w(x->io->user, f->row0, f->col0, f->rows, f->cols, buf) != 0)
      rc = TR_AAP_EPROGRAM;
  }
  free(buf);
  return rc;
}
#endif

int tr_fill_run(const tr_fill_opts *o, const tr_fill_io *io, tr_aap_stats *stats, char *err,
                size_t errlen) {
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
      fill_err(err, errlen, "fill: bad tile size %lld x %lld", (long long)o->tile_rows,
                  (long long)o->tile_cols);
      return rc;
    }
    L = &own;
  }
  for (int64_t f = 0; f < L->nfrags; f++)
    if ((L->frags[f].rows + 2) * (L->frags[f].cols + 2) > (int64_t)UINT32_MAX) {
      tr_aap_layout_free(&own);
      fill_err(err, errlen, "fill: a tile is too large (at most 2^32 cells with its halo)");
      return TR_AAP_EINVAL;
    }
  fill_ctx *x = calloc(1, sizeof *x);
  if (!x || !(x->slots = calloc((size_t)L->nfrags, sizeof *x->slots))) {
    free(x);
    tr_aap_layout_free(&own);
    return TR_AAP_ENOMEM;
  }
  x->o = *o;
  x->io = io;
  x->L = L;
  x->write_rank = -1;
  pthread_mutex_init(&x->io_mu, NULL);
  pthread_mutex_init(&x->mu, NULL);
  tr_aap_program p;
  fill_program_init(&p, x);
  int rc;
  switch (o->backend) {
  case TR_FILL_THREADS:
    rc = tr_aap_run_threads(&p, L, &o->aap, stats, err, errlen);
    break;
  case TR_FILL_SIM:
    if (!o->sim) {
      fill_err(err, errlen, "fill: the simulator needs sim options");
      rc = TR_AAP_EINVAL;
      break;
    }
    rc = tr_aap_run_sim(&p, L, &o->aap, o->sim, stats, err, errlen);
    break;
  case TR_FILL_MPI:
#ifdef TERRAFORT_HAVE_MPI
  {
    if (!o->mpi_comm) {
      fill_err(err, errlen, "fill: MPI back-end needs a communicator");
      rc = TR_AAP_EINVAL;
      break;
    }
    int me, size;
    MPI_Comm_rank(*(MPI_Comm *)o->mpi_comm, &me);
    MPI_Comm_size(*(MPI_Comm *)o->mpi_comm, &size);
    x->mpi_comm = o->mpi_comm;
    x->write_rank = 0;
    rc = tr_aap_run_mpi(&p, L, &o->aap, o->mpi_comm, stats, err, errlen);
    /* every rank reaches here with the same verdict (the engine agrees on it) */
    if (rc == 0 && me == 0) rc = gather_tiles(x, size);
    break;
  }
#else
    fill_err(err, errlen, "fill: built without MPI");
    rc = TR_AAP_ENOMPI;
    break;
#endif
  default:
    rc = TR_AAP_EINVAL;
  }
  fill_ctx_release(x);
  pthread_mutex_destroy(&x->io_mu);
  pthread_mutex_destroy(&x->mu);
  free(x);
  tr_aap_layout_free(&own);
  return rc;
}

typedef struct {
  const float *z;
  float *w;
  int64_t cols;
} array_io;

static int array_load(void *user, int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                      float *dst) {
  array_io *a = user;
  for (int64_t r = 0; r < rows; r++)
    memcpy(dst + r * cols, a->z + (row0 + r) * a->cols + col0, (size_t)cols * sizeof(float));
  return 0;
}

static int array_write(void *user, int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                       const float *w) {
  array_io *a = user;
  for (int64_t r = 0; r < rows; r++)
    memcpy(a->w + (row0 + r) * a->cols + col0, w + r * cols, (size_t)cols * sizeof(float));
  return 0;
}

int tr_fill_array(const tr_fill_opts *o, const float *z, float *w, tr_aap_stats *stats,
                  char *err, size_t errlen) {
  array_io a = {z, w, o->cols};
  tr_fill_io io = {array_load, array_write, &a};
  return tr_fill_run(o, &io, stats, err, errlen);
}
