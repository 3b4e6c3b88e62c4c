/*
 * graph.c - the graph runner (see graph.h): a program of the table on the AAP
 * engine, its input windows from the tile store, its tiles into the sink.
 *
 * The engine assembles fragments after it has finished, each rank its own in
 * fragment order, so Assemble's puts reach the sink in the order it needs.
 * Whatever a rank's Assemble did not put (the engine failed, or an Assemble
 * failed and the engine stopped assembling) is put afterwards as a failure:
 * every rank completes the sink's protocol and rank 0 never waits for a tile
 * that does not come.
 */
#include "graph.h"

#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "memory.h"
#include "run.h"

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>
#endif

/* ------------------------------------------------------------ windows */

float *tr_graph_window(tr_graph_env *env, const tr_aap_frag *f) {
  tr_tile t = {f->id, f->row0, f->col0, f->rows, f->cols};
  return tr_tile_store_get(env->store, &t);
}

void tr_graph_window_done(tr_graph_env *env, const tr_aap_frag *f, float *z) {
  tr_tile t = {f->id, f->row0, f->col0, f->rows, f->cols};
  tr_tile_store_put(env->store, &t, z);
}

float *tr_graph_window_in(tr_graph_env *env, int k, const tr_aap_frag *f) {
  tr_tile t = {f->id, f->row0, f->col0, f->rows, f->cols};
  return tr_tile_store_get(env->inputs[k], &t);
}

void tr_graph_window_in_done(tr_graph_env *env, int k, const tr_aap_frag *f, float *z) {
  tr_tile t = {f->id, f->row0, f->col0, f->rows, f->cols};
  tr_tile_store_put(env->inputs[k], &t, z);
}

/* --------------------------------------------------------------- exec */

typedef struct {
  tr_sink *sink;
  int64_t last_put;   /* the last fragment put, -1 before any */
  pthread_mutex_t mu; /* the program's failure below */
  int64_t fail_frag;  /* lowest fragment that reported a failure, -1 none */
  int fail_status;
  tr_error fail;
} put_state;

int tr_graph_fail(tr_graph_env *env, const tr_aap_frag *f, int status, const char *fmt, ...) {
  put_state *ps = env->runner;
  pthread_mutex_lock(&ps->mu);
  if (ps->fail_frag < 0 || f->id < ps->fail_frag) {
    ps->fail_frag = f->id;
    ps->fail_status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->fail.msg, sizeof ps->fail.msg, fmt, ap);
    va_end(ap);
  }
  pthread_mutex_unlock(&ps->mu);
  return -1;
}

static int env_put(tr_graph_env *env, const tr_aap_frag *f, const void *cells) {
  put_state *ps = env->runner;
  tr_sink_put(ps->sink, f->id, TR_OK, NULL, cells);
  ps->last_put = f->id;
  return ps->sink->status ? -1 : 0;
}

static void set_err(char *err, size_t errlen, const char *msg) {
  if (err && errlen) snprintf(err, errlen, "%s", msg);
}

static int engine_run(const tr_aap_program *p, const tr_aap_layout *L, const tr_graph_engine *eng,
                      tr_aap_stats *stats, char *err, size_t errlen) {
  switch (eng->backend) {
    case TR_GRAPH_THREADS: return tr_aap_run_threads(p, L, &eng->aap, stats, err, errlen);
    case TR_GRAPH_SIM:
      if (!eng->sim) {
        set_err(err, errlen, "graph: the simulator needs sim options");
        return TR_AAP_EINVAL;
      }
      return tr_aap_run_sim(p, L, &eng->aap, eng->sim, stats, err, errlen);
    case TR_GRAPH_MPI:
      if (!eng->mpi_comm) {
        set_err(err, errlen, "graph: the MPI back-end needs a communicator");
        return TR_AAP_EINVAL;
      }
      return tr_aap_run_mpi(p, L, &eng->aap, eng->mpi_comm, stats, err, errlen);
  }
  return TR_AAP_EINVAL;
}

