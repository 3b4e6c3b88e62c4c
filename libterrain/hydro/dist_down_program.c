/*
 * dist_down_program.c - what lies between a cell and the stream it drains
 * to, as a graph program: the row "dist_down" of the program table
 * (flowgraph --hand, TauDEM dinfdistdown -m ave v; --d8-dist, TauDEM
 * d8hdisttostrm).
 *
 * The mirror of the accumulation: values flow from the stream cells up,
 * against the flow. A stream cell (streams >= 1) is 0. Any other cell with
 * a direction is final once every cell it drains to (its receivers) is:
 *   HAND    h(c) = sum_k p_k (z(c) - z(n_k) + h(n_k)) / sum_k p_k
 *           over the receivers n_k of c's D-infinity angle with their shares
 *           p_k (hydro/dinf.h, tr_dinf_prop_at; k = 1..8, E, NE, N ... SE),
 *           in TauDEM's arithmetic: the drop z(c) - z(n_k) + h(n_k) in
 *           Float32, the running sums Float32 updated in double, a Float32
 *           quotient;
 *   D8DIST  d(c) = (float)L_k + d(n_k) in Float32, n_k the D8 receiver and
 *           L_k the step's length (dx, dy or the diagonal of c's row, as
 *           TauDEM's Float32 dist table).
 * c is nodata when one of its receivers is (TauDEM's default edge check:
 * a receiver off the grid, without a direction or without a value), when
 * its elevation is (HAND), or when it never becomes final: it drains into a
 * cycle of directions or to a cell that never reaches a stream (an edge
 * outlet, a pit). A cell without a direction is nodata, except a D8 stream
 * cell (TauDEM's d8hdisttostrm starts from every stream cell).
 *
 * A cell is computed once, from final receivers, in the fixed k order: its
 * bytes do not depend on the order cells become final in, so not on the
 * tiling, the thread or rank count, the schedule, --mem or --ft.
 *
 * State of a fragment over its padded window: the receivers of each cell
 * as a bit mask (bit k - 1: neighbour k; the angle's shares > 0, found once
 * in PEval, or the D8 direction), HAND's angle and elevation (Float32), the
 * value and its status (unknown, final, final nodata). PEval: every padded cell that
 * its own data decides (a stream cell, a cell without a direction: the same
 * on both sides of a tile border) is final; Kahn's order inside the tile
 * from the cells whose receivers are all final; a perimeter cell that
 * becomes final and receives flow from a halo cell is emitted once with its
 * value and status (final, so a duplicate changes nothing; f_aggr keeps the
 * first). IncEval: a halo receiver's first value is set, which may make the
 * tile cells draining into it ready. Values only go from unknown to final:
 * monotone, and every schedule gives the same result.
 *
 * The window, a round's queue and row sizes, the state's arrays, f_aggr and
 * Assemble's put are dag_round.h's, the skeleton of the programs that compute
 * a cell once from final inputs.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "d8_codes.h"
#include "dag_round.h"
#include "dinf.h"
#include "flowdir.h"
#include "graph.h"

enum { UNKNOWN = 0, FINAL = 1, NONE = 2 }; /* NONE: final, nodata */

typedef struct {
  float v;
  int32_t st;
} dd_msg;

typedef struct {
  tr_graph_env *env;
  tr_dist_down_params prm;
  tr_d8_lut lut;
} dd_ctx;

typedef struct {
  int64_t n;
  float *ang;  /* HAND: the angle (NaN: none) */
  float *z;    /* HAND: the elevation (NaN: nodata) */
  uint8_t *rx; /* receivers: bit k - 1 for neighbour k (0: no direction) */
  float *val;  /* the value where st is FINAL */
  uint8_t *st; /* UNKNOWN, FINAL or NONE */
} dd_state;

/* the state's arrays, each a value per padded cell; HAND's two last */
static const tr_dag_array dd_arrays[] = {TR_DAG_ARRAY(dd_state, val), TR_DAG_ARRAY(dd_state, st),
                                         TR_DAG_ARRAY(dd_state, rx), TR_DAG_ARRAY(dd_state, ang),
                                         TR_DAG_ARRAY(dd_state, z)};
