/*
 * executor.c - the local runner: kernels of the table over the tile grid on
 * threads, MPI ranks and dual-redundant fault tolerance, in one tile loop.
 *
 * Each rank owns a list of tiles by the owner rule (core/grid.h); under --ft
 * dual with MPI, rank 0 is libft's master and owns all tiles while the other
 * ranks serve as its workers. OpenMP threads take the rank's tiles in order
 * (dynamic schedule): read the tile's window with the kernel's halo under the
 * input lock, compute it (at the launch point, local/launch.h: CPU or GPU,
 * --ft off or replay; or through ft_run_block for --ft dual)
 * into a slot of the reorder window (reorder.h), and go on to the next tile;
 * finished tiles reach the sink (io/sink.h) in tile order from whichever
 * thread is free, and it writes or sends them. Reading, computing and writing
 * different tiles overlap, and no thread spins waiting for another's write.
 *
 * libft finds kernels by name: its registry is built from the kernel table
 * with one adapter for all rows; what travels to a worker is a small header
 * (the row's index and the raster's size) followed by the kernel's params.
 *
 * Memory: per thread (tile + 2 halo)^2 floats in, 2 x threads slots of
 * tile^2 cells out, one
 * receive buffer on rank 0, statistics partials per tile, and the GDAL block
 * cache; nothing grows with the raster. --mem checks that against its cap
 * and shrinks the cache to fit (local_memory).
 *
 * A source run (tr_run_kernel_source: interpolation) is the same loop with
 * one difference at the read: the tile's input is the bytes the source
 * makes for it (its points), handed to the kernel as w->aux instead of a
 * window; under --ft dual they ride in libft's per-block kernel context
 * after the params, so a worker rank needs nothing else.
 */
#include "executor.h"

#include <gdal.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "dist.h"
#include "step.h"
#include "edac.h"
#include "ft.h"
#include "kernel.h"
#include "launch.h"
#include "mem_limit.h"
#include "reorder.h"
#include "report_json.h"
#include "run.h"
#include "side_file.h"

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>
#endif

/* ------------------------------------------------ libft kernel registry */

/* What libft carries to a worker ahead of the kernel's params. */
typedef struct {
  int64_t kernel;                 /* index in the kernel table */
  int64_t raster_rows, raster_cols;
  int64_t aux_size;               /* a source's tile input, after the params */
  int64_t gpu;                    /* 1: replicas run the row's GPU version (--device gpu|auto) */
  int64_t reserved;
} ft_kctx_head;                   /* 48 bytes: params start 16-byte aligned */

/* Where a source's tile input starts in a libft kernel context. */
static size_t aux_offset(const tr_kernel *k) { return sizeof(ft_kctx_head) + ((k->params_size + 15) & ~(size_t)15); }

/* --ft dual on the GPU: each thread that computes replicas (libft's
 * workers) has its own stream and device buffers, so the two replicas of a
 * sub-block, which libft gives to two different workers, are two launches
 * on separate device buffers. The handles are opened on a thread's first
 * replica and closed together when the run's libft context ends
 * (dual_gpu_close_all); a thread whose handle belongs to an earlier
 * generation opens a new one. */
typedef struct {
  tr_gpu *g;
  size_t in_bytes, out_bytes;
  unsigned gen;
} dual_gpu;

static _Thread_local dual_gpu tls_gpu;
static pthread_mutex_t dual_mu = PTHREAD_MUTEX_INITIALIZER;
static tr_gpu **dual_open; /* every handle of this generation */
static size_t dual_n, dual_cap;
static unsigned dual_gen = 1;
static int64_t dual_gpu_faults; /* launches the device failed (device.h), this process */
static double dual_gpu_timeout_ms = FT_TIMEOUT_RUN_MS; /* a launch's deadline (--ft-timeout) */

/* This thread's handle, with room for in_bytes in and out_bytes out; NULL
 * when none can be had (the replica then runs on the CPU). */
