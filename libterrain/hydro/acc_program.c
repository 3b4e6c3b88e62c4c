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
 * every cell (a byte; halo included: a halo cell drains into the tile or
 * not) and each cell's value, "unknown" until final. Unweighted counts on
 * grids under 2^31 cells are one uint32 per cell (the top bit is the
 * contamination, all ones is unknown): 5 bytes per cell in all. Otherwise a
 * double (NaN while unknown) and a contamination byte; the order product
 * adds a byte. A cell's pending inflows are not kept but counted from its
 * neighbours when one of them becomes final. (Decoding the directions again
 * in every round instead of keeping them saves one byte per cell but costs
 * a window reload per round: measured 1.8x slower.)
 *
 * PEval: every tile cell with no inflow is final; finishing a cell makes
 * the cell it drains into ready once all of that cell's inflows are final
 * (a queue: Kahn's topological order). A final perimeter cell that drains
 * into a neighbour fragment is emitted with its absolute value. IncEval: a
 * halo cell's first value is applied (later copies are ignored: absolute
 * totals are idempotent), which may make the tile cell it drains into ready.
 * Values are only ever set once, from unknown to final, so the program is
 * monotone and every schedule gives the same result; f_aggr is max over
 * (value, contamination, order), which on copies of one final value is that
 * value.
 *
 * A cell still unknown at Assemble lies on or below a cycle of directions:
 * the run fails naming a cell on the cycle (found walking upstream).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "d8_window.h"
#include "flow.h"

#define UNKNOWN_U32 UINT32_MAX
#define CON_U32 0x80000000u
#define COUNT_MAX 0x7ffffffell /* the largest count a uint32 value holds */

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
  int8_t *dir;  /* decoded directions (dir_decode.h) */
  uint32_t *vu; /* counts: value | CON_U32, UNKNOWN_U32 while unknown */
  double *vd;   /* otherwise: NaN while unknown ... */
  uint8_t *con; /* ... and the contamination apart */
  uint8_t *ord; /* the order product */
} up_state;

/* What one round works with: the fragment's directions and, when
 * weighted, its weights window borrowed from the tile store. */
typedef struct {
  win g;
  const int8_t *dir;
  float *wz;
} up_round;

static int64_t global_cell(const up_ctx *x, const win *g, int64_t i) { return tr_d8_cell(g, x->env->cols, i); }

static int is_final(const up_state *s, int64_t i) { return s->vu ? s->vu[i] != UNKNOWN_U32 : !isnan(s->vd[i]); }
static double getv(const up_state *s, int64_t i) { return s->vu ? (double)(s->vu[i] & ~CON_U32) : s->vd[i]; }
static int getcon(const up_state *s, int64_t i) { return s->vu ? (s->vu[i] & CON_U32) != 0 : s->con[i]; }

static void setv(up_state *s, int64_t i, double v, int con) {
  if (s->vu) s->vu[i] = (uint32_t)v | (con ? CON_U32 : 0);
  else {
    s->vd[i] = v;
    s->con[i] = (uint8_t)(con != 0);
  }
}

static void up_destroy(void *user, void *state) {
  (void)user;
  up_state *s = state;
  if (!s) return;
  free(s->dir);
  free(s->vu);
  free(s->vd);
  free(s->con);
  free(s->ord);
  free(s);
}

static void round_end(up_ctx *x, const tr_aap_frag *f, up_round *w) {
  if (w->wz) tr_graph_window_in_done(x->env, 1, f, w->wz);
  memset(w, 0, sizeof *w);
}

/* Starts a round on fragment f: its directions, and its weights borrowed. */
static int round_begin(up_ctx *x, const tr_aap_frag *f, const up_state *s, up_round *w) {
  memset(w, 0, sizeof *w);
  w->g = tr_d8_win_of(f);
  w->dir = s->dir;
  w->wz = x->prm.weighted ? tr_graph_window_in(x->env, 1, f) : NULL;
  return x->prm.weighted && !w->wz ? -1 : 0;
}

/* Are all the inflows of tile cell d final? */
static int ready(const up_state *s, const up_round *w, int64_t d) {
  for (int k = 0; k < 8; k++) {
    const int64_t n = d + w->g.off[k];
    if (w->dir[n] == (k + 4) % 8 && !is_final(s, n)) return 0;
  }
  return 1;
}

