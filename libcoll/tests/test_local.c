/*
 * test_local.c - libcoll in single-rank mode: no MPI is initialised, the
 * context is made from a NULL communicator, and every collective is a local
 * copy. Also the operation/datatype validation, the statistics accumulator
 * and its tile-order determinism, and the fault-injection delay.
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "coll.h"
#include "tr_test.h"

static int test_single_rank_ctx(void) {
  coll_ctx *c = NULL;
  ASSERT_EQ_INT(coll_ctx_create(&c, NULL, NULL), COLL_OK);
  ASSERT(c != NULL);
  ASSERT_EQ_INT(coll_ctx_rank(c), 0);
  ASSERT_EQ_INT(coll_ctx_size(c), 1);
  ASSERT_EQ_INT(coll_ctx_is_mpi(c), 0);
  coll_ctx_destroy(c);
  /* MPI is not initialised here, so "world" is one rank as well. */
  ASSERT_EQ_INT(coll_ctx_create_world(&c, NULL), COLL_OK);
  ASSERT_EQ_INT(coll_ctx_size(c), 1);
  coll_ctx_destroy(c);
  coll_ctx_destroy(NULL);
  return 0;
}

static int test_identity_every_op_dtype(void) {
  coll_ctx *c;
  ASSERT_EQ_INT(coll_ctx_create(&c, NULL, NULL), COLL_OK);
  unsigned char send[64], keep[64], recv[64];
  for (int i = 0; i < 64; i++) send[i] = (unsigned char)(i * 37 + 5);
  memcpy(keep, send, sizeof send);
  for (int t = 0; t < COLL_DTYPE_COUNT; t++)
    for (int k = 0; k < COLL_OP_USER; k++) {
      coll_op op = coll_op_builtin((coll_op_kind)k);
      size_t n = 64 / coll_dtype_size((coll_dtype)t);
      int bitwise = k == COLL_BAND || k == COLL_BOR || k == COLL_BXOR;
      int flt = t == COLL_FLOAT || t == COLL_DOUBLE;
      memset(recv, 0, sizeof recv);
      int rc = coll_allreduce(c, send, recv, n, (coll_dtype)t, &op);
      if (bitwise && flt) { ASSERT_EQ_INT(rc, COLL_EINVAL); continue; }
      ASSERT_EQ_INT(rc, COLL_OK);
      ASSERT(memcmp(recv, send, sizeof send) == 0);
      memset(recv, 0, sizeof recv);
      ASSERT_EQ_INT(coll_reduce(c, send, recv, n, (coll_dtype)t, &op, 0), COLL_OK);
      ASSERT(memcmp(recv, send, sizeof send) == 0);
      ASSERT_EQ_INT(coll_allreduce(c, recv, recv, n, (coll_dtype)t, &op), COLL_OK);
      ASSERT(memcmp(recv, send, sizeof send) == 0);
    }
  ASSERT(memcmp(send, keep, sizeof send) == 0);
  coll_counters k;
  coll_counters_get(c, &k);
  ASSERT(k.calls > 0);
  ASSERT_EQ_INT(k.elems_reduced, 0);
  coll_counters_reset(c);
  coll_counters_get(c, &k);
  ASSERT_EQ_INT(k.calls, 0);
  coll_ctx_destroy(c);
  return 0;
}

static void add64(const void *in, void *io, size_t n, void *arg) {
  (void)arg;
  for (size_t i = 0; i < n; i++) ((int64_t *)io)[i] += ((const int64_t *)in)[i];
}

