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
#include <cpl_error.h>
#include <gdal.h>
#include <math.h>
#include <ogr_api.h>
#include <ogr_srs_api.h>
#include <stdlib.h>
#include <string.h>

#include "d8_codes.h"
#include "dist.h"
#include "step.h"
#include "flow.h"
#include "raster.h"
#include "side_file.h"
#include "vector_crs.h"
#include "vector_out.h"

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

/* The cell of largest accumulation among those whose centres lie within
 * `dist` (map units) of (x, y); ties to the nearer, then to the lower cell
 * index. *cell is left as it is (and *moved -1) when none has a value. */
static int snap_largest(tr_input *acc, const double *gt, double x, double y, double dist, int64_t *cell, int *moved,
                        tr_error *err) {
  const int64_t r0 = *cell / acc->cols, c0 = *cell % acc->cols;
  const int64_t kr = (int64_t)ceil(dist / fabs(gt[5])) + 1, kc = (int64_t)ceil(dist / fabs(gt[1])) + 1;
  const int64_t rlo = r0 - kr > 0 ? r0 - kr : 0, rhi = r0 + kr < acc->rows - 1 ? r0 + kr : acc->rows - 1;
  const int64_t clo = c0 - kc > 0 ? c0 - kc : 0, chi = c0 + kc < acc->cols - 1 ? c0 + kc : acc->cols - 1;
  const int64_t nr = rhi - rlo + 1, nc = chi - clo + 1;
  float *v = malloc((size_t)(nr * nc) * sizeof *v);
  if (!v) return tr_fail(err, TR_ENOMEM, "out of memory for --snap-distance's window (%lld cells)", (long long)(nr * nc));
  int st = tr_input_read_f32(acc, rlo, clo, nr, nc, v, nc, err);
  int64_t best = -1;
  double bv = 0, bd = 0;
  for (int64_t r = 0; r < nr && !st; r++)
    for (int64_t c = 0; c < nc; c++) {
      const float a = v[r * nc + c];
      if (isnan(a) || (acc->has_nodata && a == (float)acc->nodata)) continue;
      const double cx = gt[0] + ((double)(clo + c) + 0.5) * gt[1], cy = gt[3] + ((double)(rlo + r) + 0.5) * gt[5];
      const double d = hypot(cx - x, cy - y);
      if (d > dist) continue;
      if (best < 0 || a > bv || (a == bv && d < bd)) best = (rlo + r) * acc->cols + clo + c, bv = a, bd = d;
    }
  free(v);
  if (!st && best >= 0) {
    const int64_t dr = llabs(best / acc->cols - r0), dc = llabs(best % acc->cols - c0);
    *moved = (int)(dr > dc ? dr : dc);
    *cell = best;
  } else if (!st) {
    *moved = -1;
  }
  return st;
}

static int push_move(tr_outlet_move **v, int64_t *n, int64_t *cap, tr_outlet_move m) {
  if (*n == *cap) {
    const int64_t c = *cap ? 2 * *cap : 64;
    tr_outlet_move *p = realloc(*v, (size_t)c * sizeof *p);
    if (!p) return -1;
    *v = p;
    *cap = c;
  }
  (*v)[(*n)++] = m;
  return 0;
}

/* A point's label: its feature id, or its id_field (an integer field). */
static int label_of(const tr_seed_src *s, OGRFeatureH f, int field, int64_t fid, int32_t *label, tr_error *err) {
  long long v = fid;
  if (field >= 0) {
    if (!OGR_F_IsFieldSetAndNotNull(f, field))
      return tr_fail(err, TR_EINPUT, "'%s': feature %lld has no value in --id-field '%s'", s->points, (long long)fid,
                     s->id_field);
    v = OGR_F_GetFieldAsInteger64(f, field);
  }
  if (v < 0 || v > INT32_MAX)
    return tr_fail(err, TR_EINPUT, "'%s': feature %lld's %s %lld is not a label from 0 to 2147483647", s->points,
                   (long long)fid, field >= 0 ? s->id_field : "id", v);
  *label = (int32_t)v;
  return TR_OK;
}

