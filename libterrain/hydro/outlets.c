/*
 * outlets.c - the seeds of basins other than one per stream link: one basin
 * per edge outlet (every cell where flow leaves the data), or one per outlet
 * point (TauDEM moveoutletstostreams + gagewatershed).
 *
 * Both read what they need on every rank (the same seeds everywhere, no
 * messages): edge outlets by one pass over the direction raster in bands of
 * rows (with a row above and below, to see where a border cell drains);
 * outlet points by reading the few cells on each point's path downstream.
 */
#include <gdal.h>
#include <math.h>
#include <ogr_api.h>
#include <stdlib.h>
#include <string.h>

#include "d8_codes.h"
#include "dist.h"
#include "flow.h"
#include "raster.h"

#define BAND_ROWS 256

static int seed_cmp(const void *pa, const void *pb) {
  const tr_basin_seed *a = pa, *b = pb;
  if (a->cell != b->cell) return a->cell < b->cell ? -1 : 1;
  return (a->label > b->label) - (a->label < b->label);
}

/* The direction of a cell as read (NoData value and NaN: TR_D8_NODATA). */
static int decode_at(const tr_input *in, int enc, float v) {
  if (in->has_nodata && v == (float)in->nodata) return TR_D8_NODATA;
  return tr_d8_decode_value(enc, v);
}

static int push(tr_basin_seed **v, int64_t *n, int64_t *cap, tr_basin_seed s) {
  if (*n == *cap) {
    const int64_t c = *cap ? 2 * *cap : 1024;
    tr_basin_seed *p = realloc(*v, (size_t)c * sizeof *p);
    if (!p) return -1;
    *v = p;
    *cap = c;
  }
  (*v)[(*n)++] = s;
  return 0;
}

static int edge_seeds(const char *dir, int enc, tr_basin_seed **out, int64_t *nout, tr_error *err) {
  tr_input in;
  int st = tr_input_open(&in, dir, 1, err);
  if (st) return st;
  const int64_t rows = in.rows, cols = in.cols;
  float *buf = malloc((size_t)((BAND_ROWS + 2) * cols) * sizeof *buf);
  int64_t n = 0, cap = 0;
  if (!buf) st = tr_fail(err, TR_ENOMEM, "out of memory");
  for (int64_t r0 = 0; r0 < rows && !st; r0 += BAND_ROWS) {
    const int64_t nr = rows - r0 < BAND_ROWS ? rows - r0 : BAND_ROWS;
    st = tr_input_read_f32(&in, r0 - 1, 0, nr + 2, cols, buf, cols, err);
    for (int64_t r = 0; r < nr && !st; r++)
      for (int64_t c = 0; c < cols && !st; c++) {
        const int d = decode_at(&in, enc, buf[(r + 1) * cols + c]);
        if (d == TR_D8_NODATA || d == TR_D8_BAD) continue;
        int leaves = d == TR_D8_NONE;
        if (!leaves) {
          const int64_t rr = r + 1 + tr_d8_dr[d], cc = c + tr_d8_dc[d];
          leaves = r0 + r + tr_d8_dr[d] < 0 || r0 + r + tr_d8_dr[d] >= rows || cc < 0 || cc >= cols ||
                   decode_at(&in, enc, buf[rr * cols + cc]) == TR_D8_NODATA;
        }
        if (!leaves) continue;
        if (n >= INT32_MAX) st = tr_fail(err, TR_EINPUT, "'%s' has more outlets than Int32 labels", dir);
        else if (push(out, &n, &cap, (tr_basin_seed){(r0 + r) * cols + c, (int32_t)(n + 1)}))
          st = tr_fail(err, TR_ENOMEM, "out of memory for the outlets");
      }
  }
  free(buf);
  tr_input_close(&in);
  *nout = n;
  return st;
}

/* One cell's value (NaN outside or nodata). */
static float cell_value(tr_input *in, int64_t cell, int *st, tr_error *err) {
  float v = NAN;
  if (!*st) *st = tr_input_read_f32(in, cell / in->cols, cell % in->cols, 1, 1, &v, 1, err);
  if (in->has_nodata && v == (float)in->nodata) v = NAN;
  return v;
}

