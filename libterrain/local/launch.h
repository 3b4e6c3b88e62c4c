/*
 * launch.h - the local runner's one launch point (internal to libterrain):
 * where a kernel row runs on a tile, on the CPU or the GPU, directly or
 * tracked by libft's idempotence tracker for --ft replay.
 *
 * The executor reads a tile's window into its slot's `in` buffer and calls
 * tr_launch_tile(), which leaves the tile's cells in the slot's `out`
 * buffer. Everything about how the row runs is decided here from the row
 * alone (kernel.h: its cpu and gpu functions, its iterative form), so a new
 * row needs nothing in this file.
 *
 * Under --ft off and --ft replay a memory failure (SIGBUS, BUS_MCEERR_AR or
 * _AO: memfail.h) in a buffer of a CPU launch - the slot's `in`, `work` or
 * `scratch`, or the tile's `out` - retires that buffer for good, puts a
 * fresh one in its place (the caller's `out` and window read through
 * tr_launch_io), and computes the tile again.
 */
#ifndef TR_LAUNCH_H
#define TR_LAUNCH_H

#include "inject.h"
#include "kernel.h"
#include "terrain.h"

typedef struct tr_launcher tr_launcher;
typedef struct tr_launch_slot tr_launch_slot;

/* A worker thread's buffers: `in` holds (tile + 2 halo)^2 floats
 * (page-locked when a GPU is used); `out` is the current tile's cells, the
 * caller's (a reorder slot), registered with the tracker for that tile only:
 * each tile's output is a new generation of the region. */
struct tr_launch_slot {
  float *in;
  void *out;
  float *work;                /* iterative rows: the window the passes write */
  void *scratch;              /* --ft-check: a sampled launch's second result */
  struct tr_gpu *gpu;
  int repairing;              /* a repair is running launches on this slot */
  int64_t checkpoint;         /* iterative rows under --ft replay: the tile's, or -1 */
  char why[256];              /* the last GPU error, or the injector's */
  /* memory failures (memfail.h), per buffer in the order in, work,
   * scratch, out: the registry's handles, and what the last one hit */
  size_t scratch_bytes;
  int reg[4];
  int attempt;                /* the tile's recomputations after memory failures */
  int mf_hit, mf_which;       /* a launch jumped back from a failure in buffer mf_which */
  int64_t injected;           /* sigbus and hwpoison faults injected on this slot */
};

/* What the caller does for the launch point after a memory failure took
 * pages of a tile's buffers: read the tile's window again into the slot's
 * fresh `in`, and give the tile a fresh output buffer in place of the
 * caller's poisoned one (NULL: out of memory). */
typedef struct {
  int (*read)(void *user, float *in, tr_error *err);
  void *(*renew_out)(void *user, size_t *retired); /* *retired: the bytes it retired */
  void *user;
} tr_launch_io;

/* Decides CPU or GPU (run->device), installs the memory-failure handler
 * (memfail.h) and, for --ft replay, creates the tracker. tile: cells per tile side. Returns TR_OK or fails (--device gpu
 * without a usable GPU or for a row without a GPU version: TR_EUSAGE). */
int tr_launcher_open(tr_launcher **out, const tr_run_opts *run, const tr_inject *inj, const tr_kernel *k,
                     int64_t tile, tr_error *err);

/* Warns (run->warning) when this rank recovered memory failures; --ft
 * replay: sums the tracker's counters over the ranks (collective) and rank 0
 * writes them to run->ft_report; then frees everything and puts back the
 * SIGBUS disposition it found (the last launcher open does). */
int tr_launcher_close(tr_launcher *L, int rank, int nranks, tr_error *err);

/* A slot for one worker thread (NULL when out of memory). */
tr_launch_slot *tr_launch_slot_open(tr_launcher *L);
void tr_launch_slot_close(tr_launcher *L, tr_launch_slot *s);

/* Computes the tile whose window was just read into s->in (w describes it)
 * into out (tile^2 cells at most). tile: the tile's index (drives the
 * injector). io: how to read the window again and renew out after a memory
 * failure (its out then replaces the caller's). */
int tr_launch_tile(tr_launcher *L, tr_launch_slot *s, const void *params, const tr_window *w, int64_t tile, void *out,
                   const tr_launch_io *io, tr_error *err);

#endif
