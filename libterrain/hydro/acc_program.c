/*
 * acc_program.c - the upstream dataflow over D8 directions as a graph
 * program: the row "d8_up" of the program table (accumulation, streams,
 * Strahler order; see flow.h).
 *
 * A cell's value is a function of the final values of the cells draining
 * into it: acc(c) = weight(c) + the sum of its inflows' acc, taken in the
 * fixed neighbour order E, NE, ... SE so the floating-point sum is the same
 * whatever order cells became final in; contaminated(c) = c has a NoData or
 * off-grid neighbour, or an inflow is contaminated (TauDEM aread8's edge
 * check); order(c) on stream cells = the largest inflowing stream order,
 * plus one when two or more inflows carry it (Strahler), 1 at a source.
 *
 * State of a fragment, over its padded window: the decoded direction of
 * every cell (halo included: a halo cell drains into the tile or not), a
 * byte of flags (pending inflows, final, contaminated), the value (uint32
 * counts when unweighted and the grid has under 2^32 cells, else double)
 * and, for the order product, the order.
 *
 * PEval: every tile cell with no pending inflow is final; finishing a cell
 * releases the cell it drains into (a queue, Kahn's topological order).
 * A final perimeter cell that drains into a neighbour fragment is emitted
 * with its absolute value. IncEval: a halo cell's first value is applied
 * (later copies of it are ignored: absolute totals are idempotent), which
 * releases the tile cell it drains into. Values are only ever set once,
 * from "unknown" to final, so the program is monotone and every schedule
 * gives the same result; f_aggr is max over (value, flags, order), which on
 * copies of one final value is that value.
 *
 * A cell still pending at Assemble lies on or below a cycle of directions:
 * the run fails naming a cell on the cycle (found walking upstream).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "d8_window.h"
#include "flow.h"

#define F_PEND 0x0f
#define F_FINAL 0x10
#define F_CON 0x20

typedef tr_d8_win win;

typedef struct {
  double v;
  uint8_t con, ord;
  uint8_t pad[6];
} up_msg;

typedef struct {
  tr_graph_env *env;
  tr_up_params prm;
  tr_dir_lut lut;
  int counts; /* values as uint32 counts */
} up_ctx;

typedef struct {
  int8_t *dir;
  uint8_t *flag;
  double *vd;
  uint32_t *vu;
  uint8_t *ord;
} up_state;

static int64_t global_cell(const up_ctx *x, const win *g, int64_t i) { return tr_d8_cell(g, x->env->cols, i); }

static double getv(const up_state *s, int64_t i) { return s->vu ? (double)s->vu[i] : s->vd[i]; }

static void up_destroy(void *user, void *state) {
  (void)user;
  up_state *s = state;
  if (!s) return;
  free(s->dir);
  free(s->flag);
  free(s->vd);
  free(s->vu);
  free(s->ord);
  free(s);
}

/* Finishes cell i from its inflows (all final). */
static void finish(const up_ctx *x, up_state *s, const win *g, int64_t i, const float *wz) {
  double v = x->prm.weighted ? (isnan(wz[i]) ? 0.0 : (double)wz[i]) : 1.0;
  uint8_t con = s->flag[i] & F_CON;
  int best = 0, nbest = 0;
  for (int k = 0; k < 8; k++) {
    const int64_t n = i + g->off[k];
    if (s->dir[n] != (k + 4) % 8) continue;
    v += getv(s, n);
    con |= s->flag[n] & F_CON;
    if (s->ord && s->ord[n]) {
      if (s->ord[n] > best) best = s->ord[n], nbest = 1;
      else if (s->ord[n] == best) nbest++;
    }
  }
  if (s->vu) s->vu[i] = (uint32_t)v;
  else s->vd[i] = v;
  s->flag[i] = (uint8_t)((s->flag[i] & ~F_CON) | con | F_FINAL);
  if (s->ord) {
    const int stream = v * x->prm.unit >= x->prm.threshold;
    s->ord[i] = (uint8_t)(!stream ? 0 : nbest == 0 ? 1 : nbest >= 2 ? best + 1 : best);
  }
}

/* Runs the queue: finishes cells, releases their downstream cells, emits
 * final cells that drain into another fragment. */
