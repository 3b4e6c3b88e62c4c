/*
 * fill.h - depression filling (TauDEM pitremove's convention) on the AAP engine.
 *
 * W(c) = min over 8-connected paths from c to an outlet of the largest elevation on the
 * path (a minimax path problem). Outlets are the cells on the DEM's edge and the cells
 * next to NoData; NoData cells stay NoData. W >= Z everywhere and is the smallest such
 * surface with no closed depression ("flat fill").
 *
 * epsilon = 1 selects the variant that leaves no flats: every cell gets a strictly
 * downhill path to an outlet. It is defined, independently of any tiling, as the least
 * solution of
 *     W_eps(o) = Z(o)                                         for outlets o,
 *     W_eps(c) = max(Z(c), min over 8-neighbours n of up(W_eps(n)))   otherwise,
 * where up(x) = nextafterf(x, +inf) when eps == 0, else max(x + eps, nextafterf(x, +inf)).
 * Equivalently W_eps(c) = min over paths c = p0, p1, ..., pk = outlet of v(p0), with
 * v(pk) = Z(pk) and v(pj) = max(Z(pj), up(v(pj+1))). up is monotone and strictly
 * increasing, so the problem is monotone and contracting (values only fall from +inf),
 * every schedule and every tiling converge to this one answer, W_eps >= W, and the
 * neighbour n achieving the minimum has W_eps(n) < W_eps(c): a strictly downhill path.
 *
 * Zeros: an elevation -0 is read as +0, and up() never returns -0, so W holds no -0.
 * The two compare equal, so with both present the value a cell kept would be whichever
 * arrived first, and the output bytes would depend on the schedule.
 *
 * Memory model: the run keeps one float32 W per cell of every fragment plus its one-cell
 * halo (about 1.0x a Float32 input, plus (2h+2w+4)/(hw) for the halos). Elevations are not
 * kept: a round loads its fragment's Z window (tile + halo) through io->load_z, possibly
 * from an LRU cache of at most z_cache_bytes; a running round also holds its flood
 * queues (transient, at most a few bytes per cell of one tile). Peak is therefore about
 * 1.0x input + z_cache_bytes + threads x (tile window x ~12 bytes).
 *
 * Thread safety: load_z and write_w are called under one lock, one call at a time, so
 * they may share a (non-thread-safe) GDAL dataset. Under MPI the loader runs on every
 * rank and the writer only on rank 0 (tiles are sent there).
 */
#ifndef TR_FILL_H
#define TR_FILL_H

#include <stddef.h>
#include <stdint.h>

#include "aap.h"
#include "graph.h"

/* The fill program's params (its row in the program table is "fill"). */
typedef struct {
  int32_t epsilon;   /* 1: no flats (see above) */
  float eps;         /* epsilon increment; 0 = one ulp */
} tr_fill_params;

/* fill_perimeter (fill_perimeter.c), flat fill in two visits of each tile: what
 * its state between rounds takes per perimeter cell (label and elevation 8 bytes,
 * the label's drain level and adjacency start 8, about six directed edges of the
 * label graph at 8 each), and what a running round holds per cell of its padded
 * window (flood level, label, FIFO and slope-stack slots 16, radix-heap entries up
 * to 8, the edge table up to 8); each running thread keeps its own. */
#define FILL_PERIM_STATE 64
#define FILL_PERIM_ROUND 32

/* Which program fills: AUTO is the windowed one ("fill", W per cell) in memory
 * and, for flat fill, the perimeter one out of core (state_budget > 0; `terrafort
 * fill` when W does not fit --mem); or the one named (tests compare them). --epsilon
 * is always the windowed one ("fill_eps"). */
typedef enum { TR_FILL_METHOD_AUTO = 0, TR_FILL_METHOD_WINDOW, TR_FILL_METHOD_PERIMETER } tr_fill_method;

/* The program table's row for a fill: "fill", "fill_perimeter" or "fill_eps". */
const char *tr_fill_program(tr_fill_method m, int epsilon);

/* Reads the Z window [row0, row0+rows) x [col0, col0+cols) (always inside the grid) into
 * dst, row-major with stride cols. NoData as NaN or as opts.nodata. Returns 0 on success. */
typedef int (*tr_fill_load_fn)(void *user, int64_t row0, int64_t col0, int64_t rows,
                               int64_t cols, float *dst);
/* Receives a finished tile of W (stride cols), NoData cells set to opts.nodata (NaN when
 * has_nodata is 0). Called once per fragment. Returns 0 on success. */
typedef int (*tr_fill_write_fn)(void *user, int64_t row0, int64_t col0, int64_t rows,
                                int64_t cols, const float *w);

typedef struct tr_fill_io {
  tr_fill_load_fn load_z;
  tr_fill_write_fn write_w;
  void *user;
} tr_fill_io;

typedef enum { TR_FILL_THREADS = TR_GRAPH_THREADS, TR_FILL_SIM = TR_GRAPH_SIM, TR_FILL_MPI = TR_GRAPH_MPI } tr_fill_backend;

typedef struct tr_fill_opts {
  int64_t rows, cols;           /* the DEM */
  int64_t tile_rows, tile_cols; /* fragment size; the last ones may be smaller */
  const tr_aap_layout *layout;  /* optional: these fragments instead of the tile grid */
  tr_aap_opts aap;              /* schedule, staleness, L/DS bounds, threads, seed, ... */
  tr_fill_backend backend;
  const tr_aap_sim_opts *sim;   /* TR_FILL_SIM */
  void *mpi_comm;               /* TR_FILL_MPI: pointer to an MPI_Comm */
  int epsilon;                  /* 1: no flats (see above) */
  float eps;                    /* epsilon increment; 0 = one ulp */
  int has_nodata;               /* NaN is always NoData; this adds the value below */
  float nodata;
  size_t z_cache_bytes;         /* LRU cache of Z windows; 0 = reload every round */
  int64_t state_budget;         /* out of core: W beyond this many bytes is spilled to a
                                   file in spill_dir (graph.h); 0 = all in memory */
  const char *spill_dir;
  tr_state_store_stats *spill_stats; /* filled when given */
  tr_fill_method method;
} tr_fill_opts;

/* Defaults: tiles 512 x 512, threads back-end, aap defaults, flat fill, no nodata value,
 * 64 MiB Z cache. rows/cols must still be set. */
void tr_fill_opts_default(tr_fill_opts *o);

/* Runs the fill; 0 or a negative TR_AAP_E* with a message in err. stats may be NULL
 * (else release with tr_aap_stats_free). */
int tr_fill_run(const tr_fill_opts *o, const tr_fill_io *io, tr_aap_stats *stats, char *err,
                size_t errlen);

/* In-memory convenience: fills z (rows x cols) into w (may not alias z). Under MPI, w is
 * written on rank 0 only (tiles reach it through the ordered sink, io/sink.h). */
int tr_fill_array(const tr_fill_opts *o, const float *z, float *w, tr_aap_stats *stats,
                  char *err, size_t errlen);

#endif
