/*
 * graph.h - the graph runner: hydrology programs on the AAP engine over the
 * tile grid (internal to libterrain).
 *
 * A graph program is a row of the program table (program_table.c): a name,
 * the cell type its Assemble puts, its params size, and one or more bodies,
 * each an init that builds the engine program (aap.h: PEval, IncEval,
 * Assemble, f_aggr) with the shape of the state it keeps. The planner
 * (graph_plan.c) picks the body a run takes from the params and --mem: a
 * program's out-of-core twin is a second body under the same name. A body
 * sees only a tr_graph_env: the grid, its fragments, the tile store its
 * rounds borrow input windows from, and `put`, where Assemble hands finished
 * tiles. Everything else is the runner's (graph_run.c): opening the input,
 * creating the output (run/run.h), the engine's back-end (threads, the
 * simulator, MPI ranks), the ordered sink, statistics, commit or delete.
 *
 * Adding a hydrology program: its program file (the bodies and, at its end,
 * `const tr_graph_program tr_program_NAME = {.name = ..., .bodies = {...}}`),
 * one name in program_table.c's list, and the command's call of
 * tr_run_graph with a prepare function that fills its params.
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

/* Fragment f as the tile stores and sinks see it. */
static inline tr_tile tr_graph_frag_tile(const tr_aap_frag *f) {
  return (tr_tile){.index = f->id, .row0 = f->row0, .col0 = f->col0, .rows = f->rows, .cols = f->cols};
}

/* The padded input window of fragment f ((rows + 2) x (cols + 2), NaN for
 * NoData and outside), or NULL; give it back when the round ends. */
float *tr_graph_window(tr_graph_env *env, const tr_aap_frag *f);
void tr_graph_window_done(tr_graph_env *env, const tr_aap_frag *f, float *z);

/* The same for input k of a program run over several rasters (k <
 * env->ninputs; input 0 is tr_graph_window's). */
float *tr_graph_window_in(tr_graph_env *env, int k, const tr_aap_frag *f);
void tr_graph_window_in_done(tr_graph_env *env, int k, const tr_aap_frag *f, float *z);

/* What a body keeps, which the planner (graph_plan.c) counts per fragment:
 * between rounds either bytes per cell of the fragment's padded window, or a
 * summary of its perimeter (bytes per perimeter unit, 2 x (rows + cols) + 4,
 * plus bits per padded cell); and bytes per padded cell that a running round
 * holds besides its input window (queues, levels, labels), counted once per
 * round running at the same time. Rows name one of the shapes below (as
 * `.state = TR_STATE_PER_CELL(5)`). */
typedef struct {
  int cell_bytes;
  int perimeter_bytes;
  int cell_bits;
  int round_bytes;
} tr_graph_state;

/* State of `bytes` per padded cell (fill's W, d8_up's value and flags). */
#define TR_STATE_PER_CELL(bytes) {.cell_bytes = (bytes)}
/* A perimeter summary: `bytes` per perimeter unit, `bits` per padded cell
 * besides (0: none), and `round` bytes per padded cell while a round runs. */
#define TR_STATE_PERIMETER(bytes, bits, round) \
  {.perimeter_bytes = (bytes), .cell_bits = (bits), .round_bytes = (round)}

/* When the planner takes a body. A program's MAIN bodies are its own way
 * of computing (the first whose `applies` holds is taken; it spills what does
 * not fit --mem); a TWIN gives the same bytes with less state and is taken
 * instead only when the main body's state does not fit and the twin's own
 * working set does. */
typedef enum { TR_BODY_MAIN = 0, TR_BODY_TWIN = 1 } tr_body_role;

/* One way of computing a program: the engine program init builds, and what
 * it keeps. */
