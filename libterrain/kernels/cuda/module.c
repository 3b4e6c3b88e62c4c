/*
 * module.c - terrafort-cuda.so, the CUDA module (local/device_module.h):
 * the GPU versions of kernel rows (gradient.cu, hillshade.cu) and the CUDA
 * runtime calls that run them, behind one exported table. libterrain loads
 * it only when a run asks for a GPU, so neither the program nor the library
 * needs CUDA's libraries; the runtime is linked in statically, so the
 * module needs only CUDA's driver (libcuda.so, which the runtime loads
 * itself when first called).
 *
 * Each worker thread has its own stream, device window and device output:
 * the copy in, the kernel and the copy out of one tile are queued on it and
 * the thread waits only at the end, so while one thread's tile computes,
 * other threads' tiles are being copied (the copy engines and the SMs work
 * at once). Host tiles are page-locked, which asynchronous copies need.
 * The caller's output cells are ordinary memory, so the copy back lands
 * in the stream's own page-locked staging buffer and is moved from there:
 * a copy into pageable memory went at 1.2 GB/s on an H100 (RESULTS.md),
 * a page-locked one at the copy engine's speed.
 *
 * One device per process: select() names it (the runner picks the rank's
 * device, local/device.c), and every call here makes it the calling
 * thread's current device first, since the CUDA runtime keeps the current
 * device per host thread and the worker threads are not the one that chose.
 *
 * Benchmark hook: with TERRAFORT_GPU_PROFILE=FILE in the environment, each
 * stream times its copies and kernels with CUDA events and, when closed,
 * appends one JSON line to FILE with the totals, the device's number, the
 * process's id and the device's peak memory bandwidth (scripts/bench/gpu reads it). The events add a little
 * work per tile, so they are off otherwise.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "device.h"
#include "device_module.h"
#include "gradient.h"

/* trap.cu: queues a kernel that traps on `stream` (a cudaStream_t), for the
 * injector's gpu-trap. 0, or -1 when it could not be queued. */
int tr_gpu_trap_launch(void *stream);
int tr_gpu_spin_launch(void *stream, int ms);

/* The rows this module has a GPU version of. */
static const struct {
  const char *row;
  tr_kernel_gpu_fn fn;
} kernels[] = {{"slope", tr_slope_gpu}, {"aspect", tr_aspect_gpu}, {"hillshade", tr_hillshade_gpu}};

static tr_kernel_gpu_fn kernel_of(const char *row) {
  for (size_t i = 0; i < sizeof kernels / sizeof *kernels; i++)
    if (!strcmp(kernels[i].row, row)) return kernels[i].fn;
  return NULL;
}

static int has(const char *row) { return kernel_of(row) != NULL; }

struct tr_gpu {
  cudaStream_t stream;
  void *d_in, *d_out;
  void *h_out;               /* page-locked staging of the copy back */
  size_t in_bytes, out_bytes;
  const char *profile;       /* TERRAFORT_GPU_PROFILE, or NULL */
  cudaEvent_t ev[4];         /* before copy in, after it, after the kernel, after copy out */
  double ms[3];              /* copy in, kernel, copy out */
  double bytes_in, bytes_out;
  long long launches;
  int dev;                   /* the device its stream and buffers are on */
  double timeout_ms;         /* a launch's deadline (tr_gpu_open) */
};

/* One JSON line of this stream's totals (the benchmark hook). */
static void profile_write(const tr_gpu *g) {
  const int dev = g->dev;
  int clock_khz = 0, bus_bits = 0;
  struct cudaDeviceProp prop;
  memset(&prop, 0, sizeof prop);
  cudaGetDeviceProperties(&prop, dev);
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, dev);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev);
  FILE *f = fopen(g->profile, "a");
  if (!f) return;
  fprintf(f,
          "{\"device\":\"%s\",\"index\":%d,\"pid\":%ld,\"peak_gbs\":%.1f,\"launches\":%lld,\"h2d_ms\":%.3f,"
          "\"kernel_ms\":%.3f,\"d2h_ms\":%.3f,\"bytes_in\":%.0f,\"bytes_out\":%.0f}\n",
          prop.name, dev, (long)getpid(), 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9, g->launches, g->ms[0],
          g->ms[1], g->ms[2], g->bytes_in, g->bytes_out);
  fclose(f);
}

static int count(char *why, size_t len) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) snprintf(why, len, "no usable GPU: %s", cudaGetErrorString(e));
    return 0;
  }
  if (n == 0 && why) snprintf(why, len, "no CUDA device present");
  return n;
}

static int chosen; /* the device every call uses (select) */

static cudaError_t use_device(void) { return cudaSetDevice(__atomic_load_n(&chosen, __ATOMIC_ACQUIRE)); }

