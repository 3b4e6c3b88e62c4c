/*
 * point_file.c - the point index on disk (see point_file.h).
 *
 * Files: the scratch file holds (x, y, z) per point in input order; a band
 * file holds tr_ipoint records (input order kept as the id) of the run of
 * buckets it covers (row-major), in input order; the index file holds the bytes of a
 * tr_pindex: tr_pview_head, start[nb + 1], pt[n]. All are scratch files
 * (io/scratch_file.h): made in the folder given and unlinked at once.
 */
#include "point_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scratch_file.h"

#define REC 3 /* doubles per scratch record */
#define BUF_POINTS 32768
/* at most this many bands (each an open file and a write buffer) */
#define MAX_BANDS 768

struct tr_pfile_builder {
  char *dir;
  int fd;
  int64_t n;
  double xmin, ymin, xmax, ymax;
  double *buf; /* REC doubles per point */
  int64_t nbuf;
  int (*cancelled)(void *);
  void *cancel_user;
};

static int make_file(const char *dir, const char *what, int *fd, tr_error *err) {
  *fd = tr_scratch_open(dir, "points");
  if (*fd < 0) return tr_fail(err, TR_EOUTPUT, "cannot create the points' %s in '%s' (--tmp): %s", what, dir, strerror(errno));
  return TR_OK;
}

static int write_at(int fd, const void *p, size_t len, int64_t off, const char *what, tr_error *err) {
  if (tr_pwrite_all(fd, p, (int64_t)len, off) == 0) return TR_OK;
  return tr_fail(err, TR_EOUTPUT, "cannot write the points' %s (--tmp): %s", what, strerror(errno));
}

static int read_at(int fd, void *p, size_t len, int64_t off, const char *what, tr_error *err) {
  if (tr_pread_all(fd, p, (int64_t)len, off) == 0) return TR_OK;
  return tr_fail(err, TR_EINPUT, "cannot read the points' %s back (--tmp): %s", what, strerror(errno));
}

int tr_pfile_begin(tr_pfile_builder **out, const char *dir, tr_error *err) {
  *out = NULL;
  tr_pfile_builder *b = calloc(1, sizeof *b);
  if (b) b->dir = strdup(dir);
  if (b && b->dir) b->buf = malloc(sizeof *b->buf * REC * BUF_POINTS);
  if (!b || !b->dir || !b->buf) {
    if (b) free(b->dir);
    free(b);
    return tr_fail(err, TR_ENOMEM, "out of memory");
  }
  b->fd = -1;
  int st = make_file(dir, "scratch file", &b->fd, err);
  if (st) {
    tr_pfile_abort(b);
    return st;
  }
  *out = b;
  return TR_OK;
}

static int flush_scratch(tr_pfile_builder *b, tr_error *err) {
  if (!b->nbuf) return TR_OK;
  const int64_t first = b->n - b->nbuf;
  int st = write_at(b->fd, b->buf, (size_t)b->nbuf * REC * sizeof(double), first * REC * (int64_t)sizeof(double),
                    "scratch file", err);
  b->nbuf = 0;
  return st;
}

int tr_pfile_add(tr_pfile_builder *b, double x, double y, double z, tr_error *err) {
  if (b->n == 0 || x < b->xmin) b->xmin = x;
  if (b->n == 0 || x > b->xmax) b->xmax = x;
  if (b->n == 0 || y < b->ymin) b->ymin = y;
  if (b->n == 0 || y > b->ymax) b->ymax = y;
  double *r = b->buf + REC * b->nbuf;
  r[0] = x, r[1] = y, r[2] = z;
  b->n++;
  return ++b->nbuf == BUF_POINTS ? flush_scratch(b, err) : TR_OK;
}

void tr_pfile_abort(tr_pfile_builder *b) {
  if (!b) return;
  if (b->fd >= 0) close(b->fd);
  free(b->buf);
  free(b->dir);
  free(b);
}

void tr_pfile_close(tr_pfile *f) {
  if (f->fd >= 0) close(f->fd);
  f->fd = -1;
}

/* Calls fn on every scratch point in input order, a chunk at a time. */
typedef int (*scratch_fn)(void *user, int64_t i, const double *rec, tr_error *err);
static int each_scratch(const tr_pfile_builder *b, scratch_fn fn, void *user, double *chunk, tr_error *err) {
  for (int64_t i0 = 0; i0 < b->n; i0 += BUF_POINTS) {
    if (b->cancelled && b->cancelled(b->cancel_user)) return tr_fail(err, TR_EINTERRUPTED, "interrupted");
    const int64_t m = b->n - i0 < BUF_POINTS ? b->n - i0 : BUF_POINTS;
    int st = read_at(b->fd, chunk, (size_t)m * REC * sizeof(double), i0 * REC * (int64_t)sizeof(double),
                     "scratch file", err);
    for (int64_t k = 0; k < m && !st; k++) st = fn(user, i0 + k, chunk + REC * k, err);
    if (st) return st;
  }
  return TR_OK;
}