static tr_gpu *dual_gpu_for(size_t in_bytes, size_t out_bytes) {
  pthread_mutex_lock(&dual_mu);
  dual_gpu *t = &tls_gpu;
  if (t->gen != dual_gen) *t = (dual_gpu){NULL, 0, 0, dual_gen};
  if (t->g && (in_bytes > t->in_bytes || out_bytes > t->out_bytes)) {
    for (size_t i = 0; i < dual_n; i++)
      if (dual_open[i] == t->g) dual_open[i] = dual_open[--dual_n];
    tr_gpu_close(t->g);
    t->g = NULL;
  }
  if (!t->g && dual_n == dual_cap) {
    const size_t cap = dual_cap ? 2 * dual_cap : 16;
    tr_gpu **p = realloc(dual_open, cap * sizeof *p);
    if (p) {
      dual_open = p;
      dual_cap = cap;
    }
  }
  char why[256];
  if (!t->g && dual_n < dual_cap && tr_gpu_open(&t->g, in_bytes, out_bytes, dual_gpu_timeout_ms, why, sizeof why) == 0) {
    dual_open[dual_n++] = t->g;
    t->in_bytes = in_bytes;
    t->out_bytes = out_bytes;
  }
  tr_gpu *g = t->g;
  pthread_mutex_unlock(&dual_mu);
  return g;
}

/* After the run's libft context is gone (no replica computes): every
 * handle closed, the next run's threads open new ones. */
static void dual_gpu_close_all(void) {
  pthread_mutex_lock(&dual_mu);
  for (size_t i = 0; i < dual_n; i++) tr_gpu_close(dual_open[i]);
  dual_n = 0;
  dual_gen++;
  pthread_mutex_unlock(&dual_mu);
}

static int ft_adapt(const void *kctx, const ft_block *b, int64_t row0, int64_t nrows, void *out) {
  const ft_kctx_head *h = kctx;
  const tr_kernel *k = tr_kernel_at((size_t)h->kernel);
  if (!k) return -1;
  tr_window w = {b->in, b->in_stride, b->halo, b->rows, b->cols, b->row_off, b->col_off, h->raster_rows,
                 h->raster_cols, h->aux_size ? (const unsigned char *)kctx + aux_offset(k) : NULL};
  const void *params = (const unsigned char *)kctx + sizeof *h;
  if (h->gpu && !tr_gpu_lost()) {
    const size_t cell = (size_t)GDALGetDataTypeSizeBytes(k->out_type) * (size_t)k->bands;
    const size_t in_bytes = (size_t)((b->rows + 2 * b->halo) * b->in_stride) * sizeof(float);
    tr_gpu *g = dual_gpu_for(in_bytes, (size_t)(b->rows * b->cols) * cell);
    char why[256];
    const int rc = g ? tr_gpu_run_rows(g, k, params, &w, row0, nrows, out, (size_t)(nrows * b->cols) * cell, 0, why,
                                       sizeof why)
                     : 1;
    if (rc == 0) return 0;
    /* declined (1), a device fault (this replica and every later one run
     * on the CPU; the other replica and the comparison are unaffected), or
     * no stream: the CPU computes the replica */
    if (rc == TR_GPU_FAULT) __atomic_add_fetch(&dual_gpu_faults, 1, __ATOMIC_RELAXED);
  }
  return k->cpu(params, &w, row0, nrows, out);
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
  tr_launcher *launch;   /* every mode but --ft dual */
  ft_kernel *ftk;        /* registry built from the table */
  unsigned char *kctx;   /* ft_kctx_head + params */
  size_t kctx_size;
  const tr_source *src;  /* a source run, or NULL: tiles read the raster */
  tr_edac edac_start;    /* --ft dual: the machine's EDAC counters at the start (edac.h) */
  int gpu;               /* --ft dual: replicas run on this rank's GPU */
  int64_t gpu_faults_start; /* dual_gpu_faults when the run began */
} run_state;

/* One thread's buffers. */
typedef struct {
  float *in;
  tr_bytes aux;   /* a source's tile input */
  tr_bytes kctx;  /* --ft dual over a source: head + params + aux */
} tile_bufs;

/* A source's input for tile t into tb->aux; under --ft dual also the
 * per-block kernel context that carries it. */