int tr_graph_exec(const tr_graph_program *prog, const void *params, const tr_aap_layout *L, tr_tile_store *store,
                  tr_sink *sink, const tr_graph_engine *eng, tr_aap_stats *stats, char *err, size_t errlen) {
  return tr_graph_exec_inputs(prog, params, L, &store, 1, sink, eng, stats, err, errlen, NULL);
}

int tr_graph_exec_inputs(const tr_graph_program *prog, const void *params, const tr_aap_layout *L,
                         tr_tile_store *const *stores, int nstores, tr_sink *sink, const tr_graph_engine *eng,
                         tr_aap_stats *stats, char *err, size_t errlen, int *prog_status) {
  put_state ps = {sink, -1, PTHREAD_MUTEX_INITIALIZER, -1, 0, {{0}}};
  tr_graph_env env = {L->rows, L->cols, L, stores[0], stores, nstores, sink->prod.has_nodata, sink->prod.nodata,
                      env_put, &ps};
  tr_aap_program p;
  int rc = prog->init(&p, &env, params) ? TR_AAP_ENOMEM : TR_AAP_OK;
  if (!rc) rc = engine_run(&p, L, eng, stats, err, errlen);
  if (!rc && sink->status) rc = TR_AAP_EPROGRAM;
  if (prog_status) *prog_status = ps.fail_frag >= 0 ? ps.fail_status : 0;
  if (ps.fail_frag >= 0) set_err(err, errlen, ps.fail.msg);
  if (rc) {
    /* put what was not put, as failures, in order: the program's own line
     * when it gave one, so every rank count reports the same */
    tr_error e;
    if (ps.fail_frag >= 0) e = ps.fail;
    else snprintf(e.msg, sizeof e.msg, "%s failed: %s", prog->name, err && err[0] ? err : tr_aap_strerror(rc));
    const int st = ps.fail_frag >= 0 ? ps.fail_status : rc == TR_AAP_ENOMEM ? TR_ENOMEM : TR_EINTERNAL;
    for (int64_t i = ps.last_put + 1; i < L->nfrags; i++)
      if (sink->mode != TR_SINK_SPREAD || tr_grid_owner(i, sink->nranks) == sink->rank) tr_sink_put(sink, i, st, &e, NULL);
  }
  prog->release(&p);
  pthread_mutex_destroy(&ps.mu);
  return rc;
}

/* ------------------------------------------------ the command's runner */

/* What the store's loader over the GDAL input keeps: progress of the first
 * half of a run is the share of this rank's fragments whose first round
 * (PEval) has loaded its window. */
typedef struct {
  const tr_run_opts *run;
  tr_input *in;
  unsigned char *seen;         /* NULL: an extra input, no progress */
  int64_t mine, started;
  int status;
  tr_error first;
} dem_loader;

static int load_dem(void *user, const tr_tile *t, int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                    float *dst) {
  dem_loader *d = user;
  tr_error e;
  int st = tr_input_read_f32(d->in, row0, col0, rows, cols, dst, cols, &e);
  if (!st && d->seen && !d->seen[t->index]) {
    d->seen[t->index] = 1;
    d->started++;
    if (d->run->progress && !d->run->progress(0.5 * (double)d->started / (double)d->mine, NULL, d->run->progress_user))
      st = tr_fail(&e, TR_EINTERRUPTED, "interrupted");
  }
  if (st && !d->status) {
    d->status = st;
    d->first = e;
  }
  return st ? -1 : 0;
}

/* The engine's give_up (aap.h): a rank lost or the run cancelled. */
static int engine_give_up(void *user, char *why, size_t n) {
  const tr_run_opts *run = user;
  tr_error e;
  int st = tr_dist_check(run, &e);
  if (st && why && n) snprintf(why, n, "%s", e.msg);
  return st != TR_OK;
}

