#!/usr/bin/python3
"""test_interpolate.py - `terrafort interpolate` as a user runs it (CTest: interp_*).

usage: test_interpolate.py CASE TERRAFORT SRC_TESTDATA SHARED_DATA WORKDIR

Cases:
  gdal_grid    every algorithm against Debian's gdal_grid run here (its SSE/AVX
               single-precision invdist path off), on random points, clustered
               points with duplicates, collinear runs and points outside the
               extent, and on points sampled from testdata/demo.tif and (when
               present) a ../shared/data DEM: max relative difference <= 1e-5,
               identical nodata cells.
  brute        invdistnn, nearest, average, count and all-points invdist
               against a brute-force evaluation written here (numpy), on
               clustered points, with empty search windows.
  same_bytes   threads, tile sizes, --ft dual and mpirun -n 2 / 3 give the
               same bytes; XYZ text, CSV and GeoPackage inputs give the same bytes.
  fill_voids   --fill-voids against gdal_fillnodata (-md, -si; Float32 and
               Int16): within 1e-4, identical nodata; the same bytes from
               threads, tiles, --ft dual and mpirun -n 3.
  errors       no points, a missing -zfield, a non-numeric value, a NaN
               coordinate, an empty extent, an output too big for its disk:
               one line, the documented exit code, no output file.
Python (python3-gdal, numpy) rather than C: the reference values are numpy
array expressions and gdal_grid runs, and both read best here.
"""
import os
import subprocess
import sys

import numpy as np
from osgeo import gdal, ogr, osr

gdal.UseExceptions()
CASE, TF, SRC, SHARED, WORK = sys.argv[1:6]
os.makedirs(WORK, exist_ok=True)
FAIL = []


def check(cond, what):
    if not cond:
        FAIL.append(what)
        print("FAIL:", what)


def run(args, ok=True, env=None):
    r = subprocess.run(args, capture_output=True, text=True, env=env)
    if ok and r.returncode != 0:
        raise SystemExit("command failed: %s\n%s" % (" ".join(args), r.stderr))
    return r


def write_points(path, xs, ys, zs, srs=32633):
    drv = ogr.GetDriverByName("GPKG")
    if os.path.exists(path):
        drv.DeleteDataSource(path)
    ds = drv.CreateDataSource(path)
    sr = osr.SpatialReference()
    sr.ImportFromEPSG(srs)
    lyr = ds.CreateLayer("pts", sr, ogr.wkbPoint)
    lyr.CreateField(ogr.FieldDefn("elev", ogr.OFTReal))
    lyr.StartTransaction()
    for x, y, z in zip(xs, ys, zs):
        f = ogr.Feature(lyr.GetLayerDefn())
        f.SetField("elev", float(z))
        g = ogr.Geometry(ogr.wkbPoint)
        g.AddPoint_2D(float(x), float(y))
        f.SetGeometry(g)
        lyr.CreateFeature(f)
    lyr.CommitTransaction()
    ds = None


def read(path):
    return gdal.Open(path).ReadAsArray().astype(np.float64)


def compare(a, b, nodata, what):
    check(a.shape == b.shape, what + ": shape %s vs %s" % (a.shape, b.shape))
    if a.shape != b.shape:
        return
    na, nb = a == nodata, b == nodata
    check((na == nb).all(), what + ": %d nodata cells differ" % int((na != nb).sum()))
    m = ~(na | nb)
    d = np.abs(a[m] - b[m]) / np.maximum(np.abs(b[m]), 1e-12)
    worst = float(d.max()) if d.size else 0.0
    check(worst <= 1e-5, what + ": max relative difference %.3g" % worst)