#define DD_NARRAYS ((int)(sizeof dd_arrays / sizeof dd_arrays[0]))

#define BACK(k) TR_DAG_BACK(k)

static void dd_destroy(void *user, void *state) {
  (void)user;
  if (!state) return;
  tr_dag_arrays_free(state, dd_arrays, DD_NARRAYS);
  free(state);
}

/* a round with the rows' reference angles (HAND's shares) */
static int round_begin(const dd_ctx *x, const tr_aap_frag *f, tr_dag_round *w) {
  return tr_dag_round_begin(w, f, &x->prm.geom, x->env->rows, TR_DAG_AREF);
}

static inline int is_hand(const dd_ctx *x) { return x->prm.product == TR_DOWN_HAND; }

/* Does padded cell i drain into its neighbour k (1..8)? */
static inline int drains(const dd_state *s, int64_t i, int k) { return (s->rx[i] >> (k - 1)) & 1; }

/* Are all the receivers of cell i final? (Off the window: a receiver off
 * the grid, NONE from PEval.) */
static int ready(const dd_state *s, const tr_dag_round *w, int64_t i) {
  for (int k = 1; k <= 8; k++)
    if (drains(s, i, k) && s->st[i + w->g.off[k]] == UNKNOWN) return 0;
  return 1;
}

/* Finishes tile cell i from its receivers (all final). */
static void finish(const dd_ctx *x, dd_state *s, const tr_dag_round *w, int64_t i) {
  const int64_t row = i / w->g.pw;
  if (!is_hand(x)) {
    int k = 1;
    while (!drains(s, i, k)) k++;
    const int64_t n = i + w->g.off[k];
    if (s->st[n] != FINAL) {
      s->st[i] = NONE;
      return;
    }
    const double dr = tr_dinf_nrow[k] * w->dy[row], dc = tr_dinf_ncol[k] * w->dx[row];
    const float len = (float)sqrt(dc * dc + dr * dr);
    s->val[i] = len + s->val[n];
    s->st[i] = FINAL;
    return;
  }
  const float zc = s->z[i];
  if (isnan(zc)) {
    s->st[i] = NONE;
    return;
  }
  float distr = 0.0f, sump = 0.0f;
  int con = 0;
  for (int k = 1; k <= 8; k++) {
    if (!drains(s, i, k)) continue;
    const double p = tr_dinf_prop_at(s->ang[i], k, w->aref + 10 * row);
    const int64_t n = i + w->g.off[k];
    if (s->st[n] != FINAL || isnan(s->z[n])) {
      con = 1;
      continue;
    }
    sump = (float)((double)sump + p);
    const float drop = (zc - s->z[n]) + s->val[n];
    distr = (float)((double)distr + p * (double)drop);
  }
  if (con || sump <= 0.0f) {
    s->st[i] = NONE;
    return;
  }
  s->val[i] = distr / sump;
  s->st[i] = FINAL;
}

/* Does a cell of the halo drain into tile cell i? */
static int halo_donor(const dd_state *s, const tr_dag_round *w, int64_t i) {
  for (int k = 1; k <= 8; k++) {
    const int64_t n = i + w->g.off[k];
    if (!tr_dag_in_tile(&w->g, n) && drains(s, n, BACK(k))) return 1;
  }
  return 0;
}

/* Queues the tile cells draining into i that i's value makes ready. */
static int64_t wake_donors(const dd_state *s, const tr_dag_round *w, int64_t i, int64_t *q, int64_t nq) {
  for (int k = 1; k <= 8; k++) {
    const int64_t d = i + w->g.off[k];
    if (!tr_dag_in_tile(&w->g, d) || s->st[d] != UNKNOWN || !drains(s, d, BACK(k))) continue;
    if (ready(s, w, d)) q[nq++] = d; /* once: i was its last receiver to become final */
  }
  return nq;
}

/* Runs the queue: finishes cells, queues those they make ready, emits the
 * perimeter cells a halo cell drains into. */
