/*
 * dag_round.h - the skeleton the graph programs that compute each cell once,
 * from final inputs, share (internal to libterrain): dinf_up, mfd_up,
 * dist_down and d8_len.
 *
 * Those programs walk an acyclic graph of cells (the flow, or its reverse)
 * in Kahn's order: a tile cell is computed when the last of its inputs
 * becomes final, and a perimeter cell that a neighbour tile needs is
 * emitted once, final. What they share is here:
 *
 * - the padded window of a fragment (its tile plus a one-cell halo,
 *   row-major with stride pw = cols + 2; tile cells are rows and columns
 *   1..h, 1..w) with the offsets of neighbours k = 1..8 in dinf.h's (and
 *   TauDEM's) numbering, E, NE, N ... SE counter-clockwise;
 * - one round's buffers: the work queue of tile cells whose inputs are all
 *   final, and the cell size of every padded row (with, on request, the
 *   rows' D-infinity reference angles or TauDEM's step lengths);
 * - the state's per-cell arrays, allocated, registered with tr_graph_keep
 *   and freed from one table;
 * - f_aggr for values that are final when sent (the first copy is kept),
 *   and Assemble's tile put.
 *
 * What stays in each program is its own: what a cell's inputs are (donors
 * or receivers), its formula, its messages and its output. The drain loops
 * and IncEval's message loops look alike but differ in which neighbours a
 * final cell wakes and when it is emitted; each program keeps its own.
 *
 * Nothing here keeps state between calls: every function is thread-safe on
 * distinct rounds.
 */
#ifndef TR_DAG_ROUND_H
#define TR_DAG_ROUND_H

#include <stddef.h>
#include <stdint.h>

#include "aap.h"
#include "dinf.h"
#include "flowdir.h"
#include "graph.h"

/* k's opposite: the direction from neighbour k back to the cell (1..8) */
#define TR_DAG_BACK(k) ((k) + 4 > 8 ? (k)-4 : (k) + 4)

/* A fragment's padded window. */
typedef struct {
  const tr_aap_frag *f;
  int64_t h, w, pw;
  int64_t off[9]; /* padded index of neighbour k of i: i + off[k] (k = 1..8; off[0] = 0) */
} tr_dag_win;

/* The window of fragment f. */
static inline tr_dag_win tr_dag_win_of(const tr_aap_frag *f) {
  tr_dag_win g = {f, f->rows, f->cols, f->cols + 2, {0}};
  for (int k = 1; k <= 8; k++) g.off[k] = tr_dinf_nrow[k] * g.pw + tr_dinf_ncol[k];
  return g;
}

/* Is padded index i a tile cell (not the halo)? */
static inline int tr_dag_in_tile(const tr_dag_win *g, int64_t i) {
  const int64_t r = i / g->pw, c = i % g->pw;
  return r >= 1 && r <= g->h && c >= 1 && c <= g->w;
}

/* The global cell index (row * cols + col) of padded index i. */
static inline int64_t tr_dag_cell(const tr_dag_win *g, int64_t cols, int64_t i) {
  return (i / g->pw - 1 + g->f->row0) * cols + (i % g->pw - 1 + g->f->col0);
}

/* The padded index of global cell `cell` (in the window). */
static inline int64_t tr_dag_index(const tr_dag_win *g, int64_t cols, int64_t cell) {
  return (cell / cols - g->f->row0 + 1) * g->pw + (cell % cols - g->f->col0 + 1);
}

/* Per-row tables a round may ask for besides dx and dy. */
enum {
  TR_DAG_AREF = 1,  /* aref: padded row r's reference angles at aref[10 r] (tr_dinf_aref) */
  TR_DAG_STEPS = 2, /* len: TauDEM's Float32 dist, padded row r's step k at len[9 r + k] (len[9 r] = 0) */
};

/* One round of a fragment: its window, the work queue (room for every tile
 * cell: a cell is queued once, when its last input becomes final) and the
 * cell size of every padded row r (global row row0 + r - 1, measured as
 * tr_dinf_row_dxdy does; rows off the grid as that gives them). */
typedef struct {
  tr_dag_win g;
  int64_t *q;
  double *dx, *dy;
  double *aref; /* TR_DAG_AREF, else NULL */
  float *len;   /* TR_DAG_STEPS, else NULL */
} tr_dag_round;

/* Begins a round of fragment f over a grid of grid_rows rows with cell
 * sizes geom, with the tables `want` (TR_DAG_* bits) besides dx and dy.
 * 0, or -1 when out of memory, with nothing left to free (tr_dag_round_end
 * may still be called). */
int tr_dag_round_begin(tr_dag_round *w, const tr_aap_frag *f, const tr_d8_geom *geom, int64_t grid_rows, unsigned want);

/* Frees a round's buffers (a zeroed round too). */
void tr_dag_round_end(tr_dag_round *w);

/* An array of a program's state: the pointer at `offset` in the state
 * struct, `elem` bytes a padded cell. */
typedef struct {
  size_t offset;
  size_t elem;
} tr_dag_array;

#define TR_DAG_ARRAY(type, field) \
  { .offset = offsetof(type, field), .elem = sizeof *((type *)0)->field }

/* Allocates the na arrays of state s for n padded cells, zeroed, and
 * registers each with tr_graph_keep (from inside one of f's rounds, before
 * anything else of the round is kept). 0, or -1 when out of memory; what
 * was allocated is then s's and tr_dag_arrays_free frees it. */
int tr_dag_arrays_alloc(tr_graph_env *env, const tr_aap_frag *f, void *s, const tr_dag_array *a, int na, int64_t n);

/* Frees the na arrays of state s (NULL pointers too) and sets them NULL. */
void tr_dag_arrays_free(void *s, const tr_dag_array *a, int na);

/* f_aggr of a value that is final when sent: every copy is the same, the
 * first is kept. */
int tr_dag_keep_first(void *user, void *acc, const void *value);

/* Assemble's tile put: fills fragment f's tile (f->rows x f->cols cells of
 * elem bytes, row-major) with cell(u, i, out) for every tile cell's padded
 * index i, and hands it to env->put. cell returns 0, or -1 to stop (after
 * tr_graph_fail); the put then does not happen. Returns put's result, or
 * -1. */
int tr_dag_put(tr_graph_env *env, const tr_aap_frag *f, size_t elem, void *u,
               int (*cell)(void *u, int64_t i, void *out));

#endif
