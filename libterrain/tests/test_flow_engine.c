/*
 * test_flow_engine.c - the programs computed from D8 directions ("d8_up":
 * accumulation, streams, Strahler order; "d8_basins": labels) equal plain
 * sequential references written here, for every schedule, fragment layout
 * (1, 2, 4 and 7 uneven fragments, many small tiles, one-row strips) and
 * thread count, with and without randomly delayed messages.
 *
 * References (none of the engine's code): accumulation by a topological sort
 * of the whole grid (Kahn's queue; a cell's value is its weight plus its
 * inflows in the neighbour order E, NE, ... SE, the order the program
 * documents, so even non-integer weights give the same bits; whole-number
 * weights give them to the perimeter program too); TauDEM's edge
 * contamination by the same sort; Strahler order by recursion (an explicit
 * stack) from each stream cell up its stream inflows; labels by walking
 * down from each cell to a seed.
 *
 * Direction grids: steepest descent on the strictly-draining (epsilon)
 * fill of the fill tests' DEMs (pits, flats, NoData holes, a spiral maze
 * whose corridor crosses tile borders many times), and a random spanning
 * tree (a maze of long winding paths) with NoData holes. Also: a cycle is
 * refused with a line naming a cell on it; an unknown code is refused naming
 * its cell; the esri and grass encodings of one grid give the same result.
 */
#include <gdal.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "d8_codes.h"
#include "flow.h"
#include "sink.h"
#include "test_fill_ref.h"
#include "tile_store.h"
#include "tr_test.h"

#define N (R * C)
#define TREE_GRID NDEM /* the maze, after the fill tests' DEMs */
#define NGRID (NDEM + 1)

static const int dr[8] = {0, -1, -1, -1, 0, 1, 1, 1}, dc[8] = {1, 1, 0, -1, -1, -1, 0, 1};

/* ---------------------------------------------------------- the grids */

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* TauDEM codes (1..8, 0 none, NaN nodata) of grid g. */
static void make_dirs(int g, float *p) {
  if (g < NDEM) {
    static float z[N], w[N];
    int has_nd;
    float nd;
    make_dem(g, z, R, C, &has_nd, &nd);
    ref_fill(z, R, C, has_nd, nd, 1, 0.0f, w);
    for (int i = 0; i < N; i++) {
      const int r = i / C, c = i % C;
      if (isnan(w[i]) || (has_nd && z[i] == nd)) {
        p[i] = NAN;
        continue;
      }
      int best = -1;
      double bs = 0;
      for (int k = 0; k < 8; k++) {
        const int rr = r + dr[k], cc = c + dc[k];
        if (rr < 0 || rr >= R || cc < 0 || cc >= C || isnan(w[rr * C + cc]) || (has_nd && z[rr * C + cc] == nd)) continue;
        const double s = (w[i] - w[rr * C + cc]) / ((k & 1) ? sqrt(2.0) : 1.0);
        if (s > bs) bs = s, best = k;
      }
      p[i] = (float)(best + 1);
    }
    return;
  }
  /* a random spanning tree grown from the centre over the cells outside
   * two NoData holes: each cell points to the cell it was reached from */
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < N; i++) {
    const int r = i / C, c = i % C;
    const int hole = (r - 10) * (r - 10) + (c - 12) * (c - 12) < 20 || (r > 30 && r < 36 && c > 40 && c < 50);
    p[i] = hole ? NAN : -1.0f;
  }
  int *stack = malloc(sizeof(int) * N), n = 0;
  const int root = (R / 2) * C + C / 2;
  p[root] = 0;
  stack[n++] = root;
  while (n > 0) {
    const int i = stack[n - 1], r = i / C, c = i % C;
    int opts[8], no = 0;
    for (int k = 0; k < 8; k++) {
      const int rr = r + dr[k], cc = c + dc[k];
      if (rr >= 0 && rr < R && cc >= 0 && cc < C && p[rr * C + cc] == -1.0f) opts[no++] = k;
    }
    if (!no) {
      n--;
      continue;
    }
    const int k = opts[rnd(&s) % (uint64_t)no], j = (r + dr[k]) * C + c + dc[k];
    p[j] = (float)((k + 4) % 8 + 1); /* back towards i */
    stack[n++] = j;
  }
  free(stack);
}

static void make_weights(float *w) {
  uint64_t s = 12345;
  for (int i = 0; i < N; i++) w[i] = (rnd(&s) % 7 == 0) ? NAN : (float)(rnd(&s) % 1000) / 97.0f;
}

/* Whole-number weights as an Int16 band holds them (negative ones too). */
static void make_whole_weights(float *w) {
  uint64_t s = 777;
  for (int i = 0; i < N; i++) w[i] = (rnd(&s) % 7 == 0) ? NAN : (float)((int)(rnd(&s) % 65535) - 32767);
}

/* Weights whose sums a double rounds: make_weights' fractions (down to
 * 2^-31) with 2^30 on every 41st cell, so sums carry 61 bits. */
static void make_wide_weights(float *w) {
  make_weights(w);
  for (int i = 0; i < N; i += 41) w[i] = 0x1p30f;
}

/* ------------------------------------------------------ the references */

static int down(const float *p, int i) {
  if (isnan(p[i]) || p[i] == 0) return -1;
  const int k = (int)p[i] - 1, r = i / C + dr[k], c = i % C + dc[k];
  if (r < 0 || r >= R || c < 0 || c >= C || isnan(p[r * C + c])) return -1;
  return r * C + c;
}

