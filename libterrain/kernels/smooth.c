/*
 * smooth.c - iterated 3x3 mean filter (`terrafort smooth --passes N`): each
 * pass replaces every cell by the mean of the valid cells of its 3x3
 * neighbourhood (itself included); nodata stays nodata and is never averaged
 * in; cells beyond the raster do not exist. N passes smooth a DEM's noise
 * before slope or hillshade (GRASS r.neighbors method=average run N times).
 *
 * It is the in-place iterative kernel of the kernel table (kernel.h): a pass
 * is written in place over the tile's window, keeping three saved input
 * lines (the one above, the current, the one below) so each output is the
 * mean of the pass's inputs (a Jacobi step, not Gauss-Seidel): the result
 * is that of the whole raster, whatever the tile size. After p passes, cells
 * within p of the window's edge are off (their neighbourhood was cut), so
 * the row's halo is the most passes, TR_SMOOTH_MAX_PASSES, and a tile's
 * cells are exact for any N up to it. The sums run in one fixed order in
 * Float32, so every path (in place, on a private copy, any row split) gives
 * the same bytes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor.h"
#include "out_range.h"
#include "window3.h"

typedef struct {
  tr_nodata nd;
  int passes;
  float dst_nodata;
} smooth_params;

static int smooth_passes(const void *params) { return ((const smooth_params *)params)->passes; }

/* Saves window row r into line (first pass: nodata -> NaN). */
static void load(const smooth_params *p, int first, const float *in, int64_t stride, int64_t r, int64_t cols,
                 float *line) {
  const float *src = in + r * stride;
  if (!first) {
    memcpy(line, src, (size_t)cols * sizeof *line);
    return;
  }
  for (int64_t c = 0; c < cols; c++) line[c] = tr_is_nodata(&p->nd, src[c]) ? NAN : src[c];
}

static int smooth_pass(const void *params, int first, const float *in, float *out, int64_t stride, int64_t rows,
                       int64_t cols) {
  const smooth_params *p = params;
  float *buf = malloc((size_t)(3 * cols) * sizeof *buf);
  if (!buf) return -1;
  float *prev = buf, *cur = buf + cols, *next = buf + 2 * cols;
  load(p, first, in, stride, 0, cols, cur);
  if (rows > 1) load(p, first, in, stride, 1, cols, next);
  for (int64_t r = 0; r < rows; r++) {
    const float *lines[3] = {r > 0 ? prev : NULL, cur, r + 1 < rows ? next : NULL};
    float *o = out + r * stride;
    for (int64_t c = 0; c < cols; c++) {
      if (isnan(cur[c])) {
        o[c] = NAN;
        continue;
      }
      float sum = 0.0f;
      int n = 0;
      for (int i = 0; i < 3; i++) {
        if (!lines[i]) continue;
        for (int64_t j = c - 1; j <= c + 1; j++)
          if (j >= 0 && j < cols && !isnan(lines[i][j])) sum += lines[i][j], n++;
      }
      o[c] = sum / (float)n;
    }
    /* rotate; the line two below is saved before row r + 1 is written */
    float *t = prev;
    prev = cur;
    cur = next;
    next = t;
    if (r + 2 < rows) load(p, first, in, stride, r + 2, cols, next);
  }
  free(buf);
  return 0;
}

static int smooth_finish(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *outv) {
  const smooth_params *p = params;
  float *out = outv;
  for (int64_t r = row0; r < row0 + nrows; r++) {
    const float *src = tr_row(w, r);
    float *o = out + (r - row0) * w->cols;
    for (int64_t c = 0; c < w->cols; c++) o[c] = isnan(src[c]) ? p->dst_nodata : src[c];
  }
  return 0;
}

/* The whole kernel on a private copy of rows [row0 - halo, row0 + nrows +
 * halo) of the window (--ft dual and its workers run rows this way). */
static int smooth_kernel(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *out) {
  const smooth_params *p = params;
  const int64_t h = w->halo, rows = nrows + 2 * h, cols = w->cols + 2 * h;
  float *work = malloc((size_t)(rows * w->in_stride) * sizeof *work);
  if (!work) return -1;
  int rc = 0;
  for (int k = 0; k < p->passes && !rc; k++)
    rc = smooth_pass(params, k == 0, k == 0 ? w->in + row0 * w->in_stride : work, work, w->in_stride, rows, cols);
  tr_window sub = *w;
  sub.in = work;
  sub.rows = nrows;
  sub.grow0 = w->grow0 + row0;
  if (!rc) rc = smooth_finish(params, &sub, 0, nrows, out);
  free(work);
  return rc;
}

/* Invariant: a mean of valid values of the window lies within their span
 * (the window as read, or the passes' work window, whose nodata is NaN). */
static int64_t smooth_check(const void *params, const tr_window *w, const void *out) {
  const smooth_params *p = params;
  float lo, hi;
  if (!tr_window_span(w, &p->nd, &lo, &hi))
    return tr_count_outside(out, w->rows * w->cols, 1.0f, 0.0f, 1, p->dst_nodata, 0);
  const float e = (float)(TR_OUT_SLACK * (fabs((double)lo) + fabs((double)hi))) + 1e-30f;
  return tr_count_outside(out, w->rows * w->cols, lo - e, hi + e, 1, p->dst_nodata, 0);
}

const tr_kernel tr_kernel_smooth = {
    .name = "smooth",
    .halo = TR_SMOOTH_MAX_PASSES,
    .params_size = sizeof(smooth_params),
    .out_type = GDT_Float32,
    .bands = 1,
    .cpu = smooth_kernel,
    .check = smooth_check};
const tr_kernel_iter tr_kernel_iter_smooth = {
    .row = &tr_kernel_smooth, .passes = smooth_passes, .pass = smooth_pass, .finish = smooth_finish};

static int smooth_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err) {
  const tr_smooth_opts *o = opts;
  if (o->passes < 1 || o->passes > TR_SMOOTH_MAX_PASSES)
    return tr_fail(err, TR_EUSAGE, "--passes: %d is out of range [1, %d]", o->passes, TR_SMOOTH_MAX_PASSES);
  smooth_params *p = params;
  p->nd = tr_nodata_of(in->has_nodata, in->nodata);
  p->passes = o->passes;
  p->dst_nodata = -9999.0f;
  prod->has_nodata = 1;
  prod->nodata = p->dst_nodata;
  return TR_OK;
}

void tr_smooth_opts_init(tr_smooth_opts *o) {
  tr_run_opts_init(&o->run);
  o->passes = 2;
}

int tr_smooth(const tr_smooth_opts *opts, const char *src, const char *dst, tr_error *err) {
  return tr_run_kernel(&opts->run, "smooth", smooth_prepare, opts, src, dst, err);
}