static int drain(const dd_ctx *x, dd_state *s, const tr_dag_round *w, int64_t nq, tr_aap_round *rd) {
  int64_t *q = w->q, work = 0;
  while (nq > 0) {
    const int64_t i = q[--nq];
    if (s->st[i] != UNKNOWN) continue;
    finish(x, s, w, i);
    work++;
    nq = wake_donors(s, w, i, q, nq);
    if (halo_donor(s, w, i)) {
      const dd_msg m = {s->st[i] == FINAL ? s->val[i] : 0.0f, s->st[i]};
      if (tr_aap_emit(rd, tr_dag_cell(&w->g, x->env->cols, i), &m)) return -1;
    }
  }
  tr_aap_add_work(rd, work);
  return 0;
}

/* Loads the window's directions and streams into s and sets what the
 * cells' own data decide (a stream cell, a cell without a direction). */
static int load(dd_ctx *x, const tr_aap_frag *f, dd_state *s, const tr_dag_round *w) {
  const tr_dag_win *g = &w->g;
  const int64_t n = s->n;
  const int hand = is_hand(x), ks = hand ? 2 : 1;
  float *a = tr_graph_window_in(x->env, 0, f);
  if (!a) return -1;
  int rc = 0;
  if (hand) {
    memcpy(s->ang, a, (size_t)n * sizeof *a);
    for (int64_t i = 0; i < n; i++) {
      s->rx[i] = 0;
      if (isnan(a[i])) continue;
      const int64_t r = i / g->pw;
      for (int k = 1; k <= 8; k++)
        if (tr_dinf_prop_at(a[i], k, w->aref + 10 * r) > 0.0) s->rx[i] |= (uint8_t)(1u << (k - 1));
    }
  } else
    for (int64_t i = 0; i < n; i++) {
      const int d = tr_d8_lut_decode(&x->lut, a[i]);
      if (d == TR_D8_BAD && tr_dag_in_tile(g, i) && !rc) {
        const int64_t cell = tr_dag_cell(g, x->env->cols, i);
        rc = tr_graph_fail(x->env, f, TR_EINPUT, "'%s': cell (row %lld, col %lld) holds %g, not a %s direction code",
                           x->prm.src, (long long)(cell / x->env->cols), (long long)(cell % x->env->cols), (double)a[i],
                           tr_d8_encoding_name(x->prm.encoding));
      }
      s->rx[i] = (uint8_t)(d >= 0 ? 1u << d : 0u); /* a pit (TR_D8_NONE) has none */
    }
  tr_graph_window_in_done(x->env, 0, f, a);
  if (rc) return -1;
  if (hand) {
    float *z = tr_graph_window_in(x->env, 1, f);
    if (!z) return -1;
    memcpy(s->z, z, (size_t)n * sizeof *z);
    tr_graph_window_in_done(x->env, 1, f, z);
  }
  float *src = tr_graph_window_in(x->env, ks, f);
  if (!src) return -1;
  for (int64_t i = 0; i < n; i++) {
    const int stream = !isnan(src[i]) && src[i] >= 1.0f;
    const int nodir = hand ? isnan(s->ang[i]) : !s->rx[i];
    s->val[i] = 0.0f;
    /* TauDEM: a HAND cell without an angle is never visited; a D8 stream
     * cell is 0 whatever its direction */
    if (hand)
      s->st[i] = nodir ? NONE : stream ? FINAL : UNKNOWN;
    else
      s->st[i] = stream ? FINAL : nodir ? NONE : UNKNOWN;
  }
  tr_graph_window_in_done(x->env, ks, f, src);
  return 0;
}

static int dd_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  dd_ctx *x = user;
  const int64_t n = (f->rows + 2) * (f->cols + 2);
  const int hand = is_hand(x);
  dd_state *s = calloc(1, sizeof *s);
  *state = s;
  if (!s) return -1;
  s->n = n;
  tr_dag_round w;
  if (tr_dag_arrays_alloc(x->env, f, s, dd_arrays, hand ? DD_NARRAYS : DD_NARRAYS - 2, n) ||
      round_begin(x, f, &w))
    return -1;
  int rc = load(x, f, s, &w);
  int64_t nq = 0;
  for (int64_t r = 1; !rc && r <= f->rows; r++)
    for (int64_t c = 1; c <= f->cols; c++) {
      const int64_t i = r * w.g.pw + c;
      if (s->st[i] == UNKNOWN && ready(s, &w, i)) w.q[nq++] = i;
    }
  if (!rc) rc = drain(x, s, &w, nq, rd);
  tr_dag_round_end(&w);
  return rc;
}

