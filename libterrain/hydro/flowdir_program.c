/*
 * flowdir_program.c - D8 directions with Barnes (2014) flats as a graph
 * program (PEval, IncEval, Assemble, componentwise min): the row "flowdir" of
 * the program table. The distances and the rule are in flowdir.h.
 *
 * State of a fragment, sparse so that memory follows the flats: a bitmap of
 * its flat cells with a running count per 64-bit word (a cell's slot among the
 * flat cells is the count before its word plus a popcount), dl and dh per flat
 * cell by slot, and dl and dh of the halo ring as received. Drains have dl = 0
 * and dh = +inf without storage. About 8 bytes per flat cell plus 0.2 bytes per
 * cell; elevations are not kept: each round borrows the filled DEM's padded
 * window from the graph runner's tile store.
 *
 * PEval: classify, seed dl = 1 on flat cells next to an equal-elevation drain
 * of the tile and dh = 0 on flat cells next to higher terrain, breadth-first
 * search inside the tile. Emit (dl, dh) of flat perimeter cells where either
 * is finite, and (0, +inf) of draining perimeter cells that have an
 * equal-elevation halo neighbour (that neighbour's fragment cannot tell a
 * drain from a flat cell: it needs two cells of halo).
 * IncEval: lower the halo ring from the snapshot; each halo cell that fell
 * lowers its equal-elevation flat tile neighbours to its value + 1, and those
 * seed the search again (seeds sorted by value and merged with the FIFO, so
 * cells leave in distance order). Emit flat perimeter cells that fell.
 * Assemble: every cell's code (D8 rule, or the flat rule of flowdir.h).
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "d8.h"
#include "flowdir.h"
#include "graph.h"

#define INF INT32_MAX

typedef struct {
  int32_t dl, dh;
} fd_value;

typedef struct {
  tr_graph_env *env;
  tr_flowdir_params prm;
} fd_ctx;

typedef struct {
  int64_t h, w, pw;
  uint64_t *bits;     /* flat tile cells, bit (r - 1) * w + (c - 1) */
  uint32_t *rank;     /* flat cells in the words before */
  int32_t *dl, *dh;   /* per flat cell, by slot */
  int32_t *ring_dl, *ring_dh; /* the halo ring, by ring_at() */
} fd_state;

typedef struct {
  uint32_t p; /* padded index */
  int32_t v;
} qent;

typedef struct {
  qent *a;
  size_t n, cap;
  int oom;
} qvec;

static void qpush(qvec *q, uint32_t p, int32_t v) {
  if (q->n == q->cap) {
    size_t cap = q->cap ? 2 * q->cap : 1024;
    qent *a = realloc(q->a, cap * sizeof *a);
    if (!a) {
      q->oom = 1;
      return;
    }
    q->a = a;
    q->cap = cap;
  }
  q->a[q->n].p = p;
  q->a[q->n].v = v;
  q->n++;
}

static int qent_cmp(const void *a, const void *b) {
  const qent *x = a, *y = b;
  if (x->v != y->v) return x->v < y->v ? -1 : 1;
  return x->p < y->p ? -1 : x->p > y->p;
}

/* ---- state access ------------------------------------------------------------------- */

static inline int in_tile(const fd_state *s, int64_t r, int64_t c) { return r >= 1 && r <= s->h && c >= 1 && c <= s->w; }

static inline int64_t tidx(const fd_state *s, int64_t r, int64_t c) { return (r - 1) * s->w + (c - 1); }

static inline int is_flat(const fd_state *s, int64_t t) { return (int)((s->bits[t >> 6] >> (t & 63)) & 1u); }

static inline int64_t slot_of(const fd_state *s, int64_t t) {
  return (int64_t)s->rank[t >> 6] + __builtin_popcountll(s->bits[t >> 6] & ((UINT64_C(1) << (t & 63)) - 1));
}

/* Halo ring position of padded cell (r, c) outside the tile. */
static inline int64_t ring_at(const fd_state *s, int64_t r, int64_t c) {
  if (r == 0) return c;
  if (r == s->h + 1) return s->pw + c;
  if (c == 0) return 2 * s->pw + (r - 1);
  return 2 * s->pw + s->h + (r - 1);
}

