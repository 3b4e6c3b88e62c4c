/*
 * clock.c - the monotonic clock and the timed condition waits of libft.
 *
 * Every part measures time (the master's timeouts, the workers' activity
 * stamps, the MPI progress thread's naps), so this file depends on nothing
 * else in libft: the context, the master and the back-ends all call down to
 * it, and none has to call another's file to learn the time. Monotonic,
 * because a wall-clock step (NTP) must neither fire nor postpone a timeout.
 */
#include <time.h>

#include "ft_internal.h"

double ft_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void ft_cond_init_mono(pthread_cond_t *c) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(c, &a);
  pthread_condattr_destroy(&a);
}

void ft_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m, double deadline) {
  struct timespec ts;
  double s = deadline > 0 ? deadline : 0;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_cond_timedwait(c, m, &ts);
}
