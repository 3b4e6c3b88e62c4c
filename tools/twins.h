/*
 * twins.h - the programs beside `terrafort`: whether an MPI launcher
 * (mpirun, srun, mpiexec) started this process, and becoming a program of
 * the same folder. Header-only, because the launcher (launcher.c) links the
 * C library alone and terrafort-solo (process.c) does the same when mpirun
 * starts it directly.
 */
#ifndef TF_TWINS_H
#define TF_TWINS_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The variables an MPI launcher sets. */
static inline int tf_launched_by_mpirun(void) {
  const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (getenv(vars[i])) return 1;
  return 0;
}

/* This program's path: /proc/self/exe, else (no /proc mounted) argv[0]
 * as the shell found it: with a slash as given, else the first PATH entry
 * holding an executable of that name. 0, or -1. */
static inline int tf_own_path(const char *argv0, char *path, size_t size) {
  const ssize_t n = readlink("/proc/self/exe", path, size - 1);
  if (n > 0) {
    path[n] = 0;
    return 0;
  }
  if (!argv0 || !*argv0) return -1;
  if (strchr(argv0, '/')) return snprintf(path, size, "%s", argv0) < (int)size ? 0 : -1;
  const char *dirs = getenv("PATH");
  while (dirs && *dirs) {
    const char *end = strchr(dirs, ':');
    const int len = end ? (int)(end - dirs) : (int)strlen(dirs);
    if (snprintf(path, size, "%.*s/%s", len ? len : 1, len ? dirs : ".", argv0) < (int)size && access(path, X_OK) == 0)
      return 0;
    dirs = end ? end + 1 : NULL;
  }
  return -1;
}

/* Becomes `twin` from this program's folder, with the same arguments,
 * environment and pid. Returns only when it cannot: -1 with path[0] == 0
 * when the folder is unknown, else with path the program tried (errno
 * says why). */
static inline int tf_exec_twin(char **argv, const char *twin, char *path, size_t size) {
  if (tf_own_path(argv[0], path, size)) path[0] = 0;
  char *slash = strrchr(path, '/');
  if (!slash || (size_t)(slash + 1 - path) + strlen(twin) + 1 > size) {
    path[0] = 0;
    return -1;
  }
  memcpy(slash + 1, twin, strlen(twin) + 1);
  execv(path, argv);
  return -1;
}

#endif