static int source_input(run_state *s, const tr_tile *t, tile_bufs *tb, tr_error *e) {
  int st = s->src->tile_input(s->src->ctx, t, &tb->aux, e);
  if (st || !s->ft) return st;
  const size_t off = aux_offset(s->k), need = off + tb->aux.len;
  if (tb->kctx.cap < need) {
    void *p = realloc(tb->kctx.p, need);
    if (!p) return tr_fail(e, TR_ENOMEM, "out of memory for tile %lld's input", (long long)t->index);
    tb->kctx.p = p;
    tb->kctx.cap = need;
  }
  unsigned char *k = tb->kctx.p;
  memcpy(k, s->kctx, s->kctx_size);
  memset(k + s->kctx_size, 0, off - s->kctx_size);
  ((ft_kctx_head *)k)->aux_size = (int64_t)tb->aux.len;
  memcpy(k + off, tb->aux.p, tb->aux.len);
  tb->kctx.len = need;
  return TR_OK;
}

static ft_type ft_type_of(const tr_kernel *k) {
  if (k->bands == 1 && k->out_type == GDT_Float32) return FT_TYPE_F32;
  if (k->bands == 1 && k->out_type == GDT_Float64) return FT_TYPE_F64;
  return FT_TYPE_BYTES;
}

/* A reorder slot: the tile's outcome, then its cells (64-byte aligned). */
typedef struct {
  int status;
  tr_error e;
} slot_head;
#define SLOT_HEAD ((sizeof(slot_head) + 63) / 64 * 64)

/* A tile at the launch point: what it asks for after a memory failure took
 * pages of the tile's buffers (launch.h, tr_launch_io). */
typedef struct {
  run_state *s;
  const tr_tile *t;
  tr_reorder *ro;
  int64_t k;      /* the tile's number in the reorder window */
  slot_head *sh;  /* its reorder slot, renewed here */
} tile_io;

/* Tile t's window into inbuf (a source's tiles read nothing here). */
static pthread_mutex_t io_mu = PTHREAD_MUTEX_INITIALIZER;

void tr_exec_io_lock(void) { pthread_mutex_lock(&io_mu); }

void tr_exec_io_unlock(void) { pthread_mutex_unlock(&io_mu); }

static int read_window(run_state *s, const tr_tile *t, float *inbuf, tr_error *e) {
  const int64_t h = s->k->halo, stride = t->cols + 2 * h;
  tr_input *in = &s->job->in;
  /* a direct input (raster.h) is read outside GDAL: threads read at once */
  if (in->direct) return tr_input_read_f32(in, t->row0 - h, t->col0 - h, t->rows + 2 * h, stride, inbuf, stride, e);
  tr_exec_io_lock();
  const int st = tr_input_read_f32(in, t->row0 - h, t->col0 - h, t->rows + 2 * h, stride, inbuf, stride, e);
  tr_exec_io_unlock();
  return st;
}

static int io_read(void *user, float *in, tr_error *e) {
  tile_io *io = user;
  return io->s->src ? TR_OK : read_window(io->s, io->t, in, e);
}

static void *io_renew_out(void *user, size_t *retired) {
  tile_io *io = user;
  slot_head *sh = tr_reorder_renew(io->ro, io->k);
  if (!sh) return NULL;
  *retired = io->ro->buf_bytes;
  io->sh = sh;
  return (unsigned char *)sh + SLOT_HEAD;
}

/* Reads and computes one tile into outbuf (slot: the launcher's, NULL
 * under --ft dual; io: its hooks, which may move the tile to another
 * reorder buffer). */
static int compute_tile(run_state *s, const tr_tile *t, tile_bufs *tb, tr_launch_slot *slot, void *outbuf,
                        tile_io *io, tr_error *e) {
  const int64_t h = s->k->halo, stride = t->cols + 2 * h;
  tr_input *in = &s->job->in;
  /* the slot's, which a memory failure may have replaced since the last tile */
  float *inbuf = slot ? slot->in : tb->in;
  int st = s->src ? source_input(s, t, tb, e) : read_window(s, t, inbuf, e);
  if (st) return st;
  if (!s->ft) {
    tr_window w = {inbuf, stride, h, t->rows, t->cols, t->row0, t->col0, in->rows, in->cols, s->src ? tb->aux.p : NULL};
    const tr_launch_io lio = {io_read, io_renew_out, io};
    return tr_launch_tile(s->launch, slot, s->params, &w, t->index, outbuf, &lio, e);
  }
  const size_t cell = (size_t)GDALGetDataTypeSizeBytes(s->k->out_type) * (size_t)s->k->bands;
  ft_block b = {t->index, t->rows, t->cols, h, t->row0, t->col0, inbuf, stride, sizeof(float), ft_type_of(s->k), cell};
  ft_status fs;
  const void *kctx = s->src ? tb->kctx.p : s->kctx;
  const size_t kctx_size = s->src ? tb->kctx.len : s->kctx_size;
  int rc = ft_run_block(s->ft, &s->ftk[s->kindex], kctx, kctx_size, &b, outbuf, &fs);
  if (rc)
    return tr_fail(e, TR_EFT, "fault tolerance: tile %lld: %s", (long long)t->index,
                   fs.msg[0] ? fs.msg : ft_strerror(rc));
  return TR_OK;
}

