/*
 * flow.h - the programs computed from a D8 direction raster, and what
 * `terrafort flowgraph` assembles from them (internal to libterrain).
 *
 * Graph programs (rows of the program table, each with its bodies) and one
 * sequential step:
 *   "d8_up"      the upstream dataflow: a cell's value is final once every
 *                cell draining into it is final. It gives accumulation
 *                (cells, area, weights; TauDEM's edge check), stream cells
 *                (accumulation >= threshold) and Strahler order on them; a
 *                run writes the one product params.product asks. Bodies:
 *                "d8_up" (acc_program.c, per cell); "d8_up_wide"
 *                (acc_perimeter.c: weights whose sums a double would round,
 *                summed exactly in 128 bits, whatever --mem); its twin
 *                "d8_up_perimeter" (acc_perimeter.c: counts and weights exact
 *                in a double, not order, keeping each tile's perimeter).
 *   "d8_basins"  the downstream labelling (basin_program.c): a cell takes
 *                the label of the cell it drains into; seeds (stream cells
 *                with their link number) are known from the start, a known
 *                label never changes. Its twin "d8_basins_perimeter"
 *                (basin_perimeter.c) keeps each tile's perimeter.
 *   "d8_order_cells" Strahler order from the stream cells (order_cells.c).
 *   the network  (network.c): the stream links assembled on every rank from
 *                the stream cells (a small set) and written through OGR on
 *                rank 0; it gives basins their seeds.
 * Both programs exchange only final values of perimeter cells, so a
 * duplicated message is idempotent and every schedule, tiling and rank
 * count gives the same bytes.
 */
#ifndef TR_FLOW_H
#define TR_FLOW_H

#include <stdint.h>

#include "graph.h"

/* What one "d8_up" run writes. */
typedef enum { TR_UP_ACC = 0, TR_UP_STREAMS = 1, TR_UP_ORDER = 2 } tr_up_product;

/* Nodata of the products (TauDEM's for accumulation; 255 for the Byte ones). */
#define TR_ACC_NODATA (-1.0)
#define TR_BYTE_NODATA 255.0
#define TR_LABEL_NODATA (-2147483647.0)

/* What the sums of a weight raster need (tr_up_weights_sums). */
enum { TR_SUMS_ROUND = 0, TR_SUMS_DOUBLE = 1, TR_SUMS_WIDE = 2 };

typedef struct {
  int32_t product;      /* tr_up_product */
  int32_t encoding;     /* d8_codes.h */
  int32_t edge_check;   /* TR_UP_ACC: TauDEM's contamination rule */
  int32_t weighted;     /* input 1 holds weights (NoData weighs 0) */
  int32_t sums;         /* weighted: what their sums need, TR_SUMS_* (flowgraph.c:
                          * the band's type, or tr_up_weights_sums): exact in a
                          * double (d8_up_perimeter takes them too), exact in 128
                          * bits (d8_up_wide, the planner's choice), or rounded */
  int32_t weights_k;    /* d8_up_wide: the weights are whole numbers of 2^-k units */
  const char *weights;  /* weighted: the weight raster's name */
  double unit;          /* each cell counts weight x unit (1, or the cell area) */
  double threshold;     /* streams: unit-scaled no-edge-check accumulation >= this */
  const char *src;      /* the direction raster's name, for error lines */
  int32_t word_max;     /* 0; tests: a smaller largest count a cell's word holds (acc_program.c) */
} tr_up_params;



/* Reads the weight raster `path` once: TR_SUMS_DOUBLE when every weight is a
 * multiple of 2^-k and their magnitudes sum below 2^(51-k) (every sum exact
 * in a double, whatever the order), TR_SUMS_WIDE when below 2^(124-k) (exact
 * in a 128-bit integer of 2^-k units: "d8_up_wide"), else TR_SUMS_ROUND; *k:
 * that k. A tr_status (< 0) with its line in err when the raster cannot be
 * read or a stop was asked through run. */
int tr_up_weights_sums(const char *path, const tr_run_opts *run, int *k, tr_error *err);
/* The same over a raster the caller opened (band 1). */
int tr_up_weights_sums_of(tr_input *w, const tr_run_opts *run, int *k, tr_error *err);

/* Whether params ask for sums that only d8_up_wide gives exactly. */
int tr_up_wide(const tr_up_params *u);

/* The bodies of "d8_up" and "d8_basins" defined beside the per-cell ones. */
extern const tr_graph_body tr_body_d8_up_wide, tr_body_d8_up_perimeter, tr_body_d8_basins_perimeter;

