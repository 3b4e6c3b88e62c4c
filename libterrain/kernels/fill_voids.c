/*
 * fill_voids.c - `terrafort interpolate --fill-voids`: NoData cells of a
 * raster filled by inverse distance from the valid cells around each void,
 * with gdal_fillnodata's -md (search distance) and -si (smoothing passes)
 * and its values (GDAL 3.6's GDALFillNodata, in Float32 as GDAL works).
 *
 * What GDAL does, and so what this does:
 * - down each column, the nearest valid cell above (and, in a second pass,
 *   below) a cell, forgotten once more than md rows away;
 * - for a void cell, four quadrants (up-left, down-left, up-right,
 *   down-right) are searched by stepping left and right a column at a time
 *   (up to floor(md) steps, the limit re-read every fourth step as the
 *   largest distance found so far, so possibly md + 1), each keeping the
 *   closest column-nearest cell; the value is the mean of the quadrants'
 *   values within md, weighted by 1 / distance (not squared);
 * - then si Jacobi passes of a 3x3 mean over the filled cells, among the
 *   cells valid after filling, on every row but the first and the last;
 * - cells with nothing within md stay NoData;
 * - an integer raster's filled values are rounded (GDAL writes them to the
 *   band) before the smoothing passes read them back.
 *
 * A run goes through the executor as a source (executor.h): a tile's input
 * is its raster window with a halo of floor(md) + 2 + si cells (everything
 * its cells' values can depend on), read here under the executor's read
 * lock; the kernel runs GDAL's passes on the window alone. So threads,
 * mpirun, --ft dual and the output path are the executor's.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor.h"
#include "grid.h"
#include "kernel.h"
#include "raster.h"
#include "side_file.h"

typedef struct {
  double md;             /* the search distance, cells */
  int64_t si;            /* smoothing passes */
  int64_t halo;          /* floor(md) + 2 + si */
  int64_t rows, cols;    /* the raster */
  uint32_t sentinel;     /* GDAL's "no cell" row index */
  int32_t has_nodata;
  float nodata;
  int32_t int_type;      /* the raster's GDALDataType when it is an integer type, else 0 */
} fv_params;

/* A tile's input: this head, then the window's cells (NaN: void). */
typedef struct {
  int64_t row0, col0, rows, cols; /* the window in the raster */
} fv_head;

static inline int fv_void(const fv_params *p, float v) { return isnan(v) || (p->has_nodata && v == p->nodata); }

/* One quadrant candidate, as GDAL's QUAD_CHECK. */
static inline void quad_check(double *qd, float *qv, int64_t tx, uint32_t ty, int64_t ox, int64_t oy, float tv,
                              uint32_t sentinel) {
  if (ty == sentinel) return;
  const double dx = (double)tx - (double)ox, dy = (double)ty - (double)oy, d2 = dx * dx + dy * dy;
  if (d2 < *qd * *qd) {
    *qd = sqrt(d2);
    *qv = tv;
  }
}

/* One row of a column pass: each column's nearest valid cell so far (row
 * index and value), forgotten beyond md rows; `down` is the top-down pass
 * (GDAL compares in double there, as an unsigned difference bottom-up). */
static void column_step(const fv_params *p, const float *row, int64_t C, int64_t gy, int down, const uint32_t *lastY,
                        const float *lastV, uint32_t *thisY, float *thisV) {
  for (int64_t c = 0; c < C; c++) {
    const float v = row[c];
    const int near = down ? (double)gy <= p->md + (double)lastY[c]
                          : (double)(uint32_t)(lastY[c] - (uint32_t)gy) <= p->md;
    if (!fv_void(p, v)) {
      thisV[c] = v;
      thisY[c] = (uint32_t)gy;
    } else if (near) {
      thisV[c] = lastV[c];
      thisY[c] = lastY[c];
    } else {
      thisY[c] = p->sentinel;
    }
  }
}

static void swap_rows(uint32_t **a, uint32_t **b, float **av, float **bv) {
  uint32_t *t = *a;
  *a = *b;
  *b = t;
  float *tv = *av;
  *av = *bv;
  *bv = tv;
}

/* GDAL's fill on window w (rows x cols at global row0/col0): filled values
 * into out (w's size), filt[] set where a void was filled. */
