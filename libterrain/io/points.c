/*
 * points.c - point readers for interpolation (see points.h).
 *
 * The OGR path follows gdal_grid's ProcessLayer: the layers named with -l
 * (else the first), or the result of -sql; -where and -spat as filters;
 * every vertex of every geometry is a point (multi-parts and rings too);
 * -clipsrc keeps the vertices inside the clip geometry. The XYZ path reads
 * "x y z" (spaces, tabs or commas) a line at a time: '#' lines and blank
 * lines are skipped, a first line that is not three numbers is a header.
 */
#include "points.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <gdal.h>
#include <ogr_api.h>
#include <ogr_srs_api.h>

/* A signal (Ctrl-C, mpirun's SIGTERM) stops a long read: asked every 65536
 * points. */
static int stopped(const tr_points *p, tr_error *err) {
  if ((p->n & 65535) != 65535 || !p->run || !p->run->cancelled || !p->run->cancelled(p->run->progress_user))
    return TR_OK;
  return tr_fail(err, TR_EINTERRUPTED, "interrupted");
}

static int add_point(tr_points *p, double x, double y, double z, tr_error *err) {
  int st = stopped(p, err);
  if (st) return st;
  if (p->sink) {
    if (p->n == 0 || x < p->xmin) p->xmin = x;
    if (p->n == 0 || x > p->xmax) p->xmax = x;
    if (p->n == 0 || y < p->ymin) p->ymin = y;
    if (p->n == 0 || y > p->ymax) p->ymax = y;
    p->n++;
    return p->sink(p->sink_user, x, y, z, err);
  }
  if (p->n == p->cap) {
    const int64_t most = p->mem > 0 ? p->mem / TR_POINT_BYTES : INT64_MAX;
    if (p->n >= most && p->spill) {
      /* past mem: what was read goes to the spill, and so does the rest */
      p->over = 1;
      for (int64_t i = 0; i < p->n; i++)
        if ((st = p->spill(p->spill_user, p->x[i], p->y[i], p->z[i], err))) return st;
      free(p->x);
      free(p->y);
      free(p->z);
      p->x = p->y = p->z = NULL;
      p->cap = 0;
      p->sink = p->spill;
      p->sink_user = p->spill_user;
      return add_point(p, x, y, z, err);
    }
    if (p->n >= most)
      return p->over = 1, tr_fail(err, TR_ENOMEM,
                     "more than %lld points, at about %d bytes a point with their search index: more than the "
                     "%.1f MiB that --mem (or its default) leaves for points after the tiles' buffers and 64 MiB "
                     "for the process: give more --mem",
                     (long long)most, TR_POINT_BYTES, (double)p->mem / 1048576.0);
    int64_t cap = p->cap ? p->cap * 2 : 4096;
    if (cap > most) cap = most;
    double *nx = realloc(p->x, (size_t)cap * sizeof *nx);
    if (nx) p->x = nx;
    double *ny = nx ? realloc(p->y, (size_t)cap * sizeof *ny) : NULL;
    if (ny) p->y = ny;
    double *nz = ny ? realloc(p->z, (size_t)cap * sizeof *nz) : NULL;
    if (nz) p->z = nz;
    if (!nz) return tr_fail(err, TR_ENOMEM, "out of memory for %lld points", (long long)cap);
    p->cap = cap;
  }
  if (p->n == 0 || x < p->xmin) p->xmin = x;
  if (p->n == 0 || x > p->xmax) p->xmax = x;
  if (p->n == 0 || y < p->ymin) p->ymin = y;
  if (p->n == 0 || y > p->ymax) p->ymax = y;
  p->x[p->n] = x;
  p->y[p->n] = y;
  p->z[p->n] = z;
  p->n++;
  return TR_OK;
}

void tr_points_free(tr_points *p) {
  free(p->x);
  free(p->y);
  free(p->z);
  free(p->wkt);
  memset(p, 0, sizeof *p);
}

/* ----------------------------------------------------------------- XYZ */

/* Up to 3 numbers of a line; returns how many parsed, -1 on a bad token. */
static int xyz_fields(char *s, double v[3]) {
  int n = 0;
  for (;;) {
    while (*s == ' ' || *s == '\t' || *s == ',' || *s == '\r' || *s == '\n') s++;
    if (!*s) return n;
    if (n == 3) return n; /* extra columns are ignored */
    char *end;
    errno = 0;
    v[n] = strtod(s, &end);
    if (end == s || (*end && !strchr(" \t,\r\n", *end))) return -1;
    n++;
    s = end;
  }
}

