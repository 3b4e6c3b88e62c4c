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

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "dist.h"
#include "memory.h"
#include "run.h"
#include "scratch_file.h"
#include "written.h"

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
  tr_state_store *states; /* out of core: the programs' state beyond the budget; NULL: none */
  int64_t last_put;   /* the last fragment put, -1 before any */
  /* a program assembling on several threads (assemble_parallel, threads
   * back-end): puts wait for their turn in fragment order; a fragment that
   * failed before its put stops those after it */
  int ordered;
  pthread_mutex_t pmu;
  pthread_cond_t pcv;
  int64_t put_next, stop_from;
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

int tr_graph_keep(tr_graph_env *env, const tr_aap_frag *f, void *pp, size_t bytes, const size_t *count) {
  put_state *ps = env->runner;
  return ps->states ? tr_state_store_keep(ps->states, f->id, pp, bytes, count) : 0;
}

static int env_put(tr_graph_env *env, const tr_aap_frag *f, const void *cells) {
  put_state *ps = env->runner;
  if (ps->ordered) {
    pthread_mutex_lock(&ps->pmu);
    while (ps->put_next < f->id && f->id <= ps->stop_from) pthread_cond_wait(&ps->pcv, &ps->pmu);
    const int stopped = f->id > ps->stop_from;
    pthread_mutex_unlock(&ps->pmu);
    if (stopped) return -1;
  }
  /* other threads are loading windows meanwhile: the write holds their
   * GDAL lock (tile_store.h) */
  if (ps->ordered)
    for (int k = 0; k < env->ninputs; k++) tr_tile_store_io_lock(env->inputs[k]);
  tr_sink_put(ps->sink, f->id, TR_OK, NULL, cells);
  if (ps->ordered)
    for (int k = env->ninputs - 1; k >= 0; k--) tr_tile_store_io_unlock(env->inputs[k]);
  ps->last_put = f->id;
  if (ps->ordered) {
    pthread_mutex_lock(&ps->pmu);
    ps->put_next = f->id + 1;
    pthread_cond_broadcast(&ps->pcv);
    pthread_mutex_unlock(&ps->pmu);
  }
  return ps->sink->status ? -1 : 0;
}

/* After fragment f's Assemble on several threads: when it failed before its put,
 * the fragments after it must not wait for their turn. */
static void put_turn_check(put_state *ps, int64_t f) {
  pthread_mutex_lock(&ps->pmu);
  if (ps->put_next <= f && f < ps->stop_from) {
    ps->stop_from = f;
    pthread_cond_broadcast(&ps->pcv);
  }
  pthread_mutex_unlock(&ps->pmu);
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

/* ------------------------------------------------------- out of core */

/* The program as the engine sees it in an out-of-core run: each callback
 * pins its fragment's state in the state store around the program's own
 * (restoring it from disk when it was spilled) and unpins it after (which
 * may spill the least recently used fragments). The engine's state of a
 * fragment is a box naming it; the program's state is inside. Assemble
 * frees the program's state at once (the engine frees a fragment's state
 * only after every fragment is assembled), so assembling does not read every
 * spilled fragment back into memory at the same time. */
typedef struct {
  tr_aap_program in;
  tr_state_store *ss; /* NULL: all in memory (the wrapper only orders puts) */
  put_state *ps;
} ooc_prog;

typedef struct {
  int64_t f;
  void *st;
  int done;
} ooc_box;

static int ooc_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  ooc_prog *w = user;
  ooc_box *b = calloc(1, sizeof *b);
  if (!b) return -1;
  b->f = f->id;
  *state = b;
  if (w->ss && tr_state_store_pin(w->ss, f->id)) return -1;
  const int rc = w->in.peval(w->in.user, f, &b->st, rd);
  if (rc) {
    /* a failed PEval may have freed what it registered: forget it (what it
     * kept, destroy frees) */
    if (w->ss) tr_state_store_drop(w->ss, f->id);
    return rc;
  }
  return w->ss ? tr_state_store_unpin(w->ss, f->id) : 0;
}

