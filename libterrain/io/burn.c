/*
 * burn.c - stream burning (burn.h): the lines of an OGR vector as segments
 * in the DEM's cell coordinates, and each window a stage reads lowered
 * where GDAL's rasterizer says they touch it.
 *
 * Data: the segments (x0, y0, x1, y1: x the column, y the row, in cells
 * from the grid's corner, as GDAL's rasterizer sees pixel/line coordinates)
 * in the order GDAL walks them, and an index of (block, segment) pairs sorted
 * by block over the fixed grid of TR_BURN_BLOCK-cell blocks: each segment
 * is listed under every block its bounding box (one cell wider) meets, so a
 * block's rasterisation sees every segment that may touch it and only a few
 * others. A segment that cannot touch the grid is dropped when read. A
 * block's cells are rasterised the first time a window needs them and kept
 * (the offsets of its burnt cells, 2 bytes each): a tile's window is read
 * more than once (the tile store's cache evicts, out of core reads each tile
 * twice), and the blocks of a window's halo are its neighbours' too.
 *
 * Why segments: GDAL walks a line segment by segment (llrasterize.cpp), each
 * on its own, so a segment alone burns the cells it burns in its line; and
 * a block then walks only the segments near it, not a whole river.
 *
 * Why blocks and cell centres: see burn.h. With GDAL's line rule (Bresenham
 * between the cells holding a segment's ends, from its last vertex to its
 * first, as GDAL reads a LineString backwards) the ends are moved to their
 * cells' centres, floor(p) + 0.5, which the block's offset shifts exactly, so
 * the walk is the whole grid's.
 */
#include <cpl_conv.h>
#include <cpl_error.h>
#include <float.h>
#include <gdal_alg.h>
#include <math.h>
#include <ogr_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "burn.h"
#include "vector_crs.h"

/* How far beyond the grid a kept segment may reach, in cells: farther is a
 * CRS mix-up more likely than a stream, and GDAL's walk would take as many
 * steps (and its cell numbers are ints). */
#define FAR_CELLS 16777216.0

typedef struct {
  int64_t block, seg;
} burn_entry;

/* A block that holds segments: its index entries and, once rasterised,
 * the offsets (row * TR_BURN_BLOCK + column) of the cells they touch. */
typedef struct {
  int64_t block, e0, e1;
  int done;
  int32_t ncells;
  uint16_t *cells;
} burn_block;

struct tr_burn {
  char *file, *layer;
  double depth;
  int all_touched;
  int64_t rows, cols, nbc; /* the grid, and its blocks per row */
  int64_t nseg, capseg;
  double *seg; /* 4 per segment */
  int64_t nidx;
  burn_entry *idx; /* sorted by block, then segment */
  int64_t nblk;
  burn_block *blk;      /* the blocks of idx, in its order */
  pthread_mutex_t lock; /* over blk's done, ncells and cells */
  int locked_init;
};

int tr_burn_usage(const tr_burn_opts *o, tr_error *err) {
  if (!o->file) {
    const char *given = o->depth != 0    ? "--burn-depth"
                        : o->layer       ? "--burn-layer"
                        : o->all_touched ? "--burn-all-touched"
                                         : NULL;
    return given ? tr_fail(err, TR_EUSAGE, "%s needs --burn FILE (the lines to burn)", given) : TR_OK;
  }
  if (o->depth == 0)
    return tr_fail(err, TR_EUSAGE,
                   "--burn needs --burn-depth D: how far to lower the lines' cells, in the DEM's elevation units "
                   "(no default: it depends on the units and on the embankments to cut through)");
  if (!(o->depth > 0) || !isfinite(o->depth))
    return tr_fail(err, TR_EUSAGE, "--burn-depth must be a positive number of the DEM's elevation units, got %g",
                   o->depth);
  return TR_OK;
}

