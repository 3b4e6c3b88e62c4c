/*
 * d8_codes.c - the direction tables of d8_codes.h: one row per encoding, so
 * encoding and decoding never branch on the encoding's name.
 */
#include "d8_codes.h"

#include <math.h>

typedef struct {
  int code[9]; /* code[0] is the nodata value */
  GDALDataType type;
} encoding_row;

static const encoding_row rows[] = {
    [TR_DIR_TAUDEM] = {{-32768, 1, 2, 3, 4, 5, 6, 7, 8}, GDT_Int16},
    [TR_DIR_ESRI] = {{0, 1, 128, 64, 32, 16, 8, 4, 2}, GDT_Byte},
    [TR_DIR_GRASS] = {{0, 8, 1, 2, 3, 4, 5, 6, 7}, GDT_Byte},
};

int tr_d8_encoding_valid(int e) { return e >= 0 && e < (int)(sizeof rows / sizeof rows[0]); }

int tr_d8_encode(tr_dir_encoding e, int k) { return rows[e].code[k >= 1 && k <= 8 ? k : 0]; }

int tr_d8_decode(tr_dir_encoding e, double code) {
  if (isnan(code) || code == rows[e].code[0]) return 0;
  for (int k = 1; k <= 8; k++)
    if (code == rows[e].code[k]) return k;
  return 0;
}

GDALDataType tr_d8_type(tr_dir_encoding e) { return rows[e].type; }

double tr_d8_nodata(tr_dir_encoding e) { return rows[e].code[0]; }
