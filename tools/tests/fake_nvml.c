/*
 * fake_nvml.c - a counterfeit of the three NVML calls terrafort makes
 * (libterrain/local/nvml.c), for cli_gpu: the device's uncorrected ECC
 * count is 0 until read number FAKE_NVML_RISE_AT (1-based, counted over
 * the process), then 1, as if the memory had just failed. Loaded through
 * TERRAFORT_NVML_LIBRARY instead of the driver's libnvidia-ml.so.1.
 */
#include <stdlib.h>

static long reads;

int nvmlInit_v2(void) { return 0; }

int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **dev) {
  (void)bus;
  *dev = (void *)&reads;
  return 0;
}

int nvmlDeviceGetTotalEccErrors(void *dev, int type, int counter, unsigned long long *count) {
  (void)dev;
  (void)type;
  (void)counter;
  const char *at = getenv("FAKE_NVML_RISE_AT");
  const long n = __atomic_add_fetch(&reads, 1, __ATOMIC_SEQ_CST);
  *count = at && n >= atol(at) ? 1 : 0;
  return 0;
}
