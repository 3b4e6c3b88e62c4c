/*
 * dual.c - the master side of dual-redundant execution (ft_run_block).
 *
 * The calling thread is the block's "master thread". It places replica P
 * (slot 0) and P' (slot 1) on two different workers; each replica is one task
 * that hands over sub-blocks B00..B03 in order (ft_deliver). The master
 * sleeps on the job's condition variable and, whenever something arrives,
 * looks for work:
 *   - a sub-block holding both replica results is compared (FAST: at once,
 *     while the replicas compute the next one; BASIC: only when all of the
 *     block's replica results are in);
 *   - agreement (r <= eps) accepts P's values into `out`; disagreement marks
 *     the sub-block for a vote and dispatches recompute attempt 2 to a worker
 *     other than both replicas' when one exists (it jumps that worker's queue);
 *   - a recompute result is compared with every earlier result of the
 *     sub-block; the lowest slot that agrees with another one wins (2 of 3);
 *     without a majority a further attempt is dispatched, up to
 *     max_recomputes, then the block fails with FT_ERR_FATAL.
 * Timeouts: a task whose worker has shown no activity for timeout_ms since
 * the task was dispatched is cancelled and its remaining sub-blocks are
 * dispatched, under the same slot, to another worker (a replica never to the
 * other replica's worker); the silent worker is chosen last from then on.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ft_internal.h"

static void task_cancel(ft_ctx *ctx, ft_task *t) {
  if (t->cancelled) return;
  t->cancelled = 1;
  ctx->workers[t->worker].load -= t->sub_end - t->sub_next;
  ft_task_retire(t);
}

/* Least-loaded worker not excluded by this job; workers a and b are taken
 * only when `strict` is 0 and nothing else is left; suspects come last. */
static int pick_worker(ft_ctx *ctx, ft_job *j, int a, int b, int strict) {
  int best = -1;
  double best_score = 0;
  int n = ctx->nworkers;
  for (int i = 0; i < n; i++) {
    int w = (int)(((uint64_t)j->blk.id + (uint64_t)i) % (uint64_t)n); /* spread ties */
    if (j->excluded[w]) continue;
    double score = ctx->workers[w].load;
    if (w == a || w == b) {
      if (strict) continue;
      score += 1e12;
    }
    if (ctx->workers[w].suspect) score += 1e9;
    if (best < 0 || score < best_score) {
      best = w;
      best_score = score;
    }
  }
  return best;
}

static ft_task *task_new(ft_ctx *ctx, ft_job *j, int slot, int s0, int s1, int worker,
                         int urgent) {
  ft_task *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->refs = 2; /* the job's live list and the back-end */
  t->job = j;
  j->refs++;
  t->id = ++ctx->next_task_id;
  t->slot = slot;
  t->urgent = urgent;
  t->sub_next = s0;
  t->sub_end = s1;
  t->worker = worker;
  t->live = 1;
  t->jnext = j->live;
  j->live = t;
  t->since = t->ready = ft_now();
  ctx->workers[worker].load += s1 - s0;
  ctx->backend->dispatch(ctx, t);
  return t;
}

/* ---- decisions ------------------------------------------------------------ */

static int64_t sub_cells(const ft_job *j, int s) { return j->nrows[s] * j->blk.cols; }

static int results_agree(const ft_ctx *ctx, const ft_job *j, int s, const void *a,
                         const void *b) {
  int64_t n = sub_cells(j, s);
  int64_t k = ft_compare_cells_exact(j->blk.out_type, j->blk.out_elem_size, a, b, n, ctx->opts.tolerance,
                                     ctx->opts.has_exact ? &ctx->opts.exact : NULL);
  if (ctx->opts.settle_cells) return k == 0;
  return !ft_rate_wrong(k, n, ctx->opts.error_rate);
}

