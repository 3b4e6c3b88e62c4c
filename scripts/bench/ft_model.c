/*
 * ft_model.c - times libft's dual modes against the direct kernel and against
 * the source's cost model (specs/redundant-recompute.md, item 4).
 *
 * A synthetic size x size float DEM is cut into tile x tile blocks; the kernel
 * is a Horn 3x3 slope (atan/sqrt per cell, plus `iters` extra rounds of
 * arithmetic to make it heavier when asked). Every case runs in this one
 * process, on the same grid, and checks its output against the direct run.
 *
 * Phase "throughput": `callers` executor threads pull blocks from a shared
 * counter (as the tile executor does) over a pool of `workers` workers:
 * off (direct kernel), dual fast clean, one fault per block in B00 / B02 /
 * B03 (exact schedule), random faults at p = 0.125 per replica sub-block
 * result (one per block on average), basic clean and basic with one fault
 * per block.
 * Phase "latency": one caller, workers = 3 (two replicas + one free worker
 * for recomputes), so each block's time can be set against the model:
 * clean C + D/4, B00 C, B02 C + D/4, B03 1.25C + D/4, basic C + D + C/4,
 * with C = time to compute one block directly and D = time to compare two
 * results of one block, both measured here.
 *
 * --trace FILE keeps libft's trace in the latency phase and writes one JSON
 * line per event to FILE (per block: the caller's start/end; per sub-block:
 * each replica's and recompute's ready/start/end/CPU time on which worker,
 * each compare and vote). It also prints, per case, where each block's time
 * went along its critical path (the chain of events that ended it, walked
 * back from the last decision): CPU time of the computations on it, time their
 * workers were runnable without a core (run-queue delay), time they waited to start
 * (queued behind other work on their worker, or to be woken), hand-overs,
 * the master's reaction and comparisons, dispatches. The parts add up to the
 * block's latency exactly; how many blocks' worth of sub-block computations
 * lie on the path (the model's 1 or 1.25); and the share of sub-blocks whose
 * two replicas started on the same CPU (then they share one core). Without
 * --trace no trace is kept.
 * --latency-workers N: workers in the latency phase (default 3).
 * --latency-only: skip the throughput phase.
 * --pin: in the latency phase, worker thread i runs on CPU i only (i below
 * the CPU count; the others float): two replicas on workers 0 and 1 then
 * never share a core.
 *
 * Usage: bench_ft_model [--trace FILE] [--latency-workers N] [--latency-only] [--pin]
 *                       [size] [tile] [iters] [callers] [workers]
 * Prints one JSON object per line.
 */
#define _GNU_SOURCE /* sched_setaffinity, for --pin */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ft.h"
#include "report_json.h"
#include "terrain.h"

typedef struct {
  double cellsize;
  int iters;
} kparams;

static int slope_kernel(const void *kctx, const ft_block *b, int64_t row0, int64_t nrows,
                        void *out) {
  const kparams *p = kctx;
  const float *in = b->in;
  float *o = out;
  int64_t s = b->in_stride;
  for (int64_t r = 0; r < nrows; r++) {
    const float *u = in + (row0 + r) * s, *m = u + s, *d = m + s;
    for (int64_t c = 0; c < b->cols; c++) {
      double dx = ((u[c + 2] + 2.0 * m[c + 2] + d[c + 2]) - (u[c] + 2.0 * m[c] + d[c])) /
                  (8.0 * p->cellsize);
      double dy = ((d[c] + 2.0 * d[c + 1] + d[c + 2]) - (u[c] + 2.0 * u[c + 1] + u[c + 2])) /
                  (8.0 * p->cellsize);
      double v = atan(sqrt(dx * dx + dy * dy)) * 57.29577951308232;
      for (int k = 0; k < p->iters; k++) v += 1e-4 * sin(v + k);
      o[r * b->cols + c] = (float)v;
    }
  }
  return 0;
}

static const ft_kernel KERNEL = {"bench.slope", slope_kernel};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
  int64_t n, tile, nb_c, nblocks;
  float *grid; /* (n+2) x (n+2) */
  kparams kp;
} raster;