void tr_burn_close(tr_burn *b) {
  if (!b) return;
  for (int64_t i = 0; i < b->nblk; i++) free(b->blk[i].cells);
  free(b->blk);
  if (b->locked_init) pthread_mutex_destroy(&b->lock);
  free(b->file);
  free(b->layer);
  free(b->seg);
  free(b->idx);
  free(b);
}

static int entry_cmp(const void *pa, const void *pb) {
  const burn_entry *a = pa, *b = pb;
  if (a->block != b->block) return a->block < b->block ? -1 : 1;
  return (a->seg > b->seg) - (a->seg < b->seg);
}

/* What reading the features needs. */
typedef struct {
  tr_burn *b;
  const tr_input *grid;
  double inv[6];
  int64_t fid;
  int64_t capidx;
} burn_read;

static int push_entry(burn_read *r, int64_t block, int64_t seg) {
  tr_burn *b = r->b;
  if (b->nidx == r->capidx) {
    const int64_t cap = r->capidx ? 2 * r->capidx : 1024;
    burn_entry *p = realloc(b->idx, (size_t)cap * sizeof *p);
    if (!p) return -1;
    b->idx = p;
    r->capidx = cap;
  }
  b->idx[b->nidx++] = (burn_entry){block, seg};
  return 0;
}

/* One segment from (gx0, gy0) to (gx1, gy1), map coordinates in the grid's
 * CRS: kept in cell coordinates when it may touch the grid. */
static int add_segment(burn_read *r, double gx0, double gy0, double gx1, double gy1, const char *file, tr_error *err) {
  tr_burn *b = r->b;
  double p[4];
  GDALApplyGeoTransform(r->inv, gx0, gy0, &p[0], &p[1]);
  GDALApplyGeoTransform(r->inv, gx1, gy1, &p[2], &p[3]);
  for (int k = 0; k < 4; k++) {
    if (!isfinite(p[k]))
      return tr_fail(err, TR_EINPUT, "the burn lines '%s': feature %lld has a vertex that is not a finite point", file,
                     (long long)r->fid);
    if (!b->all_touched) p[k] = floor(p[k]) + 0.5;
  }
  const double x0 = fmin(p[0], p[2]), x1 = fmax(p[0], p[2]), y0 = fmin(p[1], p[3]), y1 = fmax(p[1], p[3]);
  /* the cells it may touch lie in floor(x0) .. floor(x1), floor(y0) .. floor(y1); one more each side */
  if (x1 < -1 || y1 < -1 || x0 > (double)b->cols + 1 || y0 > (double)b->rows + 1) return TR_OK;
  if (x0 < -FAR_CELLS || y0 < -FAR_CELLS || x1 > (double)b->cols + FAR_CELLS || y1 > (double)b->rows + FAR_CELLS)
    return tr_fail(err, TR_EINPUT,
                   "the burn lines '%s': feature %lld reaches more than %.0f cells beyond the grid of '%s' (is its "
                   "CRS right?)",
                   file, (long long)r->fid, FAR_CELLS, r->grid->path);
  if (b->nseg == b->capseg) {
    const int64_t cap = b->capseg ? 2 * b->capseg : 256;
    double *q = realloc(b->seg, (size_t)cap * 4 * sizeof *q);
    if (!q) return tr_fail(err, TR_ENOMEM, "out of memory for the burn lines");
    b->seg = q;
    b->capseg = cap;
  }
  memcpy(b->seg + 4 * b->nseg, p, sizeof p);
  const int64_t B = TR_BURN_BLOCK;
  const int64_t c0 = (int64_t)fmax(floor(x0) - 1, 0), c1 = (int64_t)fmin(floor(x1) + 1, (double)b->cols - 1);
  const int64_t r0 = (int64_t)fmax(floor(y0) - 1, 0), r1 = (int64_t)fmin(floor(y1) + 1, (double)b->rows - 1);
  for (int64_t br = r0 / B; br <= r1 / B; br++)
    for (int64_t bc = c0 / B; bc <= c1 / B; bc++)
      if (push_entry(r, br * b->nbc + bc, b->nseg)) return tr_fail(err, TR_ENOMEM, "out of memory for the burn lines");
  b->nseg++;
  return TR_OK;
}

