/*
 * layout.c - fragments of the AAP engine: rectangles that partition a grid.
 *
 * A layout is a list of tiles (row0, col0, rows, cols) that cover the rows x cols grid
 * exactly once, plus, for every tile, the list of its neighbours: the tiles that own a
 * cell of its one-cell halo (up to 8 for a regular grid of tiles, more for arbitrary
 * rectangles). nb_back[k] gives, for the k-th entry f -> g, where f sits in g's list, so
 * a receiver can index per-sender bookkeeping without searching.
 *
 * Three constructors: regular tiles (last ones smaller), explicit cut lists (uneven
 * grids), and arbitrary rectangles (checked to be a partition: areas add up to the grid
 * and no two overlap), which tests use for layouts that are not grids at all.
 */
#include "aap_internal.h"

#include <stdlib.h>
#include <string.h>

static int touches(const tr_aap_frag *a, const tr_aap_frag *b) {
  /* does b own a cell of a's halo (a's rectangle grown by one)? */
  return b->row0 < a->row0 + a->rows + 1 && b->row0 + b->rows > a->row0 - 1 &&
         b->col0 < a->col0 + a->cols + 1 && b->col0 + b->cols > a->col0 - 1;
}

static int overlap(const tr_aap_frag *a, const tr_aap_frag *b) {
  return b->row0 < a->row0 + a->rows && b->row0 + b->rows > a->row0 &&
         b->col0 < a->col0 + a->cols && b->col0 + b->cols > a->col0;
}

static int cmp_i64(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Neighbour lists through buckets as large as the largest fragment, keyed by
 * each fragment's top-left cell: a fragment that touches f has its top-left
 * within one fragment's size of f's, so only the 3 x 3 buckets around f's
 * own are searched, and a grid of tiles takes time in proportion to its
 * tiles (the quadratic search it replaces took seconds at a few hundred
 * thousand tiles, past a signal). Each list is in ascending fragment order. */
static int build_neighbours(tr_aap_layout *L) {
  const int64_t n = L->nfrags;
  int64_t bh = 1, bw = 1;
  for (int64_t i = 0; i < n; i++) {
    if (L->frags[i].rows > bh) bh = L->frags[i].rows;
    if (L->frags[i].cols > bw) bw = L->frags[i].cols;
  }
  const int64_t nbr = L->rows / bh + 1, nbc = L->cols / bw + 1, nb = nbr * nbc;
  int64_t *bstart = calloc((size_t)nb + 1, sizeof *bstart), *bfrag = malloc((size_t)(n ? n : 1) * sizeof *bfrag);
  L->nb_start = calloc((size_t)n + 1, sizeof(int64_t));
  int64_t cap = 8 * (n ? n : 1), cnt = 0;
  L->nb = malloc((size_t)cap * sizeof(int64_t));
  int rc = bstart && bfrag && L->nb_start && L->nb ? TR_AAP_OK : TR_AAP_ENOMEM;
  for (int64_t i = 0; !rc && i < n; i++) bstart[(L->frags[i].row0 / bh) * nbc + L->frags[i].col0 / bw + 1]++;
  for (int64_t k = 0; !rc && k < nb; k++) bstart[k + 1] += bstart[k];
  if (!rc) {
    int64_t *fill = malloc((size_t)nb * sizeof *fill);
    if (!fill) rc = TR_AAP_ENOMEM;
    else {
      memcpy(fill, bstart, (size_t)nb * sizeof *fill);
      for (int64_t i = 0; i < n; i++) bfrag[fill[(L->frags[i].row0 / bh) * nbc + L->frags[i].col0 / bw]++] = i;
      free(fill);
    }
  }
  for (int64_t i = 0; !rc && i < n; i++) {
    const tr_aap_frag *f = &L->frags[i];
    L->nb_start[i] = cnt;
    const int64_t br = f->row0 / bh, bc = f->col0 / bw;
    for (int64_t r = br > 0 ? br - 1 : 0; !rc && r <= br + 1 && r < nbr; r++)
      for (int64_t c = bc > 0 ? bc - 1 : 0; !rc && c <= bc + 1 && c < nbc; c++)
        for (int64_t k = bstart[r * nbc + c]; k < bstart[r * nbc + c + 1]; k++) {
          const int64_t j = bfrag[k];
          if (j == i || !touches(f, &L->frags[j])) continue;
          if (cnt == cap) {
            int64_t *g = realloc(L->nb, (size_t)(2 * cap) * sizeof *g);
            if (!g) {
              rc = TR_AAP_ENOMEM;
              break;
            }
            L->nb = g;
            cap *= 2;
          }
          L->nb[cnt++] = j;
        }
    if (!rc) qsort(L->nb + L->nb_start[i], (size_t)(cnt - L->nb_start[i]), sizeof(int64_t), cmp_i64);
  }
  free(bstart);
  free(bfrag);
  if (rc) return rc;
  L->nb_start[n] = cnt;
  L->nb_back = malloc((size_t)(cnt ? cnt : 1) * sizeof(int64_t));
  if (!L->nb_back) return TR_AAP_ENOMEM;
  for (int64_t i = 0; i < n; i++)
    for (int64_t k = L->nb_start[i]; k < L->nb_start[i + 1]; k++) {
      const int64_t j = L->nb[k];
      const int64_t *lo = L->nb + L->nb_start[j];
      const int64_t *hit = bsearch(&i, lo, (size_t)(L->nb_start[j + 1] - L->nb_start[j]), sizeof(int64_t), cmp_i64);
      L->nb_back[k] = hit ? hit - lo : -1;
    }
  return TR_AAP_OK;
}

int tr_aap_layout_rects(tr_aap_layout *L, int64_t rows, int64_t cols, int64_t n,
                        const tr_aap_frag *rects) {
  memset(L, 0, sizeof *L);
  if (rows < 1 || cols < 1 || n < 1 || !rects) return TR_AAP_EINVAL;
  int64_t area = 0;
  for (int64_t i = 0; i < n; i++) {
    const tr_aap_frag *r = &rects[i];
    if (r->rows < 1 || r->cols < 1 || r->row0 < 0 || r->col0 < 0 ||
        r->row0 + r->rows > rows || r->col0 + r->cols > cols)
      return TR_AAP_EINVAL;
    area += r->rows * r->cols;
  }
  if (area != rows * cols) return TR_AAP_EINVAL;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = i + 1; j < n; j++)
      if (overlap(&rects[i], &rects[j])) return TR_AAP_EINVAL;
  L->rows = rows;
  L->cols = cols;
  L->nfrags = n;
  L->frags = malloc((size_t)n * sizeof *L->frags);
  if (!L->frags) return TR_AAP_ENOMEM;
  memcpy(L->frags, rects, (size_t)n * sizeof *L->frags);
  for (int64_t i = 0; i < n; i++) L->frags[i].id = i;
  int rc = build_neighbours(L);
  if (rc) tr_aap_layout_free(L);
  return rc;
}