static int drains_into(const float *p, int n, int i) { return !isnan(p[n]) && down(p, n) == i; }

/* The start of a topological sort of grid p: acc NAN, contamination from
 * NoData or off-grid neighbours, inflow counts in indeg, the sources queued
 * in q. Returns the valid cells; *qt the sources. */
static int ref_start(const float *p, double *acc, unsigned char *con, int *indeg, int *q, int *qt) {
  int valid = 0;
  *qt = 0;
  for (int i = 0; i < N; i++) {
    acc[i] = NAN;
    con[i] = 0;
    if (isnan(p[i])) continue;
    valid++;
    const int d = down(p, i);
    if (d >= 0) indeg[d]++;
    for (int k = 0; k < 8; k++) {
      const int r = i / C + dr[k], c = i % C + dc[k];
      if (r < 0 || r >= R || c < 0 || c >= C || isnan(p[r * C + c])) con[i] = 1;
    }
  }
  for (int i = 0; i < N; i++)
    if (!isnan(p[i]) && !indeg[i]) q[(*qt)++] = i;
  return valid;
}

/* acc (NAN where nodata), contaminated flags; 0, or -1 on a cycle. */
static int ref_acc(const float *p, const float *wt, double *acc, unsigned char *con) {
  int *indeg = calloc(N, sizeof(int)), *q = malloc(sizeof(int) * N), qh = 0, qt = 0, done = 0;
  const int valid = ref_start(p, acc, con, indeg, q, &qt);
  while (qh < qt) {
    const int i = q[qh++];
    double v = wt ? (isnan(wt[i]) ? 0.0 : (double)wt[i]) : 1.0;
    for (int k = 0; k < 8; k++) {
      const int r = i / C + dr[k], c = i % C + dc[k];
      if (r < 0 || r >= R || c < 0 || c >= C) continue;
      const int n = r * C + c;
      if (drains_into(p, n, i)) {
        v += acc[n];
        con[i] |= con[n];
      }
    }
    acc[i] = v;
    done++;
    const int d = down(p, i);
    if (d >= 0 && --indeg[d] == 0) q[qt++] = d;
  }
  free(indeg);
  free(q);
  return done == valid ? 0 : -1;
}

/* ref_acc with exact sums: 128-bit integers of 2^-40 units (every test
 * weight is a whole number of them, and their sum stays far below 2^127),
 * each cell's total rounded once to the nearest double. */
static int ref_acc_exact(const float *p, const float *wt, double *acc, unsigned char *con) {
  __extension__ typedef __int128 i128;
  i128 *sum = calloc(N, sizeof *sum);
  int *indeg = calloc(N, sizeof(int)), *q = malloc(sizeof(int) * N), qh = 0, qt = 0;
  ref_start(p, acc, con, indeg, q, &qt);
  while (qh < qt) {
    const int i = q[qh++];
    i128 v = isnan(wt[i]) ? 0 : (i128)ldexp((double)wt[i], 40);
    for (int k = 0; k < 8; k++) {
      const int r = i / C + dr[k], c = i % C + dc[k];
      if (r < 0 || r >= R || c < 0 || c >= C) continue;
      const int n = r * C + c;
      if (drains_into(p, n, i)) {
        v += sum[n];
        con[i] |= con[n];
      }
    }
    sum[i] = v;
    acc[i] = ldexp((double)v, -40);
    const int d = down(p, i);
    if (d >= 0 && --indeg[d] == 0) q[qt++] = d;
  }
  free(sum);
  free(indeg);
  free(q);
  return 0;
}

/* Strahler order of stream cell i, by recursion over stream inflows. */
static int ref_order(const float *p, const double *acc, double thr, int i, int *memo) {
  if (memo[i] >= 0) return memo[i];
  int best = 0, nbest = 0;
  for (int k = 0; k < 8; k++) {
    const int r = i / C + dr[k], c = i % C + dc[k];
    if (r < 0 || r >= R || c < 0 || c >= C) continue;
    const int n = r * C + c;
    if (!drains_into(p, n, i) || !(acc[n] >= thr)) continue;
    const int o = ref_order(p, acc, thr, n, memo);
    if (o > best) best = o, nbest = 1;
    else if (o == best) nbest++;
  }
  return memo[i] = nbest == 0 ? 1 : nbest >= 2 ? best + 1 : best;
}

static int32_t seed_label(int i) { return (int32_t)(((int64_t)i * 7919) % 100003); }

/* label of cell i: walk down to a seed (stream cell) or an end. */
static double ref_label(const float *p, const double *acc, double thr, int i) {
  if (isnan(p[i])) return TR_LABEL_NODATA;
  for (int steps = 0; steps <= N; steps++) {
    if (acc[i] >= thr) return seed_label(i);
    const int d = down(p, i);
    if (d < 0) return TR_LABEL_NODATA;
    i = d;
  }
  return -1;
}

/* ------------------------------------------------- running the engine */

typedef struct {
  const float *v;
} arr_in;

/* When set, run_prog counts each fragment's direction-window loads here
 * and puts the engine's statistics there (test_perimeter_reads_twice). */
static int64_t *g_loads;
static tr_aap_stats *g_stats;
static const float *g_weights; /* the weights input: not counted */

