/*
 * d8_len_program.c - flow lengths and grid order upstream over D8
 * directions, as a graph program: the row "d8_len" of the program table
 * (flowgraph --plen, --tlen, --gord: TauDEM gridnet without a mask or
 * outlets).
 *
 * A cell with a direction, over the neighbours n_k (k = 1..8, E, NE, N ...
 * SE) that drain into it, in that order:
 *   plen(c) = max over k of plen(n_k) + L     (0 without donors)
 *   tlen(c) = sum over k of (tlen(n_k) + L)   (Float32, added in k order)
 *   gord(c) = Strahler over the donors' gord: the largest a1, plus one
 *             when the second largest a2 equals it (1 without donors)
 * where L is the length of the donor's step (dx, dy or the diagonal) as
 * TauDEM's Float32 dist table has it for the row of c (metres per row on
 * geographic grids, hydro/flowdir.h's tr_dinf_row_dxdy). Cells without a
 * direction (nodata, a pit) are nodata (-1) and give nothing. A cell is
 * computed once, when every donor is final, always in the same order: the
 * bytes do not depend on the tiling, the thread or rank count, the schedule,
 * --mem or --ft.
 *
 * State of a fragment over its padded window: the direction, plen, tlen,
 * gord and whether the cell is final. PEval: Kahn's order inside the tile
 * from the cells whose donors are all final; a perimeter cell draining into
 * a halo cell with a direction is emitted once, final (f_aggr keeps the
 * first copy). IncEval: a halo donor's values are set, which may make its
 * receiver ready. Values only go from unknown to final: monotone. A cell
 * still unknown at Assemble lies on or below a cycle of directions: the run
 * fails naming it, as the accumulation does.
 *
 * The window, a round's queue and row sizes, the state's arrays, f_aggr and
 * Assemble's put are dag_round.h's, the skeleton of the programs that compute
 * a cell once from final inputs.
 */
#include <stdlib.h>
#include <string.h>

#include "d8_codes.h"
#include "dag_round.h"
#include "dinf.h"
#include "flowdir.h"
#include "graph.h"

typedef struct {
  float plen, tlen;
  int32_t gord;
} dl_msg;

typedef struct {
  tr_graph_env *env;
  tr_d8_len_params prm;
  tr_d8_lut lut;
} dl_ctx;

typedef struct {
  int64_t n;
  int8_t *dir; /* neighbour index 0..7 (TauDEM's k - 1), or a TR_D8_* marker */
  float *plen, *tlen;
  int16_t *gord;
  uint8_t *fin; /* 1: final */
} dl_state;

/* the state's arrays, each a value per padded cell */
static const tr_dag_array dl_arrays[] = {TR_DAG_ARRAY(dl_state, dir), TR_DAG_ARRAY(dl_state, plen),
                                         TR_DAG_ARRAY(dl_state, tlen), TR_DAG_ARRAY(dl_state, gord),
                                         TR_DAG_ARRAY(dl_state, fin)};
#define DL_NARRAYS ((int)(sizeof dl_arrays / sizeof dl_arrays[0]))

#define BACK(k) TR_DAG_BACK(k)

static void dl_destroy(void *user, void *state) {
  (void)user;
  if (!state) return;
  tr_dag_arrays_free(state, dl_arrays, DL_NARRAYS);
  free(state);
}

/* a round with TauDEM's step lengths of every row (w->len) */
static int round_begin(const dl_ctx *x, const tr_aap_frag *f, tr_dag_round *w) {
  return tr_dag_round_begin(w, f, &x->prm.geom, x->env->rows, TR_DAG_STEPS);
}

/* Does padded cell n drain into its neighbour in direction k from it? */
static inline int drains(const dl_state *s, int64_t n, int k) { return s->dir[n] >= 0 && s->dir[n] + 1 == k; }

/* Are all the donors of cell i final? */
static int ready(const dl_state *s, const tr_dag_round *w, int64_t i) {
  for (int k = 1; k <= 8; k++) {
    const int64_t n = i + w->g.off[k];
    if (drains(s, n, BACK(k)) && !s->fin[n]) return 0;
  }
  return 1;
}

