/*
 * breach.c - `terrafort breach`: depression breaching (Lindsay 2016) as
 * RichDEM's rd_depressions_breach computes it: instead of filling a
 * depression up to its spill point, a channel is cut from its pit down to
 * the first cell of its outlet path that is low enough, so the terrain
 * keeps its shape.
 *
 * The method, as RichDEM's implementation does it:
 * - a pit is a cell (not on the raster's edge, not beside nodata) that is
 *   no higher than all of its eight neighbours; a pit strictly lower than
 *   all of them is first raised to its lowest neighbour (with epsilon: to
 *   the float just below it);
 * - a Priority-Flood from the edge cells and the cells beside nodata visits
 *   every cell once, lowest first, ties to the one queued first (a strict
 *   order: the bytes do not depend on how the queue is built); each visited
 *   cell remembers the cell that queued it (its back link);
 * - when a pit comes out of the queue, its elevation is the target and the
 *   path of back links from it, down to the first cell lower than the
 *   target, is its path: a length (cells, the pit included) and a depth
 *   (the deepest cut, a Float32 difference). Complete mode lowers the whole
 *   path to the target (with epsilon: one float step lower for each further
 *   cell). Selective mode does so only when length and depth are within the
 *   limits (RichDEM's SELECTIVE). Constrained mode cuts every path, but only
 *   its first max_length cells and no cell below its own elevation less
 *   max_depth - what RichDEM's documentation and its unit test
 *   (testdem1.constrained-len4-depth3) describe; its code instead cuts a
 *   path too long but shallow enough whole and lowers every cell of a path
 *   too deep by the whole depth, so a cell goes deeper than the limit;
 * - fill (selective, constrained): each cell the flood queued, in the order
 *   it was queued, is raised to the cell it came from where it is not higher
 *   (with epsilon: to one float step above it), so every cell drains along
 *   its back links. RichDEM ends the flood at the last pit, so cells not yet
 *   queued then are never filled; here the flood runs to the end when
 *   filling (cli_breach counts the cells this changes).
 *
 * This is a sequential algorithm over the whole raster (the queue's order is
 * global): the raster is held in memory, 4.75 bytes a cell plus the queue
 * (8 bytes a queued cell, counted as 16 a cell), 4 more with fill (the
 * queue's order) and 4 more in constrained mode with a depth (each cell's
 * lowest allowed elevation), counted against --mem. Under mpirun only the
 * writer (rank 0) reads the DEM and breaches it, and every tile of the result is its own (a writer-only
 * source run, executor.h), so the other ranks hold none of it; the outcome
 * is agreed before the run. The executor writes the result through its
 * usual path - so the output's handling, statistics and formats are every
 * command's. It is not (yet) a graph program: no out-of-core run, no
 * speed-up from ranks. With --burn, the lines are burnt
 * into each band of rows as it is read (io/burn.h).
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "burn.h"
#include "dist.h"
#include "executor.h"
#include "kernel.h"
#include "mem_limit.h"
#include "radix_heap.h"
#include "raster.h"
#include "side_file.h"
#include "step.h"

typedef struct {
  int32_t has_nodata;
  float nodata;
} br_params;

/* A tile's input: this head, then its cells (NaN: nodata). */
typedef struct {
  int64_t rows, cols;
} br_head;

static int br_kernel(const void *params, const tr_window *w, int64_t row0, int64_t nrows, void *outv) {
  const br_params *p = params;
  const br_head *h = (const br_head *)w->aux;
  const float *v = (const float *)(h + 1);
  float *out = outv;
  if (!h || h->cols != w->cols) return -1;
  for (int64_t r = row0; r < row0 + nrows; r++)
    for (int64_t c = 0; c < w->cols; c++) {
      const float z = v[r * h->cols + c];
      out[(r - row0) * w->cols + c] = isnan(z) && p->has_nodata ? p->nodata : z;
    }
  return 0;
}

const tr_kernel tr_kernel_breach = {
    .name = "breach", .halo = 0, .params_size = sizeof(br_params), .out_type = GDT_Float32, .bands = 1, .cpu = br_kernel};

/* ------------------------------------------------------------ the queue */

typedef struct {
  float z;
  uint32_t cell;
  uint64_t k; /* insertion number: ties go to the lower */
} br_item;