static int read_xyz(tr_points *p, const char *path, const tr_interpolate_opts *o, tr_error *err) {
  FILE *f = fopen(path, "r");
  if (!f) return tr_fail(err, TR_EINPUT, "cannot open points '%s': %s", path, strerror(errno));
  char *line = NULL;
  size_t cap = 0;
  int64_t lineno = 0, data_lines = 0;
  int st = TR_OK;
  /* a signal while waiting for input (a pipe) ends the read early: the
   * stop it asked for, or none (the read goes on) */
  for (;;) {
    while (getline(&line, &cap, f) >= 0) {
      lineno++;
      char *s = line;
      while (isspace((unsigned char)*s)) s++;
      if (!*s || *s == '#') continue;
      double v[3];
      const int nf = xyz_fields(s, v);
      if (nf != 3) {
        if (data_lines == 0 && lineno == 1) continue; /* a header */
        st = tr_fail(err, TR_EINPUT, "points '%s' line %lld: expected three numbers 'x y z'", path, (long long)lineno);
        break;
      }
      data_lines++;
      if (!isfinite(v[0]) || !isfinite(v[1]) || !isfinite(v[2])) {
        st = tr_fail(err, TR_EINPUT, "points '%s' line %lld: a coordinate or value is not finite", path,
                     (long long)lineno);
        break;
      }
      if ((st = add_point(p, v[0], v[1], (v[2] + o->z_increase) * o->z_multiply, err))) break;
    }
    if (st || !ferror(f) || errno != EINTR) break;
    if (p->run && p->run->cancelled && p->run->cancelled(p->run->progress_user)) {
      st = tr_fail(err, TR_EINTERRUPTED, "interrupted");
      break;
    }
    clearerr(f);
  }
  if (!st && ferror(f)) st = tr_fail(err, TR_EINPUT, "cannot read points '%s': %s", path, strerror(errno));
  free(line);
  fclose(f);
  return st;
}

/* ----------------------------------------------------------------- OGR */

typedef struct {
  tr_points *p;
  const tr_interpolate_opts *o;
  OGRGeometryH clip;
  const char *path;
  int64_t feature;
  double z; /* the attribute's value, when zfield */
  int use_field;
  int64_t nfeat, ngeom; /* features read, and those with a geometry */
} ogr_walk;

static int walk_geometry(ogr_walk *w, OGRGeometryH g, tr_error *err) {
  const int parts = OGR_G_GetGeometryCount(g);
  if (parts > 0) {
    for (int i = 0; i < parts; i++) {
      int st = walk_geometry(w, OGR_G_GetGeometryRef(g, i), err);
      if (st) return st;
    }
    return TR_OK;
  }
  const int n = OGR_G_GetPointCount(g);
  for (int i = 0; i < n; i++) {
    double x, y, z;
    OGR_G_GetPoint(g, i, &x, &y, &z);
    if (w->use_field) z = w->z;
    if (!isfinite(x) || !isfinite(y) || !isfinite(z))
      return tr_fail(err, TR_EINPUT, "points '%s' feature %lld: a coordinate or value is not finite", w->path,
                     (long long)w->feature);
    if (w->clip) {
      OGRGeometryH pt = OGR_G_CreateGeometry(wkbPoint);
      OGR_G_SetPoint_2D(pt, 0, x, y);
      const int in = OGR_G_Within(pt, w->clip);
      OGR_G_DestroyGeometry(pt);
      if (!in) continue;
    }
    int st = add_point(w->p, x, y, (z + w->o->z_increase) * w->o->z_multiply, err);
    if (st) return st;
  }
  return TR_OK;
}

/* A field's value as a number; a string must be one whole number. */
static int field_value(OGRFeatureH f, int fi, double *v) {
  const OGRFieldType t = OGR_Fld_GetType(OGR_F_GetFieldDefnRef(f, fi));
  if (t == OFTInteger || t == OFTInteger64 || t == OFTReal) {
    *v = OGR_F_GetFieldAsDouble(f, fi);
    return 0;
  }
  const char *s = OGR_F_GetFieldAsString(f, fi);
  char *end;
  while (isspace((unsigned char)*s)) s++;
  *v = strtod(s, &end);
  while (isspace((unsigned char)*end)) end++;
  return end == s || *end ? -1 : 0;
}

