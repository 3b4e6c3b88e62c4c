/*
 * network.c - the stream network: links assembled from the stream cells, and
 * written as lines with TauDEM streamnet's attributes through OGR.
 *
 * Why sequential: the link graph is small (the stream cells are a few
 * percent of a DEM, the links fewer still), so every rank reads the
 * direction and accumulation rasters in bands of rows, keeps only the stream
 * cells (accumulation >= threshold) and builds the same links: no messages,
 * and the basin program gets its seeds (every stream cell with its link
 * number) on every rank at once. Memory: the stream cells (STREAM_CELL_BYTES
 * each, counted in --mem: more is refused while reading, with the figure),
 * plus one band of rows of each raster.
 *
 * A link runs from its head (a source: no stream cell drains into it; or a
 * junction: two or more do) down to the cell before the next head. Links
 * are numbered as TauDEM streamnet numbers them (tree() says how), so that
 * LINKNO, the basins' labels and the link tree are TauDEM's own numbers.
 * As TauDEM writes them, a line's points go from the downstream end up to
 * the head and a link that ends in a junction carries the junction's point
 * first; Length sums the steps between points, StraightL is first to last.
 * Strahler order and Shreve magnitude come from the same walk.
 */
#include <gdal.h>
#include <math.h>
#include <ogr_api.h>
#include <ogr_srs_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "d8_codes.h"
#include "dist.h"
#include "step.h"
#include "flow.h"
#include "gradient.h"
#include "mem_limit.h"
#include "path_max.h"
#include "raster.h"
#include "side_file.h"
#include "vector_out.h"

#define BAND_ROWS 64
/* What a stream cell costs while the links are built: its record (32
 * bytes), build()'s downstream index, inflow count and link (16), its place
 * in the links' cells and seeds (24), a share of the links (8), and
 * tree()'s queue and inflows left (12). */
#define STREAM_CELL_BYTES 92

typedef struct {
  int64_t cell;
  int8_t dir;
  double acc, z;
} stream_cell;

typedef struct {
  stream_cell *v;
  int64_t n, cap;
} cell_list;

static int push_cell(cell_list *l, stream_cell c) {
  if (l->n == l->cap) {
    int64_t cap = l->cap ? 2 * l->cap : 4096;
    stream_cell *p = realloc(l->v, (size_t)cap * sizeof *p);
    if (!p) return -1;
    l->v = p;
    l->cap = cap;
  }
  l->v[l->n++] = c;
  return 0;
}