static int arr_load(void *user, const tr_tile *t, int64_t row0, int64_t col0, int64_t rows, int64_t cols, float *dst,
                      int64_t stride) {
  const arr_in *a = user;
  if (g_loads && a->v != g_weights) __atomic_fetch_add(&g_loads[t->index], 1, __ATOMIC_RELAXED);
  for (int64_t r = 0; r < rows; r++) memcpy(dst + r * stride, a->v + (row0 + r) * C + col0, (size_t)cols * sizeof(float));
  return 0;
}

static tr_tile layout_tile(const void *geom, int64_t i) {
  const tr_aap_frag *f = &((const tr_aap_layout *)geom)->frags[i];
  tr_tile t = {i, f->row0, f->col0, f->rows, f->cols};
  return t;
}

static int arr_write(void *user, const tr_tile *t, const void *cells, tr_error *e) {
  (void)e;
  double *out = user;
  for (int64_t r = 0; r < t->rows; r++)
    memcpy(out + (t->row0 + r) * C + t->col0, (const double *)cells + r * t->cols, (size_t)t->cols * sizeof(double));
  return 0;
}

typedef struct {
  tr_aap_schedule s;
  int c;
  uint64_t seed;
  const char *name;
} sched_case;

static const sched_case scheds[] = {{TR_AAP_SCHED_AAP, -1, 1, "aap"},     {TR_AAP_SCHED_BSP, 0, 1, "bsp"},
                                    {TR_AAP_SCHED_AP, 0, 1, "ap"},        {TR_AAP_SCHED_SSP, 1, 1, "ssp1"},
                                    {TR_AAP_SCHED_SSP, 2, 1, "ssp2"},     {TR_AAP_SCHED_RANDOM, 0, 7, "random7"},
                                    {TR_AAP_SCHED_RANDOM, 0, 99, "random99"}};
#define NSCHED ((int)(sizeof scheds / sizeof scheds[0]))

/* Runs program `name` with params over layout L; out gets the cells. 0, or
 * the program's tr_status (<0) with its line in msg, or 1 on another failure. */
static int run_prog(const char *name, const void *params, const float *p, const float *wt, const tr_aap_layout *L,
                    const sched_case *sc, int threads, double delay_max, double *out, char *msg, size_t msglen) {
  arr_in a0 = {p}, a1 = {wt};
  tr_tile_store *st[2] = {tr_tile_store_create(R, C, L->nfrags, (threads % 2) ? 0 : (size_t)1 << 16, 0, 0, arr_load, &a0),
                          wt ? tr_tile_store_create(R, C, L->nfrags, 1 << 20, 0, 0, arr_load, &a1) : NULL};
  int64_t maxc = 0;
  for (int64_t f = 0; f < L->nfrags; f++)
    if (L->frags[f].rows * L->frags[f].cols > maxc) maxc = L->frags[f].rows * L->frags[f].cols;
  tr_product prod = {GDT_Float64, 1, 1, -1, GDT_Unknown};
  tr_sink sink;
  tr_error e = {{0}};
  for (int i = 0; i < N; i++) out[i] = -12345;
  if (tr_sink_init(&sink, NULL, L->nfrags, layout_tile, L, maxc, &prod, TR_SINK_LOCAL, arr_write, out, &e)) return 1;
  tr_graph_engine eng;
  memset(&eng, 0, sizeof eng);
  tr_aap_opts_default(&eng.aap);
  eng.aap.schedule = sc->s;
  eng.aap.staleness = sc->c;
  eng.aap.seed = sc->seed;
  eng.aap.threads = threads;
  eng.aap.ds_max = 0.0003;
  eng.aap.inject.delay_max = delay_max;
  eng.backend = TR_GRAPH_THREADS;
  /* every other run out of core: state beyond 4 KiB (256 bytes) spilled between rounds
   * (most fragments on disk most of the time), which must not change a bit */
  static int nrun;
  const int spill = nrun++ % 2;
  tr_state_store_stats ss = {0};
  if (spill) {
    /* the perimeter programs keep a few KiB per fragment here: a smaller budget */
    eng.state_budget = strstr(name, "perimeter") || strstr(name, "wide") ? 256 : 4096;
    eng.spill_dir = ".";
    eng.spill_stats = &ss;
  }
  int pst = 0;
  msg[0] = 0;
  g_weights = wt;
  int rc = tr_graph_exec(tr_graph_body_find(name, NULL), params, L, st, wt ? 2 : 1, &sink, &eng, g_stats, msg,
                                msglen, &pst);
  if (!rc && spill && L->nfrags > 2 && (ss.spills == 0 || ss.restores == 0)) {
    fprintf(stderr, "%s with a state budget of 4 KiB over %lld fragments spilled %lld and restored %lld\n", name,
            (long long)L->nfrags, (long long)ss.spills, (long long)ss.restores);
    rc = 1;
  }
  tr_sink_drain(&sink, &e);
  tr_sink_close(&sink);
  tr_tile_store_destroy(st[0]);
  tr_tile_store_destroy(st[1]);
  if (rc && pst) return pst;
  if (rc) fprintf(stderr, "%s failed: %d %s\n", name, rc, msg);
  return rc ? 1 : 0;
}

static tr_up_params up_params(int product, int edge, int weighted, double thr) {
  tr_up_params u;
  memset(&u, 0, sizeof u);
  u.product = product;
  u.encoding = TR_DIR_TAUDEM;
  u.edge_check = edge;
  u.weighted = weighted;
  u.unit = 1;
  u.threshold = thr;
  u.src = "test";
  return u;
}

