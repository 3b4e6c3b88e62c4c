/*
 * inject_test.c - the injector is deterministic whatever the worker count
 * and timing; exhausted retries fail loudly; kernel errors and bad arguments
 * come back as codes.
 */
#include <string.h>

#include "ft_test_kernels.h"
#include "tr_test.h"

static int run(int workers, ft_mode mode, uint64_t seed, double p, float *out, ft_report *r) {
  const int64_t H = 70, W = 90;
  tk_params prm = {10.0, 0, -1};
  float *g = tk_grid(H, W, 2);
  ft_opts o;
  ft_opts_init(&o);
  o.workers = workers;
  o.mode = mode;
  o.inject.seed = seed;
  o.inject.flip_p = p;
  o.inject.flip_input_p = p / 2;
  o.inject.slot_mask = 0x7; /* the first recompute too */
  ft_ctx *ctx = NULL;
  ASSERT_EQ_INT(ft_ctx_create(&o, &ctx, NULL, 0), 0);
  ASSERT_EQ_INT(tk_run_raster(ctx, &TK_SLOPE, &prm, g, H, W, 16, 30, FT_TYPE_F32, out, NULL), 0);
  ft_report_get(ctx, r);
  ft_ctx_destroy(ctx);
  free(g);
  return 0;
}

static int test_same_faults_any_worker_count(void) {
  float a[70 * 90], b[70 * 90];
  for (uint64_t seed = 1; seed <= 5; seed++) {
    ft_report ra, rb;
    ASSERT(run(2, FT_MODE_DUAL_FAST, seed, 0.3, a, &ra) == 0);
    ASSERT(run(5, FT_MODE_DUAL_BASIC, seed, 0.3, b, &rb) == 0);
    ASSERT(memcmp(a, b, sizeof a) == 0);
    ASSERT(ra.injected > 0);
    ASSERT_EQ_INT(ra.injected, rb.injected);
    ASSERT_EQ_INT(ra.detected, rb.detected);
    ASSERT_EQ_INT(ra.tolerated, rb.tolerated);
    ASSERT_EQ_INT(ra.mismatches, rb.mismatches);
    ASSERT_EQ_INT(ra.recomputes, rb.recomputes);
    ASSERT_EQ_INT(ra.injected, ra.detected + ra.tolerated);
    ASSERT_EQ_INT(ra.fatal, 0);
  }
  /* a different seed places different faults */
  ft_report r1, r2;
  ASSERT(run(3, FT_MODE_DUAL_FAST, 1, 0.3, a, &r1) == 0);
  ASSERT(run(3, FT_MODE_DUAL_FAST, 2, 0.3, b, &r2) == 0);
  ASSERT(r1.injected != r2.injected || r1.recomputes != r2.recomputes);
  return 0;
}

/* (8) a fault in every attempt of one sub-block: FT_ERR_FATAL, counted */
static int test_retries_exhausted_is_fatal(void) {
  const int64_t H = 128, W = 128;
  tk_params p = {10.0, 0, -1};
  float *g = tk_grid(H, W, 4);
  float *out = malloc((size_t)(H * W) * 4);
  for (int mode = 0; mode < 2; mode++) {
    ft_opts o;
    ft_opts_init(&o);
    o.mode = (ft_mode)mode;
    o.workers = 3;
    o.max_recomputes = 4;
    o.inject.n_exact = 1;
    o.inject.exact[0] = (ft_fault_at){.kind = FT_FAULT_FLIP, .block = 0, .sub = 1, .slot = -1}; /* block 0, B01, every slot */
    ft_ctx *ctx = NULL;
    ASSERT_EQ_INT(ft_ctx_create(&o, &ctx, NULL, 0), 0);
    ft_block b = tk_block(g, W, 0, 0, 0, H, W, FT_TYPE_F32);
    ft_status st;
    ASSERT_EQ_INT(ft_run_block(ctx, &TK_SLOPE, &p, sizeof p, &b, out, &st), FT_ERR_FATAL);
    ASSERT_EQ_INT(st.failed_sub, 1);
    ASSERT_EQ_INT(st.recomputes, 4);
    ASSERT(strstr(st.msg, "B01") != NULL);
    ft_report r;
    ft_report_get(ctx, &r);
    ASSERT_EQ_INT(r.failed_sub_blocks, 1);
    ASSERT_EQ_INT(r.fatal, 6); /* 2 replicas + 4 recomputes, all wrong */
    ASSERT_EQ_INT(r.detected, r.corrected + r.fatal);
    ASSERT_EQ_INT(r.injected, r.detected + r.tolerated);
    /* the next block (id 1) is not in the schedule and still works */
    b.id = 1;
    ASSERT_EQ_INT(ft_run_block(ctx, &TK_SLOPE, &p, sizeof p, &b, out, &st), 0);
    ft_ctx_destroy(ctx);
  }
  free(g);
  free(out);
  return 0;
}

