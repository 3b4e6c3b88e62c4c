/*
 * dinf_up_program.c - the upstream dataflow over D-infinity angles as a
 * graph program: the row "dinf_up" of the program table (TauDEM areadinf's
 * specific catchment area, and twi = ln(sca / slope) from it).
 *
 * A cell with a valid angle has
 *   sca(c) = dx(c) + sum over k = 1..8 (E, NE, N ... SE) of p_k sca(n_k)
 * where n_k is neighbour k and p_k > 0 the share of n_k's flow that reaches
 * c (hydro/dinf.h, tr_dinf_prop, with n_k's row's cell size). The sum is
 * TauDEM's: a Float32 accumulator, each step (float)(acc + p_k * sca(n_k))
 * in double, the donors in that fixed k order, then + dx. Because a cell
 * is computed once, when every donor is final, and always sums them in that
 * order, its bytes do not depend on the order cells become final in: not on
 * the tiling, the thread or rank count, the schedule or --mem. Cross-tile
 * flow adds nothing of its own: a donor in the halo is used exactly as an
 * inside one, with its final value as received. contaminated(c) = c has a
 * neighbour off the grid or without an angle, or (edge check) a
 * contributing donor is contaminated (TauDEM's contcheck); with the check
 * such cells are nodata.
 *
 * State of a fragment over its padded window: the angle (NaN for nodata and
 * off the grid), sca (NaN while unknown) and the contamination byte, 9
 * bytes a cell. PEval: Kahn's order inside the tile from the cells whose
 * donors are all final; a perimeter cell that becomes final and gives flow
 * to a halo cell is emitted once with its value (absolute and final, so a
 * duplicate changes nothing; f_aggr keeps the first). IncEval: a halo
 * donor's first value is set, which may make the tile cells it drains into
 * ready. Values only go from unknown to final: monotone, and every schedule
 * gives the same result.
 *
 * A cell still unknown at Assemble receives flow from a cycle of angles
 * (a D-infinity split can close one on a flat); TauDEM leaves such cells
 * without a value (its queue never reaches them), and so does this: nodata.
 * twi (product TR_DINF_UP_TWI, input 1 the slope): ln(sca / slope) as
 * TauDEM's twi computes it (Float32 division, then the logarithm), nodata
 * where either is nodata or not positive.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dinf.h"
#include "flowdir.h"
#include "graph.h"

typedef struct {
  float v;
  int32_t con;
} du_msg;

typedef struct {
  tr_graph_env *env;
  tr_dinf_up_params prm;
} du_ctx;

typedef struct {
  int64_t n;
  float *ang; /* padded window; NaN: no angle */
  float *sca; /* NaN while unknown */
  uint8_t *con;
} du_state;

/* One round's geometry: the window's offsets and the cell size of every
 * padded row. */
typedef struct {
  const tr_aap_frag *f;
  int64_t h, w, pw;
} du_win;

typedef struct {
  du_win g;
  int64_t off[9]; /* neighbour k (1..8, dinf.h's numbering) */
  double *dx, *dy;
} du_round;

/* Is padded index i a tile cell (not the halo)? */
static inline int in_tile(const du_win *g, int64_t i) {
  const int64_t r = i / g->pw, c = i % g->pw;
  return r >= 1 && r <= g->h && c >= 1 && c <= g->w;
}

/* The global cell index of padded index i, and back. */
static inline int64_t cell_of(const du_win *g, int64_t cols, int64_t i) {
  return (i / g->pw - 1 + g->f->row0) * cols + (i % g->pw - 1 + g->f->col0);
}

static inline int64_t index_of(const du_win *g, int64_t cols, int64_t cell) {
  return (cell / cols - g->f->row0 + 1) * g->pw + (cell % cols - g->f->col0 + 1);
}

static void du_destroy(void *user, void *state) {
  (void)user;
  du_state *s = state;
  if (!s) return;
  free(s->ang);
  free(s->sca);
  free(s->con);
  free(s);
}

static int round_begin(const du_ctx *x, const tr_aap_frag *f, du_round *w) {
  memset(w, 0, sizeof *w);
  w->g = (du_win){f, f->rows, f->cols, f->cols + 2};
  for (int k = 1; k <= 8; k++) w->off[k] = tr_dinf_nrow[k] * w->g.pw + tr_dinf_ncol[k];
  const int64_t nr = f->rows + 2;
  w->dx = malloc((size_t)nr * sizeof *w->dx);
  w->dy = malloc((size_t)nr * sizeof *w->dy);
  if (!w->dx || !w->dy) return -1;
  for (int64_t r = 0; r < nr; r++) tr_dinf_row_dxdy(&x->prm.geom, x->env->rows, f->row0 + r - 1, &w->dx[r], &w->dy[r]);
  return 0;
}

