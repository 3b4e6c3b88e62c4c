/*
 * pool.c - the thread back-end: a pool of worker threads owned by the context.
 *
 * Each worker has two FIFO queues of tasks: urgent (recomputes) and normal
 * (replicas). A replica task is worked one sub-block at a time and stays at
 * the head of the normal queue until its last sub-block is handed over; the
 * urgent queue is looked at before every step, so a recompute placed on a busy
 * worker waits for at most one sub-block, not for a whole block.
 *
 * Injected stalls wait after computing and before handing the result over
 * (until the stall ends or the pool shuts down); an injected kill makes the
 * thread leave its loop (its queued work is then only recovered by the
 * masters' timeouts, as with a real lost worker).
 * Shutting down never waits for a worker forever: one that has not returned
 * within the context's timeout (a kernel that hangs) is detached and the
 * context is left to it (its stop returns 1, and ft_ctx_destroy does not
 * free what the worker may still touch): the process goes on and can exit.
 */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ft_internal.h"

static void queue_remove(ft_task **head, ft_task **tail, ft_task *t) {
  ft_task *prev = NULL;
  for (ft_task *p = *head; p; prev = p, p = p->qnext) {
    if (p != t) continue;
    if (prev) prev->qnext = p->qnext;
    else *head = p->qnext;
    if (*tail == p) *tail = prev;
    p->qnext = NULL;
    return;
  }
}

/* An injected stall: ms milliseconds, or until shutdown (ctx lock held). */
static void stall(ft_ctx *ctx, ft_worker *w, int ms) {
  const double until = ft_now() + ms / 1000.0;
  while (!ctx->shutdown && ft_now() < until) ft_cond_wait_until(&w->cond, &ctx->lock, until);
}

static void *worker_main(void *arg) {
  ft_worker *w = arg;
  ft_ctx *ctx = w->ctx;
  const ft_inject *inj = &ctx->opts.inject;
  w->run_delay = ft_trace_run_delay(ctx);
  pthread_mutex_lock(&ctx->lock);
  for (;;) {
    while (!ctx->shutdown && !w->urgent_head && !w->normal_head)
      pthread_cond_wait(&w->cond, &ctx->lock);
    if (ctx->shutdown) break;
    int urgent = w->urgent_head != NULL;
    ft_task *t = urgent ? w->urgent_head : w->normal_head;
    ft_task **head = urgent ? &w->urgent_head : &w->normal_head;
    ft_task **tail = urgent ? &w->urgent_tail : &w->normal_tail;
    if (t->cancelled || t->sub_next >= t->sub_end) {
      queue_remove(head, tail, t);
      ft_task_unref(t);
      continue;
    }
    ft_job *j = t->job;
    int sub = t->sub_next;
    j->active++;
    w->last_activity = ft_now();
    ft_block blk = j->blk;
    if (j->in_copy && t->slot % 2 == 1) {
      blk.in = j->in_copy;
      blk.in_stride = blk.cols + 2 * blk.halo;
    }
    ft_kernel_fn fn = j->fn;
    const void *kctx = j->kctx;
    size_t bytes = j->sub_bytes[sub];
    pthread_mutex_unlock(&ctx->lock);

    void *buf = malloc(bytes);
    int ninj = 0;
    int on0 = ft_trace_on_cpu(ctx);
    double c0 = ft_trace_cpu(ctx), t0 = ft_now();
    int kerr = buf ? ft_compute_sub(fn, kctx, &blk, sub, t->slot, inj, buf, &ninj) : FT_ERR_NOMEM;
    double t1 = ft_now(), cpu = ft_trace_cpu(ctx) - c0;
    int on1 = ft_trace_on_cpu(ctx);
    double rd = ft_trace_run_delay(ctx); /* w->run_delay is this thread's own */
    double waited = rd >= 0 && w->run_delay >= 0 ? rd - w->run_delay : -1.0;
    w->run_delay = rd;

    pthread_mutex_lock(&ctx->lock);
    if (--j->active == 0) pthread_cond_broadcast(&j->cond);
    int64_t n = w->nresults++;
    if (ft_inject_killed(inj, w->index, n)) {
      free(buf);
      w->dead = 1;
      break;
    }
    int ms = ft_inject_stall_ms(inj, w->index, n);
    if (ms > 0) stall(ctx, w, ms);
    ft_deliver(ctx, t, sub, buf, ninj, kerr, (ft_trace_times){t0, t1, 0, cpu, waited, on0, on1});
    if (urgent || t->cancelled || t->sub_next >= t->sub_end) {
      queue_remove(head, tail, t);
      ft_task_unref(t);
    }
  }
  pthread_mutex_unlock(&ctx->lock);
  return NULL;
}

