/*
 * fill_perimeter.c - flat depression filling in two visits of each tile: the row
 * "fill_perimeter" of the program table.
 *
 * The "fill" program (fill_program.c) keeps W, one float per cell, and floods its
 * tile again in every round; out of core that W is spilled and read back once per
 * round, and the number of rounds is the engine's. This program keeps, between
 * rounds, only a summary of its tile the size of its perimeter (Barnes, Lehman &
 * Mulla 2014/2016, "parallel priority-flood"), so rounds after the first never touch
 * the tile's cells:
 *
 * PEval floods the tile from its perimeter cells (at their own elevation) and from
 * its true outlets (cells next to NoData or outside the grid, label 0, the "ocean"),
 * with labels: a perimeter cell popped without a label starts a new one, and each
 * cell the flood reaches takes the label of the cell it was reached from. A cell's
 * flood level l(c) is the lowest level at which it joins a seed inside the tile.
 * Where two labels a != b touch (cells c, n adjacent), the edge a-b gets weight
 * max(l(c), l(n)) (the lowest). The summary is: each perimeter cell's label and
 * elevation, the label graph, and each label's drain level S (0 for the ocean:
 * -inf; others start at +inf and fall as the minimax over the graph to the ocean).
 * A perimeter cell's value is W = max(Z, S(label)); the engine's messages carry it,
 * as in "fill".
 *
 * IncEval: a halo cell h with value v lowers S(label(b)) to max(Z(b), v) for each
 * perimeter neighbour b in the tile, then a minimax Dijkstra over the label graph
 * spreads the change; the perimeter cells whose W fell are emitted. No cell of the
 * tile is read.
 *
 * Assemble loads the tile again, repeats PEval's flood (the same labels: the same
 * code on the same cells) and puts W(c) = max(l(c), S(label(c))).
 *
 * W is the unique minimax fixed point (fill.h), so the output is the same bytes as
 * "fill"'s for any tiling, schedule, thread or rank count (test_fill_equal). Each
 * tile's elevation window is read twice whatever the number of rounds, and the state
 * an out-of-core run keeps (or spills) is at most about FILL_PERIM_STATE bytes per perimeter cell
 * instead of 4 bytes per cell. Only flat fill: --epsilon's up() adds along a path,
 * which a graph of labels cannot carry, so it stays with "fill".
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fill.h"
#include "fill_flood.h"
#include "pool.h"

#define NONE UINT32_MAX

/* A tile's summary between rounds: one block of 32-bit words, registered with the
 * state store (tr_graph_keep) so an out-of-core run may spill it.
 *   [0] nper, [1] K (labels, 0 the ocean), [2] E (directed edges), then
 *   plabel[nper], pz[nper] (float), S[K] (float), adj_start[K+1], adj_to[E], adj_w[E] (float) */
typedef struct {
  uint32_t *blob;
} perim_state;

typedef struct {
  uint32_t nper, K, E;
  uint32_t *plabel;
  float *pz, *S;
  uint32_t *adj_start, *adj_to;
  float *adj_w;
} perim_view;

static perim_view view_of(uint32_t *b) {
  perim_view v;
  v.nper = b[0];
  v.K = b[1];
  v.E = b[2];
  v.plabel = b + 3;
  v.pz = (float *)(v.plabel + v.nper);
  v.S = v.pz + v.nper;
  v.adj_start = (uint32_t *)(v.S + v.K);
  v.adj_to = v.adj_start + v.K + 1;
  v.adj_w = (float *)(v.adj_to + v.E);
  return v;
}

static size_t blob_words(uint32_t nper, uint32_t K, uint32_t E) {
  return 3 + 2 * (size_t)nper + (size_t)K + (size_t)K + 1 + 2 * (size_t)E;
}

/* ---- a round's scratch (pooled: rounds do not allocate once warm) ------------------- */

typedef struct {
  uint64_t key; /* (a << 32) | b with a < b; 0: empty (label pairs never have b == 0) */
  float w;
} hedge;

