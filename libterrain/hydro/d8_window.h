/*
 * d8_window.h - a fragment's padded window as the D8 programs (acc_program.c,
 * basin_program.c) walk it (internal to libterrain).
 *
 * A fragment's state lives on its tile plus a one-cell halo, row-major with
 * stride pw = cols + 2; neighbour k (0 = E, counter-clockwise) of padded
 * index i is i + off[k]. Tile cells are rows and columns 1..h, 1..w.
 */
#ifndef TR_D8_WINDOW_H
#define TR_D8_WINDOW_H

#include <stdint.h>

#include "aap.h"
#include "dir_decode.h"
#include "graph.h"

typedef struct {
  const tr_aap_frag *f;
  int64_t h, w, pw;
  int64_t off[8];
} tr_d8_win;

static inline tr_d8_win tr_d8_win_of(const tr_aap_frag *f) {
  tr_d8_win g = {f, f->rows, f->cols, f->cols + 2, {0}};
  for (int k = 0; k < 8; k++) g.off[k] = tr_d8_dr[k] * g.pw + tr_d8_dc[k];
  return g;
}

/* Is padded index i a tile cell (not the halo)? */
static inline int tr_d8_in_tile(const tr_d8_win *g, int64_t i) {
  const int64_t r = i / g->pw, c = i % g->pw;
  return r >= 1 && r <= g->h && c >= 1 && c <= g->w;
}

/* The global cell index (row * cols + col) of padded index i. */
static inline int64_t tr_d8_cell(const tr_d8_win *g, int64_t cols, int64_t i) {
  return (i / g->pw - 1 + g->f->row0) * cols + (i % g->pw - 1 + g->f->col0);
}

/* The padded index of global cell `cell` (in the window). */
static inline int64_t tr_d8_index(const tr_d8_win *g, int64_t cols, int64_t cell) {
  return (cell / cols - g->f->row0 + 1) * g->pw + (cell % cols - g->f->col0 + 1);
}

/* Decodes the padded window z of fragment f into dir (TR_DIR_NODATA for
 * NoData, off-grid and unknown codes). An unknown code on a tile cell fails
 * the run naming the cell (a halo cell's code is its own fragment's to
 * report). Returns 0, or -1 after tr_graph_fail. */
static inline int tr_d8_decode(tr_graph_env *env, const tr_aap_frag *f, const tr_d8_win *g, const tr_dir_lut *lut,
                               int enc, const char *src, const float *z, int8_t *dir) {
  const int64_t n = g->pw * (g->h + 2);
  int rc = 0;
  for (int64_t i = 0; i < n; i++) {
    const int d = tr_dir_lut_decode(lut, z[i]);
    if (d == TR_DIR_BAD && tr_d8_in_tile(g, i) && !rc) {
      const int64_t cell = tr_d8_cell(g, env->cols, i);
      rc = tr_graph_fail(env, f, TR_EINPUT, "'%s': cell (row %lld, col %lld) holds %g, not a %s direction code", src,
                         (long long)(cell / env->cols), (long long)(cell % env->cols), (double)z[i],
                         tr_dir_encoding_name(enc));
    }
    dir[i] = (int8_t)(d == TR_DIR_BAD ? TR_DIR_NODATA : d);
  }
  return rc;
}

#endif
