/*
 * d8_len_program.c - flow lengths and grid order upstream over D8
 * directions, as a graph program: the row "d8_len" of the program table
 * (flowgraph --plen, --tlen, --gord: TauDEM gridnet without a mask or
 * outlets).
 *
 * A cell with a direction, over the neighbours n_k (k = 1..8, E, NE, N ...
 * SE) that drain into it, in that order:
 *   plen(c) = max over k of plen(n_k) + L     (0 without donors)
 *   tlen(c) = sum over k of (tlen(n_k) + L)   (Float32, added in k order)
 *   gord(c) = Strahler over the donors' gord: the largest a1, plus one
 *             when the second largest a2 equals it (1 without donors)
 * where L is the length of the donor's step (dx, dy or the diagonal) as
 * TauDEM's Float32 dist table has it for the row of c (metres per row on
 * geographic grids, hydro/flowdir.h's tr_dinf_row_dxdy). Cells without a
 * direction (nodata, a pit) are nodata (-1) and give nothing. A cell is
 * computed once, when every donor is final, always in the same order: the
 * bytes do not depend on the tiling, the thread or rank count, the schedule,
 * --mem or --ft.
 *
 * State of a fragment over its padded window: the direction, plen, tlen,
 * gord and whether the cell is final. PEval: Kahn's order inside the tile
 * from the cells whose donors are all final; a perimeter cell draining into
 * a halo cell with a direction is emitted once, final (f_aggr keeps the
 * first copy). IncEval: a halo donor's values are set, which may make its
 * receiver ready. Values only go from unknown to final: monotone. A cell
 * still unknown at Assemble lies on or below a cycle of directions: the run
 * fails naming it, as the accumulation does.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "d8_codes.h"
#include "dinf.h"
#include "flowdir.h"
#include "graph.h"

typedef struct {
  float plen, tlen;
  int32_t gord;
} dl_msg;

typedef struct {
  tr_graph_env *env;
  tr_d8_len_params prm;
  tr_d8_lut lut;
} dl_ctx;

typedef struct {
  int64_t n;
  int8_t *dir; /* neighbour index 0..7 (TauDEM's k - 1), or a TR_D8_* marker */
  float *plen, *tlen;
  int16_t *gord;
  uint8_t *fin; /* 1: final */
} dl_state;

typedef struct {
  const tr_aap_frag *f;
  int64_t h, w, pw;
  int64_t off[9]; /* neighbour k (1..8) */
  float *len;     /* TauDEM's dist: padded row r's step k at len[9 r + k] */
} dl_round;

#define BACK(k) ((k) + 4 > 8 ? (k)-4 : (k) + 4)

static inline int in_tile(const dl_round *g, int64_t i) {
  const int64_t r = i / g->pw, c = i % g->pw;
  return r >= 1 && r <= g->h && c >= 1 && c <= g->w;
}

static inline int64_t cell_of(const dl_round *g, int64_t cols, int64_t i) {
  return (i / g->pw - 1 + g->f->row0) * cols + (i % g->pw - 1 + g->f->col0);
}

static inline int64_t index_of(const dl_round *g, int64_t cols, int64_t cell) {
  return (cell / cols - g->f->row0 + 1) * g->pw + (cell % cols - g->f->col0 + 1);
}

static void dl_destroy(void *user, void *state) {
  (void)user;
  dl_state *s = state;
  if (!s) return;
  free(s->dir);
  free(s->plen);
  free(s->tlen);
  free(s->gord);
  free(s->fin);
  free(s);
}

static int round_begin(const dl_ctx *x, const tr_aap_frag *f, dl_round *w) {
  memset(w, 0, sizeof *w);
  w->f = f;
  w->h = f->rows;
  w->w = f->cols;
  w->pw = f->cols + 2;
  for (int k = 1; k <= 8; k++) w->off[k] = tr_dinf_nrow[k] * w->pw + tr_dinf_ncol[k];
  const int64_t nr = f->rows + 2;
  w->len = malloc((size_t)nr * 9 * sizeof *w->len);
  if (!w->len) return -1;
  for (int64_t r = 0; r < nr; r++) {
    double dx, dy;
    tr_dinf_row_dxdy(&x->prm.geom, x->env->rows, f->row0 + r - 1, &dx, &dy);
    w->len[9 * r] = 0.0f;
    for (int k = 1; k <= 8; k++) {
      const double dc = tr_dinf_ncol[k] * dx, dr = tr_dinf_nrow[k] * dy;
      w->len[9 * r + k] = (float)sqrt(dc * dc + dr * dr);
    }
  }
  return 0;
}

static void round_end(dl_round *w) { free(w->len); }

/* Does padded cell n drain into its neighbour in direction k from it? */
static inline int drains(const dl_state *s, int64_t n, int k) { return s->dir[n] >= 0 && s->dir[n] + 1 == k; }