def point_sets():
    rng = np.random.default_rng(7)
    sets = []
    n = 400
    sets.append(("random", rng.uniform(0, 1000, n), rng.uniform(0, 700, n), rng.uniform(-50, 300, n)))
    # clustered, with exact duplicates, a collinear run and points outside the grid
    cx, cy = rng.uniform(100, 900, 6), rng.uniform(100, 600, 6)
    k = rng.integers(0, 6, 300)
    xs = cx[k] + rng.normal(0, 15, 300)
    ys = cy[k] + rng.normal(0, 15, 300)
    xs = np.concatenate([xs, xs[:10], np.linspace(50, 950, 20), [-400, 1500, 500]])
    ys = np.concatenate([ys, ys[:10], np.full(20, 350.0), [350, 350, 1200]])
    zs = rng.uniform(0, 100, xs.size)
    sets.append(("clustered", xs, ys, zs))
    # points sampled from the demo DEM (and a shared DEM when present)
    for dem in [os.path.join(SRC, "demo.tif")] + [os.path.join(SHARED, f) for f in ("enogeo.tif",)]:
        if not os.path.exists(dem):
            print("skip: no", dem)
            continue
        ds = gdal.Open(dem)
        arr = ds.GetRasterBand(1).ReadAsArray().astype(np.float64)
        gt = ds.GetGeoTransform()
        nd = ds.GetRasterBand(1).GetNoDataValue()
        r = rng.integers(0, arr.shape[0], 3000)
        c = rng.integers(0, arr.shape[1], 3000)
        keep = np.isfinite(arr[r, c]) & ((arr[r, c] != nd) if nd is not None else True)
        r, c = r[keep], c[keep]
        x = gt[0] + (c + rng.uniform(0, 1, c.size)) * gt[1]
        y = gt[3] + (r + rng.uniform(0, 1, r.size)) * gt[5]
        sets.append((os.path.basename(dem), x, y, arr[r, c]))
    return sets


ALGS = [
    "invdist:power=2:nodata=-9999",
    "invdist:power=3:smoothing=2:nodata=-9999",
    "invdist:radius1=R:radius2=R2:angle=25:max_points=6:min_points=2:nodata=-9999",
    "invdist:max_points=5:nodata=-9999",  # max_points without radii: ignored, as GDAL
    "invdistnn:power=2:radius=R:max_points=12:nodata=-9999",
    "invdistnn:power=1.5:smoothing=1:radius=R:max_points=0:min_points=3:nodata=-9999",
    "average:radius1=R:radius2=R:min_points=2:nodata=-9999",
    "average:radius1=R:radius2=R2:angle=40:nodata=-9999",
    "nearest:nodata=-9999",
    "nearest:radius1=R:radius2=R:nodata=-9999",
    "nearest:radius1=R:radius2=R2:angle=15:nodata=-9999",
    "linear:nodata=-9999",
    "linear:radius=0:nodata=-9999",
    "linear:radius=R:nodata=-9999",
    "minimum:radius1=R:radius2=R:nodata=-9999",
    "maximum:radius1=R:radius2=R:nodata=-9999",
    "range:radius1=R:radius2=R2:angle=30:nodata=-9999",
    "count:radius1=R:radius2=R:min_points=3:nodata=-9999",
    "average_distance:radius1=R:radius2=R:nodata=-9999",
    # GDAL's quadtree path (equal radii, no angle, > 100 points) pairs each
    # point with itself too: terrafort-interpolate(1); compared on its scan path
    "average_distance_pts:radius1=R:radius2=R2:angle=20:nodata=-9999",
]


