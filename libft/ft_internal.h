/*
 * ft_internal.h - the shared state of libft's parts; never installed.
 *
 * Everything mutable lives under one mutex per context (ctx->lock): the
 * jobs (one per ft_run_block call), their tasks (a piece of work placed on
 * one worker), the workers' bookkeeping and the report. Computing and
 * comparing happen outside the lock on buffers that only one party owns at a
 * time: a worker computes into a buffer of its own and hands it to the job
 * under the lock (ft_deliver); from then on only the job's master reads it.
 *
 * Lifetimes: a job is referenced by its master and by each of its tasks; a
 * task by its job's live list and by the back-end (a worker queue, or the
 * MPI progress thread's pending list). Caller memory (blk->in, kctx) is read
 * only while job->active > 0, and the master waits for active == 0 after
 * cancelling its tasks, so no late worker reads it after ft_run_block returns.
 */
#ifndef FT_INTERNAL_H
#define FT_INTERNAL_H

#include <pthread.h>

#include "ft.h"

#define FT_MAX_SLOTS 16 /* 2 replicas + up to 14 recompute attempts */
#define FT_MAX_SUB 4

typedef struct ft_job ft_job;
typedef struct ft_task ft_task;

struct ft_task {
  int refs;
  ft_job *job;
  uint64_t id;
  int slot;            /* 0/1 replica, 2+k recompute attempt k */
  int urgent;          /* a recompute: runs before queued replica work */
  int sub_next, sub_end; /* sub-blocks [sub_next, sub_end) still to hand over */
  int worker;
  int cancelled;
  int live;            /* still on the job's live list */
  double since;        /* dispatch time, for the timeout */
  double ready;        /* trace: dispatch or last hand-over time */
  ft_task *qnext;      /* back-end queue link */
  ft_task *jnext;      /* job live-list link */
};

typedef enum { SUB_WAIT = 0, SUB_VOTE, SUB_DONE, SUB_FAILED } ft_sub_state;

typedef struct ft_sub {
  void *res[FT_MAX_SLOTS];
  uint8_t injected[FT_MAX_SLOTS];
  int8_t agree[FT_MAX_SLOTS][FT_MAX_SLOTS]; /* -1 unknown, 0/1 */
  int nslots;          /* slots used so far (2 + recompute attempts) */
  int judged;          /* highest slot already weighed */
  double last_in;      /* trace: when its latest result was handed over */
  ft_sub_state state;
} ft_sub;

struct ft_job {
  int refs;
  int active;          /* workers currently reading caller memory */
  pthread_cond_t cond;
  struct ft_ctx *ctx;
  ft_kernel_fn fn;
  const char *kname;
  const void *kctx;
  size_t kctx_size;
  ft_block blk;
  int nsub;
  int64_t row0[FT_MAX_SUB], nrows[FT_MAX_SUB];
  size_t sub_bytes[FT_MAX_SUB];
  ft_sub sub[FT_MAX_SUB];
  ft_task *live;       /* tasks not finished or cancelled */
  int rep_worker[2];   /* current worker of each replica */
  uint8_t *excluded;   /* workers that timed out on this job */
  int kernel_err;      /* first kernel error reported, 0 if none */
  /* threads: the window the second replica (and odd recomputes) read, a
   * copy made at submission, so the two replicas never share an input
   * buffer (a fault in one is then a disagreement); NULL under MPI, where
   * every worker rank receives a copy of its own */
  void *in_copy;
  int changed;         /* something was delivered since the master looked */
};

typedef struct ft_worker {
  double last_activity;
  int suspect;         /* timed out recently; chosen last */
  int load;            /* sub-block computations queued or running */
  /* thread back-end */
  pthread_t thread;
  int started;
  pthread_cond_t cond;
  ft_task *urgent_head, *urgent_tail;
  ft_task *normal_head, *normal_tail;
  int64_t nresults;
  double run_delay;    /* trace: run-queue delay at its last hand-over */
  int dead;
  int index;
  struct ft_ctx *ctx;
} ft_worker;

typedef struct ft_mpi ft_mpi; /* mpi.c */

