/*
 * test_flow_ref.c - the flow-direction tests' DEMs, sequential reference and
 * invariants (test_flow_ref.h). The reference uses none of libterrain's
 * direction code: TauDEM d8flowdir's rule written out again (cardinal
 * directions first, Float32 slopes, strict >, no direction on the edge and
 * next to NoData), then Barnes, Lehman & Mulla (2014) as the paper gives it:
 * low and high edges, flats labelled by flood fill from the low edges, the
 * away-from-higher breadth-first search (FlatHeight per label), the combined
 * towards-lower search, and each flat cell to its same-label neighbour of
 * least FlatMask below its own, ties to the first in TauDEM's order
 * (E, N, W, S, NE, NW, SW, SE).
 */
#include <cpl_conv.h>
#include <gdal.h>
#include <math.h>
#include <ogr_srs_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_fill_ref.h"
#include "test_flow_ref.h"

const char *fd_dem_name[] = {"pits", "flats", "nodata-value", "nodata-nan", "spiral", "bowl", "terraces", "no-depressions"};

static const int DR[9] = {0, 0, -1, -1, -1, 0, 1, 1, 1}, DC[9] = {0, 1, 1, 0, -1, -1, -1, 0, 1};
static const int ORDER[8] = {1, 3, 5, 7, 2, 4, 6, 8};

static uint64_t rs;
static double rnd(void) {
  rs ^= rs << 13;
  rs ^= rs >> 7;
  rs ^= rs << 17;
  return (double)(rs >> 11) / 9007199254740992.0;
}

static int64_t ring_k(int64_t r, int64_t c, int64_t rows, int64_t cols) {
  int64_t k = r < c ? r : c;
  if (rows - 1 - r < k) k = rows - 1 - r;
  if (cols - 1 - c < k) k = cols - 1 - c;
  return k;
}

void fd_make(int kind, fd_dem *d) {
  static const int fill_kind[] = {[FD_PITS] = DEM_PITS,     [FD_FLATS] = DEM_FLATS,   [FD_NODATA_VAL] = DEM_NODATA_VAL,
                                  [FD_NODATA_NAN] = DEM_NODATA_NAN, [FD_SPIRAL] = DEM_SPIRAL, [FD_NODEP] = DEM_NODEP};
  memset(d, 0, sizeof *d);
  d->dx = 10;
  d->dy = (kind == FD_PITS || kind == FD_BOWL) ? 7.5 : 10;
  d->nd = NAN;
  if (kind != FD_BOWL && kind != FD_TERRACES) {
    d->rows = R;
    d->cols = C;
    d->z = malloc(sizeof(float) * R * C);
    make_dem(fill_kind[kind], d->z, R, C, &d->has_nd, &d->nd);
    return;
  }
  rs = 0x9e3779b97f4a7c15ULL + (uint64_t)kind;
  d->rows = kind == FD_BOWL ? 61 : 40;
  d->cols = kind == FD_BOWL ? 83 : 50;
  d->z = malloc(sizeof(float) * (size_t)(d->rows * d->cols));
  for (int64_t r = 0; r < d->rows; r++)
    for (int64_t c = 0; c < d->cols; c++) {
      const int64_t k = ring_k(r, c, d->rows, d->cols);
      float v;
      if (kind == FD_BOWL) {
        /* a rim at 100 with one notch at 60; inside, rough ground far below
           it: filled, the whole inside is one flat crossing every tile */
        const double dist = hypot(r - 30.0, c - 41.0);
        v = k == 0 ? (r == 0 && c == 40 ? 60.0f : 100.0f) : (float)(20 + 0.3 * dist + 3 * rnd());
      } else {
        /* nested flats: a terrace at 10 inside a rim at 12, a basin floor at 6
           inside a wall at 11, an island plateau at 8 on the floor; a channel
           at 5 drains the floor through the terrace to the edge (4) */
        v = k < 3 ? 12 : k < 8 ? 10 : k == 8 ? 11 : k < 14 ? 6 : 8;
        if (c == d->cols / 2 && k <= 9 && r < d->rows / 2) v = r == 0 ? 4 : 5;
      }
      d->z[r * d->cols + c] = v;
    }
}

