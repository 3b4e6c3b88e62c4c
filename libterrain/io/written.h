/*
 * written.h - telling the caller which final files a run wrote (internal).
 *
 * When the environment variable TR_OUTPUTS_ENV (terrain.h) names a file,
 * every place that puts a file under its final name - a raster's commit
 * (raster.c), the files of a vector network (hydro/network.c), the side
 * files --stats-json, --aap-stats and --ft-report - appends that file's
 * absolute path to it, one line each. `terrafort batch` sets it for each
 * job: what a job wrote is then known from the job itself, not from a list
 * of the options that name outputs kept by hand per command.
 */
#ifndef TR_WRITTEN_H
#define TR_WRITTEN_H

/* The mark of terrafort's own temporary and scratch names (a hidden
 * ".<stem>.terrafort-..." beside the destination): raster.c makes them,
 * flowgraph's scratch rasters are committed under them. */
#define TR_TMP_MARK ".terrafort-"

/* Whether path is a scratch name of terrafort's (a hidden name holding
 * TR_TMP_MARK: an intermediate file a run reads and deletes). */
int tr_is_scratch_name(const char *path);

/* Reports path (just put in place) when TR_OUTPUTS_ENV is set, unless it
 * is a scratch file (a hidden name holding TR_TMP_MARK: an intermediate a
 * run deletes, not an output); a failure to report is silent (the file
 * itself was written). Notes it for tr_remove_outputs (terrain.h) too. */
void tr_output_written(const char *path);

#endif
