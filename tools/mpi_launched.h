/*
 * mpi_launched.h - whether an MPI launcher (mpirun, srun, mpiexec) started
 * this process: the variables it sets. Header-only, because the launcher
 * (launcher.c) links the C library alone and process.c asks the same.
 */
#ifndef TF_MPI_LAUNCHED_H
#define TF_MPI_LAUNCHED_H

#include <stdlib.h>

static inline int tf_launched_by_mpirun(void) {
  const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (getenv(vars[i])) return 1;
  return 0;
}

#endif
