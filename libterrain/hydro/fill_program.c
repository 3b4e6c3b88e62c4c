/*
 * fill_program.c - depression filling as a graph program (PEval, IncEval, Assemble, min):
 * the row "fill" of the program table.
 *
 * State of a fragment: W over its padded window ((rows+2) x (cols+2)); the halo part holds
 * -inf (never updated: halo values arrive as messages and are applied at once), NoData
 * cells hold NaN. Elevations are not kept (memory model in fill.h): each round borrows
 * the padded Z window from the graph runner's tile store (io/tile_store.h) and gives it
 * back when the round ends.
 *
 * PEval: W = +inf on the tile, W = Z on its true outlets (cells with a NoData or
 * outside-the-grid neighbour), then priority-flood (fill_flood.c). Cells that cannot reach
 * a true outlet inside the tile keep +inf: an upper bound, as the monotone condition wants.
 * IncEval: for each (halo cell h, value v) of the snapshot, lower each tile neighbour b of
 * h to max(Z(b), v) (max(Z(b), up(v)) in the epsilon variant) when that is lower, seed the
 * flood with it, and flood. Both emit the perimeter cells whose W fell (finite values).
 * f_aggr = min. Assemble puts the tile (graph.h) with NaN turned into NoData.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fill.h"
#include "fill_flood.h"
#include "pool.h"

/* A run's context: what the program callbacks share. */
typedef struct fill_ctx {
  tr_graph_env *env;
  tr_fill_params prm;
  tr_pool pool; /* of fill_queues */
} fill_ctx;

typedef struct fill_state {
  float *W;
} fill_state;

/* ---- flood queues, pooled so rounds do not allocate ---------------------------------- */

static void q_destroy(void *obj) {
  fill_queues_free(obj);
  free(obj);
}

static fill_queues *q_get(fill_ctx *x) { return tr_pool_get(&x->pool); }

static void q_put(fill_ctx *x, fill_queues *q) {
  if (!q) return;
  q->hn = q->fh = q->ft = 0;
  tr_radix_reset(&q->rq);
  q->oom = 0;
  tr_pool_put(&x->pool, q);
}

static void fill_release(tr_aap_program *p) {
  fill_ctx *x = p->user;
  if (!x) return;
  tr_pool_free(&x->pool);
  free(x);
  p->user = NULL;
}

/* ---- the program --------------------------------------------------------------------- */

/* Calls fn on each perimeter cell of the tile once (padded index). */
#define FOR_PERIMETER(h, w, pw, idx, body)                                              \
  for (int64_t r_ = 1; r_ <= (h); r_++) {                                               \
    int64_t step_ = (r_ == 1 || r_ == (h)) ? 1 : ((w) > 1 ? (w) - 1 : 1);               \
    for (int64_t c_ = 1; c_ <= (w); c_ += step_) {                                      \
      int64_t idx = r_ * (pw) + c_;                                                     \
      body                                                                              \
    }                                                                                   \
  }

static int emit_cell(tr_aap_round *rd, const tr_aap_frag *f, int64_t cols, int64_t pw,
                     int64_t idx, float v) {
  int64_t r = idx / pw - 1 + f->row0, c = idx % pw - 1 + f->col0;
  return tr_aap_emit(rd, r * cols + c, &v);
}

static int fill_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  fill_ctx *x = user;
  int64_t h = f->rows, w = f->cols, pw = w + 2, ph = h + 2;
  fill_state *st = calloc(1, sizeof *st);
  if (!st) return -1;
  st->W = malloc((size_t)(pw * ph) * sizeof(float));
  float *Z = st->W && !tr_graph_keep(x->env, f, &st->W, (size_t)(pw * ph) * sizeof(float), NULL)
                 ? tr_graph_window(x->env, f)
                 : NULL;
  fill_queues *q = Z ? q_get(x) : NULL;
  if (!q) {
    if (Z) tr_graph_window_done(x->env, f, Z);
    free(st->W);
    free(st);
    return -1;
  }
  float *W = st->W;
  for (int64_t i = 0; i < pw * ph; i++) W[i] = -INFINITY;
  for (int64_t r = 1; r <= h; r++)
    for (int64_t c = 1; c <= w; c++) {
      int64_t i = r * pw + c;
      W[i] = isnan(Z[i]) ? NAN : INFINITY;
    }
  for (int64_t r = 1; r <= h; r++)
    for (int64_t c = 1; c <= w; c++) {
      int64_t i = r * pw + c;
      if (isnan(Z[i])) continue;
      int outlet = isnan(Z[i - pw - 1]) || isnan(Z[i - pw]) || isnan(Z[i - pw + 1]) ||
                   isnan(Z[i - 1]) || isnan(Z[i + 1]) || isnan(Z[i + pw - 1]) ||
                   isnan(Z[i + pw]) || isnan(Z[i + pw + 1]);
      if (outlet) {
        W[i] = Z[i];
        tr_radix_push(&q->rq, Z[i], (uint32_t)i);
      }
    }
  int64_t work = q->oom || q->rq.oom ? -1 : fill_flood(W, Z, pw, q, x->prm.epsilon, x->prm.eps);
  q_put(x, q);
  tr_graph_window_done(x->env, f, Z);
  *state = st;
  if (work < 0) return -1;
  tr_aap_add_work(rd, work);
  int rc = 0;
  FOR_PERIMETER(h, w, pw, i, {
    if (rc == 0 && W[i] < INFINITY) rc = emit_cell(rd, f, x->env->cols, pw, i, W[i]);
  })
  return rc;
}