static ft_block block_of(const raster *R, int64_t id) {
  int64_t br = id / R->nb_c, bc = id % R->nb_c;
  int64_t r0 = br * R->tile, c0 = bc * R->tile;
  ft_block b;
  memset(&b, 0, sizeof b);
  b.id = id;
  b.rows = R->n - r0 < R->tile ? R->n - r0 : R->tile;
  b.cols = R->n - c0 < R->tile ? R->n - c0 : R->tile;
  b.halo = 1;
  b.row_off = r0;
  b.col_off = c0;
  b.in = R->grid + r0 * (R->n + 2) + c0;
  b.in_stride = R->n + 2;
  b.in_elem_size = 4;
  b.out_type = FT_TYPE_F32;
  b.out_elem_size = 4;
  return b;
}

typedef struct {
  const raster *R;
  ft_ctx *ctx; /* NULL: direct */
  float *out;  /* n x n */
  atomic_long next;
  atomic_int errors;
  double *bt;  /* NULL, or 2 per block: ft_run_block's start and end (trace) */
} run_state;

static void *caller_main(void *a) {
  run_state *S = a;
  const raster *R = S->R;
  float *tile = malloc((size_t)(R->tile * R->tile) * 4);
  for (;;) {
    long id = atomic_fetch_add(&S->next, 1);
    if (id >= R->nblocks) break;
    ft_block b = block_of(R, id);
    if (S->bt) S->bt[2 * id] = now_s();
    int rc = S->ctx ? ft_run_block(S->ctx, &KERNEL, &R->kp, sizeof R->kp, &b, tile, NULL)
                    : slope_kernel(&R->kp, &b, 0, b.rows, tile);
    if (S->bt) S->bt[2 * id + 1] = now_s();
    if (rc) atomic_fetch_add(&S->errors, 1);
    for (int64_t r = 0; r < b.rows; r++)
      memcpy(S->out + (b.row_off + r) * R->n + b.col_off, tile + r * b.cols, (size_t)b.cols * 4);
  }
  free(tile);
  return NULL;
}

/* Runs the raster once; returns seconds, or -1 on an error. */
static double run_raster_bt(const raster *R, ft_ctx *ctx, int callers, float *out, double *bt) {
  run_state S = {R, ctx, out, 0, 0, bt};
  pthread_t th[64];
  double t0 = now_s();
  for (int i = 0; i < callers; i++) pthread_create(&th[i], NULL, caller_main, &S);
  for (int i = 0; i < callers; i++) pthread_join(th[i], NULL);
  double t = now_s() - t0;
  return atomic_load(&S.errors) ? -1.0 : t;
}

static double run_raster(const raster *R, ft_ctx *ctx, int callers, float *out) {
  return run_raster_bt(R, ctx, callers, out, NULL);
}

typedef struct {
  const char *name;
  ft_mode mode;
  int sub; /* exact fault in this sub-block of every block (slot 0); -1 none */
  double p;
} bcase;

static const bcase CASES[] = {
    {"dual_fast_clean", FT_MODE_DUAL_FAST, -1, 0.0},
    {"dual_fast_fault_B00", FT_MODE_DUAL_FAST, 0, 0.0},
    {"dual_fast_fault_B02", FT_MODE_DUAL_FAST, 2, 0.0},
    {"dual_fast_fault_B03", FT_MODE_DUAL_FAST, 3, 0.0},
    {"dual_fast_random_p0.125", FT_MODE_DUAL_FAST, -1, 0.125},
    {"dual_basic_clean", FT_MODE_DUAL_BASIC, -1, 0.0},
    {"dual_basic_fault_B00", FT_MODE_DUAL_BASIC, 0, 0.0},
};
#define NCASES (int)(sizeof CASES / sizeof CASES[0])

/* ---- the trace: events out, and each block's critical path ---------------- */

typedef struct {
  FILE *f;         /* NULL: no trace */
  ft_event *ev;    /* capacity cap */
  size_t cap;
  double *bt;      /* 2 per block */
  int cores;       /* online CPUs */
} tracer;

