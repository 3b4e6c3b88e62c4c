/*
 * device_module.h - what libterrain asks of its CUDA module (internal to
 * libterrain). The GPU versions of kernels and the CUDA runtime calls that
 * run them are built into a module of their own, terrafort-cuda.so
 * (kernels/cuda/), with the CUDA runtime linked into it statically. The
 * program and the library never link CUDA: device.c loads the module the
 * first time a run asks for a GPU (--device gpu or auto), and a machine
 * without it, or without CUDA's driver, runs everything on the CPU.
 *
 * Both sides are built from this header: the module's one exported symbol,
 * TR_CUDA_MODULE_ENTRY, returns the table below, and device.c refuses a
 * module whose abi or window size is not its own (a module of another
 * build).
 */
#ifndef TR_DEVICE_MODULE_H
#define TR_DEVICE_MODULE_H

#include <stddef.h>

#include "kernel.h"

#define TR_CUDA_MODULE_ABI 3
#define TR_CUDA_MODULE_ENTRY "tr_cuda_module_entry"
#define TR_CUDA_MODULE_FILE "terrafort-cuda.so"

typedef struct tr_gpu tr_gpu;

typedef struct {
  int abi;             /* TR_CUDA_MODULE_ABI */
  size_t window_size;  /* sizeof(tr_window) */
  /* device.h's functions of the same names, less the module's loading */
  int (*count)(char *why, size_t len);
  void *(*host_alloc)(size_t bytes); /* page-locked; NULL when it cannot */
  void (*host_free)(void *p);
  /* timeout_ms: a launch not complete this long after its copies and
   * kernel were queued is given up (the device taken as hung, lost) */
  int (*open)(tr_gpu **g, size_t in_bytes, size_t out_bytes, double timeout_ms, char *why, size_t len);
  void (*close)(tr_gpu *g);
  /* rows [row0, row0 + nrows) of the block w into out (nrows x w->cols
   * cells of out_bytes in all); trap (tests): 1 a trapping kernel first,
   * -M a kernel spinning M ms first */
  int (*run)(tr_gpu *g, const char *row, const void *params, const tr_window *w, int64_t row0, int64_t nrows,
             void *out, size_t out_bytes, int trap, char *why, size_t len);
  int (*lost)(void);
  /* whether the module has a GPU version of the kernel row named `row` */
  int (*has)(const char *row);
  /* Makes device `index` the one every later call of this process uses,
   * from any thread; its name into name. 0, or -1 with why. */
  int (*select)(int index, char *name, size_t len);
  /* the selected device's PCI bus id (NVML finds the device by it): 0, or -1 */
  int (*bus_id)(char *buf, int len);
} tr_cuda_module;

typedef const tr_cuda_module *(*tr_cuda_module_entry_fn)(void);

#endif
