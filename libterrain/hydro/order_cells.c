/*
 * order_cells.c - Strahler order from the stream cells alone: flowgraph
 * --order when d8_up's state (about 3 bytes a cell, spilled and read back
 * once per round out of core) does not fit --mem.
 *
 * The stream mask (d8_up's streams product, which the perimeter program
 * computes in two reads of each tile) is read in bands of rows beside the
 * directions; the stream cells are kept (cell index and direction) and
 * ordered by Kahn's rule over the links between them, with d8_up's rule
 * exactly: a stream cell's order is the largest order among the stream
 * cells draining into it, plus one when two or more of them carry it, and 1
 * when none does. Then the graph program "d8_order_cells" writes each tile
 * from its directions alone (no messages, no state): NoData where the
 * direction is, the order on stream cells, 0 elsewhere - d8_up's order
 * product, byte for byte. Every rank reads and orders all the stream cells
 * (as the network does) and writes its own tiles.
 *
 * Memory: ORDER_CELL_BYTES per stream cell while ordering, 9 kept while the
 * tiles are written, counted in --mem: more stream cells than that leaves
 * (after 64 MiB for the process and the bands) are refused while reading,
 * and the caller runs d8_up instead.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "d8_codes.h"
#include "d8_window.h"
#include "flow.h"
#include "mem_limit.h"
#include "raster.h"

#define BAND_ROWS 64
/* A stream cell while ordering: its index (8 bytes) and order (1), and
 * build's direction (1), downstream index (8), inflows left, best and
 * count (3), queue slot (8), and the list's growth slack. */
#define ORDER_CELL_BYTES 40

/* The first index of sorted cells[0..n) not below `cell` (n when none). */
static int64_t lower_bound(const int64_t *cells, int64_t n, int64_t cell) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (cells[mid] < cell) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The index of `cell` in sorted cells[0..n), or -1. */
static int64_t find(const int64_t *cells, int64_t n, int64_t cell) {
  const int64_t i = lower_bound(cells, n, cell);
  return i < n && cells[i] == cell ? i : -1;
}

/* Appends (cell, dir), growing both arrays. */
static int push(int64_t **cells, int8_t **dirs, int64_t *n, int64_t *cap, int64_t cell, int8_t d) {
  if (*n == *cap) {
    const int64_t c = *cap ? 2 * *cap : 4096;
    int64_t *a = realloc(*cells, (size_t)c * sizeof *a);
    if (a) *cells = a;
    int8_t *b = a ? realloc(*dirs, (size_t)c) : NULL;
    if (b) *dirs = b;
    if (!a || !b) return -1;
    *cap = c;
  }
  (*cells)[*n] = cell;
  (*dirs)[*n] = d;
  (*n)++;
  return 0;
}

