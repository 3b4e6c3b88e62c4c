/*
 * mfd_up_program.c - multiple-flow-direction accumulation as a graph
 * program: the row "mfd_up" of the program table (flowgraph --method quinn,
 * holmgren, freeman; RichDEM's FA_Quinn, FA_Holmgren, FA_Freeman).
 *
 * The same dataflow as dinf_up (dinf_up_program.c): a cell's value is
 *   acc(c) = 1 + sum over k = 1..8 (E, NE, N ... SE) of p_k acc(n_k)
 * with p_k > 0 the share of neighbour n_k's flow that reaches c, summed in
 * double in that fixed k order, each cell computed once when all its donors
 * are final: the bytes do not depend on the tiling, threads, ranks,
 * schedule or --mem. What differs is where the shares come from:
 *
 * - A cell that is not on the DEM's edge and has a strictly lower valid
 *   neighbour gives to every such neighbour a share w_k / C, C = sum of the
 *   w_k, as RichDEM 2.2.9 computes it (flowmet/Holmgren1994.hpp,
 *   Freeman1991.hpp): rise = z - z_k in Float32, grad = rise / 1 (cardinal)
 *   or / sqrt(2) (diagonal) -- cell units, no cell size, on a projected DEM
 *   and on a geographic one alike --, w_k = (grad L_k)^x (Quinn: x = 1;
 *   Holmgren: x; L_k = 0.5 cardinal, 0.354 diagonal) or grad^p (Freeman),
 *   stored as Float32; C summed in double in RichDEM's order (W, NW, N, NE,
 *   E, SE, S, SW), of the stored weights (Quinn, Holmgren) or of the
 *   doubles before storing (Freeman, as RichDEM); the share
 *   (float)(float(w_k) x (1 / C)). RichDEM's command line reads the
 *   exponent as a float: its p = 1.1 is 1.10000002384185791015625.
 * - Rho8 (Fairfield & Leymarie 1991, RichDEM's FM_Rho8): the same cells
 *   give everything to one lower neighbour, the one of greatest rho slope,
 *   rise in Float32 as a double, a diagonal's times 1 / (2 - r), r drawn
 *   per (cell, neighbour) by tr_rho8_draw (flowdir.h) instead of RichDEM's
 *   generator, first in RichDEM's order on a tie; the descriptor is then
 *   -(2 + k), k the receiver.
 * - A cell with no lower neighbour (a flat of the filled DEM) drains as
 *   --method dinf does: the D-infinity angle of the flats (input 1, Garbrecht
 *   & Martz as TauDEM) split between its two neighbours (hydro/dinf.h).
 *   RichDEM leaves such cells undrained; this is the difference to expect.
 * - Cells on the DEM's edge, and cells with neither, give nothing: the
 *   outlets. Nodata cells neither give nor receive.
 *
 * A halo cell's share needs its whole 3 x 3 neighbourhood (C), one cell
 * beyond the padded window, so messages carry it: every perimeter cell with
 * a neighbour outside the tile is emitted in PEval with 1 / C (0: drains by
 * its angle; -1: gives nothing) and, once final, with its value (absolute;
 * f_aggr keeps the copy that has a value). A tile cell next to a halo cell
 * whose descriptor has not come waits: monotone (unknown -> descriptor ->
 * value), so every schedule gives the same result. A cell still unknown at
 * Assemble receives from a cycle of angles on a flat: nodata, as dinf_up.
 *
 * With --units area, Assemble writes each value times the cell area
 * |gt[1] gt[5]| (as d8_up does), the sums themselves stay in cells.
 *
 * State of a fragment over its padded window: z and the angle (Float32),
 * 1 / C and the value (double, NaN while unknown): 24 bytes a cell.
 *
 * The window, a round's queue and row sizes, the state's arrays, f_aggr and
 * Assemble's put are dag_round.h's, the skeleton of the programs that compute
 * a cell once from final inputs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dag_round.h"
#include "dinf.h"
#include "flowdir.h"
#include "graph.h"

typedef struct {
  double v;   /* NaN: not final yet */
  double inv; /* 1 / C, 0 (angle), -1 (none), Rho8: -(2 + k) */
} mu_msg;

typedef struct {
  tr_graph_env *env;
  tr_mfd_up_params prm;
} mu_ctx;

typedef struct {
  float *z, *ang;
  double *inv, *val;
} mu_state;

/* the state's arrays, each a value per padded cell */
static const tr_dag_array mu_arrays[] = {TR_DAG_ARRAY(mu_state, z), TR_DAG_ARRAY(mu_state, ang),
                                         TR_DAG_ARRAY(mu_state, inv), TR_DAG_ARRAY(mu_state, val)};