/* A valid cell with eight valid neighbours none lower (padded index p). */
static int flat_cell(const float *Z, int64_t p, int64_t pw) {
  const float z = Z[p];
  if (isnan(z)) return 0;
  for (int k = 1; k <= 8; k++) {
    const float n = Z[p + tr_d8_drow[k] * pw + tr_d8_dcol[k]];
    if (isnan(n) || n < z) return 0;
  }
  return 1;
}

static void state_free(fd_state *s) {
  if (!s) return;
  free(s->bits);
  free(s->rank);
  free(s->dl);
  free(s->dh);
  free(s->ring_dl);
  free(s->ring_dh);
  free(s);
}

/* Classifies the tile and allocates the state; NULL when out of memory. */
static fd_state *state_new(const tr_aap_frag *f, const float *Z) {
  fd_state *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->h = f->rows;
  s->w = f->cols;
  s->pw = f->cols + 2;
  const int64_t n = s->h * s->w, nwords = (n + 63) / 64, nring = 2 * s->pw + 2 * s->h;
  s->bits = calloc((size_t)nwords, sizeof *s->bits);
  s->rank = malloc((size_t)nwords * sizeof *s->rank);
  s->ring_dl = malloc((size_t)nring * sizeof(int32_t));
  s->ring_dh = malloc((size_t)nring * sizeof(int32_t));
  if (!s->bits || !s->rank || !s->ring_dl || !s->ring_dh) {
    state_free(s);
    return NULL;
  }
  for (int64_t r = 1; r <= s->h; r++)
    for (int64_t c = 1; c <= s->w; c++)
      if (flat_cell(Z, r * s->pw + c, s->pw)) {
        const int64_t t = tidx(s, r, c);
        s->bits[t >> 6] |= UINT64_C(1) << (t & 63);
      }
  uint32_t acc = 0;
  for (int64_t i = 0; i < nwords; i++) {
    s->rank[i] = acc;
    acc += (uint32_t)__builtin_popcountll(s->bits[i]);
  }
  s->dl = malloc(((size_t)acc + 1) * sizeof(int32_t));
  s->dh = malloc(((size_t)acc + 1) * sizeof(int32_t));
  if (!s->dl || !s->dh) {
    state_free(s);
    return NULL;
  }
  for (uint32_t i = 0; i < acc; i++) s->dl[i] = s->dh[i] = INF;
  for (int64_t i = 0; i < nring; i++) s->ring_dl[i] = s->ring_dh[i] = INF;
  return s;
}

/* ---- breadth-first search ------------------------------------------------------------- */

/* Lowers field F (dl or dh, by slot) from the seeds (sorted by value) through
 * equal-elevation flat tile cells. Returns cells settled, or -1 when out of
 * memory or a distance would pass INT32_MAX - 1. */
static int64_t bfs(const fd_state *s, const float *Z, int32_t *F, const qvec *seeds, qvec *fifo) {
  size_t si = 0, fh = 0;
  int64_t work = 0;
  fifo->n = 0;
  for (;;) {
    qent e;
    if (si < seeds->n && (fh >= fifo->n || seeds->a[si].v <= fifo->a[fh].v)) e = seeds->a[si++];
    else if (fh < fifo->n) e = fifo->a[fh++];
    else break;
    const int64_t r = e.p / s->pw, c = e.p % s->pw;
    if (F[slot_of(s, tidx(s, r, c))] < e.v) continue; /* lowered since it was queued */
    if (e.v >= INF - 1) return -1;
    work++;
    const float z = Z[e.p];
    for (int k = 1; k <= 8; k++) {
      const int64_t rr = r + tr_d8_drow[k], cc = c + tr_d8_dcol[k];
      if (!in_tile(s, rr, cc)) continue;
      const int64_t t = tidx(s, rr, cc);
      if (!is_flat(s, t) || Z[rr * s->pw + cc] != z) continue;
      const int64_t sl = slot_of(s, t);
      if (e.v + 1 < F[sl]) {
        F[sl] = e.v + 1;
        qpush(fifo, (uint32_t)(rr * s->pw + cc), e.v + 1);
      }
    }
    if (fifo->oom) return -1;
  }
  return work;
}

