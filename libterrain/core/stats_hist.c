/*
 * stats_hist.c - exact histograms and percentiles through libcoll's
 * halving allreduce (see stats_hist.h for the idea and the rules).
 *
 * Scratch file layout: records of {int32 band, int32 0, int64 n} followed
 * by n keys of key_bits / 8 bytes, one record per tile and band, in the
 * order the sink put them (the order does not matter: only counts are kept).
 */
#include "stats_hist.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll.h"
#include "status.h"

#define CHUNK 1024 /* cells converted to float64 at a time */
#define READ_BYTES ((size_t)1 << 20)

typedef struct {
  int32_t band, zero;
  int64_t n;
} rec_head;

/* ---------------------------------------------------------------- keys */

static int key_bits_of(GDALDataType t) {
  switch (t) {
    case GDT_Byte:
    case GDT_Int16:
    case GDT_UInt16:
      return 16;
    case GDT_Int32:
    case GDT_UInt32:
    case GDT_Float32:
      return 32;
    default:
      return 64;
  }
}

/* The key of a valid (not NaN) value of a band of type t. -0 and +0 are
 * one value (they compare equal) and get +0's key. */
static uint64_t key_of(GDALDataType t, double v) {
  switch (t) {
    case GDT_Byte:
    case GDT_UInt16:
    case GDT_UInt32:
      return (uint64_t)v;
    case GDT_Int16:
      return (uint64_t)((int64_t)v + 32768);
    case GDT_Int32:
      return (uint64_t)((int64_t)v + 2147483648LL);
    case GDT_Float32: {
      float f = (float)v;
      if (f == 0) f = 0.0f;
      uint32_t u;
      memcpy(&u, &f, sizeof u);
      return (u & 0x80000000u) ? (uint64_t)(uint32_t)~u : (uint64_t)(u | 0x80000000u);
    }
    default: {
      if (v == 0) v = 0.0;
      uint64_t u;
      memcpy(&u, &v, sizeof u);
      return (u >> 63) ? ~u : u | (UINT64_C(1) << 63);
    }
  }
}

static double value_of(GDALDataType t, uint64_t k) {
  switch (t) {
    case GDT_Byte:
    case GDT_UInt16:
    case GDT_UInt32:
      return (double)k;
    case GDT_Int16:
      return (double)((int64_t)k - 32768);
    case GDT_Int32:
      return (double)((int64_t)k - 2147483648LL);
    case GDT_Float32: {
      uint32_t u = (uint32_t)k;
      u = (u & 0x80000000u) ? u & 0x7fffffffu : ~u;
      float f;
      memcpy(&f, &u, sizeof f);
      return f;
    }
    default: {
      k = (k >> 63) ? k & ~(UINT64_C(1) << 63) : ~k;
      double d;
      memcpy(&d, &k, sizeof d);
      return d;
    }
  }
}

static uint64_t key_at(const void *keys, int bits, int64_t i) {
  if (bits == 16) return ((const uint16_t *)keys)[i];
  if (bits == 32) return ((const uint32_t *)keys)[i];
  return ((const uint64_t *)keys)[i];
}

static void key_put(void *keys, int bits, int64_t i, uint64_t k) {
  if (bits == 16)
    ((uint16_t *)keys)[i] = (uint16_t)k;
  else if (bits == 32)
    ((uint32_t *)keys)[i] = (uint32_t)k;
  else
    ((uint64_t *)keys)[i] = k;
}

/* ------------------------------------------------------------ the cells */

int tr_stats_cells_init(tr_stats_cells *c, GDALDataType type, int bands, int want_top, int fd, tr_error *err) {
  memset(c, 0, sizeof *c);
  c->fd = fd;
  c->type = type;
  c->key_bits = key_bits_of(type);
  c->bands = bands;
  c->vbuf = malloc(CHUNK * sizeof(double));
  if (want_top) c->top = calloc((size_t)bands * TR_KEY_BUCKETS + 1, sizeof *c->top);
  if (!c->vbuf || (want_top && !c->top)) {
    tr_stats_cells_free(c);
    return tr_fail(err, TR_ENOMEM, "out of memory for the histogram's counts");
  }
  return TR_OK;
}

