/*
 * aap_schedules.c - benchmark (not a test) of the AAP schedules on the depression fill.
 *
 * On a generated DEM with many closed depressions (default 2000 x 2000, tiles 250) it runs
 * each schedule (aap, bsp, ap, ssp(1), ssp(2), and aap_auto: aap with the opt-in straggler
 * bound, its default until 2026-11-23) in three settings:
 *   balanced  2 threads, fragments pinned to threads (f % 2), as two workers owning tiles;
 *   straggler the same with worker 0 sleeping 2x its round time after each round;
 *   skewed    uneven tiles (row and column cuts growing geometrically), not pinned.
 * Each case runs --repeat times, the repeats going round the schedules, each round starting
 * one schedule further on (so a change of load, or a run's place in the round, falls on all
 * of them), and every run's output must equal the first one's byte for byte.
 * One JSON line per case gives medians over the repeats: makespan (s, with its min and
 * max), total work (cells popped), rounds, DS total, and worker 0's rounds, work, busy and
 * idle time (the slow one in the straggler setting), worker 0's time outside rounds and
 * waits (w0_other_s: the makespan less its busy and idle time), worker 1's idle time, and every
 * repeat's makespan in run order (makespans_s, which the script pairs across schedules).
 * --stats-json FILE writes each run's engine statistics (core/report_json.c) as well.
 * --sim 1 runs the same cases on the engine's virtual-clock simulator instead (rounds cost
 * 0.2 ms + 0.1 us per cell popped, worker w owns fragments f % threads in every setting,
 * messages take 10 us; one run each, deterministic): the schedules compared without the
 * noise of a loaded machine. The program itself runs for real, outputs compared as above.
 * Finally it times a full 8000 x 8000 fill on 2 threads with the default options (the
 * `terrafort fill` target is ~7 s) and checks it against no reference (see the tests).
 * scripts/bench/aap_schedules runs it and writes the table of scripts/bench/RESULTS.md.
 *
 * Usage: bench_aap_schedules [--size N] [--tile T] [--big N|0] [--threads T] [--repeat N]
 *                            [--only balanced|straggler|skewed] [--schedules aap,bsp,...]
 *                            [--ds-rel X] [--aap-staleness C] [--straggler-ratio R]
 *                            [--stats-json FILE] [--sim 1]
 * (--aap-staleness sets the bound of the plain aap row only.)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fill_io.h"
#include "report_json.h"

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

/* One run's figures; a case's line gives the median of each over its repeats. */
typedef struct {
  double makespan, wall, ds, w0_busy, w0_idle, w1_idle;
  double work, rounds, max_round, w0_rounds, w0_work;
  double w0_other; /* makespan less worker 0's rounds and idle time */
} sample;
enum { NFIELDS = 12 };

static double *field(sample *s, int k) {
  double *f[NFIELDS] = {&s->makespan, &s->wall,      &s->ds,        &s->w0_busy,
                        &s->w0_idle,  &s->w1_idle,   &s->work,      &s->rounds,
                        &s->max_round, &s->w0_rounds, &s->w0_work, &s->w0_other};
  return f[k];
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Runs one case once; its engine statistics (per worker: rounds, busy, idle, DS, work)
 * go to stats_out as one JSON line when given. Returns 0 or -1. */
static int run_once(const char *setting, const char *sched_name, int rep, fill_opts *o,
                    const float *z, float *w, FILE *stats_out, sample *out) {
  tr_aap_stats st;
  char err[256] = "";
  double t0 = now_s();
  int rc = fill_array(o, z, w, &st, err, sizeof err);
  double t1 = now_s();
  if (rc) {
    fprintf(stderr, "%s/%s failed: %s\n", setting, sched_name, err);
    return -1;
  }
  memset(out, 0, sizeof *out);
  for (int i = 0; i < st.nworkers; i++) {
    out->work += (double)st.w[i].work;
    out->rounds += (double)st.w[i].rounds;
    out->ds += st.w[i].ds_s;
  }
  out->makespan = st.makespan_s;
  out->wall = t1 - t0;
  out->max_round = (double)st.max_round;
  /* worker 0 separately: in the straggler setting it is the slow one, and its rounds,
     work and idle time are what the makespan is made of */
  out->w0_rounds = (double)st.w[0].rounds;
  out->w0_work = (double)st.w[0].work;
  out->w0_busy = st.w[0].busy_s;
  out->w0_idle = st.w[0].idle_s;
  out->w1_idle = st.nworkers > 1 ? st.w[1].idle_s : 0;
  /* worker 0's time neither in a round nor waiting: choosing fragments, exchanging
     batches under the engine's lock, waking the other worker */
  out->w0_other = out->makespan - out->w0_busy - out->w0_idle;
  if (stats_out) {
    tr_json *o = tr_json_object(), *js = tr_json_object();
    tr_json_set(o, "setting", tr_json_str(setting));
    tr_json_set(o, "schedule", tr_json_str(sched_name));
    tr_json_set(o, "rep", tr_json_int(rep));
    if (js) tr_json_aap_stats(js, &st);
    tr_json_set(o, "stats", js);
    tr_json_write(o, stats_out);
    tr_json_free(o);
    fflush(stats_out);
  }
  tr_aap_stats_free(&st);
  return 0;
}

/* 1 when name is one of the comma-separated words of list */
static int in_list(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    if (len == n && !strncmp(p, name, n)) return 1;
    p += len + (p[len] == ',');
  }
  return 0;
}

