/*
 * tri.c - gdaldem-compatible Terrain Ruggedness Index.
 *
 *   Riley (default, as gdaldem since 3.3):
 *       sqrt(sum over the 8 neighbours of (z_k - z_4)^2)
 *   Wilson: (sum over the 8 neighbours of |z_k - z_4|) / 8
 *
 * In gdaldem's order of operations and precision: Riley's differences are
 * Float32, their squares and sum double; Wilson's sum is Float32 and
 * multiplied by 0.125f. The values are then gdaldem's to the bit.
 */
#include <math.h>

#include "rugged.h"

static inline float riley_cell(const tr_rugged_params *p, float w0, float w1, float w2, float w3, float w4, float w5,
                               float w6, float w7, float w8) {
  (void)p;
  const double d0 = w0 - w4, d1 = w1 - w4, d2 = w2 - w4, d3 = w3 - w4;
  const double d5 = w5 - w4, d6 = w6 - w4, d7 = w7 - w4, d8 = w8 - w4;
  return (float)sqrt(d0 * d0 + d1 * d1 + d2 * d2 + d3 * d3 + d5 * d5 + d6 * d6 + d7 * d7 + d8 * d8);
}

static inline float wilson_cell(const tr_rugged_params *p, float w0, float w1, float w2, float w3, float w4,
                                float w5, float w6, float w7, float w8) {
  (void)p;
  return (fabsf(w0 - w4) + fabsf(w1 - w4) + fabsf(w2 - w4) + fabsf(w3 - w4) + fabsf(w5 - w4) + fabsf(w6 - w4) +
          fabsf(w7 - w4) + fabsf(w8 - w4)) *
         0.125f;
}

static int tri_kernel(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *out) {
  const tr_rugged_params *p = params;
  if (p->alg == TR_TRI_WILSON) tr_rugged_rows(p, w, row0, nrows, out, wilson_cell);
  else tr_rugged_rows(p, w, row0, nrows, out, riley_cell);
  return 0;
}

void tr_tri_opts_init(tr_tri_opts *o) {
  tr_run_opts_init(&o->run);
  o->alg = TR_TRI_RILEY;
  o->compute_edges = 0;
}

/* Invariant: 0 <= TRI <= sqrt(8) x the window's span (Riley: the root of
 * eight squares of differences within the span; Wilson: their mean, at most
 * the span). */
static int64_t tri_check(const void *params, const tr_window *w, const void *out) {
  const tr_rugged_params *p = params;
  return tr_rugged_check(p, w, out, 0.0, p->alg == TR_TRI_WILSON ? 1.0 : sqrt(8.0), 1);
}

const tr_kernel tr_kernel_tri = {
    .name = "tri",
    .halo = 1,
    .params_size = sizeof(tr_rugged_params),
    .out_type = GDT_Float32,
    .bands = 1,
    .cpu = tri_kernel,
    .check = tri_check};

int tr_tri(const tr_tri_opts *opts, const char *src, const char *dst, tr_error *err) {
  return tr_rugged_run(&opts->run, "tri", opts->compute_edges, opts->alg, src, dst, err);
}
