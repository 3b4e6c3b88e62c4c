/*
 * ctx.c - the context: options, creation and destruction, error strings
 * and the report.
 *
 * The context is the top of libft's file graph: at creation it picks its
 * back-end's table (ft_backend: pool.c's threads or mpi.c's ranks) and from
 * then on the context and the master (dual.c) reach the back-end only
 * through that table. Nothing below calls back up into this file: clocks
 * (clock.c), the trace (trace.c), the sub-block split (split.c) and kernel
 * lookup (kernels.c) are files of their own that the back-ends call.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ft_internal.h"

const char *ft_strerror(int code) {
  switch (code) {
    case FT_OK: return "success";
    case FT_ERR_INVAL: return "invalid argument";
    case FT_ERR_NOMEM: return "out of memory";
    case FT_ERR_FATAL: return "sub-block could not be agreed after the maximum number of recomputes";
    case FT_ERR_TIMEOUT: return "work timed out and no responsive worker was left";
    case FT_ERR_KERNEL: return "kernel reported an error";
    case FT_ERR_NOMPI: return "MPI back-end requested but libft was built without MPI";
    case FT_ERR_MPI: return "MPI error or MPI not usable";
    case FT_ERR_UNKNOWN_KERNEL: return "kernel not registered in ft_opts.kernels";
    case FT_ERR_ROLE: return "call not valid for this rank's role";
    case FT_ERR_THREAD: return "could not create a thread";
    case FT_ERR_LIMIT: return "more errors detected than the error limit allows";
    case FT_ERR_NOREPLAY: return "no relaunch set or checkpoint can repair the error";
    default: return "unknown error";
  }
}

void ft_opts_init(ft_opts *o) {
  memset(o, 0, sizeof *o);
  o->mode = FT_MODE_DUAL_FAST;
  o->max_recomputes = 3;
  o->timeout_ms = FT_TIMEOUT_DEFAULT_MS;
}

void ft_opts_source_profile(ft_opts *o) {
  o->tolerance = 0.1;
  o->error_rate = 0.15;
}

static void set_err(char *err, size_t len, const char *fmt, ...) {
  if (!err || !len) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, len, fmt, ap);
  va_end(ap);
}

int ft_ctx_create(const ft_opts *opts, ft_ctx **out, char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (!out) return FT_ERR_INVAL;
  *out = NULL;
  ft_opts def;
  if (!opts) {
    ft_opts_init(&def);
    opts = &def;
  }
  if ((opts->mode != FT_MODE_DUAL_FAST && opts->mode != FT_MODE_DUAL_BASIC) ||
      !(opts->tolerance >= 0.0) || !(opts->error_rate >= 0.0) || opts->error_rate > 1.0 ||
      opts->max_recomputes < 1 || opts->max_recomputes > FT_MAX_SLOTS - 2 ||
      opts->timeout_ms <= 0 || opts->workers < 0 || (opts->n_kernels && !opts->kernels) ||
      opts->inject.n_exact < 0 || opts->inject.n_exact > FT_INJECT_MAX_EXACT ||
      opts->inject.flip_p < 0 || opts->inject.flip_input_p < 0) {
    set_err(err, errlen, "ft: invalid options (mode, tolerance >= 0, 0 <= error rate <= 1, "
                         "1 <= max_recomputes <= %d, timeout > 0)", FT_MAX_SLOTS - 2);
    return FT_ERR_INVAL;
  }
  for (size_t i = 0; i < opts->n_kernels; i++) {
    if (!opts->kernels[i].name || !opts->kernels[i].fn) {
      set_err(err, errlen, "ft: kernel %zu of the registry has no name or function", i);
      return FT_ERR_INVAL;
    }
    for (size_t j = 0; j < i; j++)
      if (strcmp(opts->kernels[i].name, opts->kernels[j].name) == 0) {
        set_err(err, errlen, "ft: kernel name '%s' registered twice", opts->kernels[i].name);
        return FT_ERR_INVAL;
      }
  }
  ft_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return FT_ERR_NOMEM;
  ctx->opts = *opts;
  ctx->opts.mpi_comm = NULL; /* the MPI back-end keeps its own duplicate */
  pthread_mutex_init(&ctx->lock, NULL);
  if (opts->n_kernels) {
    ctx->kernels = calloc(opts->n_kernels, sizeof *ctx->kernels);
    if (!ctx->kernels) goto nomem;
    memcpy(ctx->kernels, opts->kernels, opts->n_kernels * sizeof *ctx->kernels);
    ctx->opts.kernels = ctx->kernels;
  }
  if (opts->trace_capacity) {
    ctx->trace = calloc(opts->trace_capacity, sizeof *ctx->trace);
    if (!ctx->trace) goto nomem;
  }
  /* the back-end's table: from here on nothing names pool.c or mpi.c */
  int rc;
  if (opts->mpi_comm) {
#ifdef TERRAFORT_HAVE_MPI
    ctx->opts.mpi_comm = opts->mpi_comm;
    ctx->backend = &ft_backend_mpi;
    rc = ctx->backend->start(ctx, err, errlen);
#else
    set_err(err, errlen, "ft: an MPI communicator was given but libft was built without MPI");
    rc = FT_ERR_NOMPI;
#endif
  } else {
    ctx->backend = &ft_backend_threads;
    rc = ctx->backend->start(ctx, err, errlen);
  }
  if (rc < 0) {
    free(ctx->kernels);
    free(ctx->trace);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    return rc;
  }
  *out = ctx;
  return 0;
nomem:
  free(ctx->kernels);
  free(ctx->trace);
  pthread_mutex_destroy(&ctx->lock);
  free(ctx);
  set_err(err, errlen, "ft: out of memory creating the context");
  return FT_ERR_NOMEM;
}

void ft_ctx_destroy(ft_ctx *ctx) {
  if (!ctx) return;
  const int abandoned = ctx->backend->stop(ctx);
  if (abandoned) return; /* a hung worker still holds the context: leave it to it */
  free(ctx->kernels);
  free(ctx->trace);
  pthread_mutex_destroy(&ctx->lock);
  free(ctx);
}

ft_role ft_ctx_role(const ft_ctx *ctx) { return ctx->role; }
int ft_ctx_workers(const ft_ctx *ctx) { return ctx->nworkers; }

int ft_serve(ft_ctx *ctx) {
  if (!ctx) return FT_ERR_INVAL;
  if (ctx->role != FT_ROLE_WORKER) return FT_ERR_ROLE;
  /* only a back-end of worker processes makes a context a worker */
  return ctx->backend->serve ? ctx->backend->serve(ctx) : FT_ERR_NOMPI;
}

void ft_report_get(ft_ctx *ctx, ft_report *r) {
  pthread_mutex_lock(&ctx->lock);
  *r = ctx->rep;
  pthread_mutex_unlock(&ctx->lock);
}
