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
 * learn it must load them again (0.13 s of CPU a rank; scripts/bench/startup).
 * Nothing here may need GDAL, MPI or the project's libraries.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "twins.h"

#ifndef TERRAFORT_MPI_PEER
#error "TERRAFORT_MPI_PEER names the twin linked with MPI"
#endif
#ifndef TERRAFORT_SOLO_PEER
#error "TERRAFORT_SOLO_PEER names the twin without MPI"
#endif

int main(int argc, char **argv) {
  (void)argc;
  const int mpi = tf_launched_by_mpirun();
  char path[PATH_MAX];
  tf_exec_twin(argv, mpi ? TERRAFORT_MPI_PEER : TERRAFORT_SOLO_PEER, path, sizeof path);
  if (!path[0])
    fprintf(stderr, "terrafort: cannot find this program's folder (/proc/self/exe, argv[0], PATH)\n");
  else if (mpi)
    fprintf(stderr, "terrafort: started by mpirun, but cannot run %s, its MPI build: %s\n", path, strerror(errno));
  else
    fprintf(stderr, "terrafort: cannot run %s, the program itself: %s\n", path, strerror(errno));
  return 1;
}
