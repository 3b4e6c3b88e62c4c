/*
 * aspect.c - gdaldem-compatible aspect (Horn or Zevenbergen-Thorne).
 *
 * As in gdaldem, aspect uses the raw window differences (the cell size does
 * not enter), atan2 in double precision, azimuth degrees clockwise from
 * north by default or counter-clockwise from east with -trigonometric, and
 * flat cells (both differences exactly 0) become nodata, or 0 with
 * -zero_for_flat (which, as in gdaldem, also leaves the output without a
 * nodata value: cells without a result are 0 too).
 *
 * The angle is atan2 in double precision, as gdaldem's, but our own
 * branch-free one (aspect_atan2 below) so that a row of interior cells
 * vectorises: it is within a few double ulps of the C library's, so after the
 * conversion to Float32 degrees it gives the same float except when the exact
 * value lies within ~1e-15 of a rounding boundary (then one float ulp, 3e-5
 * degree at most). Its sign is always the sign of the difference, so a value
 * next to the 0/360 wrap never jumps to the other side. It uses only +, -, *,
 * / and copysign, so every machine gives the same bits (no FMA contraction:
 * the project builds with -ffp-contract=off). Infinite differences (huge
 * elevations) go to the C library's atan2, as before.
 *
 * Unlike gdaldem, the grid's orientation counts: rows running north (a
 * south-up DEM, geotransform[5] > 0) or columns running west
 * (geotransform[1] < 0) flip the difference's sign, so the azimuth is the
 * true one (gdaldem mirrors it). A DEM without a geotransform is north-up.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gradient.h"
#include "gradient_cell.h"
#include "out_range.h"

/* Interior cells [c0, c1) of block row r, whose windows hold no nodata: the
 * differences, then the angles in one loop the compiler vectorises, then the
 * values. dx, dy, deg: scratch of at least c1 doubles. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
/* AVX2 where the CPU has it: the same operations four cells at a time (no
 * FMA), so the same bits as the baseline clone */
__attribute__((target_clones("avx2", "default")))
#endif
static void aspect_row_clean(const tr_gradient_params *p, const tr_window *w, int64_t r, int64_t c0, int64_t c1,
                             double *dx, double *dy, double *deg, float *o) {
  const float *a = tr_row(w, r - 1), *b = tr_row(w, r), *d = tr_row(w, r + 1);
  /* each loop without branches, so each vectorises; the signs as factors of
   * +-1, which are exact (and keep a zero's sign as negation does) */
  const double sx = p->gt[1] < 0 ? -1.0 : 1.0, sy = p->gt[5] > 0 ? -1.0 : 1.0;
  if (p->alg == TR_GRAD_HORN)
    for (int64_t c = c0; c < c1; c++) aspect_diff(1, a, b, d, c, &dx[c], &dy[c]);
  else
    for (int64_t c = c0; c < c1; c++) aspect_diff(0, a, b, d, c, &dx[c], &dy[c]);
  for (int64_t c = c0; c < c1; c++) {
    dx[c] *= sx;
    dy[c] *= sy;
    deg[c] = aspect_atan2(dy[c], -dx[c]);
  }
  /* aspect_fix's NaN test as a reduction, and its library call only in a
   * row that needs it (overflowing windows): the loop below then has no
   * control flow and vectorises (it ran scalar, half of this function) */
  int bad = 0;
  for (int64_t c = c0; c < c1; c++) bad |= aspect_needs_fix(deg[c], dy[c], -dx[c]);
  if (bad)
    for (int64_t c = c0; c < c1; c++) deg[c] = aspect_fix(deg[c], dy[c], -dx[c]);
  const float flat = aspect_flat(p);
  if (p->trigonometric)
    for (int64_t c = c0; c < c1; c++) o[c] = aspect_value_of(1, flat, dx[c], dy[c], deg[c] * (180.0 / M_PI));
  else
    for (int64_t c = c0; c < c1; c++) o[c] = aspect_value_of(0, flat, dx[c], dy[c], deg[c] * (180.0 / M_PI));
}