typedef struct {
  run_state *s;
  int64_t per;
} writer_ctx;

static int64_t tile_of(const run_state *s, int64_t per, int64_t k) {
  return s->ft_master_only ? k : s->job->rank + k * per;
}

static void write_slot(void *user, int64_t k, void *buf) {
  writer_ctx *w = user;
  slot_head *h = buf;
  /* under the readers' lock: GDAL's block cache may flush the output's dirty
   * blocks from a thread reading the input, so a write beside a read is two
   * threads in the output dataset (cli_outofcore's small-cache test: 3 of 8
   * slope runs gave other bytes) */
  tr_exec_io_lock();
  tr_sink_put(&w->s->job->sink, tile_of(w->s, w->per, k), h->status, &h->e, (unsigned char *)buf + SLOT_HEAD);
  tr_exec_io_unlock();
}

/* Whether this rank may leave its remaining tiles: the run is cancelled (a
 * signal), or the sink stopped talking, or (rank 0) it failed. A tile left
 * never reaches the sink; rank 0's final drain still takes the other
 * ranks' tiles (tr_sink_drain). The other ranks go on after a failure of
 * their own: their tiles carry it to rank 0, which expects them. */
static int tiles_stop(void *user) {
  const run_state *s = user;
  const tr_sink *sink = &s->job->sink;
  int failed, dead;
#pragma omp atomic read
  failed = sink->status;
#pragma omp atomic read
  dead = sink->dead;
  return dead || (failed && s->job->rank == 0) || (s->run->cancelled && s->run->cancelled(s->run->progress_user));
}

/* The tile loop of one rank: OpenMP threads take tiles in order (dynamic),
 * read and compute each into a slot of the reorder window, and whoever finds
 * the writer's role free hands finished tiles to the sink in order. Each
 * thread asks tiles_stop before each tile, and a thread waiting for a slot
 * asks it every TR_REORDER_POLL_MS (the writer may be held in a long GDAL
 * call): once it says stop, every thread leaves the loop. */
static void run_tiles(run_state *s) {
  tr_job *j = s->job;
  tr_sink *sink = &j->sink;
  const int64_t per = s->ft_master_only ? 1 : j->nranks;
  const int64_t mine = s->ft_master_only ? j->ntiles : tr_grid_owned(j->ntiles, j->rank, j->nranks);
  const int64_t h = s->k->halo, tile = j->grid.tile;
  const size_t cell = sink->cell_bytes;
  writer_ctx wc = {s, per};
  tr_reorder ro;
  const int threads = j->threads;
  if (tr_reorder_init(&ro, 2 * threads, SLOT_HEAD + (size_t)(tile * tile) * cell, write_slot, &wc, tiles_stop, s) !=
      0) {
    /* every owned tile still reaches the sink, as a failure */
    tr_error e;
    const int st = tr_fail(&e, TR_ENOMEM, "out of memory for tile buffers");
    for (int64_t k = 0; k < mine; k++) tr_sink_put(sink, tile_of(s, per, k), st, &e, NULL);
    return;
  }
  int64_t next_k = 0; /* the next tile to take: OpenMP's dynamic schedule by hand, which a thread may leave */
#pragma omp parallel num_threads(threads)
  {
    tile_bufs tb = {0};
    tr_launch_slot *slot = s->launch ? tr_launch_slot_open(s->launch) : NULL;
    /* the launcher's (pinned where a GPU runs); else zeroed: a source's
     * window holds no data, but libft copies it */
    tb.in = s->launch ? (slot ? slot->in : NULL)
                      : calloc((size_t)((tile + 2 * h) * (tile + 2 * h)), sizeof(float));
    for (;;) {
      const int64_t k = __atomic_fetch_add(&next_k, 1, __ATOMIC_RELAXED);
      if (k >= mine) break;
      if (tiles_stop(s)) {
        tr_reorder_stop(&ro);
        break;
      }
      const tr_tile t = tr_grid_tile(&j->grid, tile_of(s, per, k));
      slot_head *sh = tr_reorder_acquire(&ro, k);
      if (!sh) break; /* stopped while waiting */
      void *outbuf = (unsigned char *)sh + SLOT_HEAD;
      int failed;
      sh->e.msg[0] = 0;
#pragma omp atomic read
      failed = sink->status;
      if (!tb.in) sh->status = tr_fail(&sh->e, TR_ENOMEM, "out of memory for tile buffers");
      else if (failed && j->rank == 0) sh->status = failed; /* rank 0 already failed: skip the work */
      else {
        /* the error and outcome go to the slot the tile ends in */
        tile_io io = {s, &t, &ro, k, sh};
        tr_error e = {{0}};
        const int st = compute_tile(s, &t, &tb, slot, outbuf, &io, &e);
        sh = io.sh;
        sh->e = e;
        sh->status = st;
      }
      tr_reorder_done(&ro, k);
    }
    if (s->launch) tr_launch_slot_close(s->launch, slot);
    else free(tb.in);
    free(tb.aux.p);
    free(tb.kctx.p);
  }
  /* tiles were left: the sink's failure, or else the cancel, is the run's */
  if (tr_reorder_stopped(&ro) && !sink->status) {
    tr_error e;
    tr_sink_fail(sink, tr_fail(&e, TR_EINTERRUPTED, "interrupted"), &e);
  }
  tr_reorder_destroy(&ro);
}

