/*
 * progress.c - the writer's progress line under mpirun from every rank's
 * figures (progress.h).
 *
 * Rounds. Each rank's thread takes part in round k at k periods after its
 * own start (the context's creation, which every rank leaves at about the
 * same moment), so the ranks' contributions reach the writer together; a
 * rank that was stopped catches up by running the rounds it missed at
 * once (a non-writer's part of a reduce returns as soon as it has sent).
 * The vector is one slot of four int64 per rank (stage, done, total, steps
 * per tile), each rank filling its own: summed, it is every rank's figures.
 * The writer keeps the last figures of each rank and when it last answered,
 * so a rank late in a round keeps its old figures and is named.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "process.h"
#include "progress.h"

#include "coll.h"
#include "coll_live.h"

#ifdef TERRAFORT_HAVE_MPI
#include <mpi.h>
#endif

enum { SLOT = 4 }; /* stage, done, total, steps per tile */

static struct {
  int tried, on, show, n, rank;
  const char *cmd;
  tr_rank_progress board;
  coll_ctx *ctx;
  coll_ta_opts o;
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop;
  double t_start;
  /* the writer's view */
  int64_t *known;      /* n x SLOT: each rank's last figures */
  double *seen;        /* when each rank last answered */
  int64_t stage;       /* the stage of the last line (0: none yet) */
  double stage_t0;     /* when the writer first saw it */
  int64_t stage_done0; /* its steps done then */
  int64_t done_last;   /* the steps done at the last change */
  double moved_at;     /* when they last changed */
  double last_line;
  char last_late[256]; /* the late ranks of the last line */
} pg = {.mu = PTHREAD_MUTEX_INITIALIZER};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int64_t load(const int64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

/* "2 s", "1 min 5 s", "2 h 3 min" */
static void span(char *b, size_t n, double s) {
  if (s < 10)
    snprintf(b, n, "%.1f s", s);
  else if (s < 60)
    snprintf(b, n, "%.0f s", s);
  else if (s < 3600)
    snprintf(b, n, "%d min %d s", (int)(s / 60), (int)s % 60);
  else
    snprintf(b, n, "%d h %d min", (int)(s / 3600), (int)(s / 60) % 60);
}

/* The writer, after a round: takes the answers, prints a line when it is
 * time (the first figures, a new stage, other late ranks, or
 * TF_PROGRESS_LINE_MS since the last). catching_up: a round the thread
 * missed, run late (no line). */
static void writer_round(const int64_t *sum, const coll_ta_report *rep, int catching_up) {
  const double now = now_s();
  unsigned char *late = calloc((size_t)pg.n, 1);
  if (!late) return;
  for (int i = 0; i < rep->nlate && i < COLL_REPORT_MAX_LATE; i++)
    if (rep->late_ranks[i] >= 0 && rep->late_ranks[i] < pg.n) late[rep->late_ranks[i]] = 1;
  /* beyond the report's list (over 64 late): unknown, kept as they were */
  const int listed_all = rep->nlate <= COLL_REPORT_MAX_LATE;
  for (int r = 0; r < pg.n; r++) {
    if (late[r] || (!listed_all && r > rep->late_ranks[COLL_REPORT_MAX_LATE - 1])) continue;
    memcpy(&pg.known[r * SLOT], &sum[r * SLOT], SLOT * sizeof *sum);
    pg.seen[r] = now;
  }
  int64_t stage = 0;
  for (int r = 0; r < pg.n; r++)
    if (pg.known[r * SLOT] > stage) stage = pg.known[r * SLOT];
  int64_t done = 0, total = 0, per = 1;
  for (int r = 0; r < pg.n; r++)
    if (pg.known[r * SLOT] == stage) {
      done += pg.known[r * SLOT + 1];
      total += pg.known[r * SLOT + 2];
      if (pg.known[r * SLOT + 3] > per) per = pg.known[r * SLOT + 3];
    }
  char lates[256] = "";
  size_t len = 0;
  int named = 0;
  for (int r = 0; r < pg.n && len < sizeof lates - 40; r++) {
    if (!late[r]) continue;
    len += (size_t)snprintf(lates + len, sizeof lates - len, "%srank %d (no answer for %.1f s)", named ? ", " : "", r,
                            now - pg.seen[r]);
    named++;
  }
  if (rep->nlate > named && len < sizeof lates - 30)
    snprintf(lates + len, sizeof lates - len, " and %d more", rep->nlate - named);
  /* the late set, without its times: a change of it is news */
  char set[256] = "";
  for (int r = 0, l = 0; r < pg.n && l < (int)sizeof set - 12; r++)
    if (late[r]) l += snprintf(set + l, sizeof set - (size_t)l, "%d,", r);
  free(late);
  if (stage < 1) return; /* nobody has begun a run yet */
  const int new_stage = stage != pg.stage;
  if (new_stage) {
    pg.stage = stage;
    pg.stage_t0 = now;
    pg.stage_done0 = done;
  }
  if (new_stage || done != pg.done_last) {
    pg.done_last = done;
    pg.moved_at = now;
  }
  if (catching_up) return;
  if (!new_stage && !strcmp(set, pg.last_late) && now - pg.last_line < TF_PROGRESS_LINE_MS * 1e-3) return;
  snprintf(pg.last_late, sizeof pg.last_late, "%s", set);
  pg.last_line = now;
  char stg[32] = "", rate[96] = "";
  if (stage > 1) snprintf(stg, sizeof stg, "stage %lld: ", (long long)stage);
  const double dt = now - pg.stage_t0;
  if (now - pg.moved_at >= 2 * TF_PROGRESS_PERIOD_MS * 1e-3 && done < total) {
    /* an average over a stall would only shrink: say how long it stalls */
    snprintf(rate, sizeof rate, ", no step for %.1f s", now - pg.moved_at);
  } else if (dt >= 0.5 && done > pg.stage_done0 && done < total) {
    const double r = (double)(done - pg.stage_done0) / dt;
    char left[32];
    span(left, sizeof left, (double)(total - done) / r);
    snprintf(rate, sizeof rate, ", %.1f %s, about %s left", r, per > 1 ? "a second" : "tiles/s", left);
  }
  const int pct = total > 0 ? (int)(100.0 * (double)done / (double)total) : 0;
  fprintf(stderr, "terrafort %s: %s%d%% (%lld of %lld %s on %d ranks)%s%s%s\n", pg.cmd, stg, pct, (long long)done,
          (long long)total, per > 1 ? "tile loads and writes" : "tiles", pg.n, rate, lates[0] ? "; late: " : "", lates);
  fflush(stderr);
}

static void *loop(void *arg) {
  (void)arg;
  const int n = pg.n;
  int64_t *vec = calloc((size_t)n * SLOT, sizeof *vec), *sum = calloc((size_t)n * SLOT, sizeof *sum);
  const coll_op add = coll_op_builtin(COLL_SUM);
  const double period = TF_PROGRESS_PERIOD_MS * 1e-3;
  for (uint64_t k = 1; vec && sum; k++) {
    const double at = pg.t_start + (double)k * period;
    pthread_mutex_lock(&pg.mu);
    while (!pg.stop) {
      const double now = now_s();
      if (now >= at) break;
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      const double wait = at - now;
      ts.tv_sec += (time_t)wait;
      ts.tv_nsec += (long)((wait - (double)(time_t)wait) * 1e9);
      if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
      pthread_cond_timedwait(&pg.cv, &pg.mu, &ts);
    }
    const int stop = pg.stop;
    pthread_mutex_unlock(&pg.mu);
    if (stop) break;
    /* a rank lost, or this process giving up: no more MPI from here */
    coll_live *live = tf_live();
    if (coll_live_quiescent(live) || coll_live_lost(live, NULL) != -1) break;
    memset(vec, 0, (size_t)n * SLOT * sizeof *vec);
    int64_t *mine = &vec[pg.rank * SLOT];
    mine[0] = load(&pg.board.stage);
    mine[1] = load(&pg.board.done);
    mine[2] = load(&pg.board.total);
    mine[3] = load(&pg.board.steps_per_tile);
    coll_ta_report rep;
    if (coll_timeout_reduce(pg.ctx, vec, sum, (size_t)n * SLOT, COLL_INT64, &add, &pg.o, &rep) != COLL_OK) break;
    /* more than two rounds behind (this process was stopped): the rounds
     * it missed run at once, without lines */
    if (pg.rank == 0 && pg.show) writer_round(sum, &rep, now_s() > at + 2 * period);
  }
  free(vec);
  free(sum);
  return NULL;
}

int tf_progress_start(tr_run_opts *run, const char *cmd, int show, int arity) {
  /* a command of several runs asks once per run: one aggregation */
  if (pg.on) {
    run->rank_progress = &pg.board;
    return 1;
  }
  if (pg.tried || !tf_coll() || coll_ctx_size(tf_coll()) < 2) return 0;
  pg.tried = 1;
#ifdef TERRAFORT_HAVE_MPI
  int level = 0;
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_MULTIPLE) return 0; /* the thread would call MPI beside the command */
#endif
  pg.n = coll_ctx_size(tf_coll());
  pg.rank = coll_ctx_rank(tf_coll());
  coll_opts co;
  coll_opts_init(&co);
  co.live = tf_live();
  /* collective, bounded by the monitor: a rank lost here is found by the
   * command's first wait (exit 10) */
  if (coll_ctx_create_world(&pg.ctx, &co) != COLL_OK) return 0;
  coll_ta_opts_init(&pg.o);
  pg.o.arity = arity >= 2 && arity < pg.n - 1 ? arity : pg.n - 1;
  pg.o.root = 0;
  pg.o.tan_policy = COLL_TAN_ROOT;
  pg.o.root_only = 1;
  pg.o.snapshot = 1;
  pg.o.threshold_ms = TF_PROGRESS_THRESHOLD_MS;
  pg.o.deadline_ms = COLL_DEADLINE_MONITORED_MS;
  pg.known = calloc((size_t)pg.n * SLOT, sizeof *pg.known);
  pg.seen = calloc((size_t)pg.n, sizeof *pg.seen);
  pg.cmd = cmd;
  pg.show = show && pg.rank == 0;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&pg.cv, &ca);
  pthread_condattr_destroy(&ca);
  pg.t_start = now_s();
  for (int r = 0; r < pg.n && pg.seen; r++) pg.seen[r] = pg.t_start;
  if (!pg.known || !pg.seen || pthread_create(&pg.th, NULL, loop, NULL) != 0) {
    /* every rank made the context; this one only takes no part: the
     * writer names it late in every round */
    free(pg.known);
    free(pg.seen);
    pg.known = NULL;
    pg.seen = NULL;
    return 0;
  }
  pg.on = 1;
  run->rank_progress = &pg.board;
  return 1;
}

void tf_progress_stop(int rc) {
  if (pg.ctx && !pg.on) {
    coll_ctx_destroy(pg.ctx);
    pg.ctx = NULL;
  }
  if (!pg.on) return;
  pthread_mutex_lock(&pg.mu);
  pg.stop = 1;
  pthread_cond_signal(&pg.cv);
  pthread_mutex_unlock(&pg.mu);
  pthread_join(pg.th, NULL);
  pg.on = 0;
  coll_ctx_destroy(pg.ctx);
  pg.ctx = NULL;
  if (pg.show && rc == 0) {
    char took[32];
    span(took, sizeof took, now_s() - pg.t_start);
    fprintf(stderr, "terrafort %s: 100%% - done in %s on %d ranks.\n", pg.cmd, took, pg.n);
    fflush(stderr);
  }
  free(pg.known);
  free(pg.seen);
  pg.known = NULL;
  pg.seen = NULL;
}
