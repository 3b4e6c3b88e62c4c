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
#include <stdlib.h>

#include "aap.h"
#include "d8_codes.h"
#include "graph.h"
#include "tile_ring.h"

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

/* A cell of the cycle of directions that keeps tile cell i unknown: walks
 * upstream through in-tile inflows still unknown (dir_at, known: the
 * program's view of its window of n cells) until a cell repeats or none is
 * left. Both upstream programs name the same cell so. */
static inline int64_t tr_d8_cycle_cell(const tr_d8_win *g, int64_t n, int64_t i, const void *s,
                                       int (*dir_at)(const void *s, int64_t i), int (*known)(const void *s, int64_t i)) {
  unsigned char *seen = calloc((size_t)n, 1);
  if (!seen) return i;
  while (!seen[i]) {
    seen[i] = 1;
    int64_t up = -1;
    for (int k = 0; k < 8 && up < 0; k++) {
      const int64_t nb = i + g->off[k];
      if (dir_at(s, nb) == (k + 4) % 8 && !known(s, nb) && tr_d8_in_tile(g, nb)) up = nb;
    }
    if (up < 0) break;
    i = up;
  }
  free(seen);
  return i;
}

/* The failure of an upstream program whose padded cell i lies on a cycle. */
static inline int tr_d8_fail_cycle(tr_graph_env *env, const tr_aap_frag *f, const tr_d8_win *g, const char *src,
                                   int64_t i) {
  const int64_t cell = tr_d8_cell(g, env->cols, i);
  return tr_graph_fail(env, f, TR_EINPUT, "'%s': the flow directions form a cycle through cell (row %lld, col %lld)",
                       src, (long long)(cell / env->cols), (long long)(cell % env->cols));
}

/* The failure of a label program whose padded cell i never met an outlet. */
static inline int tr_d8_fail_no_outlet(tr_graph_env *env, const tr_aap_frag *f, const tr_d8_win *g, const char *src,
                                       int64_t i) {
  const int64_t cell = tr_d8_cell(g, env->cols, i);
  return tr_graph_fail(env, f, TR_EINPUT,
                       "'%s': the flow directions form a cycle: cell (row %lld, col %lld) never drains to an outlet",
                       src, (long long)(cell / env->cols), (long long)(cell % env->cols));
}

/* The perimeter index of padded tile index i, or -1 (an inner cell). */
static inline int64_t tr_d8_per_of(const tr_d8_win *g, int64_t i) {
  return tr_d8_ring_index(g->h, g->w, i / g->pw - 1, i % g->pw - 1);
}

/* The padded index of perimeter cell k. */
static inline int64_t tr_d8_per_cell(const tr_d8_win *g, int64_t k) {
  int64_t r, c;
  tr_d8_ring_cell(g->h, g->w, k, &r, &c);
  return (r + 1) * g->pw + c + 1;
}

/* The halo index of padded index i, or -1 (a tile cell). */
static inline int64_t tr_d8_halo_of(const tr_d8_win *g, int64_t i) {
  return tr_d8_ring_index(g->h + 2, g->w + 2, i / g->pw, i % g->pw);
}

/* Decodes the padded window z of fragment f into dir (TR_D8_NODATA for
 * NoData, off-grid and unknown codes). An unknown code on a tile cell fails
 * the run naming the cell (a halo cell's code is its own fragment's to
 * report). Returns 0, or -1 after tr_graph_fail. */
static inline int tr_d8_decode(tr_graph_env *env, const tr_aap_frag *f, const tr_d8_win *g, const tr_d8_lut *lut,
                               int enc, const char *src, const float *z, int8_t *dir) {
  const int64_t n = g->pw * (g->h + 2);
  int rc = 0;
  for (int64_t i = 0; i < n; i++) {
    const int d = tr_d8_lut_decode(lut, z[i]);
    if (d == TR_D8_BAD && tr_d8_in_tile(g, i) && !rc) {
      const int64_t cell = tr_d8_cell(g, env->cols, i);
      rc = tr_graph_fail(env, f, TR_EINPUT, "'%s': cell (row %lld, col %lld) holds %g, not a %s direction code", src,
                         (long long)(cell / env->cols), (long long)(cell % env->cols), (double)z[i],
                         tr_d8_encoding_name(enc));
    }
    dir[i] = (int8_t)(d == TR_D8_BAD ? TR_D8_NODATA : d);
  }
  return rc;
}

#endif
