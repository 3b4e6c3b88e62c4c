/*
 * tmp_files.h - the temporary and scratch files this process has on disk,
 * named so that a signal handler can remove them (internal).
 *
 * A launcher that ends a job gives its processes little time between
 * SIGTERM and SIGKILL: Open MPI's mpirun, when one rank dies, sends the
 * others SIGCONT, then SIGTERM, then SIGKILL about 10 ms later. The run's
 * own clean-up (the cancel is seen at the next progress call or wait, then
 * the output is aborted) does not always fit in that. So raster.c tracks the
 * name of each temporary from its creation until it is renamed into place or
 * deleted, and so do the callers of scratch names, and the command's signal
 * handler calls tr_remove_temporaries (terrain.h), which unlinks every
 * tracked name there and then (and a file created after that is unlinked by
 * its creator: tr_tmp_created). What is left anyway (a SIGKILL with no
 * SIGTERM before it, or within the few ms of the create call that the
 * SIGTERM interrupted) is removed by the next run's stale clean-up
 * (raster.c).
 */
#ifndef TR_TMP_FILES_H
#define TR_TMP_FILES_H

#include <stdint.h>

/* Tracks path (copied); 0, or -1 when the table is full or the name too
 * long (the file is then left to the stale clean-up). Thread-safe. */
int tr_tmp_track(const char *path);

/* The same for a folder of temporaries: the handler removes its files
 * (not its sub-folders) and then the folder. */
int tr_tmp_track_folder(const char *path);

/* Called once the tracked file at path exists: when the handler has already
 * run (a signal came between tracking the name and creating the file, so
 * there was nothing to unlink then), unlinks it now. Thread-safe. */
void tr_tmp_created(const char *path);

/* Forgets path: it was renamed into place or deleted. Thread-safe. */
void tr_tmp_untrack(const char *path);

/* The hash of this machine's host name that temporary names carry after
 * the pid (".<stem>.terrafort-<pid>-<host>.tmp..."): the next run's stale
 * clean-up (raster.c) removes only names of this host whose process is
 * gone. */
uint32_t tr_tmp_host_tag(void);

#endif
