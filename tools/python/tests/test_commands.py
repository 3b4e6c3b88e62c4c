"""Each function against the terrafort command with the same options: the
same bytes (filecmp on the files both write); GDAL datasets as inputs; the
array forms equal the file forms; errors as TerrafortError with the
command's exit code, nothing left behind."""
import filecmp
import os

import numpy as np
import pytest
from osgeo import gdal

import terrafort

gdal.UseExceptions()

# (function, its keyword arguments, the command and its flags)
CASES = [
    (terrafort.slope, {}, ["slope"]),
    (terrafort.slope, {"percent": True, "compute_edges": True}, ["slope", "-p", "-compute_edges"]),
    (terrafort.slope, {"alg": "ZevenbergenThorne", "scale": 0.5}, ["slope", "-alg", "ZevenbergenThorne", "-s", "0.5"]),
    (terrafort.aspect, {"trigonometric": True, "zero_for_flat": True}, ["aspect", "-trigonometric", "-zero_for_flat"]),
    (terrafort.hillshade, {}, ["hillshade"]),
    (terrafort.hillshade, {"multidirectional": True, "z": 2, "altitude": 30},
     ["hillshade", "-multidirectional", "-z", "2", "-alt", "30"]),
    (terrafort.hillshade, {"combined": True, "azimuth": 200}, ["hillshade", "-combined", "-az", "200"]),
    (terrafort.tri, {"alg": "Wilson"}, ["tri", "-alg", "Wilson"]),
    (terrafort.tpi, {"compute_edges": True}, ["tpi", "-compute_edges"]),
    (terrafort.roughness, {}, ["roughness"]),
    (terrafort.smooth, {"passes": 3}, ["smooth", "--passes", "3"]),
    (terrafort.breach, {"epsilon": True}, ["breach", "--epsilon"]),
    (terrafort.breach, {"mode": "selective", "max_length": 20, "max_depth": 2.5, "fill": True, "epsilon": True},
     ["breach", "--mode", "selective", "--max-length", "20", "--max-depth", "2.5", "--fill", "--epsilon"]),
    (terrafort.breach, {"mode": "constrained", "max_depth": 1.5},
     ["breach", "--mode", "constrained", "--max-depth", "1.5"]),
    (terrafort.fill, {}, ["fill"]),
    (terrafort.fill, {"epsilon": True, "out_type": "Float64"}, ["fill", "--epsilon", "-ot", "Float64"]),
    # the common options
    (terrafort.slope, {"threads": 1, "tile_size": 64, "creation_options": ["COMPRESS=DEFLATE", "TILED=YES"]},
     ["slope", "--threads", "1", "--tile-size", "64", "-co", "COMPRESS=DEFLATE", "-co", "TILED=YES"]),
    (terrafort.aspect, {"stats": True, "band": 1}, ["aspect", "--stats", "-b", "1"]),
    (terrafort.slope, {"ft": "dual", "threads": 2}, ["slope", "--ft", "dual", "--threads", "2"]),
    (terrafort.hillshade, {"format": "PNG"}, ["hillshade", "-of", "PNG"]),
]


@pytest.mark.parametrize("fn,kw,cmd", CASES, ids=[" ".join(c[2]) for c in CASES])
def test_same_bytes_as_the_command(fn, kw, cmd, cli, data, tmp_path):
    dem = os.path.join(data, "demo.tif")
    ext = ".png" if "PNG" in cmd else ".tif"
    ref = cli(*cmd, dem, "cli" + ext)
    out = str(tmp_path / ("py" + ext))
    fn(dem, out, **kw)
    assert filecmp.cmp(ref, out, shallow=False)
    if kw.get("stats"):
        ds = gdal.Open(out)  # kept: a band outlives no dataset in osgeo
        assert "STATISTICS_MEAN" in ds.GetRasterBand(1).GetMetadata()


def test_color_relief(cli, data, tmp_path):
    dem = os.path.join(data, "demo.tif")
    # the repository's own colour files (testdata/)
    ramp = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "testdata", "ramp_percent.txt")
    ref = cli("color-relief", "-alpha", dem, ramp, "cli.tif")
    out = str(tmp_path / "py.tif")
    terrafort.color_relief(dem, ramp, out, alpha=True)
    assert filecmp.cmp(ref, out, shallow=False)


