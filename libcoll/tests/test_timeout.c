/*
 * test_timeout.c - timeout aggregation (specs/timeout-aggregation.md,
 * "What an implementation must show" 1-5) under any number of ranks.
 *
 * Contributions are 2^rank * (i + 1) with SUM, so any lost or doubly counted
 * rank changes the result. Late ranks are made late with the context's fault
 * injection (delay_ms / delay_mask / drop_rank / duplicate_rank). A rank is
 * late by wall time, so thresholds (150 ms) must exceed the scheduling skew of
 * up to 8 oversubscribed ranks on 2 cores: at 60 ms a loaded CI machine made
 * extra ranks late. CTest runs these tests alone (RUN_SERIAL).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "mpi_runner.h"

#define BASE_MS 150.0
#define MARGIN_MS 250.0
#define COUNT 5

static int rank_, size_;

static void world(void) {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

static coll_ctx *make_ctx(void) {
  MPI_Comm w = MPI_COMM_WORLD;
  coll_ctx *c = NULL;
  return coll_ctx_create(&c, &w, NULL) == COLL_OK ? c : NULL;
}

static void set_inject(coll_ctx *c, uint64_t delay_mask, int delay_ms, int drop, int dup) {
  coll_opts o;
  coll_ctx_get_opts(c, &o);
  o.inject.delay_rank = -1;
  o.inject.delay_mask = delay_mask;
  o.inject.delay_ms = delay_ms;
  o.inject.drop_rank = drop;
  o.inject.duplicate_rank = dup;
  coll_ctx_set_opts(c, &o);
}

static coll_ta_opts ta(int arity, coll_tan_policy pol, int tan) {
  coll_ta_opts o;
  coll_ta_opts_init(&o);
  o.arity = arity;
  o.threshold_ms = BASE_MS;
  o.deadline_ms = 8 * BASE_MS; /* above the longest injected delay (2 x the root threshold) */
  o.tan_policy = pol;
  o.tan_rank = tan;
  return o;
}

/* Runs one int64 SUM operation of 2^rank * (i+1); *exact is 1 when this
 * rank got the exact total. All reports are gathered on rank 0 into reps. */
static int run(coll_ctx *c, const coll_ta_opts *o, int *exact, coll_ta_report *reps) {
  int64_t s[COUNT], r[COUNT];
  for (int i = 0; i < COUNT; i++) s[i] = ((int64_t)1 << rank_) * (i + 1);
  memset(r, 0, sizeof r);
  coll_ta_report rep;
  coll_op op = coll_op_builtin(COLL_SUM);
  MPI_Barrier(MPI_COMM_WORLD);
  int rc = coll_timeout_reduce(c, s, r, COUNT, COLL_INT64, &op, o, &rep);
  *exact = 1;
  for (int i = 0; i < COUNT; i++)
    if (r[i] != (((int64_t)1 << size_) - 1) * (i + 1)) *exact = 0;
  MPI_Gather(&rep, (int)sizeof rep, MPI_BYTE, reps, (int)sizeof rep, MPI_BYTE, 0, MPI_COMM_WORLD);
  return rc;
}

static int all_ok(int rc, int exact) {
  int mine = rc == COLL_OK && exact, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all;
}

static int is_in_subtree(int r, int top, int k) {
  while (r > top) r = (r - 1) / k;
  return r == top;
}

/* 1. Every rank on time: exact everywhere, nothing reaches the TAN. */
static int test_all_on_time(void) {
  world();
  int fails = 0, exact;
  coll_ctx *c = make_ctx();
  ASSERT(c != NULL);
  coll_ta_report *reps = malloc(sizeof *reps * (size_t)size_);
  coll_tan_policy pols[] = {COLL_TAN_FIXED, COLL_TAN_HASHED, COLL_TAN_ROOT};
  for (int arity = 2; arity <= 4; arity++)
    for (int p = 0; p < 3; p++) {
      coll_ta_opts o = ta(arity, pols[p], size_ - 1);
      if (p == 2) o.root = size_ / 2; /* a root other than 0 */
      int rc = run(c, &o, &exact, reps);
      CHECK(all_ok(rc, exact));
      if (rank_ == 0)
        for (int r = 0; r < size_; r++) {
          CHECK(reps[r].nlate == 0);
          CHECK(reps[r].tan_msgs == 0);
          CHECK(reps[r].late_forwarded == 0);
          CHECK(reps[r].tan_rank == reps[0].tan_rank);
          CHECK(reps[r].op_id == reps[0].op_id);
          if (reps[r].interior)
            CHECK(reps[r].release_ms <= coll_ta_threshold_ms(&o, size_, reps[r].depth) + MARGIN_MS);
        }
    }
  free(reps);
  coll_ctx_destroy(c);
  return fails;
}