typedef struct {
  const char *name;              /* what --aap-stats and engine failures call it */
  tr_body_role role;
  /* Fills *p for a run (p->user: the program's run context). 0, or -1 when
   * out of memory. env outlives the run. */
  int (*init)(tr_aap_program *p, tr_graph_env *env, const void *params);
  void (*release)(tr_aap_program *p);
  tr_graph_state state;
  /* Bytes of one message value (the engine program's value_size): the
   * engine keeps a halo slot per perimeter cell of each owned fragment with
   * up to two of them, which the planner counts. */
  int msg_bytes;
  /* Whether this body computes what `params` ask (NULL: always). */
  int (*applies)(const void *params);
  /* sizeof the struct a fragment's state points to. With it the runner can
   * compute a round on a copy (--ft dual and replay, graph_ft.h): the struct
   * and every array registered inside it with tr_graph_keep (in PEval) are
   * the whole state; no other heap memory hangs from it, and every byte of
   * it is written by the rounds (two computations are compared byte for
   * byte: an array's spare, never-written slot would differ). 0: no --ft. */
  size_t state_bytes;
  /* Optional (--ft replay): the cells of a fragment's state after PEval or
   * IncEval, and of the n values it emitted (cells and values as IncEval
   * gets them), that break what every correct round keeps (fill: W >= Z,
   * each emitted value its cell's W); 0 when none. Run on the round's
   * thread; it may borrow windows. */
  int64_t (*check)(void *user, const tr_aap_frag *f, const void *state, int64_t n, const int64_t *cells,
                   const void *values);
  /* Optional, the same for Assemble: the cells of the tile it put that are
   * not what the state makes. */
  int64_t (*check_tile)(void *user, const tr_aap_frag *f, const void *state, const void *cells);
} tr_graph_body;

#define TR_GRAPH_MAX_BODIES 4

/* A row of the program table (program_table.c), with designated
 * initializers: a program's name (the word messages use), the cell type its
 * Assemble puts, its params, and its bodies in the planner's order (each a
 * `const tr_graph_body tr_body_NAME` of its own file, also with designated
 * initializers, naming its state's shape). */
typedef struct tr_graph_program {
  const char *name;
  GDALDataType cell_type;
  size_t params_size;
  const tr_graph_body *bodies[TR_GRAPH_MAX_BODIES]; /* up to the first NULL */
} tr_graph_program;

/* The row named `name` of the program table, or NULL. */
const tr_graph_program *tr_graph_program_find(const char *name);

/* The body named `name` of any program (tests and benchmarks that run one
 * body on purpose), or NULL; *prog (may be NULL) its program. */
const tr_graph_body *tr_graph_body_find(const char *name, const tr_graph_program **prog);

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
  /* Fault tolerance of the rounds (graph_ft.h): TR_FT_OFF, or dual or
   * replay with these faults, --ft-check share and --ft-max-errors. */
  tr_ft_mode ft;
  const struct tr_inject *inject;
  double ft_check;
  int ft_max_errors;
  int ft_timeout_ms; /* dual: how long a helper's computation may be late (graph_ft.h) */
  struct tr_graph_ft_counts_s *ft_counts; /* filled when given */
} tr_graph_engine;

/* Runs `body` (of a program) with `params` over layout L on the chosen
 * back-end, input k's windows from stores[k] (stores[0] is tr_graph_window's);
 * finished tiles go to `sink` in fragment order (a sink in TR_SINK_SPREAD mode
 * under MPI, where fragment f is rank f mod N's; TR_SINK_LOCAL otherwise).
 * Every tile this rank owns reaches the sink, as a failure when the program
 * never put it, so rank 0 never waits for a tile that does not come.
 * Returns 0 or a negative TR_AAP_E* code with a message in err; when the
 * program reported a failure (tr_graph_fail), *prog_status (may be NULL) is
 * its tr_status and err its line; else 0. This is the engine step of both
 * runners below (graph_exec.c). */
int tr_graph_exec(const tr_graph_body *body, const void *params, const tr_aap_layout *L,
                  tr_tile_store *const *stores, int nstores, tr_sink *sink, const tr_graph_engine *eng,
                  tr_aap_stats *stats, char *err, size_t errlen, int *prog_status);

/* ---------------------------------------------------------------- runners
 * Two ways in, one path (graph_run.c): plan (graph_plan.c: which body, how
 * much state stays in memory), open the inputs, run the engine, finish. */

