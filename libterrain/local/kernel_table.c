/*
 * kernel_table.c - the table of every local kernel (see kernel.h).
 *
 * Each kernel file in kernels/ defines its row, `const tr_kernel
 * tr_kernel_NAME`, next to the code it names (the params struct it sizes
 * lives there too); this list is the one place that collects them. Adding a
 * kernel adds one name to TR_KERNEL_LIST. The order is the table's index,
 * which libft carries to its workers, so every rank has the same order.
 */
#include <string.h>

#include "kernel.h"

#define TR_KERNEL_LIST(X) \
  X(slope)                \
  X(aspect)               \
  X(hillshade)            \
  X(tri)                  \
  X(tpi)                  \
  X(roughness)            \
  X(color_relief)         \
  X(color_relief_rgba)    \
  X(d8)                   \
  X(interpolate)          \
  X(fill_voids)           \
  X(smooth)               \
  X(breach)               \
  X(dinf_slp)

#define TR_KERNEL_DECLARE(n) extern const tr_kernel tr_kernel_##n;
TR_KERNEL_LIST(TR_KERNEL_DECLARE)

#define TR_KERNEL_ROW(n) &tr_kernel_##n,
static const tr_kernel *const table[] = {TR_KERNEL_LIST(TR_KERNEL_ROW)};

/* The rows that also have an in-place iterative form (kernel.h): each
 * defines `const tr_kernel_iter tr_kernel_iter_NAME`. */
#define TR_KERNEL_ITER_LIST(X) X(smooth)

#define TR_KERNEL_ITER_DECLARE(n) extern const tr_kernel_iter tr_kernel_iter_##n;
TR_KERNEL_ITER_LIST(TR_KERNEL_ITER_DECLARE)

#define TR_KERNEL_ITER_ROW(n) &tr_kernel_iter_##n,
static const tr_kernel_iter *const iter_table[] = {TR_KERNEL_ITER_LIST(TR_KERNEL_ITER_ROW)};

const tr_kernel_iter *tr_kernel_iter_of(const tr_kernel *k) {
  for (size_t i = 0; i < sizeof iter_table / sizeof iter_table[0]; i++)
    if (iter_table[i]->row == k) return iter_table[i];
  return NULL;
}

size_t tr_kernel_count(void) { return sizeof table / sizeof table[0]; }

const tr_kernel *tr_kernel_at(size_t i) { return i < tr_kernel_count() ? table[i] : NULL; }

const tr_kernel *tr_kernel_find(const char *name, size_t *index) {
  for (size_t i = 0; i < tr_kernel_count(); i++)
    if (!strcmp(table[i]->name, name)) {
      if (index) *index = i;
      return table[i];
    }
  return NULL;
}
