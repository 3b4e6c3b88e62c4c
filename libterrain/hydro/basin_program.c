/*
 * basin_program.c - watershed labels over D8 directions as a graph program:
 * the row "d8_basins" of the program table (see flow.h).
 *
 * label(c) = the seed's label when c is a seed (a stream cell: its link
 * number, TauDEM streamnet -w), else the label of the cell c drains into;
 * a cell that drains off the grid, into NoData or into a pit without meeting
 * a seed has none (nodata). Labels go from unknown to known and a known label
 * never changes: the monotone condition, so every schedule agrees.
 *
 * State of a fragment over its padded window: decoded directions and labels
 * (INT32_MIN while unknown). PEval knows the seeds and the cells that end
 * without one, then spreads labels upstream (a cell takes its downstream
 * cell's label) with a queue; IncEval does the same from halo cells whose
 * label arrived. A newly labelled perimeter cell that a halo cell drains
 * into is emitted. f_aggr = max on copies of one final label.
 */
#include <stdlib.h>
#include <string.h>

#include "d8_window.h"
#include "flow.h"

#define UNKNOWN INT32_MIN
#define NOLABEL ((int32_t)TR_LABEL_NODATA)

typedef struct {
  tr_graph_env *env;
  tr_basin_params prm;
  tr_d8_lut lut;
} basin_ctx;

typedef struct {
  int8_t *dir;
  int32_t *lab;
} basin_state;

typedef tr_d8_win bwin;

static int64_t b_cell(const basin_ctx *x, const bwin *g, int64_t i) { return tr_d8_cell(g, x->env->cols, i); }

int32_t tr_basin_seed_label(const tr_basin_params *p, int64_t cell) {
  int64_t lo = 0, hi = p->nseeds - 1;
  while (lo <= hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (p->seeds[mid].cell == cell) return p->seeds[mid].label;
    if (p->seeds[mid].cell < cell) lo = mid + 1;
    else hi = mid - 1;
  }
  return UNKNOWN;
}

static void basin_destroy(void *user, void *state) {
  (void)user;
  basin_state *s = state;
  if (!s) return;
  free(s->dir);
  free(s->lab);
  free(s);
}

/* Spreads labels upstream from the queued cells; emits perimeter cells a
 * halo cell drains into. */
static int spread(const basin_ctx *x, basin_state *s, const bwin *g, int64_t *q, int64_t nq, tr_aap_round *rd) {
  int64_t work = 0;
  while (nq > 0) {
    const int64_t i = q[--nq];
    int emit = 0;
    work++;
    for (int k = 0; k < 8; k++) {
      const int64_t n = i + g->off[k];
      if (s->dir[n] != (k + 4) % 8) continue;
      if (!tr_d8_in_tile(g, n)) emit = tr_d8_in_tile(g, i);
      else if (s->lab[n] == UNKNOWN) {
        s->lab[n] = s->lab[i];
        q[nq++] = n;
      }
    }
    if (emit && tr_aap_emit(rd, b_cell(x, g, i), &s->lab[i])) return -1;
  }
  tr_aap_add_work(rd, work);
  return 0;
}

static int basin_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  basin_ctx *x = user;
  const bwin g = tr_d8_win_of(f);
  const int64_t n = g.pw * (g.h + 2);
  basin_state *s = calloc(1, sizeof *s);
  if (!s) return -1;
  *state = s;
  s->dir = malloc((size_t)n);
  s->lab = malloc((size_t)n * sizeof *s->lab);
  int64_t *q = malloc((size_t)(g.h * g.w) * sizeof *q);
  float *z = tr_graph_window(x->env, f);
  /* the per-cell arrays, so an out-of-core run may spill them between rounds (graph.h) */
  int rc = !s->dir || !s->lab || !q || !z || tr_graph_keep(x->env, f, &s->dir, (size_t)n, NULL) ||
                   tr_graph_keep(x->env, f, &s->lab, (size_t)n * sizeof *s->lab, NULL)
               ? -1
               : 0;
  if (!rc) rc = tr_d8_decode(x->env, f, &g, &x->lut, x->prm.encoding, x->prm.src, z, s->dir);
  for (int64_t i = 0; !rc && i < n; i++) s->lab[i] = UNKNOWN;
  int64_t nq = 0;
  for (int64_t r = 1; !rc && r <= g.h; r++)
    for (int64_t c = 1; c <= g.w; c++) {
      const int64_t i = r * g.pw + c;
      if (s->dir[i] == TR_D8_NODATA) continue;
      int32_t lab = tr_basin_seed_label(&x->prm, b_cell(x, &g, i));
      if (lab == UNKNOWN && (s->dir[i] == TR_D8_NONE || s->dir[i + g.off[s->dir[i]]] == TR_D8_NODATA))
        lab = NOLABEL;
      if (lab == UNKNOWN) continue;
      s->lab[i] = lab;
      q[nq++] = i;
    }
  if (!rc) rc = spread(x, s, &g, q, nq, rd);
  if (z) tr_graph_window_done(x->env, f, z);
  free(q);
  return rc;
}

