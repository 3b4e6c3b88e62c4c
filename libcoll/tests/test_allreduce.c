/*
 * test_allreduce.c - coll_allreduce / coll_reduce against the MPI library's
 * own MPI_Allreduce / MPI_Reduce, under any number of ranks.
 *
 * Inputs are chosen so every result is exact (small integers for sums,
 * factors in {-1, 1, 2} for products), so the comparison is bitwise even for
 * floating point. Every case runs twice: forced through recursive halving
 * (small_bytes = 0) and forced through the small-message path
 * (small_bytes = SIZE_MAX), so both sides of the cut-off are covered.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "mpi_runner.h"

static int rank_, size_;

static void world(void) {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

static coll_ctx *make_ctx(size_t small_bytes, int segments, size_t trace) {
  coll_opts o;
  coll_opts_init(&o);
  o.small_bytes = small_bytes;
  o.segments = segments;
  o.trace_capacity = trace;
  o.min_segment_bytes = 0; /* exercise S segments even on small vectors */
  MPI_Comm w = MPI_COMM_WORLD;
  coll_ctx *c = NULL;
  if (coll_ctx_create(&c, &w, &o) != COLL_OK) return NULL;
  return c;
}

static MPI_Datatype mpi_type(coll_dtype dt) {
  switch (dt) {
  case COLL_INT8: return MPI_INT8_T;
  case COLL_INT16: return MPI_INT16_T;
  case COLL_INT32: return MPI_INT32_T;
  case COLL_INT64: return MPI_INT64_T;
  case COLL_UINT8: return MPI_UINT8_T;
  case COLL_UINT16: return MPI_UINT16_T;
  case COLL_UINT32: return MPI_UINT32_T;
  case COLL_UINT64: return MPI_UINT64_T;
  case COLL_FLOAT: return MPI_FLOAT;
  default: return MPI_DOUBLE;
  }
}

static MPI_Op mpi_op(coll_op_kind k) {
  switch (k) {
  case COLL_SUM: return MPI_SUM;
  case COLL_PROD: return MPI_PROD;
  case COLL_MIN: return MPI_MIN;
  case COLL_MAX: return MPI_MAX;
  case COLL_BAND: return MPI_BAND;
  case COLL_BOR: return MPI_BOR;
  case COLL_BXOR: return MPI_BXOR;
  case COLL_LAND: return MPI_LAND;
  case COLL_LOR: return MPI_LOR;
  default: return MPI_LXOR;
  }
}

static int is_float(coll_dtype dt) { return dt == COLL_FLOAT || dt == COLL_DOUBLE; }
static int is_bitwise(coll_op_kind k) { return k == COLL_BAND || k == COLL_BOR || k == COLL_BXOR; }
static int is_logical(coll_op_kind k) { return k == COLL_LAND || k == COLL_LOR || k == COLL_LXOR; }
static int is_unsigned(coll_dtype dt) { return dt >= COLL_UINT8 && dt <= COLL_UINT64; }

static void put(coll_dtype dt, void *buf, size_t i, int64_t v) {
  switch (dt) {
  case COLL_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
  case COLL_INT16: ((int16_t *)buf)[i] = (int16_t)v; break;
  case COLL_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
  case COLL_INT64: ((int64_t *)buf)[i] = v; break;
  case COLL_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
  case COLL_UINT16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
  case COLL_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
  case COLL_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
  case COLL_FLOAT: ((float *)buf)[i] = (float)v; break;
  default: ((double *)buf)[i] = (double)v; break;
  }
}

