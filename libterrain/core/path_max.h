/*
 * path_max.h - the size of a buffer that holds a file name (internal to
 * libterrain).
 *
 * One name for "a path fits here" instead of 4096 written in each file, so
 * the buffers that hold paths are found by name and all agree with the
 * system's own limit (a name longer than PATH_MAX cannot be opened anyway).
 */
#ifndef TR_PATH_MAX_H
#define TR_PATH_MAX_H

#include <limits.h>

#define TR_PATH_MAX PATH_MAX

#endif