def case_gdal_grid():
    for name, xs, ys, zs in point_sets():
        pts = os.path.join(WORK, "g_%s.gpkg" % name)
        write_points(pts, xs, ys, zs)
        x0, x1, y0, y1 = xs.min(), xs.max(), ys.min(), ys.max()
        # a grid a bit inside the points' extent, so some points lie outside it
        gx0, gx1 = x0 + 0.05 * (x1 - x0), x1 - 0.05 * (x1 - x0)
        gy0, gy1 = y0 + 0.05 * (y1 - y0), y1 - 0.05 * (y1 - y0)
        spacing = np.sqrt((x1 - x0) * (y1 - y0) / xs.size)
        R, R2 = 2.5 * spacing, 1.5 * spacing
        for alg in ALGS:
            if alg.startswith("linear") and abs(x1 - x0) < 10:
                # degrees: gdal_grid 3.6's linear leaves most nodes nodata there
                # (terrafort-interpolate(1), DIFFERENCES); compared on metric sets
                continue
            a = alg.replace("R2", "%.6f" % R2).replace("R", "%.6f" % R)
            grid = ["-txe", "%.6f" % gx0, "%.6f" % gx1, "-tye", "%.6f" % gy0, "%.6f" % gy1, "-outsize", "83", "61"]
            ours, ref = os.path.join(WORK, "t.tif"), os.path.join(WORK, "g.tif")
            run([TF, "interpolate", "-q", "--tile-size", "32", "-a", a, "-zfield", "elev"] + grid + [pts, ours])
            run(["gdal_grid", "-q", "--config", "GDAL_USE_AVX", "NO", "--config", "GDAL_USE_SSE", "NO", "-a", a,
                 "-zfield", "elev"] + grid + [pts, ref])
            compare(read(ours), read(ref), -9999, "%s %s" % (name, alg))
        # linear where most nodes lie outside the hull: each tile takes only the points its
        # fallback search can reach (interp_tile_input), not all of them; tiles of 8 nodes
        # and the default tiling against gdal_grid
        if abs(x1 - x0) >= 10:
            for a in ("linear:nodata=-9999", "linear:radius=%.6f:nodata=-9999" % R):
                grid = ["-txe", "%.6f" % (x0 - 0.6 * (x1 - x0)), "%.6f" % (x1 + 0.4 * (x1 - x0)), "-tye",
                        "%.6f" % (y0 - 0.5 * (y1 - y0)), "%.6f" % (y1 + 0.7 * (y1 - y0)), "-outsize", "97", "71"]
                run(["gdal_grid", "-q", "-a", a, "-zfield", "elev"] + grid + [pts, ref])
                for tiles in (["--tile-size", "8"], []):
                    run([TF, "interpolate", "-q", "-a", a, "-zfield", "elev"] + tiles + grid + [pts, ours])
                    compare(read(ours), read(ref), -9999, "%s %s beyond the hull %s" % (name, a, tiles))
        # all-points power-2 invdist on a grid many 32-node blocks wide: there terrafort
        # interpolates the far points' sums (idw2_block.c); gdal_grid sums every term
        for a in ("invdist:power=2:nodata=-9999", "invdist:power=2:smoothing=3:nodata=-9999"):
            grid = ["-txe", "%.6f" % gx0, "%.6f" % gx1, "-tye", "%.6f" % gy0, "%.6f" % gy1, "-outsize", "330", "250"]
            run([TF, "interpolate", "-q", "-a", a, "-zfield", "elev"] + grid + [pts, ours])
            run(["gdal_grid", "-q", "--config", "GDAL_USE_AVX", "NO", "--config", "GDAL_USE_SSE", "NO", "-a", a,
                 "-zfield", "elev"] + grid + [pts, ref])
            compare(read(ours), read(ref), -9999, "%s %s 330x250" % (name, a))
    # average_distance_pts where gdal_grid takes its quadtree path (equal radii, no angle,
    # > 100 points): it divides the same sum of pair distances by P + m - d (P pairs of
    # distinct points, m points, d 0 or 1) where terrafort divides by P; shown cell by cell
    pts = os.path.join(WORK, "g_random.gpkg")
    grid = ["-txe", "50", "950", "-tye", "20", "680", "-outsize", "60", "44"]
    outs = {}
    for tag, a, tool in (("adp", "average_distance_pts:radius1=90:radius2=90:nodata=-9999", TF),
                         ("cnt", "count:radius1=90:radius2=90:nodata=-9999", TF),
                         ("gdal", "average_distance_pts:radius1=90:radius2=90:nodata=-9999", "gdal_grid")):
        outs[tag] = os.path.join(WORK, "q_%s.tif" % tag)
        args = [tool] + (["interpolate"] if tool == TF else []) + ["-q", "-a", a, "-zfield", "elev"] + grid
        run(args + [pts, outs[tag]])
    ours, m, g = read(outs["adp"]), read(outs["cnt"]), read(outs["gdal"])
    P = m * (m - 1) / 2
    ok = m >= 2
    s_ = ours * P
    fit = np.minimum(np.abs(s_ / np.maximum(P + m, 1) - g), np.abs(s_ / np.maximum(P + m - 1, 1) - g))
    check(ok.sum() > 100 and (fit[ok] <= 1e-6 * np.abs(g[ok])).all(),
          "average_distance_pts quadtree difference is exactly the self-pair count")
    # gdal_grid's selection and value options, on the random set
    pts = os.path.join(WORK, "g_random.gpkg")
    for extra in (["-where", "elev > 100"], ["-sql", "SELECT * FROM pts WHERE elev < 200"],
                  ["-spat", "100", "100", "800", "500"], ["-clipsrc", "200", "100", "900", "600"],
                  ["-clipsrc", "POLYGON((0 0,1000 0,500 700,0 0))"], ["-z_increase", "10", "-z_multiply", "0.5"],
                  ["-ot", "Int16"], ["-ot", "Float32"], ["-tr", "13", "17"], ["-l", "pts"]):
        grid = ["-txe", "50", "950", "-tye", "20", "680"] + ([] if "-tr" in extra else ["-outsize", "70", "52"])
        ours, ref = os.path.join(WORK, "t.tif"), os.path.join(WORK, "g.tif")
        a = "invdistnn:radius=120:max_points=8:nodata=-9999"
        run([TF, "interpolate", "-q", "-a", a, "-zfield", "elev"] + extra + grid + [pts, ours])
        run(["gdal_grid", "-q", "-a", a, "-zfield", "elev"] + extra + grid + [pts, ref])
        compare(read(ours), read(ref), -9999, "options %s" % " ".join(extra))
        check(gdal.Open(ours).GetRasterBand(1).DataType == gdal.Open(ref).GetRasterBand(1).DataType,
              "options %s: data type" % " ".join(extra))
    # georeferencing and CRS as gdal_grid's, nodata declared
    o, g = gdal.Open(os.path.join(WORK, "t.tif")), gdal.Open(os.path.join(WORK, "g.tif"))
    check(np.allclose(o.GetGeoTransform(), g.GetGeoTransform(), rtol=1e-12), "geotransform")
    check(o.GetSpatialRef().IsSame(g.GetSpatialRef()), "CRS")
    check(o.GetRasterBand(1).GetNoDataValue() == -9999, "nodata declared")


