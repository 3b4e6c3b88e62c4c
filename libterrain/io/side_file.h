/*
 * side_file.h - the small files a run writes besides its rasters
 * (--stats-json, --aap-stats, --ft-report), put in place like a raster
 * (internal).
 *
 * A side file is written under a temporary name in its destination's folder
 * (raster.c's naming: the signal handler and the stale clean-up know it),
 * checked whole (every write, the flush, fsync and close: a full disk is
 * TR_ENOSPC, and no 0-byte or cut file is ever left under the final name),
 * then waits: the run's end (run/run.c, tr_job_finish) renames the waiting
 * ones into place after the output raster's commit, or deletes them when
 * the run failed. So a run leaves its output and its side files together,
 * or none of them, and a file that was there before a failed run keeps its
 * bytes. A destination that is a symbolic link is written to its target.
 *
 * Only the writer (rank 0) writes side files, from one thread.
 */
#ifndef TR_SIDE_FILE_H
#define TR_SIDE_FILE_H

#include <stdio.h>

#include "status.h"
#include "terrain.h"

typedef struct tr_side_file tr_side_file;

/* Whether side file `path` is standard output ("-"): written there as it
 * comes (under mpirun by the writer, rank 0), nothing put in place. */
int tr_side_is_stdout(const char *path);

/* The side files' roles in tr_outputs_refuse's lines: one spelling each,
 * which tr_side_role knows. */
#define TR_ROLE_STATS_JSON "--stats-json"
#define TR_ROLE_FT_REPORT "--ft-report"
#define TR_ROLE_AAP_STATS "--aap-stats"

/* Whether `what`, an output's role in tr_outputs_refuse's lines, is a side
 * file's option (--stats-json, --ft-report, --aap-stats): "-" is then
 * standard output, no file. */
int tr_side_role(const char *what);

/* Creates the temporary of side file `path` ("what" names it in error
 * lines: "statistics file", ...) and returns it open for writing in *f.
 * TR_OK, or a failure (nothing is left). */
int tr_side_open(const char *path, const char *what, tr_side_file **s, FILE **f, tr_error *err);

/* The writing is done: checks it (ferror, flush, fsync, close). On success
 * the file waits for tr_side_commit_waiting; on failure it is deleted.
 * Either way s is given up. */
int tr_side_close(tr_side_file *s, tr_error *err);

/* Deletes s's temporary, unwritten or written (s is given up). */
void tr_side_abort(tr_side_file *s);

/* The lines of JSON values v[0..n) (terrain.h's writer, n <= 8), each with
 * its newline: the whole of side file `path` (tr_side_open ...
 * tr_side_close), or, with append, added to the end of `path`, a scratch
 * file a run of several stages fills and puts in place itself (flowgraph's
 * --ft-report, --aap-stats). `what` names the file in errors. TR_ENOMEM,
 * nothing written, when a value has no text (out of memory). */
int tr_side_write_json(const char *path, int append, const char *what, tr_json *const *v, int n, tr_error *err);

/* Renames every waiting side file into place, in the order they were
 * closed (reported to TR_OUTPUTS_ENV). The first failure is returned; the
 * files not yet renamed are then deleted. */
int tr_side_commit_waiting(tr_error *err);

/* Deletes every waiting side file. */
void tr_side_abort_waiting(void);

#endif
