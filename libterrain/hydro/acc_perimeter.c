/*
 * acc_perimeter.c - accumulation and stream cells in two visits of each tile: the
 * body "d8_up_perimeter" of the "d8_up" program, its twin, which the planner
 * takes instead of the per-cell body when that one's state does not fit --mem.
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
 * edge check) and weights whose every sum a double holds exactly (sums TR_SUMS_DOUBLE: an
 * integer band of up to 16 bits, or any band whose values, read by
 * tr_up_weights_sums, are multiples of one power of two on a bounded total).
 * Adding them in another order than "d8_up"'s then gives the same bits, and the
 * output is the same bytes for any --mem, tiling, schedule, thread or rank count
 * (test_flow_engine). Strahler order (not a sum) stays with "d8_up" (applies()).
 * A cell below a cycle of directions never becomes final here either, and
 * Assemble names the same cell of the cycle as "d8_up".
 *
 * The body "d8_up_wide" is the same program over 128-bit integers in units of
 * 2^-k, for weights whose sums a double would round but such integers hold
 * (TR_SUMS_WIDE): its sums are exact in any order and Assemble rounds each
 * cell's once. The planner takes it for such weights in memory as well, so the
 * bytes do not depend on --mem; d8_up's sums in its fixed order could differ in
 * the last bits. Only weights beyond that (TR_SUMS_ROUND: magnitudes spanning
 * more than 2^124 units) stay with "d8_up", which spills out of core. Both rows
 * are one source, acc_perimeter_sums.h, included once per type of sum.
 *
 * Each tile's direction window is read twice whatever the number of rounds; the
 * state kept between rounds (or spilled) is about D8_PERIM_STATE bytes per
 * perimeter cell (D8_WIDE_STATE for d8_up_wide) instead of 2 to 7 bytes per cell.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "d8_window.h"
#include "flow.h"
#include "raster.h"
#include "wide.h"

#define LINK_NONE UINT32_MAX      /* the flow ends inside the tile (or on NoData) */
#define LINK_OUT (UINT32_MAX - 1) /* the cell drains into a neighbour fragment */
#define NEVER (UINT32_MAX / 2)    /* added to the counter of a cell below an in-tile cycle */
/* bytes per unit of 2 x (rows + cols) + 4 (graph_plan.c): a perimeter cell's 3 doubles, 2
 * words and 2 bytes, and a halo cell's word and byte (about as many of each) */
#define D8_PERIM_STATE 40
/* bytes per cell of a round's padded window besides the input window: directions,
 * values, contamination, counters, the queue, the links (PEval) or the output tile
 * (Assemble) */
#define D8_PERIM_ROUND 28
/* the same for d8_up_wide: 16-byte sums, so 3 x 8 more per perimeter cell and
 * 8 more per cell of a round */
#define D8_WIDE_STATE 64
#define D8_WIDE_ROUND 36

enum { F_LCON = 1, F_ACON = 2, F_ECON = 4, F_FINAL = 8 };

typedef struct {
  tr_graph_env *env;
  tr_up_params prm;
  tr_d8_lut lut;
} pctx;

/* A fragment's summary: one block, registered with the state store so an
 * out-of-core run may spill it. nper tile perimeter cells (ring order of the
 * tile), nhalo halo cells (ring order of the padded window). */
typedef struct {
  unsigned char *blob;
} pstate;

static void perim_destroy(void *user, void *state) {
  (void)user;
  pstate *s = state;
  if (!s) return;
  free(s->blob);
  free(s);
}

/* ---------------------------------------------- d8_up_perimeter: doubles */

#define VAL double
#define NS(n) n##_d
#define W_OF(x, w) (isnan(w) ? 0.0 : (double)(w))
#define MSG tr_up_msg
#define MSG_PUT(m, x_) ((m).v = (x_))
#define MSG_GET(m) ((m).v)
#define AGGR tr_up_msg_max
#define OUT(x, x_) (x_)
#include "acc_perimeter_sums.h"

/* ------------------------------ d8_up_wide: 128-bit integers of 2^-k units */

/* Weights whose sums a double would round (tr_up_weights_sums: TR_SUMS_WIDE)
 * but a 128-bit integer in units of 2^-k holds: every weight is a whole
 * number of units and every sum below 2^124 units, so no addition rounds, in
 * any order; Assemble rounds each cell's exact sum once, to the nearest
 * double. In memory and out of core alike (the planner takes it for every
 * product of such weights), so the bytes never depend on --mem. */
typedef tr_wide wide_t; /* core/wide.h */
typedef tr_uwide uwide_t;

/* A final perimeter value of d8_up_wide: the sum's two 64-bit halves. */
typedef struct {
  uint64_t lo, hi;
  uint8_t con, ord;
  uint8_t pad[6];
} wide_msg;

static inline void wide_put(wide_msg *m, wide_t v) {
  m->lo = (uint64_t)v;
  m->hi = (uint64_t)((uwide_t)v >> 64);
}

static inline wide_t wide_get(const wide_msg *m) {
  return (wide_t)(((uwide_t)m->hi << 64) | m->lo);
}

/* f_aggr: the largest (value, contamination); copies of one final value are
 * equal, so it keeps that value. */