/* Where a block's time went along its critical path, seconds. */
typedef struct {
  double lat, head, cpu, core_wait, queue, compute_wall, handover, react, decide, dispatch, tail;
  double rc_queue, rc_core_wait, rc_wall; /* every recompute, on the path or not */
  double rep_core_wait;                   /* both replicas, whole block */
  double lat_p10, lat_p50; /* full blocks' latency quantiles: p10 is what the
                            * method gets when other processes leave it be */
  int64_t path_subs;              /* computations on the paths */
  int64_t pairs, pairs_same_cpu; /* replica sub-block pairs; started on one CPU */
  double own_excess; /* time-volume of our computations beyond the cores: the
                      * most of the core waits that our own threads can cause */
  int64_t n_rc;
} path_sum;

#define TR_SLOTS 16
typedef struct {
  const ft_event *comp[TR_SLOTS][4], *cmp[4], *vote[4][TR_SLOTS];
} block_ev;

static double cpu_of(const ft_event *e) { return e->cpu_s >= 0 ? e->cpu_s : e->t1 - e->t0; }
static double wait_of(const ft_event *e) { return e->core_wait_s >= 0 ? e->core_wait_s : 0.0; }

/* Walks back from the block's last decision (lock-free: the trace is a
 * finished copy). Each step adds the gap before an event and the event
 * itself, so the parts telescope to end - start. */
static void walk_block(const block_ev *B, double start, double end, int basic, path_sum *P) {
  const ft_event *D = NULL;
  for (int s = 0; s < 4; s++) {
    if (B->cmp[s] && (!D || B->cmp[s]->t1 > D->t1)) D = B->cmp[s];
    for (int x = 0; x < TR_SLOTS; x++)
      if (B->vote[s][x] && (!D || B->vote[s][x]->t1 > D->t1)) D = B->vote[s][x];
  }
  if (!D) return;
  P->lat += end - start;
  P->tail += end - D->t1;
  for (int guard = 0; D && guard < 64; guard++) {
    P->decide += D->t1 - D->t0;
    const ft_event *X = NULL;
    if (D->kind == FT_EV_COMPARE) {
      /* FAST waits for this sub-block's two results, BASIC for all eight */
      for (int s = basic ? 0 : D->sub; s <= (basic ? 3 : D->sub); s++)
        for (int x = 0; x < 2; x++)
          if (B->comp[x][s] && (!X || B->comp[x][s]->t1 > X->t1)) X = B->comp[x][s];
    } else {
      X = B->comp[D->slot][D->sub];
    }
    if (!X) return;
    if (X->sub == D->sub) {
      P->handover += D->ready - X->t1;
      P->react += D->t0 - D->ready;
    } else { /* BASIC: D->ready is its own sub-block's; X's hand-over counts as the master's */
      P->react += D->t0 - X->t1;
    }
    D = NULL;
    while (X) {
      P->cpu += cpu_of(X);
      P->path_subs++;
      /* the run-queue delay is counted from the worker's previous hand-over,
       * which may lie before this piece was ready: clip it to its span */
      double span = (X->t1 - X->ready) + (X->slot < 2 && X->sub < 3 && B->comp[X->slot][X->sub + 1]
                                              ? B->comp[X->slot][X->sub + 1]->ready - X->t1
                                              : 0.0);
      P->core_wait += wait_of(X) < span ? wait_of(X) : span;
      P->compute_wall += X->t1 - X->t0;
      P->queue += X->t0 - X->ready;
      if (X->slot < 2 && X->sub > 0 && B->comp[X->slot][X->sub - 1]) {
        const ft_event *Y = B->comp[X->slot][X->sub - 1];
        P->handover += X->ready - Y->t1;
        X = Y;
      } else if (X->slot >= 2) {
        D = X->slot == 2 ? B->cmp[X->sub] : B->vote[X->sub][X->slot - 1];
        if (D) P->dispatch += X->ready - D->t1;
        X = NULL;
      } else {
        P->head += X->ready - start;
        X = NULL;
      }
    }
  }
}