static void round_end(du_round *w) {
  free(w->dx);
  free(w->dy);
}

/* The share of padded cell n's flow that reaches its neighbour in direction
 * k from n (> 0), or <= 0 for none. */
static inline double share(const du_state *s, const du_round *w, int64_t n, int k) {
  const float a = s->ang[n];
  if (isnan(a)) return -1.0;
  const int64_t r = n / w->g.pw;
  return tr_dinf_prop(a, k, w->dx[r], w->dy[r]);
}

/* k's opposite: the direction from neighbour k back to the cell */
#define BACK(k) ((k) + 4 > 8 ? (k) - 4 : (k) + 4)

/* Are all the donors of tile cell d final? */
static int ready(const du_state *s, const du_round *w, int64_t d) {
  for (int k = 1; k <= 8; k++) {
    const int64_t n = d + w->off[k];
    if (isnan(s->sca[n]) && share(s, w, n, BACK(k)) > 0.0) return 0;
  }
  return 1;
}

/* Finishes cell i from its donors (all final), TauDEM's sum. */
static void finish(const du_ctx *x, du_state *s, const du_round *w, int64_t i) {
  float acc = 0.0f;
  int con = 0;
  for (int k = 1; k <= 8; k++) {
    const int64_t n = i + w->off[k];
    if (isnan(s->ang[n])) {
      con = 1;
      continue;
    }
    const double p = share(s, w, n, BACK(k));
    if (!(p > 0.0)) continue;
    if (x->prm.edge_check && s->con[n]) con = 1;
    else acc = (float)((double)acc + p * (double)s->sca[n]);
  }
  s->sca[i] = (float)((double)acc + w->dx[i / w->g.pw]);
  s->con[i] = (uint8_t)con;
}

/* Runs the queue: finishes cells, queues those they make ready, emits
 * final perimeter cells that give flow to a halo cell. */
static int drain(const du_ctx *x, du_state *s, const du_round *w, int64_t *q, int64_t nq, tr_aap_round *rd) {
  int64_t work = 0;
  while (nq > 0) {
    const int64_t i = q[--nq];
    finish(x, s, w, i);
    work++;
    int out = 0;
    for (int k = 1; k <= 8; k++) {
      if (!(share(s, w, i, k) > 0.0)) continue;
      const int64_t d = i + w->off[k];
      if (!in_tile(&w->g, d)) out = 1;
      else if (!isnan(s->ang[d]) && isnan(s->sca[d]) && ready(s, w, d))
        q[nq++] = d; /* once: it became ready with this, its last donor */
    }
    if (out) {
      du_msg m = {s->sca[i], s->con[i]};
      if (tr_aap_emit(rd, cell_of(&w->g, x->env->cols, i), &m)) return -1;
    }
  }
  tr_aap_add_work(rd, work);
  return 0;
}

static int du_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  du_ctx *x = user;
  const int64_t n = (f->rows + 2) * (f->cols + 2);
  du_state *s = calloc(1, sizeof *s);
  *state = s;
  if (!s) return -1;
  s->n = n;
  s->ang = malloc((size_t)n * sizeof *s->ang);
  s->sca = malloc((size_t)n * sizeof *s->sca);
  s->con = calloc((size_t)n, 1);
  float *z = s->ang && s->sca && s->con ? tr_graph_window(x->env, f) : NULL;
  if (!z) return -1;
  memcpy(s->ang, z, (size_t)n * sizeof *z);
  tr_graph_window_done(x->env, f, z);
  for (int64_t i = 0; i < n; i++) s->sca[i] = NAN;
  if (tr_graph_keep(x->env, f, &s->ang, (size_t)n * sizeof *s->ang, NULL) ||
      tr_graph_keep(x->env, f, &s->sca, (size_t)n * sizeof *s->sca, NULL) ||
      tr_graph_keep(x->env, f, &s->con, (size_t)n, NULL))
    return -1;
  du_round w;
  memset(&w, 0, sizeof w); /* round_end after a failure before round_begin */
  int64_t *q = malloc((size_t)(f->rows * f->cols) * sizeof *q);
  if (!q || round_begin(x, f, &w)) {
    free(q);
    round_end(&w);
    return -1;
  }
  int64_t nq = 0;
  for (int64_t r = 1; r <= f->rows; r++)
    for (int64_t c = 1; c <= f->cols; c++) {
      const int64_t i = r * w.g.pw + c;
      if (!isnan(s->ang[i]) && ready(s, &w, i)) q[nq++] = i;
    }
  const int rc = drain(x, s, &w, q, nq, rd);
  round_end(&w);
  free(q);
  return rc;
}