/* The expected output of product `prod` for grid p. */
static void expected(int product, int edge, const float *p, const float *wt, double thr, double *exp) {
  static double acc[N];
  static unsigned char con[N];
  static int memo[N];
  ref_acc(p, wt, acc, con);
  for (int i = 0; i < N; i++) memo[i] = -1;
  for (int i = 0; i < N; i++) {
    if (isnan(p[i])) {
      exp[i] = product == TR_UP_ACC ? TR_ACC_NODATA : TR_BYTE_NODATA;
      continue;
    }
    switch (product) {
      case TR_UP_ACC: exp[i] = edge && con[i] ? TR_ACC_NODATA : acc[i]; break;
      case TR_UP_STREAMS: exp[i] = acc[i] >= thr; break;
      default: exp[i] = acc[i] >= thr ? ref_order(p, acc, thr, i, memo) : 0; break;
    }
  }
}

/* expected() for accumulation and streams with exact sums (d8_up_wide). */
static void expected_exact(int product, int edge, const float *p, const float *wt, double thr, double *exp) {
  static double acc[N];
  static unsigned char con[N];
  ref_acc_exact(p, wt, acc, con);
  for (int i = 0; i < N; i++)
    exp[i] = isnan(p[i]) ? (product == TR_UP_ACC ? TR_ACC_NODATA : TR_BYTE_NODATA)
             : product == TR_UP_ACC ? (edge && con[i] ? TR_ACC_NODATA : acc[i])
                                    : (double)(acc[i] >= thr);
}

static int same(const double *a, const double *b, const char *what) {
  for (int i = 0; i < N; i++)
    if (memcmp(&a[i], &b[i], sizeof(double))) {
      fprintf(stderr, "%s: cell (%d, %d): %.17g, reference %.17g\n", what, i / C, i % C, a[i], b[i]);
      return 0;
    }
  return 1;
}

/* ---------------------------------------------------------------- tests */

static int test_reference_sanity(void) {
  static float p[N];
  static double acc[N];
  static unsigned char con[N];
  for (int g = 0; g < NGRID; g++) {
    make_dirs(g, p);
    ASSERT_EQ_INT(ref_acc(p, NULL, acc, con), 0);
    /* every valid cell drains to an outlet: the outlets' totals sum to the valid count */
    double outlets = 0;
    int valid = 0;
    for (int i = 0; i < N; i++)
      if (!isnan(p[i])) {
        valid++;
        if (down(p, i) < 0) outlets += acc[i];
      }
    ASSERT_NEAR(outlets, valid, 0);
  }
  make_dirs(TREE_GRID, p);
  ref_acc(p, NULL, acc, con);
  ASSERT(acc[(R / 2) * C + C / 2] > N / 2); /* the maze drains to its root */
  make_dirs(DEM_SPIRAL, p);
  ref_acc(p, NULL, acc, con);
  double mx = 0;
  for (int i = 0; i < N; i++)
    if (acc[i] > mx) mx = acc[i];
  ASSERT(mx > 300); /* the spiral corridor gathers a long path */
  return 0;
}

/* Every grid x layout x schedule, threads cycling 1..4: accumulation with
 * and without the edge check, weighted, streams, order, labels; the counts'
 * word at its full width and narrowed to 2 and 40. */
static int weights_file(const char *path, const float *v, int n);