int fd_write(const fd_dem *d, const char *path) {
  GDALAllRegister();
  GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GTiff"), path, (int)d->cols, (int)d->rows, 1, GDT_Float32, NULL);
  if (!ds) return -1;
  double gt[6] = {500000, d->dx, 0, 4500000, 0, -d->dy};
  GDALSetGeoTransform(ds, gt);
  OGRSpatialReferenceH s = OSRNewSpatialReference(NULL);
  OSRImportFromEPSG(s, 32612);
  char *wkt = NULL;
  OSRExportToWkt(s, &wkt);
  GDALSetProjection(ds, wkt);
  CPLFree(wkt);
  OSRDestroySpatialReference(s);
  GDALRasterBandH b = GDALGetRasterBand(ds, 1);
  if (d->has_nd) GDALSetRasterNoDataValue(b, d->nd);
  CPLErr e = GDALRasterIO(b, GF_Write, 0, 0, (int)d->cols, (int)d->rows, d->z, (int)d->cols, (int)d->rows, GDT_Float32, 0, 0);
  GDALClose(ds);
  return e == CE_None ? 0 : -1;
}

/* ---- the reference -------------------------------------------------------------------- */

enum { NODATA = -2, OUTLET = -1, NOFLOW = 0 };

static int inside(int64_t r, int64_t c, int64_t rows, int64_t cols) { return r >= 0 && c >= 0 && r < rows && c < cols; }