/* The command's runner: fills params (prog->params_size bytes, zeroed) and
 * the product from the opened input and the command's options. */
typedef int (*tr_graph_prepare_fn)(const tr_input *in, const void *opts, void *params, tr_product *prod,
                                   tr_error *err);

/* Runs program `name` over DEM src into dst, with the engine options g. */
int tr_run_graph(const tr_run_opts *run, const tr_graph_opts *g, const char *name, tr_graph_prepare_fn prepare,
                 const void *opts, const char *src, const char *dst, tr_error *err);

/* tr_run_graph over a DEM burnt as it is read (io/burn.h): burn's lines
 * (none when burn or its file is NULL) are read on every rank (agreed, a
 * failure before any output), src's windows are lowered where they touch
 * them as the tile store loads them, the output may not be the lines' file,
 * and --aap-stats gets a line {"burn":{...,"cells":N}}: the cells lowered. */
int tr_run_graph_burnt(const tr_run_opts *run, const tr_graph_opts *g, const char *name, tr_graph_prepare_fn prepare,
                       const void *opts, const char *src, const tr_burn_opts *burn, const char *dst, tr_error *err);

/* The same over nsrc input rasters (srcs[0] is the one prepare sees and the
 * output is made like; the others must have its size, and are read band 1
 * through a tile store each, sharing the cache budget). */
#define TR_GRAPH_MAX_INPUTS 4
int tr_run_graph_inputs(const tr_run_opts *run, const tr_graph_opts *g, const char *name,
                        tr_graph_prepare_fn prepare, const void *opts, const char *const *srcs, int nsrc,
                        const char *dst, tr_error *err);

/* Whether program `name` with `params` over src, with an output of
 * file_type, keeps its state in memory on every rank: *fits, by the figures
 * tr_run_graph_inputs plans with (it spills, or takes a twin, when not).
 * Agreed (all ranks call it). */
int tr_graph_fits(const tr_run_opts *run, const tr_graph_opts *g, const char *name, const void *params,
                  const char *src, GDALDataType file_type, int *fits, tr_error *err);

/* The caller's runner: tiles from caller-given loaders and to a writer
 * instead of rasters (tests, benchmarks; the library's in-memory form). The
 * same planner and engine step as the command's. */
typedef int (*tr_graph_load_fn)(void *user, int64_t row0, int64_t col0, int64_t rows, int64_t cols, float *dst);
typedef int (*tr_graph_write_fn)(void *user, int64_t row0, int64_t col0, int64_t rows, int64_t cols,
                                 const void *cells);

typedef struct {
  int64_t rows, cols;
  int64_t tile;                  /* the tile grid (tile x tile cells); or */
  const tr_aap_layout *layout;   /* these fragments instead */
  int ninputs;                   /* 1..TR_GRAPH_MAX_INPUTS */
  tr_graph_load_fn load;         /* load(user[k], ...) reads input k's window */
  void *load_user[TR_GRAPH_MAX_INPUTS];
  int has_nodata;                /* NaN is always nodata; this adds the value below */
  float nodata;
  size_t cache_bytes;            /* the tile stores' windows, shared by the inputs */
  tr_graph_write_fn write;       /* finished tiles, cells of the program's type (may be NULL) */
  void *write_user;
  int out_has_nodata;            /* the value Assemble gives cells without one */
  double out_nodata;
  tr_graph_engine eng;           /* back-end and engine options; its state_budget forces
                                    the plan's when not 0 */
  int64_t mem;                   /* the planner's memory per process; 0: all in memory */
  const char *body;              /* this body of the program (tests compare them); NULL: planned */
  const char **chosen;           /* given: the body that ran */
} tr_graph_io;

/* Runs program `name` with params over io; 0 or a negative TR_AAP_E* with a
 * message in err. stats may be NULL (else release with tr_aap_stats_free). */
int tr_graph_run_io(const char *name, const void *params, const tr_graph_io *io, tr_aap_stats *stats, char *err,
                    size_t errlen);

/* A program's release when its user data is one malloc'd block. */
void tr_graph_release_user(tr_aap_program *p);

#endif
