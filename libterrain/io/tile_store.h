/*
 * tile_store.h - where the graph runner keeps the input windows its programs
 * read (internal to libterrain).
 *
 * A graph program's round borrows its fragment's padded input window (the
 * tile plus a one-cell halo) and gives it back when the round ends. The store
 * keeps returned windows in an LRU cache of at most `budget` bytes and loads a
 * missing one through the loader (a GDAL band, or an array in tests), so
 * programs never hold elevations themselves and never see where they come
 * from. This is the interface an out-of-core store will implement later.
 *
 * Windows are normalised once, here: NoData (the value, or NaN) becomes NaN,
 * cells outside the grid are NaN, and -0 is read as +0 (the two compare equal,
 * so with both present a min-combining program could keep either and the
 * output bytes would depend on message order).
 *
 * A window the cache cannot keep is not freed at once: up to TR_STORE_SPARES
 * of them are kept, within the same budget, for the next loads of a window of
 * that size. Each fresh window would otherwise come from fresh pages (an
 * out-of-core run maps such arrays on their own, graph_run.c), and a page
 * fault per 4 KiB cost a spilling fill at 8000² 900,000 faults and two thirds
 * of its time.
 *
 * Thread safety: get/put may be called from any thread; a fragment's window
 * has one borrower at a time (a fragment runs one round at a time). Loader
 * calls are serialised under one lock, so it may use a GDAL dataset, unless
 * the caller says its loader may run on several threads at once
 * (tr_tile_store_concurrent_loads: direct reads, io/raster.h).
 */
#ifndef TR_TILE_STORE_H
#define TR_TILE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "grid.h"

/* Reads the window [row0, row0 + rows) x [col0, col0 + cols), always inside
 * the grid, into dst (row r at dst + r * stride, stride >= cols) for tile t.
 * Returns 0 on success. */
typedef int (*tr_store_load_fn)(void *user, const tr_tile *t, int64_t row0, int64_t col0, int64_t rows,
                                int64_t cols, float *dst, int64_t stride);

/* spare windows kept for reuse, within the budget */
#define TR_STORE_SPARES 4

typedef struct tr_tile_store tr_tile_store;

/* A store over a rows x cols grid of ntiles tiles (ids 0 .. ntiles-1). */
tr_tile_store *tr_tile_store_create(int64_t rows, int64_t cols, int64_t ntiles, size_t budget, int has_nodata,
                                    float nodata, tr_store_load_fn load, void *user);
void tr_tile_store_destroy(tr_tile_store *s);

/* The padded window ((t->rows + 2) x (t->cols + 2) floats) of tile t, or NULL
 * when loading failed or memory ran out. Give it back with tr_tile_store_put. */
float *tr_tile_store_get(tr_tile_store *s, const tr_tile *t);
void tr_tile_store_put(tr_tile_store *s, const tr_tile *t, float *z);

/* The loader is safe on several threads at once (it reads with pread, not
 * through GDAL): loads no longer take the store's I/O lock, so one thread's
 * read does not wait for another's (nor for a write holding that lock,
 * tr_tile_store_io_lock). Call before the first get. */
void tr_tile_store_concurrent_loads(tr_tile_store *s);

/* The bytes the store holds between rounds: cached windows and spares
 * (never more than the budget). */
size_t tr_tile_store_held(tr_tile_store *s);

/* The loader's lock (loads run one at a time under it). Whoever does other
 * GDAL work while loads may run on other threads (a writer) holds it too:
 * GDAL's block cache may flush one dataset's dirty blocks from the thread
 * that is reading another, so GDAL calls on different datasets are not
 * independent. */
void tr_tile_store_io_lock(tr_tile_store *s);
void tr_tile_store_io_unlock(tr_tile_store *s);

#endif
