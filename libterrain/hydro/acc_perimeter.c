/*
 * acc_perimeter.c - accumulation and stream cells in two visits of each tile: the
 * row "d8_up_perimeter" of the program table, which the runner runs instead of
 * "d8_up" when that one's state does not fit --mem (its when_out_of_core).
 *
 * "d8_up" (acc_program.c) keeps about 2 bytes per cell and continues its tile's
 * dataflow in every round; out of core that state is spilled and read back once
 * per round, and the number of rounds is the engine's. This program keeps, between
 * rounds, only a summary of its tile's perimeter (Barnes 2017, "Parallel
 * non-divergent flow accumulation for trillion cell digital elevation models on
 * desktops or clusters"), so rounds after the first never touch the tile's cells:
 *
 * PEval reads the directions and accumulates inside the tile alone (every cell
 * counts itself and its in-tile inflows: Kahn's order), which gives each perimeter
 * cell p its local count L(p), its local contamination, and its link: the first
 * perimeter cell its flow reaches again inside the tile (or "leaves the tile" when
 * it drains into a neighbour, or none). The flow from outside enters a tile only at
 * perimeter cells, so p's final count is L(p) + A(p), where A(p) is what external
 * cells drain into p plus A(q) of every q linked to p (the in-tile paths form a
 * tree: each entry is counted once). A(p) is known once every external inflow of p
 * has arrived and every q linked to p is final: a counter per perimeter cell.
 * A final p that drains into a neighbour is emitted with its final count, as "d8_up"
 * does (the same message, tr_up_msg).
 *
 * IncEval applies a halo cell's first value to the perimeter cell it drains into and
 * finishes what becomes final along the links. No cell of the tile is read.
 *
 * Assemble reads the directions again and accumulates inside the tile with each
 * perimeter cell's external inflows added: the final value of every cell.
 *
 * Only exact sums: counts (accumulation in cells or area, stream cells; TauDEM's
 * edge check) and weights whose every sum a double holds exactly (an integer band
 * of up to 16 bits, tr_up_params.whole_weights; or any band whose values, read,
 * pass exact_weights: multiples of one power of two on a bounded total). Adding
 * them in another order than "d8_up"'s then gives the same bits,
 * and the output is the same bytes for any --mem, tiling, schedule, thread or rank
 * count (test_flow_engine). Other weights (a floating-point sum whose bits depend on
 * its order) and Strahler order (not a sum) stay with "d8_up" (applies()). A cell
 * below a cycle of directions never becomes final here either,
 * and Assemble names the same cell of the cycle as "d8_up".
 *
 * Each tile's direction window is read twice whatever the number of rounds; the
 * state kept between rounds (or spilled) is about D8_PERIM_STATE bytes per
 * perimeter cell instead of 2 to 7 bytes per cell.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "d8_window.h"
#include "flow.h"
#include "raster.h"

#define LINK_NONE UINT32_MAX      /* the flow ends inside the tile (or on NoData) */
#define LINK_OUT (UINT32_MAX - 1) /* the cell drains into a neighbour fragment */
#define NEVER (UINT32_MAX / 2)    /* added to the counter of a cell below an in-tile cycle */
/* bytes per unit of 2 x (rows + cols) + 4 (graph.c): a perimeter cell's 3 doubles, 2
 * words and 2 bytes, and a halo cell's word and byte (about as many of each) */
#define D8_PERIM_STATE 40
/* bytes per cell of a round's padded window besides the input window: directions,
 * values, contamination, counters, the queue, the links (PEval) or the output tile
 * (Assemble) */
#define D8_PERIM_ROUND 28

enum { F_LCON = 1, F_ACON = 2, F_ECON = 4, F_FINAL = 8 };

typedef struct {
  tr_graph_env *env;
  tr_up_params prm;
  tr_dir_lut lut;
} pctx;

/* A fragment's summary: one block, registered with the state store so an
 * out-of-core run may spill it. nper tile perimeter cells (ring order of the
 * tile), nhalo halo cells (ring order of the padded window). */
typedef struct {
  unsigned char *blob;
} pstate;

typedef struct {
  int64_t nper, nhalo;
  double *L;         /* local count (0 below an in-tile cycle) */
  double *A;         /* what arrived: external inflows and linked cells' A */
  double *E;         /* external inflows alone (Assemble adds them) */
  uint32_t *link;    /* perimeter index, LINK_OUT or LINK_NONE */
  uint32_t *pend;    /* inputs still missing (+ NEVER below a cycle) */
  uint32_t *htarget; /* per halo cell: the perimeter cell it drains into, or LINK_NONE */
  uint8_t *flags;    /* F_* */
  uint8_t *epend;    /* external inflows still missing */
  uint8_t *hseen;    /* per halo cell: its value was applied */
} pview;

