/*
 * graph_run.c - the graph runners (graph.h): a program over rasters (the
 * commands' tr_run_graph) or over a caller's loaders and writer
 * (tr_graph_run_io: tests, benchmarks, in-memory arrays). Both take their
 * body and memory budget from the planner (graph_plan.c) and run it through
 * the engine step (graph_exec.c), so there is one path to test.
 *
 * The command's run, top-down (tr_run_graph_inputs):
 *   run_open    engine options, the job (run/run.h: options checked, the
 *               input opened on every rank, the tile grid) and the extra
 *               inputs, each opened once and agreed;
 *   run_plan    the program's params from the opened input (the command's
 *               prepare), the body and the state store's budget;
 *   run_create  agreed: the output under its temporary name and the sink,
 *               the tile stores over the inputs, the layout, the back-end;
 *   run_engine  agreed: the engine step, its failures mapped to one status
 *               and line, --aap-stats;
 *   run_finish  the job's end (commit or delete on the writer), frees.
 */
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "burn.h"
#include "dist.h"
#include "step.h"
#include "rank_progress.h"
#include "graph.h"
#include "graph_ft.h"
#include "graph_plan.h"
#include "mem_limit.h"
#include "path_max.h"
#include "report_json.h"
#include "run.h"
#include "scratch_file.h"
#include "side_file.h"

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>
#endif

/* ------------------------------------------------------------ shared */

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

/* The tile store's cache (MB) and the rounds running at once (threads in
 * one process, one per rank under mpirun) that a run plans with. */
static double store_cache_mb(const tr_graph_opts *g) { return g->cache_mb >= 0 ? g->cache_mb : 16.0; }
static int rounds_at_once(int nranks, int threads) { return nranks > 1 ? 1 : threads; }

static tr_tile grid_tile_at(const void *geom, int64_t i) { return tr_grid_tile(geom, i); }

static tr_tile layout_tile_at(const void *geom, int64_t i) {
  return tr_graph_frag_tile(&((const tr_aap_layout *)geom)->frags[i]);
}

/* What the planner is told of a command's job: its grid and ranks, the
 * caches and the writer's. */
static int ft_copies(tr_ft_mode ft) { return ft == TR_FT_DUAL ? 2 : ft == TR_FT_REPLAY ? 1 : 0; }

static tr_graph_space job_space(const tr_job *job, const tr_graph_opts *g, int threads, int64_t writer) {
  return (tr_graph_space){
      .ntiles = job->ntiles,
      .tile_at = grid_tile_at,
      .geom = &job->grid,
      .rank = job->rank,
      .nranks = job->nranks,
      .pinned = rounds_at_once(job->nranks, threads),
      .ft_copies = ft_copies(job->run->ft),
      .fixed = (int64_t)((store_cache_mb(g) + gdal_cache_mb(job)) * (1 << 20)) + TR_PROCESS_BYTES,
      .writer = writer};
}

/* ------------------------------------------------ the command's runner */

/* What the store's loader over the GDAL input keeps: progress of the first
 * half of a run is the share of this rank's fragments whose first round
 * (PEval) has loaded its window. With burn lines (the DEM, input 0), each
 * window is burnt as it is read, and the cells lowered in the tiles this
 * rank owns are counted at each one's first load (a tile's window may be
 * read again, and a helper rank may read another's). */
typedef struct {
  const tr_run_opts *run;
  tr_input *in;
  unsigned char *seen;         /* NULL: an extra input, no progress */
  int64_t mine, started;
  tr_burn *burn;               /* NULL: none */
  int rank, nranks;
  int64_t burnt;
  int status;
  tr_error first;
  pthread_mutex_t mu; /* the fields above, when loads run concurrently */
} dem_loader;

