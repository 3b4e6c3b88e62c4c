/*
 * test_gpu_slot.c - the CUDA path is compiled and linked (this test runs
 * without a GPU, in CI): in a CUDA build slope, aspect and hillshade have a
 * GPU function in the kernel table's GPU slot and the other rows none; in
 * a build without CUDA no row has one. With no usable GPU, tr_gpu_count()
 * is 0 and says why, and the device layer's host buffers still work.
 */
#include <string.h>

#include "device.h"
#include "kernel.h"
#include "terrain.h"
#include "tr_test.h"

static int test_gpu_slots(void) {
  /* a row that gains a CUDA version (D8's, on the flowgraph branch) joins this list */
  static const char *gpu[] = {"slope", "aspect", "hillshade"};
  for (size_t i = 0; i < tr_kernel_count(); i++) {
    const tr_kernel *k = tr_kernel_at(i);
    int listed = 0;
    for (size_t j = 0; j < sizeof gpu / sizeof *gpu; j++) listed |= !strcmp(k->name, gpu[j]);
#ifdef TERRAFORT_HAVE_CUDA
    if ((k->gpu != NULL) != listed) {
      fprintf(stderr, "row %s: gpu slot %s\n", k->name, k->gpu ? "set" : "empty");
      return 1;
    }
#else
    (void)listed;
    ASSERT(k->gpu == NULL);
#endif
  }
  return 0;
}

static int test_no_gpu_says_why(void) {
  char why[256] = "";
  const int n = tr_gpu_count(why, sizeof why);
  if (n > 0) return 0; /* a GPU machine: cli_gpu covers it */
  ASSERT(strlen(why) > 5);
  tr_gpu *g = (tr_gpu *)1;
  ASSERT(tr_gpu_open(&g, 1024, 1024, why, sizeof why) != 0);
  ASSERT(g == NULL);
  /* host tiles: ordinary memory when no GPU is used */
  float *p = tr_host_alloc(4096, 0);
  ASSERT(p != NULL);
  memset(p, 0, 4096);
  tr_host_free(p, 0);
  return 0;
}

TR_MAIN(TR_TEST(test_gpu_slots), TR_TEST(test_no_gpu_says_why))