int tr_order_cells_build(const tr_run_opts *run, const char *dir, const char *streams, int encoding, tr_order_params *out,
                         tr_error *err) {
  memset(out, 0, sizeof out[0]);
  out->encoding = encoding;
  out->src = dir;
  tr_input in[2];
  int st = tr_input_open(&in[0], dir, 1, err);
  if (st) return st;
  if ((st = tr_input_open(&in[1], streams, 1, err))) {
    tr_input_close(&in[0]);
    return st;
  }
  const int64_t rows = in[0].rows, cols = in[0].cols;
  const int64_t bands = (int64_t)BAND_ROWS * cols * 2 * (int64_t)sizeof(float);
  int64_t room = tr_mem_room(run ? run->mem : 0, bands);
  if (room < 0) room = 0;
  const int64_t most = room / ORDER_CELL_BYTES;
  float *buf = malloc((size_t)(BAND_ROWS * cols) * 2 * sizeof *buf);
  int64_t *cells = NULL, n = 0, cap = 0;
  int8_t *dirs = NULL;
  if (!buf) st = tr_fail(err, TR_ENOMEM, "out of memory reading the stream cells");
  for (int64_t r0 = 0; r0 < rows && !st; r0 += BAND_ROWS) {
    const int64_t nr = rows - r0 < BAND_ROWS ? rows - r0 : BAND_ROWS;
    if (run && run->cancelled && run->cancelled(run->progress_user)) {
      st = tr_fail(err, TR_EINTERRUPTED, "interrupted");
      break;
    }
    for (int k = 0; k < 2 && !st; k++)
      st = tr_input_read_f32(&in[k], r0, 0, nr, cols, buf + (size_t)k * BAND_ROWS * cols, cols, err);
    for (int64_t i = 0; i < nr * cols && !st; i++) {
      /* the streams product: 1, 0 or NoData; a src given (--streams-in):
       * TauDEM reads it as 16-bit integers and takes those above 0 */
      const float v = buf[BAND_ROWS * cols + i];
      if (isnan(v) || (in[1].has_nodata && v == (float)in[1].nodata) || v < 1.0f) continue;
      const int d = tr_d8_decode_value(encoding, buf[i]);
      if (d == TR_D8_NODATA || d == TR_D8_BAD) continue;
      if (n >= most)
        st = tr_fail(err, TR_ENOMEM,
                     "Strahler order from the stream cells: more than %lld of them, at %d bytes each, do not fit "
                     "the %.1f MiB --mem leaves them",
                     (long long)most, ORDER_CELL_BYTES, (double)room / 1048576.0);
      else if (push(&cells, &dirs, &n, &cap, (r0 + i / cols) * cols + i % cols, (int8_t)d))
        st = tr_fail(err, TR_ENOMEM, "out of memory for the stream cells");
    }
  }
  free(buf);
  tr_input_close(&in[0]);
  tr_input_close(&in[1]);
  /* Kahn's order over the stream cells: each one's downstream stream cell,
   * its inflows still to come, and the best order among those that came */
  int64_t *down = NULL, *queue = NULL;
  uint8_t *left = NULL, *best = NULL, *nbest = NULL, *ord = NULL;
  if (!st) {
    const size_t m = (size_t)(n ? n : 1);
    down = malloc(m * sizeof *down);
    queue = malloc(m * sizeof *queue);
    left = calloc(m, 1);
    best = calloc(m, 1);
    nbest = calloc(m, 1);
    ord = malloc(m);
    if (!down || !queue || !left || !best || !nbest || !ord) st = tr_fail(err, TR_ENOMEM, "out of memory for the stream cells");
  }
  int64_t qt = 0;
  for (int64_t i = 0; i < n && !st; i++) {
    down[i] = -1;
    if (dirs[i] < 0) continue;
    const int64_t r = cells[i] / cols + tr_d8_dr[dirs[i]], c = cells[i] % cols + tr_d8_dc[dirs[i]];
    if (r < 0 || r >= rows || c < 0 || c >= cols) continue;
    down[i] = find(cells, n, r * cols + c);
    if (down[i] >= 0) left[down[i]]++;
  }
  for (int64_t i = 0; i < n && !st; i++)
    if (!left[i]) queue[qt++] = i;
  for (int64_t h = 0; h < qt && !st; h++) {
    const int64_t i = queue[h];
    ord[i] = (uint8_t)(nbest[i] == 0 ? 1 : nbest[i] >= 2 ? best[i] + 1 : best[i]);
    const int64_t d = down[i];
    if (d < 0) continue;
    if (ord[i] > best[d]) best[d] = ord[i], nbest[d] = 1;
    else if (ord[i] == best[d] && nbest[d] < 2) nbest[d]++;
    if (--left[d] == 0) queue[qt++] = d;
  }
  /* a cycle of directions among stream cells: the streams stage fails on
   * it first (d8_up names the cell); never reached */
  if (!st && qt < n) st = tr_fail(err, TR_EINPUT, "'%s': a cycle of directions among the stream cells", dir);
  free(dirs);
  free(down);
  free(queue);
  free(left);
  free(best);
  free(nbest);
  if (st) {
    free(cells);
    free(ord);
    return st;
  }
  out->cells = cells;
  out->ord = ord;
  out->n = n;
  return TR_OK;
}

void tr_order_cells_free(tr_order_params *p) {
  free((void *)p->cells);
  free((void *)p->ord);
  memset(p, 0, sizeof *p);
}

/* ------------------------------------------------- the program writing them */