static int fv_fill(const fv_params *p, const fv_head *h, const float *w, float *out, unsigned char *filt) {
  const int64_t R = h->rows, C = h->cols;
  const uint32_t S = p->sentinel;
  const double md = p->md;
  const int64_t nmd = (int64_t)floor(md);
  uint32_t *topY = malloc((size_t)(R * C) * sizeof *topY);
  float *topV = malloc((size_t)(R * C) * sizeof *topV);
  uint32_t *lastY = malloc((size_t)C * sizeof *lastY), *thisY = malloc((size_t)C * sizeof *thisY);
  float *lastV = calloc((size_t)C, sizeof *lastV), *thisV = calloc((size_t)C, sizeof *thisV);
  int rc = topY && topV && lastY && thisY && lastV && thisV ? 0 : -1;
  if (!rc) {
    for (int64_t c = 0; c < C; c++) lastY[c] = S;
    for (int64_t r = 0; r < R; r++) { /* top-down */
      const int64_t gy = h->row0 + r;
      column_step(p, w + r * C, C, gy, 1, lastY, lastV, thisY, thisV);
      memcpy(topY + r * C, thisY, (size_t)C * sizeof *thisY);
      memcpy(topV + r * C, thisV, (size_t)C * sizeof *thisV);
      swap_rows(&lastY, &thisY, &lastV, &thisV);
    }
    for (int64_t c = 0; c < C; c++) lastY[c] = S;
    for (int64_t r = R - 1; r >= 0; r--) { /* bottom-up, filling */
      const int64_t gy = h->row0 + r;
      column_step(p, w + r * C, C, gy, 0, lastY, lastV, thisY, thisV);
      const uint32_t *tdY = topY + r * C;
      const float *tdV = topV + r * C;
      for (int64_t c = 0; c < C; c++) {
        const float v = w[r * C + c];
        out[r * C + c] = v;
        filt[r * C + c] = 0;
        if (!fv_void(p, v)) continue;
        double qd[4] = {md + 1.0, md + 1.0, md + 1.0, md + 1.0};
        float qv[4] = {0, 0, 0, 0};
        const int64_t gx = h->col0 + c;
        int64_t lim = nmd;
        for (int64_t step = 0; step <= lim; step++) {
          const int64_t l = c - step < 0 ? 0 : c - step, rr = c + step > C - 1 ? C - 1 : c + step;
          quad_check(&qd[0], &qv[0], h->col0 + l, tdY[l], gx, gy, tdV[l], S);
          quad_check(&qd[1], &qv[1], h->col0 + l, lastY[l], gx, gy, lastV[l], S);
          if (step == 0) continue;
          quad_check(&qd[2], &qv[2], h->col0 + rr, tdY[rr], gx, gy, tdV[rr], S);
          quad_check(&qd[3], &qv[3], h->col0 + rr, lastY[rr], gx, gy, lastV[rr], S);
          if ((step & 3) == 0) lim = (int64_t)floor(fmax(fmax(qd[0], qd[1]), fmax(qd[2], qd[3])));
        }
        double ws = 0, vs = 0;
        int any = 0;
        for (int q = 0; q < 4; q++)
          if (qd[q] <= md) {
            any = 1;
            if (!p->has_nodata || qv[q] != p->nodata) {
              ws += 1.0 / qd[q];
              vs += qv[q] * (1.0 / qd[q]);
            }
          }
        if (any) {
          filt[r * C + c] = 1;
          out[r * C + c] = ws > 0 ? (float)(vs / ws) : p->nodata;
        }
      }
      swap_rows(&lastY, &thisY, &lastV, &thisV);
    }
  }
  free(topY);
  free(topV);
  free(lastY);
  free(thisY);
  free(lastV);
  free(thisV);
  return rc;
}

/* si Jacobi passes of GDAL's 3x3 filter over the filled cells of a. */
static int fv_smooth(const fv_params *p, const fv_head *h, float *a, const unsigned char *filt) {
  const int64_t R = h->rows, C = h->cols;
  float *b = malloc((size_t)(R * C) * sizeof *b);
  unsigned char *valid = malloc((size_t)(R * C));
  if (!b || !valid) {
    free(b);
    free(valid);
    return -1;
  }
  for (int64_t i = 0; i < R * C; i++) valid[i] = !fv_void(p, a[i]);
  for (int64_t pass = 0; pass < p->si; pass++) {
    memcpy(b, a, (size_t)(R * C) * sizeof *b);
    for (int64_t r = 0; r < R; r++) {
      const int64_t gy = h->row0 + r;
      if (gy < 1 || gy >= p->rows - 1) continue; /* GDAL leaves the first and last rows */
      for (int64_t c = 0; c < C; c++) {
        if (!filt[r * C + c]) continue;
        double sum = 0, n = 0;
        for (int64_t dr = -1; dr <= 1; dr++) {
          const int64_t rr = r + dr;
          if (rr < 0 || rr >= R) continue;
          for (int64_t dc = -1; dc <= 1; dc++) {
            const int64_t cc = c + dc;
            if (cc < 0 || cc >= C || !valid[rr * C + cc]) continue;
            sum += b[rr * C + cc];
            n += 1.0;
          }
        }
        a[r * C + c] = (float)(sum / n);
      }
    }
  }
  free(b);
  free(valid);
  return 0;
}