static uint64_t mix(uint64_t x) {
  x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

/* Deterministic inputs for which op gives an exact result in dt. */
static void fill(coll_dtype dt, coll_op_kind k, void *buf, size_t count, int rank, int salt) {
  for (size_t i = 0; i < count; i++) {
    uint64_t h = mix(((uint64_t)rank << 40) ^ ((uint64_t)i << 8) ^ (uint64_t)salt ^ (uint64_t)k * 77);
    int64_t v;
    switch (k) {
    /* 8- and 16-bit results stay in range: Open MPI 4.1's AVX ops saturate
     * where our loops wrap, and neither is wrong for an overflow. */
    case COLL_SUM:
      if (coll_dtype_size(dt) <= 2) v = is_unsigned(dt) ? (int64_t)(h % 7) : (int64_t)(h % 7) - 3;
      else v = is_unsigned(dt) ? (int64_t)(h % 50) : (int64_t)(h % 101) - 50;
      break;
    case COLL_PROD: {
      static const int64_t f[] = {1, 2, -1, 1};
      v = f[h % (coll_dtype_size(dt) <= 2 ? 3 : 4)];
      if (coll_dtype_size(dt) <= 2 && v == 2) v = -1;
      if (is_unsigned(dt) && v < 0) v = 1;
      break;
    }
    case COLL_LAND: case COLL_LOR: case COLL_LXOR: v = (int64_t)(h % 4 == 0 ? 0 : h % 3); break;
    default: v = is_float(dt) ? (int64_t)(h % 2001) - 1000 : (int64_t)h; break;
    }
    put(dt, buf, i, v);
  }
}

/* Logical reference for floating types (MPI defines logical ops on integers only). */
static void logical_ref(coll_dtype dt, coll_op_kind k, void *out, size_t count, int n, int salt) {
  size_t es = coll_dtype_size(dt);
  unsigned char *tmp = malloc(count * es + 1);
  int *acc = calloc(count + 1, sizeof *acc);
  for (int r = 0; r < n; r++) {
    fill(dt, k, tmp, count, r, salt);
    for (size_t i = 0; i < count; i++) {
      double v = dt == COLL_FLOAT ? ((float *)tmp)[i] : ((double *)tmp)[i];
      int b = v != 0;
      if (n == 1) put(dt, out, i, (int64_t)v); /* one rank: MPI leaves the value as is */
      if (r == 0) acc[i] = b;
      else if (k == COLL_LAND) acc[i] = acc[i] && b;
      else if (k == COLL_LOR) acc[i] = acc[i] || b;
      else acc[i] = acc[i] != b;
    }
  }
  for (size_t i = 0; n > 1 && i < count; i++) put(dt, out, i, acc[i]);
  free(tmp);
  free(acc);
}

/* One case: allreduce and reduce to every root (when roots) of dt/op over
 * count elements; compares against MPI. Returns the number of mismatches. */
static int one_case(coll_ctx *c, coll_dtype dt, coll_op_kind k, size_t count, int roots, int salt) {
  int fails = 0;
  size_t es = coll_dtype_size(dt), bytes = count * es + 8;
  unsigned char *send = malloc(bytes), *keep = malloc(bytes), *got = malloc(bytes),
                *want = malloc(bytes);
  fill(dt, k, send, count, rank_, salt);
  memcpy(keep, send, bytes);
  coll_op op = coll_op_builtin(k);

  if (is_float(dt) && is_bitwise(k)) {
    CHECK(coll_allreduce(c, send, got, count, dt, &op) == COLL_EINVAL);
    goto out;
  }
  memset(got, 0xA5, bytes);
  int rc = coll_allreduce(c, send, got, count, dt, &op);
  CHECK(rc == COLL_OK);
  if (is_float(dt) && is_logical(k)) logical_ref(dt, k, want, count, size_, salt);
  else MPI_Allreduce(send, want, (int)count, mpi_type(dt), mpi_op(k), MPI_COMM_WORLD);
  if (memcmp(got, want, count * es) != 0) {
    size_t i = 0;
    while (memcmp(got + i * es, want + i * es, es) == 0) i++;
    fprintf(stderr, "[rank %d] allreduce mismatch dt=%d op=%d count=%zu at %zu: got byte0 %d want %d\n",
            rank_, dt, k, count, i, got[i * es], want[i * es]);
    fails++;
  }
  CHECK(memcmp(send, keep, bytes) == 0);

  for (int root = 0; roots && root < size_; root++) {
    memset(got, 0xA5, bytes);
    rc = coll_reduce(c, send, rank_ == root ? got : NULL, count, dt, &op, root);
    CHECK(rc == COLL_OK);
    if (!(is_float(dt) && is_logical(k)))
      MPI_Reduce(send, want, (int)count, mpi_type(dt), mpi_op(k), root, MPI_COMM_WORLD);
    if (rank_ == root && memcmp(got, want, count * es) != 0) {
      fprintf(stderr, "[rank %d] reduce mismatch dt=%d op=%d count=%zu root=%d\n", rank_, dt, k,
              count, root);
      fails++;
    }
    CHECK(memcmp(send, keep, bytes) == 0);
  }
  /* In place. */
  memcpy(got, send, bytes);
  rc = coll_allreduce(c, got, got, count, dt, &op);
  CHECK(rc == COLL_OK);
  if (is_float(dt) && is_logical(k)) logical_ref(dt, k, want, count, size_, salt);
  else MPI_Allreduce(send, want, (int)count, mpi_type(dt), mpi_op(k), MPI_COMM_WORLD);
  CHECK(memcmp(got, want, count * es) == 0);
out:
  free(send); free(keep); free(got); free(want);
  return fails;
}

/* Every op on int32 and double, counts 0, 1, N-1, N, N+1, odd, every root,
 * both paths. */
static int test_ops_vs_mpi(void) {
  world();
  int fails = 0;
  size_t counts[] = {0, 1, (size_t)size_ - 1, (size_t)size_, (size_t)size_ + 1, 37, 1001};
  for (int path = 0; path < 2; path++) {
    coll_ctx *c = make_ctx(path ? SIZE_MAX : 0, 2, 0);
    ASSERT(c != NULL);
    coll_dtype dts[] = {COLL_INT32, COLL_DOUBLE};
    for (int t = 0; t < 2; t++)
      for (int k = 0; k < COLL_OP_USER; k++)
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
          fails += one_case(c, dts[t], (coll_op_kind)k, counts[ci], ci == 4 || ci == 5,
                            (int)(ci * 131 + (size_t)t));
    coll_ctx_destroy(c);
  }
  return fails;
}

/* Every datatype with a few ops, three segments per step. */
static int test_all_dtypes(void) {
  world();
  int fails = 0;
  coll_op_kind ks[] = {COLL_SUM, COLL_PROD, COLL_MIN, COLL_MAX, COLL_BXOR, COLL_LOR};
  for (int path = 0; path < 2; path++) {
    coll_ctx *c = make_ctx(path ? SIZE_MAX : 0, 3, 0);
    ASSERT(c != NULL);
    for (int t = 0; t < COLL_DTYPE_COUNT; t++)
      for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++)
        fails += one_case(c, (coll_dtype)t, ks[k], 2 * (size_t)size_ + 3, 0, t * 7 + (int)k);
    coll_ctx_destroy(c);
  }
  return fails;
}