def brute(alg, xs, ys, zs, nx, ny, x0, x1, y0, y1, r=None, k=None):
    dx, dy = (x1 - x0) / nx, (y1 - y0) / ny
    out = np.full((ny, nx), -9999.0)
    if alg == "invdist" and nx * ny > 5000:  # a row at a time (the loop below is per node)
        x = x0 + (np.arange(nx) + 0.5) * dx
        for row in range(ny):
            y = y1 - (row + 0.5) * dy
            d2 = (xs[None, :] - x[:, None]) ** 2 + (ys[None, :] - y) ** 2
            on = d2 < 1e-13
            with np.errstate(divide="ignore", invalid="ignore"):
                out[row] = np.sum(zs / d2, axis=1) / np.sum(1 / d2, axis=1)
            hit = on.any(axis=1)
            out[row, hit] = zs[np.argmax(on[hit], axis=1)]
        return out
    for row in range(ny):
        y = y1 - (row + 0.5) * dy
        for col in range(nx):
            x = x0 + (col + 0.5) * dx
            d2 = (xs - x) ** 2 + (ys - y) ** 2
            if alg == "invdist":
                if (d2 < 1e-13).any():
                    out[row, col] = zs[np.argmax(d2 < 1e-13)]
                else:
                    out[row, col] = np.sum(zs / d2) / np.sum(1 / d2)
            elif alg == "nearest":
                m = d2.min()
                out[row, col] = zs[np.nonzero(d2 == m)[0][-1]]  # the later point on ties
            elif alg == "invdistnn":
                inr = np.nonzero(d2 <= r * r)[0]
                order = inr[np.lexsort((inr, d2[inr]))][:k]
                if order.size:
                    if d2[order[0]] < 1e-13:
                        out[row, col] = zs[order[0]]
                    else:
                        w = 1 / d2[order]
                        out[row, col] = np.sum(w * zs[order]) / np.sum(w)
            elif alg in ("average", "count"):
                inr = d2 <= r * r
                if alg == "count":
                    out[row, col] = inr.sum()
                elif inr.any():
                    out[row, col] = zs[inr].mean()
    return out


