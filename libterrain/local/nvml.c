/*
 * nvml.c - NVML loaded at run time for the ECC counters (nvml.h). The few
 * declarations used are NVML's documented C interface, restated here so
 * that building needs no NVML header.
 */
#include "nvml.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvml_return;            /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef struct nvml_device *nvml_device; /* nvmlDevice_t */
enum { NVML_OK = 0, NVML_UNCORRECTED = 1 /* nvmlMemoryErrorType_t */, NVML_VOLATILE = 0 /* nvmlEccCounterType_t */ };

static struct {
  pthread_mutex_t mu;
  void *lib;
  nvml_return (*init)(void);
  nvml_return (*by_bus)(const char *bus, nvml_device *dev);
  nvml_return (*ecc)(nvml_device dev, int type, int counter, unsigned long long *count);
  nvml_device dev;
  char bus[64];
  int ready; /* dev's counters can be read */
} N = {.mu = PTHREAD_MUTEX_INITIALIZER};

int tr_nvml_open(const char *bus, char *why, size_t len) {
  pthread_mutex_lock(&N.mu);
  int ok = 0;
  if (N.ready && !strcmp(N.bus, bus)) {
    ok = 1;
    goto out;
  }
  __atomic_store_n(&N.ready, 0, __ATOMIC_RELEASE);
  if (!N.lib) {
    const char *env = getenv("TERRAFORT_NVML_LIBRARY");
    N.lib = dlopen(env && *env ? env : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!N.lib) {
      if (why) snprintf(why, len, "NVML is not there: %s", dlerror());
      goto out;
    }
    *(void **)&N.init = dlsym(N.lib, "nvmlInit_v2");
    *(void **)&N.by_bus = dlsym(N.lib, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void **)&N.ecc = dlsym(N.lib, "nvmlDeviceGetTotalEccErrors");
    if (!N.init || !N.by_bus || !N.ecc || N.init() != NVML_OK) {
      if (why) snprintf(why, len, "NVML could not be started");
      dlclose(N.lib);
      N.lib = NULL;
      goto out;
    }
  }
  unsigned long long c;
  if (N.by_bus(bus, &N.dev) != NVML_OK || N.ecc(N.dev, NVML_UNCORRECTED, NVML_VOLATILE, &c) != NVML_OK) {
    if (why) snprintf(why, len, "NVML reads no ECC counters for the GPU at %s (ECC off, or not supported)", bus);
    goto out;
  }
  snprintf(N.bus, sizeof N.bus, "%s", bus);
  __atomic_store_n(&N.ready, 1, __ATOMIC_RELEASE);
  ok = 1;
out:
  pthread_mutex_unlock(&N.mu);
  return ok;
}

int64_t tr_nvml_uncorrected(void) {
  if (!__atomic_load_n(&N.ready, __ATOMIC_ACQUIRE)) return -1;
  unsigned long long c = 0;
  return N.ecc(N.dev, NVML_UNCORRECTED, NVML_VOLATILE, &c) == NVML_OK ? (int64_t)c : -1;
}