/* The engine's options from the command's. */
static int engine_opts(const tr_graph_opts *g, int threads, tr_aap_opts *a, tr_error *err) {
  tr_aap_opts_default(a);
  if (g->schedule && tr_aap_schedule_parse(g->schedule, &a->schedule) != 0)
    return tr_fail(err, TR_EUSAGE, "--schedule: '%s' is not one of aap, bsp, ap, ssp, random", g->schedule);
  if (g->staleness >= 0) a->staleness = g->staleness;
  if (a->schedule == TR_AAP_SCHED_SSP && a->staleness < 0) a->staleness = 1;
  if (g->ds_max_ms > 0) a->ds_max = g->ds_max_ms / 1000.0;
  /* the straggler bound is opt-in: it saves work, not time (libterrain/aap/schedule.c) */
  if (g->straggler_ratio > 0) {
    a->straggler_ratio = g->straggler_ratio;
    if (a->schedule == TR_AAP_SCHED_AAP && g->staleness < 0) a->staleness = TR_AAP_STALENESS_AUTO;
  }
  if (g->l_bottom > 0) a->L_bottom = g->l_bottom;
  if (g->l_up > 0) a->L_up = g->l_up;
  if (a->L_bottom > a->L_up)
    return tr_fail(err, TR_EUSAGE, "--l-bottom (%d) is above --l-up (%d)", a->L_bottom, a->L_up);
  if (a->straggler_ratio <= 1 || isnan(a->straggler_ratio))
    return tr_fail(err, TR_EUSAGE, "--straggler-ratio must be above 1");
  a->threads = threads;
  return TR_OK;
}

/* GDAL's block cache of a graph run, in MB: the job's 16 MB shared among its
 * ranks (at least 4 each). Each window is read once per round that needs it
 * and rank 0's tiles are written once, so the cache only saves re-reading
 * strips that neighbouring windows share; under mpirun each rank reads only
 * its own windows and the ranks' caches would otherwise add up. */
static int gdal_cache_mb(const tr_job *job) { return job->nranks >= 4 ? 4 : 16 / job->nranks; }

/* What this rank keeps while program `prog` runs over its tiles of `job`: the
 * program's state over each owned fragment's padded window, the engine's
 * per-fragment halo buffers (owned fragments only: a slot per perimeter cell
 * with its value, up to twice a cell's size, a received mark and a dirty
 * index; snapshots and outboxes live for one round), the tile store and GDAL
 * caches, and a fixed allowance for the process (libraries, MPI, threads). */
static int64_t graph_memory(const tr_graph_program *prog, const tr_job *job, double cache_mb) {
  const int64_t cell = prog->state_bytes > 0 ? prog->state_bytes : GDALGetDataTypeSizeBytes(prog->cell_type);
  const int64_t vs = GDALGetDataTypeSizeBytes(prog->cell_type);
  int64_t need = (int64_t)((cache_mb + gdal_cache_mb(job)) * (1 << 20)) + ((int64_t)64 << 20);
  for (int64_t i = job->rank; i < job->ntiles; i += job->nranks) {
    const tr_tile t = tr_grid_tile(&job->grid, i);
    need += (t.rows + 2) * (t.cols + 2) * cell + (2 * (t.rows + t.cols) + 4) * (2 * vs + 5) + 512;
  }
  return need;
}

int tr_run_graph(const tr_run_opts *run, const tr_graph_opts *g, const char *name, tr_graph_prepare_fn prepare,
                 const void *opts, const char *src, const char *dst, tr_error *err) {
  return tr_run_graph_inputs(run, g, name, prepare, opts, &src, 1, dst, err);
}

/* Opens the extra inputs srcs[1..] on every rank (agreed) and checks their
 * size against the first; on failure all are closed. */