static int ooc_inceval(void *user, const tr_aap_frag *f, void *state, int64_t n, const int64_t *cells,
                       const void *values, tr_aap_round *rd) {
  ooc_prog *w = user;
  ooc_box *b = state;
  if (w->ss && tr_state_store_pin(w->ss, f->id)) return -1;
  const int rc = w->in.inceval(w->in.user, f, b->st, n, cells, values, rd);
  const int rc2 = w->ss ? tr_state_store_unpin(w->ss, f->id) : 0;
  return rc ? rc : rc2;
}

static int ooc_assemble(void *user, const tr_aap_frag *f, void *state) {
  ooc_prog *w = user;
  ooc_box *b = state;
  int rc = w->ss && tr_state_store_pin(w->ss, f->id) ? -1 : 0;
  if (!rc && w->in.assemble) rc = w->in.assemble(w->in.user, f, b->st);
  if (w->ss) tr_state_store_drop(w->ss, f->id);
  if (b->st && w->in.destroy) w->in.destroy(w->in.user, b->st);
  b->st = NULL;
  b->done = 1;
  if (w->ps->ordered) put_turn_check(w->ps, f->id);
  return rc;
}

static void ooc_destroy(void *user, void *state) {
  ooc_prog *w = user;
  ooc_box *b = state;
  if (!b->done) {
    /* a failed run: the arrays on disk are forgotten, the program frees the rest */
    if (w->ss) tr_state_store_drop(w->ss, b->f);
    if (b->st && w->in.destroy) w->in.destroy(w->in.user, b->st);
  }
  free(b);
}

static int ooc_aggr(void *user, void *acc, const void *value) {
  ooc_prog *w = user;
  return w->in.aggr(w->in.user, acc, value);
}

static int ooc_resident(void *user, int64_t frag) {
  ooc_prog *w = user;
  return w->ss ? tr_state_store_resident(w->ss, frag) : 1;
}

static tr_aap_program ooc_wrap(ooc_prog *w) {
  tr_aap_program p;
  memset(&p, 0, sizeof p);
  p.value_size = w->in.value_size;
  p.user = w;
  p.peval = ooc_peval;
  p.inceval = ooc_inceval;
  p.assemble = ooc_assemble;
  p.destroy = ooc_destroy;
  p.aggr = ooc_aggr;
  p.resident = w->ss ? ooc_resident : NULL;
  p.assemble_parallel = w->ps->ordered;
  return p;
}

int tr_graph_exec(const tr_graph_program *prog, const void *params, const tr_aap_layout *L, tr_tile_store *store,
                  tr_sink *sink, const tr_graph_engine *eng, tr_aap_stats *stats, char *err, size_t errlen) {
  return tr_graph_exec_inputs(prog, params, L, &store, 1, sink, eng, stats, err, errlen, NULL);
}