/* 2. One rank delayed by 2x its parent's threshold: exact everywhere (late
 * rank too); interior nodes release within threshold + margin of their first
 * arrival and before the late rank sends; the TAN gets exactly one late
 * message. */
static int one_late(coll_ctx *c, int arity, int late, coll_tan_policy pol) {
  int fails = 0, exact;
  coll_ta_report *reps = malloc(sizeof *reps * (size_t)size_);
  coll_ta_opts o = ta(arity, pol, size_ - 1);
  int d = coll_ta_depth(&o, size_, late);
  int delay = (int)(2 * coll_ta_threshold_ms(&o, size_, d - 1));
  set_inject(c, (uint64_t)1 << late, delay, -1, -1);
  int rc = run(c, &o, &exact, reps);
  set_inject(c, 0, 0, -1, -1);
  CHECK(all_ok(rc, exact));
  if (rank_ == 0) {
    int subtree = 0, tan_late = 0;
    for (int r = 0; r < size_; r++) subtree += is_in_subtree(r, late, arity);
    for (int r = 0; r < size_; r++) {
      CHECK(reps[r].nlate == subtree);
      CHECK(reps[r].late_ranks[0] == late);
      tan_late += reps[r].late_msgs_at_tan;
      if (reps[r].rank != reps[r].tan_rank) CHECK(reps[r].tan_msgs == 0);
      if (reps[r].interior && r != late) {
        double thr = coll_ta_threshold_ms(&o, size_, reps[r].depth);
        CHECK(reps[r].release_ms >= 0 && reps[r].release_ms <= thr + MARGIN_MS);
        CHECK(reps[r].t_released < reps[late].t_sent);
      }
    }
    CHECK(tan_late == 1);
    CHECK(reps[(late - 1) / arity].late_forwarded == 1); /* the parent held the bypass entry */
  }
  free(reps);
  return fails;
}

static int test_one_late(void) {
  world();
  if (size_ < 2) return 0;
  int fails = 0;
  coll_ctx *c = make_ctx();
  ASSERT(c != NULL);
  fails += one_late(c, 2, size_ - 1, COLL_TAN_FIXED); /* a deep leaf */
  if (size_ >= 4) fails += one_late(c, 2, 1, COLL_TAN_FIXED); /* an interior node */
  fails += one_late(c, 3, size_ - 1, COLL_TAN_HASHED);
  if (size_ >= 3) fails += one_late(c, 4, 1, COLL_TAN_ROOT);
  coll_ctx_destroy(c);
  return fails;
}

/* 3. Several late ranks: same subtree, different subtrees, a whole subtree.
 * Exact with no double counting; one late message per late subtree top. */
