/*
 * coll_clock.h - libcoll's monotonic clock and sleep; never installed.
 *
 * Why a header of its own: the liveness monitor (live.c), the context
 * (comm.c) and the algorithms (halving.c, timeout_agg.c) all measure time
 * and nap between polls. Kept below all of them, it lets each call the clock
 * without calling into another one's file, so the file graph stays a tree
 * (live.c needs nothing of the context, and the context needs the monitor).
 *
 * Thread safety: both functions may be called from any thread.
 */
#ifndef COLL_CLOCK_H
#define COLL_CLOCK_H

/* Seconds on the monotonic clock: only differences mean anything, and a
 * wall-clock step (NTP) never shortens or stretches a deadline. */
double coll_now(void);

/* Sleeps ms milliseconds (nothing for ms <= 0), resuming after a signal so
 * that a nap between polls is never cut short into a busy spin. */
void coll_sleep_ms(double ms);

#endif