/* Finishes cell i from its donors (all final): TauDEM gridnet's algebra. */
static void finish(dl_state *s, const tr_dag_round *w, int64_t i) {
  const float *len = w->len + 9 * (i / w->g.pw);
  float plen = 0.0f, tlen = 0.0f;
  int a1 = 0, a2 = 0;
  for (int k = 1; k <= 8; k++) {
    const int64_t n = i + w->g.off[k];
    if (!drains(s, n, BACK(k))) continue;
    const int g = s->gord[n];
    if (g >= a1) {
      a2 = a1;
      a1 = g;
    } else if (g > a2)
      a2 = g;
    const float l = len[s->dir[n] + 1];
    const float ld = s->plen[n] + l;
    tlen += s->tlen[n] + l;
    if (ld > plen) plen = ld;
  }
  s->plen[i] = plen;
  s->tlen[i] = tlen;
  s->gord[i] = (int16_t)(a2 + 1 > a1 ? a2 + 1 : a1);
  s->fin[i] = 1;
}

/* The tile cell that cell i drains into, made ready by i: queued. */
static int64_t wake(const dl_state *s, const tr_dag_round *w, int64_t i, int64_t *q, int64_t nq) {
  if (s->dir[i] < 0) return nq;
  const int64_t r = i + w->g.off[s->dir[i] + 1];
  if (tr_dag_in_tile(&w->g, r) && s->dir[r] >= 0 && !s->fin[r] && ready(s, w, r)) q[nq++] = r;
  return nq;
}

static int drain(const dl_ctx *x, dl_state *s, const tr_dag_round *w, int64_t nq, tr_aap_round *rd) {
  int64_t *q = w->q, work = 0;
  while (nq > 0) {
    const int64_t i = q[--nq];
    if (s->fin[i]) continue;
    finish(s, w, i);
    work++;
    nq = wake(s, w, i, q, nq);
    const int64_t r = i + w->g.off[s->dir[i] + 1];
    if (!tr_dag_in_tile(&w->g, r) && s->dir[r] >= 0) {
      const dl_msg m = {s->plen[i], s->tlen[i], s->gord[i]};
      if (tr_aap_emit(rd, tr_dag_cell(&w->g, x->env->cols, i), &m)) return -1;
    }
  }
  tr_aap_add_work(rd, work);
  return 0;
}

static int dl_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  dl_ctx *x = user;
  const int64_t n = (f->rows + 2) * (f->cols + 2);
  dl_state *s = calloc(1, sizeof *s);
  *state = s;
  if (!s) return -1;
  s->n = n;
  tr_dag_round w;
  if (tr_dag_arrays_alloc(x->env, f, s, dl_arrays, DL_NARRAYS, n) || round_begin(x, f, &w)) return -1;
  float *a = tr_graph_window(x->env, f);
  int rc = a ? 0 : -1;
  for (int64_t i = 0; a && i < n; i++) {
    const int d = tr_d8_lut_decode(&x->lut, a[i]);
    if (d == TR_D8_BAD && tr_dag_in_tile(&w.g, i) && !rc) {
      const int64_t cell = tr_dag_cell(&w.g, x->env->cols, i);
      rc = tr_graph_fail(x->env, f, TR_EINPUT, "'%s': cell (row %lld, col %lld) holds %g, not a %s direction code",
                         x->prm.src, (long long)(cell / x->env->cols), (long long)(cell % x->env->cols), (double)a[i],
                         tr_d8_encoding_name(x->prm.encoding));
    }
    s->dir[i] = (int8_t)(d < 0 ? TR_D8_NODATA : d); /* a pit gives nothing, as nodata */
  }
  if (a) tr_graph_window_done(x->env, f, a);
  int64_t nq = 0;
  for (int64_t r = 1; !rc && r <= f->rows; r++)
    for (int64_t c = 1; c <= f->cols; c++) {
      const int64_t i = r * w.g.pw + c;
      if (s->dir[i] >= 0 && ready(s, &w, i)) w.q[nq++] = i;
    }
  if (!rc) rc = drain(x, s, &w, nq, rd);
  tr_dag_round_end(&w);
  return rc;
}