typedef struct scratch {
  tr_radix rq; /* the flood's queue (monotone: nothing is pushed below the last level popped) */
  float *level;
  uint32_t *label;
  size_t cells, lcap;
  fill_queues q; /* the label heap of relax (fill_flood.h's) */
  uint32_t *fifo, *stk; /* depression cells; slope cells */
  size_t fcap, scap;
  hedge *ht;
  size_t hcap_t, hcount;
  uint32_t *per; /* padded index of each perimeter cell */
  size_t pcap;
  float *oldS;
  size_t ocap;
  int oom;
} scratch;

typedef struct perim_ctx {
  tr_graph_env *env;
  tr_pool pool; /* of scratch */
} perim_ctx;

static void scratch_free(void *obj) {
  scratch *s = obj;
  if (!s) return;
  tr_radix_free(&s->rq);
  free(s->level);
  free(s->label);
  fill_queues_free(&s->q);
  free(s->fifo);
  free(s->stk);
  free(s->ht);
  free(s->per);
  free(s->oldS);
  free(s);
}

static scratch *s_get(perim_ctx *x) {
  scratch *s = tr_pool_get(&x->pool);
  if (s) s->oom = s->q.oom = 0;
  return s;
}

static void s_put(perim_ctx *x, scratch *s) { tr_pool_put(&x->pool, s); }

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap : 256;
  while (c < need) c *= 2;
  void *q = realloc(*p, c * elem);
  if (!q) return -1;
  *p = q;
  *cap = c;
  return 0;
}

static void radix_push(scratch *s, float v, uint32_t i) {
  tr_radix_push(&s->rq, v, i);
  if (s->rq.oom) s->oom = 1;
}

/* The cell of a lowest level (call with rq.total > 0). */
static uint32_t radix_pop(scratch *s) {
  float v;
  const uint32_t i = tr_radix_pop(&s->rq, &v);
  if (s->rq.oom) s->oom = 1;
  return i;
}

/* The label graph's edges while flooding: a - b (a < b) with the lowest weight seen. */
static void edge_note(scratch *s, uint32_t a, uint32_t b, float w) {
  if (a > b) {
    uint32_t t = a;
    a = b;
    b = t;
  }
  if (2 * (s->hcount + 1) > s->hcap_t) {
    size_t nc = s->hcap_t ? 2 * s->hcap_t : 1024;
    hedge *nt = calloc(nc, sizeof *nt);
    if (!nt) {
      s->oom = 1;
      return;
    }
    for (size_t i = 0; i < s->hcap_t; i++)
      if (s->ht[i].key) {
        size_t j = (size_t)((s->ht[i].key * 0x9E3779B97F4A7C15ull) >> 17) & (nc - 1);
        while (nt[j].key) j = (j + 1) & (nc - 1);
        nt[j] = s->ht[i];
      }
    free(s->ht);
    s->ht = nt;
    s->hcap_t = nc;
  }
  const uint64_t key = ((uint64_t)a << 32) | b;
  size_t j = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17) & (s->hcap_t - 1);
  while (s->ht[j].key && s->ht[j].key != key) j = (j + 1) & (s->hcap_t - 1);
  if (!s->ht[j].key) {
    s->ht[j].key = key;
    s->ht[j].w = w;
    s->hcount++;
  } else if (w < s->ht[j].w) {
    s->ht[j].w = w;
  }
}

/* The padded indices of the tile's perimeter cells, in a fixed order (rows top to
 * bottom, left to right); returns their count. */
static int64_t perimeter(scratch *s, int64_t h, int64_t w, int64_t pw) {
  const int64_t n = (h > 1 && w > 1) ? 2 * (h + w) - 4 : h * w;
  if (grow((void **)&s->per, &s->pcap, (size_t)n, sizeof *s->per)) return -1;
  int64_t k = 0;
  for (int64_t r = 1; r <= h; r++) {
    const int64_t step = (r == 1 || r == h) ? 1 : (w > 1 ? w - 1 : 1);
    for (int64_t c = 1; c <= w; c += step) s->per[k++] = (uint32_t)(r * pw + c);
  }
  return k;
}

/* Position of padded cell (r, c) (1-based, on the perimeter) in that order. */
static int64_t per_pos(int64_t r, int64_t c, int64_t h, int64_t w) {
  if (h == 1 || w == 1) return (r - 1) * w + (c - 1);
  if (r == 1) return c - 1;
  if (r == h) return w + 2 * (h - 2) + (c - 1);
  return w + 2 * (r - 2) + (c == 1 ? 0 : 1);
}