static int test_kernel_error_reported(void) {
  tk_params p = {10.0, 0, 13};
  float *g = tk_grid(40, 40, 1);
  float out[40 * 40];
  ft_ctx *ctx = NULL;
  ft_opts o;
  ft_opts_init(&o);
  o.workers = 2;
  ASSERT_EQ_INT(ft_ctx_create(&o, &ctx, NULL, 0), 0);
  ft_block b = tk_block(g, 40, 0, 0, 0, 40, 40, FT_TYPE_F32);
  ft_status st;
  ASSERT_EQ_INT(ft_run_block(ctx, &TK_SLOPE, &p, sizeof p, &b, out, &st), FT_ERR_KERNEL);
  ASSERT(strstr(st.msg, "-42") != NULL);
  ft_ctx_destroy(ctx);
  free(g);
  return 0;
}

static int test_bad_arguments(void) {
  ft_ctx *ctx = NULL;
  ft_opts o;
  char err[200];
  ft_opts_init(&o);
  o.workers = 1;
  ASSERT_EQ_INT(ft_ctx_create(&o, &ctx, err, sizeof err), FT_ERR_INVAL);
  ASSERT(ctx == NULL && err[0]);
  ft_opts_init(&o);
  o.error_rate = 1.5;
  ASSERT_EQ_INT(ft_ctx_create(&o, &ctx, err, sizeof err), FT_ERR_INVAL);
  ft_opts_init(&o);
  ft_opts_source_profile(&o);
  ASSERT_NEAR(o.tolerance, 0.1, 0);
  ASSERT_NEAR(o.error_rate, 0.15, 0);
  o.workers = 2;
  ASSERT_EQ_INT(ft_ctx_create(&o, &ctx, err, sizeof err), 0);
  ASSERT_EQ_INT(ft_ctx_workers(ctx), 2);
  float *g = tk_grid(8, 8, 1);
  float out[64];
  tk_params p = {1, 0, -1};
  ft_block b = tk_block(g, 8, 0, 0, 0, 8, 8, FT_TYPE_F32);
  b.in_stride = 5; /* narrower than the window */
  ASSERT_EQ_INT(ft_run_block(ctx, &TK_SLOPE, &p, sizeof p, &b, out, NULL), FT_ERR_INVAL);
  b = tk_block(g, 8, 0, 0, 0, 8, 8, FT_TYPE_F64);
  b.out_elem_size = 4;
  ASSERT_EQ_INT(ft_run_block(ctx, &TK_SLOPE, &p, sizeof p, &b, out, NULL), FT_ERR_INVAL);
  ASSERT_EQ_INT(ft_serve(ctx), FT_ERR_ROLE);
  ft_ctx_destroy(ctx);
  free(g);
  return 0;
}

TR_MAIN(TR_TEST(test_same_faults_any_worker_count), TR_TEST(test_retries_exhausted_is_fatal),
        TR_TEST(test_kernel_error_reported), TR_TEST(test_bad_arguments))