typedef struct {
  br_item *v;
  size_t n, cap;
  uint64_t count;
} br_heap;

static inline int br_less(const br_item *a, const br_item *b) { return a->z < b->z || (a->z == b->z && a->k < b->k); }

static int br_push(br_heap *h, uint32_t cell, float z) {
  if (h->n == h->cap) {
    const size_t cap = h->cap ? 2 * h->cap : 1 << 16;
    br_item *p = realloc(h->v, cap * sizeof *p);
    if (!p) return -1;
    h->v = p;
    h->cap = cap;
  }
  br_item it = {z, cell, ++h->count};
  size_t i = h->n++;
  while (i > 0) {
    const size_t up = (i - 1) / 2;
    if (!br_less(&it, &h->v[up])) break;
    h->v[i] = h->v[up];
    i = up;
  }
  h->v[i] = it;
  return 0;
}

static br_item br_pop(br_heap *h) {
  const br_item top = h->v[0], last = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && br_less(&h->v[c + 1], &h->v[c])) c++;
    if (!br_less(&h->v[c], &last)) break;
    h->v[i] = h->v[c];
    i = c;
  }
  if (h->n) h->v[i] = last;
  return top;
}

/* RichDEM's neighbour order (d8x, d8y): W, NW, N, NE, E, SE, S, SW; the
 * neighbour opposite k is (k + 4) & 7. */
static const int br_dc[8] = {-1, -1, 0, 1, 1, 1, 0, -1};
static const int br_dr[8] = {0, -1, -1, -1, 0, 1, 1, 1};

/* A cell's back link, four bits (two cells a byte, the even one low): the
 * neighbour (0-7) the flood queued it from, BR_ROOT for a cell the flood
 * starts from (an edge) or not queued. */
enum { BR_ROOT = 8, BR_LINK = 15 };
#define BR_ROOTS 0x88 /* a byte of two roots */

static inline int br_link(const uint8_t *lk, int64_t i) { return lk[i >> 1] >> ((i & 1) * 4) & BR_LINK; }
static inline void br_link_set(uint8_t *lk, int64_t i, int code) {
  const int sh = (int)(i & 1) * 4;
  lk[i >> 1] = (uint8_t)((lk[i >> 1] & ~(BR_LINK << sh)) | code << sh);
}

/* Two bits a cell, in pairs of words: in the first of a pair whether the
 * cell is queued (or nodata: never queued), in the second whether it is a
 * pit - 16 MB at 8000^2, against the byte a cell these flags and the link
 * shared before. The flood's look at a popped cell's eight neighbours and
 * at whether it is a pit touches three lines of these. */
enum { BR_SEEN = 0, BR_PITBIT = 1 };
#define NO_LINK UINT32_MAX

static inline int br_bit(const uint64_t *f, int which, int64_t i) {
  return (int)(f[2 * (i >> 6) + which] >> (i & 63)) & 1;
}
static inline void br_set(uint64_t *f, int which, int64_t i) { f[2 * (i >> 6) + which] |= (uint64_t)1 << (i & 63); }

/* The cell a back link leads to from cell i (off: each neighbour's index
 * offset), NO_LINK past a root. */
static inline uint32_t br_next(const uint8_t *lk, const int64_t *off, uint32_t i) {
  const int code = br_link(lk, i);
  return code < 8 ? (uint32_t)((int64_t)i + off[code]) : NO_LINK;
}

/* How the pits' paths are cut: the options, limits as Float32 compares them. */
typedef struct {
  tr_breach_mode mode;
  int epsilon, fill;
  uint32_t max_length; /* UINT32_MAX: none */
  float max_depth;     /* RichDEM's (float)max_depth; +Inf: none */
  double depth;        /* constrained: the cut allowed a cell, exactly; +Inf: none */
} br_how;

static inline float br_down(float z) { return nextafterf(z, -FLT_MAX); }

/* The path from pit i: its length (the pit and every cell not below the
 * level the cut would give it) and its deepest cut, as RichDEM measures
 * them (Float32 differences), stopping once over a limit. */