/* libft's give_up under mpirun: a rank lost or the run cancelled. */
static int ft_give_up(void *user) { return tr_dist_check(user, NULL) != TR_OK; }

static int ft_setup(run_state *s, const tr_product *prod, tr_error *err) {
  const tr_run_opts *run = s->run;
  const tr_inject *inj = &s->job->inject;
  const size_t n = tr_kernel_count();
  s->ftk = calloc(n, sizeof *s->ftk);
  s->kctx_size = sizeof(ft_kctx_head) + s->k->params_size;
  s->kctx = calloc(1, s->kctx_size);
  if (!s->ftk || !s->kctx) return tr_fail(err, TR_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) s->ftk[i] = (ft_kernel){tr_kernel_at(i)->name, ft_adapt};
  /* --device gpu|auto: the replicas run the row's GPU version on this
   * rank's GPU (tr_gpu_pick), each libft worker with its own stream and
   * device buffers (ft_adapt) */
  int64_t gpu = 0;
  if (run->device != TR_DEVICE_CPU) {
    dual_gpu_timeout_ms = run->ft_timeout_ms > 0 ? run->ft_timeout_ms : FT_TIMEOUT_RUN_MS;
    char why[256] = "";
    int index;
    const int ngpu = tr_gpu_pick(run, &index, why, sizeof why);
    if (ngpu < 0) return tr_fail(err, TR_EUSAGE, "--device: %s", why);
    gpu = ngpu > 0 && tr_gpu_has(s->k);
    if (run->device == TR_DEVICE_GPU && !gpu)
      return tr_fail(err, TR_EUSAGE, "--device gpu: %s",
                     !ngpu ? why : "this command has no GPU version (see terrafort(1), DEVICES)");
  }
  s->gpu = (int)gpu;
  s->gpu_faults_start = __atomic_load_n(&dual_gpu_faults, __ATOMIC_RELAXED);
  ft_kctx_head h = {(int64_t)s->kindex, s->job->in.rows, s->job->in.cols, 0, gpu, 0};
  memcpy(s->kctx, &h, sizeof h);
  memcpy(s->kctx + sizeof h, s->params, s->k->params_size);
  ft_opts o;
  ft_opts_init(&o);
  tr_edac_read(&s->edac_start);
  o.mode = run->ft_basic ? FT_MODE_DUAL_BASIC : FT_MODE_DUAL_FAST;
  /* one worker per thread plus a spare, so a recompute runs beside the
   * replicas' next sub-block instead of queueing behind them (and a stalled
   * or killed worker still leaves two); --threads 1 has no spare */
  o.workers = tr_run_threads(run) + 1;
  if (run->ft_source_profile) ft_opts_source_profile(&o);
  if (run->ft_tolerance > 0) o.tolerance = run->ft_tolerance;
  if (run->ft_error_rate > 0) o.error_rate = run->ft_error_rate;
  o.kernels = s->ftk;
  o.n_kernels = n;
  o.inject = inj->ft;
  o.timeout_ms = run->ft_timeout_ms > 0 ? run->ft_timeout_ms : (inj->ft.stall || inj->ft.kill) ? FT_TIMEOUT_INJECTED_MS : FT_TIMEOUT_RUN_MS;
  /* the tools promise that no cell beyond xi comes from an unverified replica,
   * and that a nodata cell stays nodata exactly under a tolerance */
  o.settle_cells = 1;
  o.has_exact = prod->has_nodata;
  o.exact = prod->nodata;
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
    /* libft's counts after the run's own fields, the EDAC counters last;
     * whole under a temporary name, put in place with the output
     * (io/side_file.h), or a line of the run's (flowgraph) */
    tr_edac end;
    tr_edac_read(&end);
    tr_json *o = tr_json_object();
    tr_json_set(o, "mode", tr_json_str("dual"));
    tr_json_set(o, "kernel", tr_json_str(s->k->name));
    tr_json_set(o, "unit", tr_json_str("tile"));
    tr_json_set(o, "device", tr_json_str(s->gpu ? "gpu" : "cpu"));
    /* gpu_faults: this rank's replicas only (under mpirun the workers'
     * replicas run on their own ranks' GPUs) */
    tr_json_set(o, "gpu_faults",
                tr_json_int(__atomic_load_n(&dual_gpu_faults, __ATOMIC_RELAXED) - s->gpu_faults_start));
    tr_json_ft_report(o, &r);
    tr_json_set(o, "edac", tr_edac_json(&s->edac_start, &end));
    st = tr_side_write_json(s->run->ft_report, s->run->ft_report_append, "fault-tolerance report", &o, 1, err);
    tr_json_free(o);
  }
  ft_ctx_destroy(s->ft);
  s->ft = NULL;
  if (s->gpu) dual_gpu_close_all();
  return st;
}