static int test_schedules_layouts_threads(void) {
  static const int32_t word_maxes[3] = {0, 2, 40};
  static float p[N], wt[N], ww[N], wv[N];
  static double out[N], exp[N], acc[N];
  static unsigned char con[N];
  char msg[512];
  make_weights(wt);
  make_whole_weights(ww);
  make_wide_weights(wv);
  /* what the wide weights' sums need, as flowgraph finds it */
  GDALAllRegister();
  int wide_k = -1;
  ASSERT_EQ_INT(weights_file("wide_weights.tif", wv, N), 0);
  tr_error we = {{0}};
  ASSERT_EQ_INT(tr_up_weights_sums("wide_weights.tif", NULL, &wide_k, &we), TR_SUMS_WIDE);
  remove("wide_weights.tif");
  ASSERT(wide_k > 24 && wide_k <= 40);
  int run = 0;
  for (int g = 0; g < NGRID; g++) {
    make_dirs(g, p);
    for (int l = 0; l < NLAY; l++) {
      tr_aap_layout L;
      ASSERT_EQ_INT(make_layout(l, &L), 0);
      for (int s = 0; s < NSCHED; s++, run++) {
        /* under the sanitizers half the (grid, layout, schedule) triples:
         * every grid, layout and schedule still met; all in Release */
        if (TR_TEST_SANITIZED && (g + l + s) % 2) continue;
        const int threads = 1 + run % 4;
        const double thr = 6 + g;
        char what[128];
        snprintf(what, sizeof what, "grid %d %s %s threads %d", g, lay_name[l], scheds[s].name, threads);
        for (int prod = 0; prod < 3; prod++) {
          const int edge = prod == 0 && (run & 1);
          tr_up_params u = up_params(prod, edge, 0, thr);
          /* counts above a cell's word go to the fragment's table, and a
           * fragment whose table grows past 1/16 of its cells to the wide
           * form: narrow words take both paths on these small grids */
          u.word_max = word_maxes[(run + prod) % 3];
          ASSERT_EQ_INT(run_prog("d8_up", &u, p, NULL, &L, &scheds[s], threads, 0, out, msg, sizeof msg), 0);
          expected(prod, edge, p, NULL, thr, exp);
          ASSERT(same(out, exp, what));
          /* the perimeter program (counts: accumulation and streams) */
          if (prod == TR_UP_ORDER) continue;
          ASSERT(tr_graph_body_find("d8_up_perimeter", NULL)->applies(&u));
          ASSERT_EQ_INT(
              run_prog("d8_up_perimeter", &u, p, NULL, &L, &scheds[s], 1 + (run + 1) % 4, 0, out, msg, sizeof msg), 0);
          ASSERT(same(out, exp, "d8_up_perimeter"));
        }
        tr_up_params u = up_params(TR_UP_ACC, run & 2, 1, thr);
        ASSERT(!tr_graph_body_find("d8_up_perimeter", NULL)->applies(&u));
        ASSERT_EQ_INT(run_prog("d8_up", &u, p, wt, &L, &scheds[s], threads, 0, out, msg, sizeof msg), 0);
        expected(TR_UP_ACC, run & 2, p, wt, thr, exp);
        ASSERT(same(out, exp, "weighted"));
        /* whole-number weights: the perimeter program too, the same bits */
        u.sums = TR_SUMS_DOUBLE;
        ASSERT(tr_graph_body_find("d8_up_perimeter", NULL)->applies(&u));
        expected(TR_UP_ACC, run & 2, p, ww, thr, exp);
        ASSERT_EQ_INT(run_prog("d8_up", &u, p, ww, &L, &scheds[s], threads, 0, out, msg, sizeof msg), 0);
        ASSERT(same(out, exp, "whole weights"));
        ASSERT_EQ_INT(
            run_prog("d8_up_perimeter", &u, p, ww, &L, &scheds[s], 1 + (run + 3) % 4, 0, out, msg, sizeof msg), 0);
        ASSERT(same(out, exp, "whole weights, d8_up_perimeter"));
        /* weights whose sums a double rounds: d8_up_wide sums them exactly and
         * rounds each cell once; d8_up's sums differ (checked once) */
        tr_up_params uw = up_params(TR_UP_ACC, run & 2, 1, thr);
        uw.weights_k = wide_k;
        expected_exact(TR_UP_ACC, run & 2, p, wv, thr, exp);
        if (run == 0) {
          ASSERT_EQ_INT(run_prog("d8_up", &uw, p, wv, &L, &scheds[s], threads, 0, out, msg, sizeof msg), 0);
          int differ = 0;
          for (int i = 0; i < N; i++) differ += memcmp(&out[i], &exp[i], sizeof(double)) != 0;
          ASSERT(differ > 0);
        }
        ASSERT_EQ_INT(run_prog("d8_up_wide", &uw, p, wv, &L, &scheds[s], 1 + (run + 1) % 4, 0, out, msg, sizeof msg), 0);
        ASSERT(same(out, exp, "wide weights, d8_up_wide"));
        uw.product = TR_UP_STREAMS;
        uw.edge_check = 0;
        uw.threshold = 0x1p31;
        expected_exact(TR_UP_STREAMS, 0, p, wv, 0x1p31, exp);
        ASSERT_EQ_INT(run_prog("d8_up_wide", &uw, p, wv, &L, &scheds[s], 1 + (run + 2) % 4, 0, out, msg, sizeof msg), 0);
        ASSERT(same(out, exp, "wide weights' streams, d8_up_wide"));
        /* labels: seeds are the stream cells */
        ref_acc(p, NULL, acc, con);
        tr_basin_seed *seeds = malloc(sizeof *seeds * N);
        int64_t ns = 0;
        for (int i = 0; i < N; i++)
          if (!isnan(p[i]) && acc[i] >= thr) seeds[ns++] = (tr_basin_seed){i, seed_label(i)};
        tr_basin_params b = {TR_DIR_TAUDEM, ns, seeds, "test"};
        ASSERT_EQ_INT(run_prog("d8_basins", &b, p, NULL, &L, &scheds[s], threads, 0, out, msg, sizeof msg), 0);
        for (int i = 0; i < N; i++) exp[i] = ref_label(p, acc, thr, i);
        ASSERT(same(out, exp, "labels"));
        ASSERT_EQ_INT(
            run_prog("d8_basins_perimeter", &b, p, NULL, &L, &scheds[s], 1 + (run + 2) % 4, 0, out, msg, sizeof msg),
            0);
        ASSERT(same(out, exp, "labels, d8_basins_perimeter"));
        free(seeds);
      }
      tr_aap_layout_free(&L);
    }
  }
  return 0;
}

