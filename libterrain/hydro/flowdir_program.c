/*
 * flowdir_program.c - D8 directions with Barnes (2014) flats as a graph
 * program (PEval, IncEval, Assemble, componentwise min): the row "flowdir" of
 * the program table. The distances and the rule are in flowdir.h.
 *
 * State of a fragment, sparse so that memory follows the flats: a bitmap of
 * its flat cells with a running count per 64-bit word (a cell's slot among the
 * flat cells is the count before its word plus a popcount), dl and dh per flat
 * cell by slot with a byte saying which neighbours are level with it (so
 * IncEval needs no elevations at all: only PEval and Assemble borrow the
 * filled DEM's padded window from the graph runner's tile store), and dl and
 * dh of the halo ring as received. Drains have dl = 0 and dh = +inf without
 * storage. Distances take 16 bits each (larger ones, on flats more than 65533
 * cells across, go to an overflow map): about 5 bytes per flat cell plus 0.2
 * bytes per cell.
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
 *
 * The body "flowdir_compact" (flowdir's twin: the planner takes it when the
 * per-cell body's state does not fit --mem) is the same program keeping, between
 * rounds, only the flat bitmap (1 bit per cell) and, per perimeter cell, its
 * dl and dh, its level neighbours outside the tile and the halo ring as
 * received (17 bytes per unit of the perimeter): 253 MiB for the 32000 x
 * 32000 DEM of scripts/bench/outofcore (RESULTS.md), where flowdir's state
 * was estimated at 4921 MiB (the pass recorded at b93a4f2). PEval is
 * flowdir's, then drops the rest.
 * IncEval: whatever enters a tile enters at its perimeter, so a halo value
 * that fell seeds the perimeter cells level with it where it beats their
 * kept value, and one search from those seeds alone, over the flat bitmap,
 * gives each perimeter cell min(kept, new), which is its distance from all
 * the seeds so far (a search stops at a perimeter cell whose kept value is no
 * worse: what it leads to is already as low). Interior values are never
 * needed between rounds. Assemble rebuilds the whole state from the filled
 * DEM's window and the final ring with one search from the tile's seeds and
 * the ring's: the least fixed point of the same seeds as flowdir's, so the
 * same dl, dh and output bytes. The filled DEM is read twice per tile, as by
 * flowdir; rounds read back only the kept arrays when they were spilled.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "d8.h"
#include "dinf.h"
#include "dinf_span.h"
#include "flowdir.h"
#include "graph.h"
#include "tile_ring.h"

#define INF INT32_MAX
/* the direction from neighbour k back to the cell */
#define OPPOSITE(k) ((((k) + 3) % 8) + 1)

typedef struct {
  int32_t dl, dh;
} fd_value;

typedef struct {
  tr_graph_env *env;
  tr_flowdir_params prm;
  int compact; /* flowdir_compact: rebuild the state in every round */
} fd_ctx;

/* One distance per flat cell in 16 bits: values up to DIRECT_MAX directly,
 * INF16 for +inf, BIG16 when the value lives in the overflow table (flats
 * more than 65533 cells across), an open-addressing map slot -> value that
 * is only ever allocated for such flats. */
#define DIRECT_MAX 0xFFFD
#define INF16 0xFFFE
#define BIG16 0xFFFF

typedef struct {
  uint16_t *a;
  uint32_t *key; /* slot + 1; 0 = empty */
  int32_t *val;
  size_t cap, n;
} field;

static int32_t *ovf_find(const field *f, int64_t slot, int insert_key) {
  if (!f->cap) return NULL;
  size_t i = (size_t)((uint64_t)(slot + 1) * UINT64_C(0x9E3779B97F4A7C15) >> 32) & (f->cap - 1);
  for (;; i = (i + 1) & (f->cap - 1)) {
    if (f->key[i] == (uint32_t)(slot + 1)) return &f->val[i];
    if (!f->key[i]) {
      if (!insert_key) return NULL;
      f->key[i] = (uint32_t)(slot + 1);
      return &f->val[i];
    }
  }
}

static int ovf_grow(field *f) {
  const size_t cap = f->cap ? 2 * f->cap : 1024;
  field g = {f->a, calloc(cap, sizeof(uint32_t)), calloc(cap, sizeof(int32_t)), cap, 0};
  if (!g.key || !g.val) {
    free(g.key);
    free(g.val);
    return -1;
  }
  for (size_t i = 0; i < f->cap; i++)
    if (f->key[i]) *ovf_find(&g, (int64_t)f->key[i] - 1, 1) = f->val[i], g.n++;
  free(f->key);
  free(f->val);
  *f = g;
  return 0;
}

static inline int32_t fget(const field *f, int64_t slot) {
  const uint16_t v = f->a[slot];
  if (v <= DIRECT_MAX) return v;
  return v == INF16 ? INF : *ovf_find(f, slot, 0);
}

/* 0, or -1 when the overflow table cannot grow. */
static inline int fset(field *f, int64_t slot, int32_t v) {
  if (v <= DIRECT_MAX) {
    f->a[slot] = (uint16_t)v;
    return 0;
  }
  if (f->a[slot] != BIG16) {
    if (2 * (f->n + 1) > f->cap && ovf_grow(f)) return -1;
    f->n++;
  }
  *ovf_find(f, slot, 1) = v;
  f->a[slot] = BIG16;
  return 0;
}

static void field_free(field *f) {
  free(f->a);
  free(f->key);
  free(f->val);
}