/* The rest of a run once its job is open (s->job) and its params made (st:
 * how that went, agreed): create the output, run the tiles, finish. */
static int run_job(run_state *s, const tr_product *prod, int st, const char *dst, tr_error *err) {
  tr_job *job = s->job;
  const tr_run_opts *run = s->run;
  /* a source only the writer holds: every tile the writer's as under --ft
   * dual (where the other ranks are its replicas' workers, fed their input) */
  const int writer_only = s->src && s->src->writer_only && job->nranks > 1;
  s->ft_master_only = (run->ft == TR_FT_DUAL && job->nranks > 1) || writer_only;
  if (!st) st = tr_job_create(job, dst, prod, s->ft_master_only ? TR_SINK_RANK0 : TR_SINK_SPREAD, 0.0, err);
  else tr_job_finish(job, st, err);
  if (st) {
    free(s->params);
    return st;
  }

  int status = TR_OK;
  tr_error e = {{0}};
  if (run->ft == TR_FT_DUAL) status = ft_setup(s, prod, &e);
  else status = tr_launcher_open(&s->launch, run, &job->inject, s->k, job->grid.tile, &e);
  status = tr_step_end(run, status, &e);
  /* a rank could not start (no GPU, libft refused): no rank computes, and
   * the writer must not wait for the others' tiles */
  if (status) tr_sink_none(&job->sink, status, &e);
  if (!status && s->ft && ft_ctx_role(s->ft) == FT_ROLE_WORKER) {
    int rc = ft_serve(s->ft);
    if (rc && tr_dist_check(run, &e)) status = tr_dist_check(run, &e);
    else if (rc) status = tr_fail(&e, TR_EFT, "fault tolerance worker: %s", ft_strerror(rc));
  } else if (!status) {
    if (job->rank == 0 && run->progress && !run->progress(0.0, NULL, run->progress_user))
      tr_sink_fail(&job->sink, tr_fail(&e, TR_EINTERRUPTED, "interrupted"), &e);
    if (!writer_only || job->rank == 0) run_tiles(s);
  }
  if (s->ft) {
    int fst = ft_finish(s, &e);
    if (!status) status = fst;
  }
  if (s->launch) {
    /* The writer takes the other ranks' last tiles first: they may be
     * waiting to hand them over (a tile past MPI's eager size completes
     * only when received), and would never reach the report's collective
     * below while the writer waits there for them. */
    if (job->rank == 0 && job->nranks > 1) (void)tr_sink_drain(&job->sink, NULL);
    /* its report is collective only when every rank opened one */
    int lst = tr_launcher_close(s->launch, job->rank, status == TR_OK ? job->nranks : 1, &e);
    if (!status) status = lst;
  }
  st = tr_job_finish(job, status, &e);
  if (st && err) *err = e;
  free(s->params);
  free(s->kctx);
  free(s->ftk);
#ifdef __GLIBC__
  /* the tile buffers were freed in the workers' arenas, which glibc keeps:
   * a pipeline's next stage would start on top of them (flowgraph's sca
   * after the D-infinity slope: 57-114 MB more peak at 8000²) */
  malloc_trim(0);
#endif
  return st;
}

