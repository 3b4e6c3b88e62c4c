/*
 * aap_schedules.c - benchmark (not a test) of the AAP schedules on the depression fill.
 *
 * On a generated DEM with many closed depressions (default 2000 x 2000, tiles 250) it runs
 * each schedule (aap, bsp, ap, ssp(1), ssp(2)) in three settings and prints one JSON line
 * per case with the makespan (s), total work (cells popped), rounds and DS total:
 *   balanced  2 threads, fragments pinned to threads (f % 2), as two workers owning tiles;
 *   straggler the same with worker 0 sleeping 2x its round time after each round;
 *   skewed    uneven tiles (row and column cuts growing geometrically), not pinned.
 * Finally it times a full 8000 x 8000 fill on 2 threads with the default options (the
 * `terrafort fill` target is ~7 s) and checks it against no reference (see the tests).
 *
 * Usage: bench_aap_schedules [--size N] [--tile T] [--big N|0] [--threads T]
 *                            [--only balanced|straggler|skewed] [--ds-rel X]
 *                            [--aap-staleness C] [--straggler-ratio R]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fill.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* smooth hills plus noise: many closed depressions of all sizes, some flats */
static void make_dem(float *z, int64_t n, uint64_t seed) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (int64_t r = 0; r < n; r++)
    for (int64_t c = 0; c < n; c++) {
      s ^= s << 13;
      s ^= s >> 7;
      s ^= s << 17;
      double noise = (double)(s >> 11) / 9007199254740992.0;
      double v = 40 * sin((double)r * 0.013) * cos((double)c * 0.011) +
                 15 * sin((double)(r + 2 * c) * 0.05) + 6 * noise;
      z[r * n + c] = (float)(round(v * 8) / 8);
    }
}

static void run_case(const char *setting, const char *sched_name, const tr_fill_opts *o,
                     const float *z, float *w) {
  tr_aap_stats st;
  char err[256] = "";
  double t0 = now_s();
  int rc = tr_fill_array(o, z, w, &st, err, sizeof err);
  double t1 = now_s();
  if (rc) {
    fprintf(stderr, "%s/%s failed: %s\n", setting, sched_name, err);
    return;
  }
  int64_t work = 0, rounds = 0;
  double ds = 0;
  for (int i = 0; i < st.nworkers; i++) {
    work += st.w[i].work;
    rounds += st.w[i].rounds;
    ds += st.w[i].ds_s;
  }
  /* worker 0 separately: in the straggler setting it is the slow one, and its rounds
     and work are what the makespan is made of */
  printf("{\"setting\":\"%s\",\"schedule\":\"%s\",\"rows\":%lld,\"threads\":%d,"
         "\"makespan_s\":%.4f,\"wall_s\":%.4f,\"work\":%lld,\"work_per_cell\":%.3f,"
         "\"rounds\":%lld,\"max_round\":%lld,\"ds_s\":%.4f,\"w0_rounds\":%lld,"
         "\"w0_work\":%lld}\n",
         setting, sched_name, (long long)o->rows, o->aap.threads, st.makespan_s, t1 - t0,
         (long long)work, (double)work / (double)(o->rows * o->cols), (long long)rounds,
         (long long)st.max_round, ds, (long long)st.w[0].rounds, (long long)st.w[0].work);
  fflush(stdout);
  tr_aap_stats_free(&st);
}

int main(int argc, char **argv) {
  int64_t n = 2000, tile = 250, big = 8000;
  int threads = 2;
  double ds_rel = -1; /* < 0: the engine's default */
  int aap_c = -99;    /* aap's SSP bound; -99: the engine's default */
  double ratio = -1;  /* aap's straggler ratio; < 0: the engine's default */
  const char *only = NULL; /* one setting: balanced, straggler or skewed */
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--size")) n = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--tile")) tile = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--big")) big = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--only")) only = argv[i + 1];
    else if (!strcmp(argv[i], "--ds-rel")) ds_rel = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--aap-staleness")) aap_c = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--straggler-ratio")) ratio = atof(argv[i + 1]);
  }
  struct { tr_aap_schedule s; int c; const char *name; } sc[] = {
      {TR_AAP_SCHED_AAP, -1, "aap"}, {TR_AAP_SCHED_BSP, 0, "bsp"}, {TR_AAP_SCHED_AP, 0, "ap"},
      {TR_AAP_SCHED_SSP, 1, "ssp1"}, {TR_AAP_SCHED_SSP, 2, "ssp2"}};
  if (n > 0) {
    float *z = malloc((size_t)(n * n) * sizeof(float)), *w = malloc((size_t)(n * n) * sizeof(float));
    if (!z || !w) return 1;
    make_dem(z, n, 1);
    /* skewed tiles: cuts growing by 1.5x */
    int64_t cuts[64];
    int nc = 0;
    cuts[nc++] = 0;
    for (double step = (double)tile / 4; cuts[nc - 1] < n && nc < 63; step *= 1.5) {
      int64_t next = cuts[nc - 1] + (int64_t)step;
      cuts[nc] = next < n ? next : n;
      nc++;
    }
    tr_aap_layout skew;
    if (tr_aap_layout_cuts(&skew, n, n, nc - 1, cuts, nc - 1, cuts)) return 1;
    for (int setting = 0; setting < 3; setting++)
      for (size_t k = 0; k < sizeof sc / sizeof sc[0]; k++) {
        tr_fill_opts o;
        tr_fill_opts_default(&o);
        o.rows = o.cols = n;
        o.tile_rows = o.tile_cols = tile;
        o.aap.threads = threads;
        o.aap.schedule = sc[k].s;
        if (sc[k].s != TR_AAP_SCHED_AAP) o.aap.staleness = sc[k].c;
        else if (aap_c != -99) o.aap.staleness = aap_c;
        if (ds_rel >= 0) o.aap.ds_rel = ds_rel;
        if (ratio > 0) o.aap.straggler_ratio = ratio;
        o.z_cache_bytes = (size_t)(n * n) * 2; /* half the input */
        const char *name = "balanced";
        if (setting == 0) o.aap.pin = 1;
        if (setting == 1) {
          o.aap.pin = 1;
          o.aap.inject.slow_worker = 0;
          o.aap.inject.slow_factor = 3;
          name = "straggler";
        }
        if (setting == 2) {
          o.layout = &skew;
          name = "skewed";
        }
        if (!only || !strcmp(only, name)) run_case(name, sc[k].name, &o, z, w);
      }
    tr_aap_layout_free(&skew);
    free(z);
    free(w);
  }
  if (big > 0) {
    float *z = malloc((size_t)(big * big) * sizeof(float)), *w = malloc((size_t)(big * big) * sizeof(float));
    if (!z || !w) return 1;
    make_dem(z, big, 2);
    tr_fill_opts o;
    tr_fill_opts_default(&o);
    o.rows = o.cols = big;
    o.aap.threads = threads;
    o.z_cache_bytes = (size_t)(big * big) * 2;
    run_case("full", "aap", &o, z, w);
    int64_t raised = 0;
    for (int64_t i = 0; i < big * big; i++) raised += w[i] > z[i];
    printf("{\"full_raised_cells\":%lld}\n", (long long)raised);
    free(z);
    free(w);
  }
  return 0;
}
