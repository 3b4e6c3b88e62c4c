/*
 * sink.c - the ordered tile writer (see sink.h).
 *
 * Under MPI a rank sends its tiles to rank 0 as they are put; because each
 * rank puts its own tiles in increasing order and rank 0 consumes all tiles
 * in increasing order, receiving tile j from owner(j) always matches the next
 * message that rank sends: no tile needs buffering and no message overtakes
 * another. Cells go as bytes, in pieces of at most 1 GiB (an MPI count is an
 * int).
 */
#include "sink.h"

#include <stdlib.h>
#include <string.h>

#include "dist.h"

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>
#endif

#define TAG_SINK_HEADER 7101
#define TAG_SINK_CELLS 7102
#define SINK_PIECE ((size_t)1 << 30)

typedef struct {
  int64_t tile;
  int32_t status;
  int32_t pad;
  char msg[512];
} sink_header;

static int owner(const tr_sink *s, int64_t i) { return s->mode == TR_SINK_SPREAD ? tr_grid_owner(i, s->nranks) : 0; }

void tr_sink_fail(tr_sink *s, int status, const tr_error *e) {
  if (status && !s->status) {
    s->status = status;
    if (e) s->first = *e;
    else memset(&s->first, 0, sizeof s->first);
  }
}

int tr_sink_init(tr_sink *s, const tr_run_opts *run, int64_t ntiles, tr_sink_tile_fn tile_at, const void *geom,
                 int64_t max_cells, const tr_product *p, tr_sink_mode mode, tr_sink_write_fn write, void *user,
                 tr_error *err) {
  memset(s, 0, sizeof *s);
  s->run = run;
  s->ntiles = ntiles;
  s->tile_at = tile_at;
  s->geom = geom;
  s->mode = mode;
  s->rank = mode == TR_SINK_LOCAL ? 0 : tr_rank();
  s->nranks = mode == TR_SINK_LOCAL ? 1 : tr_dist_size();
  if (s->nranks == 1) s->mode = TR_SINK_LOCAL;
  s->prod = *p;
  s->cell_bytes = (size_t)GDALGetDataTypeSizeBytes(p->type) * (size_t)p->bands;
  s->write = write;
  s->write_user = user;
  if (run && (run->stats || run->stats_json)) {
    s->stats = calloc((size_t)ntiles * (size_t)p->bands, sizeof *s->stats);
    if (!s->stats) return tr_fail(err, TR_ENOMEM, "out of memory for statistics partials");
  }
  if (s->rank == 0 && s->mode == TR_SINK_SPREAD) {
    s->recvbuf = malloc((size_t)max_cells * s->cell_bytes);
    if (!s->recvbuf) return tr_fail(err, TR_ENOMEM, "out of memory for the tile receive buffer");
  }
  return TR_OK;
}

static tr_tile grid_tile(const void *g, int64_t i) { return tr_grid_tile(g, i); }

static int write_raster(void *user, const tr_tile *t, const void *cells, tr_error *e) {
  tr_sink *s = user;
  return tr_output_write(&s->out, t->row0, t->col0, t->rows, t->cols, cells, s->prod.type, t->cols, e);
}

int tr_sink_open(tr_sink *s, const tr_run_opts *run, const tr_input *in, const char *dst, const tr_product *p,
                 const tr_grid *g, tr_sink_mode mode, tr_error *err) {
  int st = tr_sink_init(s, run, tr_grid_count(g), grid_tile, g, g->tile * g->tile, p, mode, write_raster, NULL, err);
  s->write_user = s;
  if (!st && s->rank == 0) {
    st = tr_output_create(&s->out, in, dst, run->format, run->creation_options,
                          p->file_type != GDT_Unknown ? p->file_type : p->type, p->bands, p->has_nodata, p->nodata, err);
    s->created = st == TR_OK;
    s->out.progress = run->progress; /* a cancel also stops a CreateCopy at commit */
    s->out.progress_user = run->progress_user;
  }
  return st;
}

/* Rank 0: writes tile t and reports progress. */
static void write_tile(tr_sink *s, const tr_tile *t, const void *cells) {
  if (s->status) return;
  tr_error e;
  int st = s->write ? s->write(s->write_user, t, cells, &e) : TR_OK;
  s->written++;
  const tr_run_opts *run = s->run;
  if (!st && run && run->progress) {
    double frac = s->progress_from + (1.0 - s->progress_from) * (double)s->written / (double)s->ntiles;
    if (!run->progress(frac, NULL, run->progress_user)) st = tr_fail(&e, TR_EINTERRUPTED, "interrupted");
  }
  tr_sink_fail(s, st, &e);
}