static size_t blob_bytes(int64_t nper, int64_t nhalo) {
  return 2 * sizeof(int64_t) + (size_t)nper * (3 * sizeof(double) + 2 * sizeof(uint32_t) + 2) +
         (size_t)nhalo * (sizeof(uint32_t) + 1);
}

static pview view_of(unsigned char *b) {
  pview v;
  memcpy(&v.nper, b, sizeof v.nper);
  memcpy(&v.nhalo, b + sizeof(int64_t), sizeof v.nhalo);
  unsigned char *p = b + 2 * sizeof(int64_t);
  v.L = (double *)p, p += (size_t)v.nper * sizeof(double);
  v.A = (double *)p, p += (size_t)v.nper * sizeof(double);
  v.E = (double *)p, p += (size_t)v.nper * sizeof(double);
  v.link = (uint32_t *)p, p += (size_t)v.nper * sizeof(uint32_t);
  v.pend = (uint32_t *)p, p += (size_t)v.nper * sizeof(uint32_t);
  v.htarget = (uint32_t *)p, p += (size_t)v.nhalo * sizeof(uint32_t);
  v.flags = p, p += v.nper;
  v.epend = p, p += v.nper;
  v.hseen = p;
  return v;
}

/* ------------------------------------------------------------ the tile */

/* One round's arrays over the padded window (n cells). */
typedef struct {
  int64_t n, nq;
  int8_t *dir;
  double *v; /* running sum, then the value of a cell that left the queue */
  uint8_t *con;
  uint8_t *rem; /* inflows (and blocks) not yet counted: > 0 at the end = unknown */
  int64_t *q;   /* Kahn's order: every cell that became known, in that order */
} tile_flow;

static void flow_free(tile_flow *t) {
  free(t->dir);
  free(t->v);
  free(t->con);
  free(t->rem);
  free(t->q);
  memset(t, 0, sizeof *t);
}

/* Decodes fragment f's directions and accumulates inside the tile: each valid
 * cell counts 1 (or its weight; NoData weighs 0), its in-tile inflows and, with
 * pv (Assemble), its external
 * inflows - a perimeter cell with one still missing stays unknown (as every cell
 * below it). 0, or -1 when out of memory or after tr_graph_fail. */
static int flow_tile(pctx *x, const tr_aap_frag *f, const tr_d8_win *g, const pview *pv, tile_flow *t) {
  memset(t, 0, sizeof *t);
  const int64_t n = g->pw * (g->h + 2);
  t->n = n;
  t->dir = malloc((size_t)n);
  t->v = malloc((size_t)n * sizeof *t->v);
  t->con = malloc((size_t)n);
  t->rem = calloc((size_t)n, 1);
  t->q = malloc((size_t)(g->h * g->w) * sizeof *t->q);
  float *z = t->dir && t->v && t->con && t->rem && t->q ? tr_graph_window(x->env, f) : NULL;
  if (!z) {
    flow_free(t);
    return -1;
  }
  const int bad = tr_d8_decode(x->env, f, g, &x->lut, x->prm.encoding, x->prm.src, z, t->dir);
  tr_graph_window_done(x->env, f, z);
  /* the weights' window, read with the directions' (twice per tile) */
  const float *wz = !bad && x->prm.weighted ? tr_graph_window_in(x->env, 1, f) : NULL;
  if (bad || (x->prm.weighted && !wz)) {
    flow_free(t);
    return -1;
  }
  for (int64_t r = 1; r <= g->h; r++)
    for (int64_t c = 1; c <= g->w; c++) {
      const int64_t i = r * g->pw + c;
      if (t->dir[i] == TR_DIR_NODATA) continue;
      int rem = 0, con = 0;
      for (int k = 0; k < 8; k++) {
        const int64_t nb = i + g->off[k];
        const int dn = t->dir[nb];
        if (dn == TR_DIR_NODATA)
          con = 1;
        else if (dn == (k + 4) % 8 && tr_d8_in_tile(g, nb))
          rem++;
      }
      double v = wz ? (isnan(wz[i]) ? 0.0 : (double)wz[i]) : 1.0;
      const int64_t p = pv && (r == 1 || r == g->h || c == 1 || c == g->w) ? tr_d8_per_of(g, i) : -1;
      if (p >= 0) {
        v += pv->E[p];
        con |= (pv->flags[p] & F_ECON) != 0;
        rem += pv->epend[p] > 0;
      }
      t->v[i] = v;
      t->con[i] = (uint8_t)con;
      t->rem[i] = (uint8_t)rem;
      if (!rem) t->q[t->nq++] = i;
    }
  if (wz) tr_graph_window_in_done(x->env, 1, f, (float *)wz);
  for (int64_t h = 0; h < t->nq; h++) {
    const int64_t i = t->q[h];
    const int di = t->dir[i];
    if (di < 0) continue;
    const int64_t d = i + g->off[di];
    if (t->dir[d] == TR_DIR_NODATA || !tr_d8_in_tile(g, d)) continue;
    t->v[d] += t->v[i];
    t->con[d] |= t->con[i];
    if (--t->rem[d] == 0) t->q[t->nq++] = d;
  }
  return 0;
}