static int64_t find_cell(const cell_list *l, int64_t cell) {
  int64_t lo = 0, hi = l->n - 1;
  while (lo <= hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (l->v[mid].cell == cell) return mid;
    if (l->v[mid].cell < cell) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/* Reads the stream cells of the three rasters, band by band; more than
 * --mem (or its default) leaves them, after 64 MiB for the process and the
 * bands, is refused as soon as the reading passes that many. */
static int read_streams(const tr_links_src *s, tr_input *in, int nin, cell_list *out, tr_error *err) {
  const int64_t rows = in[0].rows, cols = in[0].cols;
  const int64_t bands = (int64_t)BAND_ROWS * cols * 4 * (int64_t)sizeof(float);
  int64_t room = tr_mem_room(s->run ? s->run->mem : 0, bands);
  if (room < STREAM_CELL_BYTES * 4096) room = STREAM_CELL_BYTES * 4096;
  const int64_t most = room / STREAM_CELL_BYTES;
  /* the bands of rows: directions, accumulation, elevations, streams */
  float *buf = malloc((size_t)(BAND_ROWS * cols) * 4 * sizeof *buf);
  if (!buf) return tr_fail(err, TR_ENOMEM, "out of memory reading the stream cells");
  int st = TR_OK;
  for (int64_t r0 = 0; r0 < rows && !st; r0 += BAND_ROWS) {
    const int64_t nr = rows - r0 < BAND_ROWS ? rows - r0 : BAND_ROWS;
    for (int k = 0; k < nin && !st; k++)
      if (in[k].ds) st = tr_input_read_f32(&in[k], r0, 0, nr, cols, buf + (size_t)k * BAND_ROWS * cols, cols, err);
    const float *src = s->streams ? buf + 3 * BAND_ROWS * cols : NULL;
    for (int64_t i = 0; i < nr * cols && !st; i++) {
      const float a = buf[BAND_ROWS * cols + i];
      /* TauDEM reads src as 16-bit integers and takes those above 0 */
      if (src ? isnan(src[i]) || (in[3].has_nodata && src[i] == (float)in[3].nodata) || src[i] < 1.0f
              : isnan(a) || (double)a < s->threshold)
        continue;
      const int d = tr_d8_decode_value(s->encoding, buf[i]);
      if (d == TR_D8_NODATA || d == TR_D8_BAD) continue;
      stream_cell c = {(r0 + i / cols) * cols + i % cols, (int8_t)d, isnan(a) ? 0.0 : a,
                       in[2].ds ? buf[2 * BAND_ROWS * cols + i] : NAN};
      if (out->n >= most)
        st = tr_fail(err, TR_ENOMEM,
                     "the stream network: more than %lld stream cells (accumulation >= %g), at about %d bytes each, "
                     "do not fit the %.1f MiB --mem (or its default) leaves them after 64 MiB for the process: "
                     "give a higher --threshold or more --mem",
                     (long long)most, s->threshold, STREAM_CELL_BYTES, (double)room / 1048576.0);
      else if (push_cell(out, c)) st = tr_fail(err, TR_ENOMEM, "out of memory for the stream cells");
    }
  }
  free(buf);
  return st;
}

/* The stream cell each stream cell drains into (index, or -1). */
static int64_t downstream(const cell_list *l, int64_t rows, int64_t cols, int64_t i) {
  const stream_cell *c = &l->v[i];
  if (c->dir < 0) return -1;
  const int64_t r = c->cell / cols + tr_d8_dr[c->dir], col = c->cell % cols + tr_d8_dc[c->dir];
  if (r < 0 || r >= rows || col < 0 || col >= cols) return -1;
  return find_cell(l, r * cols + col);
}

/* The link tree and TauDEM streamnet's link numbers. TauDEM numbers links
 * as it makes them, walking the stream cells in a first-in first-out queue
 * seeded with the sources in row-major order, a cell entering the queue
 * once every stream cell draining into it has left it: a source makes a
 * link, a junction of k inflows makes k - 1 (the first joins the two of
 * highest Strahler order, each next one joins the link before and the next
 * inflow, so that no link has more than two upstream links; all but the
 * last are zero-length links at the junction, the last goes on down).
 * Which inflows come first follows TauDEM's ordering: the inflows in
 * neighbour order (E, NE, N, ... SE), then two passes of exchanging
 * neighbours whose orders are out of ascending order, and the last two
 * join first. The links walked by build() (old numbers, by head cell) are
 * renumbered so; their cells stay as they are. `linkof` (old numbers on
 * entry) holds the new ones on return. Memory: the queue, one int64_t per
 * stream cell. */
static int tree(const cell_list *l, int64_t rows, int64_t cols, const int64_t *ds, const int32_t *nin,
                int32_t *linkof, tr_links *out, tr_error *err) {
  const int64_t n = l->n, nreal = out->nlinks;
  int64_t nvirtual = 0;
  for (int64_t i = 0; i < n; i++)
    if (nin[i] > 2) nvirtual += nin[i] - 2;
  const int64_t total = nreal + nvirtual;
  if (total > INT32_MAX) return tr_fail(err, TR_ENOMEM, "more than 2^31 stream links");
  tr_link *nl = calloc((size_t)(total ? total : 1), sizeof *nl);
  int32_t *newid = malloc((size_t)(nreal ? nreal : 1) * sizeof *newid);
  int32_t *left = malloc((size_t)(n ? n : 1) * sizeof *left); /* inflows not yet out of the queue */
  int64_t *queue = malloc((size_t)(n ? n : 1) * sizeof *queue);
  if (!nl || !newid || !left || !queue) {
    free(nl);
    free(newid);
    free(left);
    free(queue);
    return tr_fail(err, TR_ENOMEM, "out of memory for the stream links");
  }
  int64_t qt = 0, made = 0;
  for (int64_t i = 0; i < n; i++) {
    left[i] = nin[i];
    if (!nin[i]) queue[qt++] = i;
  }
  for (int64_t qh = 0; qh < qt; qh++) {
    const int64_t i = queue[qh], r = l->v[i].cell / cols, c = l->v[i].cell % cols;
    int32_t up[8], ord[8];
    int k = 0;
    for (int m = 1; m <= 8 && nin[i]; m++) {
      const int64_t rr = r + tr_d8_drow[m], cc = c + tr_d8_dcol[m];
      if (rr < 0 || rr >= rows || cc < 0 || cc >= cols) continue;
      const int64_t j = find_cell(l, rr * cols + cc);
      if (j < 0 || ds[j] != i) continue;
      up[k] = newid[linkof[j]];
      ord[k] = nl[up[k]].order;
      k++;
    }
    if (k == 0 || k >= 2) {
      const tr_link *walked = &out->links[linkof[i]];
      int32_t oout = 1, u1 = -1;
      if (k >= 2) {
        for (int pass = 0; pass < 2; pass++)
          for (int b = 0; b + 1 < k; b++)
            if (ord[b] > ord[b + 1]) {
              const int32_t to = ord[b], tu = up[b];
              ord[b] = ord[b + 1], up[b] = up[b + 1];
              ord[b + 1] = to, up[b + 1] = tu;
            }
        oout = ord[k - 2] == ord[k - 1] ? ord[k - 1] + 1 : ord[k - 1];
        u1 = up[k - 1];
      }
      for (int m = 1; m < (k ? k : 2); m++) {
        const int32_t id = (int32_t)made++, u2 = k ? up[k - 1 - m] : -1;
        tr_link *v = &nl[id];
        const int last = m + 1 >= (k ? k : 2);
        if (last) { /* the link that goes on down from the junction or source */
          *v = *walked;
          newid[linkof[i]] = id;
        } else { /* a zero-length link at the junction */
          v->head = v->last = v->next = walked->head;
        }
        v->ds = -1;
        v->us1 = u1;
        v->us2 = u2;
        v->order = oout;
        v->magnitude = k ? nl[u1].magnitude + nl[u2].magnitude : 1;
        if (u1 >= 0) nl[u1].ds = id;
        if (u2 >= 0) nl[u2].ds = id;
        u1 = id;
      }
    }
    if (ds[i] >= 0 && --left[ds[i]] == 0) queue[qt++] = ds[i];
  }
  /* every walked link numbered (a cycle of stream cells has been refused) */
  for (int64_t i = 0; i < n; i++)
    if (linkof[i] >= 0) linkof[i] = newid[linkof[i]];
  free(out->links);
  out->links = nl;
  out->nlinks = made;
  free(newid);
  free(left);
  free(queue);
  return TR_OK;
}

static int build(const cell_list *l, int64_t rows, int64_t cols, tr_links *out, tr_error *err) {
  const int64_t n = l->n;
  int64_t *ds = malloc((size_t)(n ? n : 1) * sizeof *ds);
  int32_t *nin = calloc((size_t)(n ? n : 1), sizeof *nin);
  int32_t *linkof = malloc((size_t)(n ? n : 1) * sizeof *linkof);
  int st = TR_OK;
  if (!ds || !nin || !linkof) st = tr_fail(err, TR_ENOMEM, "out of memory building the stream links");
  int64_t nlinks = 0;
  for (int64_t i = 0; i < n && !st; i++) {
    ds[i] = downstream(l, rows, cols, i);
    if (ds[i] >= 0) nin[ds[i]]++;
  }
  for (int64_t i = 0; i < n && !st; i++) {
    linkof[i] = -1;
    if (nin[i] != 1) linkof[i] = (int32_t)nlinks++;
  }
  out->nlinks = nlinks;
  out->links = calloc((size_t)(nlinks ? nlinks : 1), sizeof *out->links);
  out->cells = malloc((size_t)(n ? n : 1) * sizeof *out->cells);
  out->seeds = malloc((size_t)(n ? n : 1) * sizeof *out->seeds);
  if (!st && (!out->links || !out->cells || !out->seeds)) st = tr_fail(err, TR_ENOMEM, "out of memory for links");
  /* walk each link down from its head */
  int64_t used = 0;
  for (int64_t i = 0; i < n && !st; i++) {
    if (linkof[i] < 0 || nin[i] == 1) continue;
    tr_link *k = &out->links[linkof[i]];
    k->head = l->v[i].cell;
    k->first_cell = used;
    k->ds = k->us1 = k->us2 = -1;
    int64_t x = i, last = i;
    while (x >= 0 && (x == i || nin[x] == 1)) {
      if (used >= n) { /* a cycle of stream cells cannot be walked */
        st = tr_fail(err, TR_EINPUT, "the flow directions form a cycle through cell (row %lld, col %lld)",
                     (long long)(l->v[x].cell / cols), (long long)(l->v[x].cell % cols));
        break;
      }
      out->cells[used++] = l->v[x].cell;
      linkof[x] = linkof[i];
      last = x;
      x = ds[x];
    }
    k->ncells = used - k->first_cell;
    k->last = l->v[last].cell;
    k->next = x >= 0 ? l->v[x].cell : -1;
    k->ds = x >= 0 ? linkof[x] : -1;
  }
  if (!st) st = tree(l, rows, cols, ds, nin, linkof, out, err);
  for (int64_t i = 0; i < n && !st; i++) out->seeds[i] = (tr_basin_seed){l->v[i].cell, linkof[i]};
  out->nseeds = st ? 0 : n;
  free(ds);
  free(nin);
  free(linkof);
  return st;
}

int tr_links_build(const tr_links_src *s, tr_links *out, tr_error *err) {
  memset(out, 0, sizeof *out);
  tr_input in[4];
  memset(in, 0, sizeof in);
  const char *paths[4] = {s->dir, s->acc, s->elev, s->streams};
  int st = TR_OK;
  for (int k = 0; k < 4 && !st; k++) {
    if (!paths[k]) continue;
    st = tr_input_open(&in[k], paths[k], k == 2 && s->elev_band > 0 ? s->elev_band : 1, err);
    if (!st && k) st = tr_input_same_size(&in[k], paths[k], &in[0], "", paths[0], err);
  }
  cell_list l = {NULL, 0, 0};
  if (!st) st = read_streams(s, in, 4, &l, err);
  if (!st) st = build(&l, in[0].rows, in[0].cols, out, err);
  free(l.v);
  for (int k = 0; k < 4; k++)
    if (in[k].ds) tr_input_close(&in[k]);
  st = tr_step_end(s->run, st, err);
  if (st) tr_links_free(out);
  return st;
}

void tr_links_free(tr_links *l) {
  free(l->links);
  free(l->cells);
  free(l->seeds);
  memset(l, 0, sizeof *l);
}

/* ------------------------------------------------------------- writing */

typedef struct {
  const char *name;
  OGRFieldType type;
  int width, precision;
} field_def;

static const field_def fields[] = {
    {"LINKNO", OFTInteger, 6, 0},     {"DSLINKNO", OFTInteger, 6, 0},   {"USLINKNO1", OFTInteger, 6, 0},
    {"USLINKNO2", OFTInteger, 6, 0},  {"strmOrder", OFTInteger, 6, 0},  {"Length", OFTReal, 16, 1},
    {"Magnitude", OFTInteger, 6, 0},  {"DSContArea", OFTReal, 16, 1},   {"strmDrop", OFTReal, 16, 2},
    {"Slope", OFTReal, 16, 12},       {"StraightL", OFTReal, 16, 1},    {"USContArea", OFTReal, 16, 1},
    {"WSNO", OFTInteger, 6, 0},
};
enum { F_LINKNO, F_DS, F_US1, F_US2, F_ORDER, F_LENGTH, F_MAG, F_DSAREA, F_DROP, F_SLOPE, F_STRAIGHT, F_USAREA, F_WSNO };

/* The value of raster `path` at the given cells (one read each: links are few). */
typedef struct {
  tr_input in;
  int open;
} point_reader;

static double value_at(point_reader *p, int64_t cell, tr_error *err, int *st) {
  float v = NAN;
  if (!*st) *st = tr_input_read_f32(&p->in, cell / p->in.cols, cell % p->in.cols, 1, 1, &v, 1, err);
  return v;
}

/* Metres (or map units on a projected grid) between two cells: the steps
 * along rows and columns scaled by the cell size at the mean row. */
static double metric_distance(const tr_gradient_params *geo, int64_t a, int64_t b, int64_t cols) {
  const double dr = (double)(b / cols - a / cols), dc = (double)(b % cols - a % cols);
  if (!geo->geographic) {
    const double *gt = geo->gt;
    return hypot(dc * gt[1] + dr * gt[2], dc * gt[4] + dr * gt[5]);
  }
  double iew, ins;
  tr_gradient_inv_res(geo, (a / cols + b / cols) / 2, &iew, &ins);
  return hypot(dc / iew, dr / ins);
}

static double step_length(const tr_gradient_params *geo, int64_t a, int64_t b, int64_t cols) {
  return metric_distance(geo, a, b, cols);
}

/* The downstream end of a link (the first point of its line). */
static int64_t bottom_first(const tr_link *k, const tr_links *l) {
  return k->next >= 0 ? k->next : l->cells[k->first_cell + k->ncells - 1];
}

static double straight_length(const tr_gradient_params *geo, int64_t head, int64_t bottom, int64_t cols, double dx,
                              double dy) {
  return geo->geographic ? metric_distance(geo, bottom, head, cols) : hypot(dx, dy);
}

/* What one unit of the accumulation raster is in area: the cell area
 * (metres on a geographic grid, at the cell's row) when it counts cells. */
static double area_of(const tr_links_src *s, const tr_gradient_params *geo, int64_t row) {
  if (s->area_factor == 1.0 || !geo->geographic) return s->area_factor;
  double iew, ins;
  tr_gradient_inv_res(geo, row, &iew, &ins);
  return fabs(1.0 / (iew * ins));
}

/* Metres per cell on a geographic grid, per row, as slope computes them;
 * else the geotransform's units. */
static void geo_of(const tr_input *in, tr_gradient_params *geo) {
  memset(geo, 0, sizeof *geo);
  memcpy(geo->gt, in->gt, sizeof geo->gt);
  if (in->geographic) {
    const double fl = in->inv_flattening > 0 ? 1.0 / in->inv_flattening : 0.0;
    geo->geographic = 1;
    geo->semi_major = in->semi_major;
    geo->e2 = fl * (2.0 - fl);
  }
}

int tr_links_check(const char *dst, const char *driver, tr_error *err) {
  return tr_vector_check(dst, driver, "-nf", err);
}

/* Writes the lines into a new dataset at `path` (a temporary: messages name
 * the user's `name`, and the layer is named after it). */
static int write_links(const tr_links_src *s, const tr_links *l, const char *path, const char *name,
                       const char *drvname, tr_error *err) {
  point_reader dir = {{0}, 0}, acc = {{0}, 0}, elev = {{0}, 0};
  int st = tr_input_open(&dir.in, s->dir, 1, err);
  dir.open = !st;
  if (!st) st = tr_input_open(&acc.in, s->acc, 1, err), acc.open = !st;
  if (!st && s->elev) st = tr_input_open(&elev.in, s->elev, s->elev_band > 0 ? s->elev_band : 1, err), elev.open = !st;
  GDALDriverH drv = st ? NULL : GDALGetDriverByName(drvname); /* tr_links_check found it */
  GDALDatasetH ds = st ? NULL : GDALCreate(drv, path, 0, 0, 0, GDT_Unknown, NULL);
  OGRSpatialReferenceH srs = NULL;
  if (!st && !ds) st = tr_fail(err, TR_EOUTPUT, "cannot create '%s': %s", name, CPLGetLastErrorMsg());
  if (!st && dir.in.wkt) {
    srs = OSRNewSpatialReference(dir.in.wkt);
    if (srs) OSRSetAxisMappingStrategy(srs, OAMS_TRADITIONAL_GIS_ORDER);
  }
  char layer_name[256];
  {
    const char *slash = strrchr(name, '/'), *b = slash ? slash + 1 : name, *dot = strrchr(b, '.');
    const int n = dot ? (int)(dot - b) : (int)strlen(b);
    if (snprintf(layer_name, sizeof layer_name, "%.*s", n, b) < 0) layer_name[0] = 0;
  }
  OGRLayerH lay = st ? NULL : GDALDatasetCreateLayer(ds, layer_name, srs, wkbLineString, NULL);
  if (!st && !lay) st = tr_fail(err, TR_EOUTPUT, "cannot create layer in '%s': %s", name, CPLGetLastErrorMsg());
  for (size_t i = 0; i < sizeof fields / sizeof fields[0] && !st; i++) {
    OGRFieldDefnH fd = OGR_Fld_Create(fields[i].name, fields[i].type);
    OGR_Fld_SetWidth(fd, fields[i].width);
    OGR_Fld_SetPrecision(fd, fields[i].precision);
    if (OGR_L_CreateField(lay, fd, 1) != OGRERR_NONE) st = tr_fail(err, TR_EOUTPUT, "cannot add field %s to '%s'", fields[i].name, name);
    OGR_Fld_Destroy(fd);
  }
  const double *gt = dir.in.gt;
  const int64_t cols = dir.in.cols;
  tr_gradient_params geo;
  geo_of(&dir.in, &geo);
  const int tx = !st && GDALDatasetTestCapability(ds, ODsCTransactions);
  if (tx) GDALDatasetStartTransaction(ds, 0);
  for (int64_t j = 0; j < l->nlinks && !st; j++) {
    const tr_link *k = &l->links[j];
    OGRGeometryH g = OGR_G_CreateGeometry(wkbLineString);
    double len = 0, px = 0, py = 0, fx = 0, fy = 0;
    int np = 0;
    int64_t prev = -1, second = -1;
    const int64_t npts = k->ncells + (k->next >= 0);
    for (int64_t p = 0; p < npts; p++) {
      const int64_t cell = k->next >= 0 ? (p == 0 ? k->next : l->cells[k->first_cell + k->ncells - p])
                                        : l->cells[k->first_cell + k->ncells - 1 - p];
      const double c = (double)(cell % cols) + 0.5, r = (double)(cell / cols) + 0.5;
      const double x = gt[0] + c * gt[1] + r * gt[2], y = gt[3] + c * gt[4] + r * gt[5];
      if (np) len += step_length(&geo, prev, cell, cols);
      else fx = x, fy = y;
      if (np == 1) second = cell;
      OGR_G_AddPoint_2D(g, x, y);
      px = x, py = y;
      prev = cell;
      np++;
    }
    if (np == 1) OGR_G_AddPoint_2D(g, px, py); /* a line needs two points */
    /* TauDEM's DSContArea: at the point above the downstream end */
    const int64_t dscell = second >= 0 ? second : k->last;
    const int64_t bottom = k->next >= 0 ? k->next : k->last;
    const double dsarea = value_at(&acc, dscell, err, &st) * area_of(s, &geo, dscell / cols);
    const double usarea = value_at(&acc, k->head, err, &st) * area_of(s, &geo, k->head / cols);
    double drop = NAN;
    if (elev.open) drop = value_at(&elev, k->head, err, &st) - value_at(&elev, bottom, err, &st);
    OGRFeatureH f = OGR_F_Create(OGR_L_GetLayerDefn(lay));
    OGR_F_SetFieldInteger(f, F_LINKNO, (int)j);
    OGR_F_SetFieldInteger(f, F_DS, k->ds);
    OGR_F_SetFieldInteger(f, F_US1, k->us1);
    OGR_F_SetFieldInteger(f, F_US2, k->us2);
    OGR_F_SetFieldInteger(f, F_ORDER, k->order);
    OGR_F_SetFieldDouble(f, F_LENGTH, len);
    OGR_F_SetFieldInteger(f, F_MAG, k->magnitude);
    OGR_F_SetFieldDouble(f, F_DSAREA, dsarea);
    if (elev.open) {
      OGR_F_SetFieldDouble(f, F_DROP, drop);
      OGR_F_SetFieldDouble(f, F_SLOPE, len > 0 ? drop / len : 0.0);
    }
    OGR_F_SetFieldDouble(f, F_STRAIGHT, straight_length(&geo, prev, k->next >= 0 ? k->next : (np ? bottom_first(k, l) : prev), cols, px - fx, py - fy));
    OGR_F_SetFieldDouble(f, F_USAREA, usarea);
    OGR_F_SetFieldInteger(f, F_WSNO, (int)j);
    OGR_F_SetGeometryDirectly(f, g);
    if (!st && OGR_L_CreateFeature(lay, f) != OGRERR_NONE)
      st = tr_fail(err, TR_EOUTPUT, "cannot write link %lld to '%s': %s", (long long)j, name, CPLGetLastErrorMsg());
    OGR_F_Destroy(f);
  }
  if (tx && !st && GDALDatasetCommitTransaction(ds) != OGRERR_NONE)
    st = tr_fail(err, TR_EOUTPUT, "cannot write '%s': %s", name, CPLGetLastErrorMsg());
  if (ds) GDALClose(ds);
  if (srs) OSRDestroySpatialReference(srs);
  if (dir.open) tr_input_close(&dir.in);
  if (acc.open) tr_input_close(&acc.in);
  if (elev.open) tr_input_close(&elev.in);
  return st;
}

typedef struct {
  const tr_links_src *s;
  const tr_links *l;
  const char *dst;
} links_out;

static int links_to(const char *path, const char *drv, void *user, tr_error *err) {
  const links_out *o = user;
  return write_links(o->s, o->l, path, o->dst, drv, err);
}

int tr_links_write(const tr_links_src *s, const tr_links *l, const char *dst, const char *driver, tr_error *err) {
  links_out o = {s, l, dst};
  tr_vector_job j = {s->run, dst, driver, links_to, &o};
  return tr_step_writer(s->run, tr_vector_write, &j, err);
}

/* ------------------------------------------------------ the text files */

/* The points of link k as TauDEM lists them in coord.txt: its cells from
 * the head down, then the junction it flows into; a link of one point
 * (a zero-length link at a junction, or a one-cell link that ends the
 * network) has it twice. `pts` holds ncells + 2. */
static int64_t points_of(const tr_link *k, const tr_links *l, int64_t *pts) {
  int64_t n = 0;
  for (int64_t p = 0; p < k->ncells; p++) pts[n++] = l->cells[k->first_cell + p];
  if (k->next >= 0) pts[n++] = k->next;
  if (n == 1) pts[n++] = pts[0];
  return n;
}

/* One step's length down from cell a to its neighbour b, as TauDEM adds it
 * to the distance to the outlet: the cell width at a's row across, its
 * height up or down, the diagonal of both otherwise. */
static double step_down(const tr_gradient_params *geo, int64_t a, int64_t b, int64_t cols) {
  double iew = 1.0 / fabs(geo->gt[1]), ins = 1.0 / fabs(geo->gt[5]);
  if (geo->geographic) tr_gradient_inv_res(geo, a / cols, &iew, &ins);
  const int across = a % cols != b % cols, updown = a / cols != b / cols;
  const double dx = fabs(1.0 / iew), dy = fabs(1.0 / ins);
  return across && updown ? sqrt(dx * dx + dy * dy) : across ? dx : updown ? dy : 0.0;
}

typedef struct {
  const tr_links_src *s;
  const tr_links *l;
} text_job;

/* Writes tree.txt and coord.txt (either may be NULL) into f_tree, f_coord:
 * the links from the highest number down, as TauDEM lists them (its list of
 * links is built by putting each new one first). The distance to the
 * outlet is summed as TauDEM does, in single precision from the outlet up,
 * and a link's downstream link has a higher number, so its first point's
 * distance is known when the link is written. Nonzero when a write failed. */
static int write_text(const text_job *j, FILE *f_tree, FILE *f_coord, tr_error *err, int *st) {
  const tr_links_src *s = j->s;
  const tr_links *l = j->l;
  point_reader dir = {{0}, 0}, acc = {{0}, 0}, elev = {{0}, 0};
  *st = tr_input_open(&dir.in, s->dir, 1, err);
  dir.open = !*st;
  if (!*st && f_coord) *st = tr_input_open(&acc.in, s->acc, 1, err), acc.open = !*st;
  if (!*st && f_coord && s->elev)
    *st = tr_input_open(&elev.in, s->elev, s->elev_band > 0 ? s->elev_band : 1, err), elev.open = !*st;
  int64_t most = 0;
  for (int64_t i = 0; i < l->nlinks; i++)
    if (l->links[i].ncells > most) most = l->links[i].ncells;
  int64_t *pts = malloc((size_t)(most + 2) * sizeof *pts);
  float *len = malloc((size_t)(most + 2) * sizeof *len), *head_len = malloc((size_t)(l->nlinks + 1) * sizeof *head_len);
  if (!*st && (!pts || !len || !head_len)) *st = tr_fail(err, TR_ENOMEM, "out of memory writing the link tree");
  int bad = 0;
  tr_gradient_params geo;
  if (dir.open) geo_of(&dir.in, &geo);
  const double *gt = geo.gt;
  const int64_t cols = dir.in.cols;
  int64_t first = 0;
  for (int64_t id = l->nlinks - 1; id >= 0 && !*st && !bad; id--) {
    const tr_link *k = &l->links[id];
    const int64_t n = points_of(k, l, pts);
    len[n - 1] = k->next >= 0 && k->ds >= 0 ? head_len[k->ds] : 0.0f;
    for (int64_t p = n - 2; p >= 0; p--) {
      float d = len[p + 1];
      d = (float)((double)d + step_down(&geo, pts[p], pts[p + 1], cols));
      len[p] = d;
    }
    head_len[id] = len[0];
    if (f_tree)
      bad = fprintf(f_tree, "\t%lld\t%lld\t%lld\t%ld\t%ld\t%ld\t%ld\t-1\t%ld\n", (long long)id, (long long)first,
                    (long long)(first + n - 1), (long)k->ds, (long)k->us1, (long)k->us2, (long)k->order,
                    (long)k->magnitude) < 0;
    first += n;
    for (int64_t p = 0; p < n && f_coord && !bad && !*st; p++) {
      const int64_t cell = pts[p], r = cell / cols, c = cell % cols;
      const double x = gt[0] + gt[1] / 2.0 + (double)c * gt[1] + ((double)r + 0.5) * gt[2];
      const double y = gt[3] + gt[5] / 2.0 + (double)r * gt[5] + ((double)c + 0.5) * gt[4];
      const float z = elev.open ? (float)value_at(&elev, cell, err, st) : 0.0f;
      const float a = (float)(value_at(&acc, cell, err, st) * area_of(s, &geo, r));
      bad = fprintf(f_coord, "\t%f\t%f\t%f\t%f\t%f\n", x, y, (double)len[p], (double)z, (double)a) < 0;
    }
  }
  free(pts);
  free(len);
  free(head_len);
  if (dir.open) tr_input_close(&dir.in);
  if (acc.open) tr_input_close(&acc.in);
  if (elev.open) tr_input_close(&elev.in);
  return bad;
}

int tr_links_text_write(const tr_links_src *s, const tr_links *l, const char *tree, const char *coord, tr_error *err) {
  int st = TR_OK;
  if (tr_rank() == 0) {
    tr_side_file *ts = NULL, *cs = NULL;
    FILE *ft = NULL, *fc = NULL;
    if (tree) st = tr_side_open(tree, "link tree", &ts, &ft, err);
    if (!st && coord) st = tr_side_open(coord, "link coordinates", &cs, &fc, err);
    const text_job j = {s, l};
    int bad = 0;
    if (!st) bad = write_text(&j, ft, fc, err, &st);
    if (!st && bad) st = tr_fail(err, TR_EOUTPUT, "cannot write '%s'", tree && (!coord || ferror(ft)) ? tree : coord);
    for (int k = 0; k < 2; k++) {
      tr_side_file *side = k ? cs : ts;
      if (!side) continue;
      if (st) tr_side_abort(side);
      else st = tr_side_close(side, err);
    }
  }
  return tr_step_end(s->run, st, err); /* the writer's text files */
}
