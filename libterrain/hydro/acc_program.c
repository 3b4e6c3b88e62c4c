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
 * State of a fragment, over its padded window (halo included: a halo cell
 * drains into the tile or not). Unweighted counts on grids under 2^31 cells
 * (accumulation in cells or area, streams, order): one 16-bit word per cell
 * holding the decoded direction (4 bits), the contamination (1 bit) and the
 * count (11 bits; 0 while unknown, as every valid cell counts at least
 * itself). A count above 2046 (1.5% of the cells of the 8000 x 8000
 * benchmark DEM) is kept in the fragment's open-addressing table (index,
 * count); a fragment whose table would pass 1/16 of its cells (long parallel
 * paths: a tilted plane) moves to a wide array of 32-bit counts instead, so
 * a fragment keeps about 2.2 bytes per cell, at most 6. Otherwise (weights,
 * larger grids): a direction byte, a double (NaN while unknown) and a
 * contamination byte. The order product adds a byte. A cell's pending
 * inflows are not kept but counted from its neighbours when one of them
 * becomes final. (Decoding the directions again in every round instead of
 * keeping them costs a window reload per round: measured 1.8x slower.)
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

/* A count's 16-bit word (see the state above). */
#define W_DIR_SHIFT 12     /* bits 15..12: the direction + 2 (0 NoData, 1 none, 2..9 E .. SE) */
#define W_CON 0x0800u      /* bit 11: contaminated */
#define W_VAL 0x07ffu      /* bits 10..0: 0 unknown, 1 .. 2046 the count, W_BIG in the table */
#define W_BIG W_VAL
#define COUNT_MAX 0x7ffffffell /* the largest count kept (a table value is a uint32) */
/* A fragment's table moves into the wide form when it holds more entries
 * than 1 in WIDE_AT of its window's cells: the table (at least 3/8 full)
 * then takes at most 8 x 8/3 / WIDE_AT = 1.3 bytes a cell, the wide form 4. */
#define WIDE_AT 16

typedef tr_d8_win win;

typedef tr_up_msg up_msg;

typedef struct {
  tr_graph_env *env;
  tr_up_params prm;
  tr_d8_lut lut;
  int counts;        /* values as counts in 16-bit words */
  uint32_t word_max; /* the largest count a word holds itself */
} up_ctx;

/* A fragment's state over its padded window (n cells). Every field is one
 * malloc'd array (or NULL): counts keep w, and big or wide; otherwise dir,
 * vd and con; the order product adds ord. */
typedef struct {
  int64_t n;
  uint16_t *w;      /* counts: direction | contamination | count (W_*) */
  uint32_t *big;    /* counts above word_max: open addressing, pairs (padded index + 1, count); 0 is empty */
  int64_t nbig;     /* entries in big */
  size_t big_cap;   /* pairs in big (a power of two; at most 3/4 used); size_t: an out-of-core
                     * runner may take the table's size from it (elem 8 bytes) */
  uint32_t *wide;   /* instead of big when it grew past n / WIDE_AT: every such count at its index */
  int8_t *dir;      /* otherwise: decoded directions (d8_codes.h) ... */
  double *vd;       /* ... the value, NaN while unknown ... */
  uint8_t *con;     /* ... and the contamination */
  uint8_t *ord;     /* the order product */
} up_state;

/* What one round works with: the fragment's geometry and, when weighted,
 * its weights window borrowed from the tile store. */
typedef struct {
  win g;
  float *wz;
} up_round;

static int64_t global_cell(const up_ctx *x, const win *g, int64_t i) { return tr_d8_cell(g, x->env->cols, i); }

static inline int dir_at(const up_state *s, int64_t i) { return s->w ? (int)(s->w[i] >> W_DIR_SHIFT) - 2 : s->dir[i]; }
static inline int is_final(const up_state *s, int64_t i) { return s->w ? (s->w[i] & W_VAL) != 0 : !isnan(s->vd[i]); }
static inline int getcon(const up_state *s, int64_t i) { return s->w ? (s->w[i] & W_CON) != 0 : s->con[i]; }

static int64_t big_hash(int64_t i, int64_t cap) {
  uint64_t h = (uint64_t)i * 0x9e3779b97f4a7c15ull; /* Fibonacci hashing; its high bits folded down */
  return (int64_t)((h ^ h >> 32) & (uint64_t)(cap - 1));
}

/* The table's slot of padded index i: its pair, or the empty one it would take. */
static int64_t big_slot(const uint32_t *big, int64_t cap, int64_t i) {
  int64_t j = big_hash(i, cap);
  while (big[2 * j] && big[2 * j] != (uint32_t)i + 1) j = (j + 1) & (cap - 1);
  return j;
}

