/*
 * library.c - libterrafort.so's own object (package/library.cmake): the
 * library is libterrain and the libraries under it, linked whole; this
 * file adds what only the shared library has.
 */
#include "terrain.h"

const char *tr_library_version(void) { return TR_VERSION; }