static int point_seeds(const tr_seed_src *s, tr_basin_seed **out, int64_t *nout, tr_error *err) {
  tr_input dir, acc;
  int st = tr_input_open(&dir, s->dir, 1, err), acc_open = 0;
  if (st) return st;
  /* what the walk down the path stops at: the streams given (>= 1), or
   * the accumulation at --threshold */
  const int walk_streams = s->streams && s->snap_distance <= 0;
  if ((s->snap > 0 || s->snap_distance > 0) && (walk_streams || s->acc)) {
    st = tr_input_open(&acc, walk_streams ? s->streams : s->acc, 1, err);
    acc_open = !st;
  }
  const double stream_at = walk_streams ? 1.0 : s->threshold;
  GDALDatasetH ds = st ? NULL : GDALOpenEx(s->points, GDAL_OF_VECTOR | GDAL_OF_READONLY, NULL, NULL, NULL);
  if (!st && !ds) st = tr_fail(err, TR_EINPUT, "cannot open the outlet points '%s'", s->points);
  OGRLayerH lay = ds ? GDALDatasetGetLayer(ds, 0) : NULL;
  if (!st && !lay) st = tr_fail(err, TR_EINPUT, "'%s' has no layer", s->points);
  OGRCoordinateTransformationH ct = NULL;
  if (!st) st = tr_vector_crs(lay, &dir, s->points, "the outlets", &ct, NULL, err);
  int field = -1;
  if (!st && s->id_field) {
    OGRFeatureDefnH defn = OGR_L_GetLayerDefn(lay);
    field = OGR_FD_GetFieldIndex(defn, s->id_field);
    const OGRFieldType t = field >= 0 ? OGR_Fld_GetType(OGR_FD_GetFieldDefn(defn, field)) : OFTString;
    if (field < 0) st = tr_fail(err, TR_EUSAGE, "--id-field: '%s' has no field '%s'", s->points, s->id_field);
    else if (t != OFTInteger && t != OFTInteger64)
      st = tr_fail(err, TR_EUSAGE, "--id-field: field '%s' of '%s' is not an integer field", s->id_field, s->points);
  }
  if (!st && s->snap_distance > 0 && (dir.gt[2] != 0 || dir.gt[4] != 0))
    st = tr_fail(err, TR_EUSAGE, "--snap-distance: '%s' is a rotated grid", s->dir);
  int64_t n = 0, cap = 0, nm = 0, capm = 0;
  tr_outlet_move *moves = NULL;
  const double *gt = dir.gt;
  OGRFeatureH f;
  if (lay) OGR_L_ResetReading(lay);
  while (!st && lay && (f = OGR_L_GetNextFeature(lay))) {
    OGRGeometryH g = OGR_F_GetGeometryRef(f);
    const GIntBig fid = OGR_F_GetFID(f);
    int32_t label = 0;
    if (!g || wkbFlatten(OGR_G_GetGeometryType(g)) != wkbPoint) {
      st = tr_fail(err, TR_EINPUT, "'%s': feature %lld is not a point", s->points, (long long)fid);
    } else if (!(st = label_of(s, f, field, fid, &label, err))) {
      const double gx = OGR_G_GetX(g, 0), gy = OGR_G_GetY(g, 0);
      double x = gx, y = gy;
      if (ct && !OCTTransform(ct, 1, &x, &y, NULL))
        st = tr_fail(err, TR_EINPUT, "'%s': outlet %lld (%g, %g) cannot be put in the CRS of '%s'", s->points,
                     (long long)fid, gx, gy, s->dir);
      const double c = floor((x - gt[0]) / gt[1]), r = floor((y - gt[3]) / gt[5]);
      if (!st && !(r >= 0 && r < (double)dir.rows && c >= 0 && c < (double)dir.cols)) {
        if (ct)
          st = tr_fail(err, TR_EINPUT, "'%s': outlet %lld (%g, %g; %g, %g in the CRS of '%s') lies outside it",
                       s->points, (long long)fid, gx, gy, x, y, s->dir);
        else
          st = tr_fail(err, TR_EINPUT, "'%s': outlet %lld (%g, %g) lies outside '%s'", s->points, (long long)fid, x, y,
                       s->dir);
      } else if (!st) {
        int64_t cell = (int64_t)r * dir.cols + (int64_t)c, at = cell;
        int moved = 0;
        if (acc_open && s->snap_distance > 0) {
          st = snap_largest(&acc, gt, x, y, s->snap_distance, &cell, &moved, err);
        } else if (acc_open) {
          /* down the flow path, at most snap cells, to the first stream
           * cell (TauDEM: -1 when none is reached, the point kept) */
          moved = -1;
          for (int step = 0; step <= s->snap && !st; step++) {
            if (cell_value(&acc, at, &st, err) >= stream_at) {
              cell = at;
              moved = step;
              break;
            }
            const int d = decode_at(&dir, s->encoding, cell_value(&dir, at, &st, err));
            if (d < 0) break;
            const int64_t rr = at / dir.cols + tr_d8_dr[d], cc = at % dir.cols + tr_d8_dc[d];
            if (rr < 0 || rr >= dir.rows || cc < 0 || cc >= dir.cols) break;
            at = rr * dir.cols + cc;
          }
        }
        /* where it ends must have data: a basin of a nodata cell is empty */
        if (!st && decode_at(&dir, s->encoding, cell_value(&dir, cell, &st, err)) == TR_D8_NODATA && !st)
          st = tr_fail(err, TR_EINPUT, "'%s': outlet %lld (%g, %g) lies on a nodata cell of '%s'%s", s->points,
                       (long long)fid, gx, gy, s->dir, s->snap_distance > 0 ? " with none within --snap-distance" : "");
        if (!st && push(out, &n, &cap, (tr_basin_seed){cell, label}))
          st = tr_fail(err, TR_ENOMEM, "out of memory for the outlets");
        if (!st && s->moves && push_move(&moves, &nm, &capm, (tr_outlet_move){.label = label, .cell = cell, .moved = moved, .x = x, .y = y, .feature = fid}))
          st = tr_fail(err, TR_ENOMEM, "out of memory for the outlets");
      }
    }
    OGR_F_Destroy(f);
  }
  /* no outlet: every basin would be empty, an all-nodata raster; a file with
     none is a mistake more likely than a wish */
  if (!st && lay && n == 0) st = tr_fail(err, TR_EINPUT, "'%s' has no outlet points", s->points);
  if (ct) OCTDestroyCoordinateTransformation(ct);
  if (ds) GDALClose(ds);
  if (acc_open) tr_input_close(&acc);
  tr_input_close(&dir);
  *nout = n;
  if (s->moves && !st) {
    *s->moves = moves;
    *s->nmoves = nm;
  } else {
    free(moves);
  }
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
  st = tr_step_end(s->run, st, err);
  if (st) {
    free(*out);
    *out = NULL;
    *nout = 0;
    if (s->moves) {
      free(*s->moves);
      *s->moves = NULL;
      *s->nmoves = 0;
    }
  }
  return st;
}

