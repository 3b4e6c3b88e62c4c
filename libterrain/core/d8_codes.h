/*
 * d8_codes.h - the eight D8 directions and their codes in each direction
 * encoding (internal to libterrain). One module for both sides: the
 * flow-direction writer (kernels/d8.h, hydro/flowdir_*) encodes, every program
 * computed FROM a direction raster (accumulation, streams, order, basins, the
 * network: hydro/) decodes. It lives in core/ because kernels/ and hydro/
 * both stand on it and neither may include the other's floor from below.
 *
 * The encodings (terrain.h, tr_dir_encoding), one row each in d8_codes.c:
 *
 *   direction  E   NE   N  NW   W  SW   S  SE   nodata  type
 *   TauDEM     1    2   3   4   5   6   7   8   -32768  Int16
 *   ESRI       1  128  64  32  16   8   4   2        0  Byte
 *   GRASS      8    1   2   3   4   5   6   7        0  Byte
 *
 * Two numberings of the same eight directions, counter-clockwise from east
 * (rows grow southwards):
 *   the writer's k = 1..8 (TauDEM's code; 0 = no direction: nodata, an
 *     outlet), steps tr_d8_drow[k], tr_d8_dcol[k];
 *   the reader's neighbour index d = k - 1 = 0..7, steps tr_d8_dr[d],
 *     tr_d8_dc[d], or one of the markers TR_D8_NONE (a valid cell with no
 *     outflow: a pit or an outlet), TR_D8_NODATA, TR_D8_BAD.
 * Reading accepts what r.watershed writes too: GRASS 0 and -1 are a
 * depression (none) and a negative -v is v leaving the region (the same
 * direction). Any other finite value is not a direction: the decoder says so
 * (the caller names the cell). NaN (the store's NoData) is TR_D8_NODATA.
 *
 * Thread safety: constant tables and pure functions.
 */
#ifndef TR_D8_CODES_H
#define TR_D8_CODES_H

#include <gdal.h>
#include <stdint.h>

#include "terrain.h"

/* How many encodings tr_dir_encoding has (TR_DIR_TAUDEM .. TR_DIR_GRASS). */
#define TR_D8_ENCODINGS 3

/* In the header (not extern) so that loops over k fold them into constants. */
/*                                     -  E  NE   N  NW   W  SW   S  SE */
static const int tr_d8_drow[9] = {0, 0, -1, -1, -1, 0, 1, 1, 1};
static const int tr_d8_dcol[9] = {0, 1, 1, 0, -1, -1, -1, 0, 1};

/* Row and column steps of neighbour index d (0 = E, counter-clockwise). */
extern const int tr_d8_dr[8], tr_d8_dc[8];

/* 1 when e is one of the TR_D8_ENCODINGS encodings. */
int tr_d8_encoding_valid(int e);
/* The encoding named `name` ("taudem", "esri", "grass"), or -1. */
int tr_d8_encoding_parse(const char *name);
/* Its name; "?" for a value that is no encoding. */
const char *tr_d8_encoding_name(int enc);

/* Writing. The code of direction k (1..8) in encoding e; k = 0 gives e's
 * nodata. */
int tr_d8_encode(tr_dir_encoding e, int k);
/* The band type and nodata value of a direction raster in encoding e. */
GDALDataType tr_d8_type(tr_dir_encoding e);
double tr_d8_nodata(tr_dir_encoding e);

/* Reading. The markers a decoded cell may hold instead of an index 0..7. */
#define TR_D8_NONE (-1)
#define TR_D8_NODATA (-2)
#define TR_D8_BAD (-3)

/* The neighbour index 0..7 of value v in encoding enc, TR_D8_NONE,
 * TR_D8_NODATA (v is NaN) or TR_D8_BAD. */
int tr_d8_decode_value(int enc, float v);

/* The same decoding through a table built once per run (the programs
 * decode every cell of every window they load). */
#define TR_D8_LUT_MIN (-8)
#define TR_D8_LUT_MAX 128
typedef struct {
  signed char code[TR_D8_LUT_MAX - TR_D8_LUT_MIN + 1];
} tr_d8_lut;

void tr_d8_lut_init(tr_d8_lut *t, int enc);

static inline int tr_d8_lut_decode(const tr_d8_lut *t, float v) {
  if (v != v) return TR_D8_NODATA;
  if (!(v >= TR_D8_LUT_MIN && v <= TR_D8_LUT_MAX)) return TR_D8_BAD;
  const int i = (int)v;
  return (float)i == v ? t->code[i - TR_D8_LUT_MIN] : TR_D8_BAD;
}

#endif
