/*
 * flowdir.h - the `flowdir` graph program's params (hydro/flowdir_program.c)
 * (internal to libterrain).
 *
 * The program turns a filled DEM into D8 directions: the D8 rule
 * (kernels/d8.h) where a cell has a lower neighbour, and Barnes, Lehman &
 * Mulla (2014) on flats. Barnes labels each flat and adds a per-flat constant
 * (its largest distance from higher terrain) to keep masks positive; cells
 * are only ever compared with neighbours of the same flat, so the constant
 * drops out and the labels with it. What remains are two breadth-first
 * distances over flat cells, both least fixed points (f_aggr = min, values
 * only fall from +inf: GRAPE's monotone condition):
 *   dl(c) = 1 + min over equal-elevation neighbours n of (0 if n drains, dl(n)
 *           if n is flat)                      (towards lower terrain)
 *   dh(c) = 0 if c has a higher neighbour, else 1 + min over
 *           equal-elevation flat neighbours of dh(n)   (away from higher)
 * where a flat cell is a valid cell with eight valid neighbours none lower,
 * and a cell drains when it is valid and not flat (it has a D8 direction, or
 * it is an outlet: the DEM's edge or next to NoData). A flat cell then flows to
 * the first equal-elevation draining neighbour in the D8 order, else to the
 * equal-elevation flat neighbour with the smallest 2 dl - dh (dh counted as 0
 * on a flat without higher terrain, where it is +inf everywhere), ties in the
 * D8 order. Some neighbour one step closer to the outlet has 2 dl - dh smaller
 * by at least 1 (dl falls by 1, dh changes by at most 1), so the key strictly
 * falls along every path: no cycles, and every flat cell reaches a draining
 * cell. A flat cell with dl = +inf (a closed depression: only in a DEM said
 * to be filled that is not) gets nodata. This is Barnes's assignment with
 * ties broken in the D8 order; the tests compare it with a plain
 * queue-based implementation of the paper.
 */
#ifndef TR_FLOWDIR_H
#define TR_FLOWDIR_H

#include <math.h>
#include <stdint.h>

#include "d8.h"
#include "dinf.h"

/* The "dinf" program (the same file, the same bodies): TauDEM dinfflowdir's
 * angle and slope (kernels/dinf.h; the slope is the "dinf_slp" local kernel,
 * kernels/dinf_slope.c). Its flats take TauDEM's Garbrecht & Martz
 * gradients, which are these distances with one change: a level drain on the
 * DEM's edge or next to NoData (no angle of its own) seeds dl with 2 instead
 * of 1 (TauDEM's incfall counts it as a cell reached one pass later); then
 * TauDEM's artificial elevation of a flat cell is dl - dh up to a constant
 * per run, which cancels in every facet it enters (flowdir_program.c,
 * dinf_flat). */
enum { TR_FLOWDIR_D8 = 0, TR_FLOWDIR_DINF = 1 };

typedef struct {
  int32_t encoding;   /* tr_dir_encoding of the output codes */
  tr_d8_geom geom;    /* cell sizes (kernels/d8.h) */
  int32_t method;     /* TR_FLOWDIR_D8 (program "flowdir") or TR_FLOWDIR_DINF ("dinf") */
} tr_flowdir_params;

/* The "dinf_up" program (dinf_up_program.c): TauDEM areadinf's specific
 * catchment area over a D-infinity angle raster (input 0), or twi (or the
 * stream power index, SPI) from it and a slope raster (input 1); or
 * (TR_DINF_UP_*_GIVEN, TauDEM twi's own form) twi or SPI from a given sca
 * raster (input 0) and slope (input 1), where nothing flows and Assemble
 * alone computes. Float32, nodata -1 (TauDEM's). */
enum {
  TR_DINF_UP_SCA = 0,
  TR_DINF_UP_TWI = 1,
  TR_DINF_UP_TWI_GIVEN = 2,
  TR_DINF_UP_SPI = 3,
  TR_DINF_UP_SPI_GIVEN = 4
};
static inline int tr_dinf_up_given(int product) {
  return product == TR_DINF_UP_TWI_GIVEN || product == TR_DINF_UP_SPI_GIVEN;
}
#define TR_DINF_UP_NODATA (-1.0)
typedef struct {
  int32_t product;    /* TR_DINF_UP_* */
  int32_t edge_check; /* sca: TauDEM's contamination rule (twi: never) */
  tr_d8_geom geom;    /* cell sizes of the angle raster (kernels/d8.h) */
} tr_dinf_up_params;

