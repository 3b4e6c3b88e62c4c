/*
 * rugged.h - what the TRI, TPI and roughness kernels share (internal to
 * libterrain): their params, their prepare function and their row loop.
 *
 * The three are gdaldem's "generic 3x3" modes: a Float32 value from the nine
 * cells of a window, nodata -9999, gdaldem's edge and nodata rules
 * (window3.h). Each kernel file supplies only its cell formula; the loop
 * here calls it on two paths: interior rows of a tile without nodata go
 * through a straight loop that the compiler vectorises once the formula is
 * inlined into it (the kernels pass it as a constant function pointer to a
 * static inline function), and every other cell goes through tr_window3().
 * Both paths call the same formula in the same order of operations, so a
 * cell's bytes never depend on the path, the tile or the thread.
 *
 * gdaldem reads Byte, Int16 and UInt16 sources as integers: their nodata
 * counts only when it is within 1e-2 of an integer in the type's range, and
 * is then rounded. The prepare function applies the same rule; the formulas
 * give the same values on integer and Float32 windows for these types (sums
 * of 16-bit values are exact in Float32).
 */
#ifndef TR_RUGGED_H
#define TR_RUGGED_H

#include <math.h>
#include <stdint.h>

#include "executor.h"
#include "kernel.h"
#include "raster.h"
#include "terrain.h"
#include "out_range.h"
#include "window3.h"

typedef struct {
  tr_nodata nd;
  float dst_nodata;     /* -9999, as gdaldem */
  int compute_edges;
  int alg;              /* TRI: a tr_tri_alg; 0 for the others */
} tr_rugged_params;

/* The value of a cell from its window w0..w8 (row-major, w4 the centre). */
typedef float (*tr_rugged_cell_fn)(const tr_rugged_params *p, float w0, float w1, float w2, float w3, float w4,
                                   float w5, float w6, float w7, float w8);

/* A tr_prepare_fn (executor.h): `opts` is a tr_rugged_params with the
 * command's flags; completes it with the input's nodata. */
static inline int tr_rugged_prepare(const tr_input *in, const void *opts, void *params, tr_product *prod,
                                    tr_error *err) {
  tr_rugged_params *p = params;
  *p = *(const tr_rugged_params *)opts;
  if (p->alg != TR_TRI_RILEY && p->alg != TR_TRI_WILSON) return tr_fail(err, TR_EUSAGE, "unknown TRI algorithm");
  p->nd = tr_nodata_gdaldem(in->type, in->has_nodata, in->nodata);
  prod->has_nodata = 1;
  prod->nodata = p->dst_nodata;
  return TR_OK;
}

/* Columns [c0, c1) of block row r through gdaldem's edge and nodata rules. */
static inline void tr_rugged_slow(const tr_rugged_params *p, const tr_window *w, int64_t r, int64_t c0, int64_t c1,
                                  float *o, tr_rugged_cell_fn cell) {
  for (int64_t c = c0; c < c1; c++) {
    float v[9];
    o[c] = tr_window3(w, &p->nd, p->compute_edges, r, c, v)
               ? cell(p, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8])
               : p->dst_nodata;
  }
}

/* Rows [row0, row0 + nrows) of the block into out (Float32, one per cell). */
static inline void tr_rugged_rows(const tr_rugged_params *p, const tr_window *w, int64_t row0, int64_t nrows,
                                  float *out, tr_rugged_cell_fn cell) {
  const int clean = tr_window_clean(w, &p->nd);
  for (int64_t r = row0; r < row0 + nrows; r++) {
    const int64_t gr = w->grow0 + r;
    float *o = out + (r - row0) * w->cols;
    if (!clean || gr == 0 || gr == w->raster_rows - 1) {
      tr_rugged_slow(p, w, r, 0, w->cols, o, cell);
      continue;
    }
    /* An interior row of a tile without nodata: the straight loop, but for
     * the raster's first and last column. */
    const int64_t lo = w->gcol0 == 0 ? 1 : 0;
    const int64_t hi = w->gcol0 + w->cols == w->raster_cols ? w->cols - 1 : w->cols;
    const float *up = tr_row(w, r - 1), *md = tr_row(w, r), *dn = tr_row(w, r + 1);
    for (int64_t c = lo; c < hi; c++)
      o[c] = cell(p, up[c - 1], up[c], up[c + 1], md[c - 1], md[c], md[c + 1], dn[c - 1], dn[c], dn[c + 1]);
    tr_rugged_slow(p, w, r, 0, lo, o, cell);
    tr_rugged_slow(p, w, r, hi > lo ? hi : lo, w->cols, o, cell);
  }
}

/* What tr_tri, tr_tpi and tr_roughness hand the runner. */
static inline int tr_rugged_run(const tr_run_opts *run, const char *kernel, int compute_edges, int alg,
                                const char *src, const char *dst, tr_error *err) {
  tr_rugged_params p = {{0, 0, 0, 0}, -9999.0f, compute_edges, alg};
  return tr_run_kernel(run, kernel, tr_rugged_prepare, &p, src, dst, err);
}

/* The TRI/TPI/roughness invariant: every cell is the nodata value or lies
 * in [lo_f x span, hi_f x span] (with slack), span the window's largest
 * minus its smallest valid value; neg_zero: a -0 counts as outside. */
static inline int64_t tr_rugged_check(const tr_rugged_params *p, const tr_window *w, const void *out, double lo_f,
                                      double hi_f, int neg_zero) {
  float lo, hi;
  const double span = tr_window_span(w, &p->nd, &lo, &hi) ? (double)hi - (double)lo : -1.0;
  const float a = span < 0 ? 1.0f : (float)(lo_f * span * (1 + TR_OUT_SLACK));
  const float b = span < 0 ? 0.0f : (float)(hi_f * span * (1 + TR_OUT_SLACK));
  return tr_count_outside(out, w->rows * w->cols, a, b, 1, p->dst_nodata, neg_zero);
}

#endif
