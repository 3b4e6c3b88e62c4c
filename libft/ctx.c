/*
 * ctx.c - the context: options, creation and destruction, error strings,
 * clocks, the report and the trace.
 */
#define _GNU_SOURCE /* sched_getcpu, for the trace */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
  o->timeout_ms = 60000;
}

void ft_opts_source_profile(ft_opts *o) {
  o->tolerance = 0.1;
  o->error_rate = 0.15;
}

int ft_split_rows(int64_t rows, int64_t row0[4], int64_t nrows[4]) {
  int n = rows >= 4 ? 4 : (int)(rows > 0 ? rows : 0);
  int64_t base = n ? rows / n : 0, rem = n ? rows % n : 0, r = 0;
  for (int i = 0; i < 4; i++) {
    row0[i] = r;
    nrows[i] = i < n ? base + (i < rem) : 0;
    r += nrows[i];
  }
  return n;
}

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

static void set_err(char *err, size_t len, const char *fmt, ...) {
  if (!err || !len) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, len, fmt, ap);
  va_end(ap);
}

const ft_kernel *ft_kernel_lookup(const ft_ctx *ctx, const char *name) {
  for (size_t i = 0; i < ctx->opts.n_kernels; i++)
    if (strcmp(ctx->kernels[i].name, name) == 0) return &ctx->kernels[i];
  return NULL;
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
  int rc;
  if (opts->mpi_comm) {
#ifdef TERRAFORT_HAVE_MPI
    ctx->opts.mpi_comm = opts->mpi_comm;
    rc = ft_mpi_create(ctx, err, errlen);
#else
    set_err(err, errlen, "ft: an MPI communicator was given but libft was built without MPI");
    rc = FT_ERR_NOMPI;
#endif
  } else {
    ctx->role = FT_ROLE_MASTER;
    int n = opts->workers;
    if (n == 0) {
      long c = sysconf(_SC_NPROCESSORS_ONLN);
      n = c > 2 ? (int)c : 2;
    }
    if (n < 2) {
      set_err(err, errlen, "ft: the thread back-end needs at least 2 workers (got %d)", n);
      rc = FT_ERR_INVAL;
    } else {
      ctx->nworkers = n;
      rc = ft_pool_start(ctx, err, errlen);
    }
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
  int abandoned = 0;
#ifdef TERRAFORT_HAVE_MPI
  if (ctx->mpi) ft_mpi_destroy(ctx);
  else
#endif
    abandoned = ft_pool_stop(ctx);
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
#ifdef TERRAFORT_HAVE_MPI
  return ft_mpi_serve(ctx);
#else
  return FT_ERR_NOMPI;
#endif
}

void ft_report_get(ft_ctx *ctx, ft_report *r) {
  pthread_mutex_lock(&ctx->lock);
  *r = ctx->rep;
  pthread_mutex_unlock(&ctx->lock);
}

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
