/*
 * memory.h - how much memory a run may use, and the refusal when it needs more
 * (internal to libterrain).
 *
 * A graph program keeps state for every cell its rank owns (fill: one float of
 * W per cell), so a DEM larger than memory would otherwise grow until the
 * kernel kills the process, or swap for hours. The runner asks first: the
 * estimate of what the run keeps against what this rank may have, and a run
 * that does not fit ends at once with TR_ENOMEM (exit 7) and both figures.
 *
 * What a rank may have: the machine's physical memory, or the cgroup's limit
 * when a container sets a lower one, or the address-space limit (ulimit -v)
 * when that is lower still, shared evenly by the ranks on this node
 * (Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE; 1 outside mpirun).
 */
#ifndef TR_MEMORY_H
#define TR_MEMORY_H

#include <stdint.h>

#include "error.h"

/* Bytes this process may use: see above. Never 0 (a floor of 64 MiB). */
int64_t tr_mem_available(void);

/* TR_OK when `need` bytes fit in tr_mem_available(); otherwise TR_ENOMEM with
 * a line naming `what`, the need and what is available, both in GiB. */
int tr_mem_check(int64_t need, const char *what, tr_error *err);

#endif
