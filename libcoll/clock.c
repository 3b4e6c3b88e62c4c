/*
 * clock.c - the monotonic clock and the sleep every libcoll wait polls with
 * (coll_clock.h).
 *
 * It depends on nothing else in libcoll, which is why it is a file of its
 * own: the liveness monitor, the context and the collectives all call it,
 * and none of them has to call another's file for the time.
 */
#include "coll_clock.h"

#include <errno.h>
#include <time.h>

double coll_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void coll_sleep_ms(double ms) {
  if (ms <= 0) return;
  struct timespec ts;
  ts.tv_sec = (time_t)(ms / 1000.0);
  ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1000.0) * 1e6);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}