static int drain(const up_ctx *x, up_state *s, const win *g, int64_t *q, int64_t nq, const float *wz,
                 tr_aap_round *rd) {
  int64_t work = 0;
  while (nq > 0) {
    const int64_t i = q[--nq];
    finish(x, s, g, i, wz);
    work++;
    if (s->dir[i] < 0) continue;
    const int64_t d = i + g->off[s->dir[i]];
    if (s->dir[d] == TR_DIR_NODATA) continue;
    if (tr_d8_in_tile(g, d)) {
      if (--s->flag[d] & F_PEND) continue;
      q[nq++] = d;
    } else {
      up_msg m;
      memset(&m, 0, sizeof m);
      m.v = getv(s, i);
      m.con = (s->flag[i] & F_CON) ? 1 : 0;
      m.ord = s->ord ? s->ord[i] : 0;
      if (tr_aap_emit(rd, global_cell(x, g, i), &m)) return -1;
    }
  }
  tr_aap_add_work(rd, work);
  return 0;
}

static float *weights(up_ctx *x, const tr_aap_frag *f) {
  return x->prm.weighted ? tr_graph_window_in(x->env, 1, f) : NULL;
}

static void weights_done(up_ctx *x, const tr_aap_frag *f, float *wz) {
  if (wz) tr_graph_window_in_done(x->env, 1, f, wz);
}

static int up_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  up_ctx *x = user;
  const win g = tr_d8_win_of(f);
  const int64_t n = g.pw * (g.h + 2);
  up_state *s = calloc(1, sizeof *s);
  if (!s) return -1;
  *state = s;
  s->dir = malloc((size_t)n);
  s->flag = calloc((size_t)n, 1);
  if (x->counts) s->vu = calloc((size_t)n, sizeof *s->vu);
  else s->vd = calloc((size_t)n, sizeof *s->vd);
  if (x->prm.product == TR_UP_ORDER) s->ord = calloc((size_t)n, 1);
  int64_t *q = malloc((size_t)(g.h * g.w) * sizeof *q);
  float *z = tr_graph_window(x->env, f);
  float *wz = z ? weights(x, f) : NULL;
  int rc = 0;
  if (!s->dir || !s->flag || !(s->vu || s->vd) || (x->prm.product == TR_UP_ORDER && !s->ord) || !q || !z ||
      (x->prm.weighted && !wz))
    rc = -1;
  if (!rc) rc = tr_d8_decode(x->env, f, &g, &x->lut, x->prm.encoding, x->prm.src, z, s->dir);
  int64_t nq = 0;
  for (int64_t r = 1; !rc && r <= g.h; r++)
    for (int64_t c = 1; c <= g.w; c++) {
      const int64_t i = r * g.pw + c;
      if (s->dir[i] == TR_DIR_NODATA) continue;
      uint8_t pend = 0, con = 0;
      for (int k = 0; k < 8; k++) {
        const int64_t nb = i + g.off[k];
        if (s->dir[nb] == TR_DIR_NODATA) con = F_CON;
        else if (s->dir[nb] == (k + 4) % 8) pend++;
      }
      s->flag[i] = (uint8_t)(pend | con);
      if (!pend) q[nq++] = i;
    }
  if (!rc) rc = drain(x, s, &g, q, nq, wz, rd);
  if (z) tr_graph_window_done(x->env, f, z);
  weights_done(x, f, wz);
  free(q);
  return rc;
}

static int up_inceval(void *user, const tr_aap_frag *f, void *state, int64_t n, const int64_t *cells,
                      const void *values, tr_aap_round *rd) {
  up_ctx *x = user;
  up_state *s = state;
  const win g = tr_d8_win_of(f);
  int64_t *q = malloc((size_t)(g.h * g.w) * sizeof *q);
  float *wz = q ? weights(x, f) : NULL;
  if (!q || (x->prm.weighted && !wz)) {
    free(q);
    return -1;
  }
  int64_t nq = 0;
  for (int64_t m = 0; m < n; m++) {
    up_msg v;
    memcpy(&v, (const unsigned char *)values + (size_t)m * sizeof v, sizeof v);
    const int64_t i = tr_d8_index(&g, x->env->cols, cells[m]);
    if ((s->flag[i] & F_FINAL) || s->dir[i] < 0) continue; /* a copy of a value already applied */
    if (s->vu) s->vu[i] = (uint32_t)v.v;
    else s->vd[i] = v.v;
    if (s->ord) s->ord[i] = v.ord;
    s->flag[i] = (uint8_t)(F_FINAL | (v.con ? F_CON : 0));
    const int64_t d = i + g.off[s->dir[i]];
    if (tr_d8_in_tile(&g, d) && s->dir[d] != TR_DIR_NODATA && !(--s->flag[d] & F_PEND)) q[nq++] = d;
  }
  const int rc = drain(x, s, &g, q, nq, wz, rd);
  weights_done(x, f, wz);
  free(q);
  return rc;
}