/* A non-commutative op: 2x2 matrix product over uint64 (wrapping). */
typedef struct { uint64_t a, b, c, d; } mat;

static void matmul(const void *in_, void *io_, size_t n, void *arg) {
  const mat *in = in_;
  mat *io = io_;
  (void)arg;
  for (size_t i = 0; i < n; i++) {
    mat x = in[i], y = io[i];
    io[i].a = x.a * y.a + x.b * y.c;
    io[i].b = x.a * y.b + x.b * y.d;
    io[i].c = x.c * y.a + x.d * y.c;
    io[i].d = x.c * y.b + x.d * y.d;
  }
}

static void mat_fill(mat *m, size_t n, int rank) {
  for (size_t i = 0; i < n; i++) {
    uint64_t h = mix((uint64_t)rank * 1000003u + i);
    if (h & 1) m[i] = (mat){1, 1 + (h >> 60), 0, 1};
    else m[i] = (mat){1, 0, 1 + (h >> 61), 1};
  }
}

static int test_noncommutative(void) {
  world();
  int fails = 0;
  size_t counts[] = {1, (size_t)size_ + 1, 301};
  coll_op op = coll_op_user(matmul, NULL, sizeof(mat), 0);
  for (int path = 0; path < 2; path++) {
    coll_ctx *c = make_ctx(path ? SIZE_MAX : 0, 2, 0);
    ASSERT(c != NULL);
    for (size_t ci = 0; ci < 3; ci++) {
      size_t n = counts[ci];
      mat *send = malloc(n * sizeof *send), *got = malloc(n * sizeof *got),
          *want = malloc(n * sizeof *want), *tmp = malloc(n * sizeof *tmp);
      mat_fill(send, n, rank_);
      /* Reference: r0 * r1 * ... * rN-1, left to right. */
      mat_fill(want, n, 0);
      for (int r = 1; r < size_; r++) {
        mat_fill(tmp, n, r);
        matmul(want, tmp, n, NULL);
        memcpy(want, tmp, n * sizeof *want);
      }
      CHECK(coll_allreduce(c, send, got, n, COLL_UINT64, &op) == COLL_OK);
      CHECK(memcmp(got, want, n * sizeof *got) == 0);
      for (int root = 0; root < size_; root++) {
        memset(got, 0, n * sizeof *got);
        CHECK(coll_reduce(c, send, got, n, COLL_UINT64, &op, root) == COLL_OK);
        if (rank_ == root) CHECK(memcmp(got, want, n * sizeof *got) == 0);
      }
      free(send); free(got); free(want); free(tmp);
    }
    coll_ctx_destroy(c);
  }
  return fails;
}

