/* compare_test.c - the detection rule at its exact boundaries, and the split. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ft.h"
#include "tr_test.h"

static float f_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static int test_bitwise_when_xi_zero(void) {
  float a[4] = {1.0f, NAN, 0.0f, 3.0f}, b[4];
  memcpy(b, a, sizeof a);
  ASSERT_EQ_INT(ft_compare_cells(FT_TYPE_F32, 4, a, b, 4, 0.0), 0); /* NaN == NaN, same bits */
  b[2] = -0.0f;                                                      /* equal as floats, not as bits */
  ASSERT_EQ_INT(ft_compare_cells(FT_TYPE_F32, 4, a, b, 4, 0.0), 1);
  b[1] = f_bits(0x7fc00001u);                                        /* another NaN payload */
  ASSERT_EQ_INT(ft_compare_cells(FT_TYPE_F32, 4, a, b, 4, 0.0), 2);
  b[3] = nextafterf(3.0f, 4.0f);
  ASSERT_EQ_INT(ft_compare_cells(FT_TYPE_F32, 4, a, b, 4, 0.0), 3);
  return 0;
}

static int test_sigma_equal_xi_disagrees(void) {
  float a[1] = {1.0f}, b[1] = {1.25f};
  ASSERT_EQ_INT(ft_compare_cells(FT_TYPE_F32, 4, a, b, 1, 0.25), 1);             /* sigma == xi */
  ASSERT_EQ_INT(ft_compare_cells(FT_TYPE_F32, 4, a, b, 1, nextafter(0.25, 1)), 0); /* xi just above sigma */
  ASSERT_EQ_INT(ft_compare_cells(FT_TYPE_F32, 4, a, b, 1, nextafter(0.25, 0)), 1);
  double c[2] = {10.0, NAN}, d[2] = {10.5, NAN};
  ASSERT_EQ_INT(ft_compare_cells(FT_TYPE_F64, 8, c, d, 2, 0.5), 1);
  ASSERT_EQ_INT(ft_compare_cells(FT_TYPE_F64, 8, c, d, 2, nextafter(0.5, 1)), 0);
  return 0;
}

/* the exact value (the output's nodata): within xi of it is still a
 * disagreement, on either side and in both types; other cells keep xi */
static int test_exact_value(void) {
  const double nd = -9999.0;
  float a[3] = {-9999.0f, 5.0f, -9999.0f}, b[3] = {nextafterf(-9999.0f, 0.0f), 5.05f, -9999.0f};
  ASSERT_EQ_INT(ft_compare_cells(FT_TYPE_F32, 4, a, b, 3, 0.1), 0);
  ASSERT_EQ_INT(ft_compare_cells_exact(FT_TYPE_F32, 4, a, b, 3, 0.1, &nd), 1);
  ASSERT_EQ_INT(ft_compare_cells_exact(FT_TYPE_F32, 4, b, a, 3, 0.1, &nd), 1);
  double c[2] = {-9999.0, 1.0}, d[2] = {-9999.001, 1.0};
  ASSERT_EQ_INT(ft_compare_cells_exact(FT_TYPE_F64, 8, c, d, 2, 0.1, NULL), 0);
  ASSERT_EQ_INT(ft_compare_cells_exact(FT_TYPE_F64, 8, c, d, 2, 0.1, &nd), 1);
  const double nan_nd = NAN; /* NaN nodata: the NaN rule already holds */
  ASSERT_EQ_INT(ft_compare_cells_exact(FT_TYPE_F64, 8, c, d, 2, 0.1, &nan_nd), 0);
  return 0;
}

static int test_nan_rules_with_tolerance(void) {
  float a[3] = {NAN, 1.0f, INFINITY}, b[3] = {NAN, NAN, INFINITY};
  ASSERT_EQ_INT(ft_compare_cells(FT_TYPE_F32, 4, a, b, 3, 0.1), 1); /* only NaN vs 1.0 */
  b[0] = f_bits(0x7fc00001u);                                       /* NaN vs other NaN agrees under xi > 0 */
  ASSERT_EQ_INT(ft_compare_cells(FT_TYPE_F32, 4, a, b, 3, 0.1), 1);
  b[2] = -INFINITY;
  ASSERT_EQ_INT(ft_compare_cells(FT_TYPE_F32, 4, a, b, 3, 0.1), 2);
  return 0;
}

static int test_rate_boundary(void) {
  ASSERT_EQ_INT(ft_rate_wrong(15, 100, 0.15), 0); /* r == eps: accepted */
  ASSERT_EQ_INT(ft_rate_wrong(16, 100, 0.15), 1);
  ASSERT_EQ_INT(ft_rate_wrong(15, 100, nextafter(0.15, 0)), 1); /* eps just below r */
  ASSERT_EQ_INT(ft_rate_wrong(1, 20, 0.05), 0);
  ASSERT_EQ_INT(ft_rate_wrong(0, 100, 0.0), 0);
  ASSERT_EQ_INT(ft_rate_wrong(1, 100, 0.0), 1);
  return 0;
}

static int test_bytes_any_size(void) {
  unsigned char a[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, b[9];
  memcpy(b, a, 9);
  b[4] ^= 0x10;
  ASSERT_EQ_INT(ft_compare_cells(FT_TYPE_BYTES, 3, a, b, 3, 0.0), 1);
  ASSERT_EQ_INT(ft_compare_cells(FT_TYPE_BYTES, 3, a, b, 3, 5.0), 1); /* xi ignored for bytes */
  b[8] ^= 1;
  ASSERT_EQ_INT(ft_compare_cells(FT_TYPE_BYTES, 3, a, b, 3, 0.0), 2);
  return 0;
}

static int test_split_rows(void) {
  int64_t r0[4], n[4];
  ASSERT_EQ_INT(ft_split_rows(1, r0, n), 1);
  ASSERT_EQ_INT(n[0], 1);
  ASSERT_EQ_INT(ft_split_rows(3, r0, n), 3);
  ASSERT_EQ_INT(n[2], 1);
  ASSERT_EQ_INT(ft_split_rows(10, r0, n), 4);
  ASSERT_EQ_INT(n[0], 3);
  ASSERT_EQ_INT(n[1], 3);
  ASSERT_EQ_INT(n[2], 2);
  ASSERT_EQ_INT(n[3], 2);
  ASSERT_EQ_INT(r0[3], 8);
  ASSERT_EQ_INT(ft_split_rows(512, r0, n), 4);
  ASSERT_EQ_INT(r0[2], 256);
  return 0;
}

static int test_strerror(void) {
  ASSERT(strstr(ft_strerror(FT_ERR_FATAL), "recompute") != NULL);
  ASSERT(strcmp(ft_strerror(12345), "unknown error") == 0);
  return 0;
}

TR_MAIN(TR_TEST(test_bitwise_when_xi_zero), TR_TEST(test_sigma_equal_xi_disagrees), TR_TEST(test_exact_value),
        TR_TEST(test_nan_rules_with_tolerance), TR_TEST(test_rate_boundary),
        TR_TEST(test_bytes_any_size), TR_TEST(test_split_rows),
        TR_TEST(test_strerror))
