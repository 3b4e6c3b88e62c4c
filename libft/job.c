/*
 * job.c - a job and its tasks: their references, and the results the
 * back-ends hand over to them (ft_deliver).
 *
 * Why a file of its own: the master (dual.c) makes jobs and decides on
 * their results, while the back-ends (pool.c, mpi.c) only finish tasks and
 * hand results in. Both need these few functions; kept here, below both,
 * a back-end never calls into the master that dispatched to it, and the
 * master reaches the back-ends only through the context's table
 * (ft_backend), so no two files call each other.
 *
 * Everything here runs under the context lock (ft_internal.h explains the
 * ownership rules).
 */
#include <stdlib.h>

#include "ft_internal.h"

static void job_free(ft_job *j) {
  for (int s = 0; s < FT_MAX_SUB; s++)
    for (int x = 0; x < FT_MAX_SLOTS; x++) free(j->sub[s].res[x]);
  pthread_cond_destroy(&j->cond);
  free(j->in_copy);
  free(j->excluded);
  free(j);
}

void ft_job_unref(ft_job *j) {
  if (--j->refs == 0) job_free(j);
}

void ft_task_unref(ft_task *t) {
  if (--t->refs == 0) {
    ft_job_unref(t->job);
    free(t);
  }
}

void ft_task_retire(ft_task *t) {
  if (!t->live) return;
  ft_task **p = &t->job->live;
  while (*p != t) p = &(*p)->jnext;
  *p = t->jnext;
  t->live = 0;
  ft_task_unref(t);
}

void ft_deliver(ft_ctx *ctx, ft_task *t, int sub, void *buf, int ninj, int kerr,
                ft_trace_times tt) {
  ft_job *j = t->job;
  ft_worker *w = &ctx->workers[t->worker];
  tt.ready = t->ready;
  w->last_activity = t->ready = ft_now();
  w->suspect = 0;
  if (t->cancelled || sub != t->sub_next) {
    free(buf);
    return;
  }
  w->load--;
  t->sub_next++;
  if (t->slot < 2) ctx->rep.compute_s += tt.t1 - tt.t0;
  else ctx->rep.recompute_s += tt.t1 - tt.t0;
  ft_trace_add(ctx, FT_EV_COMPUTE, j->blk.id, sub, t->slot, t->worker, &tt);
  ft_sub *s = &j->sub[sub];
  s->last_in = t->ready;
  if (kerr) {
    if (!j->kernel_err) j->kernel_err = kerr;
    free(buf);
  } else if (s->res[t->slot] || s->state == SUB_DONE || s->state == SUB_FAILED) {
    free(buf);
  } else {
    s->res[t->slot] = buf;
    s->injected[t->slot] = (uint8_t)ninj;
  }
  if (t->sub_next >= t->sub_end) ft_task_retire(t);
  j->changed = 1;
  pthread_cond_broadcast(&j->cond);
}
