/*
 * flow_check.c - what every correct tile of the D8 products holds (flow.h):
 * --ft replay's invariants of the flowdir, d8_up, d8_order_cells and
 * d8_basins programs' Assemble (graph.h, check_tile). A cell outside is a
 * fault when Assemble computed again gives other bytes (graph_ft.c).
 */
#include <math.h>

#include "d8_codes.h"
#include "flow.h"
#include "flowdir.h"

int64_t tr_flowdir_check_tile(int32_t encoding, int64_t n, const int16_t *tile) {
  int16_t codes[9];
  for (int k = 0; k <= 8; k++) codes[k] = (int16_t)tr_d8_encode((tr_dir_encoding)encoding, k);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++) {
    int ok = 0;
    for (int k = 0; k <= 8; k++) ok |= tile[i] == codes[k];
    bad += !ok;
  }
  return bad;
}

/* A whole number in [lo, hi]. */
static int whole(double v, double lo, double hi) { return v >= lo && v <= hi && v == floor(v); }

int64_t tr_up_check_tile(const tr_up_params *u, int64_t n, const double *tile) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++) {
    const double v = tile[i];
    switch (u->product) {
      case TR_UP_ACC:
        /* a cell drains at least itself: a count of 1 or more, times the unit */
        bad += v != TR_ACC_NODATA && !(u->weighted ? isfinite(v) : v >= u->unit && isfinite(v));
        break;
      case TR_UP_STREAMS: bad += !(v == 0 || v == 1 || v == TR_BYTE_NODATA); break;
      default: bad += !(v == TR_BYTE_NODATA || whole(v, 0, 254)); break;
    }
  }
  return bad;
}

int64_t tr_basin_check_tile(int64_t n, const double *tile) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++)
    bad += !(tile[i] == TR_LABEL_NODATA || whole(tile[i], -2147483646.0, 2147483647.0));
  return bad;
}