/* The segments of line geometry g (a LineString or MultiLineString, in the
 * grid's CRS). */
static int add_line(burn_read *r, OGRGeometryH g, const char *file, tr_error *err) {
  const OGRwkbGeometryType t = wkbFlatten(OGR_G_GetGeometryType(g));
  if (t == wkbMultiLineString) {
    for (int i = 0; i < OGR_G_GetGeometryCount(g); i++) {
      const int st = add_line(r, OGR_G_GetGeometryRef(g, i), file, err);
      if (st) return st;
    }
    return TR_OK;
  }
  const int n = OGR_G_GetPointCount(g);
  for (int j = 1; j < n; j++) {
    const int st =
        add_segment(r, OGR_G_GetX(g, j - 1), OGR_G_GetY(g, j - 1), OGR_G_GetX(g, j), OGR_G_GetY(g, j), file, err);
    if (st) return st;
  }
  return TR_OK;
}

/* Feature f's geometry: a line (curves made linear), in the grid's CRS. */
static int add_feature(burn_read *r, OGRFeatureH f, OGRCoordinateTransformationH ct, const char *file, int *lines,
                       tr_error *err) {
  OGRGeometryH g = OGR_F_GetGeometryRef(f);
  if (!g || OGR_G_IsEmpty(g)) return TR_OK; /* nothing to burn */
  const OGRwkbGeometryType t = wkbFlatten(OGR_G_GetGeometryType(g));
  OGRGeometryH line = NULL;
  if (t == wkbLineString || t == wkbMultiLineString)
    line = OGR_G_Clone(g);
  else if (t == wkbCircularString || t == wkbCompoundCurve || t == wkbMultiCurve)
    line = OGR_G_GetLinearGeometry(g, 0, NULL);
  else
    return tr_fail(err, TR_EINPUT,
                   "the burn lines '%s': feature %lld is a %s; --burn takes lines (LineString, "
                   "MultiLineString)",
                   file, (long long)r->fid, OGRGeometryTypeToName(t));
  if (!line) return tr_fail(err, TR_ENOMEM, "out of memory for the burn lines");
  int st = TR_OK;
  if (ct && OGR_G_Transform(line, ct) != OGRERR_NONE)
    st = tr_fail(err, TR_EINPUT, "the burn lines '%s': feature %lld cannot be put in the CRS of '%s'", file,
                 (long long)r->fid, r->grid->path);
  if (!st) st = add_line(r, line, file, err);
  OGR_G_DestroyGeometry(line);
  (*lines)++;
  return st;
}

