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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
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

/* --------------------------------------------------------------- exec */

typedef struct {
  tr_sink *sink;
  int64_t last_put;   /* the last fragment put, -1 before any */
} put_state;

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
  put_state ps = {sink, -1};
  tr_graph_env env = {L->rows, L->cols, L, store, sink->prod.has_nodata, sink->prod.nodata, env_put, &ps};
  tr_aap_program p;
  int rc = prog->init(&p, &env, params) ? TR_AAP_ENOMEM : TR_AAP_OK;
  if (!rc) rc = engine_run(&p, L, eng, stats, err, errlen);
  if (!rc && sink->status) rc = TR_AAP_EPROGRAM;
  if (rc) {
    /* put what was not put, as failures, in order */
    tr_error e;
    snprintf(e.msg, sizeof e.msg, "%s failed: %s", prog->name, err && err[0] ? err : tr_aap_strerror(rc));
    const int st = rc == TR_AAP_ENOMEM ? TR_ENOMEM : TR_EINTERNAL;
    for (int64_t i = ps.last_put + 1; i < L->nfrags; i++)
      if (sink->mode != TR_SINK_SPREAD || tr_grid_owner(i, sink->nranks) == sink->rank) tr_sink_put(sink, i, st, &e, NULL);
  }
  prog->release(&p);
  return rc;
}

/* ------------------------------------------------ the command's runner */

/* What the store's loader over the GDAL input keeps: progress of the first
 * half of a run is the share of this rank's fragments whose first round
 * (PEval) has loaded its window. */
typedef struct {
  const tr_run_opts *run;
  tr_input *in;
  unsigned char *seen;
  int64_t mine, started;
  int status;
  tr_error first;
} dem_loader;

static int load_dem(void *user, const tr_tile *t, int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                    float *dst) {
  dem_loader *d = user;
  tr_error e;
  int st = tr_input_read_f32(d->in, row0, col0, rows, cols, dst, cols, &e);
  if (!st && !d->seen[t->index]) {
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
  if (g->straggler_ratio > 0) a->straggler_ratio = g->straggler_ratio;
  if (g->l_bottom > 0) a->L_bottom = g->l_bottom;
  if (g->l_up > 0) a->L_up = g->l_up;
  if (a->L_bottom > a->L_up)
    return tr_fail(err, TR_EUSAGE, "--l-bottom (%d) is above --l-up (%d)", a->L_bottom, a->L_up);
  if (a->straggler_ratio <= 1 || isnan(a->straggler_ratio))
    return tr_fail(err, TR_EUSAGE, "--straggler-ratio must be above 1");
  a->threads = threads;
  return TR_OK;
}

int tr_run_graph(const tr_run_opts *run, const tr_graph_opts *g, const char *name, tr_graph_prepare_fn prepare,
                 const void *opts, const char *src, const char *dst, tr_error *err) {
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
  tr_io_cache_default(16);
  eng.aap.inject = job.inject.aap;
  eng.aap.give_up = engine_give_up;
  eng.aap.give_up_user = (void *)run;
  void *params = calloc(1, prog->params_size ? prog->params_size : 1);
  tr_product prod = {prog->cell_type, 1, 0, 0, GDT_Unknown};
  st = params ? prepare(&job.in, opts, params, &prod, err) : tr_fail(err, TR_ENOMEM, "out of memory");
  st = tr_dist_agree(run, st, err);
  if (st) {
    free(params);
    return tr_job_finish(&job, st, err);
  }
  st = tr_job_create(&job, dst, &prod, TR_SINK_SPREAD, 0.5, err);
  if (st) {
    free(params);
    return st;
  }

  tr_error e = {{0}};
  int status = TR_OK;
  tr_aap_layout L;
  memset(&L, 0, sizeof L);
  dem_loader d = {run, &job.in, calloc((size_t)job.ntiles, 1), tr_grid_owned(job.ntiles, job.rank, job.nranks), 0, 0,
                  {{0}}};
  const double cache_mb = g->cache_mb >= 0 ? g->cache_mb : 16.0;
  tr_tile_store *store = tr_tile_store_create(job.in.rows, job.in.cols, job.ntiles, (size_t)(cache_mb * (1 << 20)),
                                              job.in.has_nodata, (float)job.in.nodata, load_dem, &d);
  if (!d.seen || !store || tr_aap_layout_grid(&L, job.in.rows, job.in.cols, job.grid.tile, job.grid.tile) != 0)
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
    int rc = tr_graph_exec(prog, params, &L, store, &job.sink, &eng, &astats, msg, sizeof msg);
    if (d.status) {
      /* the input's own failure is the cause; the tiles' generic one only follows from it */
      status = d.status, e = d.first;
      job.sink.status = 0;
      tr_sink_fail(&job.sink, status, &e);
    }
    else if (job.sink.status) status = job.sink.status, e = job.sink.first;
    else if (rc == TR_AAP_EABANDONED)
      status = tr_dist_check(run, &e) ? tr_dist_check(run, &e) : tr_fail(&e, TR_EINTERNAL, "%s", msg);
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
  tr_tile_store_destroy(store);
  free(d.seen);
  free(params);
  return st;
}