static int known(const tile_flow *t, int64_t i) { return t->rem[i] == 0; }
static int flow_dir(const void *t, int64_t i) { return ((const tile_flow *)t)->dir[i]; }
static int flow_known(const void *t, int64_t i) { return known(t, i); }

/* ------------------------------------------------------------ the links */

/* Finishes perimeter cell k (its counter reached 0) and every cell that
 * becomes final after it along the links; emits those that drain out. */
static int finish(pctx *x, const tr_d8_win *g, pview *v, uint32_t k, uint32_t *stack, tr_aap_round *rd) {
  int64_t top = 0, work = 0;
  stack[top++] = k;
  while (top > 0) {
    const uint32_t p = stack[--top];
    v->flags[p] |= F_FINAL;
    work++;
    const uint32_t to = v->link[p];
    if (to == LINK_OUT) {
      tr_up_msg m;
      memset(&m, 0, sizeof m);
      m.v = v->L[p] + v->A[p];
      m.con = (uint8_t)((v->flags[p] & (F_LCON | F_ACON)) != 0);
      if (tr_aap_emit(rd, tr_d8_cell(g, x->env->cols, tr_d8_per_cell(g, p)), &m)) return -1;
    } else if (to != LINK_NONE) {
      v->A[to] += v->A[p];
      if (v->flags[p] & F_ACON) v->flags[to] |= F_ACON;
      if (--v->pend[to] == 0) stack[top++] = to;
    }
  }
  tr_aap_add_work(rd, work);
  return 0;
}

/* Cell d, which a tile cell drains into, as a link: a perimeter cell, out of
 * the tile, or none (NoData, or an inner cell below a cycle); nx holds the
 * links of the inner cells below it. One division for its row and column. */
static uint32_t link_of(const tr_d8_win *g, const tile_flow *t, const uint32_t *nx, int64_t d) {
  if (t->dir[d] == TR_DIR_NODATA) return LINK_NONE;
  const int64_t r = d / g->pw, c = d % g->pw;
  if (r < 1 || r > g->h || c < 1 || c > g->w) return LINK_OUT;
  if (r == 1 || r == g->h || c == 1 || c == g->w) return (uint32_t)tr_d8_ring_index(g->h, g->w, r - 1, c - 1);
  return known(t, d) ? nx[d] : LINK_NONE;
}

static void perim_destroy(void *user, void *state) {
  (void)user;
  pstate *s = state;
  if (!s) return;
  free(s->blob);
  free(s);
}

