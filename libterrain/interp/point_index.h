/*
 * point_index.h - the spatial index interpolation searches: a bucket grid
 * over the points (internal to libterrain).
 *
 * Why a bucket grid and not a k-d tree: a tile of the output must carry the
 * points it reads to wherever it is computed (a thread, an MPI rank, a libft
 * worker), and the answer for a cell must not depend on which tile it is in.
 * A uniform grid of square buckets over the points' bounding box, with the
 * points sorted by bucket (row-major, input order inside a bucket), gives
 * both for free: the points of any rectangle of buckets are one contiguous
 * run per bucket row, a tile's share is a copy of those runs (a "view"), and
 * a search visits buckets in global order, so a view answers every query
 * inside its rectangle exactly as the whole index does. Building is two
 * passes over the points (a counting sort). The bucket side is chosen for
 * about two points per bucket, so a search costs a few buckets on evenly
 * spread points; strongly clustered points fill a few buckets and cost
 * more. scripts/bench/point_index measures it against a k-d tree: the grid
 * is 2-3x faster for invdistnn's k nearest (uniform or clustered) and for
 * nearest on uniform points, 2x slower for nearest without a radius on
 * clustered points (empty rings); scripts/bench/RESULTS.md has the figures.
 *
 * A view is plain bytes (no pointers: it travels to other ranks as a libft
 * kernel context): a header, the bucket offsets, then the points.
 *
 * Thread safety: a built index and its views are read-only; any number of
 * threads may search them at once.
 */
#ifndef TR_POINT_INDEX_H
#define TR_POINT_INDEX_H

#include <stddef.h>
#include <stdint.h>

/* A point as the index stores it: coordinates, value, and its input order. */
typedef struct {
  double x, y, z;
  int64_t id;
} tr_ipoint;

/* The head of a view's bytes. Bucket (gx, gy) of the whole grid covers
 * x in [x0 + gx cell, x0 + (gx + 1) cell), y likewise; the view holds
 * buckets [bx0, bx0 + nx) x [by0, by0 + ny) of the whole grid's gnx x gny. */
typedef struct {
  double x0, y0, cell;
  int64_t gnx, gny;      /* the whole grid */
  int64_t bx0, by0;      /* the view's first bucket */
  int64_t nx, ny;        /* the view's buckets */
  int64_t n;             /* points in the view */
  int64_t total;         /* points in the whole index */
} tr_pview_head;

/* A view as searches see it (pointers into its bytes). */
typedef struct {
  const tr_pview_head *h;
  const int64_t *start;  /* nx * ny + 1 offsets into pt */
  const tr_ipoint *pt;
} tr_pview;

/* The whole index: a view over every bucket, in memory of its own. */
typedef struct {
  unsigned char *bytes;
  size_t size;
  tr_pview all;
} tr_pindex;

/* Builds the index over n points (x, y finite; z any). Returns 0, or -1 when
 * out of memory. */
int tr_pindex_build(tr_pindex *ix, const double *x, const double *y, const double *z, int64_t n);
void tr_pindex_free(tr_pindex *ix);

/* The bucket grid tr_pindex_build lays over n points of that extent: the
 * whole index's header (point_file.c builds the same index on disk). */
void tr_pindex_plan(int64_t n, double xmin, double ymin, double xmax, double ymax, tr_pview_head *h);
/* The global bucket (row-major) of a point under header h. */
int64_t tr_pindex_bucket(const tr_pview_head *h, double x, double y);
/* Bytes of a view of `buckets` buckets and n points. */
size_t tr_pview_bytes(int64_t buckets, int64_t n);

/* Opens view bytes (as made by tr_pview_copy or an index). */
tr_pview tr_pview_open(const void *bytes);

/* Bytes a copy of the buckets meeting [xmin, xmax] x [ymin, ymax] takes. */
size_t tr_pview_size(const tr_pview *v, double xmin, double ymin, double xmax, double ymax);
/* Copies those buckets into dst (tr_pview_size bytes, 8-byte aligned). */
void tr_pview_copy(const tr_pview *v, double xmin, double ymin, double xmax, double ymax, void *dst);

/* The bucket range of a rectangle, clipped to the view (empty when
 * *x1 < *x0 or *y1 < *y0), in the view's bucket coordinates. */
void tr_pview_range(const tr_pview *v, double xmin, double ymin, double xmax, double ymax, int64_t *x0, int64_t *y0,
                    int64_t *x1, int64_t *y1);

/* The points of view bucket row `by`, buckets [bx0, bx1]: pt[*lo .. *hi). */
static inline void tr_pview_row(const tr_pview *v, int64_t by, int64_t bx0, int64_t bx1, int64_t *lo, int64_t *hi) {
  const int64_t *s = v->start + by * v->h->nx;
  *lo = s[bx0];
  *hi = s[bx1 + 1];
}

/* The k nearest points of (x, y) within `radius` (radius < 0: any distance),
 * ordered by squared distance and then by input order (the later point
 * first when ties_last), into idx (view indices) and d2; returns how many
 * (<= k). Points outside the view are not seen: the caller makes the view
 * wide enough. */
int64_t tr_pview_knn(const tr_pview *v, double x, double y, int64_t k, double radius, int ties_last, int64_t *idx,
                     double *d2);

/* As tr_pview_knn, but only among the points within r of (x, y) (a
 * rectangle of buckets, no rings): the exact answer whenever it finds k
 * points or r is the search radius. Cheap when r is a tight guess, such as
 * a neighbouring node's k-th distance plus the step between them. */
int64_t tr_pview_knn_within(const tr_pview *v, double x, double y, int64_t k, double r, int ties_last, int64_t *idx,
                            double *d2);

#endif