/* ---- the program --------------------------------------------------------------------- */

/* Visits each perimeter cell of the tile once, in row-major order. */
#define FOR_PERIMETER(s, r, c, ...)                                                   \
  for (int64_t r = 1; r <= (s)->h; r++) {                                             \
    const int64_t step_ = (r == 1 || r == (s)->h || (s)->w == 1) ? 1 : (s)->w - 1;     \
    for (int64_t c = 1; c <= (s)->w; c += step_) __VA_ARGS__                          \
  }

static int emit(tr_aap_round *rd, const fd_ctx *x, const tr_aap_frag *f, int64_t r, int64_t c, int32_t dl,
                int32_t dh) {
  const fd_value v = {dl, dh};
  return tr_aap_emit(rd, (f->row0 + r - 1) * x->env->cols + (f->col0 + c - 1), &v);
}

static int fd_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  fd_ctx *x = user;
  float *Z = tr_graph_window(x->env, f);
  if (!Z) return -1;
  fd_state *s = state_new(f, Z);
  qvec sl = {0}, sh = {0}, fifo = {0};
  int rc = s ? 0 : -1;
  const int64_t pw = f->cols + 2;
  for (int64_t r = 1; !rc && r <= f->rows; r++)
    for (int64_t c = 1; c <= f->cols; c++) {
      const int64_t t = tidx(s, r, c);
      if (!is_flat(s, t)) continue;
      const int64_t p = r * pw + c, slot = slot_of(s, t);
      const float z = Z[p];
      int to_drain = 0, higher = 0;
      for (int k = 1; k <= 8; k++) {
        const int64_t rr = r + tr_d8_drow[k], cc = c + tr_d8_dcol[k];
        const float n = Z[rr * pw + cc];
        if (n > z) higher = 1;
        else if (n == z && in_tile(s, rr, cc) && !is_flat(s, tidx(s, rr, cc))) to_drain = 1;
      }
      if (to_drain) {
        s->dl[slot] = 1;
        qpush(&sl, (uint32_t)p, 1);
      }
      if (higher) {
        s->dh[slot] = 0;
        qpush(&sh, (uint32_t)p, 0);
      }
    }
  if (!rc && (sl.oom || sh.oom)) rc = -1;
  int64_t w1 = rc ? -1 : bfs(s, Z, s->dl, &sl, &fifo);
  int64_t w2 = w1 < 0 ? -1 : bfs(s, Z, s->dh, &sh, &fifo);
  if (w2 < 0) rc = -1;
  else tr_aap_add_work(rd, w1 + w2);
  if (!rc) {
    FOR_PERIMETER(s, r, c, {
      if (rc) break;
      const int64_t t = tidx(s, r, c), p = r * pw + c;
      if (is_flat(s, t)) {
        const int64_t slot = slot_of(s, t);
        if (s->dl[slot] < INF || s->dh[slot] < INF) rc = emit(rd, x, f, r, c, s->dl[slot], s->dh[slot]);
      } else if (!isnan(Z[p])) {
        /* a drain: tell the fragments around whose cells lie level with it */
        int level = 0;
        for (int k = 1; k <= 8 && !level; k++) {
          const int64_t rr = r + tr_d8_drow[k], cc = c + tr_d8_dcol[k];
          level = !in_tile(s, rr, cc) && Z[rr * pw + cc] == Z[p];
        }
        if (level) rc = emit(rd, x, f, r, c, 0, INF);
      }
    })
  }
  free(sl.a);
  free(sh.a);
  free(fifo.a);
  tr_graph_window_done(x->env, f, Z);
  *state = s;
  return rc;
}