/* Integral over time of max(0, computations in progress - cores) for one
 * block: when no more of our threads compute than there are cores, a wait
 * for a core is caused by other processes. */
static double own_excess(const block_ev *B, int cores) {
  double t[2 * TR_SLOTS * 4];
  int d[2 * TR_SLOTS * 4], n = 0;
  for (int x = 0; x < TR_SLOTS; x++)
    for (int s = 0; s < 4; s++)
      if (B->comp[x][s]) {
        t[n] = B->comp[x][s]->t0, d[n++] = 1;
        t[n] = B->comp[x][s]->t1, d[n++] = -1;
      }
  for (int i = 1; i < n; i++) /* insertion sort: a few dozen points */
    for (int k = i; k > 0 && t[k] < t[k - 1]; k--) {
      double tt = t[k]; t[k] = t[k - 1]; t[k - 1] = tt;
      int dd = d[k]; d[k] = d[k - 1]; d[k - 1] = dd;
    }
  double sum = 0;
  int live = 0;
  for (int i = 0; i < n; i++) {
    if (i > 0 && live > cores) sum += (double)(live - cores) * (t[i] - t[i - 1]);
    live += d[i];
  }
  return sum;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The q-quantile of v[0..n) (sorts v). */
static double quantile(double *v, int64_t n, double q) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[(int64_t)(q * (double)(n - 1))];
}

static const char *EV_NAME[] = {"?", "compute", "compare", "vote"};

/* Writes the case's events to the trace file and adds up its blocks' paths. */
static void trace_case(const tracer *T, const raster *R, const char *name, int basic,
                       ft_ctx *ctx, path_sum *P) {
  size_t n = ft_trace_get(ctx, T->ev, T->cap);
  if (n > T->cap) {
    fprintf(stderr, "bench_ft_model: trace of %s truncated (%zu events)\n", name, n);
    n = T->cap;
  }
  double base = T->bt[0];
  block_ev *B = calloc((size_t)R->nblocks, sizeof *B);
  for (size_t i = 0; i < n; i++) {
    const ft_event *e = &T->ev[i];
    if (e->block < 0 || e->block >= R->nblocks || e->sub < 0 || e->sub > 3 || e->slot < 0 ||
        e->slot >= TR_SLOTS)
      continue;
    block_ev *b = &B[e->block];
    if (e->kind == FT_EV_COMPUTE) b->comp[e->slot][e->sub] = e;
    else if (e->kind == FT_EV_COMPARE) b->cmp[e->sub] = e;
    else if (e->kind == FT_EV_VOTE) b->vote[e->sub][e->slot] = e;
    fprintf(T->f,
            "{\"case\":\"%s\",\"ev\":\"%s\",\"block\":%ld,\"sub\":%d,\"slot\":%d,"
            "\"worker\":%d,\"ready_ms\":%.4f,\"t0_ms\":%.4f,\"t1_ms\":%.4f,\"cpu_ms\":%.4f,"
            "\"core_wait_ms\":%.4f,\"cpu_at\":%d,\"cpu_end\":%d}\n",
            name, EV_NAME[e->kind <= 3 ? e->kind : 0], (long)e->block, e->sub, e->slot, e->worker,
            1e3 * (e->ready - base), 1e3 * (e->t0 - base), 1e3 * (e->t1 - base),
            e->cpu_s >= 0 ? 1e3 * e->cpu_s : -1.0,
            e->core_wait_s >= 0 ? 1e3 * e->core_wait_s : -1.0, e->cpu_at, e->cpu_end);
    if (e->kind == FT_EV_COMPUTE) {
      double wait = wait_of(e);
      if (e->slot >= 2) {
        P->rc_queue += e->t0 - e->ready;
        P->rc_core_wait += wait;
        P->rc_wall += e->t1 - e->t0;
        P->n_rc++;
      } else {
        P->rep_core_wait += wait;
      }
    }
  }
  double *lat = malloc((size_t)R->nblocks * sizeof *lat);
  int64_t nfull = 0;
  for (int64_t id = 0; id < R->nblocks; id++) {
    ft_block b = block_of(R, id);
    if (b.rows == R->tile && b.cols == R->tile) lat[nfull++] = T->bt[2 * id + 1] - T->bt[2 * id];
    tr_json *o = tr_json_object();
    tr_json_set(o, "case", tr_json_str(name));
    tr_json_set(o, "ev", tr_json_str("block"));
    tr_json_set(o, "block", tr_json_int(id));
    tr_json_set(o, "t0_ms", tr_json_fixed(1e3 * (T->bt[2 * id] - base), 4));
    tr_json_set(o, "t1_ms", tr_json_fixed(1e3 * (T->bt[2 * id + 1] - base), 4));
    tr_json_write(o, T->f);
    tr_json_free(o);
    walk_block(&B[id], T->bt[2 * id], T->bt[2 * id + 1], basic, P);
    P->own_excess += own_excess(&B[id], T->cores);
    for (int sb = 0; sb < 4; sb++)
      if (B[id].comp[0][sb] && B[id].comp[1][sb] && B[id].comp[0][sb]->cpu_at >= 0) {
        P->pairs++;
        P->pairs_same_cpu += B[id].comp[0][sb]->cpu_at == B[id].comp[1][sb]->cpu_at;
      }
  }
  P->lat_p10 = nfull ? quantile(lat, nfull, 0.1) : 0.0;
  P->lat_p50 = nfull ? quantile(lat, nfull, 0.5) : 0.0;
  free(lat);
  free(B);
}