/* Accepts slot a of sub-block s (lock held on entry and exit). */
static void accept_slot(ft_ctx *ctx, ft_job *j, int s, int a, void *out) {
  ft_sub *sb = &j->sub[s];
  for (int x = 0; x < sb->nslots; x++) {
    if (!sb->res[x] || !sb->injected[x]) continue;
    if (x == a || sb->agree[a][x] == 1) ctx->rep.tolerated += sb->injected[x];
    else {
      ctx->rep.detected += sb->injected[x];
      ctx->rep.corrected += sb->injected[x];
    }
    ctx->rep.injected += sb->injected[x];
  }
  sb->state = SUB_DONE;
  void *src = sb->res[a];
  size_t bytes = j->sub_bytes[s];
  pthread_mutex_unlock(&ctx->lock);
  memcpy((unsigned char *)out + (size_t)(j->row0[s] * j->blk.cols) * j->blk.out_elem_size, src,
         bytes);
  pthread_mutex_lock(&ctx->lock);
  for (int x = 0; x < FT_MAX_SLOTS; x++) {
    free(sb->res[x]);
    sb->res[x] = NULL;
  }
}

static int dispatch_recompute(ft_ctx *ctx, ft_job *j, int s) {
  ft_sub *sb = &j->sub[s];
  int w = pick_worker(ctx, j, j->rep_worker[0], j->rep_worker[1], 0);
  if (w < 0) return FT_ERR_TIMEOUT;
  int slot = sb->nslots++;
  if (!task_new(ctx, j, slot, s, s + 1, w, 1)) return FT_ERR_NOMEM;
  ctx->rep.recomputes++;
  return 0;
}

static int handle_timeout(ft_ctx *ctx, ft_job *j, ft_task *t, ft_status *st) {
  int slot = t->slot, s0 = t->sub_next, s1 = t->sub_end, old = t->worker;
  ctx->rep.timeouts++;
  if (st) st->timeouts++;
  ctx->workers[old].suspect = 1;
  j->excluded[old] = 1;
  task_cancel(ctx, t);
  int w = slot < 2 ? pick_worker(ctx, j, j->rep_worker[1 - slot], -1, 1)
                   : pick_worker(ctx, j, j->rep_worker[0], j->rep_worker[1], 0);
  if (w < 0) {
    if (st)
      snprintf(st->msg, sizeof st->msg,
               "block %" PRId64 ": worker %d timed out on %s and no other responsive worker "
               "is left for it",
               j->blk.id, old, slot < 2 ? "a replica" : "a recompute");
    return FT_ERR_TIMEOUT;
  }
  if (!task_new(ctx, j, slot, s0, s1, w, slot >= 2)) return FT_ERR_NOMEM;
  if (slot < 2) j->rep_worker[slot] = w;
  ctx->rep.redispatches++;
  return 0;
}

/* ---- the entry point -------------------------------------------------------- */

static int check_block(const ft_block *b) {
  if (!b || b->rows <= 0 || b->cols <= 0 || b->halo < 0 || !b->in ||
      b->in_stride < b->cols + 2 * b->halo || b->in_elem_size == 0 || b->out_elem_size == 0)
    return 0;
  if (b->out_type == FT_TYPE_F32) return b->out_elem_size == 4;
  if (b->out_type == FT_TYPE_F64) return b->out_elem_size == 8;
  return b->out_type == FT_TYPE_BYTES;
}

