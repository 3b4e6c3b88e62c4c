/*
 * mem_limit.h - how much memory a rank may use (internal to libterrain). Not
 * memory.h: that name is glibc's <memory.h>, which a private include folder
 * would shadow.
 *
 * A graph program keeps state for every cell its rank owns (fill: one float of
 * W per cell). The graph runner plans a run against what this rank may have
 * (hydro/graph_plan.c): all in memory when it fits, else the state beyond --mem
 * spilled to disk (io/state_store.h), and a refusal with the minimum when not
 * even the rounds running fit.
 *
 * What a rank may have: the machine's physical memory, or the cgroup's limit
 * when a container sets a lower one, or the address-space limit (ulimit -v)
 * when that is lower still, shared evenly by the ranks on this node
 * (Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE; 1 outside mpirun).
 */
#ifndef TR_MEM_LIMIT_H
#define TR_MEM_LIMIT_H

#include <stddef.h>
#include <stdint.h>

/* Ranks of this job on this node (1 outside mpirun): they share its memory
 * and its disks. */
int tr_node_ranks(void);

/* Bytes this process may use: see above. Never 0 (a floor of 64 MiB). */
int64_t tr_mem_available(void);

/* What a run may keep: --mem when given (> 0), else the documented default,
 * 3/4 of tr_mem_available(). */
int64_t tr_mem_limit(int64_t mem_opt);

/* What every plan leaves the process itself (libraries, MPI, threads'
 * stacks, allocator slack) before counting its own buffers and state. */
#define TR_PROCESS_BYTES ((int64_t)64 << 20)

/* What tr_mem_limit(mem_opt) leaves after the process and `held` bytes of a
 * run's buffers (negative when they alone pass it). */
int64_t tr_mem_room(int64_t mem_opt, int64_t held);

/* Asks the kernel for huge pages (2 MiB, transparent) behind the whole
 * 2 MiB pages of [p, p + bytes), before they are first touched: an array a
 * flood reads at random (breach's raster and flags) then misses the TLB at
 * one page in 512 of the 4 KiB ones. Only a hint: nothing happens where the
 * kernel has them off, and the memory counts the same either way. */
void tr_mem_advise_huge(void *p, size_t bytes);

/* `bytes` for a message: "512 bytes", "3 KiB", "20 MiB" (whole units, rounded
 * down below 1 MiB so that a small --mem never reads as 0 MiB). */
const char *tr_size_text(int64_t bytes, char buf[32]);

#endif