/* Per block, ms and in C: the path's computations split into CPU time, wait
 * for a core (run-queue delay) and the rest of their workers' time (woken
 * late, lock, hand-over); then the master's part of the path. */
static void print_breakdown(const char *name, const path_sum *P, int64_t nblocks, double C,
                            double C_p10) {
  double k = 1.0 / (double)nblocks;
  double worker_span = P->queue + P->compute_wall + P->handover;
  double other = worker_span - P->cpu - P->core_wait;
  double master = P->react + P->decide + P->dispatch + P->head + P->tail;
  /* name and value pairs, in the line's order */
  const struct {
    const char *key;
    double v;
  } per_block[] = {{"latency", 1e3 * k * P->lat},
                   {"path_cpu", 1e3 * k * P->cpu},
                   {"path_core_wait", 1e3 * k * P->core_wait},
                   {"path_worker_other", 1e3 * k * other},
                   {"path_queue", 1e3 * k * P->queue},
                   {"path_handover", 1e3 * k * P->handover},
                   {"path_react", 1e3 * k * P->react},
                   {"path_compare_vote", 1e3 * k * P->decide},
                   {"path_dispatch", 1e3 * k * P->dispatch},
                   {"head_tail", 1e3 * k * (P->head + P->tail)},
                   {"recompute_queue", P->n_rc ? 1e3 * P->rc_queue / (double)P->n_rc : 0.0},
                   {"recompute_core_wait", P->n_rc ? 1e3 * P->rc_core_wait / (double)P->n_rc : 0.0},
                   {"recompute_wall", P->n_rc ? 1e3 * P->rc_wall / (double)P->n_rc : 0.0},
                   {"replicas_core_wait", 1e3 * k * P->rep_core_wait},
                   {"own_excess", 1e3 * k * P->own_excess},
                   {"p10", 1e3 * P->lat_p10},
                   {"p50", 1e3 * P->lat_p50}},
    in_c[] = {{"latency", k * P->lat / C},
              {"path_cpu", k * P->cpu / C},
              {"path_core_wait", k * P->core_wait / C},
              {"path_worker_other", k * other / C},
              {"path_master", k * master / C}};
  tr_json *o = tr_json_object(), *pb = tr_json_object(), *ic = tr_json_object();
  tr_json_set(o, "phase", tr_json_str("breakdown"));
  tr_json_set(o, "case", tr_json_str(name));
  for (size_t i = 0; i < sizeof per_block / sizeof per_block[0]; i++)
    tr_json_set(pb, per_block[i].key, tr_json_fixed(per_block[i].v, 4));
  tr_json_set(o, "per_block_ms", pb);
  tr_json_set(o, "p10_over_C_p10", tr_json_fixed(P->lat_p10 / C_p10, 3));
  tr_json_set(o, "replicas_same_cpu", tr_json_fixed(P->pairs ? (double)P->pairs_same_cpu / (double)P->pairs : -1.0, 3));
  tr_json_set(o, "path_blocks", tr_json_fixed((double)P->path_subs / (4.0 * (double)nblocks), 3));
  for (size_t i = 0; i < sizeof in_c / sizeof in_c[0]; i++) tr_json_set(ic, in_c[i].key, tr_json_fixed(in_c[i].v, 3));
  tr_json_set(o, "in_C", ic);
  tr_json_write(o, stdout);
  tr_json_free(o);
}

