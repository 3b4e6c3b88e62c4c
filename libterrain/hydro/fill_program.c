/*
 * fill_program.c - depression filling as an AAP program (PEval, IncEval, Assemble, min),
 * and the Z-window cache its rounds read elevations from.
 *
 * State of a fragment: W over its padded window ((rows+2) x (cols+2)); the halo part holds
 * -inf (never updated: halo values arrive as messages and are applied at once), NoData
 * cells hold NaN. Elevations are not kept (memory model in fill.h): each round borrows
 * the padded Z window from an LRU cache holding at most z_cache_bytes (a window is loaded
 * through io->load_z, under the io lock, on a miss; with budget 0 it is freed after the
 * round). A fragment runs one round at a time, so a window has at most one borrower.
 *
 * PEval: W = +inf on the tile, W = Z on its true outlets (cells with a NoData or
 * outside-the-grid neighbour), then priority-flood (fill_flood.c). Cells that cannot reach
 * a true outlet inside the tile keep +inf: an upper bound, as the monotone condition wants.
 * IncEval: for each (halo cell h, value v) of the snapshot, lower each tile neighbour b of
 * h to max(Z(b), v) (max(Z(b), up(v)) in the epsilon variant) when that is lower, seed the
 * flood with it, and flood. Both emit the perimeter cells whose W fell (finite values).
 * f_aggr = min. Assemble hands the tile to the writer with NaN turned into NoData.
 */
#define TR_FILL_INTERNAL
#include "fill.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct fill_state {
  float *W;
} fill_state;

/* ---- Z windows ---------------------------------------------------------------------- */

static float *z_load(fill_ctx *x, const tr_aap_frag *f) {
  int64_t h = f->rows, w = f->cols, pw = w + 2, ph = h + 2;
  float *z = malloc((size_t)(pw * ph) * sizeof(float));
  if (!z) return NULL;
  for (int64_t i = 0; i < pw * ph; i++) z[i] = NAN;
  /* the window clipped to the grid */
  int64_t r0 = f->row0 > 0 ? f->row0 - 1 : 0, c0 = f->col0 > 0 ? f->col0 - 1 : 0;
  int64_t r1 = f->row0 + h < x->o.rows ? f->row0 + h + 1 : x->o.rows;
  int64_t c1 = f->col0 + w < x->o.cols ? f->col0 + w + 1 : x->o.cols;
  int64_t wr = r1 - r0, wc = c1 - c0;
  float *tmp = malloc((size_t)(wr * wc) * sizeof(float));
  if (!tmp) {
    free(z);
    return NULL;
  }
  pthread_mutex_lock(&x->io_mu);
  int rc = x->io->load_z(x->io->user, r0, c0, wr, wc, tmp);
  pthread_mutex_unlock(&x->io_mu);
  if (rc != 0) {
    free(tmp);
    free(z);
    return NULL;
  }
  int64_t pr0 = r0 - (f->row0 - 1), pc0 = c0 - (f->col0 - 1);
  int hn = x->o.has_nodata;
  float nd = x->o.nodata;
  for (int64_t r = 0; r < wr; r++) {
    float *dst = z + (pr0 + r) * pw + pc0;
    const float *src = tmp + r * wc;
    for (int64_t c = 0; c < wc; c++) {
      float v = src[c];
      /* -0 is read as +0. The two are the same elevation, so min (f_aggr) and the
         flood's `<` / `<=` tests treat them as a tie and keep whichever value reached a
         cell first: with both in a DEM, the output bytes depended on message order (a
         flaky schedule-independence test). One zero makes the result schedule-free. */
      dst[c] = (hn && v == nd) ? NAN : (v == 0.0f ? 0.0f : v);
    }
  }
  free(tmp);
  return z;
}

static float *z_get(fill_ctx *x, const tr_aap_frag *f) {
  pthread_mutex_lock(&x->mu);
  fill_zslot *s = &x->slots[f->id];
  if (s->z) {
    s->in_use = 1;
    s->stamp = ++x->clock;
    float *z = s->z;
    pthread_mutex_unlock(&x->mu);
    return z;
  }
  pthread_mutex_unlock(&x->mu);
  return z_load(x, f);
}

