/*
 * tpi.c - gdaldem-compatible Topographic Position Index: the centre minus
 * the mean of its eight neighbours, z_4 - (sum of z_k) * 0.125, in Float32
 * and in gdaldem's order of additions, so the values are gdaldem's to the bit.
 */
#include "rugged.h"

static inline float tpi_cell(const tr_rugged_params *p, float w0, float w1, float w2, float w3, float w4, float w5,
                             float w6, float w7, float w8) {
  (void)p;
  return w4 - ((w0 + w1 + w2 + w3 + w5 + w6 + w7 + w8) * 0.125f);
}

static int tpi_kernel(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *out) {
  tr_rugged_rows(params, w, row0, nrows, out, tpi_cell);
  return 0;
}

void tr_tpi_opts_init(tr_tpi_opts *o) {
  tr_run_opts_init(&o->run);
  o->compute_edges = 0;
}

/* Invariant: |TPI| is at most the window's span (a value minus a mean of
 * values of the window). */
static int64_t tpi_check(const void *params, const tr_window *w, const void *out) {
  return tr_rugged_check(params, w, out, -1.0, 1.0, 0);
}

const tr_kernel tr_kernel_tpi = {
    .name = "tpi",
    .halo = 1,
    .params_size = sizeof(tr_rugged_params),
    .out_type = GDT_Float32,
    .bands = 1,
    .cpu = tpi_kernel,
    .check = tpi_check};

int tr_tpi(const tr_tpi_opts *opts, const char *src, const char *dst, tr_error *err) {
  return tr_rugged_run(&opts->run, "tpi", opts->compute_edges, 0, src, dst, err);
}
