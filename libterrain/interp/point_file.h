/*
 * point_file.h - the point index on disk, for point sets larger than --mem
 * (internal to libterrain).
 *
 * Why: interpolation keeps every point and its bucket grid in memory
 * (point_index.h), about 80 bytes a point; lidar point sets are larger than
 * a machine's memory. The grid's layout - a header, one offset per bucket,
 * the points sorted by bucket with input order inside a bucket - does not
 * need to be in memory to be searched: a tile only reads the buckets near
 * it. So the same bytes are written to a file, and a tile's view is read
 * from it (tr_pfile_view): the bytes tr_pview_copy makes from the whole
 * index in memory, so every answer, and the output, is the same.
 *
 * How (an external counting sort in bounded memory):
 *   1. the reader streams each point to tr_pfile_add: appended, in input
 *      order, to an unlinked scratch file;
 *   2. tr_pfile_finish plans the bucket grid from the count and extent as
 *      tr_pindex_build does, counts the points of each run of buckets (a
 *      row, or part of one when the rows are many buckets long), and splits
 *      the buckets, in the index's order, into bands whose points fit the
 *      memory given;
 *   3. the scratch file is read once more, each point appended (with its
 *      input order) to its band's file;
 *   4. each band in turn is loaded, sorted by bucket (stable) and written
 *      at its place in the index file, with its buckets' offsets.
 * Every file is created in the folder given and unlinked at once: nothing
 * is left behind whatever ends the process. Disk: about 24 bytes a point
 * for the scratch file, then 32 for the bands and 36 for the index
 * (the scratch file is released after step 3, each band after step 4).
 *
 * Thread safety: a finished tr_pfile is read with pread only; any number of
 * threads may call tr_pfile_view at once.
 */
#ifndef TR_POINT_FILE_H
#define TR_POINT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "point_index.h"

typedef struct tr_pfile_builder tr_pfile_builder;

/* A finished index on disk: the bytes of a tr_pindex (point_index.h). */
typedef struct {
  int fd;            /* unlinked; -1: none */
  tr_pview_head h;   /* its header, also at offset 0 */
} tr_pfile;

/* Starts a build with an unlinked scratch file in folder dir. */
int tr_pfile_begin(tr_pfile_builder **out, const char *dir, tr_error *err);

/* Appends one point (x, y finite), in input order. */
int tr_pfile_add(tr_pfile_builder *b, double x, double y, double z, tr_error *err);

/* Sorts the points added into the index file, using at most about `mem`
 * bytes of memory; frees b whatever the outcome. cancelled(user) != 0 (a
 * signal; cancelled may be NULL), asked once per chunk read, stops it. Buckets holding more
 * points than `mem` can sort (extremely clustered points) are refused with
 * the memory they need. */
int tr_pfile_finish(tr_pfile_builder *b, int64_t mem, int (*cancelled)(void *), void *user, tr_pfile *out,
                    tr_error *err);

/* Frees an unfinished build (its files go with it). */
void tr_pfile_abort(tr_pfile_builder *b);

void tr_pfile_close(tr_pfile *f);

/* The view of the buckets meeting [xmin, xmax] x [ymin, ymax], as
 * tr_pview_copy makes it from the whole index: *bytes (malloc'd, 8-byte
 * aligned; the caller frees it) of *len bytes. */
int tr_pfile_view(const tr_pfile *f, double xmin, double ymin, double xmax, double ymax, void **bytes, size_t *len,
                  tr_error *err);

#endif