static int dd_inceval(void *user, const tr_aap_frag *f, void *state, int64_t n, const int64_t *cells,
                      const void *values, tr_aap_round *rd) {
  dd_ctx *x = user;
  dd_state *s = state;
  tr_dag_round w;
  if (round_begin(x, f, &w)) return -1;
  int64_t nq = 0;
  for (int64_t m = 0; m < n; m++) {
    dd_msg v;
    memcpy(&v, (const unsigned char *)values + (size_t)m * sizeof v, sizeof v);
    const int64_t i = tr_dag_index(&w.g, x->env->cols, cells[m]);
    if (s->st[i] != UNKNOWN) continue; /* a copy of a value already applied */
    s->st[i] = v.st == FINAL ? FINAL : NONE;
    s->val[i] = v.st == FINAL ? v.v : 0.0f;
    nq = wake_donors(s, &w, i, w.q, nq);
  }
  const int rc = drain(x, s, &w, nq, rd);
  tr_dag_round_end(&w);
  return rc;
}

static int dd_cell(void *u, int64_t i, void *out) {
  const dd_state *s = u;
  const float y = s->st[i] == FINAL ? s->val[i] : (float)TR_DOWN_NODATA;
  memcpy(out, &y, sizeof y);
  return 0;
}

static int dd_assemble(void *user, const tr_aap_frag *f, void *state) {
  dd_ctx *x = user;
  if (!state) return -1;
  return tr_dag_put(x->env, f, sizeof(float), state, dd_cell);
}

static int dd_init(tr_aap_program *p, tr_graph_env *env, const void *params) {
  dd_ctx *x = calloc(1, sizeof *x);
  if (!x) return -1;
  x->env = env;
  memcpy(&x->prm, params, sizeof x->prm);
  tr_d8_lut_init(&x->lut, x->prm.encoding);
  memset(p, 0, sizeof *p);
  p->value_size = sizeof(dd_msg);
  p->user = x;
  p->peval = dd_peval;
  p->inceval = dd_inceval;
  p->assemble = dd_assemble;
  p->destroy = dd_destroy;
  p->aggr = tr_dag_keep_first; /* copies of one final value */
  return 0;
}

/* --ft replay's invariant of Assemble's tile: a distance is >= 0, a drop
 * finite (>= 0 on a filled DEM, but an angle on a flat may in principle
 * point over a higher facet corner: not an invariant), or nodata. */
static int64_t dd_check_tile(void *user, const tr_aap_frag *f, const void *state, const void *cells) {
  (void)state;
  const dd_ctx *x = user;
  const float lo = is_hand(x) ? -FLT_MAX : 0.0f;
  const float *v = cells;
  int64_t bad = 0;
  for (int64_t i = 0; i < f->rows * f->cols; i++) bad += !(v[i] >= lo || v[i] == (float)TR_DOWN_NODATA);
  return bad;
}

/* state: up to 14 bytes a padded cell (HAND: angle, elevation, value,
 * status, receivers; D8: receivers, value, status) */
static const tr_graph_body body_dist_down = {.name = "dist_down",
                                             .init = dd_init,
                                             .release = tr_graph_release_user,
                                             .state = TR_STATE_PER_CELL(14),
                                             .msg_bytes = sizeof(dd_msg),
                                             .state_bytes = sizeof(dd_state),
                                             .check_tile = dd_check_tile};

const tr_graph_program tr_program_dist_down = {
    .name = "dist_down",
    .cell_type = GDT_Float32,
    .params_size = sizeof(tr_dist_down_params),
    .bodies = {&body_dist_down},
};