static int fd_inceval(void *user, const tr_aap_frag *f, void *state, int64_t n, const int64_t *cells,
                      const void *values, tr_aap_round *rd) {
  fd_ctx *x = user;
  fd_state *s = state;
  const int64_t pw = s->pw, nper = (s->h > 1 && s->w > 1) ? 2 * (s->h + s->w) - 4 : s->h * s->w;
  fd_value *old = malloc((size_t)nper * sizeof *old);
  float *Z = old ? tr_graph_window(x->env, f) : NULL;
  if (!Z) {
    free(old);
    return -1;
  }
  int64_t k = 0;
  FOR_PERIMETER(s, r, c, {
    const int64_t t = tidx(s, r, c);
    fd_value v = {INF, INF};
    if (is_flat(s, t)) {
      const int64_t slot = slot_of(s, t);
      v.dl = s->dl[slot];
      v.dh = s->dh[slot];
    }
    old[k++] = v;
  })
  qvec sl = {0}, sh = {0}, fifo = {0};
  const fd_value *vals = values;
  for (int64_t m = 0; m < n; m++) {
    const int64_t pr = cells[m] / x->env->cols - f->row0 + 1, pc = cells[m] % x->env->cols - f->col0 + 1;
    if (in_tile(s, pr, pc)) continue; /* not a halo cell (never sent here) */
    const int64_t ri = ring_at(s, pr, pc);
    const fd_value v = vals[m];
    const int fell_l = v.dl < s->ring_dl[ri], fell_h = v.dh < s->ring_dh[ri];
    if (fell_l) s->ring_dl[ri] = v.dl;
    if (fell_h) s->ring_dh[ri] = v.dh;
    if (!fell_l && !fell_h) continue;
    const float z = Z[pr * pw + pc];
    for (int d = 1; d <= 8; d++) {
      const int64_t rr = pr + tr_d8_drow[d], cc = pc + tr_d8_dcol[d];
      if (!in_tile(s, rr, cc)) continue;
      const int64_t t = tidx(s, rr, cc);
      if (!is_flat(s, t) || Z[rr * pw + cc] != z) continue;
      const int64_t slot = slot_of(s, t);
      const uint32_t p = (uint32_t)(rr * pw + cc);
      if (fell_l && v.dl + 1 < s->dl[slot]) {
        s->dl[slot] = v.dl + 1;
        qpush(&sl, p, v.dl + 1);
      }
      if (fell_h && v.dh + 1 < s->dh[slot]) {
        s->dh[slot] = v.dh + 1;
        qpush(&sh, p, v.dh + 1);
      }
    }
  }
  int rc = (sl.oom || sh.oom) ? -1 : 0;
  if (!rc) {
    qsort(sl.a, sl.n, sizeof *sl.a, qent_cmp);
    qsort(sh.a, sh.n, sizeof *sh.a, qent_cmp);
    const int64_t w1 = bfs(s, Z, s->dl, &sl, &fifo);
    const int64_t w2 = w1 < 0 ? -1 : bfs(s, Z, s->dh, &sh, &fifo);
    if (w2 < 0) rc = -1;
    else tr_aap_add_work(rd, w1 + w2);
  }
  k = 0;
  if (!rc) {
    FOR_PERIMETER(s, r, c, {
      const fd_value o = old[k++];
      const int64_t t = tidx(s, r, c);
      if (!rc && is_flat(s, t)) {
        const int64_t slot = slot_of(s, t);
        if (s->dl[slot] < o.dl || s->dh[slot] < o.dh) rc = emit(rd, x, f, r, c, s->dl[slot], s->dh[slot]);
      }
    })
  }
  free(sl.a);
  free(sh.a);
  free(fifo.a);
  free(old);
  tr_graph_window_done(x->env, f, Z);
  return rc;
}

/* dl and dh of padded cell (r, c), a flat tile cell or a halo cell. */
static fd_value value_at(const fd_state *s, int64_t r, int64_t c) {
  fd_value v;
  if (in_tile(s, r, c)) {
    const int64_t slot = slot_of(s, tidx(s, r, c));
    v.dl = s->dl[slot];
    v.dh = s->dh[slot];
  } else {
    const int64_t ri = ring_at(s, r, c);
    v.dl = s->ring_dl[ri];
    v.dh = s->ring_dh[ri];
  }
  return v;
}