int tr_burn_open(tr_burn **out, const tr_burn_opts *o, const tr_input *grid, const tr_run_opts *run, tr_error *err) {
  *out = NULL;
  int st = tr_burn_usage(o, err);
  if (st || !o->file) return st;
  tr_burn *b = calloc(1, sizeof *b);
  if (!b) return tr_fail(err, TR_ENOMEM, "out of memory");
  b->depth = o->depth;
  b->all_touched = o->all_touched;
  b->rows = grid->rows;
  b->cols = grid->cols;
  b->nbc = (grid->cols + TR_BURN_BLOCK - 1) / TR_BURN_BLOCK;
  b->file = strdup(o->file);
  burn_read r = {.b = b, .grid = grid};
  CPLPushErrorHandler(CPLQuietErrorHandler);
  CPLErrorReset();
  GDALDatasetH ds = NULL;
  OGRLayerH lay = NULL;
  OGRCoordinateTransformationH ct = NULL;
  if (!b->file) st = tr_fail(err, TR_ENOMEM, "out of memory");
  if (!st && !(ds = GDALOpenEx(o->file, GDAL_OF_VECTOR | GDAL_OF_READONLY | GDAL_OF_VERBOSE_ERROR, NULL, NULL, NULL)))
    st = tr_fail(err, TR_EINPUT, "cannot open the burn lines '%s': %s", o->file,
                 CPLGetLastErrorMsg()[0] ? CPLGetLastErrorMsg() : "not a vector GDAL reads");
  if (!st) {
    lay = o->layer ? GDALDatasetGetLayerByName(ds, o->layer) : GDALDatasetGetLayer(ds, 0);
    if (!lay && o->layer)
      st = tr_fail(err, TR_EUSAGE, "--burn-layer: '%s' has no layer '%s'", o->file, o->layer);
    else if (!lay)
      st = tr_fail(err, TR_EINPUT, "the burn lines '%s' have no layer", o->file);
  }
  if (!st && !(b->layer = strdup(OGR_L_GetName(lay)))) st = tr_fail(err, TR_ENOMEM, "out of memory");
  int assumed = 0;
  if (!st) st = tr_vector_crs(lay, grid, o->file, "the burn lines", &ct, &assumed, err);
  if (!st && !GDALInvGeoTransform((double *)grid->gt, r.inv))
    st = tr_fail(err, TR_EINPUT, "'%s' has a degenerate geotransform: the burn lines cannot be placed on it",
                 grid->path);
  int lines = 0;
  if (!st) {
    OGR_L_ResetReading(lay);
    OGRFeatureH f;
    while (!st && (f = OGR_L_GetNextFeature(lay))) {
      r.fid = OGR_F_GetFID(f);
      st = add_feature(&r, f, ct, o->file, &lines, err);
      OGR_F_Destroy(f);
    }
  }
  if (ct) OCTDestroyCoordinateTransformation(ct);
  if (ds) GDALClose(ds);
  CPLPopErrorHandler();
  /* a run that burns nothing is a mistake more likely than a wish */
  if (!st && !lines) st = tr_fail(err, TR_EINPUT, "the burn lines '%s' have no line features", o->file);
  if (!st && !b->nseg)
    st =
        tr_fail(err, TR_EINPUT, "none of the burn lines '%s' crosses '%s' (are they in its CRS?)", o->file, grid->path);
  if (st) {
    tr_burn_close(b);
    return st;
  }
  qsort(b->idx, (size_t)b->nidx, sizeof *b->idx, entry_cmp);
  for (int64_t e = 0; e < b->nidx; e++) b->nblk += !e || b->idx[e].block != b->idx[e - 1].block;
  if (!(b->blk = calloc((size_t)b->nblk, sizeof *b->blk)) || pthread_mutex_init(&b->lock, NULL)) {
    tr_burn_close(b);
    return tr_fail(err, TR_ENOMEM, "out of memory for the burn lines");
  }
  b->locked_init = 1;
  for (int64_t e = 0, u = -1; e < b->nidx; e++) {
    if (!e || b->idx[e].block != b->idx[e - 1].block) b->blk[++u] = (burn_block){.block = b->idx[e].block, .e0 = e};
    b->blk[u].e1 = e + 1;
  }
  if (assumed && run && run->warning && tr_rank() == 0) {
    char msg[700];
    snprintf(msg, sizeof msg, "the burn lines '%s' have no CRS: their coordinates are taken as the CRS of '%s'",
             o->file, grid->path);
    run->warning(msg, run->warning_user);
  }
  *out = b;
  return TR_OK;
}

/* GDAL's transformer for a block: cell coordinates of the grid to the
 * block's (its corner's offset taken off; exact for cell centres). */
static int block_shift(void *arg, int inverse, int n, double *x, double *y, double *z, int *ok) {
  (void)z;
  const double *at = arg;
  const double s = inverse ? -1.0 : 1.0;
  for (int i = 0; i < n; i++) {
    x[i] -= s * at[0];
    y[i] -= s * at[1];
    if (ok) ok[i] = TRUE;
  }
  return TRUE;
}