typedef struct {
  int64_t h, w, pw;
  uint64_t *bits;     /* flat tile cells, bit (r - 1) * w + (c - 1) */
  uint32_t *rank;     /* flat cells in the words before */
  field dl, dh;       /* per flat cell, by slot */
  uint8_t *eq;        /* per flat cell: bit k - 1 set when neighbour k is level with it */
  int32_t *ring_dl, *ring_dh; /* the halo ring, by ring_at() */
  size_t nflat;       /* flat cells */
  /* flowdir_compact, per tile perimeter cell (ring order, per_at): */
  uint8_t *per_eq;           /* its level neighbours outside the tile */
  int32_t *per_dl, *per_dh;  /* its dl and dh so far (+inf off the flats) */
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

/* Set bits of x; the portable x86-64 target has no popcnt instruction, and
 * the compiler's fallback is a library call. */
static inline int64_t popcount64(uint64_t x) {
  x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
  x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
  x = (x + (x >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
  return (int64_t)((x * UINT64_C(0x0101010101010101)) >> 56);
}

static inline int64_t slot_of(const fd_state *s, int64_t t) {
  return (int64_t)s->rank[t >> 6] + popcount64(s->bits[t >> 6] & ((UINT64_C(1) << (t & 63)) - 1));
}

/* The slots of the flat tile neighbours of flat tile cell (r, c) with slot
 * me, by direction (-1 for the others): two popcounts for the rows above and
 * below, the rest by counting along the row. */
static inline void nb_slots(const fd_state *s, int64_t r, int64_t c, int64_t me, int64_t nb[9]) {
  /* direction of (dr + 1, dc + 1) */
  static const int dir_at[3][3] = {{4, 3, 2}, {5, 0, 1}, {6, 7, 8}};
  for (int k = 0; k <= 8; k++) nb[k] = -1;
  const int64_t c0 = c > 1 ? c - 1 : 1, c1 = c < s->w ? c + 1 : s->w;
  for (int dr = -1; dr <= 1; dr += 2) {
    const int64_t rr = r + dr;
    if (rr < 1 || rr > s->h) continue;
    int64_t t = tidx(s, rr, c0), sl = slot_of(s, t);
    for (int64_t cc = c0; cc <= c1; cc++, t++) {
      const int f = is_flat(s, t);
      if (f) nb[dir_at[dr + 1][cc - c + 1]] = sl;
      sl += f;
    }
  }
  if (c > 1 && is_flat(s, tidx(s, r, c - 1))) nb[5] = me - 1;
  if (c < s->w && is_flat(s, tidx(s, r, c + 1))) nb[1] = me + 1;
}

/* Halo ring position of padded cell (r, c) outside the tile (tile_ring.h). */
static inline int64_t ring_at(const fd_state *s, int64_t r, int64_t c) { return tr_d8_ring_index(s->h + 2, s->pw, r, c); }

/* Tile perimeter cells in ring order (tile_ring.h), and the ring index of
 * tile cell (r, c) (1-based), or -1 for an inner cell. */
static inline int64_t per_size(const fd_state *s) { return tr_d8_ring_size(s->h, s->w); }

static inline int64_t per_at(const fd_state *s, int64_t r, int64_t c) {
  return tr_d8_ring_index(s->h, s->w, r - 1, c - 1);
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

/* Frees what flowdir_compact rebuilds in every round. */
static void slim(fd_state *s) {
  free(s->rank);
  field_free(&s->dl);
  field_free(&s->dh);
  free(s->eq);
  s->rank = NULL;
  s->eq = NULL;
  memset(&s->dl, 0, sizeof s->dl);
  memset(&s->dh, 0, sizeof s->dh);
}

static void state_free(fd_state *s) {
  if (!s) return;
  slim(s);
  free(s->bits);
  free(s->ring_dl);
  free(s->ring_dh);
  free(s->per_eq);
  free(s->per_dl);
  free(s->per_dh);
  free(s);
}

/* The level masks of the flat cells (by slot) from the padded window Z. */
static void eq_from_z(fd_state *s, const float *Z) {
  uint32_t i = 0;
  for (int64_t r = 1; r <= s->h; r++)
    for (int64_t c = 1; c <= s->w; c++) {
      if (!is_flat(s, tidx(s, r, c))) continue;
      const int64_t p = r * s->pw + c;
      uint8_t m = 0;
      for (int k = 1; k <= 8; k++)
        if (Z[p + tr_d8_drow[k] * s->pw + tr_d8_dcol[k]] == Z[p]) m |= (uint8_t)(1u << (k - 1));
      s->eq[i++] = m;
    }
}

/* rank, dl and dh (all +inf) and eq for the flat bitmap; 0 or -1. */
static int slots_new(fd_state *s) {
  const int64_t nwords = (s->h * s->w + 63) / 64;
  s->rank = malloc((size_t)nwords * sizeof *s->rank);
  if (!s->rank) return -1;
  uint32_t acc = 0;
  for (int64_t i = 0; i < nwords; i++) {
    s->rank[i] = acc;
    acc += (uint32_t)popcount64(s->bits[i]);
  }
  s->nflat = acc;
  s->dl.a = malloc(((size_t)acc + 1) * sizeof(uint16_t));
  s->dh.a = malloc(((size_t)acc + 1) * sizeof(uint16_t));
  s->eq = calloc((size_t)acc + 1, 1);
  if (!s->dl.a || !s->dh.a || !s->eq) return -1;
  /* every byte set, the spare slot too: --ft compares states byte for byte */
  for (uint32_t i = 0; i <= acc; i++) s->dl.a[i] = s->dh.a[i] = INF16;
  return 0;
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
  s->ring_dl = malloc((size_t)nring * sizeof(int32_t));
  s->ring_dh = malloc((size_t)nring * sizeof(int32_t));
  if (!s->bits || !s->ring_dl || !s->ring_dh) {
    state_free(s);
    return NULL;
  }
  for (int64_t r = 1; r <= s->h; r++)
    for (int64_t c = 1; c <= s->w; c++)
      if (flat_cell(Z, r * s->pw + c, s->pw)) {
        const int64_t t = tidx(s, r, c);
        s->bits[t >> 6] |= UINT64_C(1) << (t & 63);
      }
  if (slots_new(s)) {
    state_free(s);
    return NULL;
  }
  /* which neighbours are level: the searches and IncEval then need no elevations */
  eq_from_z(s, Z);
  for (int64_t i = 0; i < nring; i++) s->ring_dl[i] = s->ring_dh[i] = INF;
  return s;
}

/* ---- breadth-first search ------------------------------------------------------------- */

/* The next cell of a search in distance order: the lower of the next seed
 * (seeds sorted by value) and the FIFO's head (values never decrease along
 * it). 0 when both are spent. */
static inline int next_entry(const qvec *seeds, size_t *si, const qvec *fifo, size_t *fh, qent *e) {
  if (*si < seeds->n && (*fh >= fifo->n || seeds->a[*si].v <= fifo->a[*fh].v)) *e = seeds->a[(*si)++];
  else if (*fh < fifo->n) *e = fifo->a[(*fh)++];
  else return 0;
  return 1;
}

/* Lowers field F (dl or dh, by slot) from the seeds (sorted by value) through
 * equal-elevation flat tile cells. Returns cells settled, or -1 when out of
 * memory or a distance would pass INT32_MAX - 1. */
static int64_t bfs(const fd_state *s, field *F, const qvec *seeds, qvec *fifo) {
  size_t si = 0, fh = 0;
  int64_t work = 0;
  fifo->n = 0;
  for (;;) {
    qent e;
    if (!next_entry(seeds, &si, fifo, &fh, &e)) break;
    const int64_t r = e.p / s->pw, c = e.p % s->pw, me = slot_of(s, tidx(s, r, c));
    if (fget(F, me) < e.v) continue; /* lowered since it was queued */
    if (e.v >= INF - 1) return -1;
    work++;
    const unsigned eq = s->eq[me];
    if (!eq) continue;
    int64_t nb[9];
    nb_slots(s, r, c, me, nb);
    for (int k = 1; k <= 8; k++) {
      const int64_t sl = nb[k];
      if (sl < 0 || !((eq >> (k - 1)) & 1u)) continue;
      const int64_t rr = r + tr_d8_drow[k], cc = c + tr_d8_dcol[k];
      if (e.v + 1 < fget(F, sl)) {
        if (fset(F, sl, e.v + 1)) return -1;
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

/* Registers every array of s with the runner, so an out-of-core run may
 * spill them between rounds (graph.h); the overflow tables by their
 * capacity, which grows. 0 or -1. */
static int state_keep(tr_graph_env *env, const tr_aap_frag *f, fd_state *s) {
  const size_t nwords = (size_t)((s->h * s->w + 63) / 64), nring = (size_t)(2 * s->pw + 2 * s->h);
  field *fl[2] = {&s->dl, &s->dh};
  for (int k = 0; k < 2; k++)
    if (tr_graph_keep(env, f, &fl[k]->a, (s->nflat + 1) * sizeof(uint16_t), NULL) ||
        tr_graph_keep(env, f, &fl[k]->key, sizeof(uint32_t), &fl[k]->cap) ||
        tr_graph_keep(env, f, &fl[k]->val, sizeof(int32_t), &fl[k]->cap))
      return -1;
  return tr_graph_keep(env, f, &s->bits, nwords * sizeof *s->bits, NULL) ||
                 tr_graph_keep(env, f, &s->rank, nwords * sizeof *s->rank, NULL) ||
                 tr_graph_keep(env, f, &s->eq, s->nflat + 1, NULL) ||
                 tr_graph_keep(env, f, &s->ring_dl, nring * sizeof(int32_t), NULL) ||
                 tr_graph_keep(env, f, &s->ring_dh, nring * sizeof(int32_t), NULL)
             ? -1
             : 0;
}

/* flowdir_compact: allocates the perimeter's arrays and registers what the
 * rounds keep (not rank, dl, dh and eq, which PEval drops). */
static int compact_keep(tr_graph_env *env, const tr_aap_frag *f, fd_state *s) {
  const size_t nwords = (size_t)((s->h * s->w + 63) / 64), nring = (size_t)(2 * s->pw + 2 * s->h),
               nper = (size_t)per_size(s);
  s->per_eq = calloc(nper, 1);
  s->per_dl = malloc(nper * sizeof(int32_t));
  s->per_dh = malloc(nper * sizeof(int32_t));
  if (!s->per_eq || !s->per_dl || !s->per_dh) return -1;
  return tr_graph_keep(env, f, &s->bits, nwords * sizeof *s->bits, NULL) ||
                 tr_graph_keep(env, f, &s->per_eq, nper, NULL) ||
                 tr_graph_keep(env, f, &s->per_dl, nper * sizeof(int32_t), NULL) ||
                 tr_graph_keep(env, f, &s->per_dh, nper * sizeof(int32_t), NULL) ||
                 tr_graph_keep(env, f, &s->ring_dl, nring * sizeof(int32_t), NULL) ||
                 tr_graph_keep(env, f, &s->ring_dh, nring * sizeof(int32_t), NULL)
             ? -1
             : 0;
}

/* What a drain at padded index p adds to dl: 0, or for "dinf" 1 when it is
 * an outlet (a neighbour NaN: the DEM's edge or next to NoData; flowdir.h). */
static inline int drain_cost(int dinf, const float *Z, int64_t p, int64_t pw) {
  if (!dinf) return 0;
  for (int k = 1; k <= 8; k++)
    if (isnan(Z[p + tr_d8_drow[k] * pw + tr_d8_dcol[k]])) return 1;
  return 0;
}

/* Seeds the two searches from the tile's own cells: dl = 1 on flat cells
 * next to a level drain of the tile (2 for "dinf" when every such drain is
 * an outlet), dh = 0 on flat cells next to higher terrain (in row-major
 * order; sorted by the caller for "dinf"). */
static void seed_tile(fd_state *s, const float *Z, int dinf, qvec *sl, qvec *sh) {
  const int64_t pw = s->pw;
  int64_t slot = 0; /* flat cells come in tile order, so their slots are 0, 1, 2, ... */
  for (int64_t r = 1; r <= s->h; r++)
    /* the row's flat cells by the bits' words: a word's cells off the flats
     * cost one test, not one per cell */
    for (int64_t t = tidx(s, r, 1), end = t + s->w; t < end;) {
      const uint64_t word = s->bits[t >> 6] >> (t & 63);
      if (!word) {
        t = (t | 63) + 1;
        continue;
      }
      t += __builtin_ctzll(word);
      if (t >= end) break;
      const int64_t c = t - (end - s->w) + 1, p = r * pw + c;
      t++;
      const float z = Z[p];
      int to_drain = 0, higher = 0;
      for (int k = 1; k <= 8; k++) {
        const int64_t rr = r + tr_d8_drow[k], cc = c + tr_d8_dcol[k];
        const float n = Z[rr * pw + cc];
        if (n > z) higher = 1;
        else if (n == z && in_tile(s, rr, cc) && !is_flat(s, tidx(s, rr, cc))) {
          const int v = 1 + drain_cost(dinf, Z, rr * pw + cc, pw);
          if (!to_drain || v < to_drain) to_drain = v;
        }
      }
      if (to_drain) {
        s->dl.a[slot] = (uint16_t)to_drain;
        qpush(sl, (uint32_t)p, to_drain);
      }
      if (higher) {
        s->dh.a[slot] = 0;
        qpush(sh, (uint32_t)p, 0);
      }
      slot++;
    }
}

static int fd_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  fd_ctx *x = user;
  float *Z = tr_graph_window(x->env, f);
  if (!Z) return -1;
  fd_state *s = state_new(f, Z);
  qvec sl = {0}, sh = {0}, fifo = {0};
  int rc = s && !(x->compact ? compact_keep : state_keep)(x->env, f, s) ? 0 : -1;
  const int64_t pw = f->cols + 2;
  const int dinf = x->prm.method == TR_FLOWDIR_DINF;
  if (!rc) seed_tile(s, Z, dinf, &sl, &sh);
  if (!rc && (sl.oom || sh.oom)) rc = -1;
  if (!rc && dinf && sl.n) qsort(sl.a, sl.n, sizeof *sl.a, qent_cmp);
  int64_t w1 = rc ? -1 : bfs(s, &s->dl, &sl, &fifo);
  int64_t w2 = w1 < 0 ? -1 : bfs(s, &s->dh, &sh, &fifo);
  if (w2 < 0) rc = -1;
  else tr_aap_add_work(rd, w1 + w2);
  if (!rc) {
    FOR_PERIMETER(s, r, c, {
      if (rc) break;
      const int64_t t = tidx(s, r, c), p = r * pw + c;
      if (is_flat(s, t)) {
        const int64_t slot = slot_of(s, t);
        const int32_t dl = fget(&s->dl, slot), dh = fget(&s->dh, slot);
        if (dl < INF || dh < INF) rc = emit(rd, x, f, r, c, dl, dh);
      } else if (!isnan(Z[p])) {
        /* a drain: tell the fragments around whose cells lie level with it */
        int level = 0;
        for (int k = 1; k <= 8 && !level; k++) {
          const int64_t rr = r + tr_d8_drow[k], cc = c + tr_d8_dcol[k];
          level = !in_tile(s, rr, cc) && Z[rr * pw + cc] == Z[p];
        }
        if (level) rc = emit(rd, x, f, r, c, drain_cost(dinf, Z, p, pw), INF);
      }
    })
  }
  if (!rc && x->compact) {
    /* the perimeter's values and level neighbours outside the tile, then
     * only what the rounds keep */
    FOR_PERIMETER(s, r, c, {
      const int64_t t = tidx(s, r, c), k = per_at(s, r, c);
      s->per_eq[k] = 0;
      s->per_dl[k] = s->per_dh[k] = INF;
      if (!is_flat(s, t)) continue;
      const int64_t slot = slot_of(s, t);
      uint8_t out = 0;
      for (int d = 1; d <= 8; d++)
        if (!in_tile(s, r + tr_d8_drow[d], c + tr_d8_dcol[d])) out |= (uint8_t)(1u << (d - 1));
      s->per_eq[k] = s->eq[slot] & out;
      s->per_dl[k] = fget(&s->dl, slot);
      s->per_dh[k] = fget(&s->dh, slot);
    })
    slim(s);
  }
  free(sl.a);
  free(sh.a);
  free(fifo.a);
  tr_graph_window_done(x->env, f, Z);
  *state = s;
  return rc;
}

/* Applies halo value v of global cell `cell` to the ring: the halo cell's
 * padded position, and which of dl and dh fell (0: neither, or not a halo
 * cell, which is never sent here). */
static int ring_take(fd_state *s, const tr_aap_frag *f, int64_t cols, int64_t cell, fd_value v, int64_t *pr,
                     int64_t *pc, int *fell_l, int *fell_h) {
  *pr = cell / cols - f->row0 + 1;
  *pc = cell % cols - f->col0 + 1;
  if (in_tile(s, *pr, *pc)) return 0;
  const int64_t ri = ring_at(s, *pr, *pc);
  *fell_l = v.dl < s->ring_dl[ri];
  *fell_h = v.dh < s->ring_dh[ri];
  if (*fell_l) s->ring_dl[ri] = v.dl;
  if (*fell_h) s->ring_dh[ri] = v.dh;
  return *fell_l || *fell_h;
}

/* flowdir_compact's IncEval. What enters a tile enters at its perimeter, so
 * a halo value that fell seeds the perimeter cells level with it where it
 * beats their kept value, and one search from those seeds alone over the
 * flat bitmap (dense, dropped after the round) gives every perimeter cell
 * min(kept, new): the distances from the seeds so far and the new ones. A
 * perimeter cell whose kept value is no worse stops the search there: all
 * it leads to is already at least as low. No interior value is needed. */
static int64_t search_new(fd_state *s, int32_t *per, qvec *seeds, qvec *fifo, int32_t *D, uint8_t *fell) {
  if (!seeds->n) return 0;
  const int64_t n = s->h * s->w;
  for (int64_t t = 0; t < n; t++) D[t] = INF;
  qsort(seeds->a, seeds->n, sizeof *seeds->a, qent_cmp);
  for (size_t i = 0; i < seeds->n; i++)
    if (seeds->a[i].v < D[seeds->a[i].p]) D[seeds->a[i].p] = seeds->a[i].v;
  size_t si = 0, fh = 0;
  int64_t work = 0;
  fifo->n = 0;
  for (;;) {
    qent e;
    if (!next_entry(seeds, &si, fifo, &fh, &e)) break;
    const int64_t t = e.p;
    if (D[t] < e.v) continue; /* lowered since it was queued */
    if (e.v >= INF - 1) return -1;
    const int64_t r = t / s->w + 1, c = t % s->w + 1, k = per_at(s, r, c);
    if (k >= 0) {
      if (per[k] <= e.v) continue;
      per[k] = e.v;
      fell[k] = 1;
    }
    work++;
    for (int d = 1; d <= 8; d++) {
      const int64_t rr = r + tr_d8_drow[d], cc = c + tr_d8_dcol[d];
      if (!in_tile(s, rr, cc)) continue;
      const int64_t u = tidx(s, rr, cc);
      /* flat cells next to each other are level (neither is lower) */
      if (!is_flat(s, u) || e.v + 1 >= D[u]) continue;
      D[u] = e.v + 1;
      qpush(fifo, (uint32_t)u, e.v + 1);
    }
    if (fifo->oom) return -1;
  }
  return work;
}

static int fd_inceval_compact(fd_ctx *x, const tr_aap_frag *f, fd_state *s, int64_t n, const int64_t *cells,
                              const fd_value *vals, tr_aap_round *rd) {
  qvec sl = {0}, sh = {0}, fifo = {0};
  for (int64_t m = 0; m < n; m++) {
    const fd_value v = vals[m];
    int64_t pr, pc;
    int fell_l, fell_h;
    if (!ring_take(s, f, x->env->cols, cells[m], v, &pr, &pc, &fell_l, &fell_h)) continue;
    for (int d = 1; d <= 8; d++) {
      const int64_t rr = pr + tr_d8_drow[d], cc = pc + tr_d8_dcol[d];
      if (!in_tile(s, rr, cc) || !is_flat(s, tidx(s, rr, cc))) continue;
      const int64_t k = per_at(s, rr, cc);
      if (!((s->per_eq[k] >> (OPPOSITE(d) - 1)) & 1u)) continue; /* not level with the halo cell */
      const uint32_t t = (uint32_t)tidx(s, rr, cc);
      if (fell_l && v.dl + 1 < s->per_dl[k]) qpush(&sl, t, v.dl + 1);
      if (fell_h && v.dh + 1 < s->per_dh[k]) qpush(&sh, t, v.dh + 1);
    }
  }
  int rc = (sl.oom || sh.oom) ? -1 : 0;
  if (!rc && (sl.n || sh.n)) {
    const int64_t nper = per_size(s);
    int32_t *D = malloc((size_t)(s->h * s->w) * sizeof *D);
    uint8_t *fell = calloc((size_t)nper, 1);
    const int64_t w1 = D && fell ? search_new(s, s->per_dl, &sl, &fifo, D, fell) : -1;
    const int64_t w2 = w1 < 0 ? -1 : search_new(s, s->per_dh, &sh, &fifo, D, fell);
    if (w2 < 0) rc = -1;
    else tr_aap_add_work(rd, w1 + w2);
    FOR_PERIMETER(s, r, c, {
      if (rc) break;
      const int64_t k = per_at(s, r, c);
      if (fell[k]) rc = emit(rd, x, f, r, c, s->per_dl[k], s->per_dh[k]);
    })
    free(D);
    free(fell);
  }
  free(sl.a);
  free(sh.a);
  free(fifo.a);
  return rc;
}

static int fd_inceval(void *user, const tr_aap_frag *f, void *state, int64_t n, const int64_t *cells,
                      const void *values, tr_aap_round *rd) {
  fd_ctx *x = user;
  fd_state *s = state;
  if (x->compact) return fd_inceval_compact(x, f, s, n, cells, values, rd);
  const int64_t pw = s->pw, nper = per_size(s);
  fd_value *old = malloc((size_t)nper * sizeof *old);
  if (!old) return -1;
  int64_t k = 0;
  FOR_PERIMETER(s, r, c, {
    const int64_t t = tidx(s, r, c);
    fd_value v = {INF, INF};
    if (is_flat(s, t)) {
      const int64_t slot = slot_of(s, t);
      v.dl = fget(&s->dl, slot);
      v.dh = fget(&s->dh, slot);
    }
    old[k++] = v;
  })
  qvec sl = {0}, sh = {0}, fifo = {0};
  const fd_value *vals = values;
  for (int64_t m = 0; m < n; m++) {
    const fd_value v = vals[m];
    int64_t pr, pc;
    int fell_l, fell_h;
    if (!ring_take(s, f, x->env->cols, cells[m], v, &pr, &pc, &fell_l, &fell_h)) continue;
    for (int d = 1; d <= 8; d++) {
      const int64_t rr = pr + tr_d8_drow[d], cc = pc + tr_d8_dcol[d];
      if (!in_tile(s, rr, cc)) continue;
      const int64_t t = tidx(s, rr, cc);
      if (!is_flat(s, t)) continue;
      const int64_t slot = slot_of(s, t);
      if (!((s->eq[slot] >> (OPPOSITE(d) - 1)) & 1u)) continue; /* not level with the halo cell */
      const uint32_t p = (uint32_t)(rr * pw + cc);
      if (fell_l && v.dl + 1 < fget(&s->dl, slot)) {
        if (fset(&s->dl, slot, v.dl + 1)) sl.oom = 1;
        qpush(&sl, p, v.dl + 1);
      }
      if (fell_h && v.dh + 1 < fget(&s->dh, slot)) {
        if (fset(&s->dh, slot, v.dh + 1)) sh.oom = 1;
        qpush(&sh, p, v.dh + 1);
      }
    }
  }
  int rc = (sl.oom || sh.oom) ? -1 : 0;
  if (!rc) {
    if (sl.n) qsort(sl.a, sl.n, sizeof *sl.a, qent_cmp);
    if (sh.n) qsort(sh.a, sh.n, sizeof *sh.a, qent_cmp);
    const int64_t w1 = bfs(s, &s->dl, &sl, &fifo);
    const int64_t w2 = w1 < 0 ? -1 : bfs(s, &s->dh, &sh, &fifo);
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
        const int32_t dl = fget(&s->dl, slot), dh = fget(&s->dh, slot);
        if (dl < o.dl || dh < o.dh) rc = emit(rd, x, f, r, c, dl, dh);
      }
    })
  }
  free(sl.a);
  free(sh.a);
  free(fifo.a);
  free(old);
  return rc;
}

/* The direction of flat tile cell (r, c) (flowdir.h), 0 when it has none. */
static int flat_dir(const fd_state *s, int64_t r, int64_t c, int64_t me) {
  if (fget(&s->dl, me) == INF) return 0;
  const unsigned eq = s->eq[me]; /* the level neighbours */
  for (int i = 0; i < 8; i++) {
    const int k = tr_d8_order[i];
    if (!((eq >> (k - 1)) & 1u)) continue;
    const int64_t rr = r + tr_d8_drow[k], cc = c + tr_d8_dcol[k];
    if (in_tile(s, rr, cc) ? !is_flat(s, tidx(s, rr, cc)) : s->ring_dl[ring_at(s, rr, cc)] == 0) return k;
  }
  int best = 0;
  int64_t best_key = INT64_MAX, nb[9];
  nb_slots(s, r, c, me, nb);
  for (int i = 0; i < 8; i++) {
    const int k = tr_d8_order[i];
    if (!((eq >> (k - 1)) & 1u)) continue;
    const int64_t rr = r + tr_d8_drow[k], cc = c + tr_d8_dcol[k];
    fd_value v;
    if (in_tile(s, rr, cc)) {
      v.dl = fget(&s->dl, nb[k]);
      v.dh = fget(&s->dh, nb[k]);
    } else {
      const int64_t ri = ring_at(s, rr, cc);
      v.dl = s->ring_dl[ri];
      v.dh = s->ring_dh[ri];
    }
    if (v.dl == INF) continue;
    const int64_t key = 2 * (int64_t)v.dl - (v.dh == INF ? 0 : v.dh);
    if (key < best_key) {
      best_key = key;
      best = k;
    }
  }
  return best;
}

/* ---- D-infinity (the "dinf" program) ---------------------------------------------------- */

/* The D-infinity angle of flat tile cell (r, c) (slot me, dl finite), TauDEM
 * dinfflowdir's second SET2: its artificial elevation is dl - dh on the
 * cells of a flat that reach higher terrain ("in" the flat: dh finite),
 * and the facets are taken in K order with its rules for a facet with one
 * leg in the flat and one out (real elevations decide whether the leg out
 * is an outlet). -1 when no facet gives a direction (TauDEM then iterates
 * on the artificial surface; the caller decides). */
static float dinf_flat(const fd_state *s, const float *Z, int64_t r, int64_t c, int64_t me, double dx, double dy) {
  int64_t nb[9];
  nb_slots(s, r, c, me, nb);
  int in[9] = {0};
  double e[9] = {0};
  const int32_t dh0 = fget(&s->dh, me);
  e[0] = (double)fget(&s->dl, me) - (dh0 == INF ? 0 : dh0);
  for (int k = 1; k <= 8; k++) {
    const int64_t rr = r + tr_d8_drow[k], cc = c + tr_d8_dcol[k];
    int32_t dl = INF, dh = INF;
    if (in_tile(s, rr, cc)) {
      if (nb[k] >= 0) dl = fget(&s->dl, nb[k]), dh = fget(&s->dh, nb[k]);
    } else {
      const int64_t ri = ring_at(s, rr, cc);
      dl = s->ring_dl[ri];
      dh = s->ring_dh[ri];
    }
    in[k] = dh < INF;
    e[k] = (double)dl - (dh == INF ? 0 : dh);
  }
  /* neighbour k of offset (dr, dc) */
  static const int k_at[3][3] = {{4, 3, 2}, {5, 0, 1}, {6, 7, 8}};
  const double dxx[3] = {0, dx, dy}, dd = sqrt(dx * dx + dy * dy);
  const int64_t pw = s->pw, p = r * pw + c;
  const double a = (double)Z[p];
  /* each facet's slope, where its angle falls and its legs' slopes
   * (tr_dinf_vslope_side): the angle itself only for the facet taken */
  double sk[9], l1[9] = {0}, l2[9] = {0}, smax = 0.0;
  int side[9] = {0};
  int kd = 0, diag_out = 0;
  for (int K = 1; K <= 8; K++) {
    const int k1 = k_at[tr_dinf_e1_row[K] + 1][tr_dinf_e1_col[K] + 1],
              k2 = k_at[tr_dinf_e2_row[K] + 1][tr_dinf_e2_col[K] + 1];
    const double d1 = dxx[tr_dinf_leg1[K]], d2 = dxx[tr_dinf_leg2[K]];
    const double b = (double)Z[p + tr_dinf_e1_row[K] * pw + tr_dinf_e1_col[K]],
                 cz = (double)Z[p + tr_dinf_e2_row[K] * pw + tr_dinf_e2_col[K]];
    if (!in[k1] && !in[k2]) {
      side[K] = tr_dinf_vslope_side(a, b, cz, d1, d2, dd, &sk[K], &l1[K], &l2[K]);
      if (sk[K] >= 0.0) {
        if (b > a) { /* an outlet across the diagonal */
          if (!diag_out) diag_out = 1, kd = K;
        } else { /* a level outlet next to it */
          kd = K;
          break;
        }
      }
    } else if (!in[k1]) {
      if (a >= b) {
        side[K] = 0; /* angle 0 */
        sk[K] = 0.0;
        kd = K;
        break;
      }
      const double a1 = e[0], c1 = e[k2], b1 = a1 > c1 ? a1 : c1;
      side[K] = tr_dinf_vslope_side(a1, b1, c1, d1, d2, dd, &sk[K], &l1[K], &l2[K]);
      if (sk[K] > smax) smax = sk[K], kd = K;
    } else if (!in[k2]) {
      if (a >= cz) {
        if (!diag_out) {
          side[K] = 2; /* the diagonal: atan2(d2, d1) */
          sk[K] = 0.0;
          kd = K;
          diag_out = 1;
        }
      } else {
        const double a1 = e[0], b1 = e[k1], c1 = a1 > b1 ? a1 : b1;
        side[K] = tr_dinf_vslope_side(a1, b1, c1, d1, d2, dd, &sk[K], &l1[K], &l2[K]);
        if (sk[K] > smax) smax = sk[K], kd = K;
      }
    } else {
      side[K] = tr_dinf_vslope_side(e[0], e[k1], e[k2], d1, d2, dd, &sk[K], &l1[K], &l2[K]);
      if (sk[K] > smax) smax = sk[K], kd = K;
    }
  }
  if (!kd) return -1.0f;
  const float t = tr_dinf_facet_angle(kd, side[kd], l1[kd], l2[kd], dxx[tr_dinf_leg1[kd]], dxx[tr_dinf_leg2[kd]]);
  return t >= 0.0f ? t : -1.0f;
}

/* The angle pointing at neighbour k (1 = E .. 8 = SE) alone: an edge of
 * the facets, so all the flow goes there (on a grid with dx != dy the
 * diagonals are not multiples of pi / 4). */
static float dinf_toward(int k, double dx, double dy) {
  static const int facet[9] = {0, 1, 1, 2, 4, 5, 5, 7, 8};
  return tr_dinf_angle(facet[k], k % 2 ? 0.0 : atan2(dy, dx));
}

/* The "dinf" program's tile: TauDEM's angle (nodata -FLT_MAX) of every
 * cell (the slope is the "dinf_slp" local kernel, kernels/dinf_slope.c). A flat cell that TauDEM's first pass leaves
 * without a direction (TauDEM iterates on its artificial surface, where the
 * flats' distances are not the ones computed here) takes the angle of its
 * D8 flat direction (flowdir.h's rule): every flat cell then drains. */
static void dinf_tile(const fd_ctx *x, const fd_state *s, const float *Z, const tr_aap_frag *f, float *tile) {
  const int64_t h = f->rows, w = f->cols, pw = w + 2;
  const float nd = (float)TR_DINF_ANG_NODATA;
  int64_t slot = 0;
  /* a row whose three rows hold no NaN has no outlet: its cells go
   * through the rule four at a time (dinf_span.h) */
  float *sang = malloc((size_t)w * sizeof *sang), *sslp = malloc((size_t)w * sizeof *sslp);
  uint8_t *sdown = malloc((size_t)w);
  const int spans = sang && sslp && sdown;
  for (int64_t r = 1; r <= h; r++) {
    double dx, dy;
    tr_dinf_row_dxdy(&x->prm.geom, x->env->rows, f->row0 + r - 1, &dx, &dy);
    int gap = !spans;
    for (int64_t i = (r - 1) * pw; i < (r + 2) * pw; i++) gap |= isnan(Z[i]);
    if (!gap) tr_dinf_span(Z + r * pw + 1, pw, w, dx, dy, sang, sslp, sdown);
    for (int64_t c = 1; c <= w; c++) {
      const int64_t p = r * pw + c, t = tidx(s, r, c);
      float *out = &tile[(r - 1) * w + (c - 1)];
      const int flat = is_flat(s, t);
      const int64_t me = flat ? slot++ : -1;
      float a = nd, sl;
      int down;
      if (!gap) {
        down = sdown[c - 1];
        if (down) a = sang[c - 1];
      } else {
        int outlet = isnan(Z[p]);
        for (int k = 1; k <= 8 && !outlet; k++) outlet = isnan(Z[p + tr_d8_drow[k] * pw + tr_d8_dcol[k]]);
        down = outlet || tr_dinf_cell(Z + p, pw, dx, dy, &a, &sl);
      }
      if (!down && flat) {
        a = nd;
        if (fget(&s->dl, me) != INF) {
          a = dinf_flat(s, Z, r, c, me, dx, dy);
          if (a < 0.0f) {
            const int k = flat_dir(s, r, c, me);
            a = k ? dinf_toward(k, dx, dy) : nd;
          }
        }
      }
      *out = a;
    }
  }
  free(sang);
  free(sslp);
  free(sdown);
}

/* flowdir_compact's Assemble: the whole state from the filled DEM's window
 * and the halo ring as received, with one search from the tile's seeds and
 * the ring's: the least fixed point of the same seeds as flowdir's state,
 * so the same dl and dh. 0, or -1 when out of memory. */
static int compact_final(fd_state *s, const float *Z, int dinf) {
  if (slots_new(s)) return -1;
  eq_from_z(s, Z);
  qvec sl = {0}, sh = {0}, fifo = {0};
  seed_tile(s, Z, dinf, &sl, &sh);
  /* the ring as IncEval applied it */
  int oom = 0;
  for (int64_t pr = 0; pr <= s->h + 1; pr++)
    for (int64_t pc = 0; pc <= s->w + 1; pc += (pr == 0 || pr == s->h + 1) ? 1 : s->w + 1) {
      const int64_t ri = ring_at(s, pr, pc);
      const int32_t vl = s->ring_dl[ri], vh = s->ring_dh[ri];
      if (vl == INF && vh == INF) continue;
      for (int d = 1; d <= 8; d++) {
        const int64_t rr = pr + tr_d8_drow[d], cc = pc + tr_d8_dcol[d];
        if (!in_tile(s, rr, cc) || !is_flat(s, tidx(s, rr, cc))) continue;
        const int64_t sl_ = slot_of(s, tidx(s, rr, cc));
        if (!((s->eq[sl_] >> (OPPOSITE(d) - 1)) & 1u)) continue;
        const uint32_t p = (uint32_t)(rr * s->pw + cc);
        if (vl < INF && vl + 1 < fget(&s->dl, sl_)) {
          if (fset(&s->dl, sl_, vl + 1)) oom = 1;
          qpush(&sl, p, vl + 1);
        }
        if (vh < INF && vh + 1 < fget(&s->dh, sl_)) {
          if (fset(&s->dh, sl_, vh + 1)) oom = 1;
          qpush(&sh, p, vh + 1);
        }
      }
    }
  int rc = oom || sl.oom || sh.oom ? -1 : 0;
  if (!rc) {
    if (sl.n) qsort(sl.a, sl.n, sizeof *sl.a, qent_cmp);
    if (sh.n) qsort(sh.a, sh.n, sizeof *sh.a, qent_cmp);
    rc = bfs(s, &s->dl, &sl, &fifo) < 0 || bfs(s, &s->dh, &sh, &fifo) < 0 ? -1 : 0;
  }
  free(sl.a);
  free(sh.a);
  free(fifo.a);
  return rc;
}

static int fd_assemble(void *user, const tr_aap_frag *f, void *state) {
  fd_ctx *x = user;
  fd_state *s = state;
  if (!s) return -1;
  const int64_t h = f->rows, w = f->cols, pw = w + 2;
  /* room for the D8 codes, or for dinf's Float32 cells */
  int16_t *tile = malloc((size_t)(h * w) * sizeof(float));
  float *Z = tile ? tr_graph_window(x->env, f) : NULL;
  if (!Z || (x->compact && compact_final(s, Z, x->prm.method == TR_FLOWDIR_DINF))) {
    if (Z) tr_graph_window_done(x->env, f, Z);
    free(tile);
    return -1;
  }
  if (x->prm.method == TR_FLOWDIR_DINF) {
    float *ft = (float *)tile;
    dinf_tile(x, s, Z, f, ft);
    tr_graph_window_done(x->env, f, Z);
    const int rc = x->env->put(x->env, f, ft);
    free(tile);
    if (x->compact) slim(s);
    return rc;
  }
  const tr_dir_encoding enc = (tr_dir_encoding)x->prm.encoding;
  int64_t slot = 0; /* flat cells take slots in row-major order */
  for (int64_t r = 1; r <= h; r++) {
    double fact[9];
    tr_d8_row_fact(&x->prm.geom, f->row0 + r - 1, fact);
    for (int64_t c = 1; c <= w; c++) {
      float slope;
      /* a flat bit is exactly the D8 rule's 0 (both: valid, eight valid neighbours, none lower) */
      const int k = is_flat(s, tidx(s, r, c)) ? flat_dir(s, r, c, slot++) : tr_d8_cell(Z + r * pw + c, pw, fact, &slope);
      tile[(r - 1) * w + (c - 1)] = (int16_t)tr_d8_encode(enc, k < 0 ? 0 : k);
    }
  }
  tr_graph_window_done(x->env, f, Z);
  const int rc = x->env->put(x->env, f, tile);
  free(tile);
  if (x->compact) slim(s);
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
  /* Assemble applies the cell rule (D8's, or D-infinity's facets) to every
   * cell of its tile again: most of the program's time, so on every thread */
  p->assemble_parallel = 1;
  return 0;
}

static int fd_init_compact(tr_aap_program *p, tr_graph_env *env, const void *params) {
  if (fd_init(p, env, params)) return -1;
  ((fd_ctx *)p->user)->compact = 1;
  p->assemble_parallel = 1; /* Assemble searches its tile again: on every thread */
  return 0;
}

/* state: at most 5 bytes a cell, when every cell is flat */
/* --ft replay's invariant of Assemble's tile: every code one of the encoding's (graph.h) */
static int64_t fd_check_tile(void *user, const tr_aap_frag *f, const void *state, const void *cells) {
  (void)state;
  return tr_flowdir_check_tile(((const fd_ctx *)user)->prm.encoding, f->rows * f->cols, cells);
}

static const tr_graph_body body_flowdir = {.name = "flowdir",
                                           .init = fd_init,
                                           .release = tr_graph_release_user,
                                           .state = TR_STATE_PER_CELL(5),
                                           .msg_bytes = sizeof(fd_value),
    .state_bytes = sizeof(fd_state),
    .check_tile = fd_check_tile};

/* state: the flat bitmap (state_bits) and, per unit of 2 x (rows + cols) + 4,
 * 8 bytes of halo ring, 8 of perimeter values and a byte of outer level
 * mask. A round, per cell at most: IncEval a distance (4) and a queued seed
 * and FIFO entry (8 each); Assemble the whole state (5: dl, dh, the level
 * mask), both searches' seeds (8 each) and the FIFO (8): 29 */
static const tr_graph_body body_flowdir_compact = {.name = "flowdir_compact",
                                                   .role = TR_BODY_TWIN,
                                                   .init = fd_init_compact,
                                                   .release = tr_graph_release_user,
                                                   .state = TR_STATE_PERIMETER(17, 1, 29),
                                                   .msg_bytes = sizeof(fd_value),
    .state_bytes = sizeof(fd_state),
    .check_tile = fd_check_tile};

const tr_graph_program tr_program_flowdir = {
    .name = "flowdir",
    .cell_type = GDT_Int16,
    .params_size = sizeof(tr_flowdir_params),
    .bodies = {&body_flowdir, &body_flowdir_compact},
};

/* --ft replay's invariant of "dinf"'s tile: angles in [0, 2 pi) or nodata. */
static int64_t dinf_check_tile(void *user, const tr_aap_frag *f, const void *state, const void *cells) {
  (void)state;
  (void)user;
  const float *v = cells;
  int64_t bad = 0;
  for (int64_t i = 0; i < f->rows * f->cols; i++)
    bad += !((v[i] >= 0.0f && v[i] < 6.2832f) || v[i] == (float)TR_DINF_ANG_NODATA);
  return bad;
}

static const tr_graph_body body_dinf = {.name = "dinf",
                                        .init = fd_init,
                                        .release = tr_graph_release_user,
                                        .state = TR_STATE_PER_CELL(5),
                                        .msg_bytes = sizeof(fd_value),
                                        .state_bytes = sizeof(fd_state),
                                        .check_tile = dinf_check_tile};

static const tr_graph_body body_dinf_compact = {.name = "dinf_compact",
                                                .role = TR_BODY_TWIN,
                                                .init = fd_init_compact,
                                                .release = tr_graph_release_user,
                                                .state = TR_STATE_PERIMETER(17, 1, 29),
                                                .msg_bytes = sizeof(fd_value),
                                                .state_bytes = sizeof(fd_state),
                                                .check_tile = dinf_check_tile};

/* D-infinity angle or slope (flowdir.h's params, method TR_FLOWDIR_DINF):
 * flowdir's bodies with dinf's seeds and tile. */
const tr_graph_program tr_program_dinf = {
    .name = "dinf",
    .cell_type = GDT_Float32,
    .params_size = sizeof(tr_flowdir_params),
    .bodies = {&body_dinf, &body_dinf_compact},
};
