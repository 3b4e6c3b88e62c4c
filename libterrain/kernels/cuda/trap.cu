/*
 * trap.cu - a kernel that traps, for tests only: the injector's gpu-trap
 * (inject.h) queues it before a tile's kernel so that the stream ends with
 * the error a faulty device gives (a launch failure), and the local runner's
 * handling of a device fault (launch.c) can be shown on a real GPU.
 */
#include <cuda_runtime.h>

/* declared in module.c (C), which queues it for the injector's gpu-trap */
extern "C" int tr_gpu_trap_launch(void *stream);

namespace {
__global__ void trap_now() { __trap(); }
}  // namespace

extern "C" int tr_gpu_trap_launch(void *stream) {
  trap_now<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>();
  return cudaPeekAtLastError() == cudaSuccess ? 0 : -1;
}