/* The "mfd_up" program (mfd_up_program.c): multiple-flow-direction
 * accumulation in cells over the filled DEM (input 0) and its D-infinity
 * angles (input 1, which drain the flats). Float64, nodata -1 (RichDEM's). */
enum { TR_MFD_QUINN = 0, TR_MFD_HOLMGREN = 1, TR_MFD_FREEMAN = 2, TR_MFD_RHO8 = 3 };
#define TR_MFD_UP_NODATA (-1.0)
typedef struct {
  int32_t rule;       /* TR_MFD_QUINN, TR_MFD_HOLMGREN, TR_MFD_FREEMAN or TR_MFD_RHO8 */
  double exponent;    /* Holmgren's x (Quinn: 1), Freeman's p */
  tr_d8_geom geom;    /* cell sizes of the angle raster, for the flats' shares */
  uint64_t seed;      /* Rho8: the draws' seed (tr_rho8_draw) */
  double unit;        /* what a cell counts in the output: 1, or its area (--units area) */
} tr_mfd_up_params;

/* Rho8's draw for cell (global index row * cols + col) and RichDEM's
 * neighbour m (0..7: W, NW, N, NE, E, SE, S, SW): SplitMix64 of
 * seed ^ (8 * cell + m), its top 53 bits as a double in [0, 1). */
static inline double tr_rho8_draw(uint64_t seed, int64_t cell, int m) {
  uint64_t z = seed ^ ((uint64_t)cell * 8u + (uint64_t)m);
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) * 0x1.0p-53;
}

/* The "dist_down" program (dist_down_program.c): what lies downstream of a
 * cell on the way to the nearest stream, computed from the stream cells up
 * against the flow. TR_DOWN_HAND: TauDEM dinfdistdown -m ave v (the vertical
 * drop to the stream averaged over the D-infinity paths by the proportions;
 * inputs: 0 the angles, 1 the filled DEM, 2 the streams); TR_DOWN_D8DIST:
 * TauDEM d8hdisttostrm (the horizontal distance along the D8 path; inputs:
 * 0 the directions in `encoding`, 1 the streams). A stream cell is one whose
 * streams value is >= 1. Float32, nodata -FLT_MAX (TauDEM's). */
enum { TR_DOWN_HAND = 0, TR_DOWN_D8DIST = 1 };
#define TR_DOWN_NODATA (-3.4028234663852886e38)
typedef struct {
  int32_t product;    /* TR_DOWN_HAND or TR_DOWN_D8DIST */
  int32_t encoding;   /* D8: tr_dir_encoding of input 0 */
  tr_d8_geom geom;    /* cell sizes of input 0 (kernels/d8.h) */
  const char *src;    /* D8: input 0's name, for its bad codes */
} tr_dist_down_params;

/* The "d8_len" program (d8_len_program.c): TauDEM gridnet over D8
 * directions (input 0, in `encoding`), without a mask or outlets: the
 * longest and the total upslope path length (Float32) and the grid
 * Strahler order (written Int16). Nodata -1 (TauDEM's). */
enum { TR_D8_PLEN = 0, TR_D8_TLEN = 1, TR_D8_GORD = 2 };
#define TR_D8_LEN_NODATA (-1.0)
typedef struct {
  int32_t product;    /* TR_D8_PLEN, TR_D8_TLEN or TR_D8_GORD */
  int32_t encoding;   /* tr_dir_encoding of input 0 */
  tr_d8_geom geom;    /* cell sizes of input 0 (kernels/d8.h) */
  const char *src;    /* input 0's name, for its bad codes and cycles */
} tr_d8_len_params;

/* --ft replay's invariant of flowdir's tiles (flow_check.c): the cells of n
 * that are not one of the encoding's nine codes (nodata included). */
int64_t tr_flowdir_check_tile(int32_t encoding, int64_t n, const int16_t *tile);

#endif
