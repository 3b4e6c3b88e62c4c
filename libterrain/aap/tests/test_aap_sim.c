/*
 * test_aap_sim.c - the virtual-clock simulator reproduces the timeline of the source's
 * Figure 1, and the engine's layout/argument checks.
 *
 * Figure 1: three workers; P1 and P2 take 3 time units per round, P3 takes 6; a message
 * takes 1. The graph is connected all-to-all: on a 2 x 2 grid, P1 = cell (0,0), P2 = cell
 * (0,1), P3 = the bottom row, so each fragment's halo holds the others' cells. The
 * program (fig_*) emits all its cells every round (value = its round index, f_aggr = max)
 * for K rounds, and records the smallest value in each snapshot it reads: 1 means the
 * newest round-1 values of both fast workers, 0 means stale PEval values.
 *
 * Rules (aap_schedule.c): r = completed rounds (PEval is round 0); a round needs >= 1
 * buffered batch; events at time t are round ends, then arrivals, then decisions in
 * worker order.
 *
 * BSP (DS = inf while r_i > r_min or a batch is in flight to i). All PEval at 0; P1, P2
 * end at 3, their batches land at 4, but r_min = 0 while P3 runs. P3 ends at 6 with the
 * round-0 batches of P1, P2 in hand and nothing in flight to it: starts at 6. P1, P2 wait
 * for P3's batch (lands 7): start at 7. P1, P2 end at 10 and are held (P3, r = 1, runs);
 * P3 ends at 12, starts again at 12 (their batches landed at 11), P1, P2 at 13, ...
 * => P3 starts 0, 6, 12, 18; P1, P2 start 0, 7, 13, 19: supersteps of 6, the slowest
 * worker's round, each fast superstep offset by the message latency.
 *
 * SSP(1) (DS = inf while r_i - r_min > 1). P1: PEval 0-3; at 4 (P2's batch, r 1 - r_min 0
 * = 1) runs 4-7; at 7 (P3's batch lands, 2 - 1 = 1) runs 7-10; at 10, 3 - 1 = 2: held
 * until P3 ends its round 2 at 12; runs 12-15; held again until P3 ends round 3 at 18;
 * then 24. P3: 0, 6, 12, 18, 24. From t = 12 on all three start together every 6 units:
 * BSP-like, as the source says; P1, P2 cannot start their 4th and 5th rounds until P3
 * completes its 2nd and 3rd.
 *
 * AP (DS = 0): P3 starts its second round at 6 as soon as it ends, on the stale round-0
 * values of P1 and P2 (snapshot minimum 0), although their round-1 values land at 8.
 *
 * AAP (ds_max = 10, L in [1, 8]). At 4, P1 holds 1 batch (P2's) and expects L_1 = 2
 * (P2 and P3 ran during its PEval); the only neighbour with a newer round under way is P3,
 * whose round time is still unknown, so nothing is waited for: DS = 0, P1 (and P2) run
 * 4-7. At 6, P3 holds 2 batches but expects L_3 = 4 (4 neighbour rounds overlapped its
 * PEval: P1 and P2 rounds 0 and 1); P1 and P2 are running round 1, started at 4 with
 * moving-average round time 3 and latency 1: their batches are predicted at 4 + 3 + 1 = 8,
 * so DS = 8 - 6 = 2: P3 starts its next round at t = 8 with the fast workers' newest
 * (round-1) values, snapshot minimum 1. At 7 P1 ends, holds P3's batch (1 < L_1 = 2) and
 * waits for P2's round-1 batch, predicted at 7 + 1 = 8: P1, P2 start at 8.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aap_internal.h"
#include "tr_test.h"

#define K 8
#define MAXT 64

typedef struct {
  int rounds;
  int minseen[K + 4];
  int nseen[K + 4];
} fig_state;

static int fig_emit_all(const tr_aap_frag *f, tr_aap_round *rd) {
  int32_t v = (int32_t)tr_aap_round_index(rd);
  if (v >= K) return 0;
  for (int64_t r = f->row0; r < f->row0 + f->rows; r++)
    for (int64_t c = f->col0; c < f->col0 + f->cols; c++)
      if (tr_aap_emit(rd, r * 2 + c, &v)) return -1;
  return 0;
}

static int fig_peval(void *u, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  (void)u;
  fig_state *s = calloc(1, sizeof *s);
  if (!s) return -1;
  *state = s;
  s->rounds = 1;
  return fig_emit_all(f, rd);
}

static int fig_inceval(void *u, const tr_aap_frag *f, void *state, int64_t n, const int64_t *cells,
                       const void *values, tr_aap_round *rd) {
  (void)u;
  (void)cells;
  fig_state *s = state;
  int64_t k = tr_aap_round_index(rd);
  const int32_t *v = values;
  int mn = 1 << 30;
  for (int64_t i = 0; i < n; i++) mn = v[i] < mn ? v[i] : mn;
  if (k < K + 4) {
    s->minseen[k] = mn;
    s->nseen[k] = (int)n;
  }
  s->rounds++;
  return fig_emit_all(f, rd);
}

static int fig_max(void *u, void *acc, const void *val) {
  (void)u;
  int32_t a, b;
  memcpy(&a, acc, 4);
  memcpy(&b, val, 4);
  if (b > a) {
    memcpy(acc, &b, 4);
    return 1;
  }
  return 0;
}

typedef struct {
  double start[3][MAXT];
  int n[3];
  int minseen[3][K + 4];
  int nseen[3][K + 4];
} fig_record;

static int fig_assemble(void *u, const tr_aap_frag *f, void *state) {
  fig_record *rec = u;
  fig_state *s = state;
  memcpy(rec->minseen[f->id], s->minseen, sizeof s->minseen);
  memcpy(rec->nseen[f->id], s->nseen, sizeof s->nseen);
  return 0;
}

static void fig_destroy(void *u, void *state) {
  (void)u;
  free(state);
}

static void fig_trace(void *u, const tr_aap_trace *t) {
  fig_record *rec = u;
  if (rec->n[t->worker] < MAXT) rec->start[t->worker][rec->n[t->worker]++] = t->start;
}

static int run_figure1(tr_aap_schedule s, int c, fig_record *rec, tr_aap_stats *st) {
  memset(rec, 0, sizeof *rec);
  tr_aap_frag fr[3] = {{0, 0, 0, 1, 1}, {0, 0, 1, 1, 1}, {0, 1, 0, 1, 2}};
  tr_aap_layout L;
  if (tr_aap_layout_rects(&L, 2, 2, 3, fr)) return -1;
  tr_aap_program p = {4, rec, fig_peval, fig_inceval, fig_assemble, fig_destroy, fig_max, NULL, 0};
  tr_aap_opts o;
  tr_aap_opts_default(&o);
  o.schedule = s;
  o.staleness = c;
  o.ds_max = 10;
  double rt[3] = {3, 3, 6};
  tr_aap_sim_opts so = {0};
  so.workers = 3;
  so.round_time = rt;
  so.latency = 1;
  so.trace = fig_trace;
  so.trace_user = rec;
  char err[200] = "";
  int rc = tr_aap_run_sim(&p, &L, &o, &so, st, err, sizeof err);
  if (rc) fprintf(stderr, "sim: %s\n", err);
  tr_aap_layout_free(&L);
  return rc;
}

static int starts_are(const fig_record *rec, int w, const double *want, int n) {
  if (rec->n[w] < n) {
    fprintf(stderr, "worker %d ran %d rounds, want >= %d\n", w, rec->n[w], n);
    return 0;
  }
  for (int i = 0; i < n; i++)
    if (rec->start[w][i] != want[i]) {
      fprintf(stderr, "worker %d round %d starts at %g, want %g\n", w, i, rec->start[w][i], want[i]);
      return 0;
    }
  return 1;
}

static int test_figure1_bsp(void) {
  fig_record rec;
  ASSERT_EQ_INT(run_figure1(TR_AAP_SCHED_BSP, 0, &rec, NULL), 0);
  double p3[] = {0, 6, 12, 18, 24}, p12[] = {0, 7, 13, 19, 25};
  ASSERT(starts_are(&rec, 2, p3, 5));
  ASSERT(starts_are(&rec, 0, p12, 5));
  ASSERT(starts_are(&rec, 1, p12, 5));
  return 0;
}

static int test_figure1_ssp1(void) {
  fig_record rec;
  ASSERT_EQ_INT(run_figure1(TR_AAP_SCHED_SSP, 1, &rec, NULL), 0);
  double p12[] = {0, 4, 7, 12, 18, 24}, p3[] = {0, 6, 12, 18, 24};
  ASSERT(starts_are(&rec, 0, p12, 6));
  ASSERT(starts_are(&rec, 1, p12, 6));
  ASSERT(starts_are(&rec, 2, p3, 5));
  return 0;
}

static int test_figure1_ap_stale(void) {
  fig_record rec;
  ASSERT_EQ_INT(run_figure1(TR_AAP_SCHED_AP, 0, &rec, NULL), 0);
  ASSERT(rec.n[2] >= 2);
  ASSERT_EQ_INT(rec.start[2][1], 6);
  ASSERT_EQ_INT(rec.minseen[2][1], 0); /* stale: the fast workers' PEval values */
  return 0;
}

