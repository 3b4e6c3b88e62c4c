/*
 * slope.c - gdaldem-compatible slope (Horn or Zevenbergen-Thorne).
 *
 *   Horn: dzdx = ((z0 + 2 z3 + z6) - (z2 + 2 z5 + z8)) / ewres
 *         dzdy = ((z6 + 2 z7 + z8) - (z0 + 2 z1 + z2)) / nsres
 *         slope = atan(sqrt(dzdx^2 + dzdy^2) / (8 scale))
 *   ZT:   dzdx = (z3 - z5) / ewres, dzdy = (z7 - z1) / nsres, divisor 2 scale
 *
 * The window sums are Float32 as in gdaldem. The rest is Float32 too, with a
 * branch-free arctangent the compiler vectorises; it stays within 1e-5
 * degree of gdaldem's double-precision atan (tests check 1e-3). The fast
 * path and the edge/nodata path call the same slope_cell() (gradient_cell.h,
 * shared with the GPU version), so a cell's value never depends on which
 * path, tile, thread or device computed it.
 */
#include <math.h>
#include <string.h>

#include "gradient.h"
#include "gradient_cell.h"
#include "out_range.h"

/* One interior span of a row. horn and percent are constants at each call
 * (slope_kernel switches on them), so the loop has no control flow and GCC
 * vectorises it; the cell is slope_cell()'s, with the same operations. */
static inline __attribute__((always_inline)) void slope_span(const slope_row *s0, const int horn, const int percent,
                                                              const float *restrict up, const float *restrict md,
                                                              const float *restrict dn, float *restrict o, int64_t lo,
                                                              int64_t hi) {
  slope_row s = *s0;
  s.horn = horn;
  s.percent = percent;
  for (int64_t c = lo; c < hi; c++)
    o[c] = slope_cell(&s, up[c - 1], up[c], up[c + 1], md[c - 1], md[c + 1], dn[c - 1], dn[c], dn[c + 1]);
}

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
/* AVX2 where the CPU has it: the same operations eight cells at a time (no
 * FMA), so the same bits as the baseline clone */
__attribute__((target_clones("avx2", "default")))
#endif
static void slope_row_clean(const slope_row *s, const float *up, const float *md, const float *dn, float *o, int64_t lo,
                            int64_t hi) {
  if (s->horn)
    s->percent ? slope_span(s, 1, 1, up, md, dn, o, lo, hi) : slope_span(s, 1, 0, up, md, dn, o, lo, hi);
  else
    s->percent ? slope_span(s, 0, 1, up, md, dn, o, lo, hi) : slope_span(s, 0, 0, up, md, dn, o, lo, hi);
}

/* A cell off the interior span: gdaldem's edge and nodata rules. */
static float slope_edge(const tr_gradient_params *p, const slope_row *s, const tr_window *w, int64_t r, int64_t c) {
  float win[9];
  return tr_window3(w, &p->nd, p->compute_edges, r, c, win)
             ? slope_cell(s, win[0], win[1], win[2], win[3], win[5], win[6], win[7], win[8])
             : p->dst_nodata;
}

static int slope_kernel(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *outv) {
  const tr_gradient_params *p = params;
  float *out = outv;
  const int clean = tr_window_clean(w, &p->nd);
  for (int64_t r = row0; r < row0 + nrows; r++) {
    const int64_t gr = w->grow0 + r;
    float *o = out + (r - row0) * w->cols;
    slope_row s;
    slope_row_init(p, gr, &s);
    /* Columns [lo, hi) take the vectorised path: an interior row of a tile
     * without nodata, minus the raster's first and last column. The rest go
     * through gdaldem's edge and nodata rules. */
    int64_t lo = 0, hi = 0;
    const int edge_row = gr == 0 || gr == w->raster_rows - 1;
    if (clean && !edge_row) {
      lo = w->gcol0 == 0 ? 1 : 0;
      hi = w->gcol0 + w->cols == w->raster_cols ? w->cols - 1 : w->cols;
      const float *up = tr_row(w, r - 1);
      const float *md = tr_row(w, r);
      const float *dn = tr_row(w, r + 1);
      slope_row_clean(&s, up, md, dn, o, lo, hi);
    }
    /* The rest, [0, lo) and [hi, cols), without visiting the span (a loop
     * over every column that skipped it cost 15% of the kernel). */
    for (int64_t c = 0; c < lo; c++) o[c] = slope_edge(p, &s, w, r, c);
    for (int64_t c = hi; c < w->cols; c++) o[c] = slope_edge(p, &s, w, r, c);
  }
  return 0;
}

void tr_slope_opts_init(tr_slope_opts *o) {
  tr_run_opts_init(&o->run);
  o->alg = TR_GRAD_HORN;
  o->percent = 0;
  o->scale = 0;
  o->compute_edges = 0;
}

/* Invariant: degrees in [0, 90], percent in [0, +inf], or the nodata value. */
static int64_t slope_check(const void *params, const tr_window *w, const void *out) {
  const tr_gradient_params *p = params;
  return tr_count_outside(out, w->rows * w->cols, 0.0f, p->percent ? INFINITY : 90.0f, 1, p->dst_nodata, 1);
}

const tr_kernel tr_kernel_slope = {
    .name = "slope",
    .halo = 1,
    .params_size = sizeof(tr_gradient_params),
    .out_type = GDT_Float32,
    .bands = 1,
    .cpu = slope_kernel,
    .check = slope_check};

int tr_slope(const tr_slope_opts *opts, const char *src, const char *dst, tr_error *err) {
  tr_gradient_setup g;
  memset(&g, 0, sizeof g);
  g.p.alg = opts->alg;
  g.p.percent = opts->percent;
  g.p.compute_edges = opts->compute_edges;
  g.p.dst_nodata = -9999.0f;
  g.p.dst_has_nodata = 1;
  g.scale_opt = opts->scale;
  return tr_run_kernel(&opts->run, "slope", tr_gradient_prepare, &g, src, dst, err);
}