static int fill_inceval(void *user, const tr_aap_frag *f, void *state, int64_t n,
                        const int64_t *cells, const void *values, tr_aap_round *rd) {
  fill_ctx *x = user;
  fill_state *st = state;
  int64_t h = f->rows, w = f->cols, pw = w + 2;
  const float *vals = values;
  float *W = st->W;
  int eps_mode = x->prm.epsilon;
  /* The messages' tile neighbours above their values, in message order: the
   * only cells a round can lower (W only falls), found without the
   * elevations. A round with none leaves W as it is and emits nothing, and
   * does not borrow the Z window (a read of the input when the tile store
   * no longer holds it). */
  typedef struct {
    uint32_t i;
    float lv;
  } seed;
  seed *sd = malloc((size_t)(9 * n + 1) * sizeof *sd);
  if (!sd) return -1;
  int64_t ns = 0;
  for (int64_t m = 0; m < n; m++) {
    int64_t pr = cells[m] / x->env->cols - f->row0 + 1, pc = cells[m] % x->env->cols - f->col0 + 1;
    float v = vals[m], lv = eps_mode ? fill_up(v, x->prm.eps) : v;
    for (int64_t dr = -1; dr <= 1; dr++)
      for (int64_t dc = -1; dc <= 1; dc++) {
        int64_t r = pr + dr, c = pc + dc;
        if (r < 1 || r > h || c < 1 || c > w) continue;
        int64_t i = r * pw + c;
        if (W[i] > lv) sd[ns++] = (seed){(uint32_t)i, lv};
      }
  }
  if (!ns) {
    free(sd);
    return 0;
  }
  int64_t nper = (h > 1 && w > 1) ? 2 * (h + w) - 4 : h * w;
  float *old = malloc((size_t)nper * sizeof(float));
  float *Z = old ? tr_graph_window(x->env, f) : NULL;
  fill_queues *q = Z ? q_get(x) : NULL;
  if (!q) {
    if (Z) tr_graph_window_done(x->env, f, Z);
    free(old);
    free(sd);
    return -1;
  }
  int64_t k = 0;
  FOR_PERIMETER(h, w, pw, i, { old[k++] = W[i]; })
  /* lowered one after the other, as the messages come: a seed an earlier one
   * already brought to or below its value is no candidate any more */
  for (int64_t j = 0; j < ns; j++) {
    const uint32_t i = sd[j].i;
    const float lv = sd[j].lv, cand = Z[i] > lv ? Z[i] : lv;
    if (cand < W[i]) {
      W[i] = cand;
      tr_radix_push(&q->rq, cand, i);
    }
  }
  free(sd);
  int64_t work = q->oom || q->rq.oom ? -1 : fill_flood(W, Z, pw, q, eps_mode, x->prm.eps);
  q_put(x, q);
  tr_graph_window_done(x->env, f, Z);
  if (work < 0) {
    free(old);
    return -1;
  }
  tr_aap_add_work(rd, work);
  int rc = 0;
  k = 0;
  FOR_PERIMETER(h, w, pw, i, {
    if (rc == 0 && W[i] < old[k]) rc = emit_cell(rd, f, x->env->cols, pw, i, W[i]);
    k++;
  })
  free(old);
  return rc;
}

static int fill_assemble(void *user, const tr_aap_frag *f, void *state) {
  fill_ctx *x = user;
  fill_state *st = state;
  if (!st) return -1;
  int64_t h = f->rows, w = f->cols, pw = w + 2;
  float *tile = malloc((size_t)(h * w) * sizeof(float));
  if (!tile) return -1;
  float nd = x->env->has_nodata ? (float)x->env->nodata : NAN;
  for (int64_t r = 0; r < h; r++)
    for (int64_t c = 0; c < w; c++) {
      float v = st->W[(r + 1) * pw + c + 1];
      tile[r * w + c] = isnan(v) ? nd : v;
    }
  int rc = x->env->put(x->env, f, tile);
  free(tile);
  return rc;
}

static void fill_destroy(void *user, void *state) {
  (void)user;
  fill_state *st = state;
  if (!st) return;
  free(st->W);
  free(st);
}

/* --ft replay's invariant of a round (graph.h): the tile's W is NaN exactly
 * where Z is, and at or above Z elsewhere; the halo stays -inf; each value
 * the round emitted is its cell's W. */