/* GDAL's block cache a local run needs: the input blocks one row of tiles
 * reads (a tile's rows, its halo and a partial block at each end, in whole
 * blocks, so that the next row of tiles finds the blocks it shares still
 * decoded), plus 8 MiB for the output's blocks on their way to the file,
 * within 32..64 MiB. A direct read (io/raster.h) needs no cache for its
 * input. More costs memory and nothing else: by hand at 8000², tiled ZSTD
 * aspect peaked at 188-218 MB with GDAL's default 64 MB and 156-165 MB with
 * 40 MB in the same time; below the rows' blocks (24 MB) a DEFLATE slope took
 * 3.6-3.8 s instead of 2.5-2.9 s, decoding blocks again. terrain_local_cache_plan
 * checks the plan on real runs. */
static int local_cache_mb(const tr_job *j, const tr_kernel *k) {
  const int64_t mib = (int64_t)1 << 20;
  int64_t need = 8 * mib;
  const tr_input *in = &j->in;
  if (!in->direct && in->band) {
    int bw = 0, bh = 0;
    GDALGetBlockSize(in->band, &bw, &bh);
    if (bh < 1) bh = 1;
    int64_t rows = j->grid.tile + 2 * k->halo + 2 * ((int64_t)bh - 1);
    rows = (rows + bh - 1) / bh * bh;
    if (rows > in->rows) rows = in->rows;
    need += rows * in->cols * GDALGetDataTypeSizeBytes(in->type);
  }
  if (need < 32 * mib) need = 32 * mib;
  if (need > 64 * mib) need = 64 * mib;
  return (int)(need / mib);
}

/* --mem for a local run: what the tile loop keeps (above: per thread the
 * input window and, with --ft dual, a second replica's buffers; 2 slots per
 * thread of output; rank 0's receive buffer) and a fixed allowance for the
 * process (libraries, MPI) must fit, or the run is refused with the minimum;
 * GDAL's block cache gets what is left, up to local_cache_mb and at least
 * 8 MB; the writer's row of output tiles (tr_job_writer_cache) is the sink's
 * own buffer, counted in the loop. Without --mem: local_cache_mb. */
static int local_memory(const tr_run_opts *run, tr_job *j, const tr_kernel *k, const tr_product *prod, int64_t held,
                        tr_error *err) {
  const int64_t writer = tr_job_writer_cache(j, prod); /* a row of output tiles (run/run.h) */
  const int want_mb = local_cache_mb(j, k);
  if (run->mem <= 0) {
    tr_job_cache_plan(j, want_mb);
    return TR_OK;
  }
  const int64_t tile = j->grid.tile, h = k->halo, th = j->threads, mib = (int64_t)1 << 20;
  const int64_t cell = (int64_t)GDALGetDataTypeSizeBytes(prod->type) * (prod->bands > 0 ? prod->bands : 1);
  const int64_t win = (tile + 2 * h) * (tile + 2 * h) * (int64_t)sizeof(float), out = tile * tile * cell;
  const int reps = run->ft == TR_FT_DUAL ? 2 : 1;
  const int64_t loop = th * reps * (win + out) + 2 * th * out + out + writer + 64 * mib + held;
  char have[32];
  if (run->mem < loop + 8 * mib)
    return tr_fail(err, TR_ENOMEM,
                   "%s needs at least %.0f MiB of memory per process with %lld thread%s and tiles of %lld cells%s "
                   "(--mem is %s): give more --mem, fewer --threads or a smaller --tile-size",
                   k->name, (double)(loop + 8 * mib) / (double)mib, (long long)th, th == 1 ? "" : "s",
                   (long long)tile, held > 0 ? ", its input's points included" : "", tr_size_text(run->mem, have));
  const int64_t cache = run->mem - loop;
  tr_job_cache_plan(j, (int)((cache < want_mb * mib ? cache : want_mb * mib) / mib));
  return TR_OK;
}