/* --pin: the context's worker threads (every thread but this one, right
 * after ft_ctx_create), in creation order, on CPU 0, 1, ...: one per CPU,
 * the ones beyond the CPU count left free. An experiment: does placing two
 * replicas on one core cost what the trace says? */
static int tid_cmp(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

static void pin_workers(int cores) {
  long tids[256];
  int n = 0;
  DIR *d = opendir("/proc/self/task");
  if (!d) return;
  for (struct dirent *e; (e = readdir(d)) && n < 256;) {
    long tid = atol(e->d_name);
    if (tid > 0 && tid != (long)getpid()) tids[n++] = tid;
  }
  closedir(d);
  qsort(tids, (size_t)n, sizeof *tids, tid_cmp);
  for (int i = 0; i < n && i < cores; i++) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(i, &set);
    if (sched_setaffinity((pid_t)tids[i], sizeof set, &set) != 0) perror("bench_ft_model: pin");
  }
}

static double run_case_traced(const raster *R, const bcase *c, int workers, int callers,
                              float *out, ft_report *rep, const tracer *T, path_sum *P,
                              int pin) {
  ft_opts o;
  ft_opts_init(&o);
  o.mode = c->mode;
  o.workers = workers;
  o.inject.seed = 2024;
  o.trace_capacity = T ? T->cap : 0;
  o.inject.flip_p = c->p;
  if (c->sub >= 0) {
    o.inject.n_exact = 1;
    o.inject.exact[0] = (ft_fault_at){.kind = FT_FAULT_FLIP, .block = -1, .sub = c->sub, .slot = 0};
  }
  ft_ctx *ctx = NULL;
  char err[256];
  if (ft_ctx_create(&o, &ctx, err, sizeof err) != 0) {
    fprintf(stderr, "bench_ft_model: %s\n", err);
    return -1;
  }
  if (pin) pin_workers((int)sysconf(_SC_NPROCESSORS_ONLN));
  double t = run_raster_bt(R, ctx, callers, out, T ? T->bt : NULL);
  ft_report_get(ctx, rep);
  if (T && t > 0) trace_case(T, R, c->name, c->mode == FT_MODE_DUAL_BASIC, ctx, P);
  ft_ctx_destroy(ctx);
  return t;
}

static double run_case(const raster *R, const bcase *c, int workers, int callers, float *out,
                       ft_report *rep) {
  return run_case_traced(R, c, workers, callers, out, rep, NULL, NULL, 0);
}

