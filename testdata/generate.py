"""Generates terrafort's test DEMs (run through scripts/make-testdata; README.md beside it says what each file is for).

Every surface is either analytic (its slope and aspect are known in closed
form, so tests compare against mathematics, not against another program) or
synthetic terrain with the features that break naive code: closed pits,
flats, NoData holes, every GDAL data type, a VRT mosaic, a geographic CRS,
and deliberately bad files.
"""
import os
import sys

import numpy as np
from osgeo import gdal, osr

gdal.UseExceptions()
OUT = sys.argv[1]
UTM12N = 32612


def srs_wkt(epsg):
    s = osr.SpatialReference()
    s.ImportFromEPSG(epsg)
    return s.ExportToWkt()


def write(name, z, gt=(500000.0, 10.0, 0.0, 4500000.0, 0.0, -10.0), epsg=UTM12N,
          nodata=None, dtype=gdal.GDT_Float32, options=()):
    path = os.path.join(OUT, name)
    rows, cols = z.shape
    ds = gdal.GetDriverByName("GTiff").Create(path, cols, rows, 1, dtype, list(options))
    if gt is not None:
        ds.SetGeoTransform(gt)
    if epsg is not None:
        ds.SetProjection(srs_wkt(epsg))
    band = ds.GetRasterBand(1)
    if nodata is not None:
        band.SetNoDataValue(nodata)
    band.WriteArray(z)
    ds = None
    return path


def fractal(n_rows, n_cols, seed, octaves=7):
    """Spectral-synthesis terrain: smooth hills, valleys and closed pits."""
    rng = np.random.default_rng(seed)
    z = np.zeros((n_rows, n_cols))
    for o in range(octaves):
        f = 2 ** o
        coarse = rng.normal(0, 1, (f + 2, f + 2))
        ys = np.linspace(0, f, n_rows)
        xs = np.linspace(0, f, n_cols)
        y0 = np.floor(ys).astype(int)
        x0 = np.floor(xs).astype(int)
        ty = (ys - y0)[:, None]
        tx = (xs - x0)[None, :]
        ty = ty * ty * (3 - 2 * ty)
        tx = tx * tx * (3 - 2 * tx)
        a = coarse[y0][:, x0]
        b = coarse[y0][:, x0 + 1]
        c = coarse[y0 + 1][:, x0]
        d = coarse[y0 + 1][:, x0 + 1]
        z += ((a * (1 - tx) + b * tx) * (1 - ty) + (c * (1 - tx) + d * tx) * ty) * 400.0 / (1.8 ** o)
    return z + 1500.0


