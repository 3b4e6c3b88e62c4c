/*
 * test_fill_equal.c - the AAP depression fill equals a plain sequential priority-flood.
 *
 * The reference (ref_fill below) is deliberately independent of libterrain's code: a
 * whole-grid Dijkstra-style priority-flood with a closed flag and a binary heap, seeded
 * with the DEM's edge cells and the cells next to NoData (TauDEM pitremove's outlets,
 * 8-connected). With epsilon it raises by the same up() the fill documents.
 *
 * DEMs: random pits, large flats, NoData holes (a value and NaN), a spiral maze whose
 * corridor crosses tile borders many times, and a DEM with no depression (W == Z).
 * Layouts: 1, 2, 4 uneven, 7 uneven non-grid rectangles, many small tiles, 1-row strips.
 * Every schedule (aap, aap with its opt-in straggler bound, bsp, ap, ssp(1), ssp(2), random
 * with several seeds), 1..4 threads.
 * The simulator and the threads back-end with randomised message delays (termination
 * with messages in flight) must also give the reference, for many seeds.
 * Flat fills run both programs, "fill" (W per cell) and "fill_perimeter" (a summary of
 * each tile's perimeter), in and out of core; the perimeter one reads each tile twice.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fill_io.h"
#include "mem_limit.h"
#include "report_json.h"
#include "test_fill_ref.h"
#include "tr_test.h"


static int same(const float *a, const float *b, int64_t n, const char *what) {
  for (int64_t i = 0; i < n; i++) {
    if (isnan(a[i]) && isnan(b[i])) continue;
    if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      fprintf(stderr, "%s: cell %lld (r %lld c %lld): %.9g != %.9g\n", what, (long long)i,
              (long long)(i / C), (long long)(i % C), a[i], b[i]);
      return 0;
    }
  }
  return 1;
}

typedef struct {
  tr_aap_schedule s;
  int c;
  uint64_t seed;
  const char *name;
} sched_case;

static const sched_case scheds[] = {
    {TR_AAP_SCHED_AAP, -1, 1, "aap"},     {TR_AAP_SCHED_BSP, 0, 1, "bsp"},
    {TR_AAP_SCHED_AP, 0, 1, "ap"},        {TR_AAP_SCHED_SSP, 1, 1, "ssp1"},
    {TR_AAP_SCHED_SSP, 2, 1, "ssp2"},     {TR_AAP_SCHED_RANDOM, 0, 7, "random7"},
    {TR_AAP_SCHED_RANDOM, 0, 99, "random99"}, {TR_AAP_SCHED_AAP, 2, 1, "aap-c2"},
    {TR_AAP_SCHED_AAP, TR_AAP_STALENESS_AUTO, 1, "aap-auto"}};
#define NSCHED ((int)(sizeof scheds / sizeof scheds[0]))

static int run_fill(int dem, const tr_aap_layout *L, const sched_case *sc, int threads,
                    int epsilon, float *w, tr_graph_backend be, const tr_aap_sim_opts *so,
                    double delay_max) {
  static float z[R * C];
  int has_nd;
  float nd;
  make_dem(dem, z, R, C, &has_nd, &nd);
  fill_opts o;
  fill_opts_default(&o);
  o.rows = R;
  o.cols = C;
  o.layout = L;
  o.aap.schedule = sc->s;
  o.aap.staleness = sc->c;
  o.aap.seed = sc->seed;
  o.aap.threads = threads;
  o.aap.ds_max = 0.0003;
  o.aap.inject.delay_max = delay_max;
  o.backend = be;
  o.sim = so;
  o.has_nodata = has_nd;
  o.nodata = nd;
  o.epsilon = epsilon;
  o.z_cache_bytes = (threads % 2) ? 0 : (size_t)1 << 20; /* both cache paths */
  /* every other run out of core: state beyond 8 KiB (W) or 256 bytes (the
   * perimeter summaries) spilled between rounds (most fragments on disk most
   * of the time), which must not change a bit; flat fills alternate between
   * the windowed and the perimeter program in pairs, so each runs both ways */
  static int nrun;
  const int spill = nrun % 2;
  const int perim = !epsilon && (nrun / 2) % 2;
  nrun++;
  o.method = perim ? FILL_PERIMETER : FILL_WINDOW;
  tr_state_store_stats ss = {0};
  if (spill) {
    o.state_budget = perim ? 256 : 8192;
    o.spill_dir = ".";
    o.spill_stats = &ss;
  }
  char err[256] = "";
  for (int64_t i = 0; i < R * C; i++) w[i] = -12345.0f;
  int rc = fill_array(&o, z, w, NULL, err, sizeof err);
  if (rc) fprintf(stderr, "fill failed: %d %s\n", rc, err);
  if (!rc && spill && L->nfrags > 2 && (ss.spills == 0 || ss.restores == 0)) {
    fprintf(stderr, "fill (%s) with a state budget of %lld bytes over %lld fragments spilled %lld and restored %lld\n",
            perim ? "perimeter" : "window", (long long)o.state_budget, (long long)L->nfrags, (long long)ss.spills, (long long)ss.restores);
    return -1;
  }
  return rc;
}