/* Block blk among those that hold segments, or NULL. */
static burn_block *block_of(const tr_burn *b, int64_t blk) {
  int64_t lo = 0, hi = b->nblk;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (b->blk[mid].block < blk)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < b->nblk && b->blk[lo].block == blk ? &b->blk[lo] : NULL;
}

/* Block blk's cells the segments from index entry e0 to e1 touch, into
 * mask (TR_BURN_BLOCK^2 bytes, 1: touched), by GDAL's rasterizer. */
static int rasterize_block(const tr_burn *b, int64_t blk, int64_t e0, int64_t e1, unsigned char *mask, tr_error *err) {
  const int B = TR_BURN_BLOCK;
  GDALDriverH mem = GDALGetDriverByName("MEM");
  if (!mem) return tr_fail(err, TR_EINTERNAL, "GDAL's MEM driver is missing: the burn lines cannot be rasterised");
  OGRGeometryH ml = OGR_G_CreateGeometry(wkbMultiLineString);
  int st = ml ? TR_OK : tr_fail(err, TR_ENOMEM, "out of memory for the burn lines");
  for (int64_t e = e0; e < e1 && !st; e++) {
    const double *s = b->seg + 4 * b->idx[e].seg;
    OGRGeometryH l = OGR_G_CreateGeometry(wkbLineString);
    if (!l) {
      st = tr_fail(err, TR_ENOMEM, "out of memory for the burn lines");
      break;
    }
    OGR_G_AddPoint_2D(l, s[0], s[1]);
    OGR_G_AddPoint_2D(l, s[2], s[3]);
    if (OGR_G_AddGeometryDirectly(ml, l) != OGRERR_NONE)
      st = tr_fail(err, TR_ENOMEM, "out of memory for the burn lines");
  }
  CPLPushErrorHandler(CPLQuietErrorHandler);
  CPLErrorReset();
  GDALDatasetH ds = st ? NULL : GDALCreate(mem, "", B, B, 1, GDT_Byte, NULL);
  if (!st && !ds) st = tr_fail(err, TR_ENOMEM, "out of memory for a burn block");
  if (!st) {
    double at[2] = {(double)(blk % b->nbc) * B, (double)(blk / b->nbc) * B};
    int band = 1;
    const double one = 1.0;
    char touched[] = "ALL_TOUCHED=TRUE", *at_opts[] = {touched, NULL}; /* CSLConstList is char ** in C */
    if (GDALRasterizeGeometries(ds, 1, &band, 1, &ml, block_shift, at, &one, b->all_touched ? at_opts : NULL, NULL,
                                NULL) != CE_None ||
        GDALRasterIO(GDALGetRasterBand(ds, 1), GF_Read, 0, 0, B, B, mask, B, B, GDT_Byte, 0, 0) != CE_None)
      st = tr_fail(err, TR_EINTERNAL, "cannot rasterise the burn lines '%s': %s", b->file, CPLGetLastErrorMsg());
  }
  if (ds) GDALClose(ds);
  CPLPopErrorHandler();
  if (ml) OGR_G_DestroyGeometry(ml);
  return st;
}

/* The cells of block k, rasterised on its first use (under b's lock: a
 * block is rasterised once, by whichever thread needs it first). */
static int block_cells(tr_burn *b, burn_block *k, tr_error *err) {
  pthread_mutex_lock(&b->lock);
  int st = TR_OK;
  if (!k->done) {
    const int B = TR_BURN_BLOCK;
    unsigned char *mask = malloc((size_t)B * B);
    if (!mask) st = tr_fail(err, TR_ENOMEM, "out of memory for a burn block");
    if (!st) st = rasterize_block(b, k->block, k->e0, k->e1, mask, err);
    int32_t n = 0;
    for (int i = 0; !st && i < B * B; i++) n += mask[i] != 0;
    if (!st && n && !(k->cells = malloc((size_t)n * sizeof *k->cells)))
      st = tr_fail(err, TR_ENOMEM, "out of memory for a burn block");
    for (int i = 0, j = 0; !st && i < B * B; i++)
      if (mask[i]) k->cells[j++] = (uint16_t)i;
    free(mask);
    if (!st) k->ncells = n, k->done = 1;
  }
  pthread_mutex_unlock(&b->lock);
  return st;
}