static int read_layer(ogr_walk *w, OGRLayerH layer, tr_error *err) {
  const tr_interpolate_opts *o = w->o;
  int fi = -1;
  if (o->zfield) {
    fi = OGR_FD_GetFieldIndex(OGR_L_GetLayerDefn(layer), o->zfield);
    if (fi < 0)
      return tr_fail(err, TR_EINPUT, "points '%s': layer '%s' has no field '%s' (-zfield)", w->path,
                     OGR_L_GetName(layer), o->zfield);
  }
  if (o->where && OGR_L_SetAttributeFilter(layer, o->where) != OGRERR_NONE)
    return tr_fail(err, TR_EUSAGE, "-where: '%s' is not a valid filter for '%s': %s", o->where, w->path,
                   CPLGetLastErrorMsg());
  if (o->has_spat) OGR_L_SetSpatialFilterRect(layer, o->spat[0], o->spat[1], o->spat[2], o->spat[3]);
  if (!w->p->wkt) {
    OGRSpatialReferenceH srs = OGR_L_GetSpatialRef(layer);
    char *wkt = NULL;
    if (srs && OSRExportToWkt(srs, &wkt) == OGRERR_NONE && wkt) w->p->wkt = strdup(wkt);
    CPLFree(wkt);
  }
  OGR_L_ResetReading(layer);
  OGRFeatureH f;
  int st = TR_OK;
  while (!st && (f = OGR_L_GetNextFeature(layer)) != NULL) {
    w->feature = OGR_F_GetFID(f);
    OGRGeometryH g = OGR_F_GetGeometryRef(f);
    w->nfeat++;
    w->ngeom += g != NULL;
    w->use_field = fi >= 0;
    if (g && fi >= 0) {
      if (!OGR_F_IsFieldSetAndNotNull(f, fi))
        g = NULL; /* no value: skipped */
      else if (field_value(f, fi, &w->z))
        st = tr_fail(err, TR_EINPUT, "points '%s' feature %lld: field '%s' value '%s' is not a number", w->path,
                     (long long)w->feature, o->zfield, OGR_F_GetFieldAsString(f, fi));
    }
    if (!st && g) st = walk_geometry(w, g, err);
    OGR_F_Destroy(f);
  }
  return st;
}

/* -clipsrc: four numbers, WKT, a vector file, or "spat_extent" (-spat). */
static int make_clip(const tr_interpolate_opts *o, OGRGeometryH *clip, tr_error *err) {
  *clip = NULL;
  const char *c = o->clipsrc;
  if (!c) return TR_OK;
  double b[4];
  char tail;
  if (!strcasecmp(c, "spat_extent")) {
    if (!o->has_spat) return tr_fail(err, TR_EUSAGE, "-clipsrc spat_extent needs -spat");
    memcpy(b, o->spat, sizeof b);
  } else if (sscanf(c, "%lf %lf %lf %lf %c", &b[0], &b[1], &b[2], &b[3], &tail) != 4) {
    char *wkt = (char *)c;
    if (OGR_G_CreateFromWkt(&wkt, NULL, clip) == OGRERR_NONE && *clip) return TR_OK;
    GDALDatasetH ds = GDALOpenEx(c, GDAL_OF_VECTOR | GDAL_OF_READONLY, NULL, NULL, NULL);
    if (!ds) return tr_fail(err, TR_EINPUT, "-clipsrc: '%s' is neither WKT nor a vector file", c);
    OGRLayerH l = o->clipsrc_sql     ? GDALDatasetExecuteSQL(ds, o->clipsrc_sql, NULL, NULL)
                  : o->clipsrc_layer ? GDALDatasetGetLayerByName(ds, o->clipsrc_layer)
                                     : GDALDatasetGetLayer(ds, 0);
    int st = TR_OK;
    if (!l)
      st = tr_fail(err, TR_EINPUT, "-clipsrc: no such layer in '%s'", c);
    else {
      if (o->clipsrc_where) OGR_L_SetAttributeFilter(l, o->clipsrc_where);
      *clip = OGR_G_CreateGeometry(wkbMultiPolygon);
      OGRFeatureH f;
      while ((f = OGR_L_GetNextFeature(l)) != NULL) {
        OGRGeometryH g = OGR_F_GetGeometryRef(f);
        if (g) {
          OGRGeometryH u = OGR_G_Union(*clip, g);
          if (u) {
            OGR_G_DestroyGeometry(*clip);
            *clip = u;
          }
        }
        OGR_F_Destroy(f);
      }
      if (o->clipsrc_sql) GDALDatasetReleaseResultSet(ds, l);
    }
    GDALClose(ds);
    return st;
  }
  OGRGeometryH ring = OGR_G_CreateGeometry(wkbLinearRing);
  OGR_G_AddPoint_2D(ring, b[0], b[1]);
  OGR_G_AddPoint_2D(ring, b[0], b[3]);
  OGR_G_AddPoint_2D(ring, b[2], b[3]);
  OGR_G_AddPoint_2D(ring, b[2], b[1]);
  OGR_G_AddPoint_2D(ring, b[0], b[1]);
  *clip = OGR_G_CreateGeometry(wkbPolygon);
  OGR_G_AddGeometryDirectly(*clip, ring);
  return TR_OK;
}

