/*
 * status.h - libterrain's error convention (internal; status.c holds it). Not
 * error.h: that name is glibc's <error.h>, which a private include folder
 * would shadow.
 *
 * Every function that can fail returns TR_OK (0) or a negative tr_status
 * (terrain.h) and, when given a tr_error, leaves one printable line in it:
 * what failed, which file, why. The other libraries follow the same shape
 * with their own prefixes (FT_ERR_*, COLL_ERR_*, TR_AAP_E*): 0 is success, a
 * negative code is a failure, *_strerror() names it; libterrain turns their
 * codes into a tr_status with a message at the call site. Nothing prints and
 * nothing exits below tools/.
 */
#ifndef TR_STATUS_H
#define TR_STATUS_H

#include "terrain.h"

/* Sets the error buffer (printf style) when err is not NULL. Returns `status`. */
int tr_fail(tr_error *err, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