typedef struct {
  tr_graph_env *env;
  tr_order_params prm;
  tr_d8_lut lut;
} order_ctx;

static int order_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  (void)user;
  (void)f;
  (void)rd;
  *state = malloc(1); /* nothing to keep: the orders are the params' */
  return *state ? 0 : -1;
}

static int order_inceval(void *user, const tr_aap_frag *f, void *state, int64_t n, const int64_t *cells,
                         const void *values, tr_aap_round *rd) {
  (void)user, (void)f, (void)state, (void)n, (void)cells, (void)values, (void)rd;
  return 0; /* no messages are ever sent */
}

static int order_assemble(void *user, const tr_aap_frag *f, void *state) {
  order_ctx *x = user;
  (void)state;
  const tr_d8_win g = tr_d8_win_of(f);
  const int64_t n = g.pw * (g.h + 2);
  int8_t *dir = malloc((size_t)n);
  double *tile = malloc((size_t)(g.h * g.w) * sizeof *tile);
  float *z = dir && tile ? tr_graph_window(x->env, f) : NULL;
  int rc = !z ? -1 : tr_d8_decode(x->env, f, &g, &x->lut, x->prm.encoding, x->prm.src, z, dir);
  if (z) tr_graph_window_done(x->env, f, z);
  const int64_t cols = x->env->cols;
  for (int64_t r = 0; !rc && r < g.h; r++) {
    /* the row's stream cells, in order along it */
    const int64_t row0 = tr_d8_cell(&g, cols, (r + 1) * g.pw + 1);
    int64_t lo = lower_bound(x->prm.cells, x->prm.n, row0);
    for (int64_t c = 0; c < g.w; c++) {
      const int64_t i = (r + 1) * g.pw + c + 1, cell = row0 + c;
      while (lo < x->prm.n && x->prm.cells[lo] < cell) lo++;
      double v = 0;
      if (dir[i] == TR_D8_NODATA) v = TR_BYTE_NODATA;
      else if (lo < x->prm.n && x->prm.cells[lo] == cell) v = x->prm.ord[lo];
      tile[r * g.w + c] = v;
    }
  }
  if (!rc) rc = x->env->put(x->env, f, tile);
  free(dir);
  free(tile);
  return rc;
}

static void order_destroy(void *user, void *state) {
  (void)user;
  free(state);
}

static int order_init(tr_aap_program *p, tr_graph_env *env, const void *params) {
  order_ctx *x = calloc(1, sizeof *x);
  if (!x) return -1;
  x->env = env;
  memcpy(&x->prm, params, sizeof x->prm);
  tr_d8_lut_init(&x->lut, x->prm.encoding);
  memset(p, 0, sizeof *p);
  p->value_size = sizeof(int32_t);
  p->user = x;
  p->peval = order_peval;
  p->inceval = order_inceval;
  p->assemble = order_assemble;
  p->destroy = order_destroy;
  p->aggr = tr_basin_label_max; /* never used: no messages */
  p->assemble_parallel = 1;
  return 0;
}

/* state: nothing per cell (1 byte per perimeter cell keeps the runner's plan
 * honest); a round (Assemble) holds a direction byte and a double per cell */
/* --ft replay's invariant of Assemble's tile: orders as d8_up's (flow_check.c) */
static int64_t order_check_tile(void *user, const tr_aap_frag *f, const void *state, const void *cells) {
  (void)user, (void)state;
  const tr_up_params order = {.product = TR_UP_ORDER};
  return tr_up_check_tile(&order, f->rows * f->cols, cells);
}

static const tr_graph_body body_order_cells = {.name = "d8_order_cells",
                                               .init = order_init,
                                               .release = tr_graph_release_user,
                                               .state = TR_STATE_PERIMETER(1, 0, 9),
                                               .msg_bytes = sizeof(int32_t),
    .state_bytes = 1,
    .check_tile = order_check_tile};

const tr_graph_program tr_program_d8_order_cells = {
    .name = "d8_order_cells",
    .cell_type = GDT_Float64,
    .params_size = sizeof(tr_order_params),
    .bodies = {&body_order_cells},
};