/* Allreduce results are bitwise identical on all ranks even when rounding
 * happens; the send buffer is untouched. */
static int test_identical_untouched(void) {
  world();
  int fails = 0;
  size_t n = 10007;
  double *send = malloc(n * sizeof *send), *keep = malloc(n * sizeof *keep),
         *got = malloc(n * sizeof *got), *all = malloc(n * sizeof *all * (size_t)size_);
  for (size_t i = 0; i < n; i++) send[i] = 1.0 / (double)(rank_ * 7 + (int)i % 13 + 1) * 1e-3 + (double)i;
  memcpy(keep, send, n * sizeof *send);
  coll_op op = coll_op_builtin(COLL_SUM);
  for (int path = 0; path < 2; path++) {
    coll_ctx *c = make_ctx(path ? SIZE_MAX : 0, 2, 0);
    ASSERT(c != NULL);
    CHECK(coll_allreduce(c, send, got, n, COLL_DOUBLE, &op) == COLL_OK);
    CHECK(memcmp(send, keep, n * sizeof *send) == 0);
    MPI_Allgather(got, (int)n, MPI_DOUBLE, all, (int)n, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int r = 0; r < size_; r++) CHECK(memcmp(all + (size_t)r * n, got, n * sizeof *got) == 0);
    for (size_t i = 0; i < n; i += 997) {
      double ref = 0;
      for (int r = 0; r < size_; r++) ref += 1.0 / (double)(r * 7 + (int)i % 13 + 1) * 1e-3 + (double)i;
      CHECK(fabs(got[i] - ref) <= 1e-9 * fabs(ref) + 1e-12);
    }
    coll_ctx_destroy(c);
  }
  free(send); free(keep); free(got); free(all);
  return fails;
}

static int ilog2(int n) { int k = 0; while ((1 << (k + 1)) <= n) k++; return k; }

/* Traffic and work per rank match the model: step k moves L/2^(k+1) bytes
 * each way; the reduce work is (p2-1)/p2 of the vector, plus the whole
 * vector on ranks that absorb a folded neighbour; folded-away ranks reduce
 * nothing in the halving. */
