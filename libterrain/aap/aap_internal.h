/*
 * aap_internal.h - the AAP engine's internals, shared by its back-ends (core.c, schedule.c,
 * term.c, threads.c, mpi.c, sim.c, layout.c, stats.c) and its own tests. Programs and the
 * rest of libterrain use include/aap.h only; this folder is not on their include path.
 */
#ifndef TR_AAP_INTERNAL_H
#define TR_AAP_INTERNAL_H

#include "aap.h"

/* One round's messages from one fragment to one neighbour. */
typedef struct aap_batch {
  int64_t src, dst, round, n;
  int64_t *cells;
  unsigned char *vals;
  double t_sent, t_due;
  struct aap_batch *next;
} aap_batch;

enum { AAP_NEW = 0, AAP_IDLE = 1, AAP_RUNNING = 2 };

typedef struct aap_frag_rt {
  int status;
  int owner;               /* worker (sim, pinned threads) or rank (MPI) */
  void *state;             /* the program's */
  int64_t round;           /* completed rounds = index of the next round */
  /* buffer: one slot per halo cell, combined with f_aggr */
  int64_t ring;
  unsigned char *val, *has; /* slot s is halo cell s in aap_halo_slot's order */
  int32_t *dirty;
  int64_t ndirty;
  int64_t eta;             /* batches received since the last snapshot */
  int64_t *nb_last;        /* per neighbour: newest round index received from it */
  int64_t overlap;         /* neighbour rounds overlapping the running/last round */
  int64_t Lexp;            /* L_i, clamped */
  int64_t inflight_to;     /* batches sent to it, not yet delivered */
  double t_ready, t_start, t_end, ema;
  double wema;             /* moving average of work (cells) per round */
  int64_t last_work;       /* work of the round just run (set unlocked, read by aap_end) */
  int has_ema;
  double wake_at;          /* sim: pending wake-up time */
  /* the snapshot a running round reads (allocated in aap_begin, freed in
     aap_end; snap_oom: that allocation failed, the round fails) */
  int64_t snap_n;
  int64_t *snap_cells;
  unsigned char *snap_vals;
  int snap_oom;
  /* the outbox of a running round: one list per neighbour, handed over as
     its batch when the round ends */
  int64_t *ob_n, *ob_cap;
  int64_t **ob_cells;
  unsigned char **ob_vals;
} aap_frag_rt;

typedef struct aap_core {
  const tr_aap_program *p;
  const tr_aap_layout *L;
  tr_aap_opts o;
  int64_t nf;
  aap_frag_rt *f;
  double lat_ema;
  int has_lat;
} aap_core;

struct tr_aap_round {
  aap_core *c;
  int64_t frag, round, work;
  int err;
  /* a capture (tr_aap_capture_open): emits are kept here, not routed */
  int64_t cap_n, cap_cap;
  int64_t *cap_cells;
  unsigned char *cap_vals;
  int capture;
};

typedef struct aap_wave {
  int valid;
  int64_t sent, recv;
} aap_wave;

/* core.c */
/* Fragment f's halo buffers (one slot per halo cell) are allocated only when
 * f % nowners == me: the MPI back-end passes its rank and size (a rank runs
 * only its own fragments' rounds), the others 0 and 1. */
int aap_core_init(aap_core *c, const tr_aap_program *p, const tr_aap_layout *L,
                  const tr_aap_opts *o, int me, int nowners);
void aap_core_free(aap_core *c);
void aap_set_err(char *err, size_t errlen, const char *fmt, ...);
int aap_check_args(const tr_aap_program *p, const tr_aap_layout *L, const tr_aap_opts *o,
                   char *err, size_t errlen);
/* Marks f running at now and takes its snapshot. */
void aap_begin(aap_core *c, int64_t f, double now, tr_aap_worker_stats *ws);
/* Runs PEval or IncEval of f (no shared state touched: call without locks). */
int aap_run_round(aap_core *c, int64_t f, int64_t *work, int64_t *nmsgs_read);
/* Ends f's round at now; returns its outgoing batches (a list) and counts them in ws. */
int aap_end(aap_core *c, int64_t f, double now, double duration, aap_batch **out,
            tr_aap_worker_stats *ws);
/* Bookkeeping when a batch leaves its sender (before delivery). */
void aap_on_send(aap_core *c, const aap_batch *b);
/* Combines a batch into its receiver's buffer and frees it. */
void aap_deliver(aap_core *c, aap_batch *b, double now, tr_aap_worker_stats *ws);
void aap_batch_free(aap_batch *b);
int64_t aap_halo_slot(const tr_aap_frag *g, int64_t cols, int64_t cell);
/* Assembles (and destroys) every fragment state in owned (or all when owner < 0). */
int aap_assemble_all(aap_core *c, int owner, char *err, size_t errlen);
/* The same on `threads` threads when the program allows it (assemble_parallel):
 * each takes the next fragment; a failure stops the fragments after it; err names
 * the lowest fragment that failed. */
int aap_assemble_all_threads(aap_core *c, int threads, char *err, size_t errlen);
int aap_stats_alloc(tr_aap_stats *s, const char *backend, const tr_aap_opts *o, int nworkers);

/* schedule.c */
/* Earliest time f may start given the current state: now, a later time, or INFINITY. */
double aap_start_time(const aap_core *c, int64_t f, double now);
/* Among fragments allowed to start, whether f goes before best (-1: none yet):
 * in memory before on disk (tr_aap_program.resident), then the lower round. */
int aap_prefer(const aap_core *c, int64_t f, int64_t best);
int64_t aap_rmin(const aap_core *c);
uint64_t aap_mix(uint64_t x);

/* term.c */
int aap_all_inactive(const aap_core *c, int owner);
int aap_term_wave(aap_wave *prev, int all_ack, int64_t sent, int64_t recv);

#endif