typedef struct {
  const char *dir, *dst;
  const tr_outlet_move *m;
  int64_t n;
} moves_out;

static int write_moves(const char *path, const char *drv, void *user, tr_error *err) {
  const moves_out *o = user;
  tr_input dir;
  int st = tr_input_open(&dir, o->dir, 1, err);
  if (st) return st;
  GDALDatasetH ds = GDALCreate(GDALGetDriverByName(drv), path, 0, 0, 0, GDT_Unknown, NULL);
  OGRSpatialReferenceH srs = dir.wkt ? OSRNewSpatialReference(dir.wkt) : NULL;
  if (srs) OSRSetAxisMappingStrategy(srs, OAMS_TRADITIONAL_GIS_ORDER);
  OGRLayerH lay = ds ? GDALDatasetCreateLayer(ds, "moved", srs, wkbPoint, NULL) : NULL;
  if (!lay) st = tr_fail(err, TR_EOUTPUT, "cannot create '%s': %s", o->dst, CPLGetLastErrorMsg());
  static const char *const names[] = {"id", "Dist_moved"};
  for (int i = 0; i < 2 && !st; i++) {
    OGRFieldDefnH fd = OGR_Fld_Create(names[i], OFTInteger);
    if (OGR_L_CreateField(lay, fd, 1) != OGRERR_NONE)
      st = tr_fail(err, TR_EOUTPUT, "cannot write '%s': %s", o->dst, CPLGetLastErrorMsg());
    OGR_Fld_Destroy(fd);
  }
  const double *gt = dir.gt;
  for (int64_t i = 0; i < o->n && !st; i++) {
    const tr_outlet_move *m = &o->m[i];
    /* where it went: its cell's centre; not moved: where it was given */
    const double c = (double)(m->cell % dir.cols) + 0.5, r = (double)(m->cell / dir.cols) + 0.5;
    const double x = m->moved >= 0 ? gt[0] + c * gt[1] + r * gt[2] : m->x;
    const double y = m->moved >= 0 ? gt[3] + c * gt[4] + r * gt[5] : m->y;
    OGRFeatureH f = OGR_F_Create(OGR_L_GetLayerDefn(lay));
    OGR_F_SetFieldInteger(f, 0, m->label);
    OGR_F_SetFieldInteger(f, 1, m->moved);
    OGRGeometryH g = OGR_G_CreateGeometry(wkbPoint);
    OGR_G_SetPoint_2D(g, 0, x, y);
    OGR_F_SetGeometryDirectly(f, g);
    if (OGR_L_CreateFeature(lay, f) != OGRERR_NONE)
      st = tr_fail(err, TR_EOUTPUT, "cannot write outlet %lld to '%s': %s", (long long)m->feature, o->dst,
                   CPLGetLastErrorMsg());
    OGR_F_Destroy(f);
  }
  if (ds) GDALClose(ds);
  if (srs) OSRDestroySpatialReference(srs);
  tr_input_close(&dir);
  return st;
}

