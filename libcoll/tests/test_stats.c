/*
 * test_stats.c - coll_stats_reduce under MPI: the global statistics are
 * bit-identical to one process merging the same per-tile partials in
 * tile-id order, whatever the rank count and whichever rank holds which
 * tile (round robin, reversed blocks, one rank with no tiles).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "mpi_runner.h"

enum { TILES = 41, CELLS = 200, NBINS = 16 };

static int rank_, size_;

static void tile(coll_stats *s, int64_t id) {
  double v[CELLS];
  for (int i = 0; i < CELLS; i++)
    v[i] = (i % 17 == 0) ? -9999.0 : 100 * sin(0.37 * (double)id + 0.011 * i) + 1e-3 * (double)i / 3.0;
  coll_stats_init(s, NBINS, -100, 100);
  coll_stats_add(s, v, CELLS, 1, -9999.0);
}

/* owner(t): which rank computes tile t under distribution d. */
static int owner(int d, int t) {
  switch (d) {
  case 0: return t % size_;
  case 1: return size_ - 1 - (int)((int64_t)t * size_ / TILES); /* reversed blocks */
  default: return size_ > 1 ? 1 + t % (size_ - 1) : 0;          /* rank 0 has none */
  }
}

static int test_stats_deterministic(void) {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  int fails = 0;
  MPI_Comm w = MPI_COMM_WORLD;
  coll_ctx *c;
  ASSERT(coll_ctx_create(&c, &w, NULL) == COLL_OK);
  /* The single-process reference: merge in id order. */
  coll_stats want, t;
  coll_stats_init(&want, NBINS, -100, 100);
  for (int i = 0; i < TILES; i++) {
    tile(&t, 5 * i + 2);
    coll_stats_merge(&want, &t);
  }
  for (int d = 0; d < 3; d++) {
    coll_stats mine[TILES], got;
    int64_t ids[TILES];
    size_t n = 0;
    /* Hand the tiles over in descending order: the order must not matter. */
    for (int i = TILES - 1; i >= 0; i--)
      if (owner(d, i) == rank_) {
        tile(&mine[n], 5 * i + 2);
        ids[n++] = 5 * i + 2;
      }
    coll_stats_init(&got, NBINS, -100, 100); /* layout for a rank with no tiles */
    CHECK(coll_stats_reduce(c, mine, ids, n, &got) == COLL_OK);
    CHECK(memcmp(&got, &want, sizeof got) == 0);
    CHECK(got.count == (int64_t)TILES * (CELLS - 12));
    int64_t binned = 0;
    for (int b = 0; b < NBINS; b++) binned += got.bins[b];
    CHECK(binned <= got.count && binned > got.count / 2);
  }
  /* Mean and stddev against a two-pass computation. */
  double sum = 0, sq = 0;
  int64_t cnt = 0;
  for (int i = 0; i < TILES; i++)
    for (int k = 0; k < CELLS; k++) {
      if (k % 17 == 0) continue;
      sum += 100 * sin(0.37 * (double)(5 * i + 2) + 0.011 * k) + 1e-3 * (double)k / 3.0;
      cnt++;
    }
  double mean = sum / (double)cnt;
  for (int i = 0; i < TILES; i++)
    for (int k = 0; k < CELLS; k++) {
      if (k % 17 == 0) continue;
      double x = 100 * sin(0.37 * (double)(5 * i + 2) + 0.011 * k) + 1e-3 * (double)k / 3.0;
      sq += (x - mean) * (x - mean);
    }
  CHECK(fabs(coll_stats_mean(&want) - mean) <= 1e-9 * (1 + fabs(mean)));
  CHECK(fabs(coll_stats_stddev(&want) - sqrt(sq / (double)cnt)) <= 1e-9 * sqrt(sq / (double)cnt));
  coll_ctx_destroy(c);
  return fails;
}

MPI_TR_MAIN(TR_TEST(test_stats_deterministic))