static int test_figure1_aap(void) {
  fig_record rec;
  tr_aap_stats st;
  ASSERT_EQ_INT(run_figure1(TR_AAP_SCHED_AAP, -1, &rec, &st), 0);
  double p3[] = {0, 8}, p12[] = {0, 4, 8};
  ASSERT(starts_are(&rec, 2, p3, 2));
  ASSERT(starts_are(&rec, 0, p12, 3));
  ASSERT(starts_are(&rec, 1, p12, 3));
  ASSERT_EQ_INT(rec.nseen[2][1], 2);   /* one cell of P1, one of P2 */
  ASSERT_EQ_INT(rec.minseen[2][1], 1); /* both are their newest, round-1, values */
  ASSERT(st.w[2].ds_s >= 2);           /* P3 stretched its delay by 2 at t = 6 */
  tr_aap_stats_free(&st);
  return 0;
}

static int test_layout_checks(void) {
  tr_aap_layout L;
  tr_aap_frag overlapping[2] = {{0, 0, 0, 2, 2}, {0, 1, 1, 1, 1}};
  ASSERT_EQ_INT(tr_aap_layout_rects(&L, 2, 2, 2, overlapping), TR_AAP_EINVAL);
  tr_aap_frag gap[1] = {{0, 0, 0, 1, 2}};
  ASSERT_EQ_INT(tr_aap_layout_rects(&L, 2, 2, 1, gap), TR_AAP_EINVAL);
  int64_t bad[] = {0, 3, 2};
  int64_t ok[] = {0, 2};
  ASSERT_EQ_INT(tr_aap_layout_cuts(&L, 2, 2, 2, bad, 1, ok), TR_AAP_EINVAL);
  /* a 3 x 3 grid of tiles: the centre has 8 neighbours, a corner 3 */
  ASSERT_EQ_INT(tr_aap_layout_grid(&L, 9, 10, 3, 4), 0);
  ASSERT_EQ_INT(L.nfrags, 9);
  ASSERT_EQ_INT(L.nb_start[5] - L.nb_start[4], 8);
  ASSERT_EQ_INT(L.nb_start[1] - L.nb_start[0], 3);
  ASSERT_EQ_INT(L.frags[8].cols, 2); /* uneven last column of tiles */
  for (int64_t k = 0; k < L.nb_start[L.nfrags]; k++) ASSERT(L.nb_back[k] >= 0);
  /* halo slots of tile 4 (rows 3..5, cols 4..7) */
  ASSERT_EQ_INT(aap_halo_slot(&L.frags[4], 10, 2 * 10 + 3), 0);  /* top-left corner */
  ASSERT_EQ_INT(aap_halo_slot(&L.frags[4], 10, 4 * 10 + 5), -1); /* inside */
  ASSERT_EQ_INT(aap_halo_slot(&L.frags[4], 10, 6 * 10 + 8), 2 * 6 - 1);
  tr_aap_layout_free(&L);
  tr_aap_schedule s;
  ASSERT_EQ_INT(tr_aap_schedule_parse("ssp", &s), 0);
  ASSERT_EQ_INT(s, TR_AAP_SCHED_SSP);
  ASSERT_EQ_INT(tr_aap_schedule_parse("fast", &s), TR_AAP_EINVAL);
  return 0;
}

