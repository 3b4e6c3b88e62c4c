/*
 * graph.h - the graph runner: hydrology programs on the AAP engine over the
 * tile grid (internal to libterrain).
 *
 * A graph program is a row of the program table (program_table.c): a name,
 * the cell type its Assemble puts, its params size, and an init that builds
 * the engine program (aap.h: PEval, IncEval, Assemble, f_aggr) for a run. The
 * program sees only a tr_graph_env: the grid, its fragments, the tile store
 * its rounds borrow input windows from, and `put`, where Assemble hands
 * finished tiles. Everything else is the runner's: opening the input,
 * creating the output (run/run.h), the engine's back-end (threads, the
 * simulator, MPI ranks), the ordered sink, statistics, commit or delete.
 * Adding a hydrology program is one program file and one table row.
 */
#ifndef TR_GRAPH_H
#define TR_GRAPH_H

#include <gdal.h>

#include "aap.h"
#include "raster.h"
#include "sink.h"
#include "state_store.h"
#include "tile_store.h"

typedef struct tr_graph_env tr_graph_env;

/* What a program's callbacks get for one run. */
struct tr_graph_env {
  int64_t rows, cols;            /* the grid */
  const tr_aap_layout *L;        /* fragment f is tile f */
  tr_tile_store *store;          /* input windows: tr_graph_window / tr_graph_window_done */
  tr_tile_store *const *inputs;  /* every input's store (inputs[0] == store): tr_graph_window_in */
  int ninputs;
  int has_nodata;                /* the output's nodata, for cells without a value */
  double nodata;
  /* Assemble's way out: fragment f's finished tile, f->rows x f->cols cells of
   * the program's cell type, row-major. Call once per fragment. Returns 0. */
  int (*put)(tr_graph_env *env, const tr_aap_frag *f, const void *cells);
  void *runner;                  /* the runner's state behind put */
};

/* A program's own failure (a bad input cell, a cycle of directions): one
 * line and a tr_status, kept for the lowest fragment that reports one so the
 * line does not depend on the schedule. The callback then returns -1. */
int tr_graph_fail(tr_graph_env *env, const tr_aap_frag *f, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Registers an array of fragment f's state (*pp: a malloc'd pointer of
 * `bytes` bytes, or NULL) from inside one of f's rounds, so that an
 * out-of-core run may spill it to disk between rounds (io/state_store.h):
 * the runner then frees it and sets *pp to NULL, and restores it (at a new
 * address) before f's next round. Programs keep per-fragment arrays only
 * behind registered pointers and read them afresh in every round. With count
 * non-NULL the size is elem x *count, read at each spill (an array that
 * grows; bytes is then elem). 0, or -1 when out of memory. */
int tr_graph_keep(tr_graph_env *env, const tr_aap_frag *f, void *pp, size_t bytes, const size_t *count);

/* The padded input window of fragment f ((rows + 2) x (cols + 2), NaN for
 * NoData and outside), or NULL; give it back when the round ends. */
float *tr_graph_window(tr_graph_env *env, const tr_aap_frag *f);
void tr_graph_window_done(tr_graph_env *env, const tr_aap_frag *f, float *z);

/* The same for input k of a program run over several rasters (k <
 * env->ninputs; input 0 is tr_graph_window's). */
float *tr_graph_window_in(tr_graph_env *env, int k, const tr_aap_frag *f);
void tr_graph_window_in_done(tr_graph_env *env, int k, const tr_aap_frag *f, float *z);

typedef struct tr_graph_program {
  const char *name;
  GDALDataType cell_type;        /* what Assemble puts */
  size_t params_size;
  /* Fills *p for a run (p->user: the program's run context). 0, or -1 when
   * out of memory. env outlives the run. */
  int (*init)(tr_aap_program *p, tr_graph_env *env, const void *params);
  void (*release)(tr_aap_program *p);
  /* Bytes the program keeps per cell of a fragment's padded window while it
   * runs (fill: one float of W); 0 means the size of cell_type. The runner
   * refuses a run whose state does not fit in memory (core/mem_limit.h). */
  int state_bytes;
  /* Bytes of one message value (the engine program's value_size): the
   * engine keeps a halo slot per perimeter cell of each owned fragment with
   * up to two of them, which the runner counts. */
  int msg_bytes;
  /* A program whose state between rounds is a summary of the fragment's
   * perimeter, not of its cells (fill_perimeter): bytes per perimeter cell;
   * state_bytes is then unused. 0: the state is per cell. */
  int perimeter_state;
  /* Bytes per cell of the padded window a running round holds besides its
   * input window (the flood's levels, labels and queues); counted once per
   * round running at the same time. */
  int round_bytes;
  /* The word messages use for a run ("fill" for fill_perimeter); NULL: name. */
  const char *command;
  /* A program giving the same output from the same params with less state,
   * run instead when this one's state does not fit --mem ("fill" names
   * fill_perimeter); NULL: none, this one spills. */
  const char *when_out_of_core;
  /* Whether this program computes what `params` ask (NULL: always): a
   * when_out_of_core twin is swapped in only when it does (d8_up_perimeter:
   * not Strahler order, weights only when their sums are exact). */
  int (*applies)(const void *params);
  /* With perimeter_state: bits per cell of the padded window kept besides
   * the perimeter's bytes (flowdir_compact's bitmaps); 0: none. */
  int state_bits;
} tr_graph_program;