/* Messages held back at random (termination with messages in flight). */
static int test_delayed_messages(void) {
  static float p[N];
  static double out[N], exp[N];
  char msg[512];
  tr_aap_layout L;
  ASSERT_EQ_INT(make_layout(LAY_SMALL, &L), 0);
  for (int g = 0; g < NGRID; g++) {
    make_dirs(g, p);
    for (uint64_t seed = 1; seed <= 4; seed++) {
      sched_case sc = {TR_AAP_SCHED_AP, 0, seed, "ap-delayed"};
      tr_up_params u = up_params(TR_UP_ORDER, 0, 0, 5);
      ASSERT_EQ_INT(run_prog("d8_up", &u, p, NULL, &L, &sc, 3, 0.002, out, msg, sizeof msg), 0);
      expected(TR_UP_ORDER, 0, p, NULL, 5, exp);
      ASSERT(same(out, exp, "delayed order"));
      u = up_params(TR_UP_ACC, 1, 0, 5);
      ASSERT_EQ_INT(run_prog("d8_up_perimeter", &u, p, NULL, &L, &sc, 3, 0.002, out, msg, sizeof msg), 0);
      expected(TR_UP_ACC, 1, p, NULL, 5, exp);
      ASSERT(same(out, exp, "delayed perimeter accumulation"));
      /* labels from the stream cells, by the perimeter program */
      static double acc[N];
      static unsigned char con[N];
      static tr_basin_seed seeds[N];
      ref_acc(p, NULL, acc, con);
      int64_t ns = 0;
      for (int i = 0; i < N; i++)
        if (!isnan(p[i]) && acc[i] >= 5) seeds[ns++] = (tr_basin_seed){i, seed_label(i)};
      tr_basin_params b = {TR_DIR_TAUDEM, ns, seeds, "test"};
      ASSERT_EQ_INT(run_prog("d8_basins_perimeter", &b, p, NULL, &L, &sc, 3, 0.002, out, msg, sizeof msg), 0);
      for (int i = 0; i < N; i++) exp[i] = ref_label(p, acc, 5, i);
      ASSERT(same(out, exp, "delayed perimeter labels"));
    }
  }
  tr_aap_layout_free(&L);
  return 0;
}

/* The perimeter programs read each fragment's directions exactly twice
 * (PEval and Assemble) however many rounds the flow takes across fragment
 * borders (the maze and the spiral: more than two a fragment), with
 * no input cache, on 1 and 3 threads, state spilled or not, and give the
 * reference. */
static int test_perimeter_reads_twice(void) {
  static float p[N], wv[N];
  static double out[N], exp[N], acc[N];
  static unsigned char con[N];
  static tr_basin_seed seeds[N];
  char msg[512];
  tr_aap_layout L;
  ASSERT_EQ_INT(make_layout(LAY_SMALL, &L), 0);
  int64_t *loads = calloc((size_t)L.nfrags, sizeof *loads);
  ASSERT(loads != NULL);
  const int grids[2] = {TREE_GRID, DEM_SPIRAL};
  for (int gi = 0; gi < 2; gi++) {
    make_dirs(grids[gi], p);
    ref_acc(p, NULL, acc, con);
    int64_t ns = 0;
    for (int i = 0; i < N; i++)
      if (!isnan(p[i]) && acc[i] >= 8) seeds[ns++] = (tr_basin_seed){i, seed_label(i)};
    tr_basin_params b = {TR_DIR_TAUDEM, ns, seeds, "test"};
    tr_up_params u = up_params(TR_UP_ACC, 1, 0, 8), uw = up_params(TR_UP_ACC, 1, 1, 8);
    make_wide_weights(wv);
    uw.weights_k = 40; /* enough for every weight of make_wide_weights */
    for (int run = 0; run < 6; run++) {
      const int basins = run >= 2 && run < 4, wide = run >= 4;
      const int threads = run % 2 ? 3 : 1; /* odd: the tile store keeps no window (run_prog) */
      tr_aap_stats st;
      memset(&st, 0, sizeof st);
      memset(loads, 0, (size_t)L.nfrags * sizeof *loads);
      g_loads = loads;
      g_stats = &st;
      const int rc = run_prog(basins ? "d8_basins_perimeter" : wide ? "d8_up_wide" : "d8_up_perimeter",
                              basins ? (const void *)&b : wide ? (const void *)&uw : (const void *)&u, p,
                              wide ? wv : NULL, &L, &scheds[0], threads, 0, out, msg, sizeof msg);
      g_loads = NULL;
      g_stats = NULL;
      ASSERT_EQ_INT(rc, 0);
      if (basins)
        for (int i = 0; i < N; i++) exp[i] = ref_label(p, acc, 8, i);
      else if (wide)
        expected_exact(TR_UP_ACC, 1, p, wv, 8, exp);
      else
        expected(TR_UP_ACC, 1, p, NULL, 8, exp);
      ASSERT(same(out, exp, basins ? "labels, reads" : wide ? "wide weights, reads" : "accumulation, reads"));
      int64_t rounds = 0;
      for (int w = 0; w < st.nworkers; w++) rounds += st.w[w].rounds;
      tr_aap_stats_free(&st);
      printf("  %s, grid %d, %d thread(s): %lld rounds over %lld fragments\n",
             basins ? "labels" : wide ? "wide weights" : "accumulation",
             grids[gi], threads, (long long)rounds, (long long)L.nfrags);
      for (int64_t f = 0; f < L.nfrags; f++) ASSERT_EQ_INT(loads[f], 2);
      /* not for want of rounds: besides PEval's, at least one round for
       * every other fragment on average (labels, the fewest: about one a
       * fragment), none of which read a window */
      ASSERT(2 * rounds > 3 * L.nfrags);
    }
  }
  free(loads);
  tr_aap_layout_free(&L);
  return 0;
}