/* One JSON line per case: medians over its n runs, and the makespan's min and max. */
static void print_case(const char *setting, const char *sched_name, fill_opts *o,
                       sample *runs, int n) {
  sample m;
  double v[256], lo = INFINITY, hi = -INFINITY;
  for (int k = 0; k < NFIELDS; k++) {
    for (int r = 0; r < n; r++) v[r] = *field(&runs[r], k);
    *field(&m, k) = median(v, n);
  }
  for (int r = 0; r < n; r++) {
    if (runs[r].makespan < lo) lo = runs[r].makespan;
    if (runs[r].makespan > hi) hi = runs[r].makespan;
  }
  tr_json *j = tr_json_object(), *spans = tr_json_array();
  tr_json_set(j, "setting", tr_json_str(setting));
  tr_json_set(j, "schedule", tr_json_str(sched_name));
  tr_json_set(j, "backend", tr_json_str(o->backend == TR_GRAPH_SIM ? "sim" : "threads"));
  tr_json_set(j, "rows", tr_json_int(o->rows));
  tr_json_set(j, "threads", tr_json_int(o->aap.threads));
  tr_json_set(j, "runs", tr_json_int(n));
  tr_json_set(j, "makespan_s", tr_json_fixed(m.makespan, 4));
  tr_json_set(j, "makespan_min_s", tr_json_fixed(lo, 4));
  tr_json_set(j, "makespan_max_s", tr_json_fixed(hi, 4));
  tr_json_set(j, "wall_s", tr_json_fixed(m.wall, 4));
  tr_json_set(j, "work", tr_json_fixed(m.work, 0));
  tr_json_set(j, "work_per_cell", tr_json_fixed(m.work / (double)(o->rows * o->cols), 3));
  tr_json_set(j, "rounds", tr_json_fixed(m.rounds, 0));
  tr_json_set(j, "max_round", tr_json_fixed(m.max_round, 0));
  tr_json_set(j, "ds_s", tr_json_fixed(m.ds, 4));
  tr_json_set(j, "w0_rounds", tr_json_fixed(m.w0_rounds, 0));
  tr_json_set(j, "w0_work", tr_json_fixed(m.w0_work, 0));
  tr_json_set(j, "w0_busy_s", tr_json_fixed(m.w0_busy, 4));
  tr_json_set(j, "w0_idle_s", tr_json_fixed(m.w0_idle, 4));
  tr_json_set(j, "w0_other_s", tr_json_fixed(m.w0_other, 4));
  tr_json_set(j, "w1_idle_s", tr_json_fixed(m.w1_idle, 4));
  /* every repeat's makespan in run order: repeat r of each schedule ran in the same round,
   * so the script pairs them to tell a difference from the machine's noise */
  for (int r = 0; r < n; r++) tr_json_push(spans, tr_json_fixed(runs[r].makespan, 5));
  tr_json_set(j, "makespans_s", spans);
  tr_json_write(j, stdout);
  tr_json_free(j);
  fflush(stdout);
}