#define MU_NARRAYS ((int)(sizeof mu_arrays / sizeof mu_arrays[0]))

/* RichDEM's neighbour order (W, NW, N, NE, E, SE, S, SW) in dinf.h's k */
static const int rd_order[8] = {5, 4, 3, 2, 1, 8, 7, 6};

#define BACK(k) TR_DAG_BACK(k)

/* RichDEM's weight of the flow from elevation zc to zn, k's way, before
 * it is stored as Float32 (0: none). */
static inline double weight(const tr_mfd_up_params *p, float zc, float zn, int k) {
  const float rise = zc - zn;
  if (!(rise > 0.0f)) return 0.0;
  const int diag = !(k & 1);
  const double grad = (double)rise / (diag ? 1.414213562373095048801688724209698 : 1.0);
  if (p->rule == TR_MFD_FREEMAN) return pow(grad, p->exponent);
  return pow(grad * (diag ? 0.354 : 0.5), p->rule == TR_MFD_QUINN ? 1.0 : p->exponent);
}

/* Rho8's receiver of tile cell i (RichDEM's FM_FairfieldLeymarie): the
 * lower neighbour of greatest rho slope, as -(2 + k); 0 when none is lower. */
static double rho8_receiver(const mu_ctx *x, const mu_state *s, const tr_dag_round *w, int64_t i, int64_t cell) {
  int best = 0;
  double best_slope = 0.0;
  for (int m = 0; m < 8; m++) {
    const int k = rd_order[m];
    const float zn = s->z[i + w->g.off[k]];
    if (isnan(zn) || !(zn < s->z[i])) continue;
    double rho = (double)(s->z[i] - zn);
    if (!(k & 1)) rho *= 1.0 / (2.0 - tr_rho8_draw(x->prm.seed, cell, m));
    if (rho > best_slope) best = k, best_slope = rho;
  }
  return best ? -(2.0 + best) : 0.0;
}

/* 1 / C of tile cell i (all its neighbours in the window), 0 when it drains
 * by its angle, -1 when it gives nothing; Rho8: -(2 + k), its receiver k. */
static double descriptor(const mu_ctx *x, const mu_state *s, const tr_dag_round *w, int64_t i) {
  const int64_t gr = i / w->g.pw - 1 + w->g.f->row0, gc = i % w->g.pw - 1 + w->g.f->col0;
  if (gr == 0 || gc == 0 || gr == x->env->rows - 1 || gc == x->env->cols - 1) return -1.0;
  if (x->prm.rule == TR_MFD_RHO8) {
    const double r = rho8_receiver(x, s, w, i, gr * x->env->cols + gc);
    return r < 0.0 ? r : isnan(s->ang[i]) ? -1.0 : 0.0;
  }
  double c = 0.0;
  for (int m = 0; m < 8; m++) {
    const float zn = s->z[i + w->g.off[rd_order[m]]];
    if (isnan(zn)) continue;
    /* C sums the stored Float32 weights (Holmgren1994.hpp), Freeman's the
     * doubles before storing (Freeman1991.hpp) */
    const double wk = weight(&x->prm, s->z[i], zn, rd_order[m]);
    c += x->prm.rule == TR_MFD_FREEMAN ? wk : (double)(float)wk;
  }
  if (c > 0.0) return 1.0 / c;
  return isnan(s->ang[i]) ? -1.0 : 0.0;
}

/* The share of padded cell n's flow that reaches its neighbour k (> 0), or
 * 0; n's descriptor known. */
static inline double share(const mu_ctx *x, const mu_state *s, const tr_dag_round *w, int64_t n, int k) {
  const double inv = s->inv[n];
  if (inv <= -2.0) return k == (int)(-inv) - 2 ? 1.0 : 0.0; /* Rho8's one receiver */
  if (inv < 0.0) return 0.0;
  if (inv == 0.0) {
    const int64_t r = n / w->g.pw;
    const double p = tr_dinf_prop_at(s->ang[n], k, w->aref + 10 * r);
    return p > 0.0 ? p : 0.0;
  }
  const float zd = s->z[n + w->g.off[k]];
  if (isnan(zd)) return 0.0;
  const float wk = (float)weight(&x->prm, s->z[n], zd, k);
  return wk > 0.0f ? (double)(float)((double)wk * inv) : 0.0;
}

/* Are all the donors of tile cell d known and final? */
static int ready(const mu_ctx *x, const mu_state *s, const tr_dag_round *w, int64_t d) {
  for (int k = 1; k <= 8; k++) {
    const int64_t n = d + w->g.off[k];
    if (isnan(s->z[n])) continue;
    if (isnan(s->inv[n])) return 0;
    if (isnan(s->val[n]) && share(x, s, w, n, BACK(k)) > 0.0) return 0;
  }
  return 1;
}