/* One cell's visit: its neighbours not yet reached take its label and their level,
 * when that level is final (see flood); reached ones of another label give an edge.
 * ordered: i is at the flood's current lowest level (from the heap or the FIFO), so a
 * lower neighbour may be raised to it; otherwise i came from the slope stack and a
 * lower neighbour waits for i's turn in the heap. */
static inline void visit(scratch *s, const float *Z, const int64_t *d, uint32_t i, int ordered, int edges, size_t *ft,
                         size_t *sp) {
  float *L = s->level;
  uint32_t *lab = s->label;
  const float lv = L[i];
  const uint32_t a = lab[i];
  int low = 0;
  for (int k = 0; k < 8; k++) {
    const int64_t n = (int64_t)i + d[k];
    const float ln = L[n];
    if (!(ln > -INFINITY)) continue; /* halo, NoData */
    if (ln == INFINITY) {
      const float z = Z[n];
      if (z >= lv && (z > lv || !ordered)) {
        L[n] = z; /* final: W(n) <= max(Z(n), l(i)) = Z(n) */
        lab[n] = a;
        s->stk[(*sp)++] = (uint32_t)n;
      } else if (ordered) {
        L[n] = lv;
        lab[n] = a;
        s->fifo[(*ft)++] = (uint32_t)n;
      } else {
        low = 1;
      }
    } else if (lab[n] == NONE) {
      if (lv <= ln) lab[n] = a; /* a perimeter seed still queued (its level is its Z) */
    } else if (edges && lab[n] != a) {
      edge_note(s, a, lab[n], lv > ln ? lv : ln);
    }
  }
  if (low) radix_push(s, lv, i);
}

/* The labelled flood of one tile over its padded Z window: s->level and s->label
 * for every cell (halo: -inf; NoData: NaN), and with `edges` the label graph's edges
 * in s->ht. Returns the number of labels (1 + those started at perimeter cells) and
 * *work the cells visited, or -1 when out of memory. Deterministic: PEval and
 * Assemble get the same labels.
 *
 * Priority-flood (Barnes et al. 2014) with two shortcuts of the heap: cells inside a
 * depression (raised to the current level) go through a FIFO, and a cell reached
 * from a cell at or below its own elevation is final at its elevation, whatever
 * the order, so it is visited at once from a stack (a slope is climbed without the
 * heap; Zhou et al. 2016). A slope cell with a lower neighbour not yet reached goes
 * into the heap at its level, to raise that neighbour in priority order. A cell
 * takes its label from a neighbour at or below its level, so each label's cells
 * join its seed through cells no higher than themselves. */
static int64_t flood(scratch *s, const float *Z, int64_t h, int64_t w, int edges, int64_t *work) {
  const int64_t pw = w + 2, ph = h + 2, np = pw * ph;
  const int64_t d[8] = {-pw - 1, -pw, -pw + 1, -1, 1, pw - 1, pw, pw + 1};
  if (grow((void **)&s->level, &s->cells, (size_t)np, sizeof *s->level) ||
      grow((void **)&s->label, &s->lcap, (size_t)np, sizeof *s->label) ||
      grow((void **)&s->fifo, &s->fcap, (size_t)np, sizeof *s->fifo) ||
      grow((void **)&s->stk, &s->scap, (size_t)np, sizeof *s->stk))
    return -1;
  float *L = s->level;
  uint32_t *lab = s->label;
  for (int64_t i = 0; i < np; i++) {
    L[i] = -INFINITY;
    lab[i] = NONE;
  }
  tr_radix_reset(&s->rq);
  if (edges && s->ht) memset(s->ht, 0, s->hcap_t * sizeof *s->ht);
  s->hcount = 0;
  for (int64_t r = 1; r <= h; r++)
    for (int64_t c = 1; c <= w; c++) {
      const int64_t i = r * pw + c;
      L[i] = isnan(Z[i]) ? NAN : INFINITY;
    }
  /* seeds: true outlets (label 0), then the other perimeter cells (no label yet) */
  for (int64_t r = 1; r <= h; r++)
    for (int64_t c = 1; c <= w; c++) {
      const int64_t i = r * pw + c;
      if (isnan(Z[i])) continue;
      int outlet = 0;
      for (int k = 0; k < 8 && !outlet; k++) outlet = isnan(Z[i + d[k]]);
      if (outlet) {
        L[i] = Z[i];
        lab[i] = 0;
        radix_push(s, Z[i], (uint32_t)i);
      } else if (r == 1 || r == h || c == 1 || c == w) {
        L[i] = Z[i];
        radix_push(s, Z[i], (uint32_t)i);
      }
    }
  uint32_t K = 1;
  int64_t visits = 0;
  size_t fh = 0, ft = 0, sp = 0;
  while (!s->oom) {
    uint32_t i;
    int ordered = 1;
    if (sp > 0) {
      i = s->stk[--sp];
      ordered = 0;
    } else if (fh < ft) {
      i = s->fifo[fh++];
    } else {
      fh = ft = 0;
      if (s->rq.total == 0) break;
      i = radix_pop(s);
      if (lab[i] == NONE) {
        if (K == NONE - 1) return -1;
        lab[i] = K++;
      }
    }
    visits++;
    visit(s, Z, d, i, ordered, edges, &ft, &sp);
  }
  if (s->oom) return -1;
  *work = visits;
  return K;
}