static int perim_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  pctx *x = user;
  const tr_d8_win g = tr_d8_win_of(f);
  tile_flow t;
  if (flow_tile(x, f, &g, NULL, &t)) return -1;
  const int64_t nper = tr_d8_ring_size(g.h, g.w), nhalo = tr_d8_ring_size(g.h + 2, g.w + 2);
  pstate *s = calloc(1, sizeof *s);
  *state = s;
  const size_t bytes = blob_bytes(nper, nhalo);
  if (s) s->blob = calloc(1, bytes);
  /* nx[i]: the first perimeter cell downstream of tile cell i, from the cells
   * below it (Kahn's order backwards), or LINK_NONE */
  uint32_t *nx = s && s->blob ? malloc((size_t)t.n * sizeof *nx) : NULL;
  uint32_t *stack = nx ? malloc((size_t)nper * sizeof *stack) : NULL;
  if (!stack || tr_graph_keep(x->env, f, &s->blob, bytes, NULL)) {
    free(nx);
    free(stack);
    flow_free(&t);
    return -1;
  }
  memcpy(s->blob, &nper, sizeof nper);
  memcpy(s->blob + sizeof(int64_t), &nhalo, sizeof nhalo);
  pview v = view_of(s->blob);
  for (int64_t h = t.nq - 1; h >= 0; h--) {
    const int64_t i = t.q[h];
    nx[i] = t.dir[i] < 0 ? LINK_NONE : link_of(&g, &t, nx, i + g.off[t.dir[i]]);
  }
  for (int64_t k = 0; k < nper; k++) {
    const int64_t i = tr_d8_per_cell(&g, k);
    v.link[k] = LINK_NONE;
    if (t.dir[i] == TR_DIR_NODATA) continue; /* never final, never read */
    if (known(&t, i)) {
      v.L[k] = t.v[i];
      if (t.con[i]) v.flags[k] |= F_LCON;
    } else {
      v.pend[k] += NEVER;
    }
    if (t.dir[i] >= 0) v.link[k] = known(&t, i) ? nx[i] : link_of(&g, &t, nx, i + g.off[t.dir[i]]);
    /* the external inflows it waits for */
    for (int d = 0; d < 8; d++) {
      const int64_t nb = i + g.off[d];
      if (t.dir[nb] == (d + 4) % 8 && !tr_d8_in_tile(&g, nb)) v.epend[k]++;
    }
    v.pend[k] += v.epend[k];
  }
  for (int64_t k = 0; k < nper; k++)
    if (v.link[k] < LINK_OUT) v.pend[v.link[k]]++;
  for (int64_t j = 0; j < nhalo; j++) {
    int64_t r, c;
    tr_d8_ring_cell(g.h + 2, g.w + 2, j, &r, &c);
    const int64_t hi = r * g.pw + c;
    const int dh = t.dir[hi];
    v.htarget[j] = LINK_NONE;
    if (dh < 0) continue;
    const int64_t d = hi + g.off[dh];
    if (d >= 0 && d < t.n && tr_d8_in_tile(&g, d) && t.dir[d] != TR_DIR_NODATA)
      v.htarget[j] = (uint32_t)tr_d8_per_of(&g, d);
  }
  int rc = 0;
  for (int64_t k = 0; k < nper && !rc; k++)
    if (t.dir[tr_d8_per_cell(&g, k)] != TR_DIR_NODATA && v.pend[k] == 0 && !(v.flags[k] & F_FINAL))
      rc = finish(x, &g, &v, (uint32_t)k, stack, rd);
  tr_aap_add_work(rd, t.nq);
  free(nx);
  free(stack);
  flow_free(&t);
  return rc;
}

static int perim_inceval(void *user, const tr_aap_frag *f, void *state, int64_t n, const int64_t *cells,
                         const void *values, tr_aap_round *rd) {
  pctx *x = user;
  pstate *s = state;
  const tr_d8_win g = tr_d8_win_of(f);
  pview v = view_of(s->blob);
  uint32_t *stack = malloc((size_t)v.nper * sizeof *stack);
  if (!stack) return -1;
  int rc = 0;
  for (int64_t m = 0; m < n && !rc; m++) {
    const int64_t i = tr_d8_index(&g, x->env->cols, cells[m]);
    const int64_t j = tr_d8_halo_of(&g, i);
    if (j < 0 || v.hseen[j] || v.htarget[j] == LINK_NONE) continue; /* a copy of a value already applied */
    tr_up_msg val;
    memcpy(&val, (const unsigned char *)values + (size_t)m * sizeof val, sizeof val);
    v.hseen[j] = 1;
    const uint32_t p = v.htarget[j];
    v.E[p] += val.v;
    v.A[p] += val.v;
    if (val.con) v.flags[p] |= F_ECON | F_ACON;
    v.epend[p]--;
    if (--v.pend[p] == 0) rc = finish(x, &g, &v, p, stack, rd);
  }
  free(stack);
  return rc;
}

static int perim_assemble(void *user, const tr_aap_frag *f, void *state) {
  pctx *x = user;
  pstate *s = state;
  if (!s || !s->blob) return -1;
  const tr_d8_win g = tr_d8_win_of(f);
  const pview v = view_of(s->blob);
  tile_flow t;
  if (flow_tile(x, f, &g, &v, &t)) return -1;
  double *tile = malloc((size_t)(g.h * g.w) * sizeof *tile);
  const double nd = x->prm.product == TR_UP_ACC ? TR_ACC_NODATA : TR_BYTE_NODATA;
  int rc = tile ? 0 : -1;
  for (int64_t r = 0; r < g.h && !rc; r++)
    for (int64_t c = 0; c < g.w && !rc; c++) {
      const int64_t i = (r + 1) * g.pw + c + 1;
      double out = nd;
      if (t.dir[i] != TR_DIR_NODATA) {
        if (!known(&t, i)) {
          /* the same cell of the cycle as "d8_up" names */
          rc = tr_d8_fail_cycle(x->env, f, &g, x->prm.src, tr_d8_cycle_cell(&g, t.n, i, &t, flow_dir, flow_known));
          break;
        }
        const double val = t.v[i] * x->prm.unit;
        out = x->prm.product == TR_UP_ACC ? (x->prm.edge_check && t.con[i] ? nd : val)
                                          : (double)(val >= x->prm.threshold);
      }
      tile[r * g.w + c] = out;
    }
  if (!rc) rc = x->env->put(x->env, f, tile);
  free(tile);
  flow_free(&t);
  return rc;
}