static int dl_inceval(void *user, const tr_aap_frag *f, void *state, int64_t n, const int64_t *cells,
                      const void *values, tr_aap_round *rd) {
  dl_ctx *x = user;
  dl_state *s = state;
  tr_dag_round w;
  if (round_begin(x, f, &w)) return -1;
  int64_t nq = 0;
  for (int64_t m = 0; m < n; m++) {
    dl_msg v;
    memcpy(&v, (const unsigned char *)values + (size_t)m * sizeof v, sizeof v);
    const int64_t i = tr_dag_index(&w.g, x->env->cols, cells[m]);
    if (s->fin[i] || s->dir[i] < 0) continue; /* a copy of a value already applied */
    s->plen[i] = v.plen;
    s->tlen[i] = v.tlen;
    s->gord[i] = (int16_t)v.gord;
    s->fin[i] = 1;
    nq = wake(s, &w, i, w.q, nq);
  }
  const int rc = drain(x, s, &w, nq, rd);
  tr_dag_round_end(&w);
  return rc;
}

/* What Assemble reads: the state, and the window to name a cell by. */
typedef struct {
  const dl_ctx *x;
  const dl_state *s;
  tr_dag_win g;
} dl_out;

static int dl_cell(void *u, int64_t i, void *out) {
  const dl_out *o = u;
  const dl_ctx *x = o->x;
  const dl_state *s = o->s;
  float y = (float)TR_D8_LEN_NODATA;
  if (s->dir[i] >= 0 && !s->fin[i]) {
    const int64_t cell = tr_dag_cell(&o->g, x->env->cols, i);
    return tr_graph_fail(x->env, o->g.f, TR_EINPUT,
                         "'%s': the flow directions form a cycle: cell (row %lld, col %lld) lies on it or drains "
                         "into it",
                         x->prm.src, (long long)(cell / x->env->cols), (long long)(cell % x->env->cols));
  }
  if (s->dir[i] >= 0)
    y = x->prm.product == TR_D8_PLEN ? s->plen[i] : x->prm.product == TR_D8_TLEN ? s->tlen[i] : (float)s->gord[i];
  memcpy(out, &y, sizeof y);
  return 0;
}

static int dl_assemble(void *user, const tr_aap_frag *f, void *state) {
  dl_ctx *x = user;
  if (!state) return -1;
  dl_out o = {x, state, tr_dag_win_of(f)};
  return tr_dag_put(x->env, f, sizeof(float), &o, dl_cell);
}

static int dl_init(tr_aap_program *p, tr_graph_env *env, const void *params) {
  dl_ctx *x = calloc(1, sizeof *x);
  if (!x) return -1;
  x->env = env;
  memcpy(&x->prm, params, sizeof x->prm);
  tr_d8_lut_init(&x->lut, x->prm.encoding);
  memset(p, 0, sizeof *p);
  p->value_size = sizeof(dl_msg);
  p->user = x;
  p->peval = dl_peval;
  p->inceval = dl_inceval;
  p->assemble = dl_assemble;
  p->destroy = dl_destroy;
  p->aggr = tr_dag_keep_first; /* copies of one final value */
  return 0;
}

/* --ft replay's invariant of Assemble's tile: lengths >= 0, an order >= 1,
 * or nodata. */
static int64_t dl_check_tile(void *user, const tr_aap_frag *f, const void *state, const void *cells) {
  (void)state;
  const dl_ctx *x = user;
  const float lo = x->prm.product == TR_D8_GORD ? 1.0f : 0.0f;
  const float *v = cells;
  int64_t bad = 0;
  for (int64_t i = 0; i < f->rows * f->cols; i++) bad += !(v[i] >= lo || v[i] == (float)TR_D8_LEN_NODATA);
  return bad;
}

/* state: 12 bytes a padded cell (direction, plen, tlen, gord, final) */
static const tr_graph_body body_d8_len = {.name = "d8_len",
                                          .init = dl_init,
                                          .release = tr_graph_release_user,
                                          .state = TR_STATE_PER_CELL(12),
                                          .msg_bytes = sizeof(dl_msg),
                                          .state_bytes = sizeof(dl_state),
                                          .check_tile = dl_check_tile};

const tr_graph_program tr_program_d8_len = {
    .name = "d8_len",
    .cell_type = GDT_Float32,
    .params_size = sizeof(tr_d8_len_params),
    .bodies = {&body_d8_len},
};