static void reference(int dem, int epsilon, float *w) {
  static float z[R * C];
  int has_nd;
  float nd;
  make_dem(dem, z, R, C, &has_nd, &nd);
  ref_fill(z, R, C, has_nd, nd, epsilon, 0.0f, w);
}

static int test_reference_sanity(void) {
  /* the reference itself: a closed pit is raised to its spill level, W >= Z, edges kept */
  float z[25] = {5, 5, 5, 5, 5, 5, 4, 4, 4, 5, 5, 4, 1, 4, 3, 5, 4, 4, 4, 5, 5, 5, 5, 5, 5};
  float w[25];
  ref_fill(z, 5, 5, 0, NAN, 0, 0, w);
  ASSERT_NEAR(w[12], 4, 0); /* spills over the 4 ring through the 3 on the edge */
  ASSERT_NEAR(w[6], 4, 0);
  ASSERT_NEAR(w[14], 3, 0);
  float c[R * C];
  reference(DEM_PITS, 0, c);
  int raised = 0;
  static float z2[R * C];
  int hn;
  float nd;
  make_dem(DEM_PITS, z2, R, C, &hn, &nd);
  for (int i = 0; i < R * C; i++) {
    ASSERT(c[i] >= z2[i]);
    raised += c[i] > z2[i];
  }
  ASSERT(raised > 50); /* the pits DEM really has depressions */
  return 0;
}

static int test_one_fragment_equals_reference(void) {
  float ref[R * C], w[R * C];
  tr_aap_layout L;
  ASSERT_EQ_INT(make_layout(LAY_ONE, &L), 0);
  for (int d = 0; d < NDEM; d++) {
    reference(d, 0, ref);
    ASSERT_EQ_INT(run_fill(d, &L, &scheds[0], 1, 0, w, TR_GRAPH_THREADS, NULL, 0), 0);
    ASSERT(same(ref, w, R * C, dem_name[d]));
  }
  tr_aap_layout_free(&L);
  return 0;
}

static int test_no_depressions_keeps_z(void) {
  static float z[R * C];
  float w[R * C];
  int hn;
  float nd;
  make_dem(DEM_NODEP, z, R, C, &hn, &nd);
  tr_aap_layout L;
  ASSERT_EQ_INT(make_layout(LAY_SMALL, &L), 0);
  ASSERT_EQ_INT(run_fill(DEM_NODEP, &L, &scheds[0], 2, 0, w, TR_GRAPH_THREADS, NULL, 0), 0);
  ASSERT(same(z, w, R * C, "W == Z"));
  tr_aap_layout_free(&L);
  return 0;
}

/* Every DEM x layout x schedule, threads cycling 1..4. */
static int test_schedules_layouts_threads(void) {
  float ref[R * C], w[R * C];
  char what[128];
  int runs = 0;
  for (int d = 0; d < NDEM; d++) {
    reference(d, 0, ref);
    for (int l = 0; l < NLAY; l++) {
      tr_aap_layout L;
      ASSERT_EQ_INT(make_layout(l, &L), 0);
      for (int s = 0; s < NSCHED; s++) {
        int threads = 1 + (d + l + s) % 4;
        snprintf(what, sizeof what, "%s/%s/%s/t%d", dem_name[d], lay_name[l], scheds[s].name, threads);
        ASSERT_EQ_INT(run_fill(d, &L, &scheds[s], threads, 0, w, TR_GRAPH_THREADS, NULL, 0), 0);
        if (!same(ref, w, R * C, what)) return 1;
        runs++;
      }
      tr_aap_layout_free(&L);
    }
  }
  ASSERT_EQ_INT(runs, NDEM * NLAY * NSCHED);
  return 0;
}