static int several_late(coll_ctx *c, int arity, uint64_t mask, int deterministic) {
  int fails = 0, exact;
  coll_ta_report *reps = malloc(sizeof *reps * (size_t)size_);
  coll_ta_opts o = ta(arity, COLL_TAN_FIXED, size_ / 2);
  o.deterministic = deterministic;
  set_inject(c, mask, (int)(2 * coll_ta_threshold_ms(&o, size_, 0)), -1, -1);
  int rc = run(c, &o, &exact, reps);
  set_inject(c, 0, 0, -1, -1);
  CHECK(all_ok(rc, exact));
  if (rank_ == 0) {
    /* Late: in the mask or below a masked rank. A late message per late rank
     * whose parent is on time. */
    int nlate = 0, tops = 0, tan_late = 0;
    for (int r = 1; r < size_; r++) {
      int late = 0;
      for (int x = r; x > 0; x = (x - 1) / arity) late |= (int)((mask >> x) & 1u);
      nlate += late;
      int p = (r - 1) / arity, plate = 0;
      for (int x = p; x > 0; x = (x - 1) / arity) plate |= (int)((mask >> x) & 1u);
      tops += late && !plate;
    }
    for (int r = 0; r < size_; r++) {
      CHECK(reps[r].nlate == nlate);
      tan_late += reps[r].late_msgs_at_tan;
    }
    CHECK(tan_late == tops);
  }
  free(reps);
  return fails;
}

static int test_several_late(void) {
  world();
  int fails = 0;
  coll_ctx *c = make_ctx();
  ASSERT(c != NULL);
  if (size_ >= 7) {
    fails += several_late(c, 2, (1u << 5) | (1u << 6), 1);        /* siblings, same subtree */
    fails += several_late(c, 2, (1u << 3) | (1u << 6), 1);        /* different subtrees */
    fails += several_late(c, 2, (1u << 1) | (1u << 3) | (1u << 4), 1); /* a whole subtree */
    fails += several_late(c, 3, (1u << 2) | (1u << 4) | (1u << 5), 0); /* fold-on-arrival mode */
  } else if (size_ >= 3) {
    fails += several_late(c, 2, (1u << 1) | (1u << 2), 1);
    fails += several_late(c, 3, (uint64_t)1 << (size_ - 1), 0);
  }
  coll_ctx_destroy(c);
  return fails;
}

/* 4. A rank that never contributes: a clear error naming it on every rank
 * within the deadline; later operations are exact. Then a rank whose data
 * comes after the deadline: error, and its stale data is dropped by the
 * next operation. */
static int test_never_contributes(void) {
  world();
  if (size_ < 2) return 0;
  int fails = 0, exact;
  coll_ctx *c = make_ctx();
  ASSERT(c != NULL);
  coll_ta_report *reps = malloc(sizeof *reps * (size_t)size_);
  coll_ta_opts o = ta(2, COLL_TAN_FIXED, 0);
  o.deadline_ms = 300;
  int victim = size_ - 1;
  set_inject(c, 0, 0, victim, -1);
  int rc = run(c, &o, &exact, reps);
  set_inject(c, 0, 0, -1, -1);
  CHECK(rc == COLL_ETIMEDOUT);
  char want[64];
  snprintf(want, sizeof want, "no contribution from rank(s) %d within", victim);
  CHECK(strstr(coll_errmsg(c), want) != NULL);
  double bound = o.deadline_ms + 2 * coll_ta_threshold_ms(&o, size_, 0) + 4 * MARGIN_MS;
  if (rank_ == 0)
    for (int r = 0; r < size_; r++) {
      CHECK(reps[r].waited_ms <= bound);
      CHECK(reps[r].nlate == 1 && reps[r].late_ranks[0] == victim);
    }
  /* The next operation is undisturbed. */
  rc = run(c, &o, &exact, reps);
  CHECK(all_ok(rc, exact));

  /* Data later than the deadline: error, then dropped as stale. */
  int late = size_ > 2 ? 2 : 1;
  set_inject(c, (uint64_t)1 << late, (int)(o.deadline_ms + 3 * coll_ta_threshold_ms(&o, size_, 0)), -1, -1);
  rc = run(c, &o, &exact, reps);
  set_inject(c, 0, 0, -1, -1);
  CHECK(rc == COLL_ETIMEDOUT);
  int stale = 0;
  for (int i = 0; i < 2; i++) {
    rc = run(c, &o, &exact, reps);
    CHECK(all_ok(rc, exact));
    if (rank_ == 0)
      for (int r = 0; r < size_; r++) stale += reps[r].dropped_stale;
  }
  if (rank_ == 0) CHECK(stale >= 1);
  free(reps);
  coll_ctx_destroy(c);
  return fails;
}

