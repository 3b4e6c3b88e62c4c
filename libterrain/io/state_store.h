/*
 * state_store.h - where the graph runner keeps its programs' per-fragment
 * state: in memory up to a budget, the rest spilled to disk (internal to
 * libterrain).
 *
 * A graph program keeps arrays per fragment (fill: W over the padded window;
 * d8_up: directions and values). For a DEM larger than memory they do not all
 * fit, so the program registers each array with the store (tr_graph_keep,
 * graph.h) and the runner pins a fragment's arrays around each of its rounds.
 * While the unpinned arrays resident exceed the budget, the store writes the
 * least recently used fragment's arrays out, frees them and sets the
 * program's pointers to NULL; pinning the fragment again reads them back into
 * fresh memory and sets the pointers. The program never notices, and the
 * values are the same bytes: a run's output does not depend on the budget.
 *
 * The spill file is created in the given folder on the first spill and
 * unlinked at once, so the disk space it holds is returned when the process
 * ends, however it ends (success, failure, a signal, SIGKILL): no folder is
 * ever left to clean. Each array spills into an extent of the file sized for
 * its raw bytes (reused by later spills of it while it fits), LZ4-compressed
 * when that saves at least an eighth; the file is sparse, so it takes the
 * compressed size on disk. Disk needed: at most the raw bytes of every
 * registered array.
 *
 * Thread safety: every call may come from any thread. A fragment is pinned by
 * one thread at a time (the engine never runs two rounds of one fragment at
 * once); another thread may spill it while it is unpinned.
 */
#ifndef TR_STATE_STORE_H
#define TR_STATE_STORE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tr_state_store tr_state_store;

typedef struct {
  int64_t budget;                  /* bytes of unpinned state kept in memory */
  int64_t resident, peak_resident; /* bytes of state in memory now, and the most at once */
  int64_t spills, restores;        /* fragments written out, read back */
  int64_t bytes_written, bytes_read; /* to and from the spill file (after compression) */
  int64_t raw_written;             /* the same before compression */
} tr_state_store_stats;

/* A store for fragments 0 .. nfrags-1 keeping at most `budget` bytes of
 * unpinned state in memory (< 0: no limit, never spills), spilling into a
 * file in folder `dir`. NULL when out of memory. */
tr_state_store *tr_state_store_create(int64_t nfrags, int64_t budget, const char *dir);
/* Frees the store and closes (so releases) the spill file; arrays still
 * registered are the program's to free. */
void tr_state_store_destroy(tr_state_store *s);

/* Registers *pp (a pointer to a malloc'd array of `bytes` bytes, or NULL) as
 * state of pinned fragment f. With count non-NULL the array's size is read
 * at each spill as elem x *count (an array the program grows: its pointer
 * and count change together, inside f's rounds); bytes is then elem. */
int tr_state_store_keep(tr_state_store *s, int64_t f, void *pp, size_t bytes, const size_t *count);

/* Before a round of f: reads f's arrays back if they were spilled (waiting
 * while another thread is spilling them) and holds them in memory. 0, or -1
 * with the reason in tr_state_store_error. */
int tr_state_store_pin(tr_state_store *s, int64_t f);
/* After the round: f may be spilled again; spills least recently used
 * fragments until the unpinned state fits the budget. 0 or -1. */
int tr_state_store_unpin(tr_state_store *s, int64_t f);
/* Forgets f's arrays (the program is about to free them, or has); f must not
 * be pinned by another thread. */
void tr_state_store_drop(tr_state_store *s, int64_t f);
/* 1 when f's arrays are in memory (a fragment with none registered is). A
 * hint for the engine's schedule, read without a lock. */
int tr_state_store_resident(const tr_state_store *s, int64_t f);

/* Fault injection (TERRAFORT_INJECT spill-fail): spill number nth (1-based;
 * 0: none) fails as an I/O error would. */
void tr_state_store_inject_fail(tr_state_store *s, int64_t nth);

void tr_state_store_get_stats(tr_state_store *s, tr_state_store_stats *st);
/* The first failure's line ("" when none). */
const char *tr_state_store_error(tr_state_store *s);

#endif
