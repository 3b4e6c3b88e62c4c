/*
 * roughness.c - gdaldem-compatible roughness: the largest minus the smallest
 * value of the 3x3 window. The running maximum and minimum start at z_0 and
 * take z_1..z_8 in order with strict comparisons, as gdaldem's loop does, so
 * even a NaN the source does not declare as nodata gives gdaldem's result.
 */
#include "rugged.h"

static inline float roughness_cell(const tr_rugged_params *p, float w0, float w1, float w2, float w3, float w4,
                                   float w5, float w6, float w7, float w8) {
  (void)p;
  const float v[8] = {w1, w2, w3, w4, w5, w6, w7, w8};
  float lo = w0, hi = w0;
  for (int k = 0; k < 8; k++) {
    hi = v[k] > hi ? v[k] : hi;
    lo = v[k] < lo ? v[k] : lo;
  }
  return hi - lo;
}

static int roughness_kernel(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *out) {
  tr_rugged_rows(params, w, row0, nrows, out, roughness_cell);
  return 0;
}

void tr_roughness_opts_init(tr_roughness_opts *o) {
  tr_run_opts_init(&o->run);
  o->compute_edges = 0;
}

/* Invariant: 0 <= roughness <= the window's span. */
static int64_t roughness_check(const void *params, const tr_window *w, const void *out) {
  return tr_rugged_check(params, w, out, 0.0, 1.0, 1);
}

const tr_kernel tr_kernel_roughness = {
    .name = "roughness",
    .halo = 1,
    .params_size = sizeof(tr_rugged_params),
    .out_type = GDT_Float32,
    .bands = 1,
    .cpu = roughness_kernel,
    .check = roughness_check};

int tr_roughness(const tr_roughness_opts *opts, const char *src, const char *dst, tr_error *err) {
  return tr_rugged_run(&opts->run, "roughness", opts->compute_edges, 0, src, dst, err);
}