def case_brute():
    rng = np.random.default_rng(11)
    cx, cy = rng.uniform(0, 500, 4), rng.uniform(0, 500, 4)
    k = rng.integers(0, 4, 250)
    xs = np.concatenate([cx[k] + rng.normal(0, 8, 250), [100.0, 100.0]])
    ys = np.concatenate([cy[k] + rng.normal(0, 8, 250), [100.0, 100.0]])
    zs = rng.uniform(0, 10, xs.size)
    pts = os.path.join(WORK, "b.gpkg")
    write_points(pts, xs, ys, zs)
    ext = (-50.0, 550.0, -50.0, 550.0)
    nx, ny = 45, 39
    for alg, spec, r, kk in [("invdist", "invdist:nodata=-9999", None, None),
                             ("nearest", "nearest:nodata=-9999", None, None),
                             ("invdistnn", "invdistnn:radius=40:max_points=7:nodata=-9999", 40.0, 7),
                             ("average", "average:radius1=20:radius2=20:nodata=-9999", 20.0, None),
                             ("count", "count:radius1=20:radius2=20:nodata=-9999", 20.0, None)]:
        out = os.path.join(WORK, "b.tif")
        run([TF, "interpolate", "-q", "--tile-size", "16", "-a", spec, "-zfield", "elev", "-txe", str(ext[0]),
             str(ext[1]), "-tye", str(ext[2]), str(ext[3]), "-outsize", str(nx), str(ny), pts, out])
        ref = brute(alg, xs, ys, zs, nx, ny, *ext, r=r, k=kk)
        got = read(out)
        compare(got, ref, -9999, "brute " + alg)
        if alg in ("invdistnn", "average"):
            check((ref == -9999).any(), "brute %s: some search windows are empty" % alg)
    # all-points invdist on a grid many 32-node blocks wide (far sums interpolated,
    # idw2_block.c), with values of both signs (nodes near zero are recomputed exactly)
    # and a node exactly on a point
    xs, ys = np.append(xs, 101.0), np.append(ys, 101.25)  # node (row 179, col 75)
    for tag, zz in (("positive", np.append(zs, 7.0)), ("signed", rng.uniform(-10, 10, xs.size))):
        write_points(pts, xs, ys, zz)
        nx, ny = 300, 240
        out = os.path.join(WORK, "b.tif")
        run([TF, "interpolate", "-q", "--tile-size", "100", "-a", "invdist:nodata=-9999", "-zfield", "elev", "-txe",
             "-50", "550", "-tye", "-50", "550", "-outsize", str(nx), str(ny), pts, out])
        ref = brute("invdist", xs, ys, zz, nx, ny, -50.0, 550.0, -50.0, 550.0)
        compare(read(out), ref, -9999, "brute invdist %dx%d %s" % (nx, ny, tag))