/* esri and grass codes of the same grid give the same accumulation. */
static int test_encodings(void) {
  static float p[N], q[N];
  static double a[N], b[N];
  char msg[512];
  static const float codes[2][8] = {{1, 128, 64, 32, 16, 8, 4, 2}, {8, 1, 2, 3, 4, 5, 6, 7}}; /* esri, grass */
  tr_aap_layout L;
  ASSERT_EQ_INT(make_layout(LAY_FOUR, &L), 0);
  make_dirs(TREE_GRID, p);
  for (int r = 0; r < R; r += 5) /* some cells drain off the west edge */
    if (!isnan(p[r * C])) p[r * C] = 5;
  tr_up_params u = up_params(TR_UP_ACC, 1, 0, 1);
  ASSERT_EQ_INT(run_prog("d8_up", &u, p, NULL, &L, &scheds[0], 2, 0, a, msg, sizeof msg), 0);
  for (int e = 1; e <= 2; e++) {
    for (int i = 0; i < N; i++) q[i] = isnan(p[i]) || p[i] == 0 ? p[i] : codes[e - 1][(int)p[i] - 1];
    if (e == 2) /* r.watershed marks flow that leaves the region negative */
      for (int r = 0; r < R; r += 5)
        if (!isnan(q[r * C])) q[r * C] = -q[r * C];
    u.encoding = e;
    ASSERT_EQ_INT(run_prog("d8_up", &u, q, NULL, &L, &scheds[0], 2, 0, b, msg, sizeof msg), 0);
    ASSERT(same(b, a, e == 1 ? "esri" : "grass"));
    ASSERT_EQ_INT(run_prog("d8_up_perimeter", &u, q, NULL, &L, &scheds[0], 2, 0, b, msg, sizeof msg), 0);
    ASSERT(same(b, a, e == 1 ? "esri, perimeter" : "grass, perimeter"));
  }
  ASSERT_EQ_INT(tr_d8_decode_value(TR_DIR_ESRI, 3), TR_D8_BAD);
  ASSERT_EQ_INT(tr_d8_decode_value(TR_DIR_TAUDEM, 9), TR_D8_BAD);
  ASSERT_EQ_INT(tr_d8_decode_value(TR_DIR_TAUDEM, 2.5f), TR_D8_BAD);
  ASSERT_EQ_INT(tr_d8_decode_value(TR_DIR_GRASS, -1), TR_D8_NONE);
  ASSERT_EQ_INT(tr_d8_decode_value(TR_DIR_GRASS, 8), 0);
  ASSERT_EQ_INT(tr_d8_decode_value(TR_DIR_TAUDEM, NAN), TR_D8_NODATA);
  tr_aap_layout_free(&L);
  return 0;
}

/* A cycle (a 2 x 2 ring across a fragment border) is refused naming one
 * of its cells, whatever the layout and schedule; so is a bad code. */
static int test_cycle_and_bad_code(void) {
  static float p[N];
  static double out[N];
  char msg[512];
  make_dirs(TREE_GRID, p);
  const int r0 = 12, c0 = 4; /* rows 12-13, columns 4-5: across LAY_SMALL's tiles of 7 x 5 */
  p[r0 * C + c0] = 1;            /* E */
  p[r0 * C + c0 + 1] = 7;        /* S */
  p[(r0 + 1) * C + c0 + 1] = 5;  /* W */
  p[(r0 + 1) * C + c0] = 3;      /* N */
  for (int l = 0; l < NLAY; l++) {
    tr_aap_layout L;
    ASSERT_EQ_INT(make_layout(l, &L), 0);
    for (int s = 0; s < NSCHED; s += 3) {
      char up_line[512] = "", basin_line[512] = "";
      for (int prog = 0; prog < 4; prog++) {
        static const char *const names[4] = {"d8_up", "d8_basins", "d8_up_perimeter", "d8_basins_perimeter"};
        tr_up_params u = up_params(TR_UP_ACC, 0, 0, 1);
        tr_basin_params b = {TR_DIR_TAUDEM, 0, NULL, "test"};
        const int rc = run_prog(names[prog], prog % 2 ? (const void *)&b : (const void *)&u, p, NULL, &L, &scheds[s],
                                2, 0, out, msg, sizeof msg);
        ASSERT_EQ_INT(rc, TR_EINPUT);
        ASSERT(strstr(msg, "cycle") != NULL);
        int r, c;
        ASSERT(sscanf(strstr(msg, "(row "), "(row %d, col %d)", &r, &c) == 2);
        if (prog % 2 == 0) ASSERT(r >= r0 && r <= r0 + 1 && c >= c0 && c <= c0 + 1);
        /* the perimeter programs name the same cell as d8_up and d8_basins */
        if (prog < 2) snprintf(prog ? basin_line : up_line, sizeof up_line, "%s", msg);
        else ASSERT(!strcmp(msg, prog == 2 ? up_line : basin_line));
      }
    }
    tr_aap_layout_free(&L);
  }
  make_dirs(TREE_GRID, p);
  p[20 * C + 30] = 11;
  tr_aap_layout L;
  ASSERT_EQ_INT(make_layout(LAY_SEVEN, &L), 0);
  tr_up_params u = up_params(TR_UP_ACC, 0, 0, 1);
  ASSERT_EQ_INT(run_prog("d8_up", &u, p, NULL, &L, &scheds[0], 2, 0, out, msg, sizeof msg), TR_EINPUT);
  ASSERT(strstr(msg, "(row 20, col 30) holds 11") != NULL);
  tr_aap_layout_free(&L);
  return 0;
}

