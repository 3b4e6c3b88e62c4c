/*
 * executor.c - the local runner: kernels of the table over the tile grid on
 * threads, MPI ranks and dual-redundant fault tolerance, in one tile loop.
 *
 * Each rank owns a list of tiles by the owner rule (core/grid.h); under --ft
 * dual with MPI, rank 0 is libft's master and owns all tiles while the other
 * ranks serve as its workers. OpenMP threads take the rank's tiles in order
 * (dynamic schedule): read the tile's window with the kernel's halo under the
 * input lock, compute it (directly, or through ft_run_block for --ft dual),
 * then enter the ordered region, where the tile goes to the sink
 * (io/sink.h), which writes or sends it in tile order. Reading tile i+1,
 * computing tile i and writing tile i-1 overlap.
 *
 * libft finds kernels by name: its registry is built from the kernel table
 * with one adapter for all rows; what travels to a worker is a small header
 * (the row's index and the raster's size) followed by the kernel's params.
 *
 * Memory: per thread (tile + 2 halo)^2 floats in and tile^2 cells out, one
 * receive buffer on rank 0, statistics partials per tile, and the GDAL block
 * cache; nothing grows with the raster.
 */
#include "executor.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "ft.h"
#include "kernel.h"
#include "run.h"

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>
#endif

/* ------------------------------------------------ libft kernel registry */

/* What libft carries to a worker ahead of the kernel's params. */
typedef struct {
  int64_t kernel;                 /* index in the kernel table */
  int64_t raster_rows, raster_cols;
  int64_t pad;                    /* params start 16-byte aligned */
} ft_kctx_head;

static int ft_adapt(const void *kctx, const ft_block *b, int64_t row0, int64_t nrows, void *out) {
  const ft_kctx_head *h = kctx;
  const tr_kernel *k = tr_kernel_at((size_t)h->kernel);
  if (!k) return -1;
  tr_window w = {b->in, b->in_stride, b->halo, b->rows, b->cols, b->row_off, b->col_off, h->raster_rows,
                 h->raster_cols};
  return k->cpu((const unsigned char *)kctx + sizeof *h, &w, row0, nrows, out);
}

/* ---------------------------------------------------------- run state */

typedef struct {
  const tr_run_opts *run;
  tr_job *job;
  const tr_kernel *k;
  size_t kindex;
  unsigned char *params;
  int ft_master_only;    /* --ft dual under MPI: rank 0 computes everything */
  ft_ctx *ft;
  ft_kernel *ftk;        /* registry built from the table */
  unsigned char *kctx;   /* ft_kctx_head + params */
  size_t kctx_size;
} run_state;

static ft_type ft_type_of(const tr_kernel *k) {
  if (k->bands == 1 && k->out_type == GDT_Float32) return FT_TYPE_F32;
  if (k->bands == 1 && k->out_type == GDT_Float64) return FT_TYPE_F64;
  return FT_TYPE_BYTES;
}

/* Reads and computes one tile into outbuf. */
static int compute_tile(run_state *s, const tr_tile *t, float *inbuf, void *outbuf, tr_error *e) {
  const int64_t h = s->k->halo, stride = t->cols + 2 * h;
  tr_input *in = &s->job->in;
  int st;
#pragma omp critical(tr_exec_read)
  st = tr_input_read_f32(in, t->row0 - h, t->col0 - h, t->rows + 2 * h, stride, inbuf, stride, e);
  if (st) return st;
  if (!s->ft) {
    tr_window w = {inbuf, stride, h, t->rows, t->cols, t->row0, t->col0, in->rows, in->cols};
    if (s->k->cpu(s->params, &w, 0, t->rows, outbuf) != 0)
      return tr_fail(e, TR_EINTERNAL, "%s kernel failed on tile %lld", s->k->name, (long long)t->index);
    return TR_OK;
  }
  const size_t cell = (size_t)GDALGetDataTypeSizeBytes(s->k->out_type) * (size_t)s->k->bands;
  ft_block b = {t->index, t->rows, t->cols, h, t->row0, t->col0, inbuf, stride, sizeof(float), ft_type_of(s->k), cell};
  ft_status fs;
  int rc = ft_run_block(s->ft, &s->ftk[s->kindex], s->kctx, s->kctx_size, &b, outbuf, &fs);
  if (rc)
    return tr_fail(e, TR_EFT, "fault tolerance: tile %lld: %s", (long long)t->index,
                   fs.msg[0] ? fs.msg : ft_strerror(rc));
  return TR_OK;
}

/* The tile loop of one rank. */
static void run_tiles(run_state *s) {
  tr_job *j = s->job;
  tr_sink *sink = &j->sink;
  const int64_t per = s->ft_master_only ? 1 : j->nranks;
  const int64_t mine = s->ft_master_only ? j->ntiles : tr_grid_owned(j->ntiles, j->rank, j->nranks);
  const int64_t h = s->k->halo, tile = j->grid.tile;
  const size_t cell = sink->cell_bytes;
#pragma omp parallel num_threads(j->threads)
  {
    float *inbuf = malloc((size_t)((tile + 2 * h) * (tile + 2 * h)) * sizeof(float));
    void *outbuf = malloc((size_t)(tile * tile) * cell);
#pragma omp for ordered schedule(dynamic, 1)
    for (int64_t k = 0; k < mine; k++) {
      const int64_t i = s->ft_master_only ? k : j->rank + k * per;
      tr_tile t = tr_grid_tile(&j->grid, i);
      tr_error e = {{0}};
      int st, failed;
#pragma omp atomic read
      failed = sink->status;
      if (!inbuf || !outbuf) st = tr_fail(&e, TR_ENOMEM, "out of memory for tile buffers");
      else if (failed && j->rank == 0) st = failed; /* rank 0 already failed: skip the work */
      else st = compute_tile(s, &t, inbuf, outbuf, &e);
#pragma omp ordered
      tr_sink_put(sink, i, st, &e, outbuf);
    }
    free(inbuf);
    free(outbuf);
  }
}