static int test_bad_options(void) {
  fig_record rec;
  tr_aap_frag fr[1] = {{0, 0, 0, 2, 2}};
  tr_aap_layout L;
  ASSERT_EQ_INT(tr_aap_layout_rects(&L, 2, 2, 1, fr), 0);
  tr_aap_program p = {4, &rec, fig_peval, fig_inceval, fig_assemble, fig_destroy, fig_max, NULL, 0};
  tr_aap_opts o;
  tr_aap_opts_default(&o);
  char err[128] = "";
  o.schedule = TR_AAP_SCHED_SSP; /* staleness -1 */
  ASSERT_EQ_INT(tr_aap_run_threads(&p, &L, &o, NULL, err, sizeof err), TR_AAP_EINVAL);
  ASSERT(strstr(err, "staleness"));
  tr_aap_opts_default(&o);
  o.threads = 0;
  ASSERT_EQ_INT(tr_aap_run_threads(&p, &L, &o, NULL, err, sizeof err), TR_AAP_EINVAL);
  p.aggr = NULL;
  o.threads = 1;
  ASSERT_EQ_INT(tr_aap_run_threads(&p, &L, &o, NULL, err, sizeof err), TR_AAP_EINVAL);
  tr_aap_layout_free(&L);
  return 0;
}