def raster_bytes(path):
    ds = gdal.Open(path)
    return ds.GetRasterBand(1).ReadRaster(), ds.GetGeoTransform(), ds.GetProjection()


def case_same_bytes():
    rng = np.random.default_rng(3)
    n = 2000
    xs, ys, zs = rng.uniform(0, 3000, n), rng.uniform(0, 2000, n), rng.uniform(0, 500, n)
    pts = os.path.join(WORK, "s.gpkg")
    write_points(pts, xs, ys, zs)
    xyz = os.path.join(WORK, "s.xyz")
    with open(xyz, "w") as f:
        f.write("x y z\n")
        for x, y, z in zip(xs, ys, zs):
            f.write("%r %r %r\n" % (x, y, z))
    csv = os.path.join(WORK, "s.csv")
    with open(csv, "w") as f:
        f.write("x,y,elev\n")
        for x, y, z in zip(xs, ys, zs):
            f.write("%r,%r,%r\n" % (x, y, z))
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    grid = ["-txe", "0", "3000", "-tye", "0", "2000", "-outsize", "150", "100"]
    for alg in ["invdistnn:radius=300:max_points=8", "nearest", "average:radius1=120:radius2=120", "linear",
                "invdist:power=2"]:
        base = os.path.join(WORK, "s0.tif")
        run([TF, "interpolate", "-q", "--threads", "1", "-a", alg, "-zfield", "elev"] + grid + [pts, base])
        ref = raster_bytes(base)
        variants = [["--threads", "2", "--tile-size", "7"], ["--tile-size", "64"], ["--ft", "dual", "--tile-size", "40"]]
        for v in variants:
            out = os.path.join(WORK, "s1.tif")
            run([TF, "interpolate", "-q", "-a", alg, "-zfield", "elev"] + v + grid + [pts, out])
            check(raster_bytes(out)[0] == ref[0], "%s %s: same bytes" % (alg, " ".join(v)))
        for nr in ("2", "3"):
            out = os.path.join(WORK, "s2.tif")
            r = run(["mpirun", "-n", nr, TF, "interpolate", "-q", "--tile-size", "33", "-a", alg, "-zfield", "elev"]
                    + grid + [pts, out], ok=False, env=env)
            check(r.returncode == 0 and raster_bytes(out)[0] == ref[0], "%s mpirun -n %s: same bytes %s" %
                  (alg, nr, r.stderr[-300:]))
        out = os.path.join(WORK, "s3.tif")
        run([TF, "interpolate", "-q", "-a", alg, "-a_srs", "EPSG:32633"] + grid + [xyz, out])
        check(raster_bytes(out)[0] == ref[0], "%s: xyz and OGR give the same bytes" % alg)
        run([TF, "interpolate", "-q", "-a", alg, "-zfield", "elev", "-a_srs", "EPSG:32633"] + grid + [csv, out])
        check(raster_bytes(out)[0] == ref[0], "%s: CSV and GeoPackage give the same bytes" % alg)