static int perim_init(tr_aap_program *p, tr_graph_env *env, const void *params) {
  pctx *x = calloc(1, sizeof *x);
  if (!x) return -1;
  x->env = env;
  memcpy(&x->prm, params, sizeof x->prm);
  tr_dir_lut_init(&x->lut, x->prm.encoding);
  memset(p, 0, sizeof *p);
  p->value_size = sizeof(tr_up_msg);
  p->user = x;
  p->peval = perim_peval;
  p->inceval = perim_inceval;
  p->assemble = perim_assemble;
  p->destroy = perim_destroy;
  p->aggr = tr_up_msg_max;
  p->assemble_parallel = 1; /* Assemble accumulates its tile again: on every thread */
  return 0;
}

/* Whether every sum of the weights is exact in a double whatever the order of
 * its terms: every weight as the programs read it (a float; NoData and NaN
 * weigh 0) is a multiple of 2^-k, and their magnitudes sum below 2^(51-k)
 * (a margin for this check's own rounded sum). Then every partial sum is a
 * multiple of 2^-k below 2^(52-k) in magnitude,
 * which a double holds exactly, so no addition rounds and this program's
 * sums are d8_up's numbers: whole-number weights of any type (a Float32 mask,
 * Int32 counts) and fractions of a bounded range on a bounded total. One read
 * of the weight raster (every rank reads it all, so all decide alike), in
 * bands of rows; a stop asked meanwhile, or a read error, says no (d8_up
 * then runs and meets it). */
static int exact_weights(const tr_up_params *u, const tr_run_opts *run) {
  tr_input in;
  tr_error e;
  if (!u->weights || tr_input_open(&in, u->weights, 1, &e) != TR_OK) return 0;
  const int64_t band = 16;
  float *buf = malloc((size_t)(band * in.cols) * sizeof *buf);
  int ok = buf != NULL, k = 0; /* k: the fractional bits the weights need */
  double sum = 0;              /* their magnitudes' sum (rounded down at most by a relative 2^-40) */
  for (int64_t r = 0; ok && r < in.rows; r += band) {
    const int64_t n = in.rows - r < band ? in.rows - r : band;
    if ((run && run->cancelled && run->cancelled(run->progress_user)) ||
        tr_input_read_f32(&in, r, 0, n, in.cols, buf, in.cols, &e) != TR_OK) {
      ok = 0;
      break;
    }
    for (int64_t i = 0; i < n * in.cols; i++) {
      const float v = buf[i];
      if (v == 0.0f || isnan(v) || (in.has_nodata && v == (float)in.nodata)) continue;
      /* v = m 2^x with m in [0.5, 1): m 2^24 is a whole number (24 bits),
       * whose trailing zero bits lift v's lowest bit */
      int x;
      const uint32_t m = (uint32_t)ldexp(frexp(fabs((double)v), &x), 24);
      const int low = x - 24 + __builtin_ctz(m);
      if (-low > k) k = -low;
      sum += fabs((double)v);
    }
    ok = k <= 52 && ldexp(sum, k) < 0x1p51;
  }
  free(buf);
  tr_input_close(&in);
  return ok;
}

/* Whole numbers (counts), and weights whose sums are exact in any order;
 * no Strahler order. */
static int perim_applies(const void *params, const tr_run_opts *run) {
  const tr_up_params *u = params;
  if (u->product == TR_UP_ORDER) return 0;
  return !u->weighted || u->whole_weights || exact_weights(u, run);
}

const tr_graph_program tr_program_d8_up_perimeter = {
    "d8_up_perimeter",      GDT_Float64,    sizeof(tr_up_params), perim_init, tr_graph_release_user, 0,
    (int)sizeof(tr_up_msg), D8_PERIM_STATE, D8_PERIM_ROUND,       "d8_up",    NULL,          perim_applies, 0};