/* The engine runs fragments whose state is in memory first (the out-of-core
 * runner's hint, tr_aap_program.resident): six fragments ready at once, odd
 * ones "on disk", one worker; the order of their first rounds. */
typedef struct {
  int order[8], n;
} pref_rec;

static int pref_peval(void *u, const tr_aap_frag *f, void **state, tr_aap_round *rd) {
  (void)rd;
  pref_rec *r = u;
  r->order[r->n++] = (int)f->id;
  *state = NULL;
  return 0;
}

static int pref_resident(void *u, int64_t f) {
  (void)u;
  return f % 2 == 0;
}

static int test_resident_first(void) {
  tr_aap_layout L;
  ASSERT_EQ_INT(tr_aap_layout_grid(&L, 1, 6, 1, 1), 0);
  for (int hint = 0; hint < 2; hint++) {
    pref_rec rec = {{0}, 0};
    tr_aap_program p = {4, &rec, pref_peval, fig_inceval, NULL, NULL, fig_max, hint ? pref_resident : NULL, 0};
    tr_aap_opts o;
    tr_aap_opts_default(&o);
    o.threads = 1;
    char err[128] = "";
    ASSERT_EQ_INT(tr_aap_run_threads(&p, &L, &o, NULL, err, sizeof err), 0);
    ASSERT_EQ_INT(rec.n, 6);
    static const int want[2][6] = {{0, 1, 2, 3, 4, 5}, {0, 2, 4, 1, 3, 5}};
    for (int i = 0; i < 6; i++) ASSERT_EQ_INT(rec.order[i], want[hint][i]);
  }
  tr_aap_layout_free(&L);
  return 0;
}

/* The threads back-end asks opts.give_up before every round (a signal, a
 * lost rank): the third time it says stop, the run ends with
 * TR_AAP_EABANDONED and the reason, having run only the rounds before. */