/* A cell on the cycle that keeps cell i pending: walk upstream through
 * pending inflows until a cell repeats (or the walk leaves the tile). */
static int64_t cycle_cell(const up_state *s, const win *g, int64_t i) {
  unsigned char *seen = calloc((size_t)(g->pw * (g->h + 2)), 1);
  if (!seen) return i;
  for (;;) {
    if (seen[i]) break;
    seen[i] = 1;
    int64_t up = -1;
    for (int k = 0; k < 8 && up < 0; k++) {
      const int64_t n = i + g->off[k];
      if (s->dir[n] == (k + 4) % 8 && !(s->flag[n] & F_FINAL) && tr_d8_in_tile(g, n)) up = n;
    }
    if (up < 0) break;
    i = up;
  }
  free(seen);
  return i;
}

static int up_assemble(void *user, const tr_aap_frag *f, void *state) {
  up_ctx *x = user;
  up_state *s = state;
  if (!s) return -1;
  const win g = tr_d8_win_of(f);
  double *tile = malloc((size_t)(g.h * g.w) * sizeof *tile);
  if (!tile) return -1;
  const double nd = x->prm.product == TR_UP_ACC ? TR_ACC_NODATA : TR_BYTE_NODATA;
  for (int64_t r = 0; r < g.h; r++)
    for (int64_t c = 0; c < g.w; c++) {
      const int64_t i = (r + 1) * g.pw + c + 1;
      double out = nd;
      if (s->dir[i] != TR_DIR_NODATA) {
        if (!(s->flag[i] & F_FINAL)) {
          const int64_t cell = global_cell(x, &g, cycle_cell(s, &g, i));
          free(tile);
          return tr_graph_fail(x->env, f, TR_EINPUT,
                               "'%s': the flow directions form a cycle through cell (row %lld, col %lld)", x->prm.src,
                               (long long)(cell / x->env->cols), (long long)(cell % x->env->cols));
        }
        const double v = getv(s, i) * x->prm.unit;
        switch (x->prm.product) {
          case TR_UP_ACC: out = x->prm.edge_check && (s->flag[i] & F_CON) ? nd : v; break;
          case TR_UP_STREAMS: out = v >= x->prm.threshold; break;
          case TR_UP_ORDER: out = s->ord[i]; break;
        }
      }
      tile[r * g.w + c] = out;
    }
  const int rc = x->env->put(x->env, f, tile);
  free(tile);
  return rc;
}

/* f_aggr: the largest (value, contamination, order); copies of one final
 * value are equal, so this keeps it. */
static int up_max(void *user, void *acc, const void *value) {
  (void)user;
  up_msg a, v;
  memcpy(&a, acc, sizeof a);
  memcpy(&v, value, sizeof v);
  const int more = v.v > a.v || (v.v == a.v && (v.con > a.con || (v.con == a.con && v.ord > a.ord)));
  if (more) memcpy(acc, &v, sizeof v);
  return more;
}

static int up_init(tr_aap_program *p, tr_graph_env *env, const void *params) {
  up_ctx *x = calloc(1, sizeof *x);
  if (!x) return -1;
  x->env = env;
  memcpy(&x->prm, params, sizeof x->prm);
  tr_dir_lut_init(&x->lut, x->prm.encoding);
  x->counts = !x->prm.weighted && env->rows * env->cols <= (int64_t)UINT32_MAX;
  memset(p, 0, sizeof *p);
  p->value_size = sizeof(up_msg);
  p->user = x;
  p->peval = up_peval;
  p->inceval = up_inceval;
  p->assemble = up_assemble;
  p->destroy = up_destroy;
  p->aggr = up_max;
  return 0;
}

static void up_release(tr_aap_program *p) {
  free(p->user);
  p->user = NULL;
}

const tr_graph_program tr_program_d8_up = {"d8_up", GDT_Float64, sizeof(tr_up_params), up_init, up_release};