int main(int argc, char **argv) {
  int64_t n = 2000, tile = 250, big = 8000;
  int threads = 2, repeat = 1;
  double ds_rel = -1; /* < 0: the engine's default */
  int aap_c = -99;    /* aap's SSP bound; -99: the engine's default */
  double ratio = -1;  /* aap's straggler ratio; < 0: the engine's default */
  const char *only = NULL; /* one setting: balanced, straggler or skewed */
  const char *scheds = NULL; /* comma-separated subset of the schedules' names */
  FILE *stats_out = NULL;
  int sim = 0; /* --sim 1: the virtual-clock simulator instead of threads */
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--size")) n = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--tile")) tile = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--big")) big = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--repeat")) repeat = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--sim")) sim = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--only")) only = argv[i + 1];
    else if (!strcmp(argv[i], "--schedules")) scheds = argv[i + 1];
    else if (!strcmp(argv[i], "--ds-rel")) ds_rel = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--aap-staleness")) aap_c = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--straggler-ratio")) ratio = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--stats-json")) {
      if (!(stats_out = fopen(argv[i + 1], "w"))) {
        perror(argv[i + 1]);
        return 1;
      }
    } else {
      fprintf(stderr, "bench_aap_schedules: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (repeat < 1 || repeat > 256) {
    fprintf(stderr, "bench_aap_schedules: --repeat takes 1..256\n");
    return 2;
  }
  struct { tr_aap_schedule s; int c; const char *name; } sc[] = {
      {TR_AAP_SCHED_AAP, -99, "aap"}, {TR_AAP_SCHED_BSP, 0, "bsp"}, {TR_AAP_SCHED_AP, 0, "ap"},
      {TR_AAP_SCHED_SSP, 1, "ssp1"}, {TR_AAP_SCHED_SSP, 2, "ssp2"},
      /* aap with the opt-in straggler bound, its default until 2026-11-23 */
      {TR_AAP_SCHED_AAP, TR_AAP_STALENESS_AUTO, "aap_auto"}};
  enum { NSCHED = sizeof sc / sizeof sc[0] };
  /* the simulator's costs: about what a round of this fill costs on the development
     machine (a fixed part for the snapshot, tile load and outbox, then per cell popped);
     worker w owns fragments f % threads (as pinned threads), slow_factor applies */
  double round_time[1024];
  for (int i = 0; i < 1024; i++) round_time[i] = 2e-4;
  tr_aap_sim_opts so;
  memset(&so, 0, sizeof so);
  so.workers = threads;
  so.round_time = round_time;
  so.time_per_work = 1e-7;
  so.latency = 1e-5;
  if (sim) {
    repeat = 1; /* deterministic */
    if (threads < 1 || threads > 1024) return 2;
  }
  if (n > 0) {
    float *z = malloc((size_t)(n * n) * sizeof(float)), *w = malloc((size_t)(n * n) * sizeof(float));
    float *ref = malloc((size_t)(n * n) * sizeof(float));
    sample *runs = malloc((size_t)NSCHED * (size_t)repeat * sizeof *runs);
    if (!z || !w || !ref || !runs) return 1;
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
    const char *setting_names[] = {"balanced", "straggler", "skewed"};
    for (int setting = 0; setting < 3; setting++) {
      const char *name = setting_names[setting];
      if (only && strcmp(only, name)) continue;
      fill_opts o[NSCHED];
      int use[NSCHED];
      for (int k = 0; k < NSCHED; k++) {
        use[k] = !scheds || in_list(scheds, sc[k].name);
        fill_opts_default(&o[k]);
        o[k].rows = o[k].cols = n;
        o[k].tile_rows = o[k].tile_cols = tile;
        o[k].aap.threads = threads;
        o[k].aap.schedule = sc[k].s;
        if (sc[k].c != -99) o[k].aap.staleness = sc[k].c; /* -99: aap as the engine has it */
        else if (aap_c != -99) o[k].aap.staleness = aap_c;
        if (ds_rel >= 0) o[k].aap.ds_rel = ds_rel;
        if (ratio > 0) o[k].aap.straggler_ratio = ratio;
        o[k].z_cache_bytes = (size_t)(n * n) * 2; /* half the input */
        if (setting == 0) o[k].aap.pin = 1;
        if (setting == 1) {
          o[k].aap.pin = 1;
          o[k].aap.inject.slow_worker = 0;
          o[k].aap.inject.slow_factor = 3;
        }
        if (setting == 2) o[k].layout = &skew;
        if (sim) {
          o[k].backend = TR_GRAPH_SIM;
          o[k].sim = &so;
        }
      }
      /* the repeats go round the schedules, so a change of load while the benchmark runs
         falls on every schedule alike, and each round starts one schedule further on, so
         that a run's place in its round falls on every schedule alike too (runs of one
         schedule differed by up to 2% with their place in the round, 21 repeats) */
      int first = 1;
      for (int r = 0; r < repeat; r++)
        for (int kk = 0; kk < NSCHED; kk++) {
          const int k = (kk + r) % NSCHED;
          if (!use[k]) continue;
          if (run_once(name, sc[k].name, r, &o[k], z, w, stats_out, &runs[k * repeat + r])) return 1;
          /* every schedule must give the same bytes: a faster wrong answer is no result */
          if (first) memcpy(ref, w, (size_t)(n * n) * sizeof(float));
          else if (memcmp(ref, w, (size_t)(n * n) * sizeof(float))) {
            fprintf(stderr, "%s/%s: output differs from the first schedule's\n", name, sc[k].name);
            return 1;
          }
          first = 0;
        }
      for (int k = 0; k < NSCHED; k++)
        if (use[k]) print_case(name, sc[k].name, &o[k], &runs[k * repeat], repeat);
    }
    tr_aap_layout_free(&skew);
    free(runs);
    free(ref);
    free(z);
    free(w);
  }
  if (big > 0) {
    float *z = malloc((size_t)(big * big) * sizeof(float)), *w = malloc((size_t)(big * big) * sizeof(float));
    if (!z || !w) return 1;
    make_dem(z, big, 2);
    fill_opts o;
    fill_opts_default(&o);
    o.rows = o.cols = big;
    o.aap.threads = threads;
    o.z_cache_bytes = (size_t)(big * big) * 2;
    sample one;
    if (run_once("full", "aap", 0, &o, z, w, stats_out, &one)) return 1;
    print_case("full", tr_aap_schedule_name(o.aap.schedule), &o, &one, 1);
    int64_t raised = 0;
    for (int64_t i = 0; i < big * big; i++) raised += w[i] > z[i];
    tr_json *j = tr_json_object();
    tr_json_set(j, "full_raised_cells", tr_json_int(raised));
    tr_json_write(j, stdout);
    tr_json_free(j);
    free(z);
    free(w);
  }
  if (stats_out) fclose(stats_out);
  return 0;
}
