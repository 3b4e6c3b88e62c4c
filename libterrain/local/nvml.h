/*
 * nvml.h - the GPU's ECC error counters through NVML (internal to
 * libterrain), for --ft replay's launch point: a rise of the device's
 * uncorrected ECC count across a GPU launch is a detected fault, and the
 * launch is replayed (local/launch.c).
 *
 * NVML is the driver's own library (libnvidia-ml.so.1), loaded at run time
 * the first time a run asks, never required: without it, or on a device
 * with ECC off, the counters are simply not read. TERRAFORT_NVML_LIBRARY
 * names another file (the GPU tests' counterfeit NVML, which makes the
 * count rise at a chosen read).
 */
#ifndef TR_NVML_H
#define TR_NVML_H

#include <stddef.h>
#include <stdint.h>

/* The device at PCI bus id `bus` (the CUDA module's, device.h): 1 when
 * its ECC counters can be read from now on, 0 when not (why says why). */
int tr_nvml_open(const char *bus, char *why, size_t len);

/* The device's volatile (since the driver loaded) uncorrected ECC errors,
 * total over its memories; -1 when they cannot be read. */
int64_t tr_nvml_uncorrected(void);

#endif