/* The histogram's units: runs of `width` buckets of one row (the last of a
 * row may be shorter), numbered in the index's row-major bucket order, so a
 * run of units is a run of buckets. */
typedef struct {
  const tr_pview_head *h;
  int64_t width, per_row; /* buckets per unit, units per row */
  int64_t *count;         /* points per unit */
} units;

static int64_t unit_of(const units *u, int64_t bucket) {
  const int64_t r = bucket / u->h->gnx, c = bucket % u->h->gnx;
  return r * u->per_row + c / u->width;
}

/* The first bucket of unit k (k = all units: one past the last bucket). */
static int64_t unit_start(const units *u, int64_t k) {
  const int64_t r = k / u->per_row, c = (k % u->per_row) * u->width;
  return r * u->h->gnx + (c < u->h->gnx ? c : u->h->gnx);
}

static int count_unit(void *user, int64_t i, const double *rec, tr_error *err) {
  (void)i, (void)err;
  units *u = user;
  u->count[unit_of(u, tr_pindex_bucket(u->h, rec[0], rec[1]))]++;
  return TR_OK;
}

/* One band: buckets [b0, b1), np points, the first at `base` of the index's
 * points; its file and write buffer during the distribution. */
typedef struct {
  int64_t b0, b1, np, base;
  int fd;
  tr_ipoint *buf;
  int64_t nbuf, written;
} band;

typedef struct {
  const units *u;
  band *bands;
  int32_t *band_of_unit;
  int64_t bufpts;
} dist_ctx;

static int flush_band(band *d, tr_error *err) {
  int st = write_at(d->fd, d->buf, (size_t)d->nbuf * sizeof(tr_ipoint), d->written * (int64_t)sizeof(tr_ipoint),
                    "band file", err);
  d->written += d->nbuf;
  d->nbuf = 0;
  return st;
}

static int distribute(void *user, int64_t i, const double *rec, tr_error *err) {
  dist_ctx *c = user;
  band *d = &c->bands[c->band_of_unit[unit_of(c->u, tr_pindex_bucket(c->u->h, rec[0], rec[1]))]];
  d->buf[d->nbuf++] = (tr_ipoint){rec[0], rec[1], rec[2], i};
  return d->nbuf == c->bufpts ? flush_band(d, err) : TR_OK;
}

/* Step 4 for band d: load, sort by bucket (stable), write its points and
 * its buckets' offsets into the index file. */
static int sort_band(const tr_pview_head *h, band *d, int fd, int64_t start_off, int64_t pt_off, tr_error *err) {
  const int64_t nb = d->b1 - d->b0;
  tr_ipoint *a = malloc((size_t)(d->np ? d->np : 1) * sizeof *a), *s = malloc((size_t)(d->np ? d->np : 1) * sizeof *s);
  int64_t *cnt = calloc((size_t)nb + 1, sizeof *cnt), *key = malloc((size_t)(d->np ? d->np : 1) * sizeof *key);
  int st = a && s && cnt && key ? TR_OK : tr_fail(err, TR_ENOMEM, "out of memory sorting the points' band");
  if (!st) st = read_at(d->fd, a, (size_t)d->np * sizeof *a, 0, "band file", err);
  const int64_t first = d->b0;
  for (int64_t i = 0; i < d->np && !st; i++) {
    key[i] = tr_pindex_bucket(h, a[i].x, a[i].y) - first;
    cnt[key[i] + 1]++;
  }
  for (int64_t k = 0; k < nb && !st; k++) cnt[k + 1] += cnt[k];
  if (!st) {
    /* the buckets' offsets into the whole index, then the points */
    for (int64_t k = 0; k < nb; k++) cnt[k] += d->base;
    st = write_at(fd, cnt, (size_t)nb * sizeof *cnt, start_off + first * (int64_t)sizeof *cnt, "index file", err);
    for (int64_t k = 0; k < nb; k++) cnt[k] -= d->base;
  }
  for (int64_t i = 0; i < d->np && !st; i++) s[cnt[key[i]]++] = a[i];
  if (!st)
    st = write_at(fd, s, (size_t)d->np * sizeof *s, pt_off + d->base * (int64_t)sizeof *s, "index file", err);
  free(a);
  free(s);
  free(cnt);
  free(key);
  return st;
}