/* The same case on 1, 2, 3 and 4 threads (and pinned) gives byte-identical output. */
static int test_thread_counts(void) {
  float ref[R * C], w[R * C];
  tr_aap_layout L;
  ASSERT_EQ_INT(make_layout(LAY_SMALL, &L), 0);
  reference(DEM_SPIRAL, 0, ref);
  for (int t = 1; t <= 4; t++)
    for (int s = 0; s < NSCHED; s++) {
      ASSERT_EQ_INT(run_fill(DEM_SPIRAL, &L, &scheds[s], t, 0, w, TR_GRAPH_THREADS, NULL, 0), 0);
      ASSERT(same(ref, w, R * C, "threads"));
    }
  tr_aap_layout_free(&L);
  return 0;
}

/* Termination with messages in flight, threads: each batch is parked for a random time. */
static int test_threads_random_delays(void) {
  float ref[R * C], w[R * C];
  tr_aap_layout L;
  ASSERT_EQ_INT(make_layout(LAY_SMALL, &L), 0);
  int dems[] = {DEM_SPIRAL, DEM_PITS, DEM_NODATA_NAN};
  for (int k = 0; k < 3; k++) {
    reference(dems[k], 0, ref);
    for (uint64_t seed = 1; seed <= 12; seed++) {
      sched_case sc = scheds[seed % NSCHED];
      sc.seed = seed;
      ASSERT_EQ_INT(run_fill(dems[k], &L, &sc, 1 + (int)(seed % 4), 0, w, TR_GRAPH_THREADS, NULL, 0.002), 0);
      ASSERT(same(ref, w, R * C, "threads+delays"));
    }
  }
  tr_aap_layout_free(&L);
  return 0;
}

/* Termination with messages in flight, simulator: latencies far longer than rounds, with
   jitter, so every fragment is often idle while batches travel; many seeds. */
static int test_sim_random_latency(void) {
  float ref[R * C], w[R * C];
  int dems[] = {DEM_SPIRAL, DEM_FLATS, DEM_NODATA_VAL, DEM_PITS};
  for (int l = 1; l < NLAY; l++) {
    tr_aap_layout L;
    ASSERT_EQ_INT(make_layout(l, &L), 0);
    for (int k = 0; k < 4; k++) {
      reference(dems[k], 0, ref);
      for (uint64_t seed = 1; seed <= 10; seed++) {
        sched_case sc = scheds[(seed + (uint64_t)l) % NSCHED];
        sc.seed = seed;
        double rt[3] = {1, 2.5, 0.5};
        tr_aap_sim_opts so = {0};
        so.workers = 1 + (int)(seed % 3);
        so.round_time = rt;
        so.time_per_work = 0.001;
        so.latency = 5;
        so.latency_jitter = 40;
        ASSERT_EQ_INT(run_fill(dems[k], &L, &sc, 1, 0, w, TR_GRAPH_SIM, &so, 0), 0);
        ASSERT(same(ref, w, R * C, "sim+latency"));
      }
    }
    tr_aap_layout_free(&L);
  }
  return 0;
}

/* epsilon variant: equals its reference on every layout; a strictly downhill path from
   every cell; >= the flat fill. */
static int test_epsilon_variant(void) {
  float ref[R * C], flat[R * C], w[R * C];
  static float z[R * C];
  for (int d = 0; d < NDEM; d++) {
    int hn;
    float nd;
    make_dem(d, z, R, C, &hn, &nd);
    reference(d, 1, ref);
    reference(d, 0, flat);
    for (int l = 0; l < NLAY; l++) {
      tr_aap_layout L;
      ASSERT_EQ_INT(make_layout(l, &L), 0);
      ASSERT_EQ_INT(run_fill(d, &L, &scheds[l % NSCHED], 1 + l % 3, 1, w, TR_GRAPH_THREADS, NULL, 0), 0);
      ASSERT(same(ref, w, R * C, "epsilon"));
      tr_aap_layout_free(&L);
    }
    for (int64_t i = 0; i < R * C; i++) {
      int nodata = isnan(z[i]) || (hn && z[i] == nd);
      if (nodata) continue;
      ASSERT(w[i] >= flat[i]);
      /* follow the lowest neighbour: must strictly descend until an outlet */
      int64_t cur = i;
      for (int steps = 0;; steps++) {
        ASSERT(steps <= R * C);
        int64_t r = cur / C, c = cur % C;
        int outlet = r == 0 || c == 0 || r == R - 1 || c == C - 1;
        int64_t best = -1;
        for (int dr = -1; dr <= 1; dr++)
          for (int dc = -1; dc <= 1; dc++) {
            int64_t rr = r + dr, cc = c + dc;
            if ((dr == 0 && dc == 0) || rr < 0 || rr >= R || cc < 0 || cc >= C) continue;
            int64_t j = rr * C + cc;
            if (isnan(z[j]) || (hn && z[j] == nd)) { outlet = 1; continue; }
            if (best < 0 || w[j] < w[best]) best = j;
          }
        if (outlet) break;
        ASSERT(best >= 0 && w[best] < w[cur]);
        cur = best;
      }
    }
    /* and the flat fill has flats the epsilon variant removed */
  }
  return 0;
}