static int test_counters_model(void) {
  world();
  int fails = 0;
  int steps = ilog2(size_), p2 = 1 << steps, rem = size_ - p2;
  size_t count = (size_t)p2 * 1024, L = count * sizeof(double);
  double *send = calloc(count, sizeof *send), *got = malloc(count * sizeof *got);
  coll_ctx *c = make_ctx(0, 2, 0);
  ASSERT(c != NULL);
  coll_op op = coll_op_builtin(COLL_SUM);
  coll_counters k;
  coll_counters_reset(c);
  CHECK(coll_allreduce(c, send, got, count, COLL_DOUBLE, &op) == COLL_OK);
  coll_counters_get(c, &k);
  int folded_away = rank_ < 2 * rem && (rank_ & 1);
  int absorbs = rank_ < 2 * rem && !(rank_ & 1);
  CHECK(k.calls == 1);
  for (int s = 0; s < steps; s++) {
    uint64_t want = folded_away ? 0 : (uint64_t)(L >> (s + 1));
    CHECK(k.step_sent[s] == want);
    CHECK(k.step_recv[s] == want);
  }
  CHECK(k.step_sent[steps] == 0);
  uint64_t work = folded_away ? 0 : (uint64_t)(p2 - 1) * count / (uint64_t)p2;
  if (absorbs) work += count;
  CHECK(k.elems_reduced == work);
  if (rem == 0) CHECK(k.elems_reduced == (uint64_t)(size_ - 1) * count / (uint64_t)size_);
  /* Allgather moves the complement: L - L/p2 each way. */
  CHECK(k.collect_sent == (folded_away ? 0 : (uint64_t)(L - L / (size_t)p2)));
  CHECK(k.collect_recv == k.collect_sent);
  CHECK(k.fold_sent + k.fold_recv == (rank_ < 2 * rem ? 2 * (uint64_t)L : 0));
  CHECK(k.halving_calls == (size_ > 1 && !folded_away ? 1u : 0u));

  /* Reduce: same distribution phase, binomial gather: total gathered into
   * the root = L - L/p2. */
  coll_counters_reset(c);
  CHECK(coll_reduce(c, send, got, count, COLL_DOUBLE, &op, 0) == COLL_OK);
  coll_counters_get(c, &k);
  for (int s = 0; s < steps; s++) CHECK(k.step_sent[s] == (folded_away ? 0 : (uint64_t)(L >> (s + 1))));
  if (rank_ == 0) CHECK(k.collect_recv == (uint64_t)(L - L / (size_t)p2));
  coll_ctx_destroy(c);
  free(send); free(got);
  return fails;
}

/* The trace shows segment j reduced while j+1 is in flight: j+1 was posted
 * before reducing j began, and its completion is observed only after. */