/* The row named `name` of the program table, or NULL. */
const tr_graph_program *tr_graph_program_find(const char *name);

typedef enum { TR_GRAPH_THREADS = 0, TR_GRAPH_SIM, TR_GRAPH_MPI } tr_graph_backend;

typedef struct {
  tr_aap_opts aap;
  tr_graph_backend backend;
  const tr_aap_sim_opts *sim;    /* TR_GRAPH_SIM */
  void *mpi_comm;                /* TR_GRAPH_MPI: pointer to an MPI_Comm */
  /* Out of core: fragments' registered state beyond state_budget bytes is
   * spilled to a file in spill_dir (NULL: "."); < 0: all kept in memory but
   * counted (spill_stats' peak_resident); 0: no state store. The output's
   * bytes do not depend on it. */
  int64_t state_budget;
  const char *spill_dir;
  tr_state_store_stats *spill_stats; /* filled when given */
  int64_t spill_fail;            /* injected: this spill fails (1-based); 0: none */
} tr_graph_engine;

/* Runs program `prog` with `params` over layout L on the chosen back-end;
 * finished tiles go to `sink` in fragment order (a sink in TR_SINK_SPREAD mode
 * under MPI, where fragment f is rank f mod N's; TR_SINK_LOCAL otherwise).
 * Every tile this rank owns reaches the sink, as a failure when the program
 * never put it, so rank 0 never waits for a tile that does not come.
 * Returns 0 or a negative TR_AAP_E* code with a message in err. */
int tr_graph_exec(const tr_graph_program *prog, const void *params, const tr_aap_layout *L, tr_tile_store *store,
                  tr_sink *sink, const tr_graph_engine *eng, tr_aap_stats *stats, char *err, size_t errlen);

/* The same over several inputs: stores[k] serves input k (stores[0] is
 * tr_graph_window's). When the program reported a failure (tr_graph_fail),
 * *prog_status (may be NULL) is its tr_status and err its line; else 0. */
int tr_graph_exec_inputs(const tr_graph_program *prog, const void *params, const tr_aap_layout *L,
                         tr_tile_store *const *stores, int nstores, tr_sink *sink, const tr_graph_engine *eng,
                         tr_aap_stats *stats, char *err, size_t errlen, int *prog_status);

/* The command-level runner: fills params (prog->params_size bytes, zeroed)
 * and the product from the opened input and the command's options. */
typedef int (*tr_graph_prepare_fn)(const tr_input *in, const void *opts, void *params, tr_product *prod,
                                   tr_error *err);

/* Runs program `name` over DEM src into dst, with the engine options g. */
int tr_run_graph(const tr_run_opts *run, const tr_graph_opts *g, const char *name, tr_graph_prepare_fn prepare,
                 const void *opts, const char *src, const char *dst, tr_error *err);

/* The same over nsrc input rasters (srcs[0] is the one prepare sees and the
 * output is made like; the others must have its size, and are read band 1
 * through a tile store each, sharing the cache budget). */
#define TR_GRAPH_MAX_INPUTS 4
int tr_run_graph_inputs(const tr_run_opts *run, const tr_graph_opts *g, const char *name,
                        tr_graph_prepare_fn prepare, const void *opts, const char *const *srcs, int nsrc,
                        const char *dst, tr_error *err);

/* Whether program `name`'s state over src, with an output of file_type,
 * fits --mem in memory on every rank: *fits, by the figures
 * tr_run_graph_inputs decides by (it spills, or swaps in its
 * when_out_of_core twin, when not). Agreed (all ranks call it). */
int tr_graph_fits(const tr_run_opts *run, const tr_graph_opts *g, const char *name, const char *src,
                  GDALDataType file_type, int *fits, tr_error *err);

/* A program's release when its user data is one malloc'd block. */
void tr_graph_release_user(tr_aap_program *p);

#endif
