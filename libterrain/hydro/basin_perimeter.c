/*
 * basin_perimeter.c - watershed labels in two visits of each tile: the body
 * "d8_basins_perimeter" of the "d8_basins" program, its twin, which the planner
 * takes instead of the per-cell body when that one's state (a direction byte
 * and a label per cell) does not fit --mem.
 *
 * A cell takes the label of the cell it drains into (basin_program.c). Inside a
 * tile, a cell's label is therefore either decided inside the tile (its path
 * meets a seed, or ends: off the grid, in NoData, in a pit) or it is the label of
 * the halo cell where its path leaves the tile, through one perimeter cell q, its
 * exit. PEval reads the directions, spreads the labels decided inside the tile
 * (as "d8_basins" does) and, for every perimeter cell still without one, finds
 * its exit (walking down, each cell once); it keeps only, per perimeter cell,
 * its label or nothing, its direction, whether a halo cell drains into it, and
 * for each exit the perimeter cells that wait on it. IncEval: a halo cell's label
 * arrives; each perimeter cell draining into it is an exit, and it and the cells
 * waiting on it take the label; those a halo cell drains into are emitted. No
 * cell of the tile is read. Assemble reads the directions again and spreads the
 * labels from the seeds, the path ends and the labelled exits.
 *
 * Labels are whole numbers set once, so the output is the same bytes as
 * "d8_basins"'s for any --mem, tiling, schedule, thread or rank count, and the
 * same cell is named when directions form a cycle (test_flow_engine). Each
 * tile's direction window is read twice whatever the number of rounds; the state
 * between rounds (or spilled) is about D8_BASIN_PERIM_STATE bytes per perimeter
 * cell instead of 5 bytes per cell.
 */
#include <stdlib.h>
#include <string.h>

#include "d8_window.h"
#include "flow.h"

#define UNKNOWN INT32_MIN
#define NOLABEL ((int32_t)TR_LABEL_NODATA)
#define INFLOW 0x10 /* pdir: a halo cell drains into this perimeter cell */
/* bytes per unit of 2 x (rows + cols) + 4 (graph_plan.c): a perimeter cell's label,
 * direction byte and two words of the waiting lists */
#define D8_BASIN_PERIM_STATE 16
/* bytes per cell of a round's padded window besides its input window:
 * directions, labels, the queue, the exits and the walk (PEval) or the output tile
 * (Assemble) */
#define D8_BASIN_PERIM_ROUND 28

typedef struct {
  tr_graph_env *env;
  tr_basin_params prm;
  tr_d8_lut lut;
} bctx;

/* A fragment's summary, one registered block: nper, then lab[nper] (int32),
 * start[nper + 1] (the perimeter cells waiting on exit k are
 * wait[start[k] .. start[k + 1])), wait[start[nper]], pdir[nper] (the
 * direction + 2, | INFLOW). */
typedef struct {
  unsigned char *blob;
} bstate;

typedef struct {
  int64_t nper;
  int32_t *lab;
  uint32_t *start, *wait;
  uint8_t *pdir;
} bview;

static bview view_of(unsigned char *b) {
  bview v;
  memcpy(&v.nper, b, sizeof v.nper);
  v.lab = (int32_t *)(b + sizeof(int64_t));
  v.start = (uint32_t *)(v.lab + v.nper);
  v.wait = v.start + v.nper + 1;
  v.pdir = (uint8_t *)(v.wait + v.start[v.nper]);
  return v;
}

/* A round's arrays over the padded window (n cells). */
typedef struct {
  int64_t n;
  int8_t *dir;
  int32_t *lab;
  int64_t *q;
} tile_labels;

static void labels_free(tile_labels *t) {
  free(t->dir);
  free(t->lab);
  free(t->q);
  memset(t, 0, sizeof *t);
}

/* Decodes fragment f's directions and spreads upstream, inside the tile, the
 * labels decided there (seeds, path ends) and, with v (Assemble), those of the
 * labelled exits. 0, or -1 when out of memory or after tr_graph_fail. */