/* A back-end: where tasks run (pool.c: threads; mpi.c: ranks). The context
 * holds its row and calls it only through these pointers, so the context
 * and the master never name a back-end's functions and a back-end can call
 * down into the job layer (job.c) without a circle of files. */
typedef struct ft_backend {
  const char *name;
  /* Makes the workers (sets role, nworkers, workers); on failure leaves
   * nothing of itself behind. */
  int (*start)(struct ft_ctx *ctx, char *err, size_t errlen);
  /* Ends them; 1 when one had to be abandoned (the context must then not be
   * freed). */
  int (*stop)(struct ft_ctx *ctx);
  /* Places task t on worker t->worker (lock held). */
  void (*dispatch)(struct ft_ctx *ctx, ft_task *t);
  /* A worker process's loop (ft_serve); NULL when every worker is a thread
   * of the master. */
  int (*serve)(struct ft_ctx *ctx);
  /* Kernels reach the workers by name, so ft_run_block refuses one that is
   * not in the registry. */
  int by_name;
} ft_backend;

extern const ft_backend ft_backend_threads; /* pool.c */
#ifdef TERRAFORT_HAVE_MPI
extern const ft_backend ft_backend_mpi; /* mpi.c */
#endif

struct ft_ctx {
  ft_opts opts;
  ft_role role;
  int nworkers;
  ft_worker *workers;
  pthread_mutex_t lock;
  int shutdown;
  uint64_t next_task_id;
  ft_report rep;
  ft_event *trace;
  size_t trace_n;
  ft_kernel *kernels;  /* copy of the registry */
  const ft_backend *backend; /* chosen at creation */
  ft_mpi *mpi;         /* the MPI back-end's state; NULL for the thread back-end */
};

/* clock.c */
double ft_now(void);
void ft_cond_init_mono(pthread_cond_t *c);
/* Waits on c until signalled or `deadline` (ft_now() seconds). */
void ft_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m, double deadline);

/* trace.c */
typedef struct ft_trace_times {
  double t0, t1, ready, cpu_s, core_wait_s;
  int cpu_at, cpu_end;
} ft_trace_times;
/* The CPU the calling thread runs on when ctx keeps a trace; -1 otherwise. */
int ft_trace_on_cpu(const struct ft_ctx *ctx);
void ft_trace_add(struct ft_ctx *ctx, ft_event_kind kind, int64_t block, int sub, int slot,
                  int worker, const ft_trace_times *tt);
/* CPU time of the calling thread in seconds, only when ctx keeps a trace
 * (0 otherwise: the untraced path makes no extra clock call). */
double ft_trace_cpu(const struct ft_ctx *ctx);
/* Run-queue delay of the calling thread so far in seconds when ctx keeps a
 * trace and the kernel reports it; -1 otherwise. */
double ft_trace_run_delay(const struct ft_ctx *ctx);

/* kernels.c: the registered kernel of that name, NULL if none. */
const ft_kernel *ft_kernel_lookup(const struct ft_ctx *ctx, const char *name);

/* job.c (ctx lock held) */
void ft_task_unref(ft_task *t);
void ft_job_unref(ft_job *j);
/* Takes a task off its job's live list (once; later calls do nothing). */
void ft_task_retire(ft_task *t);

/* inject.c: computes sub-block `sub` of blk for result `slot`, applying the
 * injector's data faults; *ninj gets the number of faults injected.
 * Returns the kernel's code. */
int ft_compute_sub(ft_kernel_fn fn, const void *kctx, const ft_block *blk, int sub,
                   int slot, const ft_inject *inj, void *out, int *ninj);
/* Stall/kill decisions for a worker's n-th result. */
int ft_inject_stall_ms(const ft_inject *inj, int worker, int64_t n);
int ft_inject_killed(const ft_inject *inj, int worker, int64_t n);

/* job.c: hands a computed result to its job (lock held). Takes ownership of
 * buf. tt: when the worker computed it (t0, t1) and, for the trace, the CPU
 * time it used meanwhile and its wait for a core (-1 unknown); `ready` is
 * filled in here. */
void ft_deliver(struct ft_ctx *ctx, ft_task *t, int sub, void *buf, int ninj, int kerr,
                ft_trace_times tt);

#endif
