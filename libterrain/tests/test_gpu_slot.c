/*
 * test_gpu_slot.c - the CUDA module (local/device_module.h) is built and
 * loads (this test runs without a GPU, in CI): in a CUDA build the module
 * in the build tree is found from this program's folder, as the programs
 * find it, and has GPU versions of slope, aspect and hillshade and of no
 * other row; in a build without CUDA no row has one. With no usable GPU,
 * tr_gpu_count() is 0 and says why, and the device layer's host buffers
 * still work.
 */
#include <string.h>

#include "device.h"
#include "kernel.h"
#include "terrain.h"
#include "tr_test.h"

static int test_gpu_slots(void) {
  /* a row that gains a CUDA version (in kernels/cuda/module.c's table) joins this list */
  static const char *gpu[] = {"slope", "aspect", "hillshade"};
  char why[1024] = "";
  const int n = tr_gpu_count(why, sizeof why);
#ifdef TERRAFORT_HAVE_CUDA
  /* the module loaded: whatever the reason for no GPU, it is not the module's */
  if (n == 0 && (strstr(why, "CUDA module") || strstr(why, "without CUDA"))) {
    fprintf(stderr, "%s\n", why);
    return 1;
  }
#else
  ASSERT_EQ_INT(n, 0);
  ASSERT(strstr(why, "built without CUDA") != NULL);
#endif
  for (size_t i = 0; i < tr_kernel_count(); i++) {
    const tr_kernel *k = tr_kernel_at(i);
    int listed = 0;
    for (size_t j = 0; j < sizeof gpu / sizeof *gpu; j++) listed |= !strcmp(k->name, gpu[j]);
#ifdef TERRAFORT_HAVE_CUDA
    if (tr_gpu_has(k) != listed) {
      fprintf(stderr, "row %s: %s GPU version in the module\n", k->name, listed ? "no" : "a");
      return 1;
    }
#else
    (void)listed;
    ASSERT(!tr_gpu_has(k));
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
  ASSERT(tr_gpu_open(&g, 1024, 1024, 1000, why, sizeof why) != 0);
  ASSERT(g == NULL);
  /* host tiles: ordinary memory when no GPU is used */
  float *p = tr_host_alloc(4096, 0);
  ASSERT(p != NULL);
  memset(p, 0, 4096);
  tr_host_free(p, 0);
  return 0;
}

TR_MAIN(TR_TEST(test_gpu_slots), TR_TEST(test_no_gpu_says_why))
