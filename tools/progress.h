/*
 * progress.h - the writer's progress line under mpirun, built from every
 * rank's figures (terrafort(1), PROGRESS).
 *
 * Each rank counts its own tile steps into a board the library fills
 * (tr_run_opts.rank_progress); a thread of each rank contributes its board
 * to a timeout aggregation every TF_PROGRESS_PERIOD_MS, a snapshot whose
 * root is the writer (libcoll, coll_ta_opts.snapshot): the writer gets the
 * figures of the ranks that answered within the threshold and the names of
 * those that did not, and never waits for them. So the line keeps moving
 * while a rank is slow, stopped or gone, and says which.
 */
#ifndef TF_PROGRESS_H
#define TF_PROGRESS_H

#include "terrain.h"

/* The aggregation's period and the writer's threshold after the first
 * arrival (the wait for a rank before it is called late in that round). */
#define TF_PROGRESS_PERIOD_MS 500
#define TF_PROGRESS_THRESHOLD_MS 200
/* A new line at most this often, unless the late ranks or the stage change. */
#define TF_PROGRESS_LINE_MS 2000

/* Under mpirun with more than one rank, every rank at once (same options):
 * makes the aggregation's libcoll context (collective, bounded by the
 * liveness monitor) and starts the thread; run->rank_progress then points
 * at this rank's board. show: this rank prints the line (the writer,
 * --progress, not -q). arity: --coll-arity (0: one level). Returns 1 when
 * the aggregation runs, 0 when not (one rank, no MPI threads, a failure:
 * the caller keeps the writer's own line). Once per process. */
int tf_progress_start(tr_run_opts *run, const char *cmd, int show, int arity);

/* Stops the thread and ends its context (collective, bounded); the writer
 * prints the closing line for the command's exit code rc. From
 * tf_process_end, before the process's own context ends. A no-op when the
 * aggregation does not run. */
void tf_progress_stop(int rc);

#endif