static void br_measure(const float *dem, const uint8_t *lk, const int64_t *off, uint32_t i, const br_how *how,
                       uint32_t *len, float *depth) {
  float target = dem[i], deepest = -FLT_MAX;
  uint32_t n = 0;
  for (uint32_t cc = i; cc != NO_LINK && dem[cc] >= target; cc = br_next(lk, off, cc)) {
    const float d = dem[cc] - target;
    if (d > deepest) deepest = d;
    n++;
    if (n > how->max_length || deepest > how->max_depth) break; /* over a limit: no need for the rest */
    if (how->epsilon) target = br_down(target);
  }
  *len = n;
  *depth = deepest;
}

/* Cuts the path from pit i down to the pit (with epsilon, one float lower a
 * cell), at most max_cells cells, no cell below least[cell] (least NULL:
 * no bound). */
static void br_cut(float *dem, const uint8_t *lk, const int64_t *off, uint32_t i, int epsilon, uint32_t max_cells,
                   const float *least) {
  float target = dem[i];
  uint32_t n = 0;
  for (uint32_t cc = i; cc != NO_LINK && n < max_cells && dem[cc] >= target; cc = br_next(lk, off, cc), n++) {
    const float v = least && least[cc] > target ? least[cc] : target;
    if (v < dem[cc]) dem[cc] = v;
    if (epsilon) target = br_down(target);
  }
}

/* The lowest a cell may go in constrained mode: its elevation less the
 * allowed cut, rounded up to a float so no cell is cut deeper than that. */
static float br_least(float z, double depth) {
  const double f = (double)z - depth;
  float v = (float)f;
  if ((double)v < f) v = nextafterf(v, FLT_MAX);
  return v;
}

/* Whether cuts have a lower bound: constrained mode with a depth. */
static int br_bounded(const br_how *how) { return how->mode == TR_BREACH_CONSTRAINED && isfinite(how->depth); }

/* The flood's queue: every cell in the order of (elevation, time queued),
 * as one binary heap of both would give. The cells queued at or above the
 * level of the last one popped from the radix heap go there (its pops are
 * in that order: tr_radix_pop_first); those queued below it - inside a
 * depression - go to a binary heap, popped first, since all of them are
 * lower than anything in the radix heap. The radix heap's pops cost no
 * comparisons and its buckets are read and written in order, where a binary
 * heap of the whole front missed the cache at its deep levels (the radix
 * heap took a third off the run at 8000^2). */
typedef struct {
  tr_radix up;  /* cells at or above level */
  br_heap down; /* cells below it */
  float level;  /* the last value popped from up (-Inf before) */
} br_queue;

/* -0 queued as +0: the binary heap took them as equal (ties to the older),
 * the radix heap's keys would put -0 first. */
static int br_queue_push(br_queue *q, uint32_t cell, float z) {
  if (z == 0) z = 0;
  if (z < q->level) return br_push(&q->down, cell, z);
  tr_radix_push(&q->up, z, cell);
  return q->up.oom ? -1 : 0;
}

/* How many pops ahead br_queue_pop fetches a cell's neighbourhood. */
#define BR_AHEAD 8

/* What the flood reads and writes around a cell it will pop. */
typedef struct {
  const float *dem;
  const uint8_t *lk;
  const uint64_t *flags;
  int64_t n, cols;
} br_grid;

static inline void br_fetch(const br_grid *g, uint32_t a) {
  if (a == UINT32_MAX || (int64_t)a < g->cols + 1 || (int64_t)a + g->cols + 1 >= g->n) return;
  for (int d = -1; d <= 1; d++) {
    const int64_t j = (int64_t)a + d * g->cols;
    __builtin_prefetch(g->dem + j - 1);
    __builtin_prefetch(g->dem + j + 1);
    __builtin_prefetch(g->flags + 2 * ((j - 1) >> 6));
    __builtin_prefetch(g->flags + 2 * ((j + 1) >> 6));
    if (d) __builtin_prefetch(g->lk + (j >> 1), 1);
  }
}

/* The next cell. Cells of equal elevation come out of the radix heap in
 * turn, and the top of the depressions' heap is the next one unless this
 * pop queues a lower cell: their neighbourhoods are fetched now, the
 * flood's cache misses overlapped. (Flags in 8 x 8 blocks, a line for a
 * neighbourhood instead of three, and the top's children fetched too made
 * no difference beyond this machine's spread, three runs each by hand.) */
