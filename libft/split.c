/*
 * split.c - how a block is cut into its sub-blocks B00..B03 (ft_split_rows).
 *
 * The master, the injector and a worker rank each compute the split on
 * their own, and they must agree to the row: a result handed over for
 * sub-block s is compared, placed and fault-injected by these bounds. So
 * the rule lives in one file that depends on nothing, which every one of
 * them calls; the injector in particular need not call up into the context
 * for it.
 */
#include "ft_internal.h"

int ft_split_rows(int64_t rows, int64_t row0[4], int64_t nrows[4]) {
  int n = rows >= 4 ? 4 : (int)(rows > 0 ? rows : 0);
  int64_t base = n ? rows / n : 0, rem = n ? rows % n : 0, r = 0;
  for (int i = 0; i < 4; i++) {
    row0[i] = r;
    nrows[i] = i < n ? base + (i < rem) : 0;
    r += nrows[i];
  }
  return n;
}