/* Minimax Dijkstra over the label graph from the labels in the heap (s->heap holds
 * (S, label) entries): S(b) = min(S(b), max(S(a), w(a, b))). Returns labels popped. */
static int64_t relax(scratch *s, perim_view *v) {
  int64_t n = 0;
  while (s->q.hn && !s->q.oom) {
    const fill_ent e = fill_heap_pop(&s->q);
    if (e.v > v->S[e.i]) continue; /* stale */
    n++;
    for (uint32_t k = v->adj_start[e.i]; k < v->adj_start[e.i + 1]; k++) {
      const uint32_t b = v->adj_to[k];
      const float c = e.v > v->adj_w[k] ? e.v : v->adj_w[k];
      if (c < v->S[b]) {
        v->S[b] = c;
        fill_heap_push(&s->q, c, b);
      }
    }
  }
  return s->q.oom ? -1 : n;
}

static int emit_cell(tr_aap_round *rd, const tr_aap_frag *f, int64_t cols, int64_t pw, int64_t idx, float val) {
  const int64_t r = idx / pw - 1 + f->row0, c = idx % pw - 1 + f->col0;
  return tr_aap_emit(rd, r * cols + c, &val);
}

static inline float per_w(const perim_view *v, uint32_t k) {
  const uint32_t a = v->plabel[k];
  if (a == NONE) return NAN;
  return v->pz[k] > v->S[a] ? v->pz[k] : v->S[a];
}