static int select_device(int index, char *name, size_t len) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (name) snprintf(name, len, "no usable GPU: %s", cudaGetErrorString(e));
    return -1;
  }
  if (index < 0 || index >= n) {
    if (name) snprintf(name, len, "there is no GPU %d (%d present, numbered from 0)", index, n);
    return -1;
  }
  struct cudaDeviceProp prop;
  if ((e = cudaSetDevice(index)) != cudaSuccess || (e = cudaGetDeviceProperties(&prop, index)) != cudaSuccess) {
    if (name) snprintf(name, len, "GPU %d: %s", index, cudaGetErrorString(e));
    return -1;
  }
  __atomic_store_n(&chosen, index, __ATOMIC_RELEASE);
  if (name) snprintf(name, len, "%s", prop.name);
  return 0;
}

static int bus_id(char *buf, int len) {
  return cudaDeviceGetPCIBusId(buf, len, __atomic_load_n(&chosen, __ATOMIC_ACQUIRE)) == cudaSuccess ? 0 : -1;
}

static void *host_alloc(size_t bytes) {
  void *p = NULL;
  use_device();
  return cudaHostAlloc(&p, bytes, cudaHostAllocPortable) == cudaSuccess ? p : NULL;
}

static void host_free(void *p) {
  if (p) cudaFreeHost(p);
}

static int lost; /* a device fault was seen: the context is unusable */

static int gpu_lost(void) { return __atomic_load_n(&lost, __ATOMIC_ACQUIRE); }

/* The hardware error classes (device.h, TR_GPU_FAULT). */
static int hardware_error(cudaError_t e) {
  switch (e) {
    case cudaErrorECCUncorrectable:
    case cudaErrorIllegalAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidPc:
    case cudaErrorInvalidAddressSpace: return 1;
    default: return 0;
  }
}

static int fail(const char *what, cudaError_t e, char *why, size_t len) {
  if (why) snprintf(why, len, "GPU: %s: %s", what, cudaGetErrorString(e));
  if (!hardware_error(e)) return -1;
  __atomic_store_n(&lost, 1, __ATOMIC_RELEASE);
  return TR_GPU_FAULT;
}

static void gpu_close(tr_gpu *g);

static int gpu_open(tr_gpu **out, size_t in_bytes, size_t out_bytes, double timeout_ms, char *why, size_t len) {
  *out = NULL;
  tr_gpu *g = calloc(1, sizeof *g);
  if (!g) {
    if (why) snprintf(why, len, "out of memory");
    return -1;
  }
  cudaError_t e = use_device();
  if (e != cudaSuccess) {
    free(g);
    return fail("cannot use the selected device", e, why, len);
  }
  g->dev = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);
  if ((e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking)) != cudaSuccess) {
    free(g);
    return fail("cannot create a stream", e, why, len);
  }
  if ((e = cudaMalloc(&g->d_in, in_bytes)) != cudaSuccess || (e = cudaMalloc(&g->d_out, out_bytes)) != cudaSuccess ||
      (e = cudaHostAlloc(&g->h_out, out_bytes, cudaHostAllocPortable)) != cudaSuccess) {
    gpu_close(g);
    return fail("cannot allocate device tiles", e, why, len);
  }
  g->in_bytes = in_bytes;
  g->out_bytes = out_bytes;
  g->timeout_ms = timeout_ms > 0 ? timeout_ms : 10000;
  g->profile = getenv("TERRAFORT_GPU_PROFILE");
  for (int i = 0; g->profile && i < 4; i++)
    if ((e = cudaEventCreate(&g->ev[i])) != cudaSuccess) {
      gpu_close(g);
      return fail("cannot create events", e, why, len);
    }
  *out = g;
  return 0;
}

static void gpu_close(tr_gpu *g) {
  if (!g) return;
  /* a hung stream may still run into its buffers, and freeing them would
   * wait for it: they are left to the process's end */
  if (gpu_lost()) {
    free(g);
    return;
  }
  if (g->profile && g->launches) profile_write(g);
  for (int i = 0; i < 4; i++)
    if (g->ev[i]) cudaEventDestroy(g->ev[i]);
  cudaFree(g->d_in);
  cudaFree(g->d_out);
  if (g->h_out) cudaFreeHost(g->h_out);
  if (g->stream) cudaStreamDestroy(g->stream);
  free(g);
}