/* Floating point, deterministic mode: the same late set gives bit-identical
 * results on every rank and across repetitions. */
static int test_deterministic_float(void) {
  world();
  int fails = 0;
  coll_ctx *c = make_ctx();
  ASSERT(c != NULL);
  coll_ta_opts o = ta(2, COLL_TAN_FIXED, 0);
  double s[64], r[2][64];
  for (int i = 0; i < 64; i++) s[i] = 0.1 * (rank_ + 1) + 1.0 / (3.0 + i) + 1e-9 * rank_ * i;
  coll_op op = coll_op_builtin(COLL_SUM);
  uint64_t mask = size_ > 2 ? (uint64_t)1 << (size_ - 1) : 0;
  for (int rep = 0; rep < 2; rep++) {
    set_inject(c, mask, (int)(2 * coll_ta_threshold_ms(&o, size_, 0)), -1, -1);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(coll_timeout_reduce(c, s, r[rep], 64, COLL_DOUBLE, &op, &o, NULL) == COLL_OK);
  }
  set_inject(c, 0, 0, -1, -1);
  CHECK(memcmp(r[0], r[1], sizeof r[0]) == 0);
  double *all = malloc(sizeof r[0] * (size_t)size_);
  MPI_Allgather(r[0], 64, MPI_DOUBLE, all, 64, MPI_DOUBLE, MPI_COMM_WORLD);
  for (int x = 0; x < size_; x++) CHECK(memcmp(all + 64 * x, r[0], sizeof r[0]) == 0);
  for (int i = 0; i < 64; i++) {
    double ref = 0;
    for (int x = 0; x < size_; x++) ref += 0.1 * (x + 1) + 1.0 / (3.0 + i) + 1e-9 * x * i;
    CHECK(fabs(r[0][i] - ref) <= 1e-12 * fabs(ref));
  }
  free(all);
  coll_ctx_destroy(c);
  return fails;
}

/* A retransmitted contribution (on time, and late) is counted once: the
 * parent drops the second copy (the bypass entry is single use), so exactly
 * one late message is forwarded and both extra copies are dropped. */
static int dropped_sum(const coll_ta_report *reps) {
  int n = 0;
  for (int r = 0; r < size_; r++) n += reps[r].dropped_duplicates + reps[r].dropped_stale;
  return n;
}

static int test_duplicates(void) {
  world();
  if (size_ < 2) return 0;
  int fails = 0, exact, dropped = 0;
  coll_ctx *c = make_ctx();
  ASSERT(c != NULL);
  coll_ta_report *reps = malloc(sizeof *reps * (size_t)size_);
  coll_ta_opts o = ta(2, COLL_TAN_FIXED, size_ - 1);
  int r0 = size_ - 1;
  set_inject(c, 0, 0, -1, r0);
  int rc = run(c, &o, &exact, reps);
  CHECK(all_ok(rc, exact));
  if (rank_ == 0) dropped += dropped_sum(reps);
  set_inject(c, (uint64_t)1 << r0, (int)(2 * coll_ta_threshold_ms(&o, size_, 0)), -1, r0);
  rc = run(c, &o, &exact, reps);
  set_inject(c, 0, 0, -1, -1);
  CHECK(all_ok(rc, exact));
  if (rank_ == 0) {
    int tan_late = 0, fwd = 0;
    for (int r = 0; r < size_; r++) {
      tan_late += reps[r].late_msgs_at_tan;
      fwd += reps[r].late_forwarded;
    }
    CHECK(tan_late == 1);
    CHECK(fwd == 1);
    CHECK(reps[(r0 - 1) / 2].late_forwarded == 1);
    dropped += dropped_sum(reps);
  }
  rc = run(c, &o, &exact, reps); /* and the next one is clean */
  CHECK(all_ok(rc, exact));
  if (rank_ == 0) {
    dropped += dropped_sum(reps);
    CHECK(dropped == 2);
  }
  free(reps);
  coll_ctx_destroy(c);
  return fails;
}

/* Non-commutative ops are refused; bad options are refused. */
static void first_wins(const void *in, void *io, size_t n, void *arg) {
  (void)arg;
  memcpy(io, in, n * 8);
}