def main():
    rows, cols = 150, 200
    y, x = np.mgrid[0:rows, 0:cols].astype(np.float64)
    X = x * 10.0           # metres east of the west edge (cell centres)
    Y = -y * 10.0          # metres north (rows go south)

    # Plane: dz/dx = 0.3, dz/dy = -0.4 -> slope atan(0.5), exact for Horn and ZT.
    write("plane.tif", (100.0 + 0.3 * X - 0.4 * Y).astype(np.float32))
    # Cone: slope atan(0.25) everywhere but the apex; aspect points away from it.
    r = np.hypot(X - 1000.0, Y + 750.0)
    write("cone.tif", (1000.0 - 0.25 * r).astype(np.float32))
    # Gaussian hill: smooth, known gradient.
    g = 800.0 * np.exp(-((X - 1000.0) ** 2 + (Y + 750.0) ** 2) / (2 * 400.0 ** 2))
    write("gauss.tif", g.astype(np.float32))
    # Flat: aspect is nodata (or 0 with -zero_for_flat) everywhere.
    write("flat.tif", np.full((rows, cols), 42.0, np.float32))

    # Fractal terrain with closed pits and NoData holes.
    z = fractal(rows, cols, 7)
    rng = np.random.default_rng(11)
    for _ in range(12):  # closed pits
        cy, cx = rng.integers(10, rows - 10), rng.integers(10, cols - 10)
        rr = np.hypot(y - cy, x - cx)
        z -= 60.0 * np.clip(1 - rr / 5.0, 0, None)
    holes = np.zeros_like(z, bool)
    for _ in range(5):
        cy, cx = rng.integers(0, rows), rng.integers(0, cols)
        holes |= np.hypot(y - cy, x - cx) < rng.integers(2, 9)
    zf = z.astype(np.float32)
    zf[holes] = -9999.0
    write("fractal.tif", zf, nodata=-9999.0)
    zn = z.astype(np.float32)
    zn[holes] = np.nan
    write("fractal_nan.tif", zn, nodata=float("nan"))

    # Every data type GDAL reads that a DEM uses, with a nodata of its own.
    zi = np.clip(z, 0, 3000)
    types = [("byte", gdal.GDT_Byte, zi / 12.0, 255), ("int16", gdal.GDT_Int16, zi, -32768),
             ("uint16", gdal.GDT_UInt16, zi, 0), ("int32", gdal.GDT_Int32, zi * 10, -999999),
             ("uint32", gdal.GDT_UInt32, zi * 10, 4000000000), ("float64", gdal.GDT_Float64, z, -1e300)]
    for name, dt, vals, nd in types:
        v = np.round(vals) if dt != gdal.GDT_Float64 else vals.copy()
        v[holes] = nd
        write("fractal_%s.tif" % name, v, nodata=nd, dtype=dt)

    # A VRT mosaic of four tiles (as the Logan River data comes).
    for i, (r0, c0) in enumerate([(0, 0), (0, 100), (75, 0), (75, 100)]):
        gt = (500000.0 + c0 * 10.0, 10.0, 0.0, 4500000.0 - r0 * 10.0, 0.0, -10.0)
        write("mosaic_%d.tif" % i, zf[r0:r0 + 75, c0:c0 + 100], gt=gt, nodata=-9999.0)
    gdal.BuildVRT(os.path.join(OUT, "mosaic.vrt"),
                  [os.path.join(OUT, "mosaic_%d.tif" % i) for i in range(4)])

    # Geographic DEM: z rises 0.1 m per metre northwards along the meridian,
    # so the true slope is atan(0.1) = 5.7106 degrees at every latitude.
    grows, gcols = 120, 90
    lat0, dlat, lon0, dlon = 46.0, 1.0 / 3600, -112.0, 1.0 / 3600
    a, f = 6378137.0, 1 / 298.257222101
    e2 = f * (2 - f)
    lat = np.radians(lat0 - (np.arange(grows) + 0.5) * dlat)
    # meridian arc length from the equator, by numerical integration
    phi = np.linspace(0, lat.max(), 200001)
    m = a * (1 - e2) / (1 - e2 * np.sin(phi) ** 2) ** 1.5
    arc = np.concatenate([[0], np.cumsum((m[1:] + m[:-1]) / 2 * np.diff(phi))])
    s = np.interp(lat, phi, arc)
    zg = np.repeat((0.1 * (s - s.min()))[:, None], gcols, axis=1)
    write("geographic.tif", zg.astype(np.float64), gt=(lon0, dlon, 0, lat0, 0, -dlat), epsg=4269,
          dtype=gdal.GDT_Float64, nodata=-9999.0)

    # The demo DEM: bigger fractal terrain in UTM.
    demo = fractal(1200, 1600, 3, octaves=9).astype(np.float32)
    write("demo.tif", demo, nodata=-9999.0, options=["TILED=YES", "COMPRESS=DEFLATE"])

    # Bad and edge-case inputs.
    write("allnodata.tif", np.full((40, 50), -9999.0, np.float32), nodata=-9999.0)
    write("nocrs.tif", (100.0 + 0.3 * X - 0.4 * Y).astype(np.float32), epsg=None)
    write("nogeo.tif", (100.0 + 0.3 * x - 0.4 * y).astype(np.float32), gt=None, epsg=None)
    huge = np.full((30, 30), 3.0e38, np.float32)
    huge[::2, :] = -3.0e38
    write("hugevalues.tif", huge)
    write("tiny.tif", np.array([[1.0, 2.0], [3.0, 5.0]], np.float32))
    write("onerow.tif", np.arange(20, dtype=np.float32)[None, :])
    ds = gdal.GetDriverByName("GTiff").Create(os.path.join(OUT, "complex.tif"), 20, 20, 1, gdal.GDT_CFloat32)
    ds = None
    open(os.path.join(OUT, "empty.tif"), "wb").close()
    with open(os.path.join(OUT, "notraster.tif"), "w") as fh:
        fh.write("this is a text file, not a raster\n" * 20)
    # Non-finite cells (NaN, +Inf, -Inf) in a DEM with a nodata value and in
    # one without: they are nodata in every product.
    bad = [(20, 30), (40, 60), (41, 61), (100, 150), (75, 100), (0, 5), (149, 199)]
    for name, nd in (("nonfinite.tif", -9999.0), ("nonfinite_nond.tif", None)):
        zx = z.astype(np.float32)
        if nd is not None:
            zx[holes] = nd
        for i, (r, c) in enumerate(bad):
            zx[r, c] = (np.nan, np.inf, -np.inf)[i % 3]
        write(name, zx, nodata=nd)
    # The plane stored south-up (rows run north, geotransform[5] > 0): the
    # same terrain, so the same slope and aspect at the same place.
    plane = (100.0 + 0.3 * X - 0.4 * Y).astype(np.float32)
    write("plane_southup.tif", plane[::-1].copy(), gt=(500000.0, 10.0, 0.0, 4500000.0 - rows * 10.0, 0.0, 10.0))
    # A rotated geotransform: slope and aspect cannot use it as it is.
    write("plane_rotated.tif", plane, gt=(500000.0, 10.0, 2.0, 4500000.0, 2.0, -10.0))
    raw = open(os.path.join(OUT, "fractal.tif"), "rb").read()
    with open(os.path.join(OUT, "truncated.tif"), "wb") as fh:
        fh.write(raw[: len(raw) // 3])


if __name__ == "__main__":
    main()