static int basin_inceval(void *user, const tr_aap_frag *f, void *state, int64_t n, const int64_t *cells,
                         const void *values, tr_aap_round *rd) {
  basin_ctx *x = user;
  basin_state *s = state;
  const bwin g = tr_d8_win_of(f);
  int64_t *q = malloc((size_t)(g.h * g.w) * sizeof *q);
  if (!q) return -1;
  int64_t nq = 0;
  for (int64_t m = 0; m < n; m++) {
    int32_t v;
    memcpy(&v, (const unsigned char *)values + (size_t)m * sizeof v, sizeof v);
    const int64_t i = tr_d8_index(&g, x->env->cols, cells[m]);
    if (s->lab[i] != UNKNOWN) continue;
    s->lab[i] = v;
    for (int k = 0; k < 8; k++) {
      const int64_t nb = i + g.off[k];
      /* i is a halo cell: its neighbour may lie outside the window */
      if (tr_d8_in_tile(&g, nb) && s->dir[nb] == (k + 4) % 8 && s->lab[nb] == UNKNOWN) {
        s->lab[nb] = v;
        q[nq++] = nb;
      }
    }
  }
  const int rc = spread(x, s, &g, q, nq, rd);
  free(q);
  return rc;
}

static int basin_assemble(void *user, const tr_aap_frag *f, void *state) {
  basin_ctx *x = user;
  basin_state *s = state;
  if (!s) return -1;
  const bwin g = tr_d8_win_of(f);
  double *tile = malloc((size_t)(g.h * g.w) * sizeof *tile);
  if (!tile) return -1;
  for (int64_t r = 0; r < g.h; r++)
    for (int64_t c = 0; c < g.w; c++) {
      const int64_t i = (r + 1) * g.pw + c + 1;
      if (s->dir[i] != TR_D8_NODATA && s->lab[i] == UNKNOWN) {
        free(tile);
        return tr_d8_fail_no_outlet(x->env, f, &g, x->prm.src, i);
      }
      tile[r * g.w + c] = s->dir[i] == TR_D8_NODATA ? TR_LABEL_NODATA : (double)s->lab[i];
    }
  const int rc = x->env->put(x->env, f, tile);
  free(tile);
  return rc;
}

int tr_basin_label_max(void *user, void *acc, const void *value) {
  (void)user;
  int32_t a, v;
  memcpy(&a, acc, sizeof a);
  memcpy(&v, value, sizeof v);
  if (v <= a) return 0;
  memcpy(acc, &v, sizeof v);
  return 1;
}

static int basin_init(tr_aap_program *p, tr_graph_env *env, const void *params) {
  basin_ctx *x = calloc(1, sizeof *x);
  if (!x) return -1;
  x->env = env;
  memcpy(&x->prm, params, sizeof x->prm);
  tr_d8_lut_init(&x->lut, x->prm.encoding);
  memset(p, 0, sizeof *p);
  p->value_size = sizeof(int32_t);
  p->user = x;
  p->peval = basin_peval;
  p->inceval = basin_inceval;
  p->assemble = basin_assemble;
  p->destroy = basin_destroy;
  p->aggr = tr_basin_label_max;
  return 0;
}

/* --ft replay's invariant of Assemble's tile (flow_check.c) */
static int64_t basin_check_tile(void *user, const tr_aap_frag *f, const void *state, const void *cells) {
  (void)user, (void)state;
  return tr_basin_check_tile(f->rows * f->cols, cells);
}

static const tr_graph_body body_basins = {.name = "d8_basins",
                                          .init = basin_init,
                                          .release = tr_graph_release_user,
                                          .state = TR_STATE_PER_CELL(9), /* a direction byte and a label */
                                          .msg_bytes = sizeof(int32_t),
    .state_bytes = sizeof(basin_state),
    .check_tile = basin_check_tile};

/* out of core: the twin keeping each tile's perimeter (basin_perimeter.c) */
const tr_graph_program tr_program_d8_basins = {
    .name = "d8_basins",
    .cell_type = GDT_Float64,
    .params_size = sizeof(tr_basin_params),
    .bodies = {&body_basins, &tr_body_d8_basins_perimeter},
};