/* The message of "d8_up" and "d8_up_perimeter" (the same, so ranks that
 * chose differently still agree): a perimeter cell's final value (a count or
 * a weighted sum, before the unit), its contamination and its order. */
typedef struct {
  double v;
  uint8_t con, ord;
  uint8_t pad[6];
} tr_up_msg;

/* f_aggr of both upstream programs: the largest (value, contamination,
 * order); copies of one final value are equal, so it keeps that value. */
int tr_up_msg_max(void *user, void *acc, const void *value);

/* One seed of "d8_basins": a cell and its label. */
typedef struct {
  int64_t cell;         /* row * cols + col */
  int32_t label;
} tr_basin_seed;

typedef struct {
  int32_t encoding;
  int64_t nseeds;       /* sorted by cell */
  const tr_basin_seed *seeds;
  const char *src;
} tr_basin_params;

/* Both label programs' rules: the label of seed `cell` (binary search of
 * the sorted seeds), or INT32_MIN when it is not one; f_aggr, the largest
 * label (copies of one final label are equal). */
int32_t tr_basin_seed_label(const tr_basin_params *p, int64_t cell);

/* --ft replay's invariants of the products' tiles (flow_check.c): the cells
 * of n that no correct Assemble makes. Accumulation: nodata, or at least the
 * unit (a cell drains itself; weighted: finite); streams 0, 1 or nodata;
 * orders and labels whole numbers in their range. */
int64_t tr_up_check_tile(const tr_up_params *u, int64_t n, const double *tile);
int64_t tr_basin_check_tile(int64_t n, const double *tile);
int tr_basin_label_max(void *user, void *acc, const void *value);

/* Strahler order from the stream cells (order_cells.c): every stream cell
 * (sorted by cell) with its order; the params of "d8_order_cells", which
 * writes the order product from them and the directions. */
typedef struct {
  int32_t encoding;
  const char *src;      /* the direction raster's name, for error lines */
  const int64_t *cells; /* row * cols + col, sorted */
  const uint8_t *ord;
  int64_t n;
} tr_order_params;

/* Reads the stream cells of `streams` (d8_up's streams product over `dir`)
 * and orders them; TR_ENOMEM when more than --mem leaves them (the caller
 * then runs d8_up's order product instead). */
int tr_order_cells_build(const tr_run_opts *run, const char *dir, const char *streams, int encoding, tr_order_params *out,
                         tr_error *err);
void tr_order_cells_free(tr_order_params *p);

/* The network's stream links, built from the stream cells. */
typedef struct {
  int64_t head, last;   /* first (upstream) and last own cell */
  int64_t next;         /* the cell it drains into after `last` (a junction), or -1 */
  int32_t ds, us1, us2; /* link numbers, -1 none */
  int32_t order, magnitude;
  int64_t first_cell;   /* index into the cells list of tr_links */
  int64_t ncells;
} tr_link;

typedef struct {
  int64_t nlinks;
  tr_link *links;
  int64_t *cells;       /* each link's cells, head first */
  tr_basin_seed *seeds; /* every stream cell with its link number (sorted by cell) */
  int64_t nseeds;
} tr_links;

typedef struct {
  const tr_run_opts *run;
  const char *dir, *acc, *elev; /* direction, no-edge-check accumulation (unit-scaled), elevations (NULL: none) */
  int elev_band;        /* the band of elev read (the DEM's -b when elev is the DEM; else 1) */
  int encoding;
  double threshold;     /* on the accumulation raster's values */
  double area_factor;   /* DSContArea/USContArea = accumulation x this (the cell area when in cells) */
  const char *streams;  /* the stream cells given (value >= 1, as TauDEM reads its src), or NULL:
                           accumulation >= threshold */
} tr_links_src;

/* Builds the links on every rank (agreed): reads the direction and
 * accumulation rasters (and the streams given) a band of rows at a time,
 * keeps the stream cells. */
int tr_links_build(const tr_links_src *s, tr_links *out, tr_error *err);
void tr_links_free(tr_links *l);

/* Where an outlet point went (the moved outlets, --moved-outlets). */
typedef struct {
  int32_t label;
  int64_t cell;      /* the cell it labels */
  int moved;         /* cells moved (TauDEM's Dist_moved; -1: no stream within reach, kept where it was) */
  double x, y;       /* the point given, in the directions' CRS */
  int64_t feature;   /* its feature id in the outlets' layer */
} tr_outlet_move;

