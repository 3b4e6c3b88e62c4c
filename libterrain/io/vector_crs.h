/*
 * vector_crs.h - vector inputs laid on a raster's grid (internal): the
 * transformation of a layer's coordinates into the raster's CRS, one rule
 * for every vector a run reads over a grid (flowgraph's --outlets, the burn
 * lines of --burn).
 *
 * The rule: a layer in the raster's CRS, or with none (no CRS, a local one,
 * or a GeoPackage's placeholder "Undefined geographic/cartesian SRS" that a
 * layer made without a CRS gets), needs no transformation: its coordinates
 * are taken as the raster's. A layer in another CRS is transformed (OGR,
 * PROJ; traditional x = easting / longitude axis order on both sides). A
 * layer with a CRS over a raster without one, or a CRS PROJ cannot transform
 * into the raster's, is refused with one line (TR_EINPUT).
 */
#ifndef TR_VECTOR_CRS_H
#define TR_VECTOR_CRS_H

#include <ogr_api.h>
#include <ogr_srs_api.h>

#include "raster.h"

/* Sets *ct to the transformation of layer lay (of file `path`, called
 * `what` in a line: "the outlets", "the burn lines") into grid's CRS, or to
 * NULL when none is needed; *assumed (may be NULL) to 1 when the layer has
 * no CRS of its own and grid has one (its coordinates are taken as grid's:
 * a caller may warn). Destroy *ct with OCTDestroyCoordinateTransformation. */
int tr_vector_crs(OGRLayerH lay, const tr_input *grid, const char *path, const char *what,
                  OGRCoordinateTransformationH *ct, int *assumed, tr_error *err);

#endif