/* The band's exact range for prepare (tr_run_kernel_ranged): this rank's
 * share of the rows, then the minimum of (min, -max) over the ranks. */
static int band_range(const tr_run_opts *run, tr_job *job, tr_error *err) {
  tr_input *in = &job->in;
  const int64_t r0 = in->rows * job->rank / job->nranks, r1 = in->rows * (job->rank + 1) / job->nranks;
  double v[2] = {INFINITY, INFINITY};
  int st = TR_OK;
  if (r1 > r0) {
    double mm[2];
    int valid = 0;
    st = tr_input_minmax_rows(in, r0, r1 - r0, mm, &valid, err);
    if (!st && valid) v[0] = mm[0], v[1] = -mm[1];
  }
  st = tr_step_end(run, st, err);
  if (!st) st = tr_dist_min(run, v, 2, err);
  if (st) return st;
  in->range_known = 1;
  in->range_valid = v[0] <= -v[1];
  in->range_min = v[0];
  in->range_max = -v[1];
  return TR_OK;
}

int tr_run_kernel(const tr_run_opts *run, const char *kernel, tr_prepare_fn prepare, const void *opts,
                  const char *src, const char *dst, tr_error *err) {
  return tr_run_kernel_ranged(run, kernel, NULL, prepare, opts, src, dst, err);
}

int tr_run_kernel_ranged(const tr_run_opts *run, const char *kernel, tr_wants_range_fn wants, tr_prepare_fn prepare,
                         const void *opts, const char *src, const char *dst, tr_error *err) {
  run_state s;
  memset(&s, 0, sizeof s);
  s.run = run;
  s.k = tr_kernel_find(kernel, &s.kindex);
  if (!s.k) return tr_fail(err, TR_EINTERNAL, "no kernel named '%s' in the kernel table", kernel);
  tr_job job;
  int st = tr_job_open(&job, run, src, err);
  if (st) return st; /* agreed */
  s.job = &job;
  if (wants) {
    int w = 0;
    wants(&job.in, opts, &w);
    double any = -(double)w; /* wanted on any rank: on all (the minimum of -w) */
    st = tr_dist_min(run, &any, 1, err);
    if (!st && any < 0) st = band_range(run, &job, err);
  }
  s.params = calloc(1, s.k->params_size ? s.k->params_size : 1);
  tr_product prod = {s.k->out_type, s.k->bands, 0, 0, GDT_Unknown};
  if (!st) st = s.params ? prepare(&job.in, opts, s.params, &prod, err) : tr_fail(err, TR_ENOMEM, "out of memory");
  if (!st) st = local_memory(run, &job, s.k, &prod, 0, err);
  st = tr_step_end(run, st, err);
  return tr_stage_end(run, run_job(&s, &prod, st, dst, err), err);
}

int tr_run_kernel_source(const tr_run_opts *run, const char *kernel, const tr_source *src, const char *dst,
                         tr_error *err) {
  run_state s;
  memset(&s, 0, sizeof s);
  s.run = run;
  s.src = src;
  s.k = tr_kernel_find(kernel, &s.kindex);
  if (!s.k || s.k->halo != 0 || s.k->out_type != src->prod.type || s.k->bands != src->prod.bands)
    return tr_fail(err, TR_EINTERNAL, "kernel '%s' cannot run over a source", kernel);
  tr_job job;
  int st = tr_job_open_grid(&job, run, src->grid, err);
  if (st) return st; /* every rank's own: the same on every rank */
  s.job = &job;
  s.params = malloc(s.k->params_size ? s.k->params_size : 1);
  if (s.params) memcpy(s.params, src->params, s.k->params_size);
  else st = tr_fail(err, TR_ENOMEM, "out of memory");
  if (!st) st = local_memory(run, &job, s.k, &src->prod, src->held, err);
  st = tr_step_end(run, st, err);
  return tr_stage_end(run, run_job(&s, &src->prod, st, dst, err), err);
}
