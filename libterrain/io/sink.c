/*
 * sink.c - the ordered tile writer (see sink.h).
 *
 * Under MPI a rank sends its tiles to rank 0 as they are put; because each
 * rank puts its own tiles in increasing order and rank 0 consumes all tiles
 * in increasing order, receiving tile j from owner(j) always matches the next
 * message that rank sends: no tile needs buffering and no message overtakes
 * another. Cells go as bytes, in pieces of at most 1 GiB (an MPI count is an
 * int).
 *
 * Every transfer is non-blocking and completed through tr_dist_wait, so a
 * killed or stopped rank ends the protocol within the rank timeout (the
 * sink then fails with TR_ERANK and stops talking) instead of hanging it.
 * A transfer given up stays posted on its buffer; that is safe only
 * because giving up quiesces the process (coll_live_quiesce): no MPI
 * progress completes it later into a released frame or tile.
 */
#include "sink.h"
#include "rank_progress.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dist.h"
#include "scratch_file.h"
#include "stats_hist.h"

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
  if (tr_stats_wanted(run)) {
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

/* Every rank's scratch file for the histogram and percentiles: unlinked at
 * once in the output's folder, or where TMPDIR (else /tmp) says when this
 * rank cannot write there (a rank on another node). */
static int cells_open(tr_sink *s, const char *dst, tr_error *err) {
  char dir[4096];
  int st = tr_scratch_folder(NULL, dst, dir, sizeof dir, err);
  int fd = st ? -1 : tr_scratch_open(dir, "cells");
  if (fd < 0) {
    const char *t = getenv("TMPDIR");
    fd = tr_scratch_open(t && t[0] ? t : "/tmp", "cells");
  }
  if (fd < 0)
    return tr_fail(err, TR_EOUTPUT, "cannot make a scratch file for the histogram in '%s' or the temporary folder: %s",
                   dir, strerror(errno));
  s->cells = malloc(sizeof *s->cells);
  if (!s->cells) {
    close(fd);
    return tr_fail(err, TR_ENOMEM, "out of memory for the histogram");
  }
  st = tr_stats_cells_init(s->cells, s->prod.type, s->prod.bands, s->run->npercentiles > 0, fd, err);
  if (st) {
    free(s->cells);
    s->cells = NULL;
  }
  return st;
}

/* The row's cells: the file's type, converted as each tile is copied in
 * (GDALCopyWords, as GDAL's own write would convert), except floating
 * cells bound for an integer band, which tr_output_write rounds itself. */
static GDALDataType row_type(const tr_product *p) {
  const GDALDataType f = p->file_type != GDT_Unknown ? p->file_type : p->type;
  return GDALDataTypeIsFloating(p->type) && !GDALDataTypeIsFloating(f) ? p->type : f;
}

int64_t tr_sink_row_bytes(const tr_grid *g, const tr_product *p, int64_t block_cols) {
  if (g->tile_cols <= 1) return 0; /* a tile is the whole width */
  if (block_cols > 0 && block_cols <= g->tile && g->tile % block_cols == 0) return 0; /* blocks within tiles */
  const int64_t rows = g->tile < g->rows ? g->tile : g->rows;
  return rows * g->cols * (int64_t)GDALGetDataTypeSizeBytes(row_type(p)) * (p->bands > 0 ? p->bands : 1);
}

/* Tiles reach rank 0 in index order, so a row of tiles is complete at its
 * last tile: with a row buffer the tile is copied into its place there and
 * the row goes to the file in one write (sink.h, tr_sink_row_bytes). */
static int write_raster(void *user, const tr_tile *t, const void *cells, tr_error *e) {
  tr_sink *s = user;
  if (!s->rowbuf)
    return tr_output_write(&s->out, t->row0, t->col0, t->rows, t->cols, cells, s->prod.type, t->cols, e);
  const GDALDataType rt = row_type(&s->prod);
  const int nb = s->prod.bands > 0 ? s->prod.bands : 1;
  const int in_es = GDALGetDataTypeSizeBytes(s->prod.type), out_es = GDALGetDataTypeSizeBytes(rt);
  const int64_t width = s->grid->cols;
  for (int64_t r = 0; r < t->rows; r++)
    GDALCopyWords64((const char *)cells + (size_t)(r * t->cols * nb) * (size_t)in_es, s->prod.type, in_es,
                    (char *)s->rowbuf + (size_t)((r * width + t->col0) * nb) * (size_t)out_es, rt, out_es,
                    (GPtrDiff_t)(t->cols * nb));
  if (t->col0 + t->cols < width) return TR_OK;
  return tr_output_write(&s->out, t->row0, 0, t->rows, width, s->rowbuf, rt, width, e);
}

int tr_sink_open(tr_sink *s, const tr_run_opts *run, const tr_input *in, const char *dst, const tr_product *p,
                 const tr_grid *g, tr_sink_mode mode, int threads, tr_error *err) {
  int st = tr_sink_init(s, run, tr_grid_count(g), grid_tile, g, g->tile * g->tile, p, mode, write_raster, NULL, err);
  s->write_user = s;
  if (!st && tr_stats_cells_wanted(run)) st = cells_open(s, dst, err);
  if (!st && s->rank == 0) {
    st = tr_output_create(&s->out, in, dst, run->format, run->creation_options,
                          p->file_type != GDT_Unknown ? p->file_type : p->type, p->bands, p->has_nodata, p->nodata,
                          threads, err);
    s->created = st == TR_OK;
    if (s->created && s->out.warning[0] && run->warning) run->warning(s->out.warning, run->warning_user);
    s->out.progress = run->progress; /* a cancel also stops a CreateCopy at commit */
    s->out.progress_user = run->progress_user;
    s->out.held = run->held;
    s->out.cancelled = run->cancelled; /* and a write, and makes an abort abandon the output */
  }
  s->grid = g;
  if (!st && s->created) {
    int bx = 0, by = 0;
    GDALGetBlockSize(s->out.band, &bx, &by);
    const int64_t row = tr_sink_row_bytes(g, p, bx);
    if (row > 0 && !(s->rowbuf = malloc((size_t)row)))
      st = tr_fail(err, TR_ENOMEM, "out of memory for the writer's row of tiles (%.0f MiB)", (double)row / (1 << 20));
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
/* One bounded transfer (tr_dist_wait); a lost rank or a signal becomes the
 * sink's failure and ends its traffic. */
static int transfer(tr_sink *s, int recv, void *buf, size_t n, int peer, int tag) {
  tr_error e;
  /* a rank that gave up posts nothing more: a failure's headers included */
  int st = tr_dist_check(s->run, &e);
  if (!st) {
    MPI_Request q;
    if (recv) MPI_Irecv(buf, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &q);
    else MPI_Isend(buf, (int)n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &q);
    /* on failure q stays posted on buf (h below: this frame's); the wait
     * has quiesced the process, so nothing completes it any more */
    st = tr_dist_wait(s->run, 1, &q, &e);
  }
  if (st) {
    /* a lost rank or a signal outranks a tile's failure */
    s->status = 0;
    tr_sink_fail(s, st, &e);
    s->dead = 1;
  }
  return st;
}

static void recv_tile(tr_sink *s, int64_t j) {
  sink_header h;
  const int src = owner(s, j);
  if (s->dead || transfer(s, 1, &h, sizeof h, src, TAG_SINK_HEADER)) return;
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
    if (transfer(s, 1, (char *)s->recvbuf + off, k, src, TAG_SINK_CELLS)) return;
  }
  write_tile(s, &t, s->recvbuf);
}

static void send_tile(tr_sink *s, int64_t i, int status, const tr_error *e, const void *cells) {
  if (s->dead) return;
  sink_header h;
  memset(&h, 0, sizeof h);
  h.tile = i;
  h.status = status;
  if (status) snprintf(h.msg, sizeof h.msg, "%.500s", e ? e->msg : "failed");
  if (transfer(s, 0, &h, sizeof h, 0, TAG_SINK_HEADER) || status) return;
  tr_tile t = s->tile_at(s->geom, i);
  const size_t n = (size_t)(t.rows * t.cols) * s->cell_bytes;
  for (size_t off = 0; off < n; off += SINK_PIECE) {
    const size_t k = n - off < SINK_PIECE ? n - off : SINK_PIECE;
    if (transfer(s, 0, (char *)cells + off, k, 0, TAG_SINK_CELLS)) return;
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

int64_t tr_sink_owned(const tr_sink *s) {
  if (s->mode == TR_SINK_SPREAD) return tr_grid_owned(s->ntiles, s->rank, s->nranks);
  return s->rank == 0 ? s->ntiles : 0;
}

void tr_sink_put(tr_sink *s, int64_t i, int status, const tr_error *e, const void *cells) {
  tr_rank_progress_step(s->run);
  if (s->hold_ms > 0) {
    /* fault injection: this rank is slow to deliver (terrafort(1), hold:) */
    struct timespec ts = {s->hold_ms / 1000, (long)(s->hold_ms % 1000) * 1000000L};
    s->hold_ms = 0;
    while (nanosleep(&ts, &ts) != 0) {
    }
  }
  if (!status && s->stats) {
    tr_tile t = s->tile_at(s->geom, i);
    tr_tile_stats_of(&s->stats[i * s->prod.bands], cells, s->prod.type, s->prod.bands, t.rows * t.cols,
                     s->prod.has_nodata, s->prod.nodata);
    if (s->cells)
      tr_stats_cells_add(s->cells, cells, s->prod.type, t.rows * t.cols, s->prod.has_nodata, s->prod.nodata);
  }
  if (s->rank != 0) {
    /* a failure already seen here travels with every later tile */
    send_tile(s, i, status ? status : s->status, status ? e : &s->first, cells);
    if (!s->dead) tr_sink_fail(s, status, e);
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

void tr_sink_none(tr_sink *s, int status, const tr_error *e) {
  tr_sink_fail(s, status, e);
  s->next = s->ntiles;
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
  if (s->cells) tr_stats_cells_free(s->cells);
  free(s->cells);
  s->cells = NULL;
  free(s->stats);
  free(s->recvbuf);
  free(s->rowbuf);
  s->stats = NULL;
  s->recvbuf = NULL;
  s->rowbuf = NULL;
}