static int test_epsilon_given_increment(void) {
  float w1[R * C], w2[R * C];
  static float z[R * C];
  int hn;
  float nd;
  make_dem(DEM_FLATS, z, R, C, &hn, &nd);
  ref_fill(z, R, C, hn, nd, 1, 0.01f, w1);
  tr_aap_layout L;
  ASSERT_EQ_INT(make_layout(LAY_SEVEN, &L), 0);
  fill_opts o;
  fill_opts_default(&o);
  o.rows = R; o.cols = C; o.layout = &L; o.epsilon = 1; o.eps = 0.01f; o.aap.threads = 3;
  char err[128];
  ASSERT_EQ_INT(fill_array(&o, z, w2, NULL, err, sizeof err), 0);
  ASSERT(same(w1, w2, R * C, "eps 0.01"));
  /* inside the flat basin at 2 (ringed by 8) the values now differ */
  ASSERT(w2[15 * C + 10] != w2[15 * C + 11] || w2[15 * C + 10] != w2[16 * C + 10]);
  tr_aap_layout_free(&L);
  return 0;
}

static int failing_loader(void *u, int64_t r0, int64_t c0, int64_t r, int64_t c, float *d) {
  (void)u; (void)c0; (void)r; (void)c; (void)d;
  return r0 > 10 ? -1 : 0;
}

/* Regression (a flaky test_threads_random_delays: "cell 1865: -0 != 0"): -0 and +0 are
   equal elevations, so min/max and the flood's `<` tests keep whichever of the two reached
   a cell first, and the output bytes depended on message order. Here the pit (1,1) of a
   3 x 3 DEM spills at level 0 both north (+0) and south (-0); with 1-row fragments and
   the simulator, the north or the south message reaches the pit's fragment first
   depending on which worker is slow. Both orders (and one fragment) must give the same
   bytes, and the fill's convention is that every zero is +0. */
static int test_signed_zero_ties(void) {
  float z[9] = {100, 0.0f, 100, 100, -5, 100, 100, -0.0f, 100};
  float w[3][9];
  tr_aap_layout L;
  ASSERT_EQ_INT(tr_aap_layout_grid(&L, 3, 3, 1, 3), 0);
  double slow_south[3] = {1, 1, 5}, slow_north[3] = {5, 1, 1};
  const double *rts[2] = {slow_south, slow_north};
  for (int k = 0; k < 3; k++) {
    fill_opts o;
    fill_opts_default(&o);
    o.rows = 3;
    o.cols = 3;
    tr_aap_sim_opts so = {0};
    if (k < 2) {
      o.layout = &L;
      o.aap.schedule = TR_AAP_SCHED_AP;
      o.backend = TR_GRAPH_SIM;
      so.workers = 3;
      so.round_time = rts[k];
      so.latency = 0.5;
      o.sim = &so;
    }
    char err[128] = "";
    ASSERT_EQ_INT(fill_array(&o, z, w[k], NULL, err, sizeof err), 0);
    ASSERT_NEAR(w[k][4], 0, 0);
  }
  ASSERT(memcmp(w[0], w[1], sizeof w[0]) == 0);
  ASSERT(memcmp(w[0], w[2], sizeof w[0]) == 0);
  ASSERT(!signbit(w[0][4]));
  ASSERT(!signbit(w[0][7])); /* the -0 outlet itself reads as +0 */
  tr_aap_layout_free(&L);
  return 0;
}

/* Counts the windows loaded per tile (the Z cache is off, so every round that needs
   a tile's elevations loads its window). */
typedef struct {
  const float *z;
  float *w;
  int64_t tile;      /* square tiles of this side */
  int64_t loads[64];
} count_io;