int ft_run_block(ft_ctx *ctx, const ft_kernel *k, const void *kctx, size_t kctx_size,
                 const ft_block *blk, void *out, ft_status *st) {
  if (st) {
    memset(st, 0, sizeof *st);
    st->failed_sub = -1;
  }
  if (!ctx || !k || !k->fn || !k->name || !out || (kctx_size && !kctx) || !check_block(blk)) {
    if (st) snprintf(st->msg, sizeof st->msg, "ft_run_block: invalid argument");
    return FT_ERR_INVAL;
  }
  if (ctx->role != FT_ROLE_MASTER) return FT_ERR_ROLE;
  if (ctx->backend->by_name && !ft_kernel_lookup(ctx, k->name)) {
    if (st) snprintf(st->msg, sizeof st->msg, "kernel '%s' is not registered", k->name);
    return FT_ERR_UNKNOWN_KERNEL;
  }
  ft_job *j = calloc(1, sizeof *j);
  if (!j) return FT_ERR_NOMEM;
  j->excluded = calloc((size_t)ctx->nworkers, 1);
  if (!j->excluded) {
    free(j);
    return FT_ERR_NOMEM;
  }
  j->refs = 1;
  ft_cond_init_mono(&j->cond);
  j->ctx = ctx;
  j->fn = k->fn;
  j->kname = k->name;
  j->kctx = kctx;
  j->kctx_size = kctx_size;
  j->blk = *blk;
  if (!ctx->backend->by_name) {
    /* threads: the second replica reads its own copy of the window */
    const int64_t wr = blk->rows + 2 * blk->halo, wc = blk->cols + 2 * blk->halo;
    const size_t es = blk->in_elem_size;
    unsigned char *c = malloc((size_t)(wr * wc) * es);
    if (!c) {
      free(j->excluded);
      pthread_cond_destroy(&j->cond);
      free(j);
      return FT_ERR_NOMEM;
    }
    for (int64_t r = 0; r < wr; r++)
      memcpy(c + (size_t)(r * wc) * es, (const unsigned char *)blk->in + (size_t)(r * blk->in_stride) * es,
             (size_t)wc * es);
    j->in_copy = c;
  }
  j->nsub = ft_split_rows(blk->rows, j->row0, j->nrows);
  for (int s = 0; s < j->nsub; s++) {
    j->sub_bytes[s] = (size_t)(j->nrows[s] * blk->cols) * blk->out_elem_size;
    memset(j->sub[s].agree, -1, sizeof j->sub[s].agree);
    j->sub[s].nslots = 2;
    j->sub[s].judged = 1;
  }
  const int basic = ctx->opts.mode == FT_MODE_DUAL_BASIC;
  const double timeout = ctx->opts.timeout_ms / 1000.0;
  int rc = 0;

  pthread_mutex_lock(&ctx->lock);
  ctx->rep.blocks++;
  ctx->rep.sub_blocks += j->nsub;
  int w0 = pick_worker(ctx, j, -1, -1, 1);
  int w1 = w0 < 0 ? -1 : pick_worker(ctx, j, w0, -1, 1);
  if (w1 < 0) {
    rc = FT_ERR_TIMEOUT;
    if (st) snprintf(st->msg, sizeof st->msg, "block %" PRId64 ": fewer than 2 workers", blk->id);
  } else {
    j->rep_worker[0] = w0;
    j->rep_worker[1] = w1;
    if (!task_new(ctx, j, 0, 0, j->nsub, w0, 0) || !task_new(ctx, j, 1, 0, j->nsub, w1, 0))
      rc = FT_ERR_NOMEM;
  }
  while (rc == 0) {
    j->changed = 0;
    if (j->kernel_err) {
      rc = FT_ERR_KERNEL;
      if (st)
        snprintf(st->msg, sizeof st->msg, "block %" PRId64 ": kernel '%s' failed with code %d",
                 blk->id, k->name, j->kernel_err);
      break;
    }
    int all_in = 1, all_done = 1, acted = 0;
    for (int s = 0; s < j->nsub; s++) {
      ft_sub *sb = &j->sub[s];
      if (sb->state == SUB_WAIT && !(sb->res[0] && sb->res[1])) all_in = 0;
      if (sb->state != SUB_DONE) all_done = 0;
    }
    if (all_done) break;
    for (int s = 0; s < j->nsub && !acted && rc == 0; s++) {
      ft_sub *sb = &j->sub[s];
      if (sb->state == SUB_WAIT && sb->res[0] && sb->res[1] && (!basic || all_in)) {
        acted = 1;
        pthread_mutex_unlock(&ctx->lock);
        double c0 = ft_trace_cpu(ctx), t0 = ft_now();
        int ok = results_agree(ctx, j, s, sb->res[0], sb->res[1]);
        int exact = ok && memcmp(sb->res[0], sb->res[1], j->sub_bytes[s]) == 0;
        double t1 = ft_now(), cpu = ft_trace_cpu(ctx) - c0;
        pthread_mutex_lock(&ctx->lock);
        ctx->rep.detect_s += t1 - t0;
        ft_trace_add(ctx, FT_EV_COMPARE, blk->id, s, 1, -1,
                     &(ft_trace_times){t0, t1, sb->last_in, cpu, -1.0, -1, -1});
        sb->agree[0][1] = sb->agree[1][0] = (int8_t)ok;
        if (ok) {
          if (!exact) ctx->rep.tolerated_sub_blocks++;
          accept_slot(ctx, j, s, 0, out);
        } else {
          ctx->rep.mismatches++;
          sb->state = SUB_VOTE;
          rc = dispatch_recompute(ctx, j, s);
          if (st) st->recomputes++;
        }
      } else if (sb->state == SUB_VOTE && sb->res[sb->nslots - 1] && sb->judged < sb->nslots - 1) {
        acted = 1;
        int x = sb->nslots - 1;
        pthread_mutex_unlock(&ctx->lock);
        double c0 = ft_trace_cpu(ctx), t0 = ft_now();
        for (int y = 0; y < x; y++)
          if (sb->res[y])
            sb->agree[x][y] = sb->agree[y][x] = (int8_t)results_agree(ctx, j, s, sb->res[x], sb->res[y]);
        double t1 = ft_now(), cpu = ft_trace_cpu(ctx) - c0;
        pthread_mutex_lock(&ctx->lock);
        sb->judged = x;
        ctx->rep.votes++;
        ctx->rep.detect_s += t1 - t0;
        ft_trace_add(ctx, FT_EV_VOTE, blk->id, s, x, -1,
                     &(ft_trace_times){t0, t1, sb->last_in, cpu, -1.0, -1, -1});
        int win = -1;
        for (int a = 0; a <= x && win < 0; a++)
          for (int b = a + 1; b <= x; b++)
            if (sb->res[a] && sb->res[b] && sb->agree[a][b] == 1) {
              win = a;
              break;
            }
        if (win >= 0) {
          accept_slot(ctx, j, s, win, out);
        } else if (x - 1 < ctx->opts.max_recomputes) {
          rc = dispatch_recompute(ctx, j, s);
          if (st) st->recomputes++;
        } else {
          sb->state = SUB_FAILED;
          ctx->rep.failed_sub_blocks++;
          for (int y = 0; y <= x; y++)
            if (sb->res[y] && sb->injected[y]) {
              ctx->rep.injected += sb->injected[y];
              ctx->rep.detected += sb->injected[y];
              ctx->rep.fatal += sb->injected[y];
            }
          rc = FT_ERR_FATAL;
          if (st) {
            st->failed_sub = s;
            snprintf(st->msg, sizeof st->msg,
                     "block %" PRId64 " sub-block B0%d: no two of %d results agreed after %d "
                     "recomputes",
                     blk->id, s, x + 1, ctx->opts.max_recomputes);
          }
        }
      }
    }
    if (acted || rc) continue;
    /* nothing to decide: look for silent workers, then sleep */
    double now = ft_now(), next = now + timeout;
    for (ft_task *t = j->live, *tn; t && rc == 0; t = tn) {
      tn = t->jnext;
      double last = ctx->workers[t->worker].last_activity;
      double dl = (last > t->since ? last : t->since) + timeout;
      if (now >= dl) {
        rc = handle_timeout(ctx, j, t, st);
        tn = j->live; /* the list changed */
        now = ft_now();
        next = now + timeout;
      } else if (dl < next) {
        next = dl;
      }
    }
    /* under MPI the caller may give up (a rank lost, a signal): look often */
    if (rc == 0 && ctx->opts.give_up) {
      if (ctx->opts.give_up(ctx->opts.give_up_user)) {
        rc = FT_ERR_MPI;
        if (st) snprintf(st->msg, sizeof st->msg, "block %" PRId64 ": abandoned (a rank was lost or the run cancelled)", blk->id);
        break;
      }
      if (next > now + 0.05) next = now + 0.05;
    }
    if (rc == 0 && !j->changed) ft_cond_wait_until(&j->cond, &ctx->lock, next);
  }
  while (j->live) task_cancel(ctx, j->live);
  while (j->active > 0) pthread_cond_wait(&j->cond, &ctx->lock);
  ft_job_unref(j);
  pthread_mutex_unlock(&ctx->lock);
  if (rc && st && !st->msg[0])
    snprintf(st->msg, sizeof st->msg, "block %" PRId64 ": %s", blk->id, ft_strerror(rc));
  return rc;
}