static void finish(const mu_ctx *x, mu_state *s, const tr_dag_round *w, int64_t i) {
  double acc = 1.0;
  for (int k = 1; k <= 8; k++) {
    const int64_t n = i + w->g.off[k];
    if (isnan(s->z[n])) continue;
    const double p = share(x, s, w, n, BACK(k));
    if (p > 0.0) acc += p * s->val[n];
  }
  s->val[i] = acc;
}

static inline int waiting(const mu_state *s, const tr_dag_round *w, int64_t d) {
  return tr_dag_in_tile(&w->g, d) && !isnan(s->z[d]) && isnan(s->val[d]);
}

/* Finishes queued cells, queues those they make ready; with emit, a final
 * cell that gives flow out of the tile is emitted. */
static int drain(const mu_ctx *x, mu_state *s, const tr_dag_round *w, int64_t nq, int emit, tr_aap_round *rd) {
  int64_t *q = w->q, work = 0;
  while (nq > 0) {
    const int64_t i = q[--nq];
    finish(x, s, w, i);
    work++;
    int out = 0;
    for (int k = 1; k <= 8; k++) {
      if (!(share(x, s, w, i, k) > 0.0)) continue;
      const int64_t d = i + w->g.off[k];
      if (!tr_dag_in_tile(&w->g, d)) out = 1;
      else if (waiting(s, w, d) && ready(x, s, w, d)) q[nq++] = d; /* its last donor */
    }
    if (out && emit) {
      const mu_msg m = {s->val[i], s->inv[i]};
      if (tr_aap_emit(rd, tr_dag_cell(&w->g, x->env->cols, i), &m)) return -1;
    }
  }
  tr_aap_add_work(rd, work);
  return 0;
}

static int round_begin(const mu_ctx *x, const tr_aap_frag *f, tr_dag_round *w) {
  return tr_dag_round_begin(w, f, &x->prm.geom, x->env->rows, TR_DAG_AREF);
}

static void mu_destroy(void *user, void *state) {
  (void)user;
  if (!state) return;
  tr_dag_arrays_free(state, mu_arrays, MU_NARRAYS);
  free(state);
}

/* Does perimeter cell i have a valid neighbour outside the tile? */
static int faces_out(const mu_state *s, const tr_dag_round *w, int64_t i) {
  for (int k = 1; k <= 8; k++)
    if (!tr_dag_in_tile(&w->g, i + w->g.off[k]) && !isnan(s->z[i + w->g.off[k]])) return 1;
  return 0;
}

static int mu_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  mu_ctx *x = user;
  const int64_t n = (f->rows + 2) * (f->cols + 2);
  mu_state *s = calloc(1, sizeof *s);
  *state = s;
  if (!s) return -1;
  if (tr_dag_arrays_alloc(x->env, f, s, mu_arrays, MU_NARRAYS, n)) return -1;
  float *z = tr_graph_window(x->env, f);
  if (!z) return -1;
  memcpy(s->z, z, (size_t)n * sizeof *z);
  tr_graph_window_done(x->env, f, z);
  float *a = tr_graph_window_in(x->env, 1, f);
  if (!a) return -1;
  memcpy(s->ang, a, (size_t)n * sizeof *a);
  tr_graph_window_in_done(x->env, 1, f, a);
  tr_dag_round w;
  if (round_begin(x, f, &w)) return -1;
  for (int64_t i = 0; i < n; i++) {
    s->val[i] = NAN;
    s->inv[i] = NAN;
  }
  for (int64_t r = 1; r <= f->rows; r++)
    for (int64_t c = 1; c <= f->cols; c++) {
      const int64_t i = r * w.g.pw + c;
      if (!isnan(s->z[i])) s->inv[i] = descriptor(x, s, &w, i);
    }
  int64_t nq = 0;
  for (int64_t r = 1; r <= f->rows; r++)
    for (int64_t c = 1; c <= f->cols; c++) {
      const int64_t i = r * w.g.pw + c;
      if (!isnan(s->z[i]) && ready(x, s, &w, i)) w.q[nq++] = i;
    }
  int rc = drain(x, s, &w, nq, 0, rd);
  /* every perimeter cell facing another tile: its descriptor (and value) */
  for (int64_t r = 1; !rc && r <= f->rows; r++)
    for (int64_t c = 1; !rc && c <= f->cols; c++) {
      if (r != 1 && r != f->rows && c != 1 && c != f->cols) continue;
      const int64_t i = r * w.g.pw + c;
      if (isnan(s->z[i]) || !faces_out(s, &w, i)) continue;
      const mu_msg m = {s->val[i], s->inv[i]};
      rc = tr_aap_emit(rd, tr_dag_cell(&w.g, x->env->cols, i), &m);
    }
  tr_dag_round_end(&w);
  return rc;
}

