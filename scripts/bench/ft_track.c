/*
 * ft_track.c - the idempotence tracker's cost per launch, at the library
 * level, where the loaded machine's noise cannot hide it: what --ft replay
 * adds to each tile launch is one outside write (the window read) and one
 * tracked launch with an input and an output region (ft.h). Times
 * ft_region_write + ft_track_launch with a function that does nothing, on
 * 1..T threads at once (each with its own regions, as the tile loop), and
 * a repair right after a launch (ft_track_error re-running the idempotent
 * launch, whose work is nothing) minus the tracking. Prints JSON lines; scripts/bench/ft sets the per-launch
 * cost against its measured per-tile compute time.
 * Usage: bench_ft_track [LAUNCHES_PER_THREAD (200000)] [MAX_THREADS (4)]
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ft.h"
#include "terrain.h"

static int nothing(void *args) {
  (void)args;
  return 0;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  const long n = argc > 1 ? atol(argv[1]) : 200000;
  const int most = argc > 2 ? atoi(argv[2]) : 4;
  for (int threads = 1; threads <= most; threads *= 2) {
    ft_tracker_opts o;
    ft_tracker_opts_init(&o);
    o.max_errors = 1 << 30;
    ft_tracker *t;
    if (ft_tracker_create(&o, &t)) return 1;
    double t0 = 0, t1 = 0, r0 = 0, r1 = 0;
    int bad = 0;
#pragma omp parallel num_threads(threads) reduction(+ : bad)
    {
      char *in = calloc(1, 1 << 16), *out = calloc(1, 1 << 16);
      bad += ft_region_add(t, in, 1 << 16, NULL) != 0 || ft_region_add(t, out, 1 << 16, NULL) != 0;
      const ft_range ri = {in, 1 << 16}, ro = {out, 1 << 16};
      struct {
        void *a, *b;
        char w[72];
      } args = {in, out, {0}};
      const ft_launch l = {1, &ri, 1, &ro, 1, nothing, &args, sizeof args};
      int64_t seq = -1;
#pragma omp barrier
#pragma omp master
      t0 = now();
      for (long i = 0; i < n; i++) {
        bad += ft_region_write(t, in, 1 << 16) != 0;
        bad += ft_track_launch(t, &l, &seq) != 0;
      }
#pragma omp barrier
#pragma omp master
      {
        t1 = now();
        r0 = now();
      }
      /* a repair right after its launch, as the tile loop does (a launch
       * many launches old may have left the history) */
      for (long i = 0; i < n / 100; i++) {
        bad += ft_region_write(t, in, 1 << 16) != 0;
        bad += ft_track_launch(t, &l, &seq) != 0;
        bad += ft_track_error(t, seq, NULL) != 0;
      }
#pragma omp barrier
#pragma omp master
      r1 = now();
      free(in);
      free(out);
    }
    ft_track_report r;
    ft_track_report_get(t, &r);
    tr_json *line = tr_json_object();
    tr_json_set(line, "bench", tr_json_str("ft_track"));
    tr_json_set(line, "threads", tr_json_int(threads));
    tr_json_set(line, "launches", tr_json_int(r.launches));
    tr_json_set(line, "track_us_per_launch", tr_json_fixed(1e6 * (t1 - t0) / (double)n, 3));
    tr_json_set(line, "repair_us", tr_json_fixed(1e6 * ((r1 - r0) / (double)(n / 100) - (t1 - t0) / (double)n), 3));
    tr_json_set(line, "reruns", tr_json_int(r.reruns));
    tr_json_set(line, "errors", tr_json_int(bad));
    tr_json_write(line, stdout);
    tr_json_free(line);
    ft_tracker_destroy(t);
  }
  return 0;
}
