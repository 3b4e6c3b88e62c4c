/*
 * test_flow_ref.h - what the flow-direction tests share (test_flow_ref.c):
 * the test DEMs, an independent sequential reference (priority-flood fill from
 * test_fill_ref.c, TauDEM's D8 rule and Barnes et al. 2014's flat resolution
 * written from the paper with labels and queues), the invariant checks, and
 * GeoTIFF helpers.
 */
#ifndef TEST_FLOW_REF_H
#define TEST_FLOW_REF_H

#include <stdint.h>

/* The test DEMs. */
enum { FD_PITS, FD_FLATS, FD_NODATA_VAL, FD_NODATA_NAN, FD_SPIRAL, FD_BOWL, FD_TERRACES, FD_NODEP, FD_NDEM };
extern const char *fd_dem_name[];

typedef struct {
  int64_t rows, cols;
  float *z;          /* rows x cols, NoData as the nodata value (or NaN) */
  int has_nd;
  float nd;
  double dx, dy;     /* cell size (rectangular on some DEMs) */
} fd_dem;

/* Makes DEM `kind` (free dem->z). */
void fd_make(int kind, fd_dem *dem);
/* Writes it as a GeoTIFF (UTM 12N). 0 on success. */
int fd_write(const fd_dem *dem, const char *path);

/* The reference: filled DEM (NaN for NoData) and directions k in 0..8
 * (TauDEM numbering, 0 = none) of dem; `filled` skips the fill. */
void fd_reference(const fd_dem *dem, int filled, float *fel, int *dir);

/* A test DEM with its reference (fel and ref: n cells each). */
typedef struct {
  fd_dem dem;
  int64_t n;
  float *fel;
  int *ref;
} fd_case;

/* DEM `kind` (or, with kind < 0, the DEM already in k->dem) and its reference. */
void fd_case_make(int kind, int filled, fd_case *k);
void fd_case_free(fd_case *k);

/* Reads a direction raster (any encoding) into k in 0..8; NULL on failure. */
int *fd_read_dirs(const char *path, int encoding, int64_t rows, int64_t cols);

/* Invariants of directions `dir` over filled DEM fel: every direction points
 * to a valid cell not higher than its own, following directions from every
 * cell ends at a cell without one (no cycle), and every valid cell that is
 * not on the edge or next to NoData has a direction. 1 when they hold. */
int fd_invariants(const float *fel, const int *dir, int64_t rows, int64_t cols, const char *what);

/* Number of cells where a and b differ (first few printed with `what`). */
int64_t fd_diff(const int *a, const int *b, int64_t n, int64_t cols, const char *what);

#endif