/* A count kept outside its word (rare: out of the hot path). */
static __attribute__((noinline)) double get_big(const up_state *s, int64_t i) {
  return s->wide ? s->wide[i] : s->big[2 * big_slot(s->big, (int64_t)s->big_cap, i) + 1];
}

static inline double getv(const up_state *s, int64_t i) {
  if (!s->w) return s->vd[i];
  const unsigned v = s->w[i] & W_VAL;
  return v != W_BIG ? v : get_big(s, i);
}

/* Moves the table into the wide form (the table grew past n / WIDE_AT). */
static int to_wide(up_state *s) {
  s->wide = calloc((size_t)s->n, sizeof *s->wide); /* every byte set: --ft compares states */
  if (!s->wide) return -1;
  for (size_t j = 0; j < s->big_cap; j++)
    if (s->big[2 * j]) s->wide[s->big[2 * j] - 1] = s->big[2 * j + 1];
  free(s->big);
  s->big = NULL;
  s->nbig = 0;
  s->big_cap = 0;
  return 0;
}

/* Keeps count v of padded index i outside its word: in the table (grown
 * to twice its size when three quarters full) or the wide form. */
static __attribute__((noinline)) int put_big(up_state *s, int64_t i, uint32_t v) {
  if (s->wide) {
    s->wide[i] = v;
    return 0;
  }
  if (s->nbig + 1 > s->n / WIDE_AT) {
    if (to_wide(s)) return -1;
    s->wide[i] = v;
    return 0;
  }
  if (4 * (s->nbig + 1) > 3 * (int64_t)s->big_cap) {
    const int64_t cap = s->big_cap ? 2 * (int64_t)s->big_cap : 64;
    uint32_t *nb = calloc((size_t)cap * 2, sizeof *nb);
    if (!nb) return -1;
    for (size_t j = 0; j < s->big_cap; j++)
      if (s->big[2 * j]) {
        const int64_t k = big_slot(nb, cap, s->big[2 * j] - 1);
        nb[2 * k] = s->big[2 * j];
        nb[2 * k + 1] = s->big[2 * j + 1];
      }
    free(s->big);
    s->big = nb;
    s->big_cap = (size_t)cap;
  }
  const int64_t k = big_slot(s->big, (int64_t)s->big_cap, i);
  s->big[2 * k] = (uint32_t)i + 1;
  s->big[2 * k + 1] = v;
  s->nbig++;
  return 0;
}

/* Makes cell i final with value v; -1 when out of memory. */
static inline int setv(const up_ctx *x, up_state *s, int64_t i, double v, int con) {
  if (!s->w) {
    s->vd[i] = v;
    s->con[i] = (uint8_t)(con != 0);
    return 0;
  }
  const uint32_t c = (uint32_t)v;
  const uint16_t keep = (uint16_t)((s->w[i] & ~(W_CON | W_VAL)) | (con ? W_CON : 0));
  if (c <= x->word_max) {
    s->w[i] = (uint16_t)(keep | c);
    return 0;
  }
  s->w[i] = (uint16_t)(keep | W_BIG);
  return put_big(s, i, c);
}

static void up_destroy(void *user, void *state) {
  (void)user;
  up_state *s = state;
  if (!s) return;
  free(s->w);
  free(s->big);
  free(s->wide);
  free(s->dir);
  free(s->vd);
  free(s->con);
  free(s->ord);
  free(s);
}

static void round_end(up_ctx *x, const tr_aap_frag *f, up_round *w) {
  if (w->wz) tr_graph_window_in_done(x->env, 1, f, w->wz);
  memset(w, 0, sizeof *w);
}

/* Starts a round on fragment f: its geometry, and its weights borrowed. */
static int round_begin(up_ctx *x, const tr_aap_frag *f, up_round *w) {
  memset(w, 0, sizeof *w);
  w->g = tr_d8_win_of(f);
  w->wz = x->prm.weighted ? tr_graph_window_in(x->env, 1, f) : NULL;
  return x->prm.weighted && !w->wz ? -1 : 0;
}

/* Are all the inflows of tile cell d final? */
static int ready(const up_state *s, const up_round *w, int64_t d) {
  for (int k = 0; k < 8; k++) {
    const int64_t n = d + w->g.off[k];
    if (dir_at(s, n) == (k + 4) % 8 && !is_final(s, n)) return 0;
  }
  return 1;
}