/* A 1 x n Float32 raster of `v` for exact_weights' reading; its NoData is
 * 2^-100, which would need k = 100 if it counted. */
static int weights_file(const char *path, const float *v, int n) {
  GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GTiff"), path, n, 1, 1, GDT_Float32, NULL);
  if (!ds) return 1;
  GDALRasterBandH b = GDALGetRasterBand(ds, 1);
  GDALSetRasterNoDataValue(b, 0x1p-100);
  const int rc = GDALRasterIO(b, GF_Write, 0, 0, n, 1, (void *)v, n, 1, GDT_Float32, 0, 0) != CE_None;
  GDALClose(ds);
  return rc;
}

/* What the sums of a weight raster need (tr_up_weights_sums): exact in a
 * double when all are multiples of 2^-k with magnitudes summing below
 * 2^(51-k) (then d8_up_perimeter may take them), exact in 128-bit integers
 * of 2^-k units below 2^(124-k) (d8_up_wide), else rounded (d8_up). At the
 * edges of those rules, from values written to a raster and read back as the
 * programs read them; NoData, NaN and infinities (read as NaN) weigh
 * nothing; a missing raster is an error naming it. d8_up_perimeter's applies takes what flowgraph found, never
 * Strahler order. */
static int always_stop(void *user) {
  (void)user;
  return 1;
}

static int test_exact_weights(void) {
  GDALAllRegister();
  const char *path = "exact_weights.tif";
  const float half_ulp = 0x1p-24f; /* 2^-24: k = 24, so the sum must stay below 2^27 */
  struct {
    float v[4];
    int sums, k;
  } cases[] = {
      {{1, -3, 7, 65535}, TR_SUMS_DOUBLE, 0},                  /* whole numbers */
      {{0.1f, 1.9f, 0x1p-100f, NAN}, TR_SUMS_DOUBLE, 27},      /* tenths; NoData and NaN skipped */
      {{0x1p50f, 0x1p50f, 0, 0}, TR_SUMS_WIDE, 0},             /* whole, but summing to 2^51 */
      {{0x1p50f, 0x1p50f - 0x1p26f, 0, 0}, TR_SUMS_DOUBLE, 0}, /* just below it */
      {{half_ulp, 0x1p26f, 0x1p25f, 0}, TR_SUMS_DOUBLE, 24},   /* 2^-24 with 1.5 x 2^26: below 2^27 */
      {{half_ulp, 0x1p26f, 0x1p26f, 0}, TR_SUMS_WIDE, 24},     /* 2^-24 with 2^27: not */
      {{0x1p-60f, 1, 2, 3}, TR_SUMS_WIDE, 60},                 /* 2^-60: k = 60 > 52 */
      {{1e-45f, 0, 0, 0}, TR_SUMS_WIDE, 149},                  /* a subnormal (2^-149) alone */
      {{1e-45f, 1, 0, 0}, TR_SUMS_ROUND, 0},                   /* with 1: 2^149 units */
      {{0x1p96f, 0x1p95f, -0x1p-27f, 0}, TR_SUMS_WIDE, 27},    /* 1.5 x 2^123 units */
      {{0x1p96f, 0x1p96f, -0x1p-27f, 0}, TR_SUMS_ROUND, 0},    /* 2^124 units */
      {{INFINITY, -INFINITY, 5, 0}, TR_SUMS_DOUBLE, 0},        /* infinities read as NaN */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ASSERT_EQ_INT(weights_file(path, cases[i].v, 4), 0);
    int k = -1;
    tr_error e = {{0}};
    const int got = tr_up_weights_sums(path, NULL, &k, &e);
    if (got != cases[i].sums || k != cases[i].k) {
      fprintf(stderr, "weights case %zu: sums %d k %d, expected %d k %d\n", i, got, k, cases[i].sums, cases[i].k);
      return 1;
    }
  }
  int k = -1;
  tr_error e = {{0}};
  ASSERT_EQ_INT(tr_up_weights_sums("missing_weights.tif", NULL, &k, &e), TR_EINPUT); /* named */
  ASSERT(strstr(e.msg, "missing_weights.tif") != NULL);
  /* a stop asked while reading: a status (flowgraph agrees on it over the
   * ranks), not a class some ranks might not share */
  ASSERT_EQ_INT(weights_file(path, cases[0].v, 4), 0);
  tr_run_opts stop;
  tr_run_opts_init(&stop);
  stop.cancelled = always_stop;
  ASSERT_EQ_INT(tr_up_weights_sums(path, &stop, &k, &e), TR_EINTERRUPTED);
  remove(path);
  const tr_graph_body *perim = tr_graph_body_find("d8_up_perimeter", NULL);
  tr_up_params u = up_params(TR_UP_ACC, 0, 1, 100);
  ASSERT(!perim->applies(&u)); /* weights not known to sum exactly */
  u.sums = TR_SUMS_DOUBLE;
  ASSERT(perim->applies(&u));
  u.product = TR_UP_ORDER; /* never Strahler order */
  ASSERT(!perim->applies(&u));
  return 0;
}

TR_MAIN(TR_TEST(test_reference_sanity), TR_TEST(test_schedules_layouts_threads), TR_TEST(test_delayed_messages),
        TR_TEST(test_perimeter_reads_twice), TR_TEST(test_encodings), TR_TEST(test_cycle_and_bad_code),
        TR_TEST(test_exact_weights))