static int perim_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  perim_ctx *x = user;
  const int64_t h = f->rows, w = f->cols, pw = w + 2;
  perim_state *st = calloc(1, sizeof *st);
  float *Z = st ? tr_graph_window(x->env, f) : NULL;
  scratch *s = Z ? s_get(x) : NULL;
  int64_t work = 0, K = -1, nper = -1;
  if (s) {
    K = flood(s, Z, h, w, 1, &work);
    nper = K > 0 ? perimeter(s, h, w, pw) : -1;
  }
  if (Z) tr_graph_window_done(x->env, f, Z);
  if (nper < 0) goto fail;
  /* the summary: perimeter labels and elevations, the label graph as CSR */
  const uint32_t E = (uint32_t)(2 * s->hcount);
  const size_t words = blob_words((uint32_t)nper, (uint32_t)K, E);
  st->blob = malloc(words * sizeof(uint32_t));
  if (!st->blob || tr_graph_keep(x->env, f, &st->blob, words * sizeof(uint32_t), NULL)) goto fail;
  st->blob[0] = (uint32_t)nper;
  st->blob[1] = (uint32_t)K;
  st->blob[2] = E;
  perim_view v = view_of(st->blob);
  for (int64_t k = 0; k < nper; k++) {
    const uint32_t i = s->per[k];
    v.plabel[k] = isnan(s->level[i]) ? NONE : s->label[i];
    v.pz[k] = s->level[i]; /* a perimeter cell's level is its Z (NaN: NoData) */
  }
  memset(v.adj_start, 0, ((size_t)K + 1) * sizeof(uint32_t));
  for (size_t j = 0; j < s->hcap_t; j++)
    if (s->ht[j].key) {
      v.adj_start[(uint32_t)(s->ht[j].key >> 32) + 1]++;
      v.adj_start[(uint32_t)s->ht[j].key + 1]++;
    }
  for (int64_t a = 0; a < K; a++) v.adj_start[a + 1] += v.adj_start[a];
  /* fill with a moving cursor per label (S as scratch, then reset) */
  uint32_t *cur = (uint32_t *)v.S;
  for (int64_t a = 0; a < K; a++) cur[a] = v.adj_start[a];
  for (size_t j = 0; j < s->hcap_t; j++)
    if (s->ht[j].key) {
      const uint32_t a = (uint32_t)(s->ht[j].key >> 32), b = (uint32_t)s->ht[j].key;
      v.adj_to[cur[a]] = b;
      v.adj_w[cur[a]++] = s->ht[j].w;
      v.adj_to[cur[b]] = a;
      v.adj_w[cur[b]++] = s->ht[j].w;
    }
  v.S[0] = -INFINITY;
  for (int64_t a = 1; a < K; a++) v.S[a] = INFINITY;
  s->q.hn = 0;
  fill_heap_push(&s->q, -INFINITY, 0);
  const int64_t nl = relax(s, &v);
  if (nl < 0) goto fail;
  *state = st;
  tr_aap_add_work(rd, work);
  int rc = 0;
  for (uint32_t k = 0; k < v.nper && !rc; k++) {
    const float wv = per_w(&v, k);
    if (wv < INFINITY) rc = emit_cell(rd, f, x->env->cols, pw, s->per[k], wv);
  }
  s_put(x, s);
  return rc;
fail:
  s_put(x, s);
  if (st) free(st->blob);
  free(st);
  return -1;
}

static int perim_inceval(void *user, const tr_aap_frag *f, void *state, int64_t n, const int64_t *cells,
                         const void *values, tr_aap_round *rd) {
  perim_ctx *x = user;
  perim_state *st = state;
  const int64_t h = f->rows, w = f->cols, pw = w + 2, cols = x->env->cols;
  const float *vals = values;
  scratch *s = s_get(x);
  if (!s) return -1;
  perim_view v = view_of(st->blob);
  if (perimeter(s, h, w, pw) < 0 || grow((void **)&s->oldS, &s->ocap, v.K, sizeof *s->oldS)) {
    s_put(x, s);
    return -1;
  }
  memcpy(s->oldS, v.S, (size_t)v.K * sizeof *v.S);
  s->q.hn = 0;
  for (int64_t m = 0; m < n; m++) {
    const int64_t pr = cells[m] / cols - f->row0 + 1, pc = cells[m] % cols - f->col0 + 1;
    for (int64_t r = pr - 1; r <= pr + 1; r++)
      for (int64_t c = pc - 1; c <= pc + 1; c++) {
        if (r < 1 || r > h || c < 1 || c > w) continue;
        const int64_t k = per_pos(r, c, h, w);
        const uint32_t a = v.plabel[k];
        if (a == NONE || a == 0) continue;
        const float cand = v.pz[k] > vals[m] ? v.pz[k] : vals[m];
        if (cand < v.S[a]) {
          v.S[a] = cand;
          fill_heap_push(&s->q, cand, a);
        }
      }
  }
  const int64_t nl = relax(s, &v);
  if (nl < 0) {
    s_put(x, s);
    return -1;
  }
  tr_aap_add_work(rd, n + nl);
  int rc = 0;
  for (uint32_t k = 0; k < v.nper && !rc; k++) {
    const uint32_t a = v.plabel[k];
    if (a == NONE || !(v.S[a] < s->oldS[a])) continue;
    const float old = v.pz[k] > s->oldS[a] ? v.pz[k] : s->oldS[a], nw = per_w(&v, k);
    if (nw < old) rc = emit_cell(rd, f, cols, pw, s->per[k], nw);
  }
  s_put(x, s);
  return rc;
}