/* Seeds of basins per edge outlet (points NULL: every cell whose flow
 * leaves the data, labelled 1, 2, ... in row-major order) or per outlet
 * point (labelled by feature id, or by the integer field id_field; points
 * in another CRS than the directions' are reprojected), moved down the
 * flow path at most snap cells to the first cell whose accumulation
 * reaches threshold (TauDEM moveoutletstostreams), or, with snap_distance
 * > 0, to the cell of largest accumulation within that distance (map
 * units) of the point. Sorted by cell; built on every rank (agreed). With
 * moves, every point's move too (in the layer's order; *moves malloc'ed). */
typedef struct {
  const tr_run_opts *run;
  const char *dir, *acc, *points;
  int encoding;
  double threshold;
  int snap;
  double snap_distance;
  const char *id_field;
  tr_outlet_move **moves;
  int64_t *nmoves;
  const char *streams; /* the stream cells given (>= 1; --streams-in, TauDEM moveoutletstostreams'
                          -src): the walk down the path stops at them instead of acc >= threshold */
} tr_seed_src;

int tr_seeds_build(const tr_seed_src *s, tr_basin_seed **out, int64_t *nout, tr_error *err);

/* The moved outlets as points (TauDEM moveoutletstostreams' -om): at the
 * centre of the cell each labels (where it was given when it could not
 * move), fields id and Dist_moved; the directions' CRS. Rank 0 writes,
 * every rank gets the agreed status. */
int tr_outlets_write(const tr_run_opts *run, const char *dir, const tr_outlet_move *m, int64_t n, const char *dst,
                     const char *driver, tr_error *err);

/* TauDEM gagewatershed's -id table: "id iddown", then per outlet (the
 * layer's order) its label and the label of the basin its cell drains
 * into (basins, d8_basins' labels; -1 where it drains off the data). A
 * side file (side_file.h); every rank gets the agreed status. */
int tr_outlet_table_write(const tr_run_opts *run, const char *dir, int encoding, const char *basins,
                          const tr_outlet_move *m, int64_t n, const char *dst, tr_error *err);

/* Per-basin statistics (basin_stats.c, flowgraph's --basin-stats). */
typedef struct {
  int32_t label;
  int64_t cell;         /* the basin's outlet cell, row * cols + col */
} tr_basin_outlet;

typedef struct {
  const tr_run_opts *run;
  const char *basins;   /* the labels, d8_basins' product (Int32) */
  const char *dem;      /* the DEM the directions came from (raw elevations);
                          NULL: label, cells, area and outlet only */
  int dem_band;
  const char *slope;    /* sd8 of those directions (with dem) */
  const tr_basin_outlet *outlets; /* every label, sorted by label, distinct */
  int64_t noutlets;
  double cell_area;     /* |det| of the geotransform */
} tr_basin_stats_src;

/* TR_EUSAGE unless `path` names a CSV file (.csv or .txt), before any work. */
int tr_basin_stats_check(const char *path, tr_error *err);

/* Reads the labels (and elevations, slopes) of this rank's tiles, combines
 * the per-basin partials over the ranks and writes the CSV (rank 0) under
 * dst's temporary name, waiting for the run's end (side_file.h); agreed. */
int tr_basin_stats_write(const tr_basin_stats_src *s, const char *dst, tr_error *err);

/* Refuses a network output whose driver (`driver`, else from dst's
 * extension, else GPKG) is no GDAL vector driver that creates files
 * (TR_EUSAGE), before any work. */
int tr_links_check(const char *dst, const char *driver, tr_error *err);

/* Writes the links as lines with TauDEM's attributes through OGR (rank 0),
 * into a temporary folder beside dst under a short name; then put in place
 * (dst's name; the layer is named after it, less its extension), or with
 * s->run->held handed to that list (held.h); agreed. */
int tr_links_write(const tr_links_src *s, const tr_links *l, const char *dst, const char *driver, tr_error *err);

/* TauDEM streamnet's -tree and -coord files of the links (either path may
 * be NULL), side files (side_file.h) written by rank 0; agreed.
 * tree: a line per link, from the highest number down, of nine
 * tab-led integers: the link, its first and last line in coord, its
 * downstream link, its two upstream links (-1: none), Strahler order, -1
 * (TauDEM's outlet shape id, which links of no outlet have) and Shreve
 * magnitude. coord: a line per point of each link in that order, head
 * first, ending at the junction it flows into: x, y of the cell's centre,
 * the distance along the streams to the network's outlet, the elevation
 * (0 without elevations) and the contributing area (accumulation x
 * area_factor), five tab-led numbers with six decimals. */
int tr_links_text_write(const tr_links_src *s, const tr_links *l, const char *tree, const char *coord, tr_error *err);

#endif