void tr_stats_cells_free(tr_stats_cells *c) {
  if (c->fd >= 0) close(c->fd);
  free(c->top);
  free(c->vbuf);
  free(c->kbuf);
  memset(c, 0, sizeof *c);
  c->fd = -1;
}

static int write_all(int fd, const void *buf, size_t n, int64_t off) {
  const char *p = buf;
  while (n > 0) {
    const ssize_t w = pwrite(fd, p, n, (off_t)off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w == 0 ? ENOSPC : errno;
    p += w, n -= (size_t)w, off += w;
  }
  return 0;
}

static int read_all(int fd, void *buf, size_t n, int64_t off) {
  char *p = buf;
  while (n > 0) {
    const ssize_t r = pread(fd, p, n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return r == 0 ? EIO : errno;
    p += r, n -= (size_t)r, off += r;
  }
  return 0;
}

void tr_stats_cells_add(tr_stats_cells *c, const void *cells, GDALDataType type, int64_t n, int has_nodata,
                        double nodata) {
  if (c->err || n <= 0) return;
  if (c->kcap < n) {
    void *k = realloc(c->kbuf, (size_t)n * 8);
    if (!k) {
      c->err = ENOMEM;
      return;
    }
    c->kbuf = k;
    c->kcap = n;
  }
  const int es = GDALGetDataTypeSizeBytes(type), bits = c->key_bits, bands = c->bands;
  for (int b = 0; b < bands; b++) {
    int64_t nk = 0;
    uint64_t *top = c->top ? c->top + (size_t)b * TR_KEY_BUCKETS : NULL;
    for (int64_t i = 0; i < n; i += CHUNK) {
      const int64_t k = n - i < CHUNK ? n - i : CHUNK;
      GDALCopyWords64((const unsigned char *)cells + (size_t)(i * bands + b) * (size_t)es, type, es * bands, c->vbuf,
                      GDT_Float64, sizeof(double), k);
      for (int64_t j = 0; j < k; j++) {
        const double v = c->vbuf[j];
        if (isnan(v) || (has_nodata && v == nodata)) continue;
        const uint64_t key = key_of(type, v);
        if (top) top[key >> (bits - 16)]++;
        key_put(c->kbuf, bits, nk++, key);
      }
    }
    if (!nk) continue;
    rec_head h = {b, 0, nk};
    int e = write_all(c->fd, &h, sizeof h, c->end);
    if (!e) e = write_all(c->fd, c->kbuf, (size_t)nk * (size_t)(bits / 8), c->end + (int64_t)sizeof h);
    if (e) {
      c->err = e;
      return;
    }
    c->end += (int64_t)sizeof h + nk * (bits / 8);
  }
}

/* Calls fn for every record of the scratch file, a read buffer at a time.
 * 0, or the errno of a failed read. */
typedef void (*scan_fn)(void *user, int band, const void *keys, int64_t n);

static int scan(const tr_stats_cells *c, void *buf, scan_fn fn, void *user) {
  const int kb = c->key_bits / 8;
  const int64_t per = (int64_t)(READ_BYTES / (size_t)kb);
  for (int64_t off = 0; off < c->end;) {
    rec_head h;
    int e = read_all(c->fd, &h, sizeof h, off);
    if (e) return e;
    if (h.band < 0 || h.band >= c->bands || h.n <= 0 || off + (int64_t)sizeof h + h.n * kb > c->end) return EIO;
    off += (int64_t)sizeof h;
    for (int64_t i = 0; i < h.n; i += per) {
      const int64_t k = h.n - i < per ? h.n - i : per;
      if ((e = read_all(c->fd, buf, (size_t)(k * kb), off))) return e;
      fn(user, h.band, buf, k);
      off += k * kb;
    }
  }
  return 0;
}

/* --------------------------------------------------------------- passes */

int64_t tr_percentile_index(double p, int64_t n) {
  const double q = p / 100.0;
  const double idx = ceil((double)n * q - 1.0);
  if (!(idx > 0)) return 0;
  return idx >= (double)n ? n - 1 : (int64_t)idx;
}

/* A percentile being refined: the known top `bits` of its key and its rank
 * among the values that share them. */
typedef struct {
  int band;
  uint64_t prefix;
  int64_t rank;
  int group; /* its (band, prefix) group in the current scan */
  int k;     /* which of run->percentiles */
} target;

/* What one scan counts. */
typedef struct {
  int key_bits, bits; /* bits: the prefix length known this scan (0: no refinement) */
  GDALDataType type;
  /* histogram (first scan only; NULL otherwise) */
  uint64_t *bins; /* bands x nb */
  int nb;
  const tr_band_hist *hb;
  /* refinement groups: sorted by (band, prefix); band b's are first[b] .. first[b + 1] */
  const uint64_t *gprefix;
  const int *first;
  uint64_t *gcounts; /* ngroups x 65536 */
} scan_state;

static void scan_one(void *user, int band, const void *keys, int64_t n) {
  scan_state *s = user;
  if (s->bins && s->hb[band].nbuckets) {
    const tr_band_hist *h = &s->hb[band];
    const double lo = h->lo, scale = (double)h->nbuckets / (h->hi - h->lo);
    uint64_t *bins = s->bins + (size_t)band * (size_t)s->nb;
    for (int64_t i = 0; i < n; i++) {
      const double x = floor((value_of(s->type, key_at(keys, s->key_bits, i)) - lo) * scale);
      if (x >= 0 && x < h->nbuckets) bins[(int)x]++;
    }
  }
  if (!s->bits) return;
  const int g0 = s->first[band], g1 = s->first[band + 1];
  if (g0 == g1) return;
  const int shift = s->key_bits - s->bits, sub = shift - 16;
  for (int64_t i = 0; i < n; i++) {
    const uint64_t k = key_at(keys, s->key_bits, i), p = k >> shift;
    int a = g0, z = g1 - 1;
    while (a < z) {
      const int m = (a + z) / 2;
      if (s->gprefix[m] < p)
        a = m + 1;
      else
        z = m;
    }
    if (s->gprefix[a] == p) s->gcounts[(size_t)a * TR_KEY_BUCKETS + ((k >> sub) & 0xffff)]++;
  }
}

static int cmp_target(const void *a, const void *b) {
  const target *x = a, *y = b;
  if (x->band != y->band) return x->band < y->band ? -1 : 1;
  return x->prefix < y->prefix ? -1 : x->prefix > y->prefix;
}

/* The bucket of counts[0 .. 65536) holding rank t; t becomes its rank
 * within that bucket. */
static uint64_t bucket_of(const uint64_t *counts, int64_t *t) {
  uint64_t before = 0;
  for (int k = 0; k < TR_KEY_BUCKETS; k++) {
    if ((int64_t)(before + counts[k]) > *t) {
      *t -= (int64_t)before;
      return (uint64_t)k;
    }
    before += counts[k];
  }
  return TR_KEY_BUCKETS - 1; /* not reached: the counts sum to n > t */
}

/* A histogram's bounds for a band's [mn, mx] (stats_hist.h); 0 when none. */
static int hist_bounds(double mn, double mx, int nb, double *lo, double *hi) {
  if (!isfinite(mn) || !isfinite(mx)) return 0;
  const double r = mx - mn;
  double h;
  if (r == 0)
    h = fabs(mn) > 1 ? ldexp(fabs(mn), -20) : 0.5;
  else
    h = nb > 1 ? r / (2.0 * (nb - 1)) : r / 2;
  /* as GDAL's PAM stores them (%.16g, not always the same double): the
   * bounds counted with are the ones a reader gets back */
  char b[40];
  snprintf(b, sizeof b, "%.16g", mn - h);
  *lo = strtod(b, NULL);
  snprintf(b, sizeof b, "%.16g", mx + h);
  *hi = strtod(b, NULL);
  return *lo<mn && * hi> mx && isfinite(r) && isfinite(*lo) && isfinite(*hi) && *hi > *lo &&
         isfinite((double)nb / (*hi - *lo));
}

void tr_band_hist_free(tr_band_hist *h, int bands) {
  for (int b = 0; h && b < bands; b++) {
    free(h[b].bins);
    free(h[b].pct);
    h[b].bins = NULL;
    h[b].pct = NULL;
  }
}

/* A SUM allreduce of n uint64 whose last element counts failed ranks. */
static int sum_all(const tr_run_opts *run, coll_ctx *ctx, uint64_t *v, size_t n, tr_error *err) {
  coll_op add = coll_op_builtin(COLL_SUM);
  const int rc = coll_allreduce(ctx, v, v, n, COLL_UINT64, &add);
  if (rc) return tr_stats_coll_fail(run, rc, ctx, err);
  if (v[n - 1])
    return tr_fail(err, TR_EOUTPUT, "statistics: %llu rank(s) could not keep or re-read their cells for the histogram",
                   (unsigned long long)v[n - 1]);
  return TR_OK;
}

int tr_stats_hist_run(const tr_run_opts *run, coll_ctx *ctx, tr_stats_cells *c, GDALDataType type,
                      const tr_tile_stats *tiles, int64_t ntiles, int bands, tr_band_hist *out, tr_error *err) {
  const int want_hist = tr_stats_hist_wanted(run);
  const int np = run->npercentiles;
  const int nb = run->hist_buckets > 0 ? run->hist_buckets : TR_HIST_DEFAULT_BUCKETS;
  memset(out, 0, sizeof *out * (size_t)bands);
  int st = TR_OK;
  double *mm = malloc(sizeof(double) * 2 * (size_t)bands);
  uint64_t *cnt = calloc((size_t)bands + 1, sizeof *cnt);
  target *tg = calloc((size_t)bands * (size_t)(np ? np : 1), sizeof *tg);
  void *rbuf = malloc(READ_BYTES);
  if (!mm || !cnt || !tg || !rbuf) {
    free(mm), free(cnt), free(tg), free(rbuf);
    return tr_fail(err, TR_ENOMEM, "out of memory for the histogram");
  }
  /* 1. the global range and count of every band */
  for (int b = 0; b < bands; b++) mm[b] = mm[bands + b] = INFINITY;
  for (int64_t i = 0; i < ntiles; i++)
    for (int b = 0; b < bands; b++) {
      const tr_tile_stats *t = &tiles[i * bands + b];
      if (t->count <= 0) continue;
      mm[b] = fmin(mm[b], t->min);
      mm[bands + b] = fmin(mm[bands + b], -t->max);
      cnt[b] += (uint64_t)t->count;
    }
  cnt[bands] = c && c->err ? 1 : 0;
  coll_op mn = coll_op_builtin(COLL_MIN);
  int rc = coll_allreduce(ctx, mm, mm, 2 * (size_t)bands, COLL_DOUBLE, &mn);
  if (rc) st = tr_stats_coll_fail(run, rc, ctx, err);
  if (!st) st = sum_all(run, ctx, cnt, (size_t)bands + 1, err);
  int nt = 0, bits = 0;
  for (int b = 0; !st && b < bands; b++) {
    out[b].count = (int64_t)cnt[b];
    if (want_hist && cnt[b] && hist_bounds(mm[b], -mm[bands + b], nb, &out[b].lo, &out[b].hi)) {
      out[b].nbuckets = nb;
      if (!(out[b].bins = calloc((size_t)nb, sizeof *out[b].bins))) st = tr_fail(err, TR_ENOMEM, "out of memory");
    }
    if (np && cnt[b] && !(out[b].pct = malloc(sizeof(double) * (size_t)np)))
      st = tr_fail(err, TR_ENOMEM, "out of memory");
  }
  /* 2. the top 16 bits of every wanted rank's key */
  if (!st && np) {
    uint64_t *top = c && c->top ? c->top : calloc((size_t)bands * TR_KEY_BUCKETS + 1, sizeof *top);
    if (!top)
      st = tr_fail(err, TR_ENOMEM, "out of memory for the histogram");
    else {
      top[(size_t)bands * TR_KEY_BUCKETS] = c && c->err ? 1 : 0;
      st = sum_all(run, ctx, top, (size_t)bands * TR_KEY_BUCKETS + 1, err);
      for (int b = 0; !st && b < bands; b++)
        for (int k = 0; cnt[b] && k < np; k++) {
          target *t = &tg[nt++];
          t->band = b;
          t->k = k;
          t->rank = tr_percentile_index(run->percentiles[k], (int64_t)cnt[b]);
          t->prefix = bucket_of(top + (size_t)b * TR_KEY_BUCKETS, &t->rank);
        }
      bits = 16;
      if (!(c && c->top)) free(top);
    }
  }
  const int key_bits = key_bits_of(type);
  /* 3. scans: the histogram once, 16 more bits of the keys each time */
  int need_hist = 0;
  for (int b = 0; b < bands; b++) need_hist |= out[b].nbuckets > 0;
  /* every rank knows the same need (from the allreduced range and counts) */
  target *order = calloc((size_t)(nt ? nt : 1), sizeof *order);
  if (!order && !st) st = tr_fail(err, TR_ENOMEM, "out of memory");
  while (!st && (need_hist || (nt && bits < key_bits))) {
    const int refine = nt && bits < key_bits;
    int ng = 0;
    uint64_t *gprefix = NULL;
    int *first = calloc((size_t)bands + 1, sizeof *first);
    if (refine) {
      memcpy(order, tg, sizeof *tg * (size_t)nt);
      qsort(order, (size_t)nt, sizeof *order, cmp_target);
      gprefix = malloc(sizeof *gprefix * (size_t)nt);
      for (int i = 0; gprefix && i < nt; i++)
        if (!ng || order[i].band != order[i - 1].band || order[i].prefix != order[i - 1].prefix)
          gprefix[ng++] = order[i].prefix;
    }
    /* groups per band, in (band, prefix) order */
    int *gband = refine ? malloc(sizeof *gband * (size_t)(nt ? nt : 1)) : NULL;
    if (refine && gband && gprefix) {
      int g = -1;
      for (int i = 0; i < nt; i++) {
        if (i == 0 || order[i].band != order[i - 1].band || order[i].prefix != order[i - 1].prefix) g++;
        gband[g] = order[i].band;
      }
      for (int b = 0, g2 = 0; b <= bands; b++) {
        while (g2 < ng && gband[g2] < b) g2++;
        first[b] = g2;
      }
      for (int i = 0; i < nt; i++) {
        tg[i].group = -1;
        for (int k = first[tg[i].band]; k < first[tg[i].band + 1]; k++)
          if (gprefix[k] == tg[i].prefix) tg[i].group = k;
      }
    }
    const size_t nh = need_hist ? (size_t)bands * (size_t)nb : 0;
    const size_t len = nh + (size_t)ng * TR_KEY_BUCKETS + 1;
    uint64_t *v = calloc(len, sizeof *v);
    if (!first || !v || (refine && (!gprefix || !gband)))
      st = tr_fail(err, TR_ENOMEM, "out of memory for the histogram");
    else {
      scan_state s = {.key_bits = key_bits,
                      .bits = refine ? bits : 0,
                      .type = type,
                      .bins = need_hist ? v : NULL,
                      .nb = nb,
                      .hb = out,
                      .gprefix = gprefix,
                      .first = first,
                      .gcounts = v + nh};
      if (c && !c->err) c->err = scan(c, rbuf, scan_one, &s);
      v[len - 1] = c && c->err ? 1 : 0;
      st = sum_all(run, ctx, v, len, err);
      for (int b = 0; !st && need_hist && b < bands; b++)
        if (out[b].nbuckets) memcpy(out[b].bins, v + (size_t)b * (size_t)nb, sizeof *v * (size_t)nb);
      for (int i = 0; !st && refine && i < nt; i++) {
        const uint64_t k = bucket_of(v + nh + (size_t)tg[i].group * TR_KEY_BUCKETS, &tg[i].rank);
        tg[i].prefix = tg[i].prefix << 16 | k;
      }
    }
    if (refine) bits += 16;
    need_hist = 0;
    free(v);
    free(first);
    free(gprefix);
    free(gband);
  }
  /* the keys are whole: the values */
  for (int i = 0; !st && i < nt; i++) out[tg[i].band].pct[tg[i].k] = value_of(type, tg[i].prefix);
  free(order);
  free(mm), free(cnt), free(tg), free(rbuf);
  if (st) tr_band_hist_free(out, bands);
  return st;
}