/* Finishes cell i from its inflows (all final); -1 when out of memory. */
static int finish(const up_ctx *x, up_state *s, const up_round *w, int64_t i) {
  double v = x->prm.weighted ? (isnan(w->wz[i]) ? 0.0 : (double)w->wz[i]) : 1.0;
  int con = 0, best = 0, nbest = 0;
  for (int k = 0; k < 8; k++) {
    const int64_t n = i + w->g.off[k];
    const int dn = dir_at(s, n);
    if (dn == TR_D8_NODATA) con = 1;
    if (dn != (k + 4) % 8) continue;
    v += getv(s, n);
    con |= getcon(s, n);
    if (s->ord && s->ord[n]) {
      if (s->ord[n] > best) best = s->ord[n], nbest = 1;
      else if (s->ord[n] == best) nbest++;
    }
  }
  if (s->ord) {
    const int stream = v * x->prm.unit >= x->prm.threshold;
    s->ord[i] = (uint8_t)(!stream ? 0 : nbest == 0 ? 1 : nbest >= 2 ? best + 1 : best);
  }
  return setv(x, s, i, v, con);
}

/* Runs the queue: finishes cells, queues the cells they make ready, emits
 * final cells that drain into another fragment. */
static int drain(const up_ctx *x, up_state *s, const up_round *w, int64_t *q, int64_t nq, tr_aap_round *rd) {
  int64_t work = 0;
  while (nq > 0) {
    const int64_t i = q[--nq];
    if (finish(x, s, w, i)) return -1;
    work++;
    const int di = dir_at(s, i);
    if (di < 0) continue;
    const int64_t d = i + w->g.off[di];
    if (dir_at(s, d) == TR_D8_NODATA) continue;
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

/* The state of fragment f, every cell unknown, its directions decoded from
 * its window; NULL when out of memory or after tr_graph_fail (*bad set). */
static up_state *state_new(up_ctx *x, const tr_aap_frag *f, const win *g, int *bad) {
  const int64_t n = g->pw * (g->h + 2);
  up_state *s = calloc(1, sizeof *s);
  int8_t *dir = malloc((size_t)n);
  if (!s || !dir) {
    free(s);
    free(dir);
    return NULL;
  }
  s->n = n;
  if (x->counts) s->w = malloc((size_t)n * sizeof *s->w);
  else s->vd = malloc((size_t)n * sizeof *s->vd), s->con = calloc((size_t)n, 1);
  if (x->prm.product == TR_UP_ORDER) s->ord = calloc((size_t)n, 1);
  float *z = s->w || (s->vd && s->con) ? tr_graph_window(x->env, f) : NULL;
  if (!z || (x->prm.product == TR_UP_ORDER && !s->ord)) {
    if (z) tr_graph_window_done(x->env, f, z);
    free(dir);
    up_destroy(x, s);
    return NULL;
  }
  *bad = tr_d8_decode(x->env, f, g, &x->lut, x->prm.encoding, x->prm.src, z, dir);
  tr_graph_window_done(x->env, f, z);
  if (s->w) {
    for (int64_t i = 0; i < n; i++) s->w[i] = (uint16_t)((dir[i] + 2) << W_DIR_SHIFT);
    free(dir);
  } else {
    s->dir = dir;
    for (int64_t i = 0; i < n; i++) s->vd[i] = NAN;
  }
  if (*bad) {
    up_destroy(x, s);
    return NULL;
  }
  /* every per-cell array, so an out-of-core run may spill it between rounds
   * (graph.h); big and wide are made later, inside rounds, and big grows */
  const size_t nn = (size_t)n;
  if (tr_graph_keep(x->env, f, &s->w, nn * sizeof *s->w, NULL) ||
      tr_graph_keep(x->env, f, &s->big, 2 * sizeof *s->big, &s->big_cap) ||
      tr_graph_keep(x->env, f, &s->wide, nn * sizeof *s->wide, NULL) || tr_graph_keep(x->env, f, &s->dir, nn, NULL) ||
      tr_graph_keep(x->env, f, &s->vd, nn * sizeof *s->vd, NULL) || tr_graph_keep(x->env, f, &s->con, nn, NULL) ||
      tr_graph_keep(x->env, f, &s->ord, nn, NULL)) {
    up_destroy(x, s);
    return NULL;
  }
  return s;
}

static int up_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  up_ctx *x = user;
  const win g = tr_d8_win_of(f);
  int bad = 0;
  up_state *s = state_new(x, f, &g, &bad);
  *state = s;
  int64_t *q = s ? malloc((size_t)(g.h * g.w) * sizeof *q) : NULL;
  up_round w;
  if (!q || round_begin(x, f, &w)) {
    free(q);
    return -1;
  }
  int64_t nq = 0;
  for (int64_t r = 1; r <= g.h; r++)
    for (int64_t c = 1; c <= g.w; c++) {
      const int64_t i = r * g.pw + c;
      if (dir_at(s, i) != TR_D8_NODATA && ready(s, &w, i)) q[nq++] = i;
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
  if (!q || round_begin(x, f, &w)) {
    free(q);
    return -1;
  }
  int64_t nq = 0;
  int rc = 0;
  for (int64_t m = 0; m < n && !rc; m++) {
    up_msg v;
    memcpy(&v, (const unsigned char *)values + (size_t)m * sizeof v, sizeof v);
    const int64_t i = tr_d8_index(&w.g, x->env->cols, cells[m]);
    const int di = dir_at(s, i);
    if (is_final(s, i) || di < 0) continue; /* a copy of a value already applied */
    rc = setv(x, s, i, v.v, v.con);
    if (s->ord) s->ord[i] = v.ord;
    const int64_t d = i + w.g.off[di];
    if (tr_d8_in_tile(&w.g, d) && dir_at(s, d) != TR_D8_NODATA && ready(s, &w, d)) q[nq++] = d;
  }
  if (!rc) rc = drain(x, s, &w, q, nq, rd);
  round_end(x, f, &w);
  free(q);
  return rc;
}

static int dir_of_state(const void *s, int64_t i) { return dir_at(s, i); }
static int known_in_state(const void *s, int64_t i) { return is_final(s, i); }

static int up_assemble(void *user, const tr_aap_frag *f, void *state) {
  up_ctx *x = user;
  up_state *s = state;
  if (!s) return -1;
  const win gw = tr_d8_win_of(f), *g = &gw;
  double *tile = malloc((size_t)(g->h * g->w) * sizeof *tile);
  const double nd = x->prm.product == TR_UP_ACC ? TR_ACC_NODATA : TR_BYTE_NODATA;
  int rc = tile ? 0 : -1;
  for (int64_t r = 0; r < g->h && !rc; r++)
    for (int64_t c = 0; c < g->w && !rc; c++) {
      const int64_t i = (r + 1) * g->pw + c + 1;
      double out = nd;
      if (dir_at(s, i) != TR_D8_NODATA) {
        if (!is_final(s, i)) {
          rc = tr_d8_fail_cycle(x->env, f, g, x->prm.src,
                                tr_d8_cycle_cell(g, s->n, i, s, dir_of_state, known_in_state));
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

int tr_up_msg_max(void *user, void *acc, const void *value) {
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
  tr_d8_lut_init(&x->lut, x->prm.encoding);
  x->counts = !x->prm.weighted && env->rows * env->cols < COUNT_MAX;
  x->word_max = x->prm.word_max > 0 && x->prm.word_max < (int32_t)W_BIG ? (uint32_t)x->prm.word_max : W_BIG - 1;
  memset(p, 0, sizeof *p);
  p->value_size = sizeof(up_msg);
  p->user = x;
  p->peval = up_peval;
  p->inceval = up_inceval;
  p->assemble = up_assemble;
  p->destroy = up_destroy;
  p->aggr = tr_up_msg_max;
  return 0;
}

/* Every product but sums of weights that a double would round (d8_up_wide's). */
static int up_applies(const void *params) { return !tr_up_wide(params); }

/* state, at most: 11 bytes a cell (direction, double, contamination and order
 * bytes); counts take 2.2 typically and 7 at worst (word, wide array, order) */
/* --ft replay's invariant of Assemble's tile (flow_check.c) */
static int64_t up_check_tile(void *user, const tr_aap_frag *f, const void *state, const void *cells) {
  (void)state;
  return tr_up_check_tile(&((const up_ctx *)user)->prm, f->rows * f->cols, cells);
}

static const tr_graph_body body_up = {.name = "d8_up",
                                      .init = up_init,
                                      .release = tr_graph_release_user,
                                      .state = TR_STATE_PER_CELL(11),
                                      .msg_bytes = sizeof(tr_up_msg),
                                      .applies = up_applies,
    .state_bytes = sizeof(up_state),
    .check_tile = up_check_tile};

/* Weights whose sums a double rounds take d8_up_wide whatever --mem (exact
 * 128-bit sums, so the bytes never depend on --mem); out of core, counts and
 * weights exact in a double take d8_up_perimeter (acc_perimeter.c). */
const tr_graph_program tr_program_d8_up = {
    .name = "d8_up",
    .cell_type = GDT_Float64,
    .params_size = sizeof(tr_up_params),
    .bodies = {&body_up, &tr_body_d8_up_wide, &tr_body_d8_up_perimeter},
};