int tr_aap_layout_cuts(tr_aap_layout *L, int64_t rows, int64_t cols, int nr,
                       const int64_t *row_cuts, int nc, const int64_t *col_cuts) {
  memset(L, 0, sizeof *L);
  if (nr < 1 || nc < 1 || row_cuts[0] != 0 || col_cuts[0] != 0 || row_cuts[nr] != rows ||
      col_cuts[nc] != cols)
    return TR_AAP_EINVAL;
  for (int i = 0; i < nr; i++)
    if (row_cuts[i + 1] <= row_cuts[i]) return TR_AAP_EINVAL;
  for (int j = 0; j < nc; j++)
    if (col_cuts[j + 1] <= col_cuts[j]) return TR_AAP_EINVAL;
  int64_t n = (int64_t)nr * nc;
  tr_aap_frag *r = malloc((size_t)n * sizeof *r);
  if (!r) return TR_AAP_ENOMEM;
  for (int i = 0; i < nr; i++)
    for (int j = 0; j < nc; j++) {
      tr_aap_frag *t = &r[(int64_t)i * nc + j];
      t->row0 = row_cuts[i];
      t->rows = row_cuts[i + 1] - row_cuts[i];
      t->col0 = col_cuts[j];
      t->cols = col_cuts[j + 1] - col_cuts[j];
    }
  /* a grid of cuts is a partition by construction: skip the quadratic checks */
  L->rows = rows;
  L->cols = cols;
  L->nfrags = n;
  L->frags = r;
  for (int64_t i = 0; i < n; i++) r[i].id = i;
  int rc = build_neighbours(L);
  if (rc) tr_aap_layout_free(L);
  return rc;
}

int tr_aap_layout_grid(tr_aap_layout *L, int64_t rows, int64_t cols, int64_t tile_rows,
                       int64_t tile_cols) {
  memset(L, 0, sizeof *L);
  if (rows < 1 || cols < 1 || tile_rows < 1 || tile_cols < 1) return TR_AAP_EINVAL;
  int64_t nr = (rows + tile_rows - 1) / tile_rows, nc = (cols + tile_cols - 1) / tile_cols;
  if (nr > 1000000 || nc > 1000000 || nr * nc > 4000000) return TR_AAP_EINVAL;
  int64_t *rc_ = malloc((size_t)(nr + 1) * sizeof(int64_t));
  int64_t *cc_ = malloc((size_t)(nc + 1) * sizeof(int64_t));
  if (!rc_ || !cc_) {
    free(rc_);
    free(cc_);
    return TR_AAP_ENOMEM;
  }
  for (int64_t i = 0; i <= nr; i++) rc_[i] = i * tile_rows < rows ? i * tile_rows : rows;
  for (int64_t j = 0; j <= nc; j++) cc_[j] = j * tile_cols < cols ? j * tile_cols : cols;
  int rc = tr_aap_layout_cuts(L, rows, cols, (int)nr, rc_, (int)nc, cc_);
  free(rc_);
  free(cc_);
  return rc;
}

void tr_aap_layout_free(tr_aap_layout *L) {
  if (!L) return;
  free(L->frags);
  free(L->nb_start);
  free(L->nb);
  free(L->nb_back);
  memset(L, 0, sizeof *L);
}
