/*
 * test_fill_ref.c - what the fill tests share: an independent sequential priority-flood
 * (the reference), the test DEMs (random pits, large flats, NoData holes as a value and as
 * NaN, a spiral maze, a DEM without depressions) and the fragment layouts (1, 2 and 4
 * uneven tiles, 7 non-grid rectangles, many 7 x 5 tiles, one-row strips), all 48 x 57.
 * The reference uses none of libterrain's fill code.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aap.h"
#include "test_fill_ref.h"


/* ---- reference ------------------------------------------------------------------------ */

typedef struct { float v; int64_t i; } ent;

static void hpush(ent *h, int64_t *n, ent e) {
  int64_t k = (*n)++;
  while (k > 0 && h[(k - 1) / 2].v > e.v) { h[k] = h[(k - 1) / 2]; k = (k - 1) / 2; }
  h[k] = e;
}
static ent hpop(ent *h, int64_t *n) {
  ent top = h[0], last = h[--(*n)];
  int64_t k = 0;
  for (;;) {
    int64_t c = 2 * k + 1;
    if (c >= *n) break;
    if (c + 1 < *n && h[c + 1].v < h[c].v) c++;
    if (h[c].v >= last.v) break;
    h[k] = h[c]; k = c;
  }
  if (*n) h[k] = last;
  return top;
}

/* The fill's convention (fill.h): every zero is +0, in the input and from up(). */
static float pos0(float x) { return x == 0.0f ? 0.0f : x; }

static float ref_up(float x, float eps) {
  float n = pos0(nextafterf(x, INFINITY));
  if (eps > 0 && x + eps > n) return x + eps;
  return n;
}

/* nodata: cells with isnan(z) or (has_nd && z == nd) */
void ref_fill(const float *z, int64_t rows, int64_t cols, int has_nd, float nd,
                     int epsilon, float eps, float *w) {
  int64_t n = rows * cols, hn = 0;
  ent *h = malloc((size_t)(8 * n + 8) * sizeof *h);
  char *closed = calloc((size_t)n, 1);
#define ND(i) (isnan(z[i]) || (has_nd && z[i] == nd))
  for (int64_t i = 0; i < n; i++) {
    w[i] = ND(i) ? (has_nd ? nd : NAN) : INFINITY;
    if (ND(i)) { closed[i] = 1; continue; }
    int64_t r = i / cols, c = i % cols;
    int out = r == 0 || c == 0 || r == rows - 1 || c == cols - 1;
    for (int dr = -1; dr <= 1 && !out; dr++)
      for (int dc = -1; dc <= 1; dc++) {
        int64_t rr = r + dr, cc = c + dc;
        if (rr >= 0 && rr < rows && cc >= 0 && cc < cols && ND(rr * cols + cc)) out = 1;
      }
    if (out) { w[i] = pos0(z[i]); closed[i] = 1; hpush(h, &hn, (ent){w[i], i}); }
  }
  while (hn) {
    ent e = hpop(h, &hn);
    int64_t r = e.i / cols, c = e.i % cols;
    for (int dr = -1; dr <= 1; dr++)
      for (int dc = -1; dc <= 1; dc++) {
        int64_t rr = r + dr, cc = c + dc;
        if (rr < 0 || rr >= rows || cc < 0 || cc >= cols) continue;
        int64_t j = rr * cols + cc;
        if (closed[j]) continue;
        closed[j] = 1;
        float lv = epsilon ? ref_up(e.v, eps) : e.v;
        w[j] = pos0(z[j] > lv ? z[j] : lv);
        hpush(h, &hn, (ent){w[j], j});
      }
  }
#undef ND
  free(h);
  free(closed);
}

/* ---- DEMs ----------------------------------------------------------------------------- */

static uint64_t rng_s;
static double rnd(void) {
  rng_s ^= rng_s << 13; rng_s ^= rng_s >> 7; rng_s ^= rng_s << 17;
  return (double)(rng_s >> 11) / 9007199254740992.0;
}

const char *dem_name[] = {"pits", "flats", "nodata-value", "nodata-nan", "spiral", "no-depressions"};