static void pool_dispatch(ft_ctx *ctx, ft_task *t) {
  ft_worker *w = &ctx->workers[t->worker];
  ft_task **head = t->urgent ? &w->urgent_head : &w->normal_head;
  ft_task **tail = t->urgent ? &w->urgent_tail : &w->normal_tail;
  t->qnext = NULL;
  if (*tail) (*tail)->qnext = t;
  else *head = t;
  *tail = t;
  pthread_cond_signal(&w->cond);
}

static int pool_stop(ft_ctx *ctx);

static int pool_start(ft_ctx *ctx, char *err, size_t errlen) {
  ctx->role = FT_ROLE_MASTER;
  int n = ctx->opts.workers;
  if (n == 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    n = c > 2 ? (int)c : 2;
  }
  if (n < 2) {
    if (err && errlen) snprintf(err, errlen, "ft: the thread back-end needs at least 2 workers (got %d)", n);
    return FT_ERR_INVAL;
  }
  ctx->nworkers = n;
  ctx->workers = calloc((size_t)ctx->nworkers, sizeof *ctx->workers);
  if (!ctx->workers) return FT_ERR_NOMEM;
  double now = ft_now();
  for (int i = 0; i < ctx->nworkers; i++) {
    ft_worker *w = &ctx->workers[i];
    w->ctx = ctx;
    w->index = i;
    w->last_activity = now;
    pthread_cond_init(&w->cond, NULL);
  }
  for (int i = 0; i < ctx->nworkers; i++) {
    ft_worker *w = &ctx->workers[i];
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
      if (err && errlen) snprintf(err, errlen, "ft: could not start worker thread %d", i);
      pool_stop(ctx);
      return FT_ERR_THREAD;
    }
    w->started = 1;
  }
  return 0;
}

static int pool_stop(ft_ctx *ctx) {
  if (!ctx->workers) return 0;
  pthread_mutex_lock(&ctx->lock);
  ctx->shutdown = 1;
  for (int i = 0; i < ctx->nworkers; i++) pthread_cond_broadcast(&ctx->workers[i].cond);
  pthread_mutex_unlock(&ctx->lock);
  int abandoned = 0;
  for (int i = 0; i < ctx->nworkers; i++) {
    if (!ctx->workers[i].started) continue;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += ctx->opts.timeout_ms / 1000 + 1;
    if (pthread_timedjoin_np(ctx->workers[i].thread, NULL, &dl) == ETIMEDOUT) {
      pthread_detach(ctx->workers[i].thread);
      abandoned = 1;
    }
  }
  if (abandoned) return 1;
  pthread_mutex_lock(&ctx->lock);
  for (int i = 0; i < ctx->nworkers; i++) {
    ft_worker *w = &ctx->workers[i];
    ft_task *lists[2] = {w->urgent_head, w->normal_head};
    for (int q = 0; q < 2; q++)
      for (ft_task *t = lists[q], *tn; t; t = tn) {
        tn = t->qnext;
        ft_task_unref(t);
      }
    pthread_cond_destroy(&w->cond);
  }
  pthread_mutex_unlock(&ctx->lock);
  free(ctx->workers);
  ctx->workers = NULL;
  return 0;
}

const ft_backend ft_backend_threads = {
    .name = "threads",
    .start = pool_start,
    .stop = pool_stop,
    .dispatch = pool_dispatch,
};
