/*
 * executor.c - local kernels over the tile grid: threads, MPI ranks, and
 * dual-redundant fault tolerance, in one tile loop.
 *
 * Each rank owns a list of tiles (all of them in one process; tile i goes to
 * rank i mod N under mpirun; under --ft dual with MPI, rank 0 is libft's
 * master and owns all tiles while the other ranks serve as its workers).
 * OpenMP threads take the rank's tiles in order (dynamic schedule): read the
 * tile's window with a one-cell halo under the input lock, compute it
 * (directly, or through ft_run_block for --ft dual), take its statistics
 * partial, then enter the ordered region, where tiles leave in tile order:
 *   rank 0   first receives and writes every other rank's tile that precedes
 *            this one, then writes its own;
 *   rank > 0 sends it to rank 0 (a header with status and statistics, then
 *            the cells).
 * Reading tile i+1, computing tile i and writing tile i-1 overlap. Because
 * rank 0 writes tiles in the same global order for any thread or rank
 * count, the GDAL block cache flushes the same way and the output file is
 * the same bytes. A failure anywhere is carried in the headers, so every
 * rank finishes the protocol (no hang) and rank 0 deletes the output.
 *
 * Memory: per thread (tile+2)^2 + tile^2 floats, one receive buffer on rank
 * 0, a statistics partial per tile, and the GDAL block cache (the command
 * caps it); nothing grows with the raster.
 */
#include "executor.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "ft.h"
#include "gradient.h"
#include "grid.h"
#include "inject.h"
#include "stats.h"

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>
#endif

#define TR_DEFAULT_TILE 512
#define TR_MAX_TILE 16384
#define TAG_HEADER 7101
#define TAG_CELLS 7102

/* ------------------------------------------------ libft kernel registry */

/* What libft carries to a worker: the raster's size (the kernels need it
 * for edge rules) followed by the kernel's own parameters. */
typedef struct {
  int64_t raster_rows, raster_cols;
} ft_kctx_head;

static int ft_adapt(tr_local_fn fn, const void *kctx, const ft_block *b, int64_t row0, int64_t nrows, void *out) {
  const ft_kctx_head *h = kctx;
  tr_window w = {b->in, b->in_stride, b->rows, b->cols, b->row_off, b->col_off, h->raster_rows, h->raster_cols};
  return fn((const unsigned char *)kctx + sizeof *h, &w, row0, nrows, out);
}

#define TR_FT_ADAPTER(NAME, FN)                                                                   \
  static int ft_##NAME(const void *k, const ft_block *b, int64_t r0, int64_t n, void *out) { \
    return ft_adapt(FN, k, b, r0, n, out);                                                    \
  }
TR_FT_ADAPTER(slope, tr_slope_kernel)
TR_FT_ADAPTER(aspect, tr_aspect_kernel)

/* Every local kernel, by name: libft's MPI workers find kernels here. */
static const ft_kernel tr_ft_kernels[] = {{"slope", ft_slope}, {"aspect", ft_aspect}};

static const ft_kernel *ft_kernel_named(const char *name) {
  for (size_t i = 0; i < sizeof tr_ft_kernels / sizeof *tr_ft_kernels; i++)
    if (!strcmp(tr_ft_kernels[i].name, name)) return &tr_ft_kernels[i];
  return NULL;
}

/* ---------------------------------------------------------- run state */

typedef struct {
  int64_t tile;
  int32_t status;
  int32_t pad;
  char msg[512];
} tile_header;

typedef struct {
  const tr_run_opts *run;
  tr_input *in;
  const tr_local_job *job;
  tr_grid g;
  int64_t tile, ntiles;
  int rank, nranks;
  int ft_master_only;    /* --ft dual under MPI: rank 0 computes everything */
  tr_output out;         /* rank 0 */
  ft_ctx *ft;
  const ft_kernel *ftk;
  unsigned char *kctx;
  size_t kctx_size;
  tr_tile_stats *stats;  /* per tile */
  int64_t next_remote;   /* rank 0: first tile not yet drained */
  int64_t written;
  int status;
  tr_error first;
  float *recvbuf;
} run_state;