/* Are all the donors of cell i final? */
static int ready(const dl_state *s, const dl_round *w, int64_t i) {
  for (int k = 1; k <= 8; k++) {
    const int64_t n = i + w->off[k];
    if (drains(s, n, BACK(k)) && !s->fin[n]) return 0;
  }
  return 1;
}

/* Finishes cell i from its donors (all final): TauDEM gridnet's algebra. */
static void finish(dl_state *s, const dl_round *w, int64_t i) {
  const float *len = w->len + 9 * (i / w->pw);
  float plen = 0.0f, tlen = 0.0f;
  int a1 = 0, a2 = 0;
  for (int k = 1; k <= 8; k++) {
    const int64_t n = i + w->off[k];
    if (!drains(s, n, BACK(k))) continue;
    const int g = s->gord[n];
    if (g >= a1) {
      a2 = a1;
      a1 = g;
    } else if (g > a2)
      a2 = g;
    const float l = len[s->dir[n] + 1];
    const float ld = s->plen[n] + l;
    tlen += s->tlen[n] + l;
    if (ld > plen) plen = ld;
  }
  s->plen[i] = plen;
  s->tlen[i] = tlen;
  s->gord[i] = (int16_t)(a2 + 1 > a1 ? a2 + 1 : a1);
  s->fin[i] = 1;
}

/* The tile cell that cell i drains into, made ready by i: queued. */
static int64_t wake(const dl_state *s, const dl_round *w, int64_t i, int64_t *q, int64_t nq) {
  if (s->dir[i] < 0) return nq;
  const int64_t r = i + w->off[s->dir[i] + 1];
  if (in_tile(w, r) && s->dir[r] >= 0 && !s->fin[r] && ready(s, w, r)) q[nq++] = r;
  return nq;
}

static int drain(const dl_ctx *x, dl_state *s, const dl_round *w, int64_t *q, int64_t nq, tr_aap_round *rd) {
  int64_t work = 0;
  while (nq > 0) {
    const int64_t i = q[--nq];
    if (s->fin[i]) continue;
    finish(s, w, i);
    work++;
    nq = wake(s, w, i, q, nq);
    const int64_t r = i + w->off[s->dir[i] + 1];
    if (!in_tile(w, r) && s->dir[r] >= 0) {
      const dl_msg m = {s->plen[i], s->tlen[i], s->gord[i]};
      if (tr_aap_emit(rd, cell_of(w, x->env->cols, i), &m)) return -1;
    }
  }
  tr_aap_add_work(rd, work);
  return 0;
}

static int dl_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  dl_ctx *x = user;
  const int64_t n = (f->rows + 2) * (f->cols + 2);
  dl_state *s = calloc(1, sizeof *s);
  *state = s;
  if (!s) return -1;
  s->n = n;
  s->dir = malloc((size_t)n);
  s->plen = calloc((size_t)n, sizeof *s->plen);
  s->tlen = calloc((size_t)n, sizeof *s->tlen);
  s->gord = calloc((size_t)n, sizeof *s->gord);
  s->fin = calloc((size_t)n, 1);
  if (!s->dir || !s->plen || !s->tlen || !s->gord || !s->fin) return -1;
  dl_round w;
  memset(&w, 0, sizeof w); /* round_end after a failure before round_begin */
  int64_t *q = malloc((size_t)(f->rows * f->cols) * sizeof *q);
  if (!q || round_begin(x, f, &w)) {
    free(q);
    round_end(&w);
    return -1;
  }
  float *a = tr_graph_window(x->env, f);
  int rc = a ? 0 : -1;
  for (int64_t i = 0; a && i < n; i++) {
    const int d = tr_d8_lut_decode(&x->lut, a[i]);
    if (d == TR_D8_BAD && in_tile(&w, i) && !rc) {
      const int64_t cell = cell_of(&w, x->env->cols, i);
      rc = tr_graph_fail(x->env, f, TR_EINPUT, "'%s': cell (row %lld, col %lld) holds %g, not a %s direction code",
                         x->prm.src, (long long)(cell / x->env->cols), (long long)(cell % x->env->cols), (double)a[i],
                         tr_d8_encoding_name(x->prm.encoding));
    }
    s->dir[i] = (int8_t)(d < 0 ? TR_D8_NODATA : d); /* a pit gives nothing, as nodata */
  }
  if (a) tr_graph_window_done(x->env, f, a);
  if (!rc && (tr_graph_keep(x->env, f, &s->dir, (size_t)n, NULL) ||
              tr_graph_keep(x->env, f, &s->plen, (size_t)n * sizeof *s->plen, NULL) ||
              tr_graph_keep(x->env, f, &s->tlen, (size_t)n * sizeof *s->tlen, NULL) ||
              tr_graph_keep(x->env, f, &s->gord, (size_t)n * sizeof *s->gord, NULL) ||
              tr_graph_keep(x->env, f, &s->fin, (size_t)n, NULL)))
    rc = -1;
  int64_t nq = 0;
  for (int64_t r = 1; !rc && r <= f->rows; r++)
    for (int64_t c = 1; c <= f->cols; c++) {
      const int64_t i = r * w.pw + c;
      if (s->dir[i] >= 0 && ready(s, &w, i)) q[nq++] = i;
    }
  if (!rc) rc = drain(x, s, &w, q, nq, rd);
  round_end(&w);
  free(q);
  return rc;
}