static uint32_t br_queue_pop(br_queue *q, const br_grid *g) {
  if (q->down.n) {
    const uint32_t i = br_pop(&q->down).cell;
    if (q->down.n) br_fetch(g, q->down.v[0].cell);
    return i;
  }
  br_fetch(g, tr_radix_peek_first(&q->up, BR_AHEAD));
  return tr_radix_pop_first(&q->up, &q->level);
}

/* Breaches dem (rows x cols, NaN for nodata) in place. */
static int br_breach(float *dem, int64_t rows, int64_t cols, const br_how *how, tr_error *err) {
  const int64_t n = rows * cols;
  int64_t off[8];
  for (int k = 0; k < 8; k++) off[k] = br_dr[k] * cols + br_dc[k];
  uint8_t *lk = malloc((size_t)(n + 1) / 2);
  const size_t words = (size_t)(n + 63) / 64;
  uint64_t *flags = calloc(2 * words, sizeof *flags);
  tr_mem_advise_huge(lk, (size_t)(n + 1) / 2);
  tr_mem_advise_huge(flags, 2 * words * sizeof *flags);
  /* fill: the cells in the order the flood queued them, each after the one
   * it came from; constrained: the lowest each cell may be cut to */
  uint32_t *order = how->fill ? malloc((size_t)n * sizeof *order) : NULL;
  float *least = br_bounded(how) ? malloc((size_t)n * sizeof *least) : NULL;
  size_t norder = 0;
  br_queue q = {.level = -INFINITY};
  int st = TR_OK;
  if (!lk || !flags || (how->fill && !order) || (br_bounded(how) && !least))
    st = tr_fail(err, TR_ENOMEM, "out of memory for breaching (%lld cells)", (long long)n);
  if (lk) memset(lk, BR_ROOTS, (size_t)(n + 1) / 2);
  int64_t pits = 0;
  for (int64_t r = 0; r < rows && !st; r++)
    for (int64_t c = 0; c < cols && !st; c++) {
      const int64_t i = r * cols + c;
      if (isnan(dem[i])) {
        br_set(flags, BR_SEEN, i); /* never queued */
        continue;
      }
      int edge = r == 0 || c == 0 || r == rows - 1 || c == cols - 1;
      float lowest = FLT_MAX;
      for (int k = 0; k < 8 && !edge; k++) {
        const float z = dem[i + off[k]];
        if (isnan(z)) edge = 1; /* drains into nodata: an edge cell */
        else if (z < lowest) lowest = z;
      }
      if (edge) {
        if (br_queue_push(&q, (uint32_t)i, dem[i])) st = tr_fail(err, TR_ENOMEM, "out of memory for breaching's queue");
        br_set(flags, BR_SEEN, i);
        continue;
      }
      if (dem[i] < lowest) dem[i] = how->epsilon ? br_down(lowest) : lowest;
      if (dem[i] <= lowest) {
        br_set(flags, BR_PITBIT, i);
        pits++;
      }
    }
  /* the bounds from the DEM with its pits raised (cells later in the scan saw them raised) */
  for (int64_t i = 0; least && i < n && !st; i++) least[i] = isnan(dem[i]) ? 0 : br_least(dem[i], how->depth);
  const br_grid g = {dem, lk, flags, n, cols};
  /* without fill the flood ends at the last pit; with it every cell needs the
   * cell it came from */
  while ((q.down.n || q.up.total) && (pits > 0 || how->fill) && !st) {
    const int64_t i = br_queue_pop(&q, &g), r = i / cols, c = i % cols;
    if (br_bit(flags, BR_PITBIT, i)) {
      if (how->mode == TR_BREACH_SELECTIVE) {
        uint32_t len;
        float depth;
        br_measure(dem, lk, off, (uint32_t)i, how, &len, &depth);
        if (len <= how->max_length && depth <= how->max_depth)
          br_cut(dem, lk, off, (uint32_t)i, how->epsilon, UINT32_MAX, NULL);
      } else {
        br_cut(dem, lk, off, (uint32_t)i, how->epsilon, how->max_length, least);
      }
      pits--;
    }
    const int inner = r > 0 && c > 0 && r < rows - 1 && c < cols - 1;
    for (int k = 0; k < 8 && !st; k++) {
      if (!inner) {
        const int64_t rr = r + br_dr[k], cc = c + br_dc[k];
        if (rr < 0 || rr >= rows || cc < 0 || cc >= cols) continue;
      }
      const int64_t j = i + off[k];
      if (br_bit(flags, BR_SEEN, j)) continue;
      if (br_queue_push(&q, (uint32_t)j, dem[j])) st = tr_fail(err, TR_ENOMEM, "out of memory for breaching's queue");
      br_set(flags, BR_SEEN, j);
      br_link_set(lk, j, (k + 4) & 7);
      if (order) order[norder++] = (uint32_t)j;
    }
  }
  /* fill: each cell at least as high as the cell the flood came from (with
   * epsilon one float higher), in the order they were queued, so that cell
   * is final first */
  for (size_t k = 0; k < norder && !st; k++) {
    const uint32_t f = order[k], up = br_next(lk, off, f);
    if (dem[f] <= dem[up]) dem[f] = how->epsilon ? nextafterf(dem[up], FLT_MAX) : dem[up];
  }
  free(q.down.v);
  tr_radix_free(&q.up);
  free(lk);
  free(flags);
  free(order);
  free(least);
  return st;
}