static int load_dem(void *user, const tr_tile *t, int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                    float *dst, int64_t stride) {
  dem_loader *d = user;
  tr_error e;
  int st = tr_input_read_f32(d->in, row0, col0, rows, cols, dst, stride, &e);
  /* the read alone may run beside others' (direct reads): the loader's own
   * fields are under its lock */
  pthread_mutex_lock(&d->mu);
  const int first = d->seen && !d->seen[t->index];
  if (!st && d->burn) {
    const int64_t tile[4] = {t->row0, t->col0, t->rows, t->cols};
    int64_t n = 0;
    st = tr_burn_window(d->burn, row0, col0, rows, cols, dst, stride, d->in->has_nodata, (float)d->in->nodata,
                        first && t->index % d->nranks == d->rank ? tile : NULL, &n, &e);
    d->burnt += n;
  }
  if (!st && first) {
    d->seen[t->index] = 1;
    d->started++;
    tr_rank_progress_step(d->run);
    if (d->run->progress && !d->run->progress(0.5 * (double)d->started / (double)d->mine, NULL, d->run->progress_user))
      st = tr_fail(&e, TR_EINTERRUPTED, "interrupted");
  }
  if (st && !d->status) {
    d->status = st;
    d->first = e;
  }
  pthread_mutex_unlock(&d->mu);
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

/* Everything a command's run carries from one step to the next. */
typedef struct {
  const tr_run_opts *run;
  const tr_graph_opts *g;
  const tr_graph_program *prog;
  const tr_graph_body *body;
  const char *const *srcs;
  int nsrc;
  const char *dst;
  const tr_burn_opts *burn_opts; /* NULL: no burning */
  tr_burn *burn;
  uint64_t burnt;                /* cells lowered, all ranks (with --aap-stats) */
  tr_graph_engine eng;
  tr_job job;
  tr_input extra[TR_GRAPH_MAX_INPUTS]; /* [1..nsrc) */
  void *params;
  tr_product prod;
  tr_graph_need need;
  char spill_dir[TR_PATH_MAX];
  tr_aap_layout L;
  tr_tile_store *stores[TR_GRAPH_MAX_INPUTS];
  dem_loader d[TR_GRAPH_MAX_INPUTS];
  tr_state_store_stats sstats;
  tr_graph_ft_counts ftc;
  int64_t mem; /* what this rank plans for (plan_mem) */
} graph_run;

static void close_extra(graph_run *r, int upto) {
  for (int k = 1; k < upto; k++) tr_input_close(&r->extra[k]);
}

/* Opens the extra inputs srcs[1..] on every rank (agreed) and checks their
 * size against the first; on failure all are closed. */
static int open_extra(graph_run *r, tr_error *err) {
  int st = TR_OK, k = 1;
  for (; k < r->nsrc && !st; k++) {
    st = tr_input_open(&r->extra[k], r->srcs[k], 1, err);
    if (st) break;
    if ((st = tr_input_same_size(&r->extra[k], r->srcs[k], &r->job.in, "", r->srcs[0], err))) {
      tr_input_close(&r->extra[k]);
      break;
    }
  }
  st = tr_step_end(r->run, st, err);
  if (st) close_extra(r, k);
  return st;
}

static int run_open(graph_run *r, tr_error *err) {
  int st = engine_opts(r->g, tr_run_threads(r->run), &r->eng.aap, err);
  if (st) return st;
  if ((st = tr_job_open(&r->job, r->run, r->srcs[0], err))) return st;
  if (r->job.grid.tile < TR_MIN_GRAPH_TILE && r->job.ntiles > TR_MAX_SMALL_FRAGS)
    return tr_job_finish(&r->job,
                         tr_fail(err, TR_EUSAGE,
                                 "--tile-size %lld makes %lld tiles; %s needs tiles of at least %d cells a side "
                                 "(each tile is a fragment with rounds and messages of its own)",
                                 (long long)r->job.grid.tile, (long long)r->job.ntiles, r->prog->name,
                                 TR_MIN_GRAPH_TILE),
                         err);
  if (r->run->ft == TR_FT_OFF && r->job.inject.launch.nsigbus) {
    /* --ft off computes a round in the fragment's own state: nothing to
     * compute it again from, so no guard (graph_ft.h) */
    return tr_job_finish(&r->job,
                         tr_fail(err, TR_EUSAGE,
                                 "inject: sigbus and hwpoison faults in %s's rounds need --ft replay or dual (under "
                                 "--ft off a memory failure in a round kills the process by SIGBUS)",
                                 r->prog->name),
                         err);
  }
  for (int i = 0; i < r->job.inject.launch.nsigbus; i++)
    if (r->job.inject.launch.sigbus[i].hwpoison)
      /* a round's buffers are the program's to allocate: no page to poison before it reads one */
      return tr_job_finish(&r->job,
                           tr_fail(err, TR_EUSAGE,
                                   "inject: hwpoison is for local kernels' launches; %s's rounds take sigbus faults",
                                   r->prog->name),
                           err);
  if ((st = open_extra(r, err))) return tr_job_finish(&r->job, st, err);
  /* the burn lines, laid on the DEM's grid on every rank */
  if (r->burn_opts && (st = tr_step_end(r->run, tr_burn_open(&r->burn, r->burn_opts, &r->job.in, r->run, err), err))) {
    close_extra(r, r->nsrc);
    return tr_job_finish(&r->job, st, err);
  }
  /* --aap-stats, the extra inputs and the burn lines join the files tr_job_create checks */
  r->job.extra_outs[0] = (tr_file_role){r->g->aap_stats, TR_ROLE_AAP_STATS};
  for (int k = 1; k < r->nsrc; k++) r->job.extra_reads[k - 1] = (tr_file_role){r->srcs[k], "an input of this stage"};
  if (r->burn) r->job.extra_reads[r->nsrc - 1] = (tr_file_role){r->burn_opts->file, "--burn"};
  r->eng.aap.inject = r->job.inject.aap;
  r->eng.spill_fail = r->job.inject.spill_fail;
  /* --ft: each round of the program computed twice, or tracked (graph_ft.h) */
  r->eng.ft = r->run->ft;
  r->eng.inject = &r->job.inject;
  r->eng.ft_check = r->run->ft_check;
  r->eng.ft_max_errors = r->run->ft_max_errors;
  r->eng.ft_timeout_ms = r->run->ft_timeout_ms;
  r->eng.ft_counts = &r->ftc;
  r->eng.aap.give_up = engine_give_up;
  r->eng.aap.give_up_user = (void *)r->run;
  return TR_OK;
}

/* What this rank plans for: --mem, or its default. Without --mem and with
 * g->mem_of_input: that many times this rank's share of the input's cells
 * as Float32, where the main body still keeps at least half of its state
 * there (it spills the rest); where it would not (the planner would take a
 * twin, slower: a DEM whose state is not well above the fixed part, whose
 * memory is mostly the process's anyway), or where that is above the
 * default, the default. */
static int64_t plan_mem(const graph_run *r, const tr_graph_space *sp) {
  const int64_t dflt = tr_mem_limit(r->run->mem);
  if (r->run->mem > 0 || !(r->g->mem_of_input > 0)) return dflt;
  const double cells = (double)r->job.in.rows * (double)r->job.in.cols / (double)r->job.nranks;
  const int64_t want = (int64_t)(r->g->mem_of_input * cells * (double)sizeof(float));
  if (want >= dflt) return dflt;
  tr_graph_need n;
  const tr_graph_body *b = tr_graph_plan_body(r->prog, r->params, sp, want, &n);
  if (!b || b->role != TR_BODY_MAIN || want < n.fixed + (int64_t)(sp->pinned + 1) * n.frag_max) return dflt;
  /* the main body with less than half of its state (the planner takes it
   * when no twin fits, where the state is not above the fixed part): a
   * 5000² fill kept 4 MiB of its 96 MiB and took 9.0 s against 3.1 s in
   * memory, to peak at 101 MB instead of 195 MB (by hand) */
  const int64_t budget = want - n.fixed - (int64_t)sp->pinned * n.frag_max;
  if (n.state <= n.fixed || 2 * budget < n.state) return dflt;
  return want;
}

/* Where the state beyond --mem goes (man terrafort-fill, MEMORY): --tmp or
 * the output's folder, checked even when nothing will spill (a mistyped
 * folder found only on the day a larger DEM spills would end that run), and
 * with room for what spills. */
static int spill_plan(graph_run *r, const tr_graph_space *sp, const char *what, tr_error *err) {
  int st = tr_scratch_folder(r->g->tmp_dir, r->dst, r->spill_dir, sizeof r->spill_dir, err);
  if (st) return st;
  int64_t mem = r->mem;
  const int pinned = rounds_at_once(r->job.nranks, r->eng.aap.threads);
  if ((st = tr_graph_plan_budget(&r->need, pinned, mem, r->run->mem, what, &r->eng.state_budget, err)))
    return st;
  if (r->eng.state_budget < 0) return TR_OK;
  struct statvfs vs;
  if (statvfs(r->spill_dir, &vs) != 0)
    return tr_fail(err, TR_EOUTPUT, "cannot use '%s' for the state that does not fit in --mem: %s", r->spill_dir,
                   strerror(errno));
  /* the node's ranks share the folder's disk as they share its memory */
  int64_t spill = r->need.state - r->eng.state_budget;
  const int64_t avail = (int64_t)vs.f_bavail * (int64_t)vs.f_frsize / tr_node_ranks();
  if (spill > avail && r->run->mem <= 0 && mem < tr_mem_limit(0)) {
    /* the default's own spill has no room there: the run plans for the
     * default --mem instead, as it did before mem_of_input */
    r->mem = mem = tr_mem_limit(0);
    r->body = tr_graph_plan_body(r->prog, r->params, sp, mem, &r->need);
    if (!r->body) return tr_fail(err, TR_EINTERNAL, "%s: no body computes these params", r->prog->name);
    if ((st = tr_graph_plan_budget(&r->need, pinned, mem, r->run->mem, what, &r->eng.state_budget, err))) return st;
    if (r->eng.state_budget < 0) return TR_OK;
    spill = r->need.state - r->eng.state_budget;
  }
  if (spill > avail)
    return tr_fail(err, TR_ENOSPC,
                   "%s: %.2f GiB of state does not fit in %.0f MiB of memory and the rest, up to %.2f GiB, does "
                   "not fit in '%s' either (%.2f GiB free for this rank): give more --mem or a --tmp folder with room",
                   what, (double)r->need.state / (1 << 30), (double)mem / (1 << 20), (double)spill / (1 << 30),
                   r->spill_dir, (double)avail / (1 << 30));
  /* the heap is the caller's to tune (tr_heap_spill_apply, terrafort's) */
  if (r->run->heap_spill) r->run->heap_spill(spill > r->eng.state_budget, r->run->heap_spill_user);
  return TR_OK;
}

void tr_heap_spill_apply(int mostly_spilled, void *user) {
  (void)user;
#ifdef __GLIBC__
  /* tiles' state is freed and allocated again by whichever thread spills or
   * restores it; glibc's per-thread arenas keep what other threads freed
   * (the outofcore benchmark's flowgraph at 32000² peaked 82 MB higher), so
   * an out-of-core run allocates from one arena. */
  mallopt(M_ARENA_MAX, 1);
  /* Where more state spills than stays, arrays of 256 KiB and more are
   * mapped each on its own and unmapped when freed: the heap would keep the
   * holes between tiles' arrays of every size (scripts/bench/outofcore,
   * flowgraph at 32000² with --mem 1G, when its stages still spilled: 1273
   * MiB before, 1038 MiB with this and the store's trim; glibc otherwise
   * raises this threshold to the largest block freed, which is every tile's
   * state). Not where at least half stays: each round's arrays then come from
   * fresh pages, a fault per 4 KiB, and fill's default plan at 8000² (35
   * spills) took 5.0 s instead of 3.4 s for 11 MB less peak (by hand,
   * interleaved; scripts/bench/fill: 3.72 s). Without it such runs stayed
   * under --mem at 8000² (by hand: fill 279 MB with --mem 300M, 241 MB with
   * 260M; D-infinity 348 MB with 340M). The state store trims the rest
   * (state_store.c). */
  if (mostly_spilled) mallopt(M_MMAP_THRESHOLD, 256 << 10);
#else
  (void)mostly_spilled;
#endif
}

static int run_plan(graph_run *r, tr_graph_prepare_fn prepare, const void *opts, tr_error *err) {
  r->params = calloc(1, r->prog->params_size ? r->prog->params_size : 1);
  r->prod = (tr_product){.type = r->prog->cell_type, .bands = 1, .file_type = GDT_Unknown};
  int st = r->params ? prepare(&r->job.in, opts, r->params, &r->prod, err) : tr_fail(err, TR_ENOMEM, "out of memory");
  if (st) return st;
  char what[160];
  snprintf(what, sizeof what, "%s of a %lld x %lld raster", r->prog->name, (long long)r->job.in.rows,
           (long long)r->job.in.cols);
  /* the writer's sink assembles a row of output tiles (run/run.h) */
  const int64_t writer = tr_job_writer_cache(&r->job, &r->prod);
  tr_job_cache_plan(&r->job, gdal_cache_mb(&r->job));
  tr_graph_space sp = job_space(&r->job, r->g, r->eng.aap.threads, writer);
  sp.fixed += tr_burn_bytes(r->burn); /* the burn lines, on every rank (burn.h) */
  r->mem = plan_mem(r, &sp);
  r->body = tr_graph_plan_body(r->prog, r->params, &sp, r->mem, &r->need);
  if (!r->body) return tr_fail(err, TR_EINTERNAL, "%s: no body computes these params", r->prog->name);
  st = spill_plan(r, &sp, what, err);
  r->eng.spill_dir = r->spill_dir;
  return st;
}

/* Agreed: with every rank's plan good, the output and sink, the stores and
 * the layout; else the job ends. */
static int run_create(graph_run *r, int st, tr_error *err) {
  st = tr_step_end(r->run, st, err);
  if (st) {
    tr_job_finish(&r->job, st, err);
    return st;
  }
  return tr_job_create(&r->job, r->dst, &r->prod, TR_SINK_SPREAD, 0.5, err);
}

/* The stores over the inputs, the layout and the back-end, then the engine
 * step; its failures become one status and line in e. */
/* --aap-stats: the engine's lines and the state store's. A file of its own
 * is written whole under a temporary name and put in place with the output
 * (io/side_file.h); a stage of a run of several programs (flowgraph)
 * appends to the run's file instead, which its owner puts in place. */
static int write_aap_stats(const graph_run *r, const tr_aap_stats *astats, tr_error *e) {
  const tr_state_store_stats *s = &r->sstats;
  tr_json *v[3] = {tr_json_object(), tr_json_object(), r->burn ? tr_burn_json(r->burn, (int64_t)r->burnt) : NULL},
          *store = tr_json_object();
  if (v[0]) tr_json_aap_stats(v[0], astats);
  tr_json_set(store, "program", tr_json_str(r->body->name));
  tr_json_set(store, "state_bytes", tr_json_int(r->need.state));
  tr_json_set(store, "fixed_bytes", tr_json_int(r->need.fixed));
  tr_json_set(store, "frag_max_bytes", tr_json_int(r->need.frag_max));
  tr_json_set(store, "budget", tr_json_int(r->eng.state_budget));
  tr_json_set(store, "peak_resident", tr_json_int(s->peak_resident));
  tr_json_set(store, "spills", tr_json_int(s->spills));
  tr_json_set(store, "restores", tr_json_int(s->restores));
  tr_json_set(store, "bytes_written", tr_json_int(s->bytes_written));
  tr_json_set(store, "bytes_read", tr_json_int(s->bytes_read));
  tr_json_set(store, "raw_written", tr_json_int(s->raw_written));
  tr_json_set(v[1], "state_store", store);
  /* the burn's object (burn.h), when the run burnt lines into its DEM */
  const int st = tr_side_write_json(r->g->aap_stats, r->g->aap_stats_append, "engine statistics", v, r->burn ? 3 : 2, e);
  tr_json_free(v[0]);
  tr_json_free(v[1]);
  tr_json_free(v[2]);
  return st;
}

/* --ft-report: the rounds' counts summed over the ranks (every rank calls
 * it), one JSON line written by rank 0; a file of its own, or appended to
 * the run's as --aap-stats is. */
static int write_ft_report(graph_run *r, tr_error *e) {
  tr_graph_ft_counts *c = &r->ftc;
  int64_t *v[] = {&c->dual.blocks, &c->dual.sub_blocks, &c->dual.injected, &c->dual.detected, &c->dual.corrected,
                  &c->dual.tolerated, &c->dual.fatal, &c->dual.mismatches, &c->dual.tolerated_sub_blocks,
                  &c->dual.failed_sub_blocks, &c->dual.recomputes, &c->dual.votes, &c->dual.timeouts,
                  &c->dual.redispatches, &c->injected, &c->reported, &c->inv_checked, &c->inv_faults,
                  &c->inv_reproduced, &c->trk.regions, &c->trk.outside_writes, &c->trk.launches,
                  &c->trk.idempotent, &c->trk.errors, &c->trk.reruns, &c->trk.relaunch_sets,
                  &c->trk.relaunch_launches, &c->trk.searches_failed, &c->trk.checkpoints,
                  &c->trk.checkpoint_restores, &c->trk.checkpoint_launches, &c->trk.unrepaired,
                  &c->trk.limit_aborts, &c->trk.sampled, &c->trk.sample_mismatches, &c->mf_found,
                  &c->mf_corrected, &c->mf_retired};
  double *d[] = {&c->dual.compute_s, &c->dual.detect_s, &c->dual.recompute_s, &c->trk.replay_s};
  enum { NV = sizeof v / sizeof v[0], ND = sizeof d / sizeof d[0] };
  uint64_t u[NV + ND];
  for (int i = 0; i < NV; i++) u[i] = (uint64_t)*v[i];
  for (int i = 0; i < ND; i++) u[NV + i] = (uint64_t)(*d[i] * 1e9); /* nanoseconds */
  int st = r->job.nranks > 1 ? tr_dist_sum_u64(r->run, u, NV + ND, e) : TR_OK;
  if (st || r->job.rank != 0 || !r->run->ft_report) return st;
  for (int i = 0; i < NV; i++) *v[i] = (int64_t)u[i];
  for (int i = 0; i < ND; i++) *d[i] = (double)u[NV + i] * 1e-9;
  tr_json *o = tr_graph_ft_json(r->run->ft, r->prog->name, c);
  st = tr_side_write_json(r->run->ft_report, r->g->ft_report_append, "fault-tolerance report", &o, 1, e);
  tr_json_free(o);
  return st;
}

static int run_engine(graph_run *r, tr_error *e) {
  tr_job *job = &r->job;
  int status = TR_OK;
  const double cache_mb = store_cache_mb(r->g);
  r->d[0] = (dem_loader){.run = r->run,
                         .in = &job->in,
                         .seen = calloc((size_t)job->ntiles, 1),
                         .mine = tr_grid_owned(job->ntiles, job->rank, job->nranks),
                         .burn = r->burn,
                         .rank = job->rank,
                         .nranks = job->nranks,
                         .mu = PTHREAD_MUTEX_INITIALIZER};
  int stores_ok = 1;
  for (int k = 0; k < r->nsrc; k++) {
    tr_input *ink = k ? &r->extra[k] : &job->in;
    if (k) r->d[k] = (dem_loader){.run = r->run, .in = ink, .mu = PTHREAD_MUTEX_INITIALIZER};
    r->stores[k] = tr_tile_store_create(job->in.rows, job->in.cols, job->ntiles,
                                        (size_t)(cache_mb * (1 << 20)) / (size_t)r->nsrc, ink->has_nodata,
                                        (float)ink->nodata, load_dem, &r->d[k]);
    stores_ok = stores_ok && r->stores[k];
    /* a direct read (a plain Float32 GeoTIFF, read with pread: io/raster.h)
     * needs no lock; burning (GDAL's rasteriser) and GDAL reads do */
    if (r->stores[k] && ink->direct && !(k == 0 && r->burn))
      tr_tile_store_concurrent_loads(r->stores[k]);
  }
  if (!r->d[0].seen || !stores_ok ||
      tr_aap_layout_grid(&r->L, job->in.rows, job->in.cols, job->grid.tile, job->grid.tile) != 0)
    status = tr_fail(e, TR_ENOMEM, "out of memory");
#ifdef TERRAFORT_HAVE_MPI
  MPI_Comm world = MPI_COMM_WORLD;
  if (job->nranks > 1) {
    r->eng.backend = TR_GRAPH_MPI;
    r->eng.mpi_comm = &world;
  }
#endif
  if (!status && job->rank == 0 && r->run->progress && !r->run->progress(0.0, NULL, r->run->progress_user))
    status = tr_fail(e, TR_EINTERRUPTED, "interrupted");
  r->eng.spill_stats = &r->sstats;
  /* all ranks run the engine or none does: one missing would leave the
   * others waiting */
  status = tr_step_end(r->run, status, e);
  if (status) {
    tr_sink_fail(&job->sink, status, e);
    for (int64_t i = job->rank; i < job->ntiles; i += job->nranks) tr_sink_put(&job->sink, i, status, e, NULL);
    return status;
  }
  tr_aap_stats astats;
  memset(&astats, 0, sizeof astats);
  char msg[256] = "";
  int pst = 0;
  const int rc =
      tr_graph_exec(r->body, r->params, &r->L, r->stores, r->nsrc, &job->sink, &r->eng, &astats, msg, sizeof msg, &pst);
  dem_loader *d = &r->d[0];
  for (int k = 1; k < r->nsrc && !d->status; k++)
    if (r->d[k].status) d->status = r->d[k].status, d->first = r->d[k].first;
  if (d->status) {
    /* the input's own failure is the cause; the tiles' generic one only follows from it */
    status = d->status, *e = d->first;
    job->sink.status = 0;
    tr_sink_fail(&job->sink, status, e);
  } else if (job->sink.status)
    status = job->sink.status, *e = job->sink.first;
  else if (rc == TR_AAP_EABANDONED)
    status = tr_dist_check(r->run, e) ? tr_dist_check(r->run, e) : tr_fail(e, TR_EINTERNAL, "%s", msg);
  else if (rc && pst)
    status = tr_fail(e, pst, "%s", msg);
  else if (rc)
    status = tr_fail(e, rc == TR_AAP_ENOMEM ? TR_ENOMEM : TR_EINTERNAL, "%s of '%s' failed: %s", r->prog->name,
                     r->srcs[0], msg[0] ? msg : tr_aap_strerror(rc));
  if (r->burn && r->g->aap_stats) {
    /* the cells each rank lowered in its own tiles, summed for the report */
    r->burnt = (uint64_t)r->d[0].burnt;
    tr_error be = {{0}};
    const int bst = job->nranks > 1 ? tr_dist_sum_u64(r->run, &r->burnt, 1, &be) : TR_OK;
    if (!status && bst) status = bst, *e = be;
  }
  if (!status && job->rank == 0 && r->g->aap_stats) status = write_aap_stats(r, &astats, e);
  tr_aap_stats_free(&astats);
  if (r->run->ft != TR_FT_OFF) {
    /* the writer takes the other ranks' last tiles first: they may be
     * waiting to hand them over and would never reach the report's sum */
    if (job->rank == 0 && job->nranks > 1) (void)tr_sink_drain(&job->sink, NULL);
    tr_error fe = {{0}};
    const int fst = write_ft_report(r, &fe);
    if (!status && fst) status = fst, *e = fe;
  }
  return status;
}

static int run_finish(graph_run *r, int status, const tr_error *e, tr_error *err) {
  tr_error e2 = *e;
  const int st = tr_job_finish(&r->job, status, &e2);
  if (st && err) *err = e2;
  tr_aap_layout_free(&r->L);
  for (int k = 0; k < r->nsrc; k++) tr_tile_store_destroy(r->stores[k]);
  close_extra(r, r->nsrc);
  free(r->d[0].seen);
  free(r->params);
  return st;
}

/* What --ft means for a graph program: rounds compared bit for bit, one
 * way of computing them (graph_ft.h). */
static int graph_ft_usage(const tr_run_opts *run, const char *name, tr_error *err) {
  if (run->ft == TR_FT_OFF) return TR_OK;
  if (run->ft_tolerance > 0 || run->ft_error_rate > 0 || run->ft_source_profile)
    return tr_fail(err, TR_EUSAGE,
                   "--ft-tolerance, --ft-error-rate and --ft-profile are for local kernels' cells; %s's rounds are "
                   "compared bit for bit",
                   name);
  if (run->ft_basic)
    return tr_fail(err, TR_EUSAGE, "--ft-mode basic is the local kernels' baseline; %s's rounds have one dual mode",
                   name);
  return TR_OK;
}

/* Both runners of a command below: the program over srcs, input 0 burnt
 * with burn's lines when given. */
static int run_graph(const tr_run_opts *run, const tr_graph_opts *g, const char *name, tr_graph_prepare_fn prepare,
                     const void *opts, const char *const *srcs, int nsrc, const tr_burn_opts *burn, const char *dst,
                     tr_error *err) {
  if (nsrc < 1 || nsrc > TR_GRAPH_MAX_INPUTS) return tr_fail(err, TR_EINTERNAL, "graph: %d inputs", nsrc);
  graph_run *r = calloc(1, sizeof *r);
  if (!r) return tr_fail(err, TR_ENOMEM, "out of memory");
  *r = (graph_run){.run = run,
                   .g = g,
                   .prog = tr_graph_program_find(name),
                   .srcs = srcs,
                   .nsrc = nsrc,
                   .dst = dst,
                   .burn_opts = burn && burn->file ? burn : NULL};
  snprintf(r->spill_dir, sizeof r->spill_dir, ".");
  int st;
  if (!r->prog) st = tr_fail(err, TR_EINTERNAL, "no graph program named '%s'", name);
  else if ((st = graph_ft_usage(run, r->prog->name, err)))
    ;
  else if (!(st = run_open(r, err))) {
    st = run_create(r, run_plan(r, prepare, opts, err), err);
    if (st) {
      close_extra(r, nsrc);
      free(r->params);
    } else {
      tr_error e = {{0}};
      const int status = run_engine(r, &e);
      st = run_finish(r, status, &e, err);
    }
  }
  tr_burn_close(r->burn);
  free(r);
  return st;
}

int tr_run_graph_inputs(const tr_run_opts *run, const tr_graph_opts *g, const char *name,
                        tr_graph_prepare_fn prepare, const void *opts, const char *const *srcs, int nsrc,
                        const char *dst, tr_error *err) {
  return tr_stage_end(run, run_graph(run, g, name, prepare, opts, srcs, nsrc, NULL, dst, err), err);
}

int tr_run_graph(const tr_run_opts *run, const tr_graph_opts *g, const char *name, tr_graph_prepare_fn prepare,
                 const void *opts, const char *src, const char *dst, tr_error *err) {
  return tr_stage_end(run, run_graph(run, g, name, prepare, opts, &src, 1, NULL, dst, err), err);
}

int tr_run_graph_burnt(const tr_run_opts *run, const tr_graph_opts *g, const char *name, tr_graph_prepare_fn prepare,
                       const void *opts, const char *src, const tr_burn_opts *burn, const char *dst, tr_error *err) {
  return tr_stage_end(run, run_graph(run, g, name, prepare, opts, &src, 1, burn, dst, err), err);
}

int tr_graph_fits(const tr_run_opts *run, const tr_graph_opts *g, const char *name, const void *params,
                  const char *src, GDALDataType file_type, int *fits, tr_error *err) {
  const tr_graph_program *prog = tr_graph_program_find(name);
  if (!prog) return tr_fail(err, TR_EINTERNAL, "no graph program named '%s'", name);
  tr_aap_opts a;
  int st = engine_opts(g, tr_run_threads(run), &a, err);
  if (st) return st;
  tr_job job;
  if ((st = tr_job_open(&job, run, src, err))) return st;
  const tr_product prod = {.type = prog->cell_type, .bands = 1, .file_type = file_type};
  const tr_graph_space sp = job_space(&job, g, a.threads, tr_job_writer_cache(&job, &prod));
  const tr_graph_body *b = tr_graph_plan_body(prog, params, &sp, INT64_MAX, NULL);
  if (!b) return tr_job_finish(&job, tr_fail(err, TR_EINTERNAL, "%s: no body computes these params", name), err);
  *fits = tr_graph_plan_all_in_memory(prog, b, &sp) <= tr_mem_limit(run->mem);
  return tr_job_finish(&job, TR_OK, err);
}

/* ------------------------------------------------- the caller's runner */

/* The caller's loader fills a contiguous window: rows to be placed at a
 * wider stride go through a scratch array kept from one load to the next
 * (loads run one at a time, tile_store.h). */
typedef struct {
  const tr_graph_io *io;
  int k;
  float *scratch;
  size_t scratch_n;
} io_loader;

static int io_load(void *user, const tr_tile *t, int64_t row0, int64_t col0, int64_t rows, int64_t cols, float *dst,
                   int64_t stride) {
  (void)t;
  io_loader *l = user;
  if (stride == cols) return l->io->load(l->io->load_user[l->k], row0, col0, rows, cols, dst);
  const size_t n = (size_t)(rows * cols);
  if (n > l->scratch_n) {
    float *p = realloc(l->scratch, n * sizeof(float));
    if (!p) return -1;
    l->scratch = p;
    l->scratch_n = n;
  }
  if (l->io->load(l->io->load_user[l->k], row0, col0, rows, cols, l->scratch) != 0) return -1;
  for (int64_t r = 0; r < rows; r++) memcpy(dst + r * stride, l->scratch + r * cols, (size_t)cols * sizeof(float));
  return 0;
}

static int io_write(void *user, const tr_tile *t, const void *cells, tr_error *e) {
  const tr_graph_io *io = user;
  if (io->write && io->write(io->write_user, t->row0, t->col0, t->rows, t->cols, cells) != 0)
    return tr_fail(e, TR_EOUTPUT, "the writer failed on tile %lld", (long long)t->index);
  return TR_OK;
}

static void io_err(char *err, size_t errlen, const char *msg) {
  if (err && errlen) snprintf(err, errlen, "%s", msg);
}

int tr_graph_run_io(const char *name, const void *params, const tr_graph_io *io, tr_aap_stats *stats, char *err,
                    size_t errlen) {
  const tr_graph_program *prog = tr_graph_program_find(name);
  if (!prog || !io || !io->load || io->rows < 1 || io->cols < 1 || io->ninputs < 1 ||
      io->ninputs > TR_GRAPH_MAX_INPUTS) {
    io_err(err, errlen, "graph: need a program, rows, cols and a loader per input");
    return TR_AAP_EINVAL;
  }
  tr_aap_layout own;
  memset(&own, 0, sizeof own);
  const tr_aap_layout *L = io->layout;
  if (L && (L->rows != io->rows || L->cols != io->cols)) {
    io_err(err, errlen, "graph: layout does not match the grid");
    return TR_AAP_EINVAL;
  }
  if (!L) {
    const int rc = io->tile > 0 ? tr_aap_layout_grid(&own, io->rows, io->cols, io->tile, io->tile) : TR_AAP_EINVAL;
    if (rc) {
      if (err && errlen) snprintf(err, errlen, "graph: bad tile size %lld", (long long)io->tile);
      return rc;
    }
    L = &own;
  }
  int64_t max_cells = 0;
  for (int64_t f = 0; f < L->nfrags; f++)
    if (L->frags[f].rows * L->frags[f].cols > max_cells) max_cells = L->frags[f].rows * L->frags[f].cols;
  tr_graph_engine eng = io->eng;
  int rank = 0, nranks = 1;
  if (eng.backend == TR_GRAPH_MPI) {
#ifdef TERRAFORT_HAVE_MPI
    MPI_Comm_rank(*(MPI_Comm *)eng.mpi_comm, &rank);
    MPI_Comm_size(*(MPI_Comm *)eng.mpi_comm, &nranks);
#else
    tr_aap_layout_free(&own);
    io_err(err, errlen, "graph: built without MPI");
    return TR_AAP_ENOMPI;
#endif
  }
  /* the plan, as the command's: the body from the params and io->mem */
  const tr_graph_space sp = {.ntiles = L->nfrags,
                             .tile_at = layout_tile_at,
                             .geom = L,
                             .rank = rank,
                             .nranks = nranks,
                             .pinned = rounds_at_once(nranks, eng.aap.threads),
                             .ft_copies = ft_copies(eng.ft),
                             .fixed = (int64_t)io->cache_bytes + TR_PROCESS_BYTES};
  const int64_t mem = io->mem > 0 ? io->mem : INT64_MAX;
  tr_graph_need need;
  const tr_graph_body *body = NULL;
  if (io->body) {
    const tr_graph_program *owner = NULL;
    body = tr_graph_body_find(io->body, &owner);
    if (owner != prog) body = NULL;
    else need = tr_graph_plan_need(prog, body, &sp);
  } else {
    body = tr_graph_plan_body(prog, params, &sp, mem, &need);
  }
  int rc = TR_AAP_OK;
  tr_error e = {{0}};
  if (!body) {
    io_err(err, errlen, "graph: no body of the program for these params");
    rc = TR_AAP_EINVAL;
  } else if (!eng.state_budget && io->mem > 0 &&
             tr_graph_plan_budget(&need, sp.pinned, mem, io->mem, prog->name, &eng.state_budget, &e) != TR_OK) {
    io_err(err, errlen, e.msg);
    rc = TR_AAP_ENOMEM;
  }
  if (!rc && io->chosen) *io->chosen = body->name;
  io_loader loaders[TR_GRAPH_MAX_INPUTS] = {{0}};
  tr_tile_store *stores[TR_GRAPH_MAX_INPUTS] = {NULL};
  for (int k = 0; !rc && k < io->ninputs; k++) {
    loaders[k] = (io_loader){io, k, NULL, 0};
    stores[k] = tr_tile_store_create(io->rows, io->cols, L->nfrags, io->cache_bytes / (size_t)io->ninputs,
                                     io->has_nodata, io->nodata, io_load, &loaders[k]);
    if (!stores[k]) rc = TR_AAP_ENOMEM;
  }
  const tr_product prod = {.type = prog->cell_type,
                           .bands = 1,
                           .has_nodata = io->out_has_nodata,
                           .nodata = io->out_has_nodata ? io->out_nodata : NAN,
                           .file_type = GDT_Unknown};
  const tr_sink_mode mode = eng.backend == TR_GRAPH_MPI ? TR_SINK_SPREAD : TR_SINK_LOCAL;
  tr_sink sink;
  int sink_ok = 0;
  if (!rc && tr_sink_init(&sink, NULL, L->nfrags, layout_tile_at, L, max_cells, &prod, mode, io_write, (void *)io,
                          &e) == TR_OK)
    sink_ok = 1;
  else if (!rc)
    rc = TR_AAP_ENOMEM;
  if (!rc) {
    rc = tr_graph_exec(body, params, L, stores, io->ninputs, &sink, &eng, stats, err, errlen, NULL);
    if (tr_sink_drain(&sink, &e) && !rc) {
      io_err(err, errlen, e.msg);
      rc = TR_AAP_EPROGRAM;
    }
  }
  if (sink_ok) tr_sink_close(&sink);
  for (int k = 0; k < io->ninputs; k++) {
    tr_tile_store_destroy(stores[k]);
    free(loaders[k].scratch);
  }
  tr_aap_layout_free(&own);
  return rc;
}