int tr_burn_window(tr_burn *b, int64_t row0, int64_t col0, int64_t rows, int64_t cols, float *z, int64_t stride,
                   int has_nodata, float nodata, const int64_t rect[4], int64_t *count, tr_error *err) {
  if (count) *count = 0;
  if (!b || rows <= 0 || cols <= 0) return TR_OK;
  const int64_t B = TR_BURN_BLOCK;
  int64_t n = 0;
  int st = TR_OK;
  for (int64_t br = row0 / B; br <= (row0 + rows - 1) / B && !st; br++)
    for (int64_t bc = col0 / B; bc <= (col0 + cols - 1) / B && !st; bc++) {
      burn_block *k = block_of(b, br * b->nbc + bc);
      if (!k || (st = block_cells(b, k, err))) continue;
      for (int32_t i = 0; i < k->ncells; i++) {
        const int64_t r = br * B + k->cells[i] / B, c = bc * B + k->cells[i] % B;
        if (r < row0 || r >= row0 + rows || c < col0 || c >= col0 + cols) continue;
        float *v = &z[(r - row0) * stride + (c - col0)];
        if (isnan(*v) || (has_nodata && *v == nodata)) continue;
        float w = (float)((double)*v - b->depth);
        if (!isfinite(w)) w = -FLT_MAX;
        if (has_nodata && w == nodata) w = nextafterf(w, -INFINITY);
        *v = w;
        if (rect && r >= rect[0] && r < rect[0] + rect[2] && c >= rect[1] && c < rect[1] + rect[3]) n++;
      }
    }
  if (count) *count = n;
  return st;
}

int64_t tr_burn_bytes(const tr_burn *b) {
  if (!b) return 0;
  const int64_t B = TR_BURN_BLOCK;
  int64_t bytes = b->nseg * 4 * (int64_t)sizeof(double) + b->nidx * (int64_t)sizeof(burn_entry) +
                  b->nblk * (int64_t)sizeof(burn_block) + B * B; /* + one block's mask at a time (the lock) */
  for (int64_t k = 0; k < b->nblk; k++) {
    /* a segment's part in a block touches at most |dx| + |dy| + 2 of its
     * cells on GDAL's line rule (one step per cell boundary crossed), at
     * most twice that with ALL_TOUCHED, and no part more than a block's
     * perimeter run twice; the block at most all its cells */
    int64_t cells = 0;
    for (int64_t e = b->blk[k].e0; e < b->blk[k].e1 && cells < B * B; e++) {
      const double *s = b->seg + 4 * b->idx[e].seg;
      double run = ceil(fabs(s[2] - s[0])) + ceil(fabs(s[3] - s[1])) + 2.0;
      if (run > 4.0 * B) run = 4.0 * B;
      cells += (int64_t)run * (b->all_touched ? 2 : 1);
    }
    bytes += (cells < B * B ? cells : B * B) * (int64_t)sizeof(uint16_t);
  }
  return bytes;
}

tr_json *tr_burn_json(const tr_burn *b, int64_t count) {
  tr_json *o = tr_json_object(), *v = tr_json_object();
  tr_json_set(v, "file", tr_json_str(b->file ? b->file : ""));
  tr_json_set(v, "layer", tr_json_str(b->layer ? b->layer : ""));
  tr_json_set(v, "depth", tr_json_num(b->depth));
  tr_json_set(v, "all_touched", tr_json_bool(b->all_touched));
  tr_json_set(v, "segments", tr_json_int(b->nseg));
  tr_json_set(v, "cells", tr_json_int(count));
  tr_json_set(v, "bytes", tr_json_int(tr_burn_bytes(b)));
  tr_json_set(o, "burn", v);
  return o;
}