static int64_t fill_check(void *user, const tr_aap_frag *f, const void *state, int64_t n, const int64_t *cells,
                          const void *values) {
  fill_ctx *x = user;
  const fill_state *st = state;
  const int64_t h = f->rows, w = f->cols, pw = w + 2, ph = h + 2;
  if (!st->W) return 1;
  int64_t bad = 0;
  for (int64_t m = 0; m < n; m++) {
    const int64_t r = cells[m] / x->env->cols - f->row0 + 1, c = cells[m] % x->env->cols - f->col0 + 1;
    float v;
    memcpy(&v, (const char *)values + m * (int64_t)sizeof v, sizeof v);
    bad += r < 1 || r > h || c < 1 || c > w || memcmp(&v, &st->W[r * pw + c], sizeof v) != 0;
  }
  float *Z = tr_graph_window(x->env, f);
  if (!Z) return 0; /* no window, no verdict: the round itself would have failed */
  const float *W = st->W;
  for (int64_t c = 0; c < pw; c++) bad += !(W[c] == -INFINITY) + !(W[(ph - 1) * pw + c] == -INFINITY);
  for (int64_t r = 1; r < ph - 1; r++) {
    const float *wr = W + r * pw, *zr = Z + r * pw;
    bad += !(wr[0] == -INFINITY) + !(wr[pw - 1] == -INFINITY);
    /* branch-free, so the compiler vectorises it: NaN W exactly where Z is
     * NaN, W >= Z elsewhere */
    int64_t row = 0;
    for (int64_t c = 1; c < pw - 1; c++) {
      const int zn = zr[c] != zr[c], wn = wr[c] != wr[c];
      row += (zn != wn) | (!zn & !(wr[c] >= zr[c]));
    }
    bad += row;
  }
  tr_graph_window_done(x->env, f, Z);
  return bad;
}

/* The same for Assemble: the tile is the state's W, NaN as nodata. */
static int64_t fill_check_tile(void *user, const tr_aap_frag *f, const void *state, const void *cells) {
  fill_ctx *x = user;
  const fill_state *st = state;
  const int64_t h = f->rows, w = f->cols, pw = w + 2;
  const float nd = x->env->has_nodata ? (float)x->env->nodata : NAN;
  int64_t bad = 0;
  for (int64_t r = 0; r < h; r++)
    for (int64_t c = 0; c < w; c++) {
      const float v = st->W[(r + 1) * pw + c + 1], want = isnan(v) ? nd : v;
      float got;
      memcpy(&got, (const char *)cells + (r * w + c) * (int64_t)sizeof got, sizeof got);
      bad += memcmp(&got, &want, sizeof got) != 0;
    }
  return bad;
}

static int fill_init(tr_aap_program *p, tr_graph_env *env, const void *params) {
  fill_ctx *x = calloc(1, sizeof *x);
  if (!x) return -1;
  x->env = env;
  memcpy(&x->prm, params, sizeof x->prm);
  tr_pool_init(&x->pool, sizeof(fill_queues), q_destroy);
  memset(p, 0, sizeof *p);
  p->value_size = sizeof(float);
  p->user = x;
  p->peval = fill_peval;
  p->inceval = fill_inceval;
  p->assemble = fill_assemble;
  p->destroy = fill_destroy;
  p->aggr = fill_aggr_min;
  return 0;
}

static int flat_fill(const void *params) { return !((const tr_fill_params *)params)->epsilon; }
static int eps_fill(const void *params) { return ((const tr_fill_params *)params)->epsilon; }

/* Flat fill: W per cell. Out of core, fill_perimeter instead (its state is
 * the tiles' perimeters, and it reads each tile twice whatever the rounds). */
const tr_graph_body tr_body_fill = {.name = "fill",
                                    .init = fill_init,
                                    .release = fill_release,
                                    .state = TR_STATE_PER_CELL(sizeof(float)),
                                    .msg_bytes = sizeof(float),
                                    .applies = flat_fill,
    .state_bytes = sizeof(fill_state),
    .check = fill_check,
    .check_tile = fill_check_tile};
/* --epsilon: the same body, which spills out of core (up() adds along a
 * path, which fill_perimeter's graph of labels cannot carry). */
const tr_graph_body tr_body_fill_eps = {.name = "fill_eps",
                                        .init = fill_init,
                                        .release = fill_release,
                                        .state = TR_STATE_PER_CELL(sizeof(float)),
                                        .msg_bytes = sizeof(float),
                                        .applies = eps_fill,
    .state_bytes = sizeof(fill_state),
    .check = fill_check,
    .check_tile = fill_check_tile};

const tr_graph_program tr_program_fill = {
    .name = "fill",
    .cell_type = GDT_Float32,
    .params_size = sizeof(tr_fill_params),
    .bodies = {&tr_body_fill, &tr_body_fill_eps, &tr_body_fill_perimeter},
};