static int test_rejects(void) {
  world();
  int fails = 0;
  coll_ctx *c = make_ctx();
  ASSERT(c != NULL);
  int64_t s = rank_, r = 0;
  coll_op nc = coll_op_user(first_wins, NULL, 8, 0);
  coll_ta_opts o = ta(2, COLL_TAN_FIXED, 0);
  CHECK(coll_timeout_reduce(c, &s, &r, 1, COLL_INT64, &nc, &o, NULL) == COLL_EINVAL);
  coll_op sum = coll_op_builtin(COLL_SUM);
  o.arity = 1;
  CHECK(coll_timeout_reduce(c, &s, &r, 1, COLL_INT64, &sum, &o, NULL) == COLL_EINVAL);
  o = ta(2, COLL_TAN_FIXED, size_);
  CHECK(coll_timeout_reduce(c, &s, &r, 1, COLL_INT64, &sum, &o, NULL) == COLL_EINVAL);
  /* Refused calls consume no operation id: the next one still works. */
  o = ta(2, COLL_TAN_FIXED, 0);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(coll_timeout_reduce(c, &s, &r, 1, COLL_INT64, &sum, &o, NULL) == COLL_OK);
  CHECK(r == (int64_t)size_ * (size_ - 1) / 2);
  coll_ctx_destroy(c);
  return fails;
}

/* root_only (a reduce to the root) over a one-level tree with the root as
 * TAN: the last rank is 4 x the threshold late; every rank but the root
 * and the late one returns before the late rank even contributes, the root
 * gets the exact sum of 2^rank, and a second operation right after is
 * exact too (the late data never leaks into it). */
static int test_root_only(void) {
  world();
  if (size_ < 3) return 0;
  int fails = 0;
  coll_ctx *c = make_ctx();
  ASSERT(c != NULL);
  coll_ta_opts o = ta(size_ - 1, COLL_TAN_ROOT, 0);
  o.root_only = 1;
  const int late = size_ - 1, delay = (int)(4 * BASE_MS);
  coll_op sum = coll_op_builtin(COLL_SUM);
  for (int k = 0; k < 2; k++) {
    set_inject(c, k ? 0 : (uint64_t)1 << late, k ? 0 : delay, -1, -1);
    int64_t s = (int64_t)1 << rank_, r = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    CHECK(coll_timeout_reduce(c, &s, &r, 1, COLL_INT64, &sum, &o, NULL) == COLL_OK);
    double ms = (MPI_Wtime() - t0) * 1e3;
    if (rank_ == 0) CHECK(r == ((int64_t)1 << size_) - 1);
    else CHECK(r == -1);
    if (!k && rank_ != 0 && rank_ != late) CHECK(ms < delay / 2.0);
    if (!k && rank_ == 0) CHECK(ms >= delay * 0.9);
  }
  set_inject(c, 0, 0, -1, -1);
  coll_ctx_destroy(c);
  return fails;
}

/* root_only over a binary tree (a reduce, as --coll-arity gives the
 * statistics): the last rank, a leaf, is late past the root's threshold. Its parent
 * releases without it, tells it so and returns at once (before the late rank
 * even contributes); the late rank sends its data straight to the TAN (the
 * root): no rank forwards it, the TAN gets exactly one late message, the
 * root the exact sum, and the next operation is exact too. */
