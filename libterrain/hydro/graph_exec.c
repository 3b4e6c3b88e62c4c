/*
 * graph_exec.c - the engine step of the graph runner (graph.h): one body of
 * a program of the table on the AAP engine, its input windows from the tile
 * stores, its tiles into the sink. Both runners (graph_run.c) end here.
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
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_ft.h"

/* ------------------------------------------------------------ windows */

/* Under --ft dual a round's computation reads its own copy (graph_ft.h). */
float *tr_graph_window_in(tr_graph_env *env, int k, const tr_aap_frag *f) {
  float *own = tr_graph_ft_window(env, k, f);
  if (own) return own;
  const tr_tile t = tr_graph_frag_tile(f);
  return tr_tile_store_get(env->inputs[k], &t);
}

void tr_graph_window_in_done(tr_graph_env *env, int k, const tr_aap_frag *f, float *z) {
  if (tr_graph_ft_window_done(z)) return;
  const tr_tile t = tr_graph_frag_tile(f);
  tr_tile_store_put(env->inputs[k], &t, z);
}

float *tr_graph_window(tr_graph_env *env, const tr_aap_frag *f) { return tr_graph_window_in(env, 0, f); }

void tr_graph_window_done(tr_graph_env *env, const tr_aap_frag *f, float *z) { tr_graph_window_in_done(env, 0, f, z); }

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
  /* a round computed on a copy: the copy's registrations go to it */
  const int taken = tr_graph_ft_keep(pp, bytes, count);
  if (taken) return taken < 0 ? -1 : 0;
  put_state *ps = env->runner;
  return ps->states ? tr_state_store_keep(ps->states, f->id, pp, bytes, count) : 0;
}

static int env_put(tr_graph_env *env, const tr_aap_frag *f, const void *cells) {
  /* an Assemble computed on a copy: its tile waits for the comparison */
  const int taken = tr_graph_ft_put(cells);
  if (taken) return taken < 0 ? -1 : 0;
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

int tr_graph_exec(const tr_graph_body *body, const void *params, const tr_aap_layout *L,
                  tr_tile_store *const *stores, int nstores, tr_sink *sink, const tr_graph_engine *eng,
                  tr_aap_stats *stats, char *err, size_t errlen, int *prog_status) {
  put_state ps = {.sink = sink,
                  .last_put = -1,
                  .pmu = PTHREAD_MUTEX_INITIALIZER,
                  .pcv = PTHREAD_COND_INITIALIZER,
                  .stop_from = L->nfrags,
                  .mu = PTHREAD_MUTEX_INITIALIZER,
                  .fail_frag = -1};
  tr_graph_env env = {.rows = L->rows,
                      .cols = L->cols,
                      .L = L,
                      .store = stores[0],
                      .inputs = stores,
                      .ninputs = nstores,
                      .has_nodata = sink->prod.has_nodata,
                      .nodata = sink->prod.nodata,
                      .put = env_put,
                      .runner = &ps};
  tr_aap_program p;
  memset(&p, 0, sizeof p);
  int rc = body->init(&p, &env, params) ? TR_AAP_ENOMEM : TR_AAP_OK;
  ooc_prog w = {p, NULL, &ps};
  /* on threads a program may assemble on all of them, its puts in turn */
  ps.ordered = p.assemble_parallel && eng->backend == TR_GRAPH_THREADS && eng->aap.threads > 1;
  if (!rc && eng->state_budget != 0) {
    ps.states = w.ss = tr_state_store_create(L->nfrags, eng->state_budget, eng->spill_dir);
    if (!ps.states) rc = TR_AAP_ENOMEM;
    else tr_state_store_inject_fail(ps.states, eng->spill_fail);
  }
  /* --ft: the program's rounds computed on copies, compared or tracked
   * (graph_ft.h); out of core, the store pins around them */
  tr_graph_ft *gft = NULL;
  if (!rc && eng->ft != TR_FT_OFF) {
    const tr_graph_ft_opts fo = {.mode = eng->ft,
                                 .workers = eng->backend == TR_GRAPH_THREADS ? eng->aap.threads : 1,
                                 .inject = eng->inject,
                                 .check = eng->ft_check,
                                 .max_errors = eng->ft_max_errors,
                                 .timeout_ms = eng->ft_timeout_ms,
                                 .cell_bytes = (size_t)GDALGetDataTypeSizeBytes(sink->prod.type)};
    if (tr_graph_ft_open(&gft, &w.in, body, &env, ps.states, &fo)) {
      rc = TR_AAP_ENOMEM;
      set_err(err, errlen, body->state_bytes ? "out of memory" : "this program has no --ft");
    }
  }
  if (!rc) {
    tr_aap_program run = ps.states || ps.ordered ? ooc_wrap(&w) : w.in;
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
    else snprintf(e.msg, sizeof e.msg, "%s failed: %s", body->name, err && err[0] ? err : tr_aap_strerror(rc));
    const int st = ps.fail_frag >= 0 ? ps.fail_status : rc == TR_AAP_ENOMEM ? TR_ENOMEM : TR_EINTERNAL;
    for (int64_t i = ps.last_put + 1; i < L->nfrags; i++)
      if (sink->mode != TR_SINK_SPREAD || tr_grid_owner(i, sink->nranks) == sink->rank) tr_sink_put(sink, i, st, &e, NULL);
  }
  tr_graph_ft_close(gft, eng->ft_counts);
  body->release(&p);
  tr_state_store_destroy(ps.states);
  pthread_mutex_destroy(&ps.mu);
  pthread_mutex_destroy(&ps.pmu);
  pthread_cond_destroy(&ps.pcv);
  return rc;
}


void tr_graph_release_user(tr_aap_program *p) {
  free(p->user);
  p->user = NULL;
}
