/*
 * trap.cu - kernels for tests only: one that traps, which the injector's
 * gpu-trap (inject.h) queues before a tile's kernel so that the stream ends
 * with the error a faulty device gives (a launch failure); one that spins
 * for a while, which gpu-hang queues so that the stream does not end before
 * the launch's deadline (a hung device). The local runner's handling of
 * both (launch.c, module.c) can so be shown on a real GPU.
 */
#include <cuda_runtime.h>

/* declared in module.c (C), which queues them for the injector */
extern "C" int tr_gpu_trap_launch(void *stream);
extern "C" int tr_gpu_spin_launch(void *stream, int ms);

namespace {
__global__ void trap_now() { __trap(); }

/* spins until the device's global timer has advanced ns nanoseconds: a
 * busy device that answers nothing for that long (gpu-hang) */
__global__ void spin_for(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}
}  // namespace

extern "C" int tr_gpu_spin_launch(void *stream, int ms) {
  spin_for<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<unsigned long long>(ms) * 1000000ull);
  return cudaPeekAtLastError() == cudaSuccess ? 0 : -1;
}

extern "C" int tr_gpu_trap_launch(void *stream) {
  trap_now<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>();
  return cudaPeekAtLastError() == cudaSuccess ? 0 : -1;
}