static int mu_inceval(void *user, const tr_aap_frag *f, void *state, int64_t n, const int64_t *cells,
                      const void *values, tr_aap_round *rd) {
  mu_ctx *x = user;
  mu_state *s = state;
  tr_dag_round w;
  if (round_begin(x, f, &w)) return -1;
  int64_t nq = 0;
  for (int64_t m = 0; m < n; m++) {
    mu_msg v;
    memcpy(&v, (const unsigned char *)values + (size_t)m * sizeof v, sizeof v);
    const int64_t i = tr_dag_index(&w.g, x->env->cols, cells[m]);
    if (isnan(s->z[i])) continue;
    const int new_desc = isnan(s->inv[i]);
    const int new_val = !isnan(v.v) && isnan(s->val[i]);
    if (new_desc) s->inv[i] = v.inv;
    if (new_val) s->val[i] = v.v;
    if (!new_desc && !new_val) continue; /* a copy of what is known */
    for (int k = 1; k <= 8; k++) {
      const int64_t d = i + w.g.off[k];
      /* only a tile cell waits; and share() of halo cell i towards the
       * outside would read z beyond the window */
      if (!tr_dag_in_tile(&w.g, d)) continue;
      /* a new descriptor may free any neighbour; a new value those it feeds */
      if (!new_desc && !(share(x, s, &w, i, k) > 0.0)) continue;
      if (waiting(s, &w, d) && ready(x, s, &w, d)) w.q[nq++] = d;
    }
  }
  const int rc = drain(x, s, &w, nq, 1, rd);
  tr_dag_round_end(&w);
  return rc;
}

/* What Assemble reads: the state, and what a cell counts (--units). */
typedef struct {
  const mu_state *s;
  double unit;
} mu_out;

static int mu_cell(void *u, int64_t i, void *out) {
  const mu_out *o = u;
  const double v = o->s->val[i], y = isnan(v) ? TR_MFD_UP_NODATA : v * o->unit;
  memcpy(out, &y, sizeof y);
  return 0;
}

static int mu_assemble(void *user, const tr_aap_frag *f, void *state) {
  mu_ctx *x = user;
  if (!state) return -1;
  mu_out o = {state, x->prm.unit};
  return tr_dag_put(x->env, f, sizeof(double), &o, mu_cell);
}

/* Copies of one cell's message: the one with a value wins. */
static int mu_keep_valued(void *user, void *acc, const void *value) {
  (void)user;
  mu_msg a, v;
  memcpy(&a, acc, sizeof a);
  memcpy(&v, value, sizeof v);
  if (isnan(a.v) && !isnan(v.v)) memcpy(acc, &v, sizeof v);
  return 0;
}

static int mu_init(tr_aap_program *p, tr_graph_env *env, const void *params) {
  mu_ctx *x = calloc(1, sizeof *x);
  if (!x) return -1;
  x->env = env;
  memcpy(&x->prm, params, sizeof x->prm);
  memset(p, 0, sizeof *p);
  p->value_size = sizeof(mu_msg);
  p->user = x;
  p->peval = mu_peval;
  p->inceval = mu_inceval;
  p->assemble = mu_assemble;
  p->destroy = mu_destroy;
  p->aggr = mu_keep_valued;
  return 0;
}

/* --ft replay's invariant of Assemble's tile: every value at least what
 * the cell itself counts (1, or its area: the product is monotone) or
 * nodata. */
static int64_t mu_check_tile(void *user, const tr_aap_frag *f, const void *state, const void *cells) {
  (void)state;
  const double unit = ((const mu_ctx *)user)->prm.unit;
  const double *v = cells;
  int64_t bad = 0;
  for (int64_t i = 0; i < f->rows * f->cols; i++) bad += !(v[i] >= unit || v[i] == TR_MFD_UP_NODATA);
  return bad;
}

/* state: 24 bytes a padded cell (z, angle, 1 / C, value) */
static const tr_graph_body body_mfd_up = {.name = "mfd_up",
                                          .init = mu_init,
                                          .release = tr_graph_release_user,
                                          .state = TR_STATE_PER_CELL(24),
                                          .msg_bytes = sizeof(mu_msg),
                                          .state_bytes = sizeof(mu_state),
                                          .check_tile = mu_check_tile};

const tr_graph_program tr_program_mfd_up = {
    .name = "mfd_up",
    .cell_type = GDT_Float64,
    .params_size = sizeof(tr_mfd_up_params),
    .bodies = {&body_mfd_up},
};
