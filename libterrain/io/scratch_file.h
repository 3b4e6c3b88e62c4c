/*
 * scratch_file.h - unlinked scratch files beside a run's output, for what
 * does not fit in --mem (internal to libterrain): graph programs' spilled
 * state (state_store.c) and interpolation's point index on disk
 * (interp/point_file.c).
 *
 * The folder is --tmp when given, else the output's folder. A file is made
 * there without a name (O_TMPFILE), or where the file system cannot, with
 * mkstemp under a temporary's name and unlinked at once; its space goes back
 * when the process ends, however it ends, and nothing is left to clean up.
 */
#ifndef TR_SCRATCH_FILE_H
#define TR_SCRATCH_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* The scratch folder of a run writing `dst`: tmp_dir (--tmp, NULL or "":
 * none) or dst's folder, into out. A --tmp given is checked at once (it
 * exists, is a folder, this process may write there), even when the run
 * may never need it: a mistyped folder found only on the day a larger
 * input needs it would end that run. */
int tr_scratch_folder(const char *tmp_dir, const char *dst, char *out, size_t n, tr_error *err);

/* A new file in folder dir with no name (or, where O_TMPFILE is refused,
 * unlinked at once: ".terrafort-<pid>-<host>.tmpTAG-XXXXXX" while it has
 * one): its descriptor (close-on-exec), or -1 with errno set. */
int tr_scratch_open(const char *dir, const char *tag);

/* n bytes at offset off, whole (short writes and reads continued, EINTR
 * retried): 0, or -1 with errno set (EIO for a file shorter than asked). */
int tr_pwrite_all(int fd, const void *buf, int64_t n, int64_t off);
int tr_pread_all(int fd, void *buf, int64_t n, int64_t off);

#endif