void fd_reference(const fd_dem *d, int filled, float *fel, int *dir) {
  const int64_t rows = d->rows, cols = d->cols, n = rows * cols;
  if (filled) memcpy(fel, d->z, sizeof(float) * (size_t)n);
  else ref_fill(d->z, rows, cols, d->has_nd, d->nd, 0, 0, fel);
  for (int64_t i = 0; i < n; i++)
    if (isnan(fel[i]) || (d->has_nd && fel[i] == d->nd)) fel[i] = NAN;
  int *fd = malloc(sizeof(int) * (size_t)n);
  /* D8, TauDEM's loop */
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      const int64_t i = r * cols + c;
      if (isnan(fel[i])) {
        fd[i] = NODATA;
        continue;
      }
      int out = r == 0 || c == 0 || r == rows - 1 || c == cols - 1;
      for (int k = 1; k <= 8 && !out; k++) out = isnan(fel[(r + DR[k]) * cols + c + DC[k]]);
      if (out) {
        fd[i] = OUTLET;
        continue;
      }
      float smax = 0;
      int best = 0;
      for (int o = 0; o < 8; o++) {
        const int k = ORDER[o];
        const double dist = sqrt(DC[k] * DC[k] * d->dx * d->dx + DR[k] * DR[k] * d->dy * d->dy);
        const float drop = fel[i] - fel[(r + DR[k]) * cols + c + DC[k]];
        const float s = (float)((1.0 / dist) * (double)drop);
        if (s > smax) {
          smax = s;
          best = k;
        }
      }
      fd[i] = best;
    }
  /* Barnes 2014: edges */
  int64_t *low = malloc(sizeof(int64_t) * (size_t)n), *high = malloc(sizeof(int64_t) * (size_t)n);
  int64_t nlow = 0, nhigh = 0;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      const int64_t i = r * cols + c;
      if (fd[i] == NODATA) continue;
      for (int k = 1; k <= 8; k++) {
        const int64_t rr = r + DR[k], cc = c + DC[k];
        if (!inside(rr, cc, rows, cols)) continue;
        const int64_t j = rr * cols + cc;
        if (fd[j] == NODATA) continue;
        if (fd[i] != NOFLOW && fd[j] == NOFLOW && fel[j] == fel[i]) {
          low[nlow++] = i;
          break;
        }
        if (fd[i] == NOFLOW && fel[i] < fel[j]) {
          high[nhigh++] = i;
          break;
        }
      }
    }
  /* labels: flood fill of equal elevation from each low edge */
  int *label = calloc((size_t)n, sizeof(int));
  int64_t *q = malloc(sizeof(int64_t) * (size_t)(9 * n + 9));
  int nlabels = 0;
  for (int64_t e = 0; e < nlow; e++) {
    if (label[low[e]]) continue;
    const int l = ++nlabels;
    int64_t qh = 0, qt = 0;
    q[qt++] = low[e];
    while (qh < qt) {
      const int64_t i = q[qh++];
      if (label[i] || fel[i] != fel[low[e]]) continue;
      label[i] = l;
      for (int k = 1; k <= 8; k++) {
        const int64_t rr = i / cols + DR[k], cc = i % cols + DC[k];
        if (inside(rr, cc, rows, cols)) q[qt++] = rr * cols + cc;
      }
    }
  }
  /* away from higher, level by level */
  int64_t *mask = calloc((size_t)n, sizeof(int64_t));
  int64_t *height = calloc((size_t)nlabels + 1, sizeof(int64_t));
  {
    int64_t qh = 0, qt = 0, loops = 1;
    for (int64_t e = 0; e < nhigh; e++)
      if (label[high[e]]) q[qt++] = high[e];
    while (qh < qt) {
      const int64_t level_end = qt;
      for (; qh < level_end; qh++) {
        const int64_t i = q[qh];
        if (mask[i] > 0) continue;
        mask[i] = loops;
        height[label[i]] = loops;
        for (int k = 1; k <= 8; k++) {
          const int64_t rr = i / cols + DR[k], cc = i % cols + DC[k];
          if (!inside(rr, cc, rows, cols)) continue;
          const int64_t j = rr * cols + cc;
          if (label[j] == label[i] && fd[j] == NOFLOW && mask[j] == 0) q[qt++] = j;
        }
      }
      loops++;
    }
  }
  /* towards lower, combined */
  for (int64_t i = 0; i < n; i++) mask[i] = -mask[i];
  {
    int64_t qh = 0, qt = 0, loops = 1;
    for (int64_t e = 0; e < nlow; e++) q[qt++] = low[e];
    while (qh < qt) {
      const int64_t level_end = qt;
      for (; qh < level_end; qh++) {
        const int64_t i = q[qh];
        if (mask[i] > 0) continue;
        mask[i] = mask[i] < 0 ? height[label[i]] + mask[i] + 2 * loops : 2 * loops;
        for (int k = 1; k <= 8; k++) {
          const int64_t rr = i / cols + DR[k], cc = i % cols + DC[k];
          if (!inside(rr, cc, rows, cols)) continue;
          const int64_t j = rr * cols + cc;
          if (label[j] == label[i] && fd[j] == NOFLOW) q[qt++] = j;
        }
      }
      loops++;
    }
  }
  /* directions */
  for (int64_t i = 0; i < n; i++) {
    if (fd[i] > 0) {
      dir[i] = fd[i];
      continue;
    }
    dir[i] = 0;
    if (fd[i] != NOFLOW || !label[i]) continue;
    int64_t best = mask[i];
    for (int o = 0; o < 8; o++) {
      const int k = ORDER[o];
      const int64_t j = (i / cols + DR[k]) * cols + i % cols + DC[k];
      if (label[j] != label[i]) continue;
      if (mask[j] < best) {
        best = mask[j];
        dir[i] = k;
      }
    }
  }
  free(fd);
  free(low);
  free(high);
  free(label);
  free(q);
  free(mask);
  free(height);
}

void fd_case_make(int kind, int filled, fd_case *k) {
  if (kind >= 0) fd_make(kind, &k->dem);
  k->n = k->dem.rows * k->dem.cols;
  k->fel = malloc(sizeof(float) * (size_t)k->n);
  k->ref = malloc(sizeof(int) * (size_t)k->n);
  fd_reference(&k->dem, filled, k->fel, k->ref);
}

void fd_case_free(fd_case *k) {
  free(k->fel);
  free(k->ref);
  free(k->dem.z);
}

/* ---- reading and checking ------------------------------------------------------------ */

