/*
 * device.c - GPUs for the local runner (device.h): the CUDA module
 * (device_module.h, terrafort-cuda.so) loaded the first time a run asks
 * for a GPU, and its functions called through its table. Where the module
 * is not found, cannot be loaded or is not this build's, there is no GPU
 * (tr_gpu_count says why) and host buffers come from malloc; neither the
 * program nor the library links any CUDA library.
 *
 * Where the module is looked for, first found wins:
 *   - $TERRAFORT_CUDA_MODULE, a file's path (then nowhere else);
 *   - beside the code that holds this file: ../lib/terrafort/ from a
 *     program's folder (bin/ when installed, the build tree's tools/), and
 *     terrafort/ from a shared library's folder (lib/);
 *   - the folder it is installed in (TERRAFORT_CUDA_MODULE_INSTALLED, set
 *     by CMake).
 */
#define _GNU_SOURCE /* dladdr */
#include "device.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device_module.h"
#include "terrain.h"

static const tr_cuda_module *M;
static char load_why[1024];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

#ifdef TERRAFORT_HAVE_CUDA
/* dirname of `path` into dir (NULL-safe); 0 when there is none */
static int folder_of(const char *path, char *dir, size_t len) {
  const char *slash = path ? strrchr(path, '/') : NULL;
  if (!slash || path[0] != '/' || (size_t)(slash - path) + 1 > len) return 0;
  memcpy(dir, path, (size_t)(slash - path));
  dir[slash - path] = '\0';
  return 1;
}

/* Loads the module at `path`: 1 when loaded, 0 with load_why. */
static int load_from(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(load_why, sizeof load_why, "cannot load the CUDA module %s: %s", path, e ? e : "unknown error");
    return 0;
  }
  tr_cuda_module_entry_fn entry;
  *(void **)&entry = dlsym(h, TR_CUDA_MODULE_ENTRY);
  const tr_cuda_module *m = entry ? entry() : NULL;
  if (!m || m->abi != TR_CUDA_MODULE_ABI || m->window_size != sizeof(tr_window)) {
    snprintf(load_why, sizeof load_why, "the CUDA module %s is not this terrafort's (another build or version)", path);
    dlclose(h);
    return 0;
  }
  M = m; /* never unloaded: the CUDA runtime inside it keeps threads */
  return 1;
}
#endif

static void load(void) {
#ifndef TERRAFORT_HAVE_CUDA
  snprintf(load_why, sizeof load_why, "terrafort was built without CUDA");
#else
  const char *env = getenv("TERRAFORT_CUDA_MODULE");
  if (env && *env) {
    if (access(env, F_OK) != 0)
      snprintf(load_why, sizeof load_why, "TERRAFORT_CUDA_MODULE names %s, which does not exist", env);
    else
      load_from(env);
    return;
  }
  char cand[4][PATH_MAX + 64];
  int n = 0;
  char self[PATH_MAX], dir[PATH_MAX];
  const ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
  if (k > 0) {
    self[k] = '\0';
    if (folder_of(self, dir, sizeof dir)) snprintf(cand[n++], sizeof cand[0], "%s/../lib/terrafort/%s", dir, TR_CUDA_MODULE_FILE);
  }
  Dl_info info;
  if (dladdr(load_why, &info) && info.dli_fname && folder_of(info.dli_fname, dir, sizeof dir) &&
      (k <= 0 || strcmp(info.dli_fname, self) != 0))
    snprintf(cand[n++], sizeof cand[0], "%s/terrafort/%s", dir, TR_CUDA_MODULE_FILE);
#ifdef TERRAFORT_CUDA_MODULE_INSTALLED
  snprintf(cand[n++], sizeof cand[0], "%s", TERRAFORT_CUDA_MODULE_INSTALLED);
#endif
  for (int i = 0; i < n; i++)
    if (access(cand[i], F_OK) == 0) {
      load_from(cand[i]);
      return;
    }
  int at = snprintf(load_why, sizeof load_why, "the CUDA module %s is not installed (looked for", TR_CUDA_MODULE_FILE);
  for (int i = 0; i < n && at > 0 && (size_t)at < sizeof load_why; i++)
    at += snprintf(load_why + at, sizeof load_why - (size_t)at, "%s %s", i ? "," : "", cand[i]);
  if (at > 0 && (size_t)at < sizeof load_why) snprintf(load_why + at, sizeof load_why - (size_t)at, ")");
#endif
}

static const tr_cuda_module *module(void) {
  pthread_once(&load_once, load);
  return M;
}

int tr_gpu_count(char *why, size_t len) {
  const tr_cuda_module *m = module();
  if (m) return m->count(why, len);
  if (why) snprintf(why, len, "no usable GPU: %s", load_why);
  return 0;
}

int tr_gpu_has(const tr_kernel *k) {
  const tr_cuda_module *m = module();
  return m && m->has(k->name);
}

/* Pinned buffers come from the module, which is loaded before any is asked
 * for (a launcher asks tr_gpu_count first); M is then set for good. */
void *tr_host_alloc(size_t bytes, int pinned) {
  if (pinned && M) return M->host_alloc(bytes);
  return malloc(bytes);
}

void tr_host_free(void *p, int pinned) {
  if (!p) return;
  if (pinned && M) M->host_free(p);
  else free(p);
}

int tr_gpu_lost(void) { return M ? M->lost() : 0; }

int tr_gpu_bus_id(char *buf, int len) { return M ? M->bus_id(buf, len) : -1; }

int tr_gpu_open(tr_gpu **g, size_t in_bytes, size_t out_bytes, double timeout_ms, char *why, size_t len) {
  *g = NULL;
  const tr_cuda_module *m = module();
  if (m) return m->open(g, in_bytes, out_bytes, timeout_ms, why, len);
  tr_gpu_count(why, len);
  return -1;
}

void tr_gpu_close(tr_gpu *g) {
  if (g && M) M->close(g);
}

int tr_gpu_run_rows(tr_gpu *g, const tr_kernel *k, const void *params, const tr_window *w, int64_t row0,
                    int64_t nrows, void *out, size_t out_bytes, int trap, char *why, size_t len) {
  if (!M) {
    tr_gpu_count(why, len);
    return -1;
  }
  return M->run(g, k->name, params, w, row0, nrows, out, out_bytes, trap, why, len);
}

int tr_gpu_run(tr_gpu *g, const tr_kernel *k, const void *params, const tr_window *w, void *out, size_t out_bytes,
               int trap, char *why, size_t len) {
  return tr_gpu_run_rows(g, k, params, w, 0, w->rows, out, out_bytes, trap, why, len);
}

/* The rank's place among the ranks of its node, from what the MPI
 * launchers put in its environment; else the world rank (one node). */
static int node_rank(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                                     "PMI_LOCAL_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
    const char *v = getenv(vars[i]);
    char *end;
    long r = v && *v ? strtol(v, &end, 10) : -1;
    if (r >= 0 && v && *end == '\0' && r < 1 << 20) return (int)r;
  }
  return tr_rank();
}

int tr_gpu_pick(const tr_run_opts *run, int *index, char *why, size_t len) {
  *index = -1;
  const int n = tr_gpu_count(why, len);
  if (n <= 0) return 0;
  const int want = run->device_pin > 0 ? run->device_pin - 1 : node_rank() % n;
  char name[256];
  if (M->select(want, name, sizeof name) != 0) {
    if (why) snprintf(why, len, "%s", name);
    return -1;
  }
  *index = want;
  return n;
}
