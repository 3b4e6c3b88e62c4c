/*
 * vector_crs.c - a vector layer's coordinates into a raster's CRS
 * (vector_crs.h): the one rule flowgraph's outlets and the burn lines share.
 */
#include <string.h>

#include "vector_crs.h"

int tr_vector_crs(OGRLayerH lay, const tr_input *grid, const char *path, const char *what,
                  OGRCoordinateTransformationH *ct, int *assumed, tr_error *err) {
  *ct = NULL;
  if (assumed) *assumed = 0;
  OGRSpatialReferenceH given = OGR_L_GetSpatialRef(lay);
  /* none, a local one, or a GeoPackage's placeholder for none (a layer
   * made without a CRS gets its "Undefined geographic SRS" or "Undefined
   * cartesian SRS"): the grid's */
  const char *name = given ? OSRGetName(given) : NULL;
  if (!given || OSRIsLocal(given) || (name && !strncmp(name, "Undefined ", 10))) {
    if (assumed) *assumed = grid->wkt != NULL;
    return TR_OK;
  }
  if (!grid->wkt)
    return tr_fail(err, TR_EINPUT, "'%s' has a CRS and '%s' has none: %s cannot be placed on its grid", path,
                   grid->path, what);
  OGRSpatialReferenceH from = OSRClone(given), to = OSRNewSpatialReference(grid->wkt);
  int st = TR_OK;
  if (!from || !to) st = tr_fail(err, TR_EINPUT, "cannot read the CRS of '%s' or '%s'", path, grid->path);
  if (!st) {
    OSRSetAxisMappingStrategy(from, OAMS_TRADITIONAL_GIS_ORDER);
    OSRSetAxisMappingStrategy(to, OAMS_TRADITIONAL_GIS_ORDER);
    if (!OSRIsSame(from, to) && !(*ct = OCTNewCoordinateTransformation(from, to)))
      st = tr_fail(err, TR_EINPUT, "%s '%s' are in %s, which cannot be transformed into the CRS of '%s' (%s)", what,
                   path, OSRGetName(from) ? OSRGetName(from) : "an unnamed CRS", grid->path,
                   OSRGetName(to) ? OSRGetName(to) : "unnamed");
  }
  if (from) OSRDestroySpatialReference(from);
  if (to) OSRDestroySpatialReference(to);
  return st;
}
