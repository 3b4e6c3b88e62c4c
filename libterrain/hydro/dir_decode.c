/*
 * dir_decode.c - D8 direction values to neighbour indices (see
 * dir_decode.h): one row of eight codes per encoding.
 */
#include "dir_decode.h"

#include <math.h>
#include <string.h>

const int tr_d8_dr[8] = {0, -1, -1, -1, 0, 1, 1, 1};
const int tr_d8_dc[8] = {1, 1, 0, -1, -1, -1, 0, 1};

/* Each encoding: its name and its values, value[k] for neighbour k; 0 is no
 * outflow in all three. */
typedef struct {
  const char *name;
  int allow_negative; /* grass: -v leaves the region in direction v; -1 a depression */
  int value[8];
} dir_table;

static const dir_table tables[TR_DIRENC_COUNT] = {
    {"taudem", 0, {1, 2, 3, 4, 5, 6, 7, 8}},
    {"esri", 0, {1, 128, 64, 32, 16, 8, 4, 2}},
    {"grass", 1, {8, 1, 2, 3, 4, 5, 6, 7}},
};

int tr_dir_encoding_parse(const char *name) {
  for (int e = 0; e < TR_DIRENC_COUNT; e++)
    if (name && !strcmp(name, tables[e].name)) return e;
  return -1;
}

const char *tr_dir_encoding_name(int enc) { return enc >= 0 && enc < TR_DIRENC_COUNT ? tables[enc].name : "?"; }

int tr_dir_decode(int enc, float v) {
  if (isnan(v)) return TR_DIR_NODATA;
  const dir_table *t = &tables[enc];
  if (v != floorf(v)) return TR_DIR_BAD;
  if (v < 0 && t->allow_negative) v = v == -1.0f ? 0.0f : -v;
  if (v == 0) return TR_DIR_NONE;
  for (int k = 0; k < 8; k++)
    if (v == (float)t->value[k]) return k;
  return TR_DIR_BAD;
}

void tr_dir_lut_init(tr_dir_lut *t, int enc) {
  for (int v = TR_DIR_LUT_MIN; v <= TR_DIR_LUT_MAX; v++) t->code[v - TR_DIR_LUT_MIN] = (signed char)tr_dir_decode(enc, (float)v);
}