static int test_argument_errors(void) {
  coll_ctx *c;
  ASSERT_EQ_INT(coll_ctx_create(&c, NULL, NULL), COLL_OK);
  int64_t s[3] = {1, 2, 3}, r[3];
  coll_op sum = coll_op_builtin(COLL_SUM);
  ASSERT_EQ_INT(coll_allreduce(c, s, r, 3, COLL_INT64, NULL), COLL_EINVAL);
  ASSERT(strlen(coll_errmsg(c)) > 0);
  ASSERT_EQ_INT(coll_allreduce(c, s, r, 3, (coll_dtype)99, &sum), COLL_EINVAL);
  ASSERT_EQ_INT(coll_allreduce(c, NULL, r, 3, COLL_INT64, &sum), COLL_EINVAL);
  ASSERT_EQ_INT(coll_allreduce(c, NULL, NULL, 0, COLL_INT64, &sum), COLL_OK);
  ASSERT_EQ_INT(coll_reduce(c, s, r, 3, COLL_INT64, &sum, 1), COLL_EINVAL);
  ASSERT_EQ_INT(coll_reduce(c, s, r, 3, COLL_INT64, &sum, -1), COLL_EINVAL);
  coll_op bad = coll_op_user(add64, NULL, 0, 1);
  ASSERT_EQ_INT(coll_allreduce(c, s, r, 3, COLL_INT64, &bad), COLL_EINVAL);
  coll_op good = coll_op_user(add64, NULL, 8, 1);
  ASSERT_EQ_INT(coll_allreduce(c, s, r, 3, COLL_INT64, &good), COLL_OK);
  ASSERT(r[0] == 1 && r[1] == 2 && r[2] == 3);
  /* Every code has its own message. */
  int codes[] = {COLL_OK, COLL_EINVAL, COLL_ENOMEM, COLL_EMPI, COLL_ETIMEDOUT, COLL_ENOTSUP};
  for (int i = 0; i < 6; i++)
    for (int j = i + 1; j < 6; j++) ASSERT(strcmp(coll_strerror(codes[i]), coll_strerror(codes[j])) != 0);
  ASSERT(strcmp(coll_strerror(-1000), "unknown error") == 0);
  coll_ctx_destroy(c);
  return 0;
}

static int test_timeout_local(void) {
  coll_ctx *c;
  ASSERT_EQ_INT(coll_ctx_create(&c, NULL, NULL), COLL_OK);
  double s[4] = {1.5, -2, 3, 4}, r[4] = {0};
  coll_op sum = coll_op_builtin(COLL_SUM);
  coll_ta_opts o;
  coll_ta_opts_init(&o);
  coll_ta_report rep;
  ASSERT_EQ_INT(coll_timeout_reduce(c, s, r, 4, COLL_DOUBLE, &sum, &o, &rep), COLL_OK);
  ASSERT(memcmp(s, r, sizeof s) == 0);
  ASSERT(strcmp(rep.algorithm, "local") == 0);
  ASSERT_EQ_INT(rep.nranks, 1);
  ASSERT_EQ_INT(rep.nlate, 0);
  ASSERT_EQ_INT(rep.op_id, 0);
  ASSERT_EQ_INT(coll_timeout_reduce(c, s, r, 4, COLL_DOUBLE, &sum, &o, &rep), COLL_OK);
  ASSERT_EQ_INT(rep.op_id, 1);
  coll_op nc = coll_op_user(add64, NULL, 8, 0);
  ASSERT_EQ_INT(coll_timeout_reduce(c, s, r, 4, COLL_DOUBLE, &nc, &o, &rep), COLL_EINVAL);
  /* Thresholds grow towards the root of a tree of height 3 (8 ranks). */
  ASSERT_EQ_INT(coll_ta_depth(&o, 8, 7), 3);
  ASSERT_NEAR(coll_ta_threshold_ms(&o, 8, 2), 100, 0);
  ASSERT_NEAR(coll_ta_threshold_ms(&o, 8, 0), 300, 0);
  o.level_threshold_ms[1] = 42;
  ASSERT_NEAR(coll_ta_threshold_ms(&o, 8, 1), 42, 0);
  coll_ctx_destroy(c);
  return 0;
}

static int test_inject_delay(void) {
  coll_opts opts;
  coll_opts_init(&opts);
  opts.inject.delay_rank = 0;
  opts.inject.delay_ms = 60;
  coll_ctx *c;
  ASSERT_EQ_INT(coll_ctx_create(&c, NULL, &opts), COLL_OK);
  int32_t s = 7, r = 0;
  coll_op sum = coll_op_builtin(COLL_SUM);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  ASSERT_EQ_INT(coll_allreduce(c, &s, &r, 1, COLL_INT32, &sum), COLL_OK);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) * 1e-6;
  ASSERT(ms >= 59);
  ASSERT_EQ_INT(r, 7);
  coll_ctx_destroy(c);
  return 0;
}