#ifdef TERRAFORT_HAVE_MPI
static void recv_tile(tr_sink *s, int64_t j) {
  sink_header h;
  const int src = owner(s, j);
  MPI_Recv(&h, sizeof h, MPI_BYTE, src, TAG_SINK_HEADER, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (h.status) {
    tr_error e;
    snprintf(e.msg, sizeof e.msg, "%s", h.msg);
    tr_sink_fail(s, h.status, &e);
    return;
  }
  tr_tile t = s->tile_at(s->geom, j);
  const size_t n = (size_t)(t.rows * t.cols) * s->cell_bytes;
  for (size_t off = 0; off < n; off += SINK_PIECE) {
    const size_t k = n - off < SINK_PIECE ? n - off : SINK_PIECE;
    MPI_Recv((char *)s->recvbuf + off, (int)k, MPI_BYTE, src, TAG_SINK_CELLS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  write_tile(s, &t, s->recvbuf);
}

static void send_tile(tr_sink *s, int64_t i, int status, const tr_error *e, const void *cells) {
  sink_header h;
  memset(&h, 0, sizeof h);
  h.tile = i;
  h.status = status;
  if (status) snprintf(h.msg, sizeof h.msg, "%.500s", e ? e->msg : "failed");
  MPI_Send(&h, sizeof h, MPI_BYTE, 0, TAG_SINK_HEADER, MPI_COMM_WORLD);
  if (status) return;
  tr_tile t = s->tile_at(s->geom, i);
  const size_t n = (size_t)(t.rows * t.cols) * s->cell_bytes;
  for (size_t off = 0; off < n; off += SINK_PIECE) {
    const size_t k = n - off < SINK_PIECE ? n - off : SINK_PIECE;
    MPI_Send((const char *)cells + off, (int)k, MPI_BYTE, 0, TAG_SINK_CELLS, MPI_COMM_WORLD);
  }
}
#else
static void recv_tile(tr_sink *s, int64_t j) { (void)s, (void)j; }
static void send_tile(tr_sink *s, int64_t i, int status, const tr_error *e, const void *cells) {
  (void)s, (void)i, (void)status, (void)e, (void)cells;
}
#endif

/* Rank 0: receives and writes the other ranks' tiles before `upto`. */
static void drain_before(tr_sink *s, int64_t upto) {
  for (; s->next < upto; s->next++)
    if (owner(s, s->next) != 0) recv_tile(s, s->next);
}

void tr_sink_put(tr_sink *s, int64_t i, int status, const tr_error *e, const void *cells) {
  if (!status && s->stats) {
    tr_tile t = s->tile_at(s->geom, i);
    tr_tile_stats_of(&s->stats[i * s->prod.bands], cells, s->prod.type, s->prod.bands, t.rows * t.cols,
                     s->prod.has_nodata, s->prod.nodata);
  }
  if (s->rank != 0) {
    /* a failure already seen here travels with every later tile */
    send_tile(s, i, status ? status : s->status, status ? e : &s->first, cells);
    tr_sink_fail(s, status, e);
    return;
  }
  drain_before(s, i);
  if (status) tr_sink_fail(s, status, e);
  else {
    tr_tile t = s->tile_at(s->geom, i);
    write_tile(s, &t, cells);
  }
  s->next = i + 1;
}

int tr_sink_drain(tr_sink *s, tr_error *err) {
  if (s->rank == 0) drain_before(s, s->ntiles);
  if (s->status && err) *err = s->first;
  return s->status;
}

int tr_sink_commit(tr_sink *s, tr_error *err) {
  if (s->rank != 0 || !s->created) return TR_OK;
  s->created = 0;
  return tr_output_commit(&s->out, err);
}

void tr_sink_abort(tr_sink *s) {
  if (s->rank == 0 && s->created) tr_output_abort(&s->out);
  s->created = 0;
}

void tr_sink_close(tr_sink *s) {
  free(s->stats);
  free(s->recvbuf);
  s->stats = NULL;
  s->recvbuf = NULL;
}
