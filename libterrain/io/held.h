/*
 * held.h - the outputs of a run of several stages, kept under their
 * temporary names until the run has made every one of them (internal).
 *
 * A command that writes several products in stages (flowgraph) must leave
 * all of them or none: a stage that fails, or a signal, after earlier
 * stages finished must not leave those earlier products. So each stage's
 * commit (tr_output_commit with tr_run_opts.held set; the network writer
 * for its folder) hands its finished temporary to the run's list instead of
 * renaming it, and the run puts the whole list in place at its very end
 * (tr_held_commit) or deletes it (tr_held_abort). The temporaries stay
 * tracked (tmp_files.h) until they are renamed, so a signal's handler
 * removes them as it removes any temporary. Later stages that read an
 * earlier product read it where it is held (tr_held_where).
 *
 * The list is the writing rank's (rank 0): the other ranks' lists stay
 * empty. Not thread-safe: the stages of a run add to it one after another.
 */
#ifndef TR_HELD_H
#define TR_HELD_H

#include <gdal.h>

#include "terrain.h"

typedef struct tr_held tr_held;

/* An empty list; NULL when out of memory. */
tr_held *tr_held_new(void);
/* Forgets the list (what it holds stays on disk: commit or abort first). */
void tr_held_free(tr_held *h);

/* The finished raster at `ready` (a tracked temporary of this process)
 * goes to `final` with driver d at the commit. 0, or -1 when out of
 * memory. */
int tr_held_raster(tr_held *h, const char *final, const char *ready, GDALDriverH d);

/* The finished files of a vector output in folder `folder` (tracked with
 * tr_tmp_track_folder), made under the short name `inner` for `final`: at
 * the commit each entry of the folder goes beside `final`, an entry named
 * inner's stem + suffix as final's stem + the same suffix (a Shapefile's
 * .shp, .shx, .dbf, .prj), and the folder is removed. 0, or -1 when out of
 * memory. */
int tr_held_folder(tr_held *h, const char *final, const char *folder, const char *inner);

/* Where the output bound for `path` (a symbolic link: its target) is held
 * now: its temporary (a folder's: folder/inner); NULL when none is. */
const char *tr_held_where(const tr_held *h, const char *path);

/* Puts every held output in place, in the order they came, and empties the
 * list. Interrupted (run->cancelled says so, before or after the renames:
 * a signal's handler may have removed temporaries not yet renamed) or
 * failed: the outputs already put in place are deleted again, the others
 * too, and the status says why (TR_EINTERRUPTED, or TR_EOUTPUT naming the
 * destination). A NULL list: TR_OK. */
int tr_held_commit(tr_held *h, const tr_run_opts *run, tr_error *err);

/* Deletes everything held and empties the list. NULL: nothing. */
void tr_held_abort(tr_held *h);

#endif
