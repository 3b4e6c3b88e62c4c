/*
 * basin_stats.c - flowgraph's --basin-stats: one CSV row per basin with its
 * cell count, area, elevation range and mean, mean D8 slope and outlet.
 *
 * Why a pass of its own: the label program (basin_program.c) knows a
 * cell's label but not its elevation or slope, and the labels are final
 * only at its end. So once the basins raster is made, every rank reads the
 * labels, the DEM and the slope (sd8) of the tiles it owns (grid.h's owner
 * rule, the run's --tile-size), adds each cell into its basin's partials,
 * and the partials of all ranks are combined by two allreduces: a SUM of
 * uint64 lanes (counts and sums) and a MIN of doubles (min, and -max).
 *
 * Why the sums are exact: a sum of doubles depends on its order, and the
 * order here depends on the rank count and the tiles. Each value is instead
 * rounded once to a whole number of 2^-32 units (exact for every Float32
 * value of magnitude 2^-9 or more, and every integer) and summed in a 128-bit
 * integer; values of magnitude 2^52 or more are refused, so a basin of fewer
 * than 2^43 cells never overflows. For the reduce each 128-bit sum travels
 * as four 32-bit limbs in uint64 lanes (core/wide.h), and the integer SUM
 * is the same in any order. The writer (rank 0) folds the limbs back (carries
 * included) and divides once: mean = sum / count, rounded to a double.
 *
 * Memory: BASIN_BYTES per basin on every rank (counted against --mem), and
 * one tile of labels, elevations and slopes.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dist.h"
#include "step.h"
#include "flow.h"
#include "grid.h"
#include "mem_limit.h"
#include "raster.h"
#include "side_file.h"
#include "wide.h"

typedef tr_wide wide_t;

/* The fixed point of the sums: 2^-FIX_BITS units, values below FIX_LIMIT. */
#define FIX_BITS 32
#define FIX_LIMIT 0x1p52

/* The uint64 lanes of one basin in the SUM allreduce. */
enum { L_CELLS, L_NZ, L_NS, L_Z, L_S = L_Z + 4, NLANES = L_S + 4 };

/* A basin's memory on each rank: its outlet (16), lanes (88), 128-bit
 * partial sums (32), min and -max (16), and a margin for the allocator. */
#define BASIN_BYTES 160

int tr_basin_stats_check(const char *path, tr_error *err) {
  const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path, *dot = strrchr(base, '.');
  if (dot && (!strcasecmp(dot, ".csv") || !strcasecmp(dot, ".txt"))) return TR_OK;
  return tr_fail(err, TR_EUSAGE, "--basin-stats '%s': the statistics are written as CSV only; name the file .csv",
                 path);
}

/* v as a whole number of 2^-FIX_BITS units, rounded to the nearest; -1
 * when |v| >= FIX_LIMIT. */
static int to_fixed(double v, wide_t *out) {
  if (!(fabs(v) < FIX_LIMIT)) return -1;
  *out = (wide_t)nearbyint(ldexp(v, FIX_BITS));
  return 0;
}

/* sum / n in value units, rounded once after the exact quotient's whole
 * units (exact below 2^21 in value). */
static double fixed_mean(wide_t sum, int64_t n) {
  const wide_t q = sum / n, r = sum % n;
  return ldexp((double)q + (double)r / (double)n, -FIX_BITS);
}