def case_errors():
    out = os.path.join(WORK, "e.tif")

    def expect(args, code, words, what):
        if os.path.exists(out):
            os.remove(out)
        r = run([TF, "interpolate", "-q"] + args + [out], ok=False)
        line = r.stderr.strip()
        check(r.returncode == code, "%s: exit %d (want %d) %s" % (what, r.returncode, code, line))
        check(len(line.splitlines()) == 1 and words in line, "%s: one clear line, got %r" % (what, line))
        check(not os.path.exists(out), "%s: no output file" % what)
        left = [f for f in os.listdir(WORK) if ".terrafort-" in f]
        check(not left, "%s: temporaries left %s" % (what, left))

    empty = os.path.join(WORK, "empty.xyz")
    open(empty, "w").write("# nothing\n")
    expect([empty], 3, "no points", "no points")
    pts = os.path.join(WORK, "e.gpkg")
    write_points(pts, [1, 2, 3], [1, 3, 2], [1, 2, 3])
    expect(["-zfield", "nope", pts], 3, "no field 'nope'", "missing -zfield")
    bad = os.path.join(WORK, "bad.csv")
    open(bad, "w").write("x,y,elev\n1,2,3\n2,3,abc\n3,1,4\n")
    expect(["-zfield", "elev", "-oo", "X_POSSIBLE_NAMES=x", "-oo", "Y_POSSIBLE_NAMES=y", bad], 3, "not a number",
           "non-numeric value")
    nan = os.path.join(WORK, "nan.xyz")
    open(nan, "w").write("1 2 3\nnan 2 3\n3 4 5\n")
    expect([nan], 3, "not finite", "NaN coordinate")
    line = os.path.join(WORK, "line.xyz")
    open(line, "w").write("1 5 3\n2 5 3\n3 5 5\n")
    expect([line], 2, "empty extent", "empty extent")
    expect(["-txe", "0", "0", "-tye", "0", "1", pts], 2, "empty extent", "empty -txe")
    # far more than any disk here holds: refused before anything is written
    expect(["-outsize", "200000", "200000", pts], 4, "free", "output too big for its disk")
    expect(["-a", "invdist:pwer=2", pts], 2, "unknown parameter", "bad -a")
    # under mpirun every rank stops on rank 0's disk check (no rank left waiting)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    try:
        r = subprocess.run(["mpirun", "-n", "2", TF, "interpolate", "-q", "-outsize", "200000", "200000", pts, out],
                           capture_output=True, text=True, env=env, timeout=120)
        check(r.returncode == 4 and "free" in r.stderr and not os.path.exists(out), "mpirun: output too big")
    except subprocess.TimeoutExpired:
        check(False, "mpirun: output too big: a rank hung")
    # points count in --mem: with one thread, --mem 72M leaves nothing beyond the process's
    # 64 MiB and the tiles' buffers, so reading stops at the first 4096 points (80 bytes a
    # point, points.h); given the room, the same points give the bytes of a run without --mem
    many = os.path.join(WORK, "many.xyz")
    rng = np.random.default_rng(9)
    np.savetxt(many, np.c_[rng.uniform(0, 1000, 6000), rng.uniform(0, 800, 6000), rng.uniform(0, 50, 6000)],
               fmt="%.4f")
    expect(["--threads", "1", "--mem", "72M", "-a", "nearest", many], 7, "more than 4096 points",
           "points beyond --mem")
    ref_out, mem_out = os.path.join(WORK, "many_ref.tif"), os.path.join(WORK, "many_mem.tif")
    run([TF, "interpolate", "-q", "--threads", "1", "-a", "nearest", many, ref_out])
    run([TF, "interpolate", "-q", "--threads", "1", "--mem", "200M", "-a", "nearest", many, mem_out])
    check(open(ref_out, "rb").read() == open(mem_out, "rb").read(), "points within --mem: same bytes as without")
    # the output cannot be the points' file: refused, the points left as they were
    same = os.path.join(WORK, "same.xyz")
    open(same, "w").write("0 0 1\n10 0 2\n0 10 3\n10 10 4\n")
    r = run([TF, "interpolate", "-q", "-a", "nearest", same, same], ok=False)
    check(r.returncode == 4 and "it is the input file" in r.stderr, "output = input: exit %d %s" % (r.returncode, r.stderr))
    check(open(same).read() == "0 0 1\n10 0 2\n0 10 3\n10 10 4\n", "output = input: the points kept")
    collinear = os.path.join(WORK, "collinear.xyz")
    open(collinear, "w").write("0 0 1\n1 1 2\n2 2 3\n3 3 4\n")
    expect(["-a", "linear", collinear], 3, "cannot triangulate", "linear on collinear points")
    allnd = os.path.join(WORK, "allnodata.tif")
    d = gdal.GetDriverByName("GTiff").Create(allnd, 20, 10, 1, gdal.GDT_Float32)
    d.GetRasterBand(1).SetNoDataValue(-9999)
    d.GetRasterBand(1).Fill(-9999)
    d = None
    r = run([TF, "interpolate", "-q", "--fill-voids", allnd, out], ok=False)
    check(r.returncode == 0 and (read(out) == -9999).all(), "fill-voids on an all-nodata raster: all nodata kept")


