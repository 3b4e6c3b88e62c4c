/*
 * launcher.c - the `terrafort` program where MPI is built: it links the C
 * library alone and becomes one of its two twins in its own folder, with
 * the same arguments, environment and pid:
 *   - terrafort-mpi (main.c linked with MPI) when mpirun or another MPI
 *     launcher started it;
 *   - terrafort-solo (main.c without MPI) otherwise, so a plain run never
 *     loads MPI's libraries.
 * The choice is made before any library but libc is loaded: a rank of
 * `mpirun terrafort` no longer loads GDAL's hundred-odd libraries once to
 * learn it must load them again (0.15 s of CPU a rank; scripts/bench/startup).
 * Nothing here may need GDAL, MPI or the project's libraries.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_launched.h"

#ifndef TERRAFORT_MPI_PEER
#error "TERRAFORT_MPI_PEER names the twin linked with MPI"
#endif
#ifndef TERRAFORT_SOLO_PEER
#error "TERRAFORT_SOLO_PEER names the twin without MPI"
#endif

/* This program's path: /proc/self/exe, else (no /proc mounted) argv[0]
 * as the shell found it: with a slash as given, else the first PATH entry
 * holding an executable of that name. 0, or -1. */
static int own_path(const char *argv0, char *path, size_t size) {
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

int main(int argc, char **argv) {
  (void)argc;
  const int mpi = tf_launched_by_mpirun();
  const char *twin = mpi ? TERRAFORT_MPI_PEER : TERRAFORT_SOLO_PEER;
  char path[PATH_MAX];
  if (own_path(argv[0], path, sizeof path)) path[0] = 0;
  char *slash = strrchr(path, '/');
  if (!slash || (size_t)(slash + 1 - path) + strlen(twin) + 1 > sizeof path) {
    fprintf(stderr, "terrafort: cannot find this program's folder (/proc/self/exe, argv[0], PATH)\n");
    return 1;
  }
  memcpy(slash + 1, twin, strlen(twin) + 1);
  execv(path, argv);
  if (mpi)
    fprintf(stderr, "terrafort: started by mpirun, but cannot run %s, its MPI build: %s\n", path, strerror(errno));
  else
    fprintf(stderr, "terrafort: cannot run %s, the program itself: %s\n", path, strerror(errno));
  return 1;
}