/* libft's give_up under mpirun: a rank lost or the run cancelled. */
static int ft_give_up(void *user) { return tr_dist_check(user, NULL) != TR_OK; }

static int ft_setup(run_state *s, tr_error *err) {
  const tr_run_opts *run = s->run;
  const tr_inject *inj = &s->job->inject;
  const size_t n = tr_kernel_count();
  s->ftk = calloc(n, sizeof *s->ftk);
  s->kctx_size = sizeof(ft_kctx_head) + s->k->params_size;
  s->kctx = calloc(1, s->kctx_size);
  if (!s->ftk || !s->kctx) return tr_fail(err, TR_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) s->ftk[i] = (ft_kernel){tr_kernel_at(i)->name, ft_adapt};
  ft_kctx_head h = {(int64_t)s->kindex, s->job->in.rows, s->job->in.cols, 0};
  memcpy(s->kctx, &h, sizeof h);
  memcpy(s->kctx + sizeof h, s->params, s->k->params_size);
  ft_opts o;
  ft_opts_init(&o);
  o.mode = run->ft_basic ? FT_MODE_DUAL_BASIC : FT_MODE_DUAL_FAST;
  /* one worker per thread plus a spare, so a recompute runs beside the
   * replicas' next sub-block instead of queueing behind them (and a stalled
   * or killed worker still leaves two); --threads 1 has no spare */
  o.workers = (run->threads > 0 ? run->threads : omp_get_num_procs()) + 1;
  if (run->ft_source_profile) ft_opts_source_profile(&o);
  if (run->ft_tolerance > 0) o.tolerance = run->ft_tolerance;
  if (run->ft_error_rate > 0) o.error_rate = run->ft_error_rate;
  o.kernels = s->ftk;
  o.n_kernels = n;
  o.inject = inj->ft;
  o.timeout_ms = run->ft_timeout_ms > 0 ? run->ft_timeout_ms : (inj->ft.stall || inj->ft.kill) ? 2000 : 10000;
  /* the tools promise that no cell beyond xi comes from an unverified replica */
  o.settle_cells = 1;
  o.give_up = ft_give_up;
  o.give_up_user = (void *)run;
#ifdef TERRAFORT_HAVE_MPI
  MPI_Comm world = MPI_COMM_WORLD;
  if (s->job->nranks > 1) o.mpi_comm = &world;
#endif
  char msg[256] = "";
  int rc = ft_ctx_create(&o, &s->ft, msg, sizeof msg);
  if (rc)
    return tr_fail(err, rc == FT_ERR_INVAL ? TR_EUSAGE : TR_EFT, "fault tolerance: %s",
                   msg[0] ? msg : ft_strerror(rc));
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

int tr_run_kernel(const tr_run_opts *run, const char *kernel, tr_prepare_fn prepare, const void *opts,
                  const char *src, const char *dst, tr_error *err) {
  run_state s;
  memset(&s, 0, sizeof s);
  s.run = run;
  s.k = tr_kernel_find(kernel, &s.kindex);
  if (!s.k) return tr_fail(err, TR_EINTERNAL, "no kernel named '%s' in the kernel table", kernel);
  tr_job job;
  int st = tr_job_open(&job, run, src, err);
  if (st) return st;
  s.job = &job;
  s.params = calloc(1, s.k->params_size ? s.k->params_size : 1);
  tr_product prod = {s.k->out_type, s.k->bands, 0, 0, GDT_Unknown};
  tr_io_cache_default(64);
  st = s.params ? prepare(&job.in, opts, s.params, &prod, err) : tr_fail(err, TR_ENOMEM, "out of memory");
  st = tr_dist_agree(run, st, err);
  s.ft_master_only = run->ft == TR_FT_DUAL && job.nranks > 1;
  if (!st) st = tr_job_create(&job, dst, &prod, s.ft_master_only ? TR_SINK_RANK0 : TR_SINK_SPREAD, 0.0, err);
  else tr_job_finish(&job, st, err);
  if (st) {
    free(s.params);
    return st;
  }

  int status = TR_OK;
  tr_error e = {{0}};
  if (run->ft == TR_FT_DUAL) status = ft_setup(&s, &e);
  status = tr_dist_agree(run, status, &e);
  if (!status && s.ft && ft_ctx_role(s.ft) == FT_ROLE_WORKER) {
    int rc = ft_serve(s.ft);
    if (rc && tr_dist_check(run, &e)) status = tr_dist_check(run, &e);
    else if (rc) status = tr_fail(&e, TR_EFT, "fault tolerance worker: %s", ft_strerror(rc));
  } else if (!status) {
    if (job.rank == 0 && run->progress && !run->progress(0.0, NULL, run->progress_user))
      tr_sink_fail(&job.sink, tr_fail(&e, TR_EINTERRUPTED, "interrupted"), &e);
    run_tiles(&s);
  }
  if (s.ft) {
    int fst = ft_finish(&s, &e);
    if (!status) status = fst;
  }
  st = tr_job_finish(&job, status, &e);
  if (st && err) *err = e;
  free(s.params);
  free(s.kctx);
  free(s.ftk);
  return st;
}