def test_datasets_as_inputs(cli, data, tmp_path):
    dem = os.path.join(data, "demo.tif")
    ref = cli("slope", dem, "cli.tif")
    ds = gdal.Open(dem)
    terrafort.slope(ds, str(tmp_path / "file_ds.tif"))
    assert filecmp.cmp(ref, str(tmp_path / "file_ds.tif"), shallow=False)
    mem = gdal.GetDriverByName("MEM").CreateCopy("", ds)
    terrafort.slope(mem, str(tmp_path / "mem_ds.tif"))
    a = gdal.Open(ref).ReadAsArray()
    b = gdal.Open(str(tmp_path / "mem_ds.tif")).ReadAsArray()
    assert np.array_equal(a, b)


@pytest.mark.parametrize("name,kw", [("slope", {}), ("aspect", {"compute_edges": True}), ("hillshade", {}),
                                     ("tri", {}), ("tpi", {}), ("roughness", {}), ("smooth", {}), ("fill", {})])
def test_arrays_equal_files(name, kw, data, tmp_path):
    ds = gdal.Open(os.path.join(data, "demo.tif"))
    z, gt, band = ds.ReadAsArray(), ds.GetGeoTransform(), ds.GetRasterBand(1)
    out = str(tmp_path / "f.tif")
    getattr(terrafort, name)(os.path.join(data, "demo.tif"), out, **kw)
    want = gdal.Open(out).ReadAsArray()
    got = getattr(terrafort, name + "_array")(z, gt, crs=ds.GetProjection(), nodata=band.GetNoDataValue(), **kw)
    assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


def test_array_of_an_analytic_plane():
    # z = 0.1 x on 10 m cells: dz/dx = 0.1 everywhere, slope atan(0.1) degrees inside
    z = np.tile(np.arange(40, dtype=np.float32) * 1.0, (30, 1))
    s = terrafort.slope_array(z, (0, 10, 0, 0, 0, -10))
    inner = s[1:-1, 1:-1]
    assert np.allclose(inner, np.degrees(np.arctan(0.1)), atol=1e-4)


def test_errors(data, tmp_path):
    with pytest.raises(terrafort.TerrafortError) as e:
        terrafort.slope(str(tmp_path / "missing.tif"), str(tmp_path / "o.tif"))
    assert e.value.exit_code == 3 and "missing.tif" in str(e.value)
    dem = tmp_path / "dem.tif"
    gdal.GetDriverByName("GTiff").CreateCopy(str(dem), gdal.Open(os.path.join(data, "demo.tif")))
    before = dem.read_bytes()
    with pytest.raises(terrafort.TerrafortError) as e:
        terrafort.slope(str(dem), str(dem))
    assert e.value.exit_code == 4
    assert dem.read_bytes() == before
    with pytest.raises(ValueError):
        terrafort.slope(str(dem), str(tmp_path / "o.tif"), alg="Sobel")
    with pytest.raises(terrafort.TerrafortError) as e:
        terrafort.slope(str(dem), str(tmp_path / "o.tif"), format="NoSuchDriver")
    assert e.value.exit_code == 2
    assert sorted(os.listdir(tmp_path)) == ["dem.tif"]
    # breach's combinations: the library's one line and exit 2; the limits' own form here
    for kw, says in (({"max_depth": 2}, "--max-depth needs --mode selective"),
                     ({"mode": "selective"}, "needs --max-length or --max-depth"),
                     ({"fill": True}, "--fill needs --mode selective")):
        with pytest.raises(terrafort.TerrafortError) as e:
            terrafort.breach(str(dem), str(tmp_path / "o.tif"), **kw)
        assert e.value.exit_code == 2 and says in str(e.value)
    for kw in ({"mode": "partial"}, {"mode": "selective", "max_length": 0}, {"mode": "selective", "max_length": 2.5},
               {"mode": "selective", "max_depth": 0}, {"mode": "selective", "max_depth": float("nan")}):
        with pytest.raises(ValueError):
            terrafort.breach(str(dem), str(tmp_path / "o.tif"), **kw)
    with pytest.raises(terrafort.TerrafortError) as e:
        terrafort.breach(str(dem), str(tmp_path / "o.tif"), mode="constrained", max_depth=float("inf"))
    assert e.value.exit_code == 2 and "--max-depth" in str(e.value)
    assert sorted(os.listdir(tmp_path)) == ["dem.tif"]