static int count_load(void *u, int64_t r0, int64_t c0, int64_t r, int64_t c, float *d) {
  count_io *io = u;
  /* the window is the tile grown by its halo, clipped to the grid: its tile is the
     one holding the window's centre */
  const int64_t tr = (r0 + r / 2) / io->tile, tc = (c0 + c / 2) / io->tile;
  io->loads[tr * ((C + io->tile - 1) / io->tile) + tc]++;
  for (int64_t i = 0; i < r; i++) memcpy(d + i * c, io->z + (r0 + i) * C + c0, (size_t)c * sizeof(float));
  return 0;
}

static int count_write(void *u, int64_t r0, int64_t c0, int64_t r, int64_t c, const float *w) {
  count_io *io = u;
  for (int64_t i = 0; i < r; i++) memcpy(io->w + (r0 + i) * C + c0, w + i * c, (size_t)c * sizeof(float));
  return 0;
}

/* The perimeter program reads each tile's elevations exactly twice (PEval and
   Assemble), however many rounds the spiral's corridor takes across tile borders;
   the windowed program reads them once per round, more on this DEM. Both give the
   reference, on threads and with most summaries spilled. */
static int test_perimeter_reads_each_tile_twice(void) {
  static float z[R * C];
  float ref[R * C], w[R * C];
  int hn;
  float nd;
  make_dem(DEM_SPIRAL, z, R, C, &hn, &nd);
  ref_fill(z, R, C, hn, nd, 0, 0, ref);
  const int64_t tile = 8, ntiles = ((R + tile - 1) / tile) * ((C + tile - 1) / tile);
  for (int m = 0; m < 4; m++) {
    const int perim = m < 2;
    count_io io = {z, w, tile, {0}};
    fill_opts o;
    fill_opts_default(&o);
    o.rows = R;
    o.cols = C;
    o.tile_rows = o.tile_cols = tile;
    o.aap.threads = 1 + m % 2;
    o.has_nodata = hn;
    o.nodata = nd;
    o.z_cache_bytes = 0;
    o.method = perim ? FILL_PERIMETER : FILL_WINDOW;
    tr_state_store_stats ss = {0};
    if (m % 2) {
      o.state_budget = 256;
      o.spill_dir = ".";
      o.spill_stats = &ss;
    }

    tr_aap_stats st;
    char err[128] = "";
    for (int64_t i = 0; i < R * C; i++) w[i] = -1;
    ASSERT_EQ_INT(fill_run(&o, count_load, count_write, &io, &st, err, sizeof err), 0);
    ASSERT(same(ref, w, R * C, perim ? "perimeter" : "window"));
    int64_t rounds = 0, total = 0, most = 0;
    for (int i = 0; i < st.nworkers; i++) rounds += st.w[i].rounds;
    tr_aap_stats_free(&st);
    for (int64_t t = 0; t < ntiles; t++) {
      total += io.loads[t];
      if (io.loads[t] > most) most = io.loads[t];
      if (perim) ASSERT_EQ_INT(io.loads[t], 2);
    }
    if (m % 2) ASSERT(ss.spills > 0 && ss.restores > 0);
    /* many more rounds than two per tile: the bound is not the schedule's luck */
    ASSERT(rounds > 3 * ntiles);
    if (!perim) ASSERT(most > 4 && total > 3 * ntiles);
  }
  return 0;
}

static int test_errors(void) {
  fill_opts o;
  fill_opts_default(&o);
  char err[256] = "";
  ASSERT(fill_run(&o, failing_loader, NULL, NULL, NULL, err, sizeof err) == TR_AAP_EINVAL); /* rows unset */
  o.rows = 40; o.cols = 40; o.tile_rows = o.tile_cols = 8;
  int rc = fill_run(&o, failing_loader, NULL, NULL, NULL, err, sizeof err);
  ASSERT(rc == TR_AAP_EPROGRAM);
  ASSERT(strlen(err) > 0);
  o.tile_rows = 0;
  ASSERT(fill_run(&o, failing_loader, NULL, NULL, NULL, err, sizeof err) == TR_AAP_EINVAL);
  return 0;
}