int tr_graph_exec_inputs(const tr_graph_program *prog, const void *params, const tr_aap_layout *L,
                         tr_tile_store *const *stores, int nstores, tr_sink *sink, const tr_graph_engine *eng,
                         tr_aap_stats *stats, char *err, size_t errlen, int *prog_status) {
  put_state ps = {sink, NULL, -1, 0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, L->nfrags,
                  PTHREAD_MUTEX_INITIALIZER, -1, 0, {{0}}};
  tr_graph_env env = {L->rows, L->cols, L, stores[0], stores, nstores, sink->prod.has_nodata, sink->prod.nodata,
                      env_put, &ps};
  tr_aap_program p;
  memset(&p, 0, sizeof p);
  int rc = prog->init(&p, &env, params) ? TR_AAP_ENOMEM : TR_AAP_OK;
  ooc_prog w = {p, NULL, &ps};
  /* on threads a program may assemble on all of them, its puts in turn */
  ps.ordered = p.assemble_parallel && eng->backend == TR_GRAPH_THREADS && eng->aap.threads > 1;
  if (!rc && eng->state_budget != 0) {
    ps.states = w.ss = tr_state_store_create(L->nfrags, eng->state_budget, eng->spill_dir);
    if (!ps.states) rc = TR_AAP_ENOMEM;
    else tr_state_store_inject_fail(ps.states, eng->spill_fail);
  }
  if (!rc) {
    tr_aap_program run = ps.states || ps.ordered ? ooc_wrap(&w) : p;
    if (!ps.ordered) run.assemble_parallel = 0;
    rc = engine_run(&run, L, eng, stats, err, errlen);
  }
  if (ps.states) {
    /* the store's own failure (a full disk) is the cause of the round's */
    const char *why = tr_state_store_error(ps.states);
    if (rc && why[0] && ps.fail_frag < 0) {
      set_err(err, errlen, why);
      ps.fail_frag = L->nfrags;
      ps.fail_status = strstr(why, strerror(ENOSPC)) ? TR_ENOSPC : TR_EOUTPUT;
      snprintf(ps.fail.msg, sizeof ps.fail.msg, "%s", why);
    }
    if (eng->spill_stats) tr_state_store_get_stats(ps.states, eng->spill_stats);
  }
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
  tr_state_store_destroy(ps.states);
  pthread_mutex_destroy(&ps.mu);
  pthread_mutex_destroy(&ps.pmu);
  pthread_cond_destroy(&ps.pcv);
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

/* What rank `rank` keeps while program `prog` runs over its tiles of `job`:
 * fixed, the engine's per-fragment halo buffers (owned fragments only: a slot
 * per perimeter cell with its value, up to twice a cell's size, a received
 * mark and a dirty index; snapshots and outboxes live for one round), the
 * tile store and GDAL caches, and an allowance for the process (libraries,
 * MPI, threads); state, the program's state over each owned fragment's
 * padded window, of which frag_max is the largest fragment's. */
typedef struct {
  int64_t fixed, state, frag_max, round_max;
} graph_need;

static graph_need graph_memory_of(const tr_graph_program *prog, const tr_job *job, double cache_mb, int rank) {
  const int64_t cell = prog->state_bytes > 0 ? prog->state_bytes : GDALGetDataTypeSizeBytes(prog->cell_type);
  const int64_t vs = prog->msg_bytes > 0 ? prog->msg_bytes : GDALGetDataTypeSizeBytes(prog->cell_type);
  graph_need n = {(int64_t)((cache_mb + gdal_cache_mb(job)) * (1 << 20)) + TR_PROCESS_BYTES, 0, 0, 0};
  for (int64_t i = rank; i < job->ntiles; i += job->nranks) {
    const tr_tile t = tr_grid_tile(&job->grid, i);
    const int64_t window = (t.rows + 2) * (t.cols + 2);
    const int64_t st = prog->perimeter_state > 0
                           ? (2 * (t.rows + t.cols) + 4) * prog->perimeter_state + (window * prog->state_bits + 7) / 8
                           : window * cell;
    if (window * prog->round_bytes > n.round_max) n.round_max = window * prog->round_bytes;
    n.fixed += (2 * (t.rows + t.cols) + 4) * (2 * vs + 5) + 512;
    n.state += st;
    if (st > n.frag_max) n.frag_max = st;
  }
  return n;
}

static graph_need graph_memory(const tr_graph_program *prog, const tr_job *job, double cache_mb) {
  return graph_memory_of(prog, job, cache_mb, job->rank);
}

/* Over the ranks, the most state (minimum 0) or the most a rank needs at
 * least to run `prog` (minimum 1: the rounds running, one fragment read
 * back, the buffers): figures every rank computes alike, so that ranks
 * with the same --mem choose alike. */
static int64_t largest_rank(const tr_graph_program *prog, const tr_job *job, double cache_mb, int64_t writer,
                            int pinned, int minimum) {
  int64_t most = 0;
  for (int r = 0; r < job->nranks; r++) {
    const graph_need n = graph_memory_of(prog, job, cache_mb, r);
    const int64_t v = !minimum ? n.state
                               : n.fixed + writer + (int64_t)pinned * n.round_max + (int64_t)(pinned + 1) * n.frag_max;
    if (v > most) most = v;
  }
  return most;
}

/* graph_memory with the writer's cache and the working set of the rounds
 * running at once (`pinned`) in the fixed part. */
static graph_need graph_need_of(const tr_graph_program *prog, const tr_job *job, double cache_mb, int64_t writer,
                                int pinned) {
  graph_need n = graph_memory(prog, job, cache_mb);
  n.fixed += writer + (int64_t)pinned * n.round_max;
  return n;
}

static double mib(int64_t b) { return (double)b / (1 << 20); }

/* The out-of-core plan (man terrafort-fill, MEMORY): with everything in
 * --mem, a state store that never spills (budget -1); else the budget of state kept in memory
 * beside the fragments the engine is running (`pinned`), after checking that
 * one round's working set fits and that the spill folder has room for the
 * rest. The spill folder is --tmp or the output's. */
static int memory_plan(const tr_run_opts *run, const tr_graph_opts *g, const graph_need *need, int pinned,
                       const char *dst, const char *what, char *spill_dir, size_t dirlen, int64_t *budget,
                       tr_error *err) {
  /* an explicit --tmp is checked even when nothing will spill: a mistyped
   * folder found only on the day a larger DEM spills would end that run */
  int st = tr_scratch_folder(g->tmp_dir, dst, spill_dir, dirlen, err);
  if (st) return st;
  /* all in memory: the store only counts (--aap-stats' peak_resident is
   * then the state the run really kept) */
  *budget = -1;
  const int64_t mem = tr_mem_limit(run->mem);
  if (need->fixed + need->state <= mem) return TR_OK;
  /* the rounds running, and room for one more fragment to be read back */
  const int64_t min = need->fixed + (int64_t)(pinned + 1) * need->frag_max;
  char have[32];
  if (mem < min)
    return tr_fail(err, TR_ENOMEM,
                   "%s needs at least %.0f MiB of memory per process (%d round%s at once of tiles of %.1f MiB of "
                   "state, and %.0f MiB of buffers), more than %s %s: give more --mem, fewer --threads or "
                   "a smaller --tile-size",
                   what, mib(min), pinned, pinned == 1 ? "" : "s", mib(need->frag_max), mib(need->fixed),
                   run->mem > 0 ? "--mem" : "the default --mem (3/4 of what this process may have),",
                   tr_size_text(mem, have));
  *budget = mem - need->fixed - (int64_t)pinned * need->frag_max;
#ifdef __GLIBC__
  /* tiles' state is freed and allocated again by whichever thread spills or
   * restores it; glibc's per-thread arenas keep what other threads freed
   * (the outofcore benchmark's flowgraph at 32000² peaked 82 MB higher), so
   * an out-of-core run allocates from one arena. Arrays of 256 KiB and more
   * are mapped each on its own and unmapped when freed: the heap would keep
   * the holes between tiles' arrays of every size (scripts/bench/outofcore,
   * flowgraph at 32000² with --mem 1G: 1273 MiB before, 1038 MiB with this
   * and the store's trim). glibc otherwise raises this threshold to the largest
   * block freed, which is every tile's state. The state store trims the rest
   * (state_store.c). */
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
#endif
  struct statvfs vs;
  if (statvfs(spill_dir, &vs) != 0)
    return tr_fail(err, TR_EOUTPUT, "cannot use '%s' for the state that does not fit in --mem: %s", spill_dir,
                   strerror(errno));
  /* the node's ranks share the folder's disk as they share its memory */
  const int64_t spill = need->state - *budget,
                avail = (int64_t)vs.f_bavail * (int64_t)vs.f_frsize / tr_node_ranks();
  if (spill > avail)
    return tr_fail(err, TR_ENOSPC,
                   "%s: %.2f GiB of state does not fit in %.0f MiB of memory and the rest, up to %.2f GiB, does "
                   "not fit in '%s' either (%.2f GiB free for this rank): give more --mem or a --tmp folder with room",
                   what, (double)need->state / (1 << 30), mib(mem), (double)spill / (1 << 30), spill_dir,
                   (double)avail / (1 << 30));
  return TR_OK;
}

/* The state store's figures as a second JSON line of --aap-stats. */
static int state_stats_json(const char *name, const tr_graph_engine *eng, const graph_need *need,
                            const tr_state_store_stats *s, FILE *f) {
  return fprintf(f,
                 "{\"state_store\":{\"program\":\"%s\",\"state_bytes\":%lld,\"fixed_bytes\":%lld,\"frag_max_bytes\":%lld,\"budget\":%lld,\"peak_resident\":%lld,\"spills\":%lld,\"restores\":%lld,"
                 "\"bytes_written\":%lld,\"bytes_read\":%lld,\"raw_written\":%lld}}\n",
                 name, (long long)need->state, (long long)need->fixed, (long long)need->frag_max,
                 (long long)eng->state_budget, (long long)s->peak_resident, (long long)s->spills,
                 (long long)s->restores, (long long)s->bytes_written, (long long)s->bytes_read,
                 (long long)s->raw_written) < 0
             ? -1
             : 0;
}

/* The tile store's cache (MB) and the rounds running at once (threads in
 * one process, one per rank under mpirun) that a run plans with. */
static double store_cache_mb(const tr_graph_opts *g) { return g->cache_mb >= 0 ? g->cache_mb : 16.0; }
static int rounds_at_once(const tr_job *job, int threads) { return job->nranks > 1 ? 1 : threads; }

/* What `prog` needs to keep everything in memory on the rank that needs
 * most: the one figure the runner compares with --mem before it spills or
 * swaps in a twin (tr_run_graph_inputs, tr_graph_fits). */
static int64_t all_in_memory(const tr_graph_program *prog, const tr_job *job, double cache_mb, int64_t writer,
                             int pinned) {
  const graph_need need = graph_need_of(prog, job, cache_mb, writer, pinned);
  return need.fixed + largest_rank(prog, job, cache_mb, writer, pinned, 0);
}

int tr_graph_fits(const tr_run_opts *run, const tr_graph_opts *g, const char *name, const char *src,
                  GDALDataType file_type, int *fits, tr_error *err) {
  const tr_graph_program *prog = tr_graph_program_find(name);
  if (!prog) return tr_fail(err, TR_EINTERNAL, "no graph program named '%s'", name);
  tr_aap_opts a;
  int st = engine_opts(g, tr_run_threads(run), &a, err);
  if (st) return st;
  tr_job job;
  if ((st = tr_job_open(&job, run, src, err))) return st;
  const tr_product prod = {prog->cell_type, 1, 0, 0, file_type};
  const int64_t writer = tr_job_writer_cache(&job, &prod);
  *fits = all_in_memory(prog, &job, store_cache_mb(g), writer, rounds_at_once(&job, a.threads)) <= tr_mem_limit(run->mem);
  return tr_job_finish(&job, TR_OK, err);
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
    if ((st = tr_input_same_size(&extra[k], srcs[k], in0, "", srcs[0], err))) {
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
  const char *shown = prog->command ? prog->command : name;
  if (run->ft != TR_FT_OFF)
    return tr_fail(err, TR_EUSAGE, "--ft is for local kernels (slope, aspect, ...); %s runs on the AAP engine", shown);
  tr_graph_engine eng;
  memset(&eng, 0, sizeof eng);
  int st = engine_opts(g, tr_run_threads(run), &eng.aap, err);
  if (st) return st;
  tr_job job;
  st = tr_job_open(&job, run, src, err);
  if (st) return st;
  if (job.grid.tile < TR_MIN_GRAPH_TILE && job.ntiles > TR_MAX_SMALL_FRAGS)
    return tr_job_finish(&job,
                         tr_fail(err, TR_EUSAGE,
                                 "--tile-size %lld makes %lld tiles; %s needs tiles of at least %d cells a side "
                                 "(each tile is a fragment with rounds and messages of its own)",
                                 (long long)job.grid.tile, (long long)job.ntiles, shown, TR_MIN_GRAPH_TILE),
                         err);
  tr_input extra[TR_GRAPH_MAX_INPUTS];
  memset(extra, 0, sizeof extra);
  st = open_extra(run, &job.in, srcs, nsrc, extra, err);
  if (st) return tr_job_finish(&job, st, err);
  eng.aap.inject = job.inject.aap;
  eng.spill_fail = job.inject.spill_fail;
  eng.aap.give_up = engine_give_up;
  eng.aap.give_up_user = (void *)run;
  const double cache_mb = store_cache_mb(g);
  void *params = calloc(1, prog->params_size ? prog->params_size : 1);
  tr_product prod = {prog->cell_type, 1, 0, 0, GDT_Unknown};
  st = params ? prepare(&job.in, opts, params, &prod, err) : tr_fail(err, TR_ENOMEM, "out of memory");
  char spill_dir[4096] = ".";
  graph_need need = {0, 0, 0, 0};
  if (!st) {
    char what[160];
    snprintf(what, sizeof what, "%s of a %lld x %lld raster", shown, (long long)job.in.rows, (long long)job.in.cols);
    /* the writer's cache holds a row of output tiles on large rasters (core/run.h) */
    const int64_t writer = tr_job_writer_cache(&job, &prod);
    tr_io_cache_plan(run, gdal_cache_mb(&job) + (int)((writer + (1 << 20) - 1) >> 20));
    const int pinned = rounds_at_once(&job, eng.aap.threads);
    need = graph_need_of(prog, &job, cache_mb, writer, pinned);
    /* a program with a smaller-state twin runs that one out of core. Every
     * rank decides from the largest rank's state, so ranks with the same
     * --mem choose alike; with the default --mem on nodes of different
     * memory they might not, and fill and fill_perimeter still agree: both
     * send a perimeter cell's current W, min-aggregated, towards one fixed
     * point */
    const int64_t mem = tr_mem_limit(run->mem);
    if (prog->when_out_of_core && all_in_memory(prog, &job, cache_mb, writer, pinned) > mem) {
      const tr_graph_program *alt = tr_graph_program_find(prog->when_out_of_core);
      if (alt && (!alt->applies || alt->applies(params))) {
        /* only when the twin's own working set fits (its rounds may hold more
         * than the program's: d8_up_perimeter's): otherwise the program
         * spills, or says what it needs */
        if (largest_rank(alt, &job, cache_mb, writer, pinned, 1) <= mem)
          prog = alt, need = graph_need_of(alt, &job, cache_mb, writer, pinned);
      }
    }
    st = memory_plan(run, g, &need, pinned, dst, what, spill_dir, sizeof spill_dir,
                     &eng.state_budget, err);
    eng.spill_dir = spill_dir;
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
  tr_state_store_stats sstats;
  memset(&sstats, 0, sizeof sstats);
  eng.spill_stats = &sstats;
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
      status = tr_fail(&e, rc == TR_AAP_ENOMEM ? TR_ENOMEM : TR_EINTERNAL, "%s of '%s' failed: %s", shown, src,
                       msg[0] ? msg : tr_aap_strerror(rc));
    if (!status && job.rank == 0 && g->aap_stats) {
      FILE *f = fopen(g->aap_stats, g->aap_stats_append ? "a" : "w");
      if (!f || tr_aap_stats_json(&astats, f) != 0 || state_stats_json(prog->name, &eng, &need, &sstats, f) != 0)
        status = tr_fail(&e, TR_EOUTPUT, "cannot write engine statistics '%s'", g->aap_stats);
      if (f && fclose(f) && !status)
        status = tr_fail(&e, TR_EOUTPUT, "cannot write engine statistics '%s'", g->aap_stats);
      if (f && !status) tr_output_written(g->aap_stats);
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

void tr_graph_release_user(tr_aap_program *p) {
  free(p->user);
  p->user = NULL;
}