typedef struct {
  int calls, stop_at;
} stopper;

static int stop_after(void *user, char *why, size_t n) {
  stopper *s = user;
  if (++s->calls < s->stop_at) return 0;
  snprintf(why, n, "told to stop");
  return 1;
}

static int test_give_up_threads(void) {
  tr_aap_layout L;
  ASSERT_EQ_INT(tr_aap_layout_grid(&L, 1, 6, 1, 1), 0);
  pref_rec rec = {{0}, 0};
  tr_aap_program p = {4, &rec, pref_peval, fig_inceval, NULL, NULL, fig_max, NULL, 0};
  tr_aap_opts o;
  tr_aap_opts_default(&o);
  o.threads = 1;
  stopper st = {0, 3};
  o.give_up = stop_after;
  o.give_up_user = &st;
  char err[128] = "";
  ASSERT_EQ_INT(tr_aap_run_threads(&p, &L, &o, NULL, err, sizeof err), TR_AAP_EABANDONED);
  ASSERT(strstr(err, "told to stop") != NULL);
  ASSERT_EQ_INT(rec.n, 2);
  tr_aap_layout_free(&L);
  return 0;
}

/* Neighbour lists (built through buckets) equal a search of every pair, in
 * ascending order, with nb_back pointing back, on uneven grids and on a
 * grid of 1-cell strips next to wide tiles. */
static int same_neighbours(const tr_aap_layout *L) {
  int64_t k = 0;
  for (int64_t i = 0; i < L->nfrags; i++) {
    const tr_aap_frag *a = &L->frags[i];
    ASSERT_EQ_INT(L->nb_start[i], k);
    for (int64_t j = 0; j < L->nfrags; j++) {
      const tr_aap_frag *b = &L->frags[j];
      const int touch = j != i && b->row0 < a->row0 + a->rows + 1 && b->row0 + b->rows > a->row0 - 1 &&
                        b->col0 < a->col0 + a->cols + 1 && b->col0 + b->cols > a->col0 - 1;
      if (!touch) continue;
      ASSERT(k < L->nb_start[i + 1]);
      ASSERT_EQ_INT(L->nb[k], j);
      const int64_t back = L->nb_start[j] + L->nb_back[k];
      ASSERT_EQ_INT(L->nb[back], i);
      k++;
    }
    ASSERT_EQ_INT(L->nb_start[i + 1], k);
  }
  return 0;
}

static int test_neighbours_equal_pairs(void) {
  tr_aap_layout L;
  int64_t rows[] = {0, 1, 7, 8, 30, 31, 45}, cols[] = {0, 13, 14, 15, 40, 41, 42, 60};
  ASSERT_EQ_INT(tr_aap_layout_cuts(&L, 45, 60, 6, rows, 7, cols), 0);
  ASSERT_EQ_INT(same_neighbours(&L), 0);
  tr_aap_layout_free(&L);
  ASSERT_EQ_INT(tr_aap_layout_grid(&L, 100, 77, 9, 5), 0);
  ASSERT_EQ_INT(same_neighbours(&L), 0);
  tr_aap_layout_free(&L);
  tr_aap_frag fr[4] = {{0, 0, 0, 1, 10}, {1, 1, 0, 9, 3}, {2, 1, 3, 4, 7}, {3, 5, 3, 5, 7}};
  ASSERT_EQ_INT(tr_aap_layout_rects(&L, 10, 10, 4, fr), 0);
  ASSERT_EQ_INT(same_neighbours(&L), 0);
  tr_aap_layout_free(&L);
  return 0;
}

TR_MAIN(TR_TEST(test_resident_first), TR_TEST(test_give_up_threads), TR_TEST(test_neighbours_equal_pairs), TR_TEST(test_figure1_bsp), TR_TEST(test_figure1_ssp1), TR_TEST(test_figure1_ap_stale),
        TR_TEST(test_figure1_aap), TR_TEST(test_layout_checks), TR_TEST(test_bad_options))