/* Finishes cell i from its inflows (all final). */
static void finish(const up_ctx *x, up_state *s, const up_round *w, int64_t i) {
  double v = x->prm.weighted ? (isnan(w->wz[i]) ? 0.0 : (double)w->wz[i]) : 1.0;
  int con = 0, best = 0, nbest = 0;
  for (int k = 0; k < 8; k++) {
    const int64_t n = i + w->g.off[k];
    if (w->dir[n] == TR_DIR_NODATA) con = 1;
    if (w->dir[n] != (k + 4) % 8) continue;
    v += getv(s, n);
    con |= getcon(s, n);
    if (s->ord && s->ord[n]) {
      if (s->ord[n] > best) best = s->ord[n], nbest = 1;
      else if (s->ord[n] == best) nbest++;
    }
  }
  setv(s, i, v, con);
  if (s->ord) {
    const int stream = v * x->prm.unit >= x->prm.threshold;
    s->ord[i] = (uint8_t)(!stream ? 0 : nbest == 0 ? 1 : nbest >= 2 ? best + 1 : best);
  }
}

/* Runs the queue: finishes cells, queues the cells they make ready, emits
 * final cells that drain into another fragment. */
static int drain(const up_ctx *x, up_state *s, const up_round *w, int64_t *q, int64_t nq, tr_aap_round *rd) {
  int64_t work = 0;
  while (nq > 0) {
    const int64_t i = q[--nq];
    finish(x, s, w, i);
    work++;
    if (w->dir[i] < 0) continue;
    const int64_t d = i + w->g.off[w->dir[i]];
    if (w->dir[d] == TR_DIR_NODATA) continue;
    if (tr_d8_in_tile(&w->g, d)) {
      if (ready(s, w, d)) q[nq++] = d;
    } else {
      up_msg m;
      memset(&m, 0, sizeof m);
      m.v = getv(s, i);
      m.con = (uint8_t)getcon(s, i);
      m.ord = s->ord ? s->ord[i] : 0;
      if (tr_aap_emit(rd, global_cell(x, &w->g, i), &m)) return -1;
    }
  }
  tr_aap_add_work(rd, work);
  return 0;
}

static int up_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  up_ctx *x = user;
  const win g = tr_d8_win_of(f);
  const int64_t n = g.pw * (g.h + 2);
  up_state *s = calloc(1, sizeof *s);
  if (!s) return -1;
  *state = s;
  s->dir = malloc((size_t)n);
  if (x->counts) s->vu = malloc((size_t)n * sizeof *s->vu);
  else s->vd = malloc((size_t)n * sizeof *s->vd), s->con = calloc((size_t)n, 1);
  if (x->prm.product == TR_UP_ORDER) s->ord = calloc((size_t)n, 1);
  int64_t *q = malloc((size_t)(g.h * g.w) * sizeof *q);
  /* every per-cell array, so an out-of-core run may spill it between rounds (graph.h) */
  const int kept = !tr_graph_keep(x->env, f, &s->dir, (size_t)n, NULL) &&
                   !tr_graph_keep(x->env, f, &s->vu, (size_t)n * sizeof *s->vu, NULL) &&
                   !tr_graph_keep(x->env, f, &s->vd, (size_t)n * sizeof *s->vd, NULL) &&
                   !tr_graph_keep(x->env, f, &s->con, (size_t)n, NULL) &&
                   !tr_graph_keep(x->env, f, &s->ord, (size_t)n, NULL);
  float *z = q && s->dir && kept ? tr_graph_window(x->env, f) : NULL;
  if (!(s->vu || (s->vd && s->con)) || (x->prm.product == TR_UP_ORDER && !s->ord) || !z) {
    if (z) tr_graph_window_done(x->env, f, z);
    free(q);
    return -1;
  }
  const int bad = tr_d8_decode(x->env, f, &g, &x->lut, x->prm.encoding, x->prm.src, z, s->dir);
  tr_graph_window_done(x->env, f, z);
  for (int64_t i = 0; i < n; i++)
    if (s->vu) s->vu[i] = UNKNOWN_U32;
    else s->vd[i] = NAN;
  up_round w;
  if (bad || round_begin(x, f, s, &w)) {
    free(q);
    return -1;
  }
  int64_t nq = 0;
  for (int64_t r = 1; r <= g.h; r++)
    for (int64_t c = 1; c <= g.w; c++) {
      const int64_t i = r * g.pw + c;
      if (w.dir[i] != TR_DIR_NODATA && ready(s, &w, i)) q[nq++] = i;
    }
  const int rc = drain(x, s, &w, q, nq, rd);
  round_end(x, f, &w);
  free(q);
  return rc;
}