/* The index of `label` among the sorted outlets, or -1. */
static int64_t find_label(const tr_basin_outlet *o, int64_t n, int32_t label) {
  int64_t lo = 0, hi = n - 1;
  while (lo <= hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (o[mid].label == label) return mid;
    if (o[mid].label < label) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

typedef struct {
  int64_t nb;
  uint64_t *lane;  /* nb x NLANES */
  wide_t *zs, *ss; /* local sums of elevations and slopes */
  double *mm;      /* min of basin i at i, -max at nb + i */
} partials;

static int is_nodata(const tr_input *in, float v) { return isnan(v) || (in->has_nodata && v == (float)in->nodata); }

/* Adds the tiles this rank owns into p. */
static int scan(const tr_basin_stats_src *s, tr_input *lab, tr_input *dem, tr_input *sd8, partials *p, tr_error *err) {
  tr_grid g;
  const int64_t tile = s->run->tile_size > 0 ? s->run->tile_size : TR_DEFAULT_TILE;
  tr_grid_init(&g, lab->rows, lab->cols, tile);
  const int64_t n = tile * tile;
  int32_t *L = malloc((size_t)n * sizeof *L);
  float *Z = dem ? malloc((size_t)n * sizeof *Z) : NULL, *S = dem ? malloc((size_t)n * sizeof *S) : NULL;
  int st = !L || (dem && (!Z || !S)) ? tr_fail(err, TR_ENOMEM, "out of memory for the basin statistics") : TR_OK;
  const int rank = tr_rank(), size = tr_dist_size();
  const int32_t nodata = lab->has_nodata ? (int32_t)lab->nodata : INT32_MIN;
  int64_t at = -1;
  int32_t at_label = INT32_MIN;
  for (int64_t t = 0; t < tr_grid_count(&g) && !st; t++) {
    if (tr_grid_owner(t, size) != rank) continue;
    if (s->run->cancelled && s->run->cancelled(s->run->progress_user)) {
      st = tr_fail(err, TR_EINTERRUPTED, "interrupted");
      break;
    }
    const tr_tile w = tr_grid_tile(&g, t);
    st = tr_input_read_i32(lab, w.row0, w.col0, w.rows, w.cols, L, w.cols, err);
    if (!st && dem) st = tr_input_read_f32(dem, w.row0, w.col0, w.rows, w.cols, Z, w.cols, err);
    if (!st && dem) st = tr_input_read_f32(sd8, w.row0, w.col0, w.rows, w.cols, S, w.cols, err);
    for (int64_t k = 0; k < w.rows * w.cols && !st; k++) {
      if (L[k] == nodata || L[k] == INT32_MIN) continue;
      if (L[k] != at_label || at < 0) {
        at = find_label(s->outlets, s->noutlets, L[k]);
        at_label = L[k];
      }
      const int64_t row = w.row0 + k / w.cols, col = w.col0 + k % w.cols;
      if (at < 0) {
        st = tr_fail(err, TR_EINTERNAL, "basin statistics: label %ld at (row %lld, col %lld) of '%s' has no outlet",
                     (long)L[k], (long long)row, (long long)col, lab->path);
        break;
      }
      uint64_t *ln = p->lane + at * NLANES;
      ln[L_CELLS]++;
      if (!dem) continue;
      wide_t f;
      if (!is_nodata(dem, Z[k])) {
        if (to_fixed(Z[k], &f))
          st = tr_fail(err, TR_EINPUT,
                       "basin statistics: elevation %g at (row %lld, col %lld) of '%s' is beyond +-2^52, more than "
                       "the exact sums hold",
                       (double)Z[k], (long long)row, (long long)col, dem->path);
        else {
          ln[L_NZ]++;
          p->zs[at] += f;
          p->mm[at] = fmin(p->mm[at], Z[k]);
          p->mm[p->nb + at] = fmin(p->mm[p->nb + at], -(double)Z[k]);
        }
      }
      if (!st && !is_nodata(sd8, S[k])) {
        if (to_fixed(S[k], &f))
          st = tr_fail(err, TR_EINPUT,
                       "basin statistics: slope %g at (row %lld, col %lld) is beyond +-2^52, more than the exact "
                       "sums hold",
                       (double)S[k], (long long)row, (long long)col);
        else {
          ln[L_NS]++;
          p->ss[at] += f;
        }
      }
    }
  }
  free(L);
  free(Z);
  free(S);
  return st;
}

static void print_coord(FILE *f, double v) { fprintf(f, ",%.17g", v); }

/* Rank 0: the rows, sorted by label (the outlets are), basins with no cell
 * left out. */
static int write_csv(const tr_basin_stats_src *s, const tr_input *lab, const partials *p, const char *dst,
                     tr_error *err) {
  tr_side_file *side;
  FILE *f;
  int st = tr_side_open(dst, "basin statistics", &side, &f, err);
  if (st) return st;
  const int elev = s->dem != NULL;
  fprintf(f, "label,cells,area%s,outlet_x,outlet_y\n", elev ? ",min,mean,max,relief,mean_slope" : "");
  const double *gt = lab->gt;
  for (int64_t i = 0; i < p->nb; i++) {
    const uint64_t *ln = p->lane + i * NLANES;
    if (!ln[L_CELLS]) continue;
    const int64_t cells = (int64_t)ln[L_CELLS];
    fprintf(f, "%ld,%lld,%.17g", (long)s->outlets[i].label, (long long)cells, (double)cells * s->cell_area);
    if (elev) {
      if (ln[L_NZ]) {
        const double mn = p->mm[i], mx = -p->mm[p->nb + i];
        const double mean = fixed_mean(tr_wide_from_limbs(ln + L_Z), (int64_t)ln[L_NZ]);
        fprintf(f, ",%.17g,%.17g,%.17g,%.17g", mn, mean, mx, mx - mn);
      } else
        fprintf(f, ",,,,");
      if (ln[L_NS]) fprintf(f, ",%.17g", fixed_mean(tr_wide_from_limbs(ln + L_S), (int64_t)ln[L_NS]));
      else fprintf(f, ",");
    }
    const double r = (double)(s->outlets[i].cell / lab->cols) + 0.5, c = (double)(s->outlets[i].cell % lab->cols) + 0.5;
    print_coord(f, gt[0] + c * gt[1] + r * gt[2]);
    print_coord(f, gt[3] + c * gt[4] + r * gt[5]);
    fputc('\n', f);
  }
  return tr_side_close(side, err);
}

static void partials_free(partials *p) {
  free(p->lane);
  free(p->zs);
  free(p->ss);
  free(p->mm);
}

/* write_csv as the writer's step */
typedef struct {
  const tr_basin_stats_src *s;
  const tr_input *lab;
  const partials *p;
  const char *dst;
} csv_job;
static int csv_step(void *arg, tr_error *err) {
  const csv_job *j = arg;
  return write_csv(j->s, j->lab, j->p, j->dst, err);
}

int tr_basin_stats_write(const tr_basin_stats_src *s, const char *dst, tr_error *err) {
  const int64_t nb = s->noutlets;
  partials p = {.nb = nb};
  tr_input lab, dem, sd8;
  int nopen = 0;
  int st = tr_input_open(&lab, s->basins, 1, err);
  if (!st) nopen = 1;
  if (!st && s->dem && !(st = tr_input_open(&dem, s->dem, s->dem_band, err))) nopen = 2;
  if (!st && s->dem && !(st = tr_input_open(&sd8, s->slope, 1, err))) nopen = 3;
  if (!st) {
    const int64_t tile = s->run->tile_size > 0 ? s->run->tile_size : TR_DEFAULT_TILE;
    const int64_t room = tr_mem_room(s->run->mem, tile * tile * 12);
    char a[32], b[32];
    if (nb > INT_MAX / 2 || nb * BASIN_BYTES > room)
      st = tr_fail(err, TR_ENOMEM, "basin statistics: %lld basins need %s (%d bytes each), more than --mem leaves (%s)",
                   (long long)nb, tr_size_text(nb * BASIN_BYTES, a), BASIN_BYTES, tr_size_text(room, b));
  }
  if (!st) {
    const size_t m = (size_t)(nb ? nb : 1);
    p.lane = calloc(m * NLANES, sizeof *p.lane);
    p.zs = calloc(m, sizeof *p.zs);
    p.ss = calloc(m, sizeof *p.ss);
    p.mm = malloc(2 * m * sizeof *p.mm);
    if (!p.lane || !p.zs || !p.ss || !p.mm) st = tr_fail(err, TR_ENOMEM, "out of memory for the basin statistics");
    for (int64_t i = 0; !st && i < 2 * nb; i++) p.mm[i] = INFINITY;
  }
  if (!st) st = scan(s, &lab, nopen > 1 ? &dem : NULL, nopen > 2 ? &sd8 : NULL, &p, err);
  st = tr_step_end(s->run, st, err);
  for (int64_t i = 0; !st && i < nb; i++) {
    tr_wide_to_limbs(p.lane + i * NLANES + L_Z, p.zs[i]);
    tr_wide_to_limbs(p.lane + i * NLANES + L_S, p.ss[i]);
  }
  if (!st && nb) st = tr_dist_sum_u64(s->run, p.lane, (size_t)nb * NLANES, err);
  if (!st && nb && s->dem) st = tr_dist_min(s->run, p.mm, (int)(2 * nb), err);
  csv_job cj = {s, &lab, &p, dst};
  if (!st) st = tr_step_writer(s->run, csv_step, &cj, err);
  if (nopen > 2) tr_input_close(&sd8);
  if (nopen > 1) tr_input_close(&dem);
  if (nopen > 0) tr_input_close(&lab);
  partials_free(&p);
  return st;
}