static int label_tile(bctx *x, const tr_aap_frag *f, const tr_d8_win *g, const bview *v, tile_labels *t) {
  memset(t, 0, sizeof *t);
  const int64_t n = g->pw * (g->h + 2);
  t->n = n;
  t->dir = malloc((size_t)n);
  t->lab = malloc((size_t)n * sizeof *t->lab);
  t->q = malloc((size_t)(g->h * g->w) * sizeof *t->q);
  float *z = t->dir && t->lab && t->q ? tr_graph_window(x->env, f) : NULL;
  if (!z) {
    labels_free(t);
    return -1;
  }
  const int bad = tr_d8_decode(x->env, f, g, &x->lut, x->prm.encoding, x->prm.src, z, t->dir);
  tr_graph_window_done(x->env, f, z);
  if (bad) {
    labels_free(t);
    return -1;
  }
  for (int64_t i = 0; i < n; i++) t->lab[i] = UNKNOWN;
  int64_t nq = 0;
  for (int64_t r = 1; r <= g->h; r++)
    for (int64_t c = 1; c <= g->w; c++) {
      const int64_t i = r * g->pw + c;
      if (t->dir[i] == TR_D8_NODATA) continue;
      int32_t lab = tr_basin_seed_label(&x->prm, tr_d8_cell(g, x->env->cols, i));
      if (lab == UNKNOWN && (t->dir[i] == TR_D8_NONE || t->dir[i + g->off[t->dir[i]]] == TR_D8_NODATA)) lab = NOLABEL;
      if (lab == UNKNOWN && v && (r == 1 || r == g->h || c == 1 || c == g->w)) lab = v->lab[tr_d8_per_of(g, i)];
      if (lab == UNKNOWN) continue;
      t->lab[i] = lab;
      t->q[nq++] = i;
    }
  while (nq > 0) {
    const int64_t i = t->q[--nq];
    for (int k = 0; k < 8; k++) {
      const int64_t nb = i + g->off[k];
      if (t->dir[nb] == (k + 4) % 8 && t->lab[nb] == UNKNOWN && tr_d8_in_tile(g, nb)) {
        t->lab[nb] = t->lab[i];
        t->q[nq++] = nb;
      }
    }
  }
  return 0;
}

/* Labels exit q with lab and every perimeter cell waiting on it; emits those a
 * halo cell drains into. */
static int resolve(bctx *x, const tr_d8_win *g, bview *v, uint32_t q, int32_t lab, tr_aap_round *rd) {
  int64_t work = 0;
  for (uint32_t w = v->start[q]; w < v->start[q + 1]; w++) {
    const uint32_t p = v->wait[w];
    if (v->lab[p] != UNKNOWN) continue;
    v->lab[p] = lab;
    work++;
    if ((v->pdir[p] & INFLOW) && tr_aap_emit(rd, tr_d8_cell(g, x->env->cols, tr_d8_per_cell(g, p)), &lab)) return -1;
  }
  tr_aap_add_work(rd, work);
  return 0;
}

static void bp_destroy(void *user, void *state) {
  (void)user;
  bstate *s = state;
  if (!s) return;
  free(s->blob);
  free(s);
}

static int bp_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  bctx *x = user;
  const tr_d8_win g = tr_d8_win_of(f);
  tile_labels t;
  if (label_tile(x, f, &g, NULL, &t)) return -1;
  const int64_t nper = tr_d8_ring_size(g.h, g.w);
  bstate *s = calloc(1, sizeof *s);
  *state = s;
  /* each perimeter cell's exit, walking down through cells not yet walked (ex:
   * -2 not walked, -3 on the current walk, -1 none: a cycle) */
  int32_t *ex = s ? malloc((size_t)t.n * sizeof *ex) : NULL;
  int64_t *path = ex ? malloc((size_t)(g.h * g.w) * sizeof *path) : NULL;
  uint32_t *exit = path ? malloc((size_t)nper * sizeof *exit) : NULL;
  int rc = exit ? 0 : -1;
  int64_t nwait = 0;
  for (int64_t i = 0; !rc && i < t.n; i++) ex[i] = -2;
  for (int64_t k = 0; !rc && k < nper; k++) {
    const int64_t i0 = tr_d8_per_cell(&g, k);
    exit[k] = UINT32_MAX;
    if (t.dir[i0] == TR_D8_NODATA || t.lab[i0] != UNKNOWN) continue;
    int64_t np = 0, i = i0;
    int32_t res;
    for (;;) {
      if (ex[i] != -2) {
        res = ex[i] == -3 ? -1 : ex[i];
        break;
      }
      ex[i] = -3;
      path[np++] = i;
      const int64_t d = i + g.off[t.dir[i]]; /* unlabelled: a direction towards a valid cell */
      if (!tr_d8_in_tile(&g, d)) {
        res = (int32_t)tr_d8_per_of(&g, i);
        break;
      }
      i = d;
    }
    for (int64_t m = 0; m < np; m++) ex[path[m]] = res;
    if (res >= 0) exit[k] = (uint32_t)res, nwait++;
  }
  const size_t bytes =
      sizeof(int64_t) + (size_t)nper * sizeof(int32_t) + (size_t)(nper + 1 + nwait) * sizeof(uint32_t) + (size_t)nper;
  if (!rc) {
    s->blob = calloc(1, bytes);
    rc = !s->blob || tr_graph_keep(x->env, f, &s->blob, bytes, NULL) ? -1 : 0;
  }
  if (!rc) {
    memcpy(s->blob, &nper, sizeof nper);
    bview v;
    v.nper = nper;
    v.lab = (int32_t *)(s->blob + sizeof(int64_t));
    v.start = (uint32_t *)(v.lab + nper);
    for (int64_t k = 0; k < nper; k++)
      if (exit[k] != UINT32_MAX) v.start[exit[k] + 1]++;
    for (int64_t k = 0; k < nper; k++) v.start[k + 1] += v.start[k];
    v = view_of(s->blob);
    uint32_t *fill = malloc((size_t)(nper + 1) * sizeof *fill);
    if (!fill) rc = -1;
    for (int64_t k = 0; !rc && k <= nper; k++) fill[k] = v.start[k];
    for (int64_t k = 0; !rc && k < nper; k++) {
      const int64_t i = tr_d8_per_cell(&g, k);
      v.lab[k] = t.lab[i];
      v.pdir[k] = (uint8_t)(t.dir[i] + 2);
      for (int d = 0; d < 8; d++) {
        const int64_t nb = i + g.off[d];
        if (t.dir[nb] == (d + 4) % 8 && !tr_d8_in_tile(&g, nb)) v.pdir[k] |= INFLOW;
      }
      if (exit[k] != UINT32_MAX) v.wait[fill[exit[k]]++] = (uint32_t)k;
    }
    free(fill);
    /* the labels decided inside the tile, to the neighbours draining into them */
    for (int64_t k = 0; !rc && k < nper; k++)
      if (v.lab[k] != UNKNOWN && (v.pdir[k] & INFLOW) &&
          tr_aap_emit(rd, tr_d8_cell(&g, x->env->cols, tr_d8_per_cell(&g, k)), &v.lab[k]))
        rc = -1;
  }
  tr_aap_add_work(rd, g.h * g.w);
  free(ex);
  free(path);
  free(exit);
  labels_free(&t);
  return rc;
}

