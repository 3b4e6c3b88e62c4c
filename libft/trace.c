/*
 * trace.c - the context's event trace (ft_trace_get) and the per-thread
 * clocks it records.
 *
 * The master (dual.c) and both back-ends add events, so the trace is a file
 * below all of them rather than part of the context's creation code: a
 * back-end records what it did without calling up into ctx.c. Every
 * function here is a no-op, making no extra clock call, when the context
 * keeps no trace (trace_capacity 0), so the untraced path costs nothing.
 * ft_trace_add runs under the context lock (its callers hold it).
 */
#define _GNU_SOURCE /* sched_getcpu */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ft_internal.h"

double ft_trace_cpu(const ft_ctx *ctx) {
  if (!ctx->trace) return 0.0;
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int ft_trace_on_cpu(const ft_ctx *ctx) { return ctx->trace ? sched_getcpu() : -1; }

double ft_trace_run_delay(const ft_ctx *ctx) {
  if (!ctx->trace) return -1.0;
  FILE *f = fopen("/proc/thread-self/schedstat", "r");
  if (!f) return -1.0;
  unsigned long long run_ns = 0, delay_ns = 0;
  int n = fscanf(f, "%llu %llu", &run_ns, &delay_ns);
  fclose(f);
  return n == 2 ? 1e-9 * (double)delay_ns : -1.0;
}

void ft_trace_add(ft_ctx *ctx, ft_event_kind kind, int64_t block, int sub, int slot, int worker,
                  const ft_trace_times *tt) {
  if (!ctx->trace || ctx->trace_n >= ctx->opts.trace_capacity) return;
  ctx->trace[ctx->trace_n++] = (ft_event){kind,       block,     sub,          slot,
                                          worker,     tt->t0,    tt->t1,       tt->ready,
                                          tt->cpu_s,  tt->core_wait_s, tt->cpu_at, tt->cpu_end};
}

size_t ft_trace_get(ft_ctx *ctx, ft_event *ev, size_t cap) {
  pthread_mutex_lock(&ctx->lock);
  size_t n = ctx->trace_n;
  if (ev) memcpy(ev, ctx->trace, (n < cap ? n : cap) * sizeof *ev);
  pthread_mutex_unlock(&ctx->lock);
  return n;
}