static int open_extra(const tr_run_opts *run, const tr_input *in0, const char *const *srcs, int nsrc, tr_input *extra, tr_error *err) {
  int st = TR_OK, k = 1;
  for (; k < nsrc && !st; k++) {
    st = tr_input_open(&extra[k], srcs[k], 1, err);
    if (st) break;
    if (extra[k].rows != in0->rows || extra[k].cols != in0->cols) {
      st = tr_fail(err, TR_EINPUT, "'%s' is %lld x %lld cells but '%s' is %lld x %lld", srcs[k],
                   (long long)extra[k].cols, (long long)extra[k].rows, srcs[0], (long long)in0->cols,
                   (long long)in0->rows);
      tr_input_close(&extra[k]);
      break;
    }
  }
  st = tr_dist_agree(run, st, err);
  if (st)
    for (int j = 1; j < k; j++) tr_input_close(&extra[j]);
  return st;
}

int tr_run_graph_inputs(const tr_run_opts *run, const tr_graph_opts *g, const char *name,
                        tr_graph_prepare_fn prepare, const void *opts, const char *const *srcs, int nsrc,
                        const char *dst, tr_error *err) {
  const char *src = srcs[0];
  if (nsrc < 1 || nsrc > TR_GRAPH_MAX_INPUTS) return tr_fail(err, TR_EINTERNAL, "graph: %d inputs", nsrc);
  const tr_graph_program *prog = tr_graph_program_find(name);
  if (!prog) return tr_fail(err, TR_EINTERNAL, "no graph program named '%s'", name);
  if (run->ft != TR_FT_OFF)
    return tr_fail(err, TR_EUSAGE, "--ft is for local kernels (slope, aspect, ...); %s runs on the AAP engine", name);
  tr_graph_engine eng;
  memset(&eng, 0, sizeof eng);
  int st = engine_opts(g, run->threads > 0 ? run->threads : omp_get_num_procs(), &eng.aap, err);
  if (st) return st;
  tr_job job;
  st = tr_job_open(&job, run, src, err);
  if (st) return st;
  if (job.grid.tile < TR_MIN_GRAPH_TILE && job.ntiles > TR_MAX_SMALL_FRAGS)
    return tr_job_finish(&job,
                         tr_fail(err, TR_EUSAGE,
                                 "--tile-size %lld makes %lld tiles; %s needs tiles of at least %d cells a side "
                                 "(each tile is a fragment with rounds and messages of its own)",
                                 (long long)job.grid.tile, (long long)job.ntiles, name, TR_MIN_GRAPH_TILE),
                         err);
  tr_input extra[TR_GRAPH_MAX_INPUTS];
  memset(extra, 0, sizeof extra);
  st = open_extra(run, &job.in, srcs, nsrc, extra, err);
  if (st) return tr_job_finish(&job, st, err);
  tr_io_cache_default(gdal_cache_mb(&job));
  eng.aap.inject = job.inject.aap;
  eng.aap.give_up = engine_give_up;
  eng.aap.give_up_user = (void *)run;
  const double cache_mb = g->cache_mb >= 0 ? g->cache_mb : 16.0;
  void *params = calloc(1, prog->params_size ? prog->params_size : 1);
  tr_product prod = {prog->cell_type, 1, 0, 0, GDT_Unknown};
  st = params ? prepare(&job.in, opts, params, &prod, err) : tr_fail(err, TR_ENOMEM, "out of memory");
  if (!st) {
    char what[160];
    snprintf(what, sizeof what, "%s of a %lld x %lld raster", name, (long long)job.in.rows, (long long)job.in.cols);
    st = tr_mem_check(graph_memory(prog, &job, cache_mb), what, err);
  }
  st = tr_dist_agree(run, st, err);
  if (!st) st = tr_job_create(&job, dst, &prod, TR_SINK_SPREAD, 0.5, err);
  else st = tr_job_finish(&job, st, err);
  if (st) {
    for (int k = 1; k < nsrc; k++) tr_input_close(&extra[k]);
    free(params);
    return st;
  }

  tr_error e = {{0}};
  int status = TR_OK;
  tr_aap_layout L;
  memset(&L, 0, sizeof L);
  dem_loader d = {run, &job.in, calloc((size_t)job.ntiles, 1), tr_grid_owned(job.ntiles, job.rank, job.nranks), 0, 0,
                  {{0}}};
  tr_tile_store *stores[TR_GRAPH_MAX_INPUTS] = {NULL};
  dem_loader dx[TR_GRAPH_MAX_INPUTS];
  int stores_ok = 1;
  for (int k = 0; k < nsrc; k++) {
    tr_input *ink = k ? &extra[k] : &job.in;
    if (k) dx[k] = (dem_loader){run, ink, NULL, 0, 0, 0, {{0}}};
    stores[k] = tr_tile_store_create(job.in.rows, job.in.cols, job.ntiles,
                                     (size_t)(cache_mb * (1 << 20)) / (size_t)nsrc, ink->has_nodata,
                                     (float)ink->nodata, load_dem, k ? (void *)&dx[k] : (void *)&d);
    stores_ok = stores_ok && stores[k];
  }
  if (!d.seen || !stores_ok || tr_aap_layout_grid(&L, job.in.rows, job.in.cols, job.grid.tile, job.grid.tile) != 0)
    status = tr_fail(&e, TR_ENOMEM, "out of memory");
#ifdef TERRAFORT_HAVE_MPI
  MPI_Comm world = MPI_COMM_WORLD;
  if (job.nranks > 1) {
    eng.backend = TR_GRAPH_MPI;
    eng.mpi_comm = &world;
  }
#endif
  if (!status && job.rank == 0 && run->progress && !run->progress(0.0, NULL, run->progress_user))
    status = tr_fail(&e, TR_EINTERRUPTED, "interrupted");
  tr_aap_stats astats;
  memset(&astats, 0, sizeof astats);
  /* all ranks run the engine or none does: one missing would leave the
   * others waiting */
  status = tr_dist_agree(run, status, &e);
  if (status) {
    tr_sink_fail(&job.sink, status, &e);
    for (int64_t i = job.rank; i < job.ntiles; i += job.nranks) tr_sink_put(&job.sink, i, status, &e, NULL);
  } else {
    char msg[256] = "";
    int pst = 0;
    int rc = tr_graph_exec_inputs(prog, params, &L, stores, nsrc, &job.sink, &eng, &astats, msg, sizeof msg, &pst);
    for (int k = 1; k < nsrc && !d.status; k++)
      if (dx[k].status) d.status = dx[k].status, d.first = dx[k].first;
    if (d.status) {
      /* the input's own failure is the cause; the tiles' generic one only follows from it */
      status = d.status, e = d.first;
      job.sink.status = 0;
      tr_sink_fail(&job.sink, status, &e);
    }
    else if (job.sink.status) status = job.sink.status, e = job.sink.first;
    else if (rc == TR_AAP_EABANDONED)
      status = tr_dist_check(run, &e) ? tr_dist_check(run, &e) : tr_fail(&e, TR_EINTERNAL, "%s", msg);
    else if (rc && pst)
      status = tr_fail(&e, pst, "%s", msg);
    else if (rc)
      status = tr_fail(&e, rc == TR_AAP_ENOMEM ? TR_ENOMEM : TR_EINTERNAL, "%s of '%s' failed: %s", name, src,
                       msg[0] ? msg : tr_aap_strerror(rc));
    if (!status && job.rank == 0 && g->aap_stats) {
      FILE *f = fopen(g->aap_stats, "w");
      if (!f || tr_aap_stats_json(&astats, f) != 0)
        status = tr_fail(&e, TR_EOUTPUT, "cannot write engine statistics '%s'", g->aap_stats);
      if (f) fclose(f);
    }
  }
  tr_aap_stats_free(&astats);
  st = tr_job_finish(&job, status, &e);
  if (st && err) *err = e;
  tr_aap_layout_free(&L);
  for (int k = 0; k < nsrc; k++) {
    tr_tile_store_destroy(stores[k]);
    if (k) tr_input_close(&extra[k]);
  }
  free(d.seen);
  free(params);
  return st;
}
