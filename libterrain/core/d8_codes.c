/*
 * d8_codes.c - the direction tables of d8_codes.h: one row per encoding, so
 * neither encoding nor decoding branches on the encoding's name.
 */
#include "d8_codes.h"

#include <math.h>
#include <string.h>

const int tr_d8_dr[8] = {0, -1, -1, -1, 0, 1, 1, 1};
const int tr_d8_dc[8] = {1, 1, 0, -1, -1, -1, 0, 1};

typedef struct {
  const char *name;
  GDALDataType type;
  int nodata;
  int allow_negative; /* grass: -v leaves the region in direction v; -1 a depression */
  int code[8];        /* code[d]: neighbour index d = k - 1 */
} encoding_row;

static const encoding_row rows[] = {
    [TR_DIR_TAUDEM] = {.name = "taudem", .type = GDT_Int16, .nodata = -32768, .code = {1, 2, 3, 4, 5, 6, 7, 8}},
    [TR_DIR_ESRI] = {.name = "esri", .type = GDT_Byte, .nodata = 0, .code = {1, 128, 64, 32, 16, 8, 4, 2}},
    [TR_DIR_GRASS] =
        {.name = "grass", .type = GDT_Byte, .nodata = 0, .allow_negative = 1, .code = {8, 1, 2, 3, 4, 5, 6, 7}},
};
_Static_assert(sizeof rows / sizeof rows[0] == TR_D8_ENCODINGS, "one row per tr_dir_encoding");

int tr_d8_encoding_valid(int e) { return e >= 0 && e < TR_D8_ENCODINGS; }

int tr_d8_encoding_parse(const char *name) {
  for (int e = 0; e < TR_D8_ENCODINGS; e++)
    if (name && !strcmp(name, rows[e].name)) return e;
  return -1;
}

const char *tr_d8_encoding_name(int enc) { return tr_d8_encoding_valid(enc) ? rows[enc].name : "?"; }

int tr_d8_encode(tr_dir_encoding e, int k) { return k >= 1 && k <= 8 ? rows[e].code[k - 1] : rows[e].nodata; }

GDALDataType tr_d8_type(tr_dir_encoding e) { return rows[e].type; }

double tr_d8_nodata(tr_dir_encoding e) { return rows[e].nodata; }

int tr_d8_decode_value(int enc, float v) {
  if (isnan(v)) return TR_D8_NODATA;
  const encoding_row *t = &rows[enc];
  if (v != floorf(v)) return TR_D8_BAD;
  if (v < 0 && t->allow_negative) v = v == -1.0f ? 0.0f : -v;
  if (v == 0) return TR_D8_NONE;
  for (int d = 0; d < 8; d++)
    if (v == (float)t->code[d]) return d;
  return TR_D8_BAD;
}

void tr_d8_lut_init(tr_d8_lut *t, int enc) {
  for (int v = TR_D8_LUT_MIN; v <= TR_D8_LUT_MAX; v++)
    t->code[v - TR_D8_LUT_MIN] = (signed char)tr_d8_decode_value(enc, (float)v);
}