static int du_inceval(void *user, const tr_aap_frag *f, void *state, int64_t n, const int64_t *cells,
                      const void *values, tr_aap_round *rd) {
  du_ctx *x = user;
  du_state *s = state;
  du_round w;
  memset(&w, 0, sizeof w); /* round_end after a failure before round_begin */
  int64_t *q = malloc((size_t)(f->rows * f->cols) * sizeof *q);
  if (!q || round_begin(x, f, &w)) {
    free(q);
    round_end(&w);
    return -1;
  }
  int64_t nq = 0;
  for (int64_t m = 0; m < n; m++) {
    du_msg v;
    memcpy(&v, (const unsigned char *)values + (size_t)m * sizeof v, sizeof v);
    const int64_t i = index_of(&w.g, x->env->cols, cells[m]);
    if (!isnan(s->sca[i]) || isnan(s->ang[i])) continue; /* a copy of a value already applied */
    s->sca[i] = v.v;
    s->con[i] = (uint8_t)(v.con != 0);
    for (int k = 1; k <= 8; k++) {
      if (!(share(s, &w, i, k) > 0.0)) continue;
      const int64_t d = i + w.off[k];
      if (in_tile(&w.g, d) && !isnan(s->ang[d]) && isnan(s->sca[d]) && ready(s, &w, d)) q[nq++] = d;
    }
  }
  const int rc = drain(x, s, &w, q, nq, rd);
  round_end(&w);
  free(q);
  return rc;
}

static int du_assemble(void *user, const tr_aap_frag *f, void *state) {
  du_ctx *x = user;
  du_state *s = state;
  if (!s) return -1;
  const int64_t h = f->rows, wd = f->cols, pw = wd + 2;
  const int twi = x->prm.product == TR_DINF_UP_TWI;
  float *tile = malloc((size_t)(h * wd) * sizeof *tile);
  float *slp = tile && twi ? tr_graph_window_in(x->env, 1, f) : NULL;
  if (!tile || (twi && !slp)) {
    free(tile);
    return -1;
  }
  for (int64_t r = 1; r <= h; r++)
    for (int64_t c = 1; c <= wd; c++) {
      const int64_t i = r * pw + c;
      float out = (float)TR_DINF_UP_NODATA;
      const float v = s->sca[i];
      if (!isnan(v) && !(x->prm.edge_check && s->con[i])) out = v;
      if (twi) {
        const float sl = slp[i];
        out = !isnan(v) && !isnan(sl) && sl > 0.0f && v > 0.0f ? logf(v / sl) : (float)TR_DINF_UP_NODATA;
      }
      tile[(r - 1) * wd + (c - 1)] = out;
    }
  if (slp) tr_graph_window_in_done(x->env, 1, f, slp);
  const int rc = x->env->put(x->env, f, tile);
  free(tile);
  return rc;
}

/* Copies of one final value: the first is kept. */
static int du_first(void *user, void *acc, const void *value) {
  (void)user;
  (void)acc;
  (void)value;
  return 0;
}

static int du_init(tr_aap_program *p, tr_graph_env *env, const void *params) {
  du_ctx *x = calloc(1, sizeof *x);
  if (!x) return -1;
  x->env = env;
  memcpy(&x->prm, params, sizeof x->prm);
  memset(p, 0, sizeof *p);
  p->value_size = sizeof(du_msg);
  p->user = x;
  p->peval = du_peval;
  p->inceval = du_inceval;
  p->assemble = du_assemble;
  p->destroy = du_destroy;
  p->aggr = du_first;
  return 0;
}

/* --ft replay's invariant of Assemble's tile: sca >= dx > 0 or nodata (twi: any value). */
static int64_t du_check_tile(void *user, const tr_aap_frag *f, const void *state, const void *cells) {
  (void)state;
  const du_ctx *x = user;
  if (x->prm.product == TR_DINF_UP_TWI) return 0;
  const float *v = cells;
  int64_t bad = 0;
  for (int64_t i = 0; i < f->rows * f->cols; i++) bad += !(v[i] > 0.0f || v[i] == (float)TR_DINF_UP_NODATA);
  return bad;
}

/* state: 9 bytes a padded cell (angle, sca, contamination) */
static const tr_graph_body body_dinf_up = {.name = "dinf_up",
                                           .init = du_init,
                                           .release = tr_graph_release_user,
                                           .state = TR_STATE_PER_CELL(9),
                                           .msg_bytes = sizeof(du_msg),
                                           .state_bytes = sizeof(du_state),
                                           .check_tile = du_check_tile};

const tr_graph_program tr_program_dinf_up = {
    .name = "dinf_up",
    .cell_type = GDT_Float32,
    .params_size = sizeof(tr_dinf_up_params),
    .bodies = {&body_dinf_up},
};