int tr_outlets_write(const tr_run_opts *run, const char *dir, const tr_outlet_move *m, int64_t n, const char *dst,
                     const char *driver, tr_error *err) {
  moves_out o = {dir, dst, m, n};
  tr_vector_job j = {run, dst, driver, write_moves, &o};
  return tr_step_writer(run, tr_vector_write, &j, err);
}

int tr_outlet_table_write(const tr_run_opts *run, const char *dir, int encoding, const char *basins,
                          const tr_outlet_move *m, int64_t n, const char *dst, tr_error *err) {
  int st = TR_OK;
  if (tr_rank() == 0) {
    tr_input d, w;
    st = tr_input_open(&d, dir, 1, err);
    const int dopen = !st;
    if (!st) st = tr_input_open(&w, basins, 1, err);
    const int wopen = dopen && !st;
    tr_side_file *side = NULL;
    FILE *f = NULL;
    if (!st) st = tr_side_open(dst, "outlet table", &side, &f, err);
    int bad = !st && fprintf(f, "id iddown\n") < 0;
    for (int64_t i = 0; i < n && !st && !bad; i++) {
      long long down = -1;
      const int dd = decode_at(&d, encoding, cell_value(&d, m[i].cell, &st, err));
      if (dd >= 0 && dd != TR_D8_NONE) {
        const int64_t rr = m[i].cell / d.cols + tr_d8_dr[dd], cc = m[i].cell % d.cols + tr_d8_dc[dd];
        if (rr >= 0 && rr < d.rows && cc >= 0 && cc < d.cols) {
          const float v = cell_value(&w, rr * d.cols + cc, &st, err);
          if (!isnan(v)) down = (long long)v;
        }
      }
      bad = !st && fprintf(f, "%ld %lld\n", (long)m[i].label, down) < 0;
    }
    if (side && (st || bad)) tr_side_abort(side);
    else if (side) st = tr_side_close(side, err);
    if (!st && bad) st = tr_fail(err, TR_EOUTPUT, "cannot write the outlet table '%s'", dst);
    if (wopen) tr_input_close(&w);
    if (dopen) tr_input_close(&d);
  }
  return tr_step_end(run, st, err);
}