static void z_put(fill_ctx *x, const tr_aap_frag *f, float *z) {
  size_t bytes = (size_t)((f->rows + 2) * (f->cols + 2)) * sizeof(float);
  pthread_mutex_lock(&x->mu);
  fill_zslot *s = &x->slots[f->id];
  if (s->z == z) {
    s->in_use = 0;
    pthread_mutex_unlock(&x->mu);
    return;
  }
  if (bytes <= x->o.z_cache_bytes) {
    /* evict least recently used windows not in use until it fits */
    while (x->cached_bytes + bytes > x->o.z_cache_bytes) {
      int64_t victim = -1;
      for (int64_t i = 0; i < x->L->nfrags; i++)
        if (x->slots[i].z && !x->slots[i].in_use &&
            (victim < 0 || x->slots[i].stamp < x->slots[victim].stamp))
          victim = i;
      if (victim < 0) break;
      const tr_aap_frag *g = &x->L->frags[victim];
      x->cached_bytes -= (size_t)((g->rows + 2) * (g->cols + 2)) * sizeof(float);
      free(x->slots[victim].z);
      x->slots[victim].z = NULL;
    }
    if (x->cached_bytes + bytes <= x->o.z_cache_bytes) {
      s->z = z;
      s->in_use = 0;
      s->stamp = ++x->clock;
      x->cached_bytes += bytes;
      pthread_mutex_unlock(&x->mu);
      return;
    }
  }
  pthread_mutex_unlock(&x->mu);
  free(z);
}

/* ---- flood queues, pooled so rounds do not allocate ---------------------------------- */

static fill_queues *q_get(fill_ctx *x) {
  fill_queues *q = NULL;
  pthread_mutex_lock(&x->mu);
  if (x->npool > 0) q = x->pool[--x->npool];
  pthread_mutex_unlock(&x->mu);
  if (!q) q = calloc(1, sizeof *q);
  return q;
}

static void q_put(fill_ctx *x, fill_queues *q) {
  if (!q) return;
  q->hn = q->fh = q->ft = 0;
  q->oom = 0;
  pthread_mutex_lock(&x->mu);
  if (x->npool == x->cappool) {
    int cap = x->cappool ? 2 * x->cappool : 8;
    fill_queues **p = realloc(x->pool, (size_t)cap * sizeof *p);
    if (p) {
      x->pool = p;
      x->cappool = cap;
    }
  }
  if (x->npool < x->cappool) {
    x->pool[x->npool++] = q;
    q = NULL;
  }
  pthread_mutex_unlock(&x->mu);
  if (q) {
    fill_queues_free(q);
    free(q);
  }
}

void fill_ctx_release(fill_ctx *x) {
  for (int i = 0; i < x->npool; i++) {
    fill_queues_free(x->pool[i]);
    free(x->pool[i]);
  }
  free(x->pool);
  x->pool = NULL;
  x->npool = x->cappool = 0;
  if (x->slots)
    for (int64_t i = 0; i < x->L->nfrags; i++) free(x->slots[i].z);
  free(x->slots);
  x->slots = NULL;
}

/* ---- the program --------------------------------------------------------------------- */

/* Calls fn on each perimeter cell of the tile once (padded index). */
#define FOR_PERIMETER(h, w, pw, idx, body)                                              \
  for (int64_t r_ = 1; r_ <= (h); r_++) {                                               \
    int64_t step_ = (r_ == 1 || r_ == (h)) ? 1 : ((w) > 1 ? (w) - 1 : 1);               \
    for (int64_t c_ = 1; c_ <= (w); c_ += step_) {                                      \
      int64_t idx = r_ * (pw) + c_;                                                     \
      body                                                                              \
    }                                                                                   \
  }

static int emit_cell(tr_aap_round *rd, const tr_aap_frag *f, int64_t cols, int64_t pw,
                     int64_t idx, float v) {
  int64_t r = idx / pw - 1 + f->row0, c = idx % pw - 1 + f->col0;
  return tr_aap_emit(rd, r * cols + c, &v);
}

static int fill_peval(void *user, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  fill_ctx *x = user;
  int64_t h = f->rows, w = f->cols, pw = w + 2, ph = h + 2;
  fill_state *st = calloc(1, sizeof *st);
  if (!st) return -1;
  st->W = malloc((size_t)(pw * ph) * sizeof(float));
  float *Z = st->W ? z_get(x, f) : NULL;
  fill_queues *q = Z ? q_get(x) : NULL;
  if (!q) {
    if (Z) z_put(x, f, Z);
    free(st->W);
    free(st);
    return -1;
  }
  float *W = st->W;
  for (int64_t i = 0; i < pw * ph; i++) W[i] = -INFINITY;
  for (int64_t r = 1; r <= h; r++)
    for (int64_t c = 1; c <= w; c++) {
      int64_t i = r * pw + c;
      W[i] = isnan(Z[i]) ? NAN : INFINITY;
    }
  for (int64_t r = 1; r <= h; r++)
    for (int64_t c = 1; c <= w; c++) {
      int64_t i = r * pw + c;
      if (isnan(Z[i])) continue;
      int outlet = isnan(Z[i - pw - 1]) || isnan(Z[i - pw]) || isnan(Z[i - pw + 1]) ||
                   isnan(Z[i - 1]) || isnan(Z[i + 1]) || isnan(Z[i + pw - 1]) ||
                   isnan(Z[i + pw]) || isnan(Z[i + pw + 1]);
      if (outlet) {
        W[i] = Z[i];
        fill_heap_push(q, Z[i], (uint32_t)i);
      }
    }
  int64_t work = q->oom ? -1 : fill_flood(W, Z, pw, q, x->o.epsilon, x->o.eps);
  q_put(x, q);
  z_put(x, f, Z);
  *state = st;
  if (work < 0) return -1;
  tr_aap_add_work(rd, work);
  int rc = 0;
  FOR_PERIMETER(h, w, pw, i, {
    if (rc == 0 && W[i] < INFINITY) rc = emit_cell(rd, f, x->o.cols, pw, i, W[i]);
  })
  return rc;
}