static int fv_kernel(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *out) {
  const fv_params *p = params;
  if (!w->aux) return -1;
  const fv_head *h = w->aux;
  const float *cells = (const float *)(h + 1);
  const int64_t n = h->rows * h->cols;
  float *a = malloc((size_t)n * sizeof *a);
  unsigned char *filt = malloc((size_t)n);
  int rc = a && filt ? fv_fill(p, h, cells, a, filt) : -1;
  if (!rc && p->si > 0) {
    /* GDAL smooths what it wrote into the band: an integer band holds the
     * filled values rounded */
    if (p->int_type)
      for (int64_t i = 0; i < n; i++)
        if (filt[i]) {
          int clamped, rounded;
          a[i] = (float)GDALAdjustValueToDataType((GDALDataType)p->int_type, a[i], &clamped, &rounded);
        }
    rc = fv_smooth(p, h, a, filt);
  }
  if (!rc) {
    float *o = out;
    for (int64_t r = row0; r < row0 + nrows; r++) {
      const int64_t wr = w->grow0 + r - h->row0, wc = w->gcol0 - h->col0;
      for (int64_t c = 0; c < w->cols; c++) {
        const float v = a[wr * h->cols + wc + c];
        o[(r - row0) * w->cols + c] = fv_void(p, v) && p->has_nodata ? p->nodata : v;
      }
    }
  }
  free(a);
  free(filt);
  return rc;
}

/* No output invariant yet (filled cells are distance-weighted means of
 * cells beyond the window this row is given). */
const tr_kernel tr_kernel_fill_voids = {
    .name = "fill-voids",
    .halo = 0,
    .params_size = sizeof(fv_params),
    .out_type = GDT_Float32,
    .bands = 1,
    .cpu = fv_kernel};

/* ------------------------------------------------------------ the source */

typedef struct {
  fv_params p;
  tr_input *in;
} fv_src;

static int fv_tile_input(void *ctx, const tr_tile *t, tr_bytes *buf, tr_error *e) {
  const fv_src *s = ctx;
  const int64_t H = s->p.halo;
  fv_head h;
  h.row0 = t->row0 - H < 0 ? 0 : t->row0 - H;
  h.col0 = t->col0 - H < 0 ? 0 : t->col0 - H;
  const int64_t r1 = t->row0 + t->rows + H > s->p.rows ? s->p.rows : t->row0 + t->rows + H;
  const int64_t c1 = t->col0 + t->cols + H > s->p.cols ? s->p.cols : t->col0 + t->cols + H;
  h.rows = r1 - h.row0;
  h.cols = c1 - h.col0;
  const size_t need = sizeof h + (size_t)(h.rows * h.cols) * sizeof(float);
  if (buf->cap < need) {
    void *q = realloc(buf->p, need);
    if (!q) return tr_fail(e, TR_ENOMEM, "out of memory for tile %lld's window", (long long)t->index);
    buf->p = q;
    buf->cap = need;
  }
  memcpy(buf->p, &h, sizeof h);
  tr_exec_io_lock();
  const int st = tr_input_read_f32(s->in, h.row0, h.col0, h.rows, h.cols, (float *)((fv_head *)buf->p + 1), h.cols, e);
  tr_exec_io_unlock();
  buf->len = need;
  return st;
}

int tr_fill_voids(const tr_interpolate_opts *o, const char *src, const char *dst, tr_error *err) {
  if (!(o->max_distance >= 0)) return tr_fail(err, TR_EUSAGE, "-md must be 0 or more");
  if (o->smoothing_iterations < 0) return tr_fail(err, TR_EUSAGE, "-si must be 0 or more");
  tr_input in;
  int st = tr_input_open(&in, src, o->run.band, err);
  if (st) return st;
  /* the executor runs over the grid alone (tr_job_open_grid: no dataset),
   * so the files GDAL reads for the DEM (a VRT's sources, the GeoPackage
   * of GPKG:file:table, a zip archive) are refused here */
  const tr_file_role outs[] = {
      {dst, "output"}, {o->run.stats_json, TR_ROLE_STATS_JSON}, {o->run.ft_report, TR_ROLE_FT_REPORT}};
  if ((st = tr_outputs_refuse(outs, 3, NULL, 0, &in, err))) {
    tr_input_close(&in);
    return st;
  }
  fv_src s;
  memset(&s, 0, sizeof s);
  s.in = &in;
  s.p.rows = in.rows;
  s.p.cols = in.cols;
  s.p.md = o->max_distance == 0 ? (double)(in.rows > in.cols ? in.rows : in.cols) + 1 : o->max_distance;
  s.p.si = o->smoothing_iterations;
  s.p.halo = (int64_t)floor(s.p.md) + 2 + s.p.si;
  s.p.sentinel = in.rows > 65533 || in.cols > 65533 ? 4000002u : 65535u;
  s.p.has_nodata = in.has_nodata;
  s.p.nodata = (float)in.nodata;
  s.p.int_type = GDALDataTypeIsInteger(in.type) ? (int32_t)in.type : 0;
  tr_source source = {&in, &s.p, {GDT_Float32, 1, in.has_nodata, in.nodata, in.type}, &s, fv_tile_input, 0, 0};
  st = tr_run_kernel_source(&o->run, "fill-voids", &source, dst, err);
  tr_input_close(&in);
  return st;
}
