/*
 * workers_test.c - stalled and killed workers on the thread back-end: the
 * run never hangs; work is re-dispatched and the output stays right, or the
 * call fails with FT_ERR_TIMEOUT and a message.
 */
#include <string.h>
#include <time.h>

#include "ft_test_kernels.h"
#include "tr_test.h"

static int raster_case(ft_opts *o, int expect_rc, ft_report *r, double *secs) {
  const int64_t H = 96, W = 96;
  tk_params p = {10.0, 4, -1};
  float *g = tk_grid(H, W, 8);
  float *want = malloc((size_t)(H * W) * 4), *got = malloc((size_t)(H * W) * 4);
  ASSERT_EQ_INT(tk_run_raster(NULL, &TK_SLOPE, &p, g, H, W, 32, 32, FT_TYPE_F32, want, NULL), 0);
  ft_ctx *ctx = NULL;
  ASSERT_EQ_INT(ft_ctx_create(o, &ctx, NULL, 0), 0);
  ft_status st;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  int rc = tk_run_raster(ctx, &TK_SLOPE, &p, g, H, W, 32, 32, FT_TYPE_F32, got, &st);
  clock_gettime(CLOCK_MONOTONIC, &b);
  *secs = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
  if (rc != expect_rc) fprintf(stderr, "rc %d (%s)\n", rc, st.msg);
  ASSERT_EQ_INT(rc, expect_rc);
  if (rc == 0) ASSERT(memcmp(want, got, (size_t)(H * W) * 4) == 0);
  else ASSERT(st.msg[0] != '\0');
  ft_report_get(ctx, r);
  ft_ctx_destroy(ctx);
  free(g);
  free(want);
  free(got);
  return 0;
}

static int test_stall_redispatched(void) {
  ft_opts o;
  ft_opts_init(&o);
  o.workers = 3;
  o.timeout_ms = 100;
  o.inject.stall = 1;
  o.inject.stall_worker = 0;
  o.inject.stall_ms = 400;
  o.inject.stall_after = 1;
  o.inject.stall_count = 3;
  o.inject.seed = 3;
  o.inject.flip_p = 0.2;
  ft_report r;
  double s;
  ASSERT(raster_case(&o, 0, &r, &s) == 0);
  ASSERT(r.timeouts >= 1);
  ASSERT(r.redispatches >= 1);
  ASSERT_EQ_INT(r.fatal, 0);
  ASSERT_EQ_INT(r.injected, r.detected + r.tolerated);
  ASSERT(s < 20.0);
  return 0;
}

static int test_short_stall_no_timeout(void) {
  ft_opts o;
  ft_opts_init(&o);
  o.workers = 3;
  o.timeout_ms = 5000;
  o.inject.stall = 1;
  o.inject.stall_worker = 1;
  o.inject.stall_ms = 20;
  o.inject.stall_count = 4;
  ft_report r;
  double s;
  ASSERT(raster_case(&o, 0, &r, &s) == 0);
  ASSERT_EQ_INT(r.timeouts, 0);
  return 0;
}

static int test_kill_worker_recovers(void) {
  for (int w = 0; w < 3; w++) {
    ft_opts o;
    ft_opts_init(&o);
    o.workers = 3;
    o.timeout_ms = 150;
    o.inject.kill = 1;
    o.inject.kill_worker = w;
    o.inject.kill_after = 2 + w;
    ft_report r;
    double s;
    ASSERT(raster_case(&o, 0, &r, &s) == 0);
    ASSERT(r.timeouts >= 1);
    ASSERT(r.redispatches >= 1);
    ASSERT(s < 20.0);
  }
  return 0;
}

static int test_kill_with_two_workers_fails_cleanly(void) {
  ft_opts o;
  ft_opts_init(&o);
  o.workers = 2;
  o.timeout_ms = 100;
  o.inject.kill = 1;
  o.inject.kill_worker = 1;
  o.inject.kill_after = 0;
  ft_report r;
  double s;
  ASSERT(raster_case(&o, FT_ERR_TIMEOUT, &r, &s) == 0);
  ASSERT(r.timeouts >= 1);
  ASSERT(s < 5.0);
  return 0;
}

TR_MAIN(TR_TEST(test_stall_redispatched), TR_TEST(test_short_stall_no_timeout),
        TR_TEST(test_kill_worker_recovers), TR_TEST(test_kill_with_two_workers_fails_cleanly))