static int fill_inceval(void *user, const tr_aap_frag *f, void *state, int64_t n,
                        const int64_t *cells, const void *values, tr_aap_round *rd) {
  fill_ctx *x = user;
  fill_state *st = state;
  int64_t h = f->rows, w = f->cols, pw = w + 2;
  const float *vals = values;
  float *W = st->W;
  int64_t nper = (h > 1 && w > 1) ? 2 * (h + w) - 4 : h * w;
  float *old = malloc((size_t)nper * sizeof(float));
  float *Z = old ? z_get(x, f) : NULL;
  fill_queues *q = Z ? q_get(x) : NULL;
  if (!q) {
    if (Z) z_put(x, f, Z);
    free(old);
    return -1;
  }
  int64_t k = 0;
  FOR_PERIMETER(h, w, pw, i, { old[k++] = W[i]; })
  int eps_mode = x->o.epsilon;
  for (int64_t m = 0; m < n; m++) {
    int64_t pr = cells[m] / x->o.cols - f->row0 + 1, pc = cells[m] % x->o.cols - f->col0 + 1;
    float v = vals[m], lv = eps_mode ? fill_up(v, x->o.eps) : v;
    for (int64_t dr = -1; dr <= 1; dr++)
      for (int64_t dc = -1; dc <= 1; dc++) {
        int64_t r = pr + dr, c = pc + dc;
        if (r < 1 || r > h || c < 1 || c > w) continue;
        int64_t i = r * pw + c;
        if (!(W[i] > lv)) continue;
        float cand = Z[i] > lv ? Z[i] : lv;
        if (cand < W[i]) {
          W[i] = cand;
          fill_heap_push(q, cand, (uint32_t)i);
        }
      }
  }
  int64_t work = q->oom ? -1 : fill_flood(W, Z, pw, q, eps_mode, x->o.eps);
  q_put(x, q);
  z_put(x, f, Z);
  if (work < 0) {
    free(old);
    return -1;
  }
  tr_aap_add_work(rd, work);
  int rc = 0;
  k = 0;
  FOR_PERIMETER(h, w, pw, i, {
    if (rc == 0 && W[i] < old[k]) rc = emit_cell(rd, f, x->o.cols, pw, i, W[i]);
    k++;
  })
  free(old);
  return rc;
}

static int fill_assemble(void *user, const tr_aap_frag *f, void *state) {
  fill_ctx *x = user;
  fill_state *st = state;
  if (!st) return -1;
  int64_t h = f->rows, w = f->cols, pw = w + 2;
  float *tile = malloc((size_t)(h * w) * sizeof(float));
  if (!tile) return -1;
  float nd = x->o.has_nodata ? x->o.nodata : NAN;
  for (int64_t r = 0; r < h; r++)
    for (int64_t c = 0; c < w; c++) {
      float v = st->W[(r + 1) * pw + c + 1];
      tile[r * w + c] = isnan(v) ? nd : v;
    }
  int rc = fill_deliver_tile(x, f, tile);
  free(tile);
  return rc;
}

static void fill_destroy(void *user, void *state) {
  (void)user;
  fill_state *st = state;
  if (!st) return;
  free(st->W);
  free(st);
}

static int fill_min(void *user, void *acc, const void *value) {
  (void)user;
  float a, v;
  memcpy(&a, acc, sizeof a);
  memcpy(&v, value, sizeof v);
  if (v < a) {
    memcpy(acc, &v, sizeof v);
    return 1;
  }
  return 0;
}

void fill_program_init(tr_aap_program *p, fill_ctx *x) {
  memset(p, 0, sizeof *p);
  p->value_size = sizeof(float);
  p->user = x;
  p->peval = fill_peval;
  p->inceval = fill_inceval;
  p->assemble = fill_assemble;
  p->destroy = fill_destroy;
  p->aggr = fill_min;
}