void make_dem(int kind, float *z, int64_t rows, int64_t cols, int *has_nd, float *nd) {
  rng_s = 0x1234567ULL + (uint64_t)kind;
  *has_nd = 0;
  *nd = NAN;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      float *p = &z[r * cols + c];
      switch (kind) {
      case DEM_PITS: case DEM_NODATA_VAL: case DEM_NODATA_NAN:
        *p = (float)(10 * sin(r * 0.3) + 8 * cos(c * 0.21) + 12 * rnd());
        *p = roundf(*p * 4) / 4; /* ties and small flats */
        break;
      case DEM_FLATS: {
        /* a plateau at 10 touching the edges, a big flat basin at 2 ringed by 8 with no
           gap, a flat at 5 with a tiny pit, and a shelf at 10 inside */
        float v = 10;
        if (r >= 5 && r < 30 && c >= 5 && c < 40) v = 8;
        if (r >= 7 && r < 28 && c >= 7 && c < 38) v = 2;
        if (r >= 12 && r < 20 && c >= 15 && c < 25) v = 10;
        if (r >= 33 && r < rows - 3 && c >= 10 && c < cols - 5) v = 5;
        if (r == 40 && c == 30) v = 1;
        *p = v;
        break;
      }
      case DEM_SPIRAL: {
        int64_t k = r < c ? r : c;
        if (rows - 1 - r < k) k = rows - 1 - r;
        if (cols - 1 - c < k) k = cols - 1 - c;
        if (k % 2 == 0) {
          /* wall ring, with one gap: top middle on rings 0,4,8..., bottom middle else */
          int top_gap = (k / 2) % 2 == 0;
          int gap = top_gap ? (r == k && c == cols / 2) : (r == rows - 1 - k && c == cols / 2);
          *p = gap ? (float)(k == 0 ? 0.5 : 3 + 5 * rnd()) : 100.0f;
        } else {
          *p = (float)(10 * rnd());
        }
        break;
      }
      case DEM_NODEP:
      default: {
        int64_t k = r < c ? r : c;
        if (rows - 1 - r < k) k = rows - 1 - r;
        if (cols - 1 - c < k) k = cols - 1 - c;
        *p = (float)k * 1.5f + (float)((r * 7 + c * 3) % 5) * 0.1f; /* rises inward */
        break;
      }
      }
    }
  if (kind == DEM_NODATA_VAL || kind == DEM_NODATA_NAN) {
    float v = kind == DEM_NODATA_VAL ? -9999.0f : NAN;
    *has_nd = kind == DEM_NODATA_VAL;
    *nd = v;
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 0; c < cols; c++) {
        double d1 = hypot(r - 20.0, c - 25.0), d2 = hypot(r - 40.0, c - 10.0);
        if (d1 < 5 || d2 < 3 || (r == 10 && c > 30 && c < 50) || (r == 0 && c < 4))
          z[r * cols + c] = v;
      }
  }
}

/* ---- layouts -------------------------------------------------------------------------- */

const char *lay_name[] = {"1", "2-uneven", "4-uneven", "7-rects", "small-7x5", "strips"};

int make_layout(int kind, tr_aap_layout *L) {
  switch (kind) {
  case LAY_ONE: return tr_aap_layout_grid(L, R, C, R, C);
  case LAY_TWO: { int64_t rc[] = {0, R}, cc[] = {0, 17, C}; return tr_aap_layout_cuts(L, R, C, 1, rc, 2, cc); }
  case LAY_FOUR: { int64_t rc[] = {0, 13, R}, cc[] = {0, 40, C}; return tr_aap_layout_cuts(L, R, C, 2, rc, 2, cc); }
  case LAY_SEVEN: {
    tr_aap_frag f[7] = {
        {0, 0, 0, 20, 10}, {0, 0, 10, 20, C - 10},
        {0, 20, 0, 25, 30}, {0, 20, 30, 25, 5}, {0, 20, 35, 25, C - 35},
        {0, 45, 0, R - 45, 25}, {0, 45, 25, R - 45, C - 25}};
    return tr_aap_layout_rects(L, R, C, 7, f);
  }
  case LAY_SMALL: return tr_aap_layout_grid(L, R, C, 7, 5);
  case LAY_STRIPS:
  default: return tr_aap_layout_grid(L, R, C, 1, C);
  }
}