static int perim_assemble(void *user, const tr_aap_frag *f, void *state) {
  perim_ctx *x = user;
  perim_state *st = state;
  if (!st || !st->blob) return -1;
  const int64_t h = f->rows, w = f->cols, pw = w + 2;
  float *tile = malloc((size_t)(h * w) * sizeof(float));
  float *Z = tile ? tr_graph_window(x->env, f) : NULL;
  scratch *s = Z ? s_get(x) : NULL;
  int64_t work = 0;
  const int64_t K = s ? flood(s, Z, h, w, 0, &work) : -1;
  if (Z) tr_graph_window_done(x->env, f, Z);
  const perim_view v = view_of(st->blob);
  int rc = -1;
  if (K == (int64_t)v.K) {
    const float nd = x->env->has_nodata ? (float)x->env->nodata : NAN;
    for (int64_t r = 0; r < h; r++)
      for (int64_t c = 0; c < w; c++) {
        const int64_t i = (r + 1) * pw + c + 1;
        const float l = s->level[i];
        if (isnan(l)) {
          tile[r * w + c] = nd;
        } else {
          const float sa = v.S[s->label[i]];
          tile[r * w + c] = l > sa ? l : sa;
        }
      }
    rc = x->env->put(x->env, f, tile);
  } else if (K >= 0) {
    tr_graph_fail(x->env, f, TR_EINTERNAL, "fill: tile %lld flooded to %lld labels, not the %u of its first visit",
                  (long long)f->id, (long long)K, v.K);
  }
  s_put(x, s);
  free(tile);
  return rc;
}

static void perim_destroy(void *user, void *state) {
  (void)user;
  perim_state *st = state;
  if (!st) return;
  free(st->blob);
  free(st);
}

static void perim_release(tr_aap_program *p) {
  perim_ctx *x = p->user;
  if (!x) return;
  tr_pool_free(&x->pool);
  free(x);
  p->user = NULL;
}

static int perim_init(tr_aap_program *p, tr_graph_env *env, const void *params) {
  const tr_fill_params *prm = params;
  if (prm && prm->epsilon) return -1; /* flat fill only (see above) */
  perim_ctx *x = calloc(1, sizeof *x);
  if (!x) return -1;
  x->env = env;
  tr_pool_init(&x->pool, sizeof(scratch), scratch_free);
  memset(p, 0, sizeof *p);
  p->value_size = sizeof(float);
  p->user = x;
  p->peval = perim_peval;
  p->inceval = perim_inceval;
  p->assemble = perim_assemble;
  p->destroy = perim_destroy;
  p->aggr = fill_aggr_min;
  p->assemble_parallel = 1; /* Assemble floods its tile again: on every thread */
  return 0;
}

static int perim_applies(const void *params) { return !((const tr_fill_params *)params)->epsilon; }

/* fill's twin (fill_program.c): flat fill only */
/* --ft replay's invariant of Assemble's tile: nodata exactly where the DEM
 * is, at or above it elsewhere (graph.h) */
static int64_t perim_check_tile(void *user, const tr_aap_frag *f, const void *state, const void *cells) {
  (void)state;
  perim_ctx *x = user;
  float *Z = tr_graph_window(x->env, f);
  if (!Z) return 0;
  const int64_t h = f->rows, w = f->cols, pw = w + 2;
  const float nd = x->env->has_nodata ? (float)x->env->nodata : NAN;
  const float *t = cells;
  int64_t bad = 0;
  for (int64_t r = 0; r < h; r++)
    for (int64_t c = 0; c < w; c++) {
      const float z = Z[(r + 1) * pw + c + 1], v = t[r * w + c];
      bad += isnan(z) ? !(isnan(nd) ? isnan(v) : v == nd) : !(v >= z);
    }
  tr_graph_window_done(x->env, f, Z);
  return bad;
}

const tr_graph_body tr_body_fill_perimeter = {.name = "fill_perimeter",
                                              .role = TR_BODY_TWIN,
                                              .init = perim_init,
                                              .release = perim_release,
                                              .state = TR_STATE_PERIMETER(FILL_PERIM_STATE, 0, FILL_PERIM_ROUND),
                                              .msg_bytes = sizeof(float),
                                              .applies = perim_applies,
    .state_bytes = sizeof(perim_state),
    .check_tile = perim_check_tile};