@pytest.fixture
def points(tmp_path):
    """300 scattered points of z = x + 2y + a bump, as "x y z" text."""
    rng = np.random.default_rng(7)
    xy = rng.uniform(0, 100, (300, 2))
    z = xy[:, 0] + 2 * xy[:, 1] + 30 * np.exp(-((xy[:, 0] - 50) ** 2 + (xy[:, 1] - 40) ** 2) / 200)
    p = tmp_path / "pts.xyz"
    np.savetxt(p, np.column_stack([xy, z]), fmt="%.6f")
    return str(p)


@pytest.mark.parametrize("kw,flags", [
    ({"algorithm": "invdist:power=2:smoothing=1", "txe": (0, 100), "tye": (0, 80), "outsize": (50, 40)},
     ["-a", "invdist:power=2:smoothing=1", "-txe", "0", "100", "-tye", "0", "80", "-outsize", "50", "40"]),
    ({"algorithm": "nearest:radius1=20:radius2=20", "txe": (0, 100), "tye": (0, 100), "tr": (4, 4),
      "out_type": "Float32"},
     ["-a", "nearest:radius1=20:radius2=20", "-txe", "0", "100", "-tye", "0", "100", "-tr", "4", "4", "-ot",
      "Float32"]),
    ({"algorithm": "linear", "outsize": (30, 30), "z_multiply": 2, "a_srs": "EPSG:32633"},
     ["-a", "linear", "-outsize", "30", "30", "-z_multiply", "2", "-a_srs", "EPSG:32633"]),
], ids=["invdist", "nearest-tr", "linear"])
def test_interpolate_same_bytes(kw, flags, points, cli, tmp_path):
    ref = cli("interpolate", *flags, points, "cli.tif")
    out = str(tmp_path / "py.tif")
    terrafort.interpolate(points, out, **kw)
    assert filecmp.cmp(ref, out, shallow=False)


def test_fill_voids_same_bytes(cli, data, tmp_path):
    dem = os.path.join(data, "fractal_nan.tif")
    ref = cli("interpolate", "--fill-voids", "-md", "30", "-si", "1", dem, "cli.tif")
    out = str(tmp_path / "py.tif")
    terrafort.fill_voids(dem, out, max_distance=30, smoothing_iterations=1)
    assert filecmp.cmp(ref, out, shallow=False)


def test_flowgraph_same_bytes(cli, tf, data, tmp_path):
    import subprocess
    dem = os.path.join(data, "demo.tif")
    names = ["p.tif", "ad8.tif", "src.tif", "ord.tif", "w.tif", "net.gpkg"]
    subprocess.run([tf, "flowgraph", dem, "--dir", "c_p.tif", "--acc", "c_ad8.tif", "--streams", "c_src.tif",
                    "--order", "c_ord.tif", "--basins", "c_w.tif", "--basin-stats", "c_bs.csv", "--threshold", "50",
                    "--acc-type", "Float32", "-q"], check=True, cwd=tmp_path)
    terrafort.flowgraph(dem, dir=tmp_path / "py_p.tif", acc=tmp_path / "py_ad8.tif", streams=tmp_path / "py_src.tif",
                        order=tmp_path / "py_ord.tif", basins=tmp_path / "py_w.tif", basin_stats=tmp_path / "py_bs.csv",
                        threshold=50, acc_type="Float32")
    for n in names[:5] + ["bs.csv"]:
        assert filecmp.cmp(tmp_path / ("c_" + n), tmp_path / ("py_" + n), shallow=False), n
    # from the directions alone, as TauDEM's aread8 -p: the same accumulation
    terrafort.flowgraph(dir_in=tmp_path / "py_p.tif", acc=tmp_path / "py_ad8_p.tif", acc_type="Float32")
    a = gdal.Open(str(tmp_path / "c_ad8.tif")).ReadAsArray()
    b = gdal.Open(str(tmp_path / "py_ad8_p.tif")).ReadAsArray()
    assert np.array_equal(a, b)
    # HAND and the D8 distance (the last fields of the options struct)
    subprocess.run([tf, "flowgraph", dem, "--hand", "c_hand.tif", "--d8-dist", "c_dist.tif", "--threshold", "50",
                    "--plen", "c_plen.tif", "--tlen", "c_tlen.tif", "--gord", "c_gord.tif", "-q"], check=True, cwd=tmp_path)
    terrafort.flowgraph(dem, hand=tmp_path / "py_hand.tif", d8_dist=tmp_path / "py_dist.tif", threshold=50,
                        plen=tmp_path / "py_plen.tif", tlen=tmp_path / "py_tlen.tif", gord=tmp_path / "py_gord.tif")
    for n in ("hand.tif", "dist.tif", "plen.tif", "tlen.tif", "gord.tif"):
        assert filecmp.cmp(tmp_path / ("c_" + n), tmp_path / ("py_" + n), shallow=False), n
    # TauDEM streamnet's form and its text files (the struct's last fields):
    # the command line and the keywords write the same tree and coordinates
    subprocess.run([tf, "flowgraph", dem, "--acc", "c_ad8nc.tif", "-nc", "-q"], check=True, cwd=tmp_path)
    subprocess.run([tf, "flowgraph", "-p", "py_p.tif", "-fel", dem, "-ad8", "c_ad8nc.tif", "-src", "c_src.tif",
                    "-tree", "c_tree.txt", "-coord", "c_coord.txt", "-q"], check=True, cwd=tmp_path)
    terrafort.flowgraph(dir_in=tmp_path / "py_p.tif", filled_in=dem, acc_in=tmp_path / "c_ad8nc.tif",
                        streams_in=tmp_path / "c_src.tif", tree=tmp_path / "py_tree.txt", coord=tmp_path / "py_coord.txt")
    for n in ("tree.txt", "coord.txt"):
        assert filecmp.cmp(tmp_path / ("c_" + n), tmp_path / ("py_" + n), shallow=False), n
    # nothing asked, or a product onto the DEM: an error, nothing written
    with pytest.raises(terrafort.TerrafortError):
        terrafort.flowgraph(dem)
    with pytest.raises(terrafort.TerrafortError) as e:
        terrafort.flowgraph(dem, acc=dem)
    assert e.value.exit_code == 4