def holes_dem(path, dtype, nodata):
    src = gdal.Open(os.path.join(SRC, "demo.tif"))
    a = src.GetRasterBand(1).ReadAsArray()[:300, :360].astype(np.float64)
    rng = np.random.default_rng(4)
    for _ in range(30):
        r, c, s = rng.integers(0, 300), rng.integers(0, 360), rng.integers(2, 35)
        a[max(0, r - s):r + s, max(0, c - s):c + s // 2] = nodata
    a[80:250, 150:154] = nodata  # a long crack
    a[:, 0:3] = nodata           # a void along the edge
    d = gdal.GetDriverByName("GTiff").Create(path, 360, 300, 1, dtype)
    d.SetGeoTransform(src.GetGeoTransform())
    d.SetProjection(src.GetProjection())
    d.GetRasterBand(1).SetNoDataValue(nodata)
    d.GetRasterBand(1).WriteArray(a)


def case_fill_voids():
    """--fill-voids against gdal_fillnodata (-md, -si), Float32 and Int16; same bytes."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    for dtype, nodata in ((gdal.GDT_Float32, -9999), (gdal.GDT_Int16, -32768)):
        dem = os.path.join(WORK, "holes_%d.tif" % dtype)
        holes_dem(dem, dtype, nodata)
        for args in (["-md", "20"], ["-md", "20", "-si", "2"], ["-md", "7.5", "-si", "3"], ["-md", "0", "-si", "1"],
                     []):
            ours, ref = os.path.join(WORK, "f1.tif"), os.path.join(WORK, "f2.tif")
            for f in (ours, ref):
                if os.path.exists(f):
                    os.remove(f)
            run([TF, "interpolate", "-q", "--fill-voids", "--tile-size", "48"] + args + [dem, ours])
            run(["gdal_fillnodata.py", "-q"] + args + [dem, ref])
            a, b = read(ours), read(ref)
            what = "fill-voids type %d %s" % (dtype, " ".join(args))
            check(((a == nodata) == (b == nodata)).all(), what + ": nodata cells")
            check(np.abs(a - b).max() <= 1e-4, what + ": max difference %g" % np.abs(a - b).max())
            check(gdal.Open(ours).GetRasterBand(1).DataType == dtype, what + ": type kept")
        base = raster_bytes(ours)[0]
        for v in (["--threads", "1", "--tile-size", "512"], ["--threads", "2", "--tile-size", "17"],
                  ["--ft", "dual", "--tile-size", "100"]):
            out = os.path.join(WORK, "f3.tif")
            run([TF, "interpolate", "-q", "--fill-voids"] + v + [dem, out])
            check(raster_bytes(out)[0] == base, "fill-voids %s: same bytes" % " ".join(v))
        out = os.path.join(WORK, "f4.tif")
        r = run(["mpirun", "-n", "3", TF, "interpolate", "-q", "--fill-voids", "--tile-size", "40", dem, out], ok=False,
                env=env)
        check(r.returncode == 0 and raster_bytes(out)[0] == base, "fill-voids mpirun -n 3: same bytes")


{"fill_voids": case_fill_voids, "gdal_grid": case_gdal_grid, "brute": case_brute, "same_bytes": case_same_bytes, "errors": case_errors}[CASE]()
print("%d failures" % len(FAIL))
sys.exit(1 if FAIL else 0)