int *fd_read_dirs(const char *path, int encoding, int64_t rows, int64_t cols) {
  /* the codes of each encoding, written out again (terrain.h) */
  static const int code[3][9] = {{-32768, 1, 2, 3, 4, 5, 6, 7, 8}, {0, 1, 128, 64, 32, 16, 8, 4, 2}, {0, 8, 1, 2, 3, 4, 5, 6, 7}};
  static const GDALDataType type[3] = {GDT_Int16, GDT_Byte, GDT_Byte};
  GDALAllRegister();
  GDALDatasetH ds = GDALOpen(path, GA_ReadOnly);
  if (!ds) return NULL;
  GDALRasterBandH b = GDALGetRasterBand(ds, 1);
  int has_nd = 0;
  const double nd = GDALGetRasterNoDataValue(b, &has_nd);
  if (GDALGetRasterXSize(ds) != cols || GDALGetRasterYSize(ds) != rows || GDALGetRasterDataType(b) != type[encoding] ||
      !has_nd || nd != code[encoding][0]) {
    fprintf(stderr, "%s: wrong size, type or nodata\n", path);
    GDALClose(ds);
    return NULL;
  }
  int *v = malloc(sizeof(int) * (size_t)(rows * cols));
  if (GDALRasterIO(b, GF_Read, 0, 0, (int)cols, (int)rows, v, (int)cols, (int)rows, GDT_Int32, 0, 0) != CE_None) {
    free(v);
    v = NULL;
  }
  GDALClose(ds);
  for (int64_t i = 0; v && i < rows * cols; i++) {
    int k = -1;
    for (int j = 0; j <= 8; j++)
      if (v[i] == code[encoding][j]) k = j;
    if (k < 0) {
      fprintf(stderr, "%s: cell %lld holds %d, not a code\n", path, (long long)i, v[i]);
      free(v);
      return NULL;
    }
    v[i] = k;
  }
  return v;
}

int fd_invariants(const float *fel, const int *dir, int64_t rows, int64_t cols, const char *what) {
  const int64_t n = rows * cols;
  char *state = calloc((size_t)n, 1); /* 0 unseen, 1 on the current path, 2 reaches an outlet */
  int ok = 1;
  for (int64_t i = 0; i < n && ok; i++) {
    const int64_t r = i / cols, c = i % cols;
    const int k = dir[i];
    if (isnan(fel[i])) {
      if (k) ok = 0, fprintf(stderr, "%s: NoData cell %lld has a direction\n", what, (long long)i);
      continue;
    }
    int out = r == 0 || c == 0 || r == rows - 1 || c == cols - 1;
    for (int j = 1; j <= 8 && !out; j++) out = isnan(fel[(r + DR[j]) * cols + c + DC[j]]);
    if (out != (k == 0)) {
      ok = 0;
      fprintf(stderr, "%s: cell (%lld, %lld) %s\n", what, (long long)r, (long long)c,
              out ? "on the edge or next to NoData has a direction" : "has no direction");
      continue;
    }
    if (!k) continue;
    const int64_t j = (r + DR[k]) * cols + c + DC[k];
    if (isnan(fel[j]) || fel[j] > fel[i]) {
      ok = 0;
      fprintf(stderr, "%s: cell (%lld, %lld) points into a higher or NoData cell\n", what, (long long)r, (long long)c);
    }
  }
  /* follow every path; a cell met twice on one path is a cycle */
  int64_t *path = malloc(sizeof(int64_t) * (size_t)n);
  for (int64_t s = 0; s < n && ok; s++) {
    int64_t len = 0, i = s;
    while (ok && state[i] == 0 && dir[i]) {
      state[i] = 1;
      path[len++] = i;
      i = (i / cols + DR[dir[i]]) * cols + i % cols + DC[dir[i]];
    }
    if (state[i] == 1) {
      ok = 0;
      fprintf(stderr, "%s: a cycle through cell %lld\n", what, (long long)i);
    }
    for (int64_t m = 0; m < len; m++) state[path[m]] = 2;
  }
  free(path);
  free(state);
  return ok;
}

int64_t fd_diff(const int *a, const int *b, int64_t n, int64_t cols, const char *what) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++)
    if (a[i] != b[i] && bad++ < 3)
      fprintf(stderr, "%s: cell (%lld, %lld): %d != %d\n", what, (long long)(i / cols), (long long)(i % cols), a[i], b[i]);
  return bad;
}
