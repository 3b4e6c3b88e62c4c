/*
 * compare.c - the detection rule: count disagreeing cells, then judge the
 * error rate.
 *
 * xi == 0 compares bits, never floating values: NaN == NaN when the bits are
 * the same, +0 != -0, and a flipped bit anywhere is a disagreement. With
 * xi > 0 a cell disagrees when |a - b| >= xi (the difference taken in double,
 * which is exact for float inputs' ordering) or when exactly one side is NaN.
 * A cell where either side holds the `exact` value (the output's nodata)
 * agrees only when both sides have the same bits, whatever xi.
 * The common case (identical buffers) costs one memcmp.
 */
#include <math.h>
#include <string.h>

#include "ft_internal.h"

static int64_t count_bits(const unsigned char *a, const unsigned char *b, int64_t n, size_t es) {
  int64_t k = 0;
  if (es == 4) {
    for (int64_t i = 0; i < n; i++) {
      uint32_t x, y;
      memcpy(&x, a + 4 * i, 4);
      memcpy(&y, b + 4 * i, 4);
      k += x != y;
    }
  } else if (es == 8) {
    for (int64_t i = 0; i < n; i++) {
      uint64_t x, y;
      memcpy(&x, a + 8 * i, 8);
      memcpy(&y, b + 8 * i, 8);
      k += x != y;
    }
  } else {
    for (int64_t i = 0; i < n; i++) k += memcmp(a + es * (size_t)i, b + es * (size_t)i, es) != 0;
  }
  return k;
}

static int cell_disagrees(double x, double y, double xi) {
  int nx = isnan(x), ny = isnan(y);
  if (nx || ny) return nx != ny;
  return fabs(x - y) >= xi;
}

int64_t ft_compare_cells_exact(ft_type type, size_t es, const void *a, const void *b, int64_t n, double xi,
                               const double *exact) {
  if (n <= 0) return 0;
  if (memcmp(a, b, (size_t)n * es) == 0) return 0;
  if (xi <= 0.0 || type == FT_TYPE_BYTES) return count_bits(a, b, n, es);
  const int ex = exact && !isnan(*exact);
  int64_t k = 0;
  if (type == FT_TYPE_F32) {
    const float *x = a, *y = b, e = ex ? (float)*exact : 0.0f;
    for (int64_t i = 0; i < n; i++)
      k += ex && (x[i] == e || y[i] == e) ? memcmp(x + i, y + i, sizeof *x) != 0
                                          : cell_disagrees((double)x[i], (double)y[i], xi);
  } else {
    const double *x = a, *y = b, e = ex ? *exact : 0.0;
    for (int64_t i = 0; i < n; i++)
      k += ex && (x[i] == e || y[i] == e) ? memcmp(x + i, y + i, sizeof *x) != 0 : cell_disagrees(x[i], y[i], xi);
  }
  return k;
}

int64_t ft_compare_cells(ft_type type, size_t es, const void *a, const void *b, int64_t n, double xi) {
  return ft_compare_cells_exact(type, es, a, b, n, xi, NULL);
}

int ft_rate_wrong(int64_t k, int64_t n, double eps) {
  if (k <= 0) return 0;
  if (n <= 0) return 1;
  return (double)k / (double)n > eps;
}
