/*
 * device.c - GPUs for the local runner (device.h), over the CUDA runtime's
 * C API when built with CUDA; without CUDA there is no GPU and host buffers
 * come from malloc.
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
 * Benchmark hook: with TERRAFORT_GPU_PROFILE=FILE in the environment, each
 * stream times its copies and kernels with CUDA events and, when closed,
 * appends one JSON line to FILE with the totals and the device's peak
 * memory bandwidth (scripts/bench/gpu reads it). The events add a little
 * work per tile, so they are off otherwise.
 */
#include "device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terrain.h"

#ifdef TERRAFORT_HAVE_CUDA
#include <cuda_runtime_api.h>

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
};

/* One JSON line of this stream's totals (the benchmark hook). */
static void profile_write(const tr_gpu *g) {
  int dev = 0, clock_khz = 0, bus_bits = 0;
  struct cudaDeviceProp prop;
  memset(&prop, 0, sizeof prop);
  cudaGetDevice(&dev);
  cudaGetDeviceProperties(&prop, dev);
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, dev);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev);
  FILE *f = fopen(g->profile, "a");
  if (!f) return;
  fprintf(f,
          "{\"device\":\"%s\",\"peak_gbs\":%.1f,\"launches\":%lld,\"h2d_ms\":%.3f,\"kernel_ms\":%.3f,"
          "\"d2h_ms\":%.3f,\"bytes_in\":%.0f,\"bytes_out\":%.0f}\n",
          prop.name, 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9, g->launches, g->ms[0], g->ms[1], g->ms[2],
          g->bytes_in, g->bytes_out);
  fclose(f);
}

int tr_gpu_count(char *why, size_t len) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) snprintf(why, len, "no usable GPU: %s", cudaGetErrorString(e));
    return 0;
  }
  if (n == 0 && why) snprintf(why, len, "no CUDA device present");
  return n;
}

void *tr_host_alloc(size_t bytes, int pinned) {
  void *p = NULL;
  if (!pinned) return malloc(bytes);
  return cudaHostAlloc(&p, bytes, cudaHostAllocPortable) == cudaSuccess ? p : NULL;
}

void tr_host_free(void *p, int pinned) {
  if (!p) return;
  if (pinned) cudaFreeHost(p);
  else free(p);
}

static int lost; /* a device fault was seen: the context is unusable */

int tr_gpu_lost(void) { return __atomic_load_n(&lost, __ATOMIC_ACQUIRE); }

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

int tr_gpu_open(tr_gpu **out, size_t in_bytes, size_t out_bytes, char *why, size_t len) {
  *out = NULL;
  tr_gpu *g = calloc(1, sizeof *g);
  if (!g) {
    if (why) snprintf(why, len, "out of memory");
    return -1;
  }
  cudaError_t e;
  if ((e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking)) != cudaSuccess) {
    free(g);
    return fail("cannot create a stream", e, why, len);
  }
  if ((e = cudaMalloc(&g->d_in, in_bytes)) != cudaSuccess || (e = cudaMalloc(&g->d_out, out_bytes)) != cudaSuccess ||
      (e = cudaHostAlloc(&g->h_out, out_bytes, cudaHostAllocPortable)) != cudaSuccess) {
    tr_gpu_close(g);
    return fail("cannot allocate device tiles", e, why, len);
  }
  g->in_bytes = in_bytes;
  g->out_bytes = out_bytes;
  g->profile = getenv("TERRAFORT_GPU_PROFILE");
  for (int i = 0; g->profile && i < 4; i++)
    if ((e = cudaEventCreate(&g->ev[i])) != cudaSuccess) {
      tr_gpu_close(g);
      return fail("cannot create events", e, why, len);
    }
  *out = g;
  return 0;
}

void tr_gpu_close(tr_gpu *g) {
  if (!g) return;
  if (g->profile && g->launches) profile_write(g);
  for (int i = 0; i < 4; i++)
    if (g->ev[i]) cudaEventDestroy(g->ev[i]);
  cudaFree(g->d_in);
  cudaFree(g->d_out);
  if (g->h_out) cudaFreeHost(g->h_out);
  if (g->stream) cudaStreamDestroy(g->stream);
  free(g);
}

int tr_gpu_run(tr_gpu *g, const tr_kernel *k, const void *params, const tr_window *w, void *out, size_t out_bytes,
               int trap, char *why, size_t len) {
  if (tr_gpu_lost()) {
    if (why) snprintf(why, len, "GPU: the device reported a hardware error earlier in this run");
    return TR_GPU_FAULT;
  }
  /* the window as read: rows + 2 halo lines of in_stride floats */
  const size_t in_bytes = (size_t)((w->rows + 2 * w->halo) * w->in_stride) * sizeof(float);
  if (in_bytes > g->in_bytes || out_bytes > g->out_bytes) {
    if (why) snprintf(why, len, "GPU: tile larger than its device buffers");
    return -1;
  }
  if (g->profile) cudaEventRecord(g->ev[0], g->stream);
  cudaError_t e = cudaMemcpyAsync(g->d_in, w->in, in_bytes, cudaMemcpyHostToDevice, g->stream);
  if (e != cudaSuccess) return fail("copy to device", e, why, len);
  if (g->profile) cudaEventRecord(g->ev[1], g->stream);
  tr_window dw = *w;
  dw.in = (const float *)g->d_in;
  if (trap && tr_gpu_trap_launch(g->stream)) return fail("test trap", cudaPeekAtLastError(), why, len);
  const int rc = k->gpu(params, &dw, 0, w->rows, g->d_out, g->stream);
  if (rc == 1) return 1;
  if (rc < 0) {
    const cudaError_t le = cudaPeekAtLastError();
    if (le != cudaSuccess) return fail(k->name, le, why, len);
    if (why) snprintf(why, len, "GPU: %s kernel failed to launch", k->name);
    return -1;
  }
  if (g->profile) cudaEventRecord(g->ev[2], g->stream);
  if ((e = cudaMemcpyAsync(g->h_out, g->d_out, out_bytes, cudaMemcpyDeviceToHost, g->stream)) != cudaSuccess)
    return fail("copy from device", e, why, len);
  if (g->profile) cudaEventRecord(g->ev[3], g->stream);
  if ((e = cudaStreamSynchronize(g->stream)) != cudaSuccess) return fail(k->name, e, why, len);
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

#else /* no CUDA: no GPU */

int tr_gpu_count(char *why, size_t len) {
  if (why) snprintf(why, len, "terrafort was built without CUDA");
  return 0;
}

void *tr_host_alloc(size_t bytes, int pinned) {
  (void)pinned;
  return malloc(bytes);
}

void tr_host_free(void *p, int pinned) {
  (void)pinned;
  free(p);
}

int tr_gpu_open(tr_gpu **g, size_t in_bytes, size_t out_bytes, char *why, size_t len) {
  (void)in_bytes;
  (void)out_bytes;
  *g = NULL;
  tr_gpu_count(why, len);
  return -1;
}

void tr_gpu_close(tr_gpu *g) { (void)g; }

int tr_gpu_run(tr_gpu *g, const tr_kernel *k, const void *params, const tr_window *w, void *out, size_t out_bytes,
               int trap, char *why, size_t len) {
  (void)g, (void)k, (void)params, (void)w, (void)out, (void)out_bytes, (void)trap;
  tr_gpu_count(why, len);
  return -1;
}

int tr_gpu_lost(void) { return 0; }

#endif
