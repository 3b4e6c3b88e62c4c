/*
 * dir_decode.h - D8 direction codes as read from a direction raster: TauDEM,
 * ESRI and GRASS r.watershed encodings turned into one neighbour index
 * (internal to libterrain).
 *
 * Every program computed FROM a direction raster (accumulation, streams,
 * order, basins, the network) works on the neighbour index k = 0..7 of the
 * outflow, counter-clockwise from east (E, NE, N, NW, W, SW, S, SE: TauDEM's
 * code minus one), or on two markers: TR_DIR_NONE (a valid cell with no
 * outflow: a pit or an outlet) and TR_DIR_NODATA. The encodings:
 *   taudem  1 = E, 2 = NE, 3 = N, ... 8 = SE (counter-clockwise), 0 = none
 *   esri    1 = E, 2 = SE, 4 = S, 8 = SW, 16 = W, 32 = NW, 64 = N, 128 = NE,
 *           0 = none
 *   grass   r.watershed's drainage: v x 45 degrees counter-clockwise from
 *           east, 1 = NE, 2 = N, ... 8 = E; 0 and -1 = a depression (none);
 *           a negative -v is v leaving the region (the same direction)
 * Any other finite value is not a direction: the decoder says so (the caller
 * names the cell). NaN (the store's NoData) is TR_DIR_NODATA.
 *
 * The flow helper's d8_codes.h holds the encoder side of the same tables; the
 * two are merged at integration.
 */
#ifndef TR_DIR_DECODE_H
#define TR_DIR_DECODE_H

#include <stdint.h>

#define TR_DIR_NONE (-1)
#define TR_DIR_NODATA (-2)
#define TR_DIR_BAD (-3)

/* The encodings a direction raster may use (terrain.h's tr_dir_encoding
 * values). */
enum { TR_DIRENC_TAUDEM = 0, TR_DIRENC_ESRI = 1, TR_DIRENC_GRASS = 2, TR_DIRENC_COUNT = 3 };

/* Row and column steps of neighbour k (0 = E, counter-clockwise). */
extern const int tr_d8_dr[8], tr_d8_dc[8];

/* The encoding named `name` ("taudem", "esri", "grass"), or -1. */
int tr_dir_encoding_parse(const char *name);
const char *tr_dir_encoding_name(int enc);

/* The neighbour index 0..7 of value v in encoding enc, TR_DIR_NONE,
 * TR_DIR_NODATA (v is NaN) or TR_DIR_BAD. */
int tr_dir_decode(int enc, float v);

/* The same decoding through a table built once per run (the programs
 * decode every cell of every window they load). */
#define TR_DIR_LUT_MIN (-8)
#define TR_DIR_LUT_MAX 128
typedef struct {
  signed char code[TR_DIR_LUT_MAX - TR_DIR_LUT_MIN + 1];
} tr_dir_lut;

void tr_dir_lut_init(tr_dir_lut *t, int enc);

static inline int tr_dir_lut_decode(const tr_dir_lut *t, float v) {
  if (v != v) return TR_DIR_NODATA;
  if (!(v >= TR_DIR_LUT_MIN && v <= TR_DIR_LUT_MAX)) return TR_DIR_BAD;
  const int i = (int)v;
  return (float)i == v ? t->code[i - TR_DIR_LUT_MIN] : TR_DIR_BAD;
}

#endif