int main(int argc, char **argv) {
  const char *trace_path = NULL;
  int lat_workers = 3, latency_only = 0, pin = 0;
  int na = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--trace") && i + 1 < argc) trace_path = argv[++i];
    else if (!strcmp(argv[i], "--latency-workers") && i + 1 < argc) lat_workers = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--latency-only")) latency_only = 1;
    else if (!strcmp(argv[i], "--pin")) pin = 1;
    else argv[na++] = argv[i];
  }
  argc = na;
  raster R;
  R.n = argc > 1 ? atol(argv[1]) : 4000;
  R.tile = argc > 2 ? atol(argv[2]) : 512;
  R.kp.cellsize = 30.0;
  R.kp.iters = argc > 3 ? atoi(argv[3]) : 0;
  int callers = argc > 4 ? atoi(argv[4]) : 2;
  int workers = argc > 5 ? atoi(argv[5]) : 0;
  if (R.n < 8 || R.tile < 4 || callers < 1 || callers > 64 || lat_workers < 2) {
    fprintf(stderr, "usage: bench_ft_model [--trace FILE] [--latency-workers N>=2] "
                    "[--latency-only] [--pin] [size] [tile] [iters] [callers] [workers]\n");
    return 2;
  }
  R.nb_c = (R.n + R.tile - 1) / R.tile;
  R.nblocks = R.nb_c * R.nb_c;
  int64_t W = R.n + 2;
  R.grid = malloc((size_t)(W * W) * 4);
  uint32_t s = 12345;
  for (int64_t r = 0; r < W; r++)
    for (int64_t c = 0; c < W; c++) {
      s = s * 1664525u + 1013904223u;
      R.grid[r * W + c] = (float)(300.0 * sin(r * 0.003) * cos(c * 0.002) + 40.0 * sin(r * 0.05 + c * 0.07) +
                                  (double)(s >> 8) / 16777216.0);
    }
  size_t bytes = (size_t)(R.n * R.n) * 4;
  float *ref = malloc(bytes), *out = malloc(bytes);

  /* warm-up, then off */
  run_raster(&R, NULL, callers, ref);
  double off = run_raster(&R, NULL, callers, ref);
  tr_json *o = tr_json_object();
  tr_json_set(o, "phase", tr_json_str("throughput"));
  tr_json_set(o, "case", tr_json_str("off"));
  tr_json_set(o, "size", tr_json_int(R.n));
  tr_json_set(o, "tile", tr_json_int(R.tile));
  tr_json_set(o, "blocks", tr_json_int(R.nblocks));
  tr_json_set(o, "callers", tr_json_int(callers));
  tr_json_set(o, "seconds", tr_json_fixed(off, 4));
  tr_json_write(o, stdout);
  tr_json_free(o);
  double clean = 0;
  for (int i = 0; i < NCASES && !latency_only; i++) {
    ft_report rep;
    double t = run_case(&R, &CASES[i], workers, callers, out, &rep);
    if (i == 0) clean = t;
    tr_json *c = tr_json_object(), *js = tr_json_object();
    tr_json_set(c, "phase", tr_json_str("throughput"));
    tr_json_set(c, "case", tr_json_str(CASES[i].name));
    tr_json_set(c, "workers", tr_json_int(workers));
    tr_json_set(c, "seconds", tr_json_fixed(t, 4));
    tr_json_set(c, "ratio_to_off", tr_json_fixed(t / off, 3));
    tr_json_set(c, "ratio_to_clean_dual", tr_json_fixed(t / clean, 3));
    tr_json_set(c, "identical", tr_json_bool(t > 0 && memcmp(ref, out, bytes) == 0));
    if (js) tr_json_ft_report(js, &rep); /* as --ft-report writes it */
    tr_json_set(c, "report", js);
    tr_json_write(c, stdout);
    tr_json_free(c);
    fflush(stdout);
  }

  /* latency phase: C, D, then one block at a time with a free third worker */
  double C = run_raster(&R, NULL, 1, ref) / (double)R.nblocks;
  double C_cpu = 0; /* the same work's CPU time: what C is on an unloaded core */
  double C_p10 = 0; /* 10th percentile of a full block's time: C when left alone */
  {
    float *tile = malloc((size_t)(R.tile * R.tile) * 4);
    double *tb = malloc((size_t)R.nblocks * sizeof *tb);
    int64_t nfull = 0; /* full tile x tile blocks only: edge blocks are smaller */
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    for (int64_t id = 0; id < R.nblocks; id++) {
      ft_block b0 = block_of(&R, id);
      double t0 = now_s();
      slope_kernel(&R.kp, &b0, 0, b0.rows, tile);
      if (b0.rows == R.tile && b0.cols == R.tile) tb[nfull++] = now_s() - t0;
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    C_p10 = nfull ? quantile(tb, nfull, 0.1) : 0.0;
    free(tb);
    C_cpu = ((double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec)) /
            (double)R.nblocks;
    free(tile);
  }
  double D = 0;
  {
    float *a = malloc((size_t)(R.tile * R.tile) * 4), *b2 = malloc((size_t)(R.tile * R.tile) * 4);
    double t0 = now_s();
    int64_t k = 0;
    for (int64_t id = 0; id < R.nblocks; id++) {
      ft_block b = block_of(&R, id);
      for (int64_t r = 0; r < b.rows; r++) {
        memcpy(a + r * b.cols, ref + (b.row_off + r) * R.n + b.col_off, (size_t)b.cols * 4);
        memcpy(b2 + r * b.cols, a + r * b.cols, (size_t)b.cols * 4);
      }
      double t1 = now_s();
      k += ft_compare_cells(FT_TYPE_F32, 4, a, b2, b.rows * b.cols, 0.0);
      D += now_s() - t1;
    }
    (void)t0;
    D /= (double)R.nblocks;
    free(a);
    free(b2);
    if (k) return 1;
  }
  o = tr_json_object();
  tr_json_set(o, "phase", tr_json_str("model"));
  tr_json_set(o, "C_block_s", tr_json_fixed(C, 6));
  tr_json_set(o, "C_cpu_block_s", tr_json_fixed(C_cpu, 6));
  tr_json_set(o, "C_p10_block_s", tr_json_fixed(C_p10, 6));
  tr_json_set(o, "D_block_s", tr_json_fixed(D, 6));
  tr_json_set(o, "D_over_C", tr_json_fixed(D / C, 4));
  tr_json_write(o, stdout);
  tr_json_free(o);
  double model[NCASES] = {C + 0.25 * D, C, C + 0.25 * D, 1.25 * C + 0.25 * D, -1, C + D,
                          1.25 * C + D};
  tracer T = {NULL, NULL, 0, NULL, (int)sysconf(_SC_NPROCESSORS_ONLN)}, *Tp = NULL;
  if (trace_path) {
    T.f = fopen(trace_path, "w");
    T.cap = (size_t)R.nblocks * 32;
    T.ev = malloc(T.cap * sizeof *T.ev);
    T.bt = malloc((size_t)R.nblocks * 2 * sizeof *T.bt);
    if (!T.f || !T.ev || !T.bt) {
      fprintf(stderr, "bench_ft_model: cannot trace to %s\n", trace_path);
      return 1;
    }
    Tp = &T;
  }
  double lclean = 0;
  for (int i = 0; i < NCASES; i++) {
    ft_report rep;
    path_sum P;
    memset(&P, 0, sizeof P);
    double t = run_case_traced(&R, &CASES[i], lat_workers, 1, out, &rep, Tp, &P, pin) /
               (double)R.nblocks;
    if (i == 0) lclean = t;
    o = tr_json_object();
    tr_json_set(o, "phase", tr_json_str("latency"));
    tr_json_set(o, "case", tr_json_str(CASES[i].name));
    tr_json_set(o, "workers", tr_json_int(lat_workers));
    tr_json_set(o, "block_s", tr_json_fixed(t, 6));
    tr_json_set(o, "ratio_to_C", tr_json_fixed(t / C, 3));
    tr_json_set(o, "ratio_to_clean_dual", tr_json_fixed(t / lclean, 3));
    if (model[i] > 0) {
      tr_json_set(o, "model_s", tr_json_fixed(model[i], 6));
      tr_json_set(o, "model_ratio_to_C", tr_json_fixed(model[i] / C, 3));
    }
    tr_json_set(o, "identical", tr_json_bool(memcmp(ref, out, bytes) == 0));
    tr_json_set(o, "recomputes", tr_json_int(rep.recomputes));
    tr_json_write(o, stdout);
    tr_json_free(o);
    if (Tp) print_breakdown(CASES[i].name, &P, R.nblocks, C, C_p10);
    fflush(stdout);
  }
  if (Tp) {
    fclose(T.f);
    free(T.ev);
    free(T.bt);
  }
  free(R.grid);
  free(ref);
  free(out);
  return 0;
}
