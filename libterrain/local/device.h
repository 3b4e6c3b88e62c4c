/*
 * device.h - the GPU as the local runner sees it (internal to libterrain):
 * page-locked host buffers, and one stream with device buffers per worker
 * thread that runs a kernel row's GPU function on a tile.
 *
 * The GPU side lives in the CUDA module (device_module.h), built where nvcc
 * was found and loaded when a run first asks for a GPU; without it no GPU
 * is ever present and the host buffers are ordinary memory, so callers
 * need no #ifdef.
 */
#ifndef TR_DEVICE_H
#define TR_DEVICE_H

#include <stddef.h>

#include "kernel.h"

struct tr_run_opts;

/* Host memory for tiles: page-locked when pinned (so copies to and from the
 * device run asynchronously, at full bus speed), else malloc'ed. */
void *tr_host_alloc(size_t bytes, int pinned);
void tr_host_free(void *p, int pinned);

typedef struct tr_gpu tr_gpu;

/* A stream and device buffers for windows of in_bytes and outputs of
 * out_bytes; a launch on it not complete timeout_ms after it was queued
 * is given up as a hung device (TR_GPU_FAULT, the device lost). Returns 0,
 * or -1 with why. */
int tr_gpu_open(tr_gpu **g, size_t in_bytes, size_t out_bytes, double timeout_ms, char *why, size_t len);
void tr_gpu_close(tr_gpu *g);

/* What tr_gpu_run returns when the device reported a hardware error class:
 * an uncorrectable ECC error, an illegal address or instruction, a launch
 * failure (a trap), a hardware stack error, a misaligned address or an
 * invalid program counter. The tile's result is lost and the CUDA context
 * is unusable for the rest of the process (such errors are sticky): every
 * later tr_gpu_run fails the same way without touching the device, and the
 * caller runs its launches on the CPU (launch.c). */
#define TR_GPU_FAULT (-2)

/* Runs k->gpu over the block w (host window, pinned) into out (host, pinned,
 * out_bytes): copy in, kernel, copy out on g's stream, then waits for the
 * stream, so the device is idle for this stream on return, or the deadline
 * of tr_gpu_open passes (TR_GPU_FAULT: a hung device, lost from then on).
 * trap: queue the test-only trapping kernel first (the injector's
 * gpu-trap), or with -M one that spins M ms (gpu-hang). Returns 0, 1
 * when the kernel declines these params (run the CPU version), TR_GPU_FAULT,
 * or -1 with why. */
int tr_gpu_run(tr_gpu *g, const tr_kernel *k, const void *params, const tr_window *w, void *out, size_t out_bytes,
               int trap, char *why, size_t len);

/* tr_gpu_run for rows [row0, row0 + nrows) of the block only: the window's
 * lines they read go in, nrows x w->cols cells (out_bytes) come back. */
int tr_gpu_run_rows(tr_gpu *g, const tr_kernel *k, const void *params, const tr_window *w, int64_t row0,
                    int64_t nrows, void *out, size_t out_bytes, int trap, char *why, size_t len);

/* The GPU this process uses for the run: GPU N when run->device_pin is N + 1
 * (--device gpu:N), else the rank's place on its node modulo the node's
 * GPUs (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID, else
 * the world rank), so the ranks of one node spread over its devices. Makes
 * it every later launch's device. Returns the number of GPUs (0: none, why
 * says why), or -1 when the device asked for does not exist (why says so).
 * *index gets the device's number. */
int tr_gpu_pick(const struct tr_run_opts *run, int *index, char *why, size_t len);

/* The PCI bus id of the GPU tr_gpu_pick chose (for NVML): 0, or -1. */
int tr_gpu_bus_id(char *buf, int len);

/* Whether a device fault (TR_GPU_FAULT) was seen in this process. */
int tr_gpu_lost(void);

/* tr_gpu_count (terrain.h) loads the CUDA module the first time it is
 * called; without one it is 0 and says why. */

/* Whether the CUDA module has a GPU version of row k (0 without a module). */
int tr_gpu_has(const tr_kernel *k);

#endif
