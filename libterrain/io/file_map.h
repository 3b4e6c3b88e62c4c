/*
 * file_map.h - a read-only mapping of an input file that direct reads copy
 * cells from (internal to libterrain; io/raster.c uses it).
 *
 * Why: a local run reads each 512-cell tile row by row, and with one pread per
 * row an 8000 x 8000 DEM took 128,000 system calls, about 40% of a hillshade's
 * CPU on a virtual machine, where each costs 3-9 us (scripts/bench/local). A
 * mapping turns them into memcpy and one page fault per 64 KiB the kernel maps
 * around each fault.
 *
 * Two things a plain mapping does not do, done here:
 * - Resident pages stay bounded. Pages already copied stay counted in the
 *   process's resident size until unmapped; tr_file_map_behind drops those
 *   more than `lag` bytes behind the latest read (MADV_DONTNEED: the pages stay
 *   in the page cache, a later read of them just faults them in again), so
 *   a whole-file read keeps a few tile rows resident, not the file.
 * - A file cut short while it is read is an error, not a crash. A read past
 *   a file's new end raises SIGBUS; tr_file_map_copy catches it (a handler
 *   installed while any map is open, for the copying thread only) and
 *   returns -1, so the caller reports the input as truncated. So does a
 *   memory failure in the page being read. Every other SIGBUS goes to the
 *   disposition that was there before.
 *
 * Thread safety: tr_file_map_copy and tr_file_map_behind may run on any
 * number of threads at once on one map; open and close may not overlap them.
 */
#ifndef TR_FILE_MAP_H
#define TR_FILE_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  const char *base; /* NULL: no map (the caller preads) */
  size_t len;
  uint64_t lag;              /* bytes kept resident behind the furthest read */
  uint64_t dropped;          /* pages below this offset were dropped (atomic builtins) */
} tr_file_map;

/* Maps len bytes of fd read-only. Returns 0, or -1 (m->base NULL) when it
 * cannot, and the caller reads with pread. */
int tr_file_map_open(tr_file_map *m, int fd, size_t len, uint64_t lag);

/* Copies n bytes at off (within len) to dst. Returns 0, or -1 when the file
 * no longer holds them (or their page failed): nothing is to be trusted in
 * dst then. */
int tr_file_map_copy(tr_file_map *m, void *dst, uint64_t off, size_t n);

/* A read has reached off: drops the pages more than lag bytes below it, in
 * steps of at least lag (one madvise per step, whichever thread gets there). */
void tr_file_map_behind(tr_file_map *m, uint64_t off);

void tr_file_map_close(tr_file_map *m);

#endif