static int up_inceval(void *user, const tr_aap_frag *f, void *state, int64_t n, const int64_t *cells,
                      const void *values, tr_aap_round *rd) {
  up_ctx *x = user;
  up_state *s = state;
  up_round w;
  int64_t *q = malloc((size_t)(f->rows * f->cols) * sizeof *q);
  if (!q || round_begin(x, f, s, &w)) {
    free(q);
    return -1;
  }
  int64_t nq = 0;
  for (int64_t m = 0; m < n; m++) {
    up_msg v;
    memcpy(&v, (const unsigned char *)values + (size_t)m * sizeof v, sizeof v);
    const int64_t i = tr_d8_index(&w.g, x->env->cols, cells[m]);
    if (is_final(s, i) || w.dir[i] < 0) continue; /* a copy of a value already applied */
    setv(s, i, v.v, v.con);
    if (s->ord) s->ord[i] = v.ord;
    const int64_t d = i + w.g.off[w.dir[i]];
    if (tr_d8_in_tile(&w.g, d) && w.dir[d] != TR_DIR_NODATA && ready(s, &w, d)) q[nq++] = d;
  }
  const int rc = drain(x, s, &w, q, nq, rd);
  round_end(x, f, &w);
  free(q);
  return rc;
}

/* A cell on the cycle that keeps cell i unknown: walk upstream through
 * unknown inflows until a cell repeats (or the walk leaves the tile). */
static int64_t cycle_cell(const up_state *s, const up_round *w, int64_t i) {
  unsigned char *seen = calloc((size_t)(w->g.pw * (w->g.h + 2)), 1);
  if (!seen) return i;
  for (;;) {
    if (seen[i]) break;
    seen[i] = 1;
    int64_t up = -1;
    for (int k = 0; k < 8 && up < 0; k++) {
      const int64_t n = i + w->g.off[k];
      if (w->dir[n] == (k + 4) % 8 && !is_final(s, n) && tr_d8_in_tile(&w->g, n)) up = n;
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
  up_round w;
  memset(&w, 0, sizeof w);
  w.g = tr_d8_win_of(f);
  w.dir = s->dir;
  const win *g = &w.g;
  double *tile = malloc((size_t)(g->h * g->w) * sizeof *tile);
  const double nd = x->prm.product == TR_UP_ACC ? TR_ACC_NODATA : TR_BYTE_NODATA;
  int rc = tile ? 0 : -1;
  for (int64_t r = 0; r < g->h && !rc; r++)
    for (int64_t c = 0; c < g->w && !rc; c++) {
      const int64_t i = (r + 1) * g->pw + c + 1;
      double out = nd;
      if (w.dir[i] != TR_DIR_NODATA) {
        if (!is_final(s, i)) {
          const int64_t cell = global_cell(x, g, cycle_cell(s, &w, i));
          rc = tr_graph_fail(x->env, f, TR_EINPUT,
                             "'%s': the flow directions form a cycle through cell (row %lld, col %lld)", x->prm.src,
                             (long long)(cell / x->env->cols), (long long)(cell % x->env->cols));
          break;
        }
        const double v = getv(s, i) * x->prm.unit;
        switch (x->prm.product) {
          case TR_UP_ACC: out = x->prm.edge_check && getcon(s, i) ? nd : v; break;
          case TR_UP_STREAMS: out = v >= x->prm.threshold; break;
          case TR_UP_ORDER: out = s->ord[i]; break;
        }
      }
      tile[r * g->w + c] = out;
    }
  if (!rc) rc = x->env->put(x->env, f, tile);
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
  x->counts = !x->prm.weighted && env->rows * env->cols < COUNT_MAX;
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

/* state: 5 bytes a cell for counts, at most 10 (a double, a contamination and an order byte) */
const tr_graph_program tr_program_d8_up = {"d8_up", GDT_Float64, sizeof(tr_up_params), up_init, up_release, 10};