static int test_trace_overlap(void) {
  world();
  int fails = 0;
  if (size_ < 2) return 0;
  size_t count = (size_t)1 << 18;
  double *send = malloc(count * sizeof *send), *got = malloc(count * sizeof *got);
  for (size_t i = 0; i < count; i++) send[i] = (double)(i % 100);
  coll_ctx *c = make_ctx(0, 4, 4096);
  ASSERT(c != NULL);
  coll_op op = coll_op_builtin(COLL_SUM);
  int pending_seen = 0, reductions = 0;
  for (int rep = 0; rep < 3; rep++) {
    coll_trace_clear(c);
    CHECK(coll_allreduce(c, send, got, count, COLL_DOUBLE, &op) == COLL_OK);
    const coll_trace_event *ev;
    size_t n, dropped;
    coll_trace_get(c, &ev, &n, &dropped);
    CHECK(dropped == 0);
    for (size_t i = 0; i < n; i++) {
      if (ev[i].kind != COLL_EV_REDUCE_BEGIN) continue;
      reductions++;
      int st = ev[i].step, sg = ev[i].segment;
      double t_post_next = -1, t_done_next = -1, t_done_this = -1, t_end = -1;
      for (size_t j = 0; j < n; j++) {
        if (ev[j].step != st) continue;
        if (ev[j].kind == COLL_EV_POST_RECV && ev[j].segment == sg + 1) t_post_next = ev[j].t;
        if (ev[j].kind == COLL_EV_RECV_DONE && ev[j].segment == sg + 1) t_done_next = ev[j].t;
        if (ev[j].kind == COLL_EV_RECV_DONE && ev[j].segment == sg) t_done_this = ev[j].t;
        if (ev[j].kind == COLL_EV_REDUCE_END && ev[j].segment == sg) t_end = ev[j].t;
      }
      CHECK(t_done_this >= 0 && t_done_this <= ev[i].t);  /* nothing reduced before it arrives */
      CHECK(t_end >= ev[i].t);
      if (ev[i].next_pending >= 0) {
        CHECK(t_post_next >= 0 && t_post_next <= ev[i].t); /* j+1 in flight ... */
        CHECK(t_done_next >= t_end);                      /* ... during reduce of j */
        if (ev[i].next_pending == 1) pending_seen++;
      } else {
        CHECK(sg == 3); /* only the last of 4 segments has no successor */
      }
    }
  }
  CHECK(reductions == 3 * 4 * ilog2(size_) || (size_ & (size_ - 1)) != 0);
  int any = 0;
  MPI_Allreduce(&pending_seen, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(any > 0); /* somewhere a reduction ran while the next segment was incomplete */
  coll_ctx_destroy(c);
  free(send); free(got);
  return fails;
}

/* >= 1M elements, allreduce and reduce to the last rank. */
static int test_large(void) {
  world();
  int fails = 0;
  size_t n = ((size_t)1 << 20) + 3;
  coll_ctx *c = make_ctx(0, 2, 0);
  ASSERT(c != NULL);
  fails += one_case(c, COLL_DOUBLE, COLL_SUM, n, 0, 1);
  fails += one_case(c, COLL_INT32, COLL_MAX, n, 0, 2);
  int64_t *s = malloc(n * sizeof *s), *g = malloc(n * sizeof *g), *w = malloc(n * sizeof *w);
  fill(COLL_INT64, COLL_SUM, s, n, rank_, 3);
  coll_op op = coll_op_builtin(COLL_SUM);
  CHECK(coll_reduce(c, s, g, n, COLL_INT64, &op, size_ - 1) == COLL_OK);
  MPI_Reduce(s, w, (int)n, MPI_INT64_T, MPI_SUM, size_ - 1, MPI_COMM_WORLD);
  if (rank_ == size_ - 1) CHECK(memcmp(g, w, n * sizeof *g) == 0);
  free(s); free(g); free(w);
  coll_ctx_destroy(c);
  return fails;
}

/* Segment count from a maximum segment size, and a user message on the
 * user's communicator is never taken by libcoll. */
static int test_segments_and_isolation(void) {
  world();
  int fails = 0;
  coll_opts o;
  coll_opts_init(&o);
  o.small_bytes = 0;
  o.max_segment_bytes = 1000; /* odd size: segments split at element boundaries */
  MPI_Comm w = MPI_COMM_WORLD;
  coll_ctx *c;
  ASSERT(coll_ctx_create(&c, &w, &o) == COLL_OK);
  size_t n = 5003;
  int64_t *s = malloc(n * 8), *g = malloc(n * 8), *ref = malloc(n * 8);
  fill(COLL_INT64, COLL_SUM, s, n, rank_, 9);
  int token = 1234 + rank_, got_token = -1;
  MPI_Request rq = MPI_REQUEST_NULL;
  int from = (rank_ + size_ - 1) % size_, to = (rank_ + 1) % size_;
  /* A user message posted with the tags libcoll uses internally. */
  MPI_Irecv(&got_token, 1, MPI_INT, from, 16, MPI_COMM_WORLD, &rq);
  MPI_Send(&token, 1, MPI_INT, to, 16, MPI_COMM_WORLD);
  coll_op op = coll_op_builtin(COLL_SUM);
  CHECK(coll_allreduce(c, s, g, n, COLL_INT64, &op) == COLL_OK);
  MPI_Wait(&rq, MPI_STATUS_IGNORE);
  CHECK(got_token == 1234 + from);
  MPI_Allreduce(s, ref, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  CHECK(memcmp(g, ref, n * 8) == 0);
  free(s); free(g); free(ref);
  coll_ctx_destroy(c);
  return fails;
}

MPI_TR_MAIN(TR_TEST(test_ops_vs_mpi), TR_TEST(test_all_dtypes), TR_TEST(test_noncommutative),
            TR_TEST(test_identical_untouched), TR_TEST(test_counters_model),
            TR_TEST(test_trace_overlap), TR_TEST(test_segments_and_isolation),
            TR_TEST(test_large))