int tr_pfile_finish(tr_pfile_builder *b, int64_t mem, int (*cancelled)(void *), void *user, tr_pfile *out,
                    tr_error *err) {
  out->fd = -1;
  b->cancelled = cancelled;
  b->cancel_user = user;
  int st = flush_scratch(b, err);
  tr_pview_head h;
  tr_pindex_plan(b->n, b->xmin, b->ymin, b->xmax, b->ymax, &h);
  const int64_t nb = h.gnx * h.gny;
  const int64_t per_point = 2 * (int64_t)sizeof(tr_ipoint) + 8;
  const int64_t room = mem > (1 << 22) ? mem - (1 << 22) : (1 << 20); /* less the buffers above */
  /* the histogram (8 bytes a unit, 4 for its band) takes at most a quarter
   * of room: units of whole rows when that allows, else shorter runs */
  units u = {&h, 1, 1, NULL};
  const int64_t most_units = room / 4 / 12 > h.gny ? room / 4 / 12 : h.gny;
  u.width = (nb + most_units - 1) / most_units;
  if (u.width < 1) u.width = 1;
  if (u.width > h.gnx) u.width = h.gnx;
  u.per_row = (h.gnx + u.width - 1) / u.width;
  const int64_t nunits = h.gny * u.per_row;
  u.count = st ? NULL : calloc((size_t)nunits, sizeof *u.count);
  int32_t *band_of_unit = u.count ? malloc((size_t)nunits * sizeof *band_of_unit) : NULL;
  double *chunk = band_of_unit ? malloc(sizeof *chunk * REC * BUF_POINTS) : NULL;
  band *bands = NULL;
  int nbands = 0, capbands = 0;
  if (!st && !chunk) st = tr_fail(err, TR_ENOMEM, "out of memory for the points' histogram");
  /* 2. points per unit, and the bands: runs of units whose sort fits room
   * (a band's sort holds its points twice and a key, 72 bytes a point, and
   * a count per bucket) */
  if (!st) st = each_scratch(b, count_unit, &u, chunk, err);
  for (int64_t k = 0, base = 0; k < nunits && !st; k++) {
    const int64_t k0 = unit_start(&u, k), k1 = unit_start(&u, k + 1);
    const int64_t cost = u.count[k] * per_point + (k1 - k0 + 1) * 8;
    if (cost > room)
      st = tr_fail(err, TR_ENOMEM,
                   "%lld points fall in %lld of the points' buckets: sorting them takes %.1f MiB, more than the "
                   "%.1f MiB --mem leaves for points: give more --mem",
                   (long long)u.count[k], (long long)(k1 - k0), (double)cost / 1048576.0, (double)room / 1048576.0);
    band *d = nbands ? &bands[nbands - 1] : NULL;
    if (!st && (!d || (d->np + u.count[k]) * per_point + (k1 - d->b0 + 1) * 8 > room)) {
      if (nbands == MAX_BANDS) {
        st = tr_fail(err, TR_ENOMEM, "%lld points would sort in more than %d bands in %.0f MiB of --mem: give more --mem",
                     (long long)b->n, MAX_BANDS, (double)mem / 1048576.0);
        break;
      }
      if (nbands == capbands) {
        capbands = capbands ? 2 * capbands : 16;
        band *nbd = realloc(bands, (size_t)capbands * sizeof *bands);
        if (!nbd) {
          st = tr_fail(err, TR_ENOMEM, "out of memory for the points' bands");
          break;
        }
        bands = nbd;
      }
      d = &bands[nbands++];
      memset(d, 0, sizeof *d);
      d->b0 = k0;
      d->base = base;
      d->fd = -1;
    }
    if (st) break;
    d->b1 = k1;
    d->np += u.count[k];
    base += u.count[k];
    band_of_unit[k] = nbands - 1;
  }
  /* 3. the bands' files, each point appended to its band's */
  int64_t bufpts = nbands ? room / 2 / nbands / (int64_t)sizeof(tr_ipoint) : 1;
  if (bufpts > 65536) bufpts = 65536;
  if (bufpts < 256) bufpts = 256;
  for (int k = 0; k < nbands && !st; k++) {
    bands[k].buf = malloc((size_t)bufpts * sizeof(tr_ipoint));
    st = bands[k].buf ? make_file(b->dir, "band file", &bands[k].fd, err)
                      : tr_fail(err, TR_ENOMEM, "out of memory for the points' bands");
  }
  dist_ctx dc = {&u, bands, band_of_unit, bufpts};
  if (!st) st = each_scratch(b, distribute, &dc, chunk, err);
  for (int k = 0; k < nbands && !st; k++) st = flush_band(&bands[k], err);
  for (int k = 0; k < nbands; k++) {
    free(bands[k].buf);
    bands[k].buf = NULL;
  }
  free(chunk);
  /* the scratch file is no longer needed: its space goes back now */
  close(b->fd);
  b->fd = -1;
  /* 4. the index file: header, offsets, points; band by band */
  int fd = -1;
  if (!st) st = make_file(b->dir, "index file", &fd, err);
  const int64_t start_off = (int64_t)sizeof(tr_pview_head), pt_off = start_off + (nb + 1) * (int64_t)sizeof(int64_t);
  if (!st) st = write_at(fd, &h, sizeof h, 0, "index file", err);
  if (!st) st = write_at(fd, &b->n, sizeof b->n, start_off + nb * (int64_t)sizeof(int64_t), "index file", err);
  for (int k = 0; k < nbands && !st; k++) {
    if (cancelled && cancelled(user)) {
      st = tr_fail(err, TR_EINTERRUPTED, "interrupted");
      break;
    }
    st = sort_band(&h, &bands[k], fd, start_off, pt_off, err);
    close(bands[k].fd);
    bands[k].fd = -1;
  }
  for (int k = 0; k < nbands; k++)
    if (bands[k].fd >= 0) close(bands[k].fd);
  free(bands);
  free(u.count);
  free(band_of_unit);
  tr_pfile_abort(b);
  if (st) {
    if (fd >= 0) close(fd);
    return st;
  }
  out->fd = fd;
  out->h = h;
  return TR_OK;
}