/* A cell off the fast path: gdaldem's edge and nodata rules. */
static float aspect_edge(const tr_gradient_params *p, const tr_window *w, int64_t r, int64_t c) {
  float win[9];
  return tr_window3(w, &p->nd, p->compute_edges, r, c, win) ? aspect_cell(p, win) : p->dst_nodata;
}

static int aspect_kernel(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *outv) {
  const tr_gradient_params *p = params;
  float *out = outv;
  const int clean = tr_window_clean(w, &p->nd);
  double *scratch = clean ? malloc((size_t)(3 * w->cols) * sizeof(double)) : NULL;
  if (clean && !scratch) return -1;
  for (int64_t r = row0; r < row0 + nrows; r++) {
    const int64_t gr = w->grow0 + r;
    float *o = out + (r - row0) * w->cols;
    const int edge_row = gr == 0 || gr == w->raster_rows - 1;
    /* interior columns: neither the raster's first nor its last */
    const int64_t c0 = w->gcol0 == 0 ? 1 : 0;
    const int64_t c1 = w->gcol0 + w->cols == w->raster_cols ? w->cols - 1 : w->cols;
    int64_t done0 = 0, done1 = 0; /* columns [done0, done1) computed by the fast path */
    if (clean && !edge_row && c1 > c0) {
      aspect_row_clean(p, w, r, c0, c1, scratch, scratch + w->cols, scratch + 2 * w->cols, o);
      done0 = c0;
      done1 = c1;
    }
    /* the rest, [0, done0) and [done1, cols), without visiting the span */
    for (int64_t c = 0; c < done0; c++) o[c] = aspect_edge(p, w, r, c);
    for (int64_t c = done1; c < w->cols; c++) o[c] = aspect_edge(p, w, r, c);
  }
  free(scratch);
  return 0;
}

/* The gradient family's set-up; aspect reads only the signs of the
 * geotransform's steps (a DEM without one counts as north-up). */
static int aspect_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod, tr_error *err) {
  int st = tr_gradient_prepare(in, opts, params, prod, err);
  tr_gradient_params *p = params;
  if (!st && !in->has_gt) {
    p->gt[1] = 1.0;
    p->gt[5] = -1.0;
  }
  return st;
}

void tr_aspect_opts_init(tr_aspect_opts *o) {
  tr_run_opts_init(&o->run);
  o->alg = TR_GRAD_HORN;
  o->trigonometric = 0;
  o->zero_for_flat = 0;
  o->compute_edges = 0;
}

/* Invariant: degrees in [0, 360) (360 itself, for rounding), the flat
 * value (the nodata value, or 0 with -zero_for_flat) or the nodata value. */
static int64_t aspect_check(const void *params, const tr_window *w, const void *out) {
  const tr_gradient_params *p = params;
  return tr_count_outside(out, w->rows * w->cols, 0.0f, 360.0f, 1, p->dst_nodata, 1);
}

const tr_kernel tr_kernel_aspect = {
    .name = "aspect",
    .halo = 1,
    .params_size = sizeof(tr_gradient_params),
    .out_type = GDT_Float32,
    .bands = 1,
    .cpu = aspect_kernel,
    .check = aspect_check};

int tr_aspect(const tr_aspect_opts *opts, const char *src, const char *dst, tr_error *err) {
  tr_gradient_setup g;
  memset(&g, 0, sizeof g);
  tr_gradient_params *p = &g.p;
  p->alg = opts->alg;
  p->trigonometric = opts->trigonometric;
  p->zero_for_flat = opts->zero_for_flat;
  p->compute_edges = opts->compute_edges;
  /* gdaldem declares no output nodata with -zero_for_flat, so cells
   * without a value (edges, nodata) are 0 there as well. */
  p->dst_nodata = opts->zero_for_flat ? 0.0f : -9999.0f;
  p->dst_has_nodata = !opts->zero_for_flat;
  return tr_run_kernel(&opts->run, "aspect", aspect_prepare, &g, src, dst, err);
}