static int test_root_only_tree(void) {
  world();
  if (size_ < 4) return 0;
  int fails = 0;
  coll_ctx *c = make_ctx();
  ASSERT(c != NULL);
  coll_ta_opts o = ta(2, COLL_TAN_ROOT, 0);
  o.root_only = 1;
  /* late past the root's threshold (BASE_MS x the tree's height) */
  const int late = size_ - 1, parent = (late - 1) / 2, delay = (int)(BASE_MS * (coll_ta_depth(&o, size_, late) + 2));
  o.deadline_ms = 2 * delay + 1000; /* from the TAN's first piece (the root's partial) */
  coll_ta_report *reps = malloc(sizeof *reps * (size_t)size_);
  coll_op sum = coll_op_builtin(COLL_SUM);
  for (int k = 0; k < 2; k++) {
    set_inject(c, k ? 0 : (uint64_t)1 << late, k ? 0 : delay, -1, -1);
    int64_t s = (int64_t)1 << rank_, r = -1;
    coll_ta_report rep;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    CHECK(coll_timeout_reduce(c, &s, &r, 1, COLL_INT64, &sum, &o, &rep) == COLL_OK);
    double ms = (MPI_Wtime() - t0) * 1e3;
    if (rank_ == 0) CHECK(r == ((int64_t)1 << size_) - 1);
    if (!k && rank_ == parent) CHECK(ms < delay / 2.0); /* released, not held by the late child */
    MPI_Gather(&rep, (int)sizeof rep, MPI_BYTE, reps, (int)sizeof rep, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (!k && rank_ == 0) {
      int fwd = 0, tan_late = 0;
      for (int x = 0; x < size_; x++) fwd += reps[x].late_forwarded, tan_late += reps[x].late_msgs_at_tan;
      CHECK(fwd == 0);
      CHECK(tan_late == 1);
      CHECK(reps[late].late_direct == 1);
      CHECK(reps[parent].release_ms >= 0 && reps[parent].t_released < reps[late].t_sent);
    }
  }
  set_inject(c, 0, 0, -1, -1);
  free(reps);
  coll_ctx_destroy(c);
  return fails;
}

/* snapshot: the root returns the sum of the ranks on time within its
 * threshold, naming the late one, and never waits for it; the late data
 * is dropped as stale by the next operation, which is exact. Flat and
 * binary trees. */
static int test_snapshot(void) {
  world();
  if (size_ < 3) return 0;
  int fails = 0;
  coll_ctx *c = make_ctx();
  ASSERT(c != NULL);
  coll_op sum = coll_op_builtin(COLL_SUM);
  for (int arity = size_ - 1; arity >= 2; arity = arity == 2 ? 1 : 2) {
    coll_ta_opts o = ta(arity, COLL_TAN_ROOT, 0);
    o.root_only = 1;
    o.snapshot = 1;
    const int late = size_ - 1;
    const int delay = (int)(BASE_MS * (coll_ta_depth(&o, size_, late) + 4));
    for (int k = 0; k < 2; k++) {
      set_inject(c, k ? 0 : (uint64_t)1 << late, k ? 0 : delay, -1, -1);
      int64_t s = (int64_t)1 << rank_, r = -1;
      coll_ta_report rep;
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      CHECK(coll_timeout_reduce(c, &s, &r, 1, COLL_INT64, &sum, &o, &rep) == COLL_OK);
      double ms = (MPI_Wtime() - t0) * 1e3;
      if (rank_ == 0) {
        const int64_t all = ((int64_t)1 << size_) - 1;
        if (!k) {
          CHECK(r == (all & ~((int64_t)1 << late)));
          CHECK(rep.nlate == 1 && rep.late_ranks[0] == late);
          CHECK(ms < coll_ta_threshold_ms(&o, size_, 0) + MARGIN_MS);
          CHECK(rep.late_msgs_at_tan == 0);
        } else {
          CHECK(r == all);
          CHECK(rep.nlate == 0);
        }
      }
      /* the late rank's data of the first round is gone before the second */
      MPI_Barrier(MPI_COMM_WORLD);
    }
    CHECK((o.root_only = 0, coll_timeout_reduce(c, NULL, NULL, 0, COLL_INT64, &sum, &o, NULL)) == COLL_EINVAL);
  }
  set_inject(c, 0, 0, -1, -1);
  coll_ctx_destroy(c);
  return fails;
}

MPI_TR_MAIN(TR_TEST(test_all_on_time), TR_TEST(test_root_only), TR_TEST(test_root_only_tree), TR_TEST(test_snapshot), TR_TEST(test_one_late), TR_TEST(test_several_late),
            TR_TEST(test_never_contributes), TR_TEST(test_deterministic_float),
            TR_TEST(test_duplicates), TR_TEST(test_rejects))