static int test_stats_accumulator(void) {
  coll_stats s;
  ASSERT_EQ_INT(coll_stats_init(&s, COLL_STATS_MAX_BINS + 1, 0, 1), COLL_EINVAL);
  ASSERT_EQ_INT(coll_stats_init(&s, 4, 1, 1), COLL_EINVAL);
  ASSERT_EQ_INT(coll_stats_init(&s, 4, 0, 8), COLL_OK);
  ASSERT(isnan(coll_stats_mean(&s)) && isnan(coll_stats_stddev(&s)));
  double v[] = {1, 2, -9999, NAN, 3, 8, 4, 9, -1};
  coll_stats_add(&s, v, 9, 1, -9999);
  ASSERT_EQ_INT(s.count, 7);
  ASSERT_NEAR(s.min, -1, 0);
  ASSERT_NEAR(s.max, 9, 0);
  ASSERT_NEAR(s.sum, 26, 0);
  ASSERT_NEAR(s.sumsq, 1 + 4 + 9 + 64 + 16 + 81 + 1, 0);
  /* bins of width 2 over [0, 8]: 1 | 2,3 | 4 | 8 (the top edge is in the
   * last bin); -1 and 9 are outside. */
  ASSERT_EQ_INT(s.bins[0], 1);
  ASSERT_EQ_INT(s.bins[1], 2);
  ASSERT_EQ_INT(s.bins[2], 1);
  ASSERT_EQ_INT(s.bins[3], 1);
  double mean = 26.0 / 7, var = 0;
  double valid[] = {1, 2, 3, 8, 4, 9, -1};
  for (int i = 0; i < 7; i++) var += (valid[i] - mean) * (valid[i] - mean);
  ASSERT_NEAR(coll_stats_mean(&s), mean, 1e-12);
  ASSERT_NEAR(coll_stats_stddev(&s), sqrt(var / 7), 1e-12);
  float fv[] = {1.5f, -9999.f, 2.5f};
  coll_stats f;
  coll_stats_init(&f, 4, 0, 8);
  coll_stats_add_float(&f, fv, 3, 1, -9999);
  ASSERT_EQ_INT(f.count, 2);
  ASSERT_EQ_INT(coll_stats_merge(&s, &f), COLL_OK);
  ASSERT_EQ_INT(s.count, 9);
  ASSERT_EQ_INT(s.bins[0], 2);
  ASSERT_EQ_INT(s.bins[1], 3);
  coll_stats other;
  coll_stats_init(&other, 3, 0, 8);
  ASSERT_EQ_INT(coll_stats_merge(&s, &other), COLL_EINVAL);
  return 0;
}

/* One rank: coll_stats_reduce merges tiles by id whatever order they are
 * given in, bit for bit. */
static int test_stats_reduce_order(void) {
  coll_ctx *c;
  ASSERT_EQ_INT(coll_ctx_create(&c, NULL, NULL), COLL_OK);
  enum { T = 23 };
  coll_stats tiles[T], want, got, shuffled[T];
  int64_t ids[T], sids[T];
  coll_stats_init(&want, 8, -1, 1);
  for (int t = 0; t < T; t++) {
    coll_stats_init(&tiles[t], 8, -1, 1);
    double v[50];
    for (int i = 0; i < 50; i++) v[i] = sin(t * 50.0 + i) * (1 + t * 1e-3) + 1e-7 * i;
    coll_stats_add(&tiles[t], v, 50, 0, 0);
    ids[t] = 1000 - 3 * t; /* descending ids */
  }
  for (int t = T - 1; t >= 0; t--) coll_stats_merge(&want, &tiles[t]); /* ascending id order */
  for (int t = 0; t < T; t++) { shuffled[t] = tiles[(t * 7) % T]; sids[t] = ids[(t * 7) % T]; }
  got = want;
  memset(&got, 0xff, sizeof got);
  ASSERT_EQ_INT(coll_stats_reduce(c, shuffled, sids, T, &got), COLL_OK);
  ASSERT(memcmp(&got, &want, sizeof got) == 0);
  sids[1] = sids[0];
  ASSERT_EQ_INT(coll_stats_reduce(c, shuffled, sids, T, &got), COLL_EINVAL);
  coll_ctx_destroy(c);
  return 0;
}

TR_MAIN(TR_TEST(test_single_rank_ctx), TR_TEST(test_identity_every_op_dtype),
        TR_TEST(test_argument_errors), TR_TEST(test_timeout_local), TR_TEST(test_inject_delay),
        TR_TEST(test_stats_accumulator), TR_TEST(test_stats_reduce_order))