int tr_pfile_view(const tr_pfile *f, double xmin, double ymin, double xmax, double ymax, void **bytes, size_t *len,
                  tr_error *err) {
  *bytes = NULL;
  *len = 0;
  const tr_pview whole = {&f->h, NULL, NULL};
  int64_t x0, y0, x1, y1;
  tr_pview_range(&whole, xmin, ymin, xmax, ymax, &x0, &y0, &x1, &y1);
  const int64_t gnx = f->h.gnx, nb = gnx * f->h.gny;
  const int64_t start_off = (int64_t)sizeof(tr_pview_head), pt_off = start_off + (nb + 1) * (int64_t)sizeof(int64_t);
  if (x1 < x0 || y1 < y0) {
    /* as tr_pview_copy writes an empty view */
    *len = tr_pview_bytes(0, 0);
    tr_pview_head *h = *bytes = malloc(*len);
    if (!h) return tr_fail(err, TR_ENOMEM, "out of memory for a tile's points");
    *h = f->h;
    h->nx = h->ny = h->n = 0;
    *(int64_t *)(h + 1) = 0;
    return TR_OK;
  }
  const int64_t nx = x1 - x0 + 1, ny = y1 - y0 + 1;
  /* each bucket row's offsets first: they give the points' count */
  int64_t *offs = malloc((size_t)(ny * (nx + 1)) * sizeof *offs);
  if (!offs) return tr_fail(err, TR_ENOMEM, "out of memory for a tile's points");
  int st = TR_OK;
  int64_t n = 0;
  for (int64_t by = 0; by < ny && !st; by++) {
    int64_t *o = offs + by * (nx + 1);
    st = read_at(f->fd, o, (size_t)(nx + 1) * sizeof *o,
                 start_off + ((y0 + by) * gnx + x0) * (int64_t)sizeof *o, "index file", err);
    if (!st) n += o[nx] - o[0];
  }
  tr_pview_head *h = NULL;
  if (!st) {
    *len = tr_pview_bytes(nx * ny, n);
    h = *bytes = malloc(*len);
    if (!h) st = tr_fail(err, TR_ENOMEM, "out of memory for a tile's points (%zu bytes)", *len);
  }
  if (!st) {
    *h = f->h;
    h->bx0 = x0;
    h->by0 = y0;
    h->nx = nx;
    h->ny = ny;
    int64_t *start = (int64_t *)(h + 1);
    tr_ipoint *pt = (tr_ipoint *)(start + nx * ny + 1);
    int64_t at = 0, b = 0;
    for (int64_t by = 0; by < ny && !st; by++) {
      const int64_t *o = offs + by * (nx + 1);
      for (int64_t bx = 0; bx < nx; bx++) start[b++] = at + (o[bx] - o[0]);
      const int64_t m = o[nx] - o[0];
      if (m > 0)
        st = read_at(f->fd, pt + at, (size_t)m * sizeof *pt, pt_off + o[0] * (int64_t)sizeof *pt, "index file", err);
      at += m;
    }
    start[b] = at;
    h->n = at;
  }
  free(offs);
  if (st) {
    free(*bytes);
    *bytes = NULL;
    *len = 0;
  }
  return st;
}