static int point_seeds(const tr_seed_src *s, tr_basin_seed **out, int64_t *nout, tr_error *err) {
  tr_input dir, acc;
  int st = tr_input_open(&dir, s->dir, 1, err), acc_open = 0;
  if (st) return st;
  if (s->snap > 0 && s->acc) {
    st = tr_input_open(&acc, s->acc, 1, err);
    acc_open = !st;
  }
  GDALDatasetH ds = st ? NULL : GDALOpenEx(s->points, GDAL_OF_VECTOR | GDAL_OF_READONLY, NULL, NULL, NULL);
  if (!st && !ds) st = tr_fail(err, TR_EINPUT, "cannot open the outlet points '%s'", s->points);
  OGRLayerH lay = ds ? GDALDatasetGetLayer(ds, 0) : NULL;
  if (!st && !lay) st = tr_fail(err, TR_EINPUT, "'%s' has no layer", s->points);
  int64_t n = 0, cap = 0;
  const double *gt = dir.gt;
  OGRFeatureH f;
  if (lay) OGR_L_ResetReading(lay);
  while (!st && lay && (f = OGR_L_GetNextFeature(lay))) {
    OGRGeometryH g = OGR_F_GetGeometryRef(f);
    const GIntBig fid = OGR_F_GetFID(f);
    if (!g || wkbFlatten(OGR_G_GetGeometryType(g)) != wkbPoint) {
      st = tr_fail(err, TR_EINPUT, "'%s': feature %lld is not a point", s->points, (long long)fid);
    } else if (fid < 0 || fid > INT32_MAX) {
      st = tr_fail(err, TR_EINPUT, "'%s': feature id %lld does not fit an Int32 label", s->points, (long long)fid);
    } else {
      const double x = OGR_G_GetX(g, 0), y = OGR_G_GetY(g, 0);
      const double c = floor((x - gt[0]) / gt[1]), r = floor((y - gt[3]) / gt[5]);
      if (!(r >= 0 && r < (double)dir.rows && c >= 0 && c < (double)dir.cols)) {
        st = tr_fail(err, TR_EINPUT, "'%s': outlet %lld (%g, %g) lies outside '%s'", s->points, (long long)fid, x, y,
                     s->dir);
      } else {
        /* move down the flow path, at most snap cells, to the first stream cell */
        int64_t cell = (int64_t)r * dir.cols + (int64_t)c, at = cell;
        for (int step = 0; acc_open && step <= s->snap && !st; step++) {
          if (cell_value(&acc, at, &st, err) >= s->threshold) {
            cell = at;
            break;
          }
          const int d = decode_at(&dir, s->encoding, cell_value(&dir, at, &st, err));
          if (d < 0) break;
          const int64_t rr = at / dir.cols + tr_d8_dr[d], cc = at % dir.cols + tr_d8_dc[d];
          if (rr < 0 || rr >= dir.rows || cc < 0 || cc >= dir.cols) break;
          at = rr * dir.cols + cc;
        }
        if (!st && push(out, &n, &cap, (tr_basin_seed){cell, (int32_t)fid}))
          st = tr_fail(err, TR_ENOMEM, "out of memory for the outlets");
      }
    }
    OGR_F_Destroy(f);
  }
  /* no outlet: every basin would be empty, an all-nodata raster; a file with
     none is a mistake more likely than a wish */
  if (!st && lay && n == 0) st = tr_fail(err, TR_EINPUT, "'%s' has no outlet points", s->points);
  if (ds) GDALClose(ds);
  if (acc_open) tr_input_close(&acc);
  tr_input_close(&dir);
  *nout = n;
  return st;
}

int tr_seeds_build(const tr_seed_src *s, tr_basin_seed **out, int64_t *nout, tr_error *err) {
  *out = NULL;
  *nout = 0;
  int st = s->points ? point_seeds(s, out, nout, err) : edge_seeds(s->dir, s->encoding, out, nout, err);
  if (!st && s->points) {
    /* two points on one cell: the lower id labels it */
    qsort(*out, (size_t)*nout, sizeof **out, seed_cmp);
    int64_t k = 0;
    for (int64_t i = 0; i < *nout; i++)
      if (!k || (*out)[k - 1].cell != (*out)[i].cell) (*out)[k++] = (*out)[i];
    *nout = k;
  }
  st = tr_dist_agree(s->run, st, err);
  if (st) {
    free(*out);
    *out = NULL;
    *nout = 0;
  }
  return st;
}