static int owner(const run_state *s, int64_t i) {
  return s->ft_master_only ? 0 : (int)(i % s->nranks);
}

static void fail(run_state *s, int st, const tr_error *e) {
  if (st && !s->status) {
    s->first = *e;
    s->status = st;
  }
}

/* Rank 0: writes a finished tile and reports progress. */
static void write_tile(run_state *s, const tr_tile *t, const float *cells) {
  tr_error e;
  if (s->status) return;
  int st = tr_output_write_f32(&s->out, t->row0, t->col0, t->rows, t->cols, cells, t->cols, &e);
  s->written++;
  if (!st && s->run->progress &&
      !s->run->progress((double)s->written / (double)s->ntiles, NULL, s->run->progress_user))
    st = tr_fail(&e, TR_EINTERRUPTED, "interrupted");
  fail(s, st, &e);
}

#ifdef TERRAFORT_HAVE_MPI
/* Rank 0: receives and writes the other ranks' tiles below `upto`. */
static void drain_remote(run_state *s, int64_t upto) {
  for (; s->next_remote < upto; s->next_remote++) {
    int64_t j = s->next_remote;
    int src = owner(s, j);
    if (src == 0) continue;
    tile_header h;
    MPI_Recv(&h, sizeof h, MPI_BYTE, src, TAG_HEADER, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    tr_tile t = tr_grid_tile(&s->g, j);
    if (h.status) {
      tr_error e;
      snprintf(e.msg, sizeof e.msg, "%s", h.msg);
      fail(s, h.status, &e);
      continue;
    }
    MPI_Recv(s->recvbuf, (int)(t.rows * t.cols), MPI_FLOAT, src, TAG_CELLS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    write_tile(s, &t, s->recvbuf);
  }
}

static void send_tile(const tr_tile *t, int st, const tr_error *e, const float *cells) {
  tile_header h;
  memset(&h, 0, sizeof h);
  h.tile = t->index;
  h.status = st;
  if (st) snprintf(h.msg, sizeof h.msg, "%.500s", e->msg);
  MPI_Send(&h, sizeof h, MPI_BYTE, 0, TAG_HEADER, MPI_COMM_WORLD);
  if (!st) MPI_Send(cells, (int)(t->rows * t->cols), MPI_FLOAT, 0, TAG_CELLS, MPI_COMM_WORLD);
}
#else
static void drain_remote(run_state *s, int64_t upto) {
  s->next_remote = upto;
}
static void send_tile(const tr_tile *t, int st, const tr_error *e, const float *cells) {
  (void)t, (void)st, (void)e, (void)cells;
}
#endif

/* Reads and computes one tile into outbuf. */
static int compute_tile(run_state *s, const tr_tile *t, float *inbuf, float *outbuf, tr_error *e) {
  int st;
#pragma omp critical(tr_exec_read)
  st = tr_input_read_f32(s->in, t->row0 - 1, t->col0 - 1, t->rows + 2, t->cols + 2, inbuf, t->cols + 2, e);
  if (st) return st;
  if (!s->ft) {
    tr_window w = {inbuf, t->cols + 2, t->rows, t->cols, t->row0, t->col0, s->in->rows, s->in->cols};
    if (s->job->fn(s->job->params, &w, 0, t->rows, outbuf) != 0)
      return tr_fail(e, TR_EINTERNAL, "%s kernel failed on tile %lld", s->job->name, (long long)t->index);
    return TR_OK;
  }
  ft_block b = {t->index, t->rows, t->cols, 1, t->row0, t->col0, inbuf, t->cols + 2, sizeof(float),
                FT_TYPE_F32, sizeof(float)};
  ft_status fs;
  int rc = ft_run_block(s->ft, s->ftk, s->kctx, s->kctx_size, &b, outbuf, &fs);
  if (rc) return tr_fail(e, TR_EFT, "fault tolerance: tile %lld: %s", (long long)t->index, fs.msg[0] ? fs.msg : ft_strerror(rc));
  return TR_OK;
}

/* The tile loop of one rank. */
static void run_tiles(run_state *s) {
  const int threads = s->run->threads ? s->run->threads : omp_get_num_procs();
  const int64_t per = s->ft_master_only ? 1 : s->nranks;
  const int64_t mine = s->ft_master_only ? s->ntiles : (s->ntiles - s->rank + per - 1) / per;
#pragma omp parallel num_threads(threads)
  {
    const int64_t in_stride = s->tile + 2;
    float *inbuf = malloc((size_t)(in_stride * in_stride) * sizeof(float));
    float *outbuf = malloc((size_t)(s->tile * s->tile) * sizeof(float));
#pragma omp for ordered schedule(dynamic, 1)
    for (int64_t k = 0; k < mine; k++) {
      const int64_t i = s->ft_master_only ? k : s->rank + k * per;
      tr_tile t = tr_grid_tile(&s->g, i);
      tr_error e = {{0}};
      int st, failed;
#pragma omp atomic read
      failed = s->status;
      if (!inbuf || !outbuf) st = tr_fail(&e, TR_ENOMEM, "out of memory for tile buffers");
      else if (failed && s->rank == 0) st = failed; /* rank 0 already failed: skip the work */
      else st = compute_tile(s, &t, inbuf, outbuf, &e);
      if (!st && s->stats)
        tr_tile_stats_of(&s->stats[i], outbuf, t.rows * t.cols, s->job->dst_has_nodata, s->job->dst_nodata);
#pragma omp ordered
      {
        if (s->rank == 0) {
          drain_remote(s, i);
          if (st) fail(s, st, &e);
          else write_tile(s, &t, outbuf);
          s->next_remote = i + 1;
        } else {
          send_tile(&t, st ? st : s->status, st ? &e : &s->first, outbuf);
          if (st) fail(s, st, &e);
        }
      }
    }
    free(inbuf);
    free(outbuf);
  }
  if (s->rank == 0) drain_remote(s, s->ntiles);
}

static int ft_setup(run_state *s, tr_error *err) {
  tr_inject inj;
  int st = tr_inject_parse(s->run->inject, &inj, err);
  if (st) return st;
  s->ftk = ft_kernel_named(s->job->name);
  if (!s->ftk) return tr_fail(err, TR_EINTERNAL, "kernel '%s' is not registered with libft", s->job->name);
  s->kctx_size = sizeof(ft_kctx_head) + s->job->params_size;
  s->kctx = calloc(1, s->kctx_size);
  if (!s->kctx) return tr_fail(err, TR_ENOMEM, "out of memory");
  ft_kctx_head h = {s->in->rows, s->in->cols};
  memcpy(s->kctx, &h, sizeof h);
  memcpy(s->kctx + sizeof h, s->job->params, s->job->params_size);
  ft_opts o;
  ft_opts_init(&o);
  o.mode = s->run->ft_basic ? FT_MODE_DUAL_BASIC : FT_MODE_DUAL_FAST;
  o.workers = s->run->threads > 1 ? s->run->threads : 0;
  o.tolerance = s->run->ft_tolerance;
  o.error_rate = s->run->ft_error_rate;
  o.kernels = tr_ft_kernels;
  o.n_kernels = sizeof tr_ft_kernels / sizeof *tr_ft_kernels;
  o.inject = inj.ft;
  if (inj.ft.stall || inj.ft.kill) o.timeout_ms = 2000;
#ifdef TERRAFORT_HAVE_MPI
  MPI_Comm world = MPI_COMM_WORLD;
  if (s->nranks > 1) o.mpi_comm = &world;
#endif
  char msg[256] = "";
  int rc = ft_ctx_create(&o, &s->ft, msg, sizeof msg);
  if (rc) return tr_fail(err, rc == FT_ERR_INVAL ? TR_EUSAGE : TR_EFT, "fault tolerance: %s", msg[0] ? msg : ft_strerror(rc));
  return TR_OK;
}

static int ft_finish(run_state *s, tr_error *err) {
  int st = TR_OK;
  if (s->ft && ft_ctx_role(s->ft) == FT_ROLE_MASTER && s->run->ft_report) {
    ft_report r;
    ft_report_get(s->ft, &r);
    FILE *f = fopen(s->run->ft_report, "w");
    if (!f || ft_report_json(&r, f) != 0)
      st = tr_fail(err, TR_EOUTPUT, "cannot write fault-tolerance report '%s'", s->run->ft_report);
    if (f) fclose(f);
  }
  ft_ctx_destroy(s->ft);
  s->ft = NULL;
  return st;
}

int tr_run_local(const tr_run_opts *run, tr_input *in, const tr_local_job *job, const char *dst, tr_error *err) {
  if (run->threads < 0) return tr_fail(err, TR_EUSAGE, "--threads must be 0 (all cores) or more");
  if (run->tile_size < 0 || run->tile_size > TR_MAX_TILE)
    return tr_fail(err, TR_EUSAGE, "--tile-size must be between 1 and %d", TR_MAX_TILE);
  run_state s;
  memset(&s, 0, sizeof s);
  s.run = run;
  s.in = in;
  s.job = job;
  s.tile = run->tile_size ? run->tile_size : TR_DEFAULT_TILE;
  s.rank = tr_dist_rank();
  s.nranks = tr_dist_size();
  tr_grid_init(&s.g, in->rows, in->cols, s.tile);
  s.ntiles = tr_grid_count(&s.g);
  s.ft_master_only = run->ft == TR_FT_DUAL && s.nranks > 1;

  int st = TR_OK;
  if (s.rank == 0)
    st = tr_output_create(&s.out, in, dst, run->format, run->creation_options, GDT_Float32, job->dst_has_nodata,
                          job->dst_nodata, err);
  const int want_stats = run->stats || run->stats_json;
  if (!st) {
    s.stats = want_stats ? calloc((size_t)s.ntiles, sizeof *s.stats) : NULL;
    /* only rank 0 receives other ranks' tiles */
    const int receives = s.rank == 0 && s.nranks > 1 && !s.ft_master_only;
    s.recvbuf = receives ? malloc((size_t)(s.tile * s.tile) * sizeof(float)) : NULL;
    if ((want_stats && !s.stats) || (receives && !s.recvbuf)) st = tr_fail(err, TR_ENOMEM, "out of memory");
  }
  if (!st && run->ft == TR_FT_DUAL) st = ft_setup(&s, err);
  st = tr_dist_agree(st, err);
  if (st) goto done;

  if (s.ft && ft_ctx_role(s.ft) == FT_ROLE_WORKER) {
    int rc = ft_serve(s.ft);
    if (rc) s.status = tr_fail(&s.first, TR_EFT, "fault tolerance worker: %s", ft_strerror(rc));
  } else {
    if (s.rank == 0 && run->progress && !run->progress(0.0, NULL, run->progress_user))
      s.status = tr_fail(&s.first, TR_EINTERRUPTED, "interrupted");
    run_tiles(&s);
  }
  if (s.ft) {
    int fst = ft_finish(&s, &s.first);
    if (!s.status) s.status = fst;
  }
  if (s.status && err) *err = s.first;
  st = tr_dist_agree(s.status, err);
  if (!st && want_stats)
    st = tr_dist_agree(tr_stats_publish(run, s.rank == 0 ? s.out.band : NULL, s.stats, s.ntiles, err), err);
  if (!st && s.rank == 0) st = tr_output_commit(&s.out, err);
  st = tr_dist_agree(st, err);

done:
  if (s.ft) ft_finish(&s, NULL);
  if (st && s.rank == 0 && s.out.final_path) tr_output_abort(&s.out);
  free(s.kctx);
  free(s.stats);
  free(s.recvbuf);
  return st;
}