/* ------------------------------------------------------------ the source */

typedef struct {
  const float *dem;
  int64_t rows, cols;
} br_src;

static int br_tile_input(void *ctx, const tr_tile *t, tr_bytes *buf, tr_error *e) {
  const br_src *s = ctx;
  const br_head hd = {t->rows, t->cols};
  const size_t need = sizeof hd + (size_t)(t->rows * t->cols) * sizeof(float);
  if (buf->cap < need) {
    void *q = realloc(buf->p, need);
    if (!q) return tr_fail(e, TR_ENOMEM, "out of memory for tile %lld", (long long)t->index);
    buf->p = q;
    buf->cap = need;
  }
  memcpy(buf->p, &hd, sizeof hd);
  float *v = (float *)((br_head *)buf->p + 1);
  for (int64_t r = 0; r < t->rows; r++)
    memcpy(v + r * t->cols, s->dem + (t->row0 + r) * s->cols + t->col0, (size_t)t->cols * sizeof(float));
  buf->len = need;
  return TR_OK;
}

void tr_breach_opts_init(tr_breach_opts *o) {
  memset(o, 0, sizeof *o);
  tr_run_opts_init(&o->run);
}

/* The options' combination, checked before anything is opened: one line. */
static int br_check(const tr_breach_opts *o, br_how *how, tr_error *err) {
  static const char *const names[] = {"complete", "selective", "constrained"};
  if ((int)o->mode < 0 || o->mode > TR_BREACH_CONSTRAINED)
    return tr_fail(err, TR_EUSAGE, "unknown breaching mode %d (complete, selective or constrained)", (int)o->mode);
  const char *mode = names[o->mode];
  if (o->max_length < 0 || o->max_length > (int64_t)UINT32_MAX - 1)
    return tr_fail(err, TR_EUSAGE, "--max-length %lld: a number of cells from 1 to %lu", (long long)o->max_length,
                   (unsigned long)UINT32_MAX - 1);
  if (!(o->max_depth >= 0) || !isfinite(o->max_depth))
    return tr_fail(err, TR_EUSAGE, "--max-depth %g: a depth in map units above 0, finite", o->max_depth);
  const int limited = o->max_length > 0 || o->max_depth > 0;
  if (o->mode == TR_BREACH_COMPLETE && limited)
    return tr_fail(err, TR_EUSAGE, "%s needs --mode selective or constrained (complete breaching cuts every path "
                   "whole)", o->max_length > 0 ? "--max-length" : "--max-depth");
  if (o->mode == TR_BREACH_COMPLETE && o->fill)
    return tr_fail(err, TR_EUSAGE, "--fill needs --mode selective or constrained (complete breaching leaves "
                   "nothing to fill)");
  if (o->mode != TR_BREACH_COMPLETE && !limited)
    return tr_fail(err, TR_EUSAGE, "--mode %s needs --max-length or --max-depth (without a limit it is complete "
                   "breaching)", mode);
  *how = (br_how){.mode = o->mode,
                  .epsilon = o->epsilon != 0,
                  .fill = o->fill != 0,
                  .max_length = o->max_length > 0 ? (uint32_t)o->max_length : UINT32_MAX,
                  .max_depth = o->max_depth > 0 ? (float)o->max_depth : INFINITY,
                  .depth = o->max_depth > 0 ? o->max_depth : INFINITY};
  return TR_OK;
}