def test_burn_same_bytes(cli, tf, data, tmp_path):
    """fill, breach and flowgraph with stream burning (burn, burn_depth,
    burn_layer, burn_all_touched: the last fields of their structs) write the
    command's bytes; burn without burn_depth is the command's usage error."""
    import subprocess
    from osgeo import ogr, osr
    dem = os.path.join(data, "demo.tif")
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32612)
    src = ogr.GetDriverByName("GPKG").CreateDataSource(str(tmp_path / "l.gpkg"))
    lay = src.CreateLayer("streams", srs, ogr.wkbLineString)
    f = ogr.Feature(lay.GetLayerDefn())
    f.SetGeometry(ogr.CreateGeometryFromWkt("LINESTRING(500103.7 4499893.2,501207.4 4499011.9,501990.3 4498203.1)"))
    lay.CreateFeature(f)
    src = lay = f = None
    lines = str(tmp_path / "l.gpkg")
    ref = cli("fill", "--burn", lines, "--burn-depth", "7.5", "--burn-layer", "streams", dem, "c_fill.tif")
    terrafort.fill(dem, str(tmp_path / "py_fill.tif"), burn=lines, burn_depth=7.5, burn_layer="streams")
    assert filecmp.cmp(ref, str(tmp_path / "py_fill.tif"), shallow=False)
    ref = cli("breach", "--burn", lines, "--burn-depth", "3", "--burn-all-touched", dem, "c_br.tif")
    terrafort.breach(dem, str(tmp_path / "py_br.tif"), burn=lines, burn_depth=3, burn_all_touched=True)
    assert filecmp.cmp(ref, str(tmp_path / "py_br.tif"), shallow=False)
    subprocess.run([tf, "flowgraph", dem, "--acc", "c_acc.tif", "--burn", lines, "--burn-depth", "7.5", "-q"],
                   check=True, cwd=tmp_path)
    terrafort.flowgraph(dem, acc=tmp_path / "py_acc.tif", burn=lines, burn_depth=7.5)
    assert filecmp.cmp(tmp_path / "c_acc.tif", tmp_path / "py_acc.tif", shallow=False)
    with pytest.raises(terrafort.TerrafortError) as e:
        terrafort.fill(dem, str(tmp_path / "no.tif"), burn=lines)
    assert e.value.exit_code == 2 and "--burn-depth" in str(e.value)
    assert not os.path.exists(tmp_path / "no.tif")