static int test_stats_json(void) {
  static float z[R * C];
  float w[R * C];
  int hn;
  float nd;
  make_dem(DEM_PITS, z, R, C, &hn, &nd);
  fill_opts o;
  fill_opts_default(&o);
  o.rows = R; o.cols = C; o.tile_rows = 16; o.tile_cols = 16; o.aap.threads = 2;
  tr_aap_stats st;
  char err[128];
  ASSERT_EQ_INT(fill_array(&o, z, w, &st, err, sizeof err), 0);
  ASSERT_EQ_INT(st.nworkers, 2);
  int64_t rounds = 0, work = 0, sent = 0, recv = 0;
  for (int i = 0; i < st.nworkers; i++) {
    rounds += st.w[i].rounds; work += st.w[i].work;
    sent += st.w[i].msgs_sent; recv += st.w[i].msgs_recv;
  }
  ASSERT(rounds >= 12); /* 12 fragments, PEval each, plus IncEval rounds */
  ASSERT(work >= R * C); /* every cell popped at least once */
  ASSERT(sent > 0 && sent == recv);
  ASSERT(st.waves >= 2);
  tr_json *js = tr_json_object();
  ASSERT_EQ_INT(tr_json_aap_stats(js, &st), 0);
  char *buf = tr_json_text(js);
  tr_json_free(js);
  ASSERT(buf != NULL);
  ASSERT(strstr(buf, "\"workers\":[{\"worker\":0,"));
  ASSERT(strstr(buf, "\"schedule\":\"aap\""));
  ASSERT(strstr(buf, "\"idle_s\""));
  ASSERT(strstr(buf, "\"ds_s\""));
  free(buf);
  tr_aap_stats_free(&st);
  return 0;
}

/* The planner's choice, which `terrafort fill` makes from --mem (FILL_AUTO),
 * over a sweep of memory from below any run's need to above W's: first a
 * refusal with the planner's line, then W per cell spilling (its minimum is
 * below the twin's), then fill_perimeter (its rounds and two tiles'
 * perimeters fit, W does not), then W per cell all in memory; --epsilon's
 * body, which has no twin, never changes. Every run gives the reference. */
static int test_planner_chooses(void) {
  static float z[R * C];
  float ref[R * C], w[R * C];
  int hn;
  float nd;
  make_dem(DEM_SPIRAL, z, R, C, &hn, &nd);
  const int64_t process = TR_PROCESS_BYTES;
  for (int epsilon = 0; epsilon < 2; epsilon++) {
    ref_fill(z, R, C, hn, nd, epsilon, 0, ref);
    /* 0 refused, 1 the main body spilling, 2 the twin, 3 the main body in memory */
    int phase = 0, seen[4] = {0};
    for (int64_t extra = 0; extra <= 160 << 10; extra += 1024) {
      fill_opts o;
      fill_opts_default(&o);
      o.rows = R;
      o.cols = C;
      o.tile_rows = o.tile_cols = 8;
      o.aap.threads = 1;
      o.has_nodata = hn;
      o.nodata = nd;
      o.z_cache_bytes = 0;
      o.epsilon = epsilon;
      o.mem = process + extra;
      o.spill_dir = ".";
      tr_state_store_stats ss = {0};
      o.spill_stats = &ss;
      char err[512] = "";
      const int rc = fill_array(&o, z, w, NULL, err, sizeof err);
      int now;
      if (rc) {
        ASSERT_EQ_INT(rc, TR_AAP_ENOMEM);
        ASSERT(strstr(err, "needs at least") != NULL);
        now = 0;
      } else {
        ASSERT(same(ref, w, R * C, o.chosen));
        const char *main_body = epsilon ? "fill_eps" : "fill";
        if (!strcmp(o.chosen, "fill_perimeter")) now = 2;
        else {
          ASSERT(!strcmp(o.chosen, main_body));
          now = ss.spills > 0 ? 1 : 3;
        }
        if (now == 2) ASSERT(!epsilon);
      }
      ASSERT(now >= phase); /* more memory never goes back to a smaller plan */
      phase = now;
      seen[now] = 1;
    }
    ASSERT(seen[0] && seen[1] && seen[3]);
    ASSERT_EQ_INT(seen[2], !epsilon);
  }
  return 0;
}

TR_MAIN(TR_TEST(test_reference_sanity), TR_TEST(test_perimeter_reads_each_tile_twice), TR_TEST(test_one_fragment_equals_reference),
        TR_TEST(test_no_depressions_keeps_z), TR_TEST(test_schedules_layouts_threads),
        TR_TEST(test_thread_counts), TR_TEST(test_threads_random_delays),
        TR_TEST(test_sim_random_latency), TR_TEST(test_epsilon_variant),
        TR_TEST(test_epsilon_given_increment), TR_TEST(test_signed_zero_ties),
        TR_TEST(test_errors), TR_TEST(test_stats_json), TR_TEST(test_planner_chooses))