static int dl_inceval(void *user, const tr_aap_frag *f, void *state, int64_t n, const int64_t *cells,
                      const void *values, tr_aap_round *rd) {
  dl_ctx *x = user;
  dl_state *s = state;
  dl_round w;
  memset(&w, 0, sizeof w); /* round_end after a failure before round_begin */
  int64_t *q = malloc((size_t)(f->rows * f->cols) * sizeof *q);
  if (!q || round_begin(x, f, &w)) {
    free(q);
    round_end(&w);
    return -1;
  }
  int64_t nq = 0;
  for (int64_t m = 0; m < n; m++) {
    dl_msg v;
    memcpy(&v, (const unsigned char *)values + (size_t)m * sizeof v, sizeof v);
    const int64_t i = index_of(&w, x->env->cols, cells[m]);
    if (s->fin[i] || s->dir[i] < 0) continue; /* a copy of a value already applied */
    s->plen[i] = v.plen;
    s->tlen[i] = v.tlen;
    s->gord[i] = (int16_t)v.gord;
    s->fin[i] = 1;
    nq = wake(s, &w, i, q, nq);
  }
  const int rc = drain(x, s, &w, q, nq, rd);
  round_end(&w);
  free(q);
  return rc;
}

static int dl_assemble(void *user, const tr_aap_frag *f, void *state) {
  dl_ctx *x = user;
  dl_state *s = state;
  if (!s) return -1;
  const int64_t h = f->rows, wd = f->cols, pw = wd + 2;
  float *tile = malloc((size_t)(h * wd) * sizeof *tile);
  if (!tile) return -1;
  for (int64_t r = 1; r <= h; r++)
    for (int64_t c = 1; c <= wd; c++) {
      const int64_t i = r * pw + c;
      float out = (float)TR_D8_LEN_NODATA;
      if (s->dir[i] >= 0 && !s->fin[i]) {
        const int64_t cell = (f->row0 + r - 1) * x->env->cols + f->col0 + c - 1;
        free(tile);
        return tr_graph_fail(x->env, f, TR_EINPUT,
                             "'%s': the flow directions form a cycle: cell (row %lld, col %lld) lies on it or drains "
                             "into it",
                             x->prm.src, (long long)(cell / x->env->cols), (long long)(cell % x->env->cols));
      }
      if (s->dir[i] >= 0)
        out = x->prm.product == TR_D8_PLEN ? s->plen[i] : x->prm.product == TR_D8_TLEN ? s->tlen[i] : (float)s->gord[i];
      tile[(r - 1) * wd + (c - 1)] = out;
    }
  const int rc = x->env->put(x->env, f, tile);
  free(tile);
  return rc;
}

static int dl_first(void *user, void *acc, const void *value) {
  (void)user;
  (void)acc;
  (void)value;
  return 0;
}

static int dl_init(tr_aap_program *p, tr_graph_env *env, const void *params) {
  dl_ctx *x = calloc(1, sizeof *x);
  if (!x) return -1;
  x->env = env;
  memcpy(&x->prm, params, sizeof x->prm);
  tr_d8_lut_init(&x->lut, x->prm.encoding);
  memset(p, 0, sizeof *p);
  p->value_size = sizeof(dl_msg);
  p->user = x;
  p->peval = dl_peval;
  p->inceval = dl_inceval;
  p->assemble = dl_assemble;
  p->destroy = dl_destroy;
  p->aggr = dl_first;
  return 0;
}

/* --ft replay's invariant of Assemble's tile: lengths >= 0, an order >= 1,
 * or nodata. */
static int64_t dl_check_tile(void *user, const tr_aap_frag *f, const void *state, const void *cells) {
  (void)state;
  const dl_ctx *x = user;
  const float lo = x->prm.product == TR_D8_GORD ? 1.0f : 0.0f;
  const float *v = cells;
  int64_t bad = 0;
  for (int64_t i = 0; i < f->rows * f->cols; i++) bad += !(v[i] >= lo || v[i] == (float)TR_D8_LEN_NODATA);
  return bad;
}

/* state: 12 bytes a padded cell (direction, plen, tlen, gord, final) */
static const tr_graph_body body_d8_len = {.name = "d8_len",
                                          .init = dl_init,
                                          .release = tr_graph_release_user,
                                          .state = TR_STATE_PER_CELL(12),
                                          .msg_bytes = sizeof(dl_msg),
                                          .state_bytes = sizeof(dl_state),
                                          .check_tile = dl_check_tile};

const tr_graph_program tr_program_d8_len = {
    .name = "d8_len",
    .cell_type = GDT_Float32,
    .params_size = sizeof(tr_d8_len_params),
    .bodies = {&body_d8_len},
};