static int gpu_run(tr_gpu *g, const char *row, const void *params, const tr_window *w, int64_t row0, int64_t nrows,
                   void *out, size_t out_bytes, int trap, char *why, size_t len) {
  const tr_kernel_gpu_fn fn = kernel_of(row);
  if (!fn) {
    if (why) snprintf(why, len, "GPU: no GPU version of %s", row);
    return -1;
  }
  if (gpu_lost()) {
    if (why) snprintf(why, len, "GPU: the device reported a hardware error earlier in this run");
    return TR_GPU_FAULT;
  }
  /* the window's lines these rows read: rows row0 .. row0 + nrows + 2 halo
   * of in_stride floats, at their own place in the device window */
  const size_t first = (size_t)(row0 * w->in_stride), win_bytes = (size_t)((w->rows + 2 * w->halo) * w->in_stride) * sizeof(float);
  const size_t in_bytes = (size_t)((nrows + 2 * w->halo) * w->in_stride) * sizeof(float);
  if (row0 < 0 || nrows < 0 || row0 + nrows > w->rows || win_bytes > g->in_bytes || out_bytes > g->out_bytes) {
    if (why) snprintf(why, len, "GPU: tile larger than its device buffers");
    return -1;
  }
  cudaError_t e = cudaSetDevice(g->dev); /* the stream's device, current for this thread */
  if (e != cudaSuccess) return fail("cannot use the selected device", e, why, len);
  if (g->profile) cudaEventRecord(g->ev[0], g->stream);
  e = cudaMemcpyAsync((float *)g->d_in + first, w->in + first, in_bytes, cudaMemcpyHostToDevice, g->stream);
  if (e != cudaSuccess) return fail("copy to device", e, why, len);
  if (g->profile) cudaEventRecord(g->ev[1], g->stream);
  tr_window dw = *w;
  dw.in = (const float *)g->d_in;
  if (trap > 0 && tr_gpu_trap_launch(g->stream)) return fail("test trap", cudaPeekAtLastError(), why, len);
  if (trap < 0 && tr_gpu_spin_launch(g->stream, -trap)) return fail("test spin", cudaPeekAtLastError(), why, len);
  const int rc = fn(params, &dw, row0, nrows, g->d_out, g->stream);
  if (rc == 1) return 1;
  if (rc < 0) {
    const cudaError_t le = cudaPeekAtLastError();
    if (le != cudaSuccess) return fail(row, le, why, len);
    if (why) snprintf(why, len, "GPU: %s kernel failed to launch", row);
    return -1;
  }
  if (g->profile) cudaEventRecord(g->ev[2], g->stream);
  if ((e = cudaMemcpyAsync(g->h_out, g->d_out, out_bytes, cudaMemcpyDeviceToHost, g->stream)) != cudaSuccess)
    return fail("copy from device", e, why, len);
  if (g->profile) cudaEventRecord(g->ev[3], g->stream);
  /* the stream's end, polled against the deadline (cudaStreamSynchronize
   * would wait for a hung device for ever): past it the device is taken
   * as hung, a device fault like a hardware error (the caller replays the
   * tile on the CPU) and lost for the rest of the process */
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long nap_us = 20;; nap_us = nap_us < 2000 ? 2 * nap_us : 2000) {
    e = cudaStreamQuery(g->stream);
    if (e != cudaErrorNotReady) break;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const double ms = (double)(now.tv_sec - t0.tv_sec) * 1e3 + (double)(now.tv_nsec - t0.tv_nsec) * 1e-6;
    if (ms > g->timeout_ms) {
      __atomic_store_n(&lost, 1, __ATOMIC_RELEASE);
      if (why)
        snprintf(why, len, "GPU: the %s launch did not complete within %.0f ms (--ft-timeout): the device is taken as hung",
                 row, g->timeout_ms);
      return TR_GPU_FAULT;
    }
    const struct timespec nap = {0, nap_us * 1000};
    nanosleep(&nap, NULL);
  }
  if (e != cudaSuccess) return fail(row, e, why, len);
  memcpy(out, g->h_out, out_bytes);
  if (g->profile) {
    for (int i = 0; i < 3; i++) {
      float ms = 0;
      cudaEventElapsedTime(&ms, g->ev[i], g->ev[i + 1]);
      g->ms[i] += ms;
    }
    g->bytes_in += (double)in_bytes;
    g->bytes_out += (double)out_bytes;
    g->launches++;
  }
  return 0;
}

__attribute__((visibility("default"))) const tr_cuda_module *tr_cuda_module_entry(void);

const tr_cuda_module *tr_cuda_module_entry(void) {
  static const tr_cuda_module m = {.abi = TR_CUDA_MODULE_ABI,
                                   .window_size = sizeof(tr_window),
                                   .count = count,
                                   .host_alloc = host_alloc,
                                   .host_free = host_free,
                                   .open = gpu_open,
                                   .close = gpu_close,
                                   .run = gpu_run,
                                   .lost = gpu_lost,
                                   .has = has,
                                   .select = select_device,
                                   .bus_id = bus_id};
  return &m;
}