/* The direction of flat tile cell (r, c) (flowdir.h), 0 when it has none. */
static int flat_dir(const fd_state *s, const float *Z, int64_t r, int64_t c) {
  const int64_t pw = s->pw, p = r * pw + c;
  if (s->dl[slot_of(s, tidx(s, r, c))] == INF) return 0;
  const float z = Z[p];
  for (int i = 0; i < 8; i++) {
    const int k = tr_d8_order[i];
    const int64_t rr = r + tr_d8_drow[k], cc = c + tr_d8_dcol[k];
    if (Z[rr * pw + cc] != z) continue;
    if (in_tile(s, rr, cc) ? !is_flat(s, tidx(s, rr, cc)) : s->ring_dl[ring_at(s, rr, cc)] == 0) return k;
  }
  int best = 0;
  int64_t best_key = INT64_MAX;
  for (int i = 0; i < 8; i++) {
    const int k = tr_d8_order[i];
    const int64_t rr = r + tr_d8_drow[k], cc = c + tr_d8_dcol[k];
    if (Z[rr * pw + cc] != z) continue;
    const fd_value v = value_at(s, rr, cc);
    if (v.dl == INF) continue;
    const int64_t key = 2 * (int64_t)v.dl - (v.dh == INF ? 0 : v.dh);
    if (key < best_key) {
      best_key = key;
      best = k;
    }
  }
  return best;
}

static int fd_assemble(void *user, const tr_aap_frag *f, void *state) {
  fd_ctx *x = user;
  fd_state *s = state;
  if (!s) return -1;
  const int64_t h = f->rows, w = f->cols, pw = w + 2;
  int16_t *tile = malloc((size_t)(h * w) * sizeof *tile);
  float *Z = tile ? tr_graph_window(x->env, f) : NULL;
  if (!Z) {
    free(tile);
    return -1;
  }
  const tr_dir_encoding enc = (tr_dir_encoding)x->prm.encoding;
  for (int64_t r = 1; r <= h; r++) {
    double fact[9];
    tr_d8_row_fact(&x->prm.geom, f->row0 + r - 1, fact);
    for (int64_t c = 1; c <= w; c++) {
      float slope;
      int k = tr_d8_cell(Z + r * pw + c, pw, fact, &slope);
      if (k == 0) k = flat_dir(s, Z, r, c);
      tile[(r - 1) * w + (c - 1)] = (int16_t)tr_d8_encode(enc, k < 0 ? 0 : k);
    }
  }
  tr_graph_window_done(x->env, f, Z);
  const int rc = x->env->put(x->env, f, tile);
  free(tile);
  return rc;
}

static void fd_destroy(void *user, void *state) {
  (void)user;
  state_free(state);
}

static int fd_min(void *user, void *acc, const void *value) {
  (void)user;
  fd_value a, v;
  memcpy(&a, acc, sizeof a);
  memcpy(&v, value, sizeof v);
  int changed = 0;
  if (v.dl < a.dl) a.dl = v.dl, changed = 1;
  if (v.dh < a.dh) a.dh = v.dh, changed = 1;
  if (changed) memcpy(acc, &a, sizeof a);
  return changed;
}

static int fd_init(tr_aap_program *p, tr_graph_env *env, const void *params) {
  fd_ctx *x = calloc(1, sizeof *x);
  if (!x) return -1;
  x->env = env;
  memcpy(&x->prm, params, sizeof x->prm);
  memset(p, 0, sizeof *p);
  p->value_size = sizeof(fd_value);
  p->user = x;
  p->peval = fd_peval;
  p->inceval = fd_inceval;
  p->assemble = fd_assemble;
  p->destroy = fd_destroy;
  p->aggr = fd_min;
  return 0;
}

static void fd_release(tr_aap_program *p) {
  free(p->user);
  p->user = NULL;
}

const tr_graph_program tr_program_flowdir = {"flowdir", GDT_Int16, sizeof(tr_flowdir_params), fd_init, fd_release};
