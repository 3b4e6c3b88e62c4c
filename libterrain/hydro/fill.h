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
 * kept: a round loads its fragment's Z window (tile + halo) through the tile store, possibly
 * from its LRU cache; a running round also holds its flood queues (transient, at most a
 * few bytes per cell of one tile). Peak is therefore about 1.0x input + the cache +
 * threads x (tile window x ~12 bytes). When that does not fit --mem, flat fill takes its
 * twin body, fill_perimeter (the planner, graph_plan.c).
 *
 * Runs go through the graph runner (graph.h): `terrafort fill` (fill_dem.c) with
 * tr_run_graph, tests and benchmarks with tr_graph_run_io, both planned alike.
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

/* The bodies of the "fill" program (its row is in fill_program.c): W per
 * cell (flat fill, and --epsilon's "fill_eps"), and flat fill's twin that
 * keeps each tile's perimeter (fill_perimeter.c). */
extern const tr_graph_body tr_body_fill, tr_body_fill_eps, tr_body_fill_perimeter;

#endif