int tr_breach(const tr_breach_opts *o, const char *src, const char *dst, tr_error *err) {
  br_how how = {.mode = TR_BREACH_COMPLETE};
  int st = br_check(o, &how, err);
  if (!st) st = tr_burn_usage(&o->burn, err);
  if (st) return st;
  tr_input in;
  if ((st = tr_input_open(&in, src, o->run.band, err))) return st;
  const tr_file_role outs[] = {
      {dst, "output"}, {o->run.stats_json, TR_ROLE_STATS_JSON}, {o->run.ft_report, TR_ROLE_FT_REPORT}};
  const tr_file_role reads[] = {{o->burn.file, "--burn"}};
  st = tr_outputs_refuse(outs, 3, reads, 1, &in, err);
  tr_burn *burn = NULL;
  if (!st) st = tr_burn_open(&burn, &o->burn, &in, &o->run, err);
  const int64_t n = in.rows * in.cols;
  /* the raster, half a byte a cell (back link) and two bits (queued, pit)
   * rounded up to a byte, and the queue counted as every cell at once (8
   * bytes each, and as much again); with fill
   * the queue's order, constrained with a depth the lowest each cell may go
   * (4 bytes a cell each) */
  const int64_t need = n * (4 + 1) + n * 16 + (how.fill ? 4 * n : 0) + (br_bounded(&how) ? 4 * n : 0);
  char have[32];
  if (!st && n >= (int64_t)NO_LINK)
    st = tr_fail(err, TR_EINPUT, "'%s' has %lld cells: breaching takes at most 4294967294", src, (long long)n);
  if (!st && o->run.mem > 0 && o->run.mem < need + 64 * ((int64_t)1 << 20))
    st = tr_fail(err, TR_ENOMEM,
                 "breach holds the whole raster: %.0f MiB for %lld cells, more than --mem %s (it is not out of core "
                 "yet)",
                 (double)(need + 64 * ((int64_t)1 << 20)) / 1048576.0, (long long)n, tr_size_text(o->run.mem, have));
  /* under mpirun the writer alone holds and breaches the raster */
  const int holder = tr_rank() == 0;
  float *dem = st || !holder ? NULL : malloc((size_t)n * sizeof *dem);
  if (!st && holder && !dem) st = tr_fail(err, TR_ENOMEM, "out of memory for '%s' (%lld cells)", src, (long long)n);
  tr_mem_advise_huge(dem, (size_t)n * sizeof *dem);
  /* the whole raster, 256 rows at a time; nodata and non-finite cells as NaN */
  for (int64_t r0 = 0; r0 < in.rows && !st && holder; r0 += 256) {
    const int64_t nr = in.rows - r0 < 256 ? in.rows - r0 : 256;
    st = tr_input_read_f32(&in, r0, 0, nr, in.cols, dem + r0 * in.cols, in.cols, err);
    for (int64_t i = r0 * in.cols; i < (r0 + nr) * in.cols && !st; i++)
      if (!isfinite(dem[i]) || (in.has_nodata && dem[i] == (float)in.nodata)) dem[i] = NAN; /* +-Inf too */
    if (!st && burn)
      st = tr_burn_window(burn, r0, 0, nr, in.cols, dem + r0 * in.cols, in.cols, in.has_nodata, (float)in.nodata, NULL,
                          NULL, err);
  }
  tr_burn_close(burn);
  if (!st && holder) st = br_breach(dem, in.rows, in.cols, &how, err);
  /* the writer's outcome, every rank's (a failure there ends them all) */
  st = tr_step_end(&o->run, st, err);
  if (!st) {
    br_params p = {.has_nodata = in.has_nodata, .nodata = (float)in.nodata};
    br_src s = {.dem = dem, .rows = in.rows, .cols = in.cols};
    tr_source source = {.grid = &in,
                        .params = &p,
                        .prod = {.type = GDT_Float32, .bands = 1, .has_nodata = in.has_nodata, .nodata = in.nodata,
                                 .file_type = GDT_Float32},
                        .ctx = &s,
                        .tile_input = br_tile_input,
                        .held = holder ? need : 0,
                        .writer_only = 1};
    st = tr_run_kernel_source(&o->run, "breach", &source, dst, err);
  }
  free(dem);
  tr_input_close(&in);
  return st;
}