static int read_ogr(tr_points *p, const char *path, const tr_interpolate_opts *o, tr_error *err) {
  /* a CSV's X and Y columns become the geometry (gdal_grid needs a VRT) */
  const char *csv_oo[] = {"X_POSSIBLE_NAMES=x,X,easting,Easting,lon*,Lon*",
                          "Y_POSSIBLE_NAMES=y,Y,northing,Northing,lat*,Lat*", "Z_POSSIBLE_NAMES=z,Z",
                          "AUTODETECT_TYPE=YES", NULL};
  const size_t len = strlen(path);
  const int is_csv = len > 4 && !strcasecmp(path + len - 4, ".csv");
  const char *const *oo = o->open_options ? o->open_options : is_csv ? csv_oo : NULL;
  CPLPushErrorHandler(CPLQuietErrorHandler);
  GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_VECTOR | GDAL_OF_READONLY, NULL, oo, NULL);
  CPLPopErrorHandler();
  if (!ds) return tr_fail(err, TR_EINPUT, "cannot open points '%s' (not a vector file OGR reads)", path);
  ogr_walk w = {p, o, NULL, path, 0, 0, 0, 0, 0};
  int st = make_clip(o, &w.clip, err);
  if (!st && o->sql) {
    OGRLayerH l = GDALDatasetExecuteSQL(ds, o->sql, NULL, NULL);
    if (!l)
      st = tr_fail(err, TR_EUSAGE, "-sql: cannot run '%s' on '%s': %s", o->sql, path, CPLGetLastErrorMsg());
    else {
      st = read_layer(&w, l, err);
      GDALDatasetReleaseResultSet(ds, l);
    }
  } else if (!st && o->layers && o->layers[0]) {
    for (int i = 0; !st && o->layers[i]; i++) {
      OGRLayerH l = GDALDatasetGetLayerByName(ds, o->layers[i]);
      st = l ? read_layer(&w, l, err) : tr_fail(err, TR_EINPUT, "points '%s' has no layer '%s'", path, o->layers[i]);
    }
  } else if (!st) {
    OGRLayerH l = GDALDatasetGetLayerCount(ds) > 0 ? GDALDatasetGetLayer(ds, 0) : NULL;
    st = l ? read_layer(&w, l, err) : tr_fail(err, TR_EINPUT, "points '%s' has no layer", path);
  }
  /* features but no geometry: say why there are no points (tr_points_read's
     "no points" would leave the user guessing) */
  if (!st && p->n == 0 && w.nfeat > 0 && w.ngeom == 0)
    st = tr_fail(err, TR_EINPUT, "no points in '%s': %lld feature%s, none with a geometry%s", path, (long long)w.nfeat,
                 w.nfeat == 1 ? "" : "s",
                 is_csv && !o->open_options
                     ? " (a CSV's columns named x, X, easting, Easting or lon* and y, Y, northing, Northing or lat* "
                       "are taken for X and Y; -oo X_POSSIBLE_NAMES=... -oo Y_POSSIBLE_NAMES=... names others)"
                     : "");
  if (w.clip) OGR_G_DestroyGeometry(w.clip);
  GDALClose(ds);
  return st;
}

static int read_points(tr_points *p, const char *path, const tr_interpolate_opts *o, tr_error *err) {
  const size_t len = strlen(path);
  const int xyz = o->xyz || (len > 4 && !strcasecmp(path + len - 4, ".xyz"));
  if (xyz && (o->zfield || o->sql || o->where || o->layers || o->clipsrc || o->has_spat))
    return tr_fail(err, TR_EUSAGE,
                   "'%s' is read as x y z text: -zfield, -l, -where, -sql, -spat and -clipsrc "
                   "need a vector file",
                   path);
  int st = xyz ? read_xyz(p, path, o, err) : read_ogr(p, path, o, err);
  if (!st && p->n == 0) st = tr_fail(err, TR_EINPUT, "no points in '%s'", path);
  if (st) {
    const int over = p->over;
    tr_points_free(p);
    p->over = over;
  }
  return st;
}

int tr_points_read_spill(tr_points *p, const char *path, const tr_interpolate_opts *o, int64_t mem, tr_point_sink spill,
                         void *user, tr_error *err) {
  memset(p, 0, sizeof *p);
  p->mem = mem;
  p->spill = spill;
  p->spill_user = user;
  p->run = &o->run;
  return read_points(p, path, o, err);
}

int tr_points_read(tr_points *p, const char *path, const tr_interpolate_opts *o, int64_t mem, tr_error *err) {
  return tr_points_read_spill(p, path, o, mem, NULL, NULL, err);
}
