/*
 * test_fill_ref.h - what the fill tests share (defined in test_fill_ref.c):
 * the independent sequential priority-flood reference, the 48 x 57 test DEMs
 * and the fragment layouts.
 */
#ifndef TEST_FILL_REF_H
#define TEST_FILL_REF_H

#include <stdint.h>

#include "aap.h"

#define R 48
#define C 57
enum { DEM_PITS, DEM_FLATS, DEM_NODATA_VAL, DEM_NODATA_NAN, DEM_SPIRAL, DEM_NODEP, NDEM };
enum { LAY_ONE, LAY_TWO, LAY_FOUR, LAY_SEVEN, LAY_SMALL, LAY_STRIPS, NLAY };
extern const char *dem_name[];
extern const char *lay_name[];

/* The flat (or epsilon) fill of z by a plain heap priority-flood over the
 * whole grid; uses none of libterrain's fill code. */
void ref_fill(const float *z, int64_t rows, int64_t cols, int has_nd, float nd, int epsilon, float eps, float *w);
void make_dem(int kind, float *z, int64_t rows, int64_t cols, int *has_nd, float *nd);
int make_layout(int kind, tr_aap_layout *L);

#endif