static int wide_msg_max(void *user, void *acc, const void *value) {
  (void)user;
  wide_msg a, v;
  memcpy(&a, acc, sizeof a);
  memcpy(&v, value, sizeof v);
  const wide_t x = wide_get(&a), y = wide_get(&v);
  const int more = y > x || (y == x && v.con > a.con);
  if (more) memcpy(acc, &v, sizeof v);
  return more;
}

#define VAL wide_t
#define NS(n) n##_w
#define W_OF(x, w) (isnan(w) ? (wide_t)0 : (wide_t)ldexp((double)(w), (x)->prm.weights_k))
#define MSG wide_msg
#define MSG_PUT(m, x_) wide_put(&(m), (x_))
#define MSG_GET(m) wide_get(&(m))
#define AGGR wide_msg_max
#define OUT(x, x_) ldexp((double)(x_), -(x)->prm.weights_k)
#include "acc_perimeter_sums.h"

/* ------------------------------------------------------------ the weights */


/* What the sums of the weights in raster `path` need (flow.h): every weight
 * as the programs read it (a float; NoData and NaN weigh 0) is a multiple of
 * 2^-k for the least such k, and the magnitudes sum to S. Below 2^(51-k)
 * every partial sum, in any order, is a multiple of 2^-k below 2^(52-k),
 * which a double holds exactly (TR_SUMS_DOUBLE); below 2^(124-k), a 128-bit
 * integer of 2^-k units (TR_SUMS_WIDE). The margins cover this scan's own
 * rounded S. One read of the raster, in bands of rows (every rank reads it
 * all, so all decide alike); a stop asked meanwhile, or a read error, is a
 * status (the caller agrees on it over the ranks, which must not run
 * programs of different messages). */
int tr_up_weights_sums(const char *path, const tr_run_opts *run, int *k_out, tr_error *err) {
  tr_input in;
  *k_out = 0;
  int st = tr_input_open(&in, path, 1, err);
  if (st) return st;
  st = tr_up_weights_sums_of(&in, run, k_out, err);
  tr_input_close(&in);
  return st;
}

int tr_up_weights_sums_of(tr_input *w, const tr_run_opts *run, int *k_out, tr_error *err) {
  const tr_input in = *w;
  int st = TR_OK;
  *k_out = 0;
  const int64_t band = 16;
  float *buf = malloc((size_t)(band * in.cols) * sizeof *buf);
  if (!buf) st = tr_fail(err, TR_ENOMEM, "out of memory reading the weights");
  int fits = 1, k = 0; /* k: the fractional bits the weights need */
  double sum = 0;      /* their magnitudes' sum (rounded down at most by a relative 2^-40) */
  for (int64_t r = 0; !st && fits && r < in.rows; r += band) {
    const int64_t n = in.rows - r < band ? in.rows - r : band;
    if (run && run->cancelled && run->cancelled(run->progress_user)) {
      st = tr_fail(err, TR_EINTERRUPTED, "interrupted");
      break;
    }
    if ((st = tr_input_read_f32(w, r, 0, n, in.cols, buf, in.cols, err))) break;
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
    fits = k <= 160 && ldexp(sum, k) < 0x1p124;
  }
  free(buf);
  if (st) return st;
  if (!fits) return TR_SUMS_ROUND;
  *k_out = k;
  return k <= 52 && ldexp(sum, k) < 0x1p51 ? TR_SUMS_DOUBLE : TR_SUMS_WIDE;
}

/* Counts, and weights whose sums are exact in a double (sums, which
 * flowgraph.c sets from the band's type or tr_up_weights_sums); no Strahler
 * order. */
static int perim_applies(const void *params) {
  const tr_up_params *u = params;
  return u->product != TR_UP_ORDER && (!u->weighted || u->sums == TR_SUMS_DOUBLE);
}

/* --ft replay's invariant of Assemble's tile (flow_check.c) */
static int64_t perim_check_tile(void *user, const tr_aap_frag *f, const void *state, const void *cells) {
  (void)state;
  return tr_up_check_tile(&((const pctx *)user)->prm, f->rows * f->cols, cells);
}

const tr_graph_body tr_body_d8_up_perimeter = {
    .name = "d8_up_perimeter",
    .role = TR_BODY_TWIN,
    .init = perim_init_d,
    .release = tr_graph_release_user,
    .state = TR_STATE_PERIMETER(D8_PERIM_STATE, 0, D8_PERIM_ROUND),
    .msg_bytes = sizeof(tr_up_msg),
    .applies = perim_applies,
    .state_bytes = sizeof(pstate),
    .check_tile = perim_check_tile};

int tr_up_wide(const tr_up_params *u) {
  return u->weighted && u->sums == TR_SUMS_WIDE && u->product != TR_UP_ORDER;
}

static int wide_applies(const void *params) { return tr_up_wide(params); }

/* A main body: weights of TR_SUMS_WIDE take it whatever --mem (no Strahler
 * order: that comes from its streams, order_cells.c); it spills when its
 * perimeters do not fit. */
const tr_graph_body tr_body_d8_up_wide = {.name = "d8_up_wide",
                                          .init = perim_init_w,
                                          .release = tr_graph_release_user,
                                          .state = TR_STATE_PERIMETER(D8_WIDE_STATE, 0, D8_WIDE_ROUND),
                                          .msg_bytes = sizeof(wide_msg),
                                          .applies = wide_applies,
    .state_bytes = sizeof(pstate),
    .check_tile = perim_check_tile};
