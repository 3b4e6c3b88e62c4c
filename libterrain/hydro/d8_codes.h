/*
 * d8_codes.h - the eight D8 directions and their codes in each direction
 * encoding (internal to libterrain; shared by the flow-direction writer and
 * the programs that read a direction raster).
 *
 * Inside libterrain a direction is an index k in 1..8 in TauDEM's numbering,
 * counter-clockwise from east: 1 = E, 2 = NE, 3 = N, 4 = NW, 5 = W, 6 = SW,
 * 7 = S, 8 = SE; 0 means "no direction" (nodata, an outlet). tr_d8_drow[k]
 * and tr_d8_dcol[k] are the row and column steps to the neighbour k points
 * at (rows grow southwards). A file's codes go through tr_d8_encode and
 * tr_d8_decode, one table per encoding (terrain.h, tr_dir_encoding):
 *
 *   k       1 E  2 NE  3 N  4 NW  5 W  6 SW  7 S  8 SE   nodata  type
 *   TauDEM    1     2    3     4    5     6    7     8   -32768  Int16
 *   ESRI      1   128   64    32   16     8    4     2        0  Byte
 *   GRASS     8     1    2     3    4     5    6     7        0  Byte
 *
 * Thread safety: constant tables and pure functions.
 */
#ifndef TR_D8_CODES_H
#define TR_D8_CODES_H

#include <gdal.h>

#include "terrain.h"

/* In the header (not extern) so that loops over k fold them into constants. */
/*                                     -  E  NE   N  NW   W  SW   S  SE */
static const int tr_d8_drow[9] = {0, 0, -1, -1, -1, 0, 1, 1, 1};
static const int tr_d8_dcol[9] = {0, 1, 1, 0, -1, -1, -1, 0, 1};

/* The code of direction k (1..8) in encoding e; k = 0 gives e's nodata. */
int tr_d8_encode(tr_dir_encoding e, int k);
/* The direction (1..8) of code `code` in encoding e; 0 for nodata and for any
 * value that is not one of e's eight codes. */
int tr_d8_decode(tr_dir_encoding e, double code);
/* The band type and nodata value of a direction raster in encoding e. */
GDALDataType tr_d8_type(tr_dir_encoding e);
double tr_d8_nodata(tr_dir_encoding e);
/* 1 when e is one of the three encodings. */
int tr_d8_encoding_valid(int e);

#endif