static int bp_inceval(void *user, const tr_aap_frag *f, void *state, int64_t n, const int64_t *cells,
                      const void *values, tr_aap_round *rd) {
  bctx *x = user;
  bstate *s = state;
  const tr_d8_win g = tr_d8_win_of(f);
  bview v = view_of(s->blob);
  int rc = 0;
  for (int64_t m = 0; m < n && !rc; m++) {
    int32_t lab;
    memcpy(&lab, (const unsigned char *)values + (size_t)m * sizeof lab, sizeof lab);
    const int64_t h = tr_d8_index(&g, x->env->cols, cells[m]);
    /* the perimeter cells draining into halo cell h are exits */
    for (int k = 0; k < 8 && !rc; k++) {
      const int64_t nb = h + g.off[k];
      if (!tr_d8_in_tile(&g, nb)) continue;
      const int64_t p = tr_d8_per_of(&g, nb);
      if (p >= 0 && (v.pdir[p] & 0x0f) - 2 == (k + 4) % 8 && v.lab[p] == UNKNOWN)
        rc = resolve(x, &g, &v, (uint32_t)p, lab, rd);
    }
  }
  return rc;
}

static int bp_assemble(void *user, const tr_aap_frag *f, void *state) {
  bctx *x = user;
  bstate *s = state;
  if (!s || !s->blob) return -1;
  const tr_d8_win g = tr_d8_win_of(f);
  const bview v = view_of(s->blob);
  tile_labels t;
  if (label_tile(x, f, &g, &v, &t)) return -1;
  double *tile = malloc((size_t)(g.h * g.w) * sizeof *tile);
  int rc = tile ? 0 : -1;
  for (int64_t r = 0; r < g.h && !rc; r++)
    for (int64_t c = 0; c < g.w; c++) {
      const int64_t i = (r + 1) * g.pw + c + 1;
      if (t.dir[i] != TR_D8_NODATA && t.lab[i] == UNKNOWN) {
        rc = tr_d8_fail_no_outlet(x->env, f, &g, x->prm.src, i);
        break;
      }
      tile[r * g.w + c] = t.dir[i] == TR_D8_NODATA ? TR_LABEL_NODATA : (double)t.lab[i];
    }
  if (!rc) rc = x->env->put(x->env, f, tile);
  free(tile);
  labels_free(&t);
  return rc;
}

static int bp_init(tr_aap_program *p, tr_graph_env *env, const void *params) {
  bctx *x = calloc(1, sizeof *x);
  if (!x) return -1;
  x->env = env;
  memcpy(&x->prm, params, sizeof x->prm);
  tr_d8_lut_init(&x->lut, x->prm.encoding);
  memset(p, 0, sizeof *p);
  p->value_size = sizeof(int32_t);
  p->user = x;
  p->peval = bp_peval;
  p->inceval = bp_inceval;
  p->assemble = bp_assemble;
  p->destroy = bp_destroy;
  p->aggr = tr_basin_label_max;
  p->assemble_parallel = 1; /* Assemble labels its tile again: on every thread */
  return 0;
}

/* --ft replay's invariant of Assemble's tile (flow_check.c) */
static int64_t basin_check_tile(void *user, const tr_aap_frag *f, const void *state, const void *cells) {
  (void)user, (void)state;
  return tr_basin_check_tile(f->rows * f->cols, cells);
}

const tr_graph_body tr_body_d8_basins_perimeter = {
    .name = "d8_basins_perimeter",
    .role = TR_BODY_TWIN,
    .init = bp_init,
    .release = tr_graph_release_user,
    .state = TR_STATE_PERIMETER(D8_BASIN_PERIM_STATE, 0, D8_BASIN_PERIM_ROUND),
    .msg_bytes = sizeof(int32_t),
    .state_bytes = sizeof(bstate),
    .check_tile = basin_check_tile};
