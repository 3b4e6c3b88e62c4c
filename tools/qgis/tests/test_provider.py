"""The terrafort Processing provider in a headless QGIS: every command an
algorithm with its table's parameters; slope, fill and flowgraph (through
processing.run and through qgis_process) write the bytes the terrafort
command writes with the same options; outputs load into the project;
progress, cancel and errors go through Processing (a missing colour file is
a QgsProcessingException with the library's message, as the command prints
it)."""
import filecmp
import os
import shutil
import subprocess

import pytest
from osgeo import ogr
from qgis.core import QgsApplication, QgsProcessingException, QgsProcessingFeedback, QgsProject

import terrafort
from terrafort import options

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
GDT = list(options.BY_NAME["fill"].params[3].choices)

# (algorithm, its parameters besides INPUT/DEM, its outputs, the command's words besides input and outputs)
CASES = [
    ("slope", {}, ["OUTPUT"], ["slope"]),
    ("slope", {"ALG": 1, "PERCENT": True, "COMPUTE_EDGES": True, "SCALE": 0.5}, ["OUTPUT"],
     ["slope", "-alg", "ZevenbergenThorne", "-p", "-compute_edges", "-s", "0.5"]),
    ("slope", {"THREADS": 2, "TILE_SIZE": 64, "CREATION_OPTIONS": "COMPRESS=DEFLATE|TILED=YES"}, ["OUTPUT"],
     ["slope", "--threads", "2", "--tile-size", "64", "-co", "COMPRESS=DEFLATE", "-co", "TILED=YES"]),
    ("fill", {}, ["OUTPUT"], ["fill"]),
    ("fill", {"EPSILON": True, "OUT_TYPE": GDT.index("Float64")}, ["OUTPUT"], ["fill", "--epsilon", "-ot", "Float64"]),
    ("flowgraph", {"THRESHOLD": 50}, ["ACC", "STREAMS"], ["flowgraph", "--threshold", "50"]),
    ("flowgraph", {"THRESHOLD": 30, "ACC_TYPE": 0}, ["DIR", "ACC", "STREAMS", "ORDER", "BASINS", "SLOPE"],
     ["flowgraph", "--threshold", "30", "--acc-type", "Float32"]),
]
FLAG = {"ACC": "--acc", "STREAMS": "--streams", "DIR": "--dir", "ORDER": "--order", "BASINS": "--basins",
        "SLOPE": "--slope"}


def _cli_args(alg, words, dem, outs):
    """The command's argv for the case: flowgraph's products are flags, the others' files positional."""
    if alg == "flowgraph":
        return words + [dem] + [w for o in outs for w in (FLAG[o], o.lower() + ".tif")]
    return words + [dem, "out.tif"]


@pytest.mark.parametrize("alg,params,outs,words", CASES, ids=[" ".join(c[3]) for c in CASES])
def test_same_bytes_as_the_command(qgis_app, alg, params, outs, words, cli, data, tmp_path):
    import processing
    dem = os.path.join(data, "demo.tif")
    cli(*_cli_args(alg, list(words), dem, outs))
    p = dict(params, **{"DEM" if alg == "flowgraph" else "INPUT": dem})
    for o in outs:
        p[o] = str(tmp_path / ("q_" + o.lower() + ".tif"))
    res = processing.run("terrafort:" + alg, p)
    for o in outs:
        ref = tmp_path / "cli" / ("out.tif" if o == "OUTPUT" else o.lower() + ".tif")
        assert res[o] == p[o]
        assert filecmp.cmp(ref, p[o], shallow=False), o


@pytest.fixture
def points(tmp_path):
    """200 points of z = x + 2y in a GeoPackage, z as the attribute elev."""
    from osgeo import osr
    import random
    rnd = random.Random(7)
    path = str(tmp_path / "pts.gpkg")
    ds = ogr.GetDriverByName("GPKG").CreateDataSource(path)
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32633)
    lyr = ds.CreateLayer("pts", srs, ogr.wkbPoint)
    lyr.CreateField(ogr.FieldDefn("elev", ogr.OFTReal))
    for _ in range(200):
        x, y = rnd.uniform(0, 100), rnd.uniform(0, 80)
        f = ogr.Feature(lyr.GetLayerDefn())
        f.SetField("elev", x + 2 * y)
        f.SetGeometry(ogr.CreateGeometryFromWkt("POINT (%r %r)" % (x, y)))
        lyr.CreateFeature(f)
    ds = lyr = None
    return path


def test_more_commands(qgis_app, cli, data, points, tmp_path):
    """Beyond the three: interpolate (a layer, numbers as text), color relief (a file),
    hillshade (a shading flag), through the same table."""
    import processing
    dem = os.path.join(data, "demo.tif")
    ramp = os.path.join(ROOT, "testdata", "ramp_percent.txt")
    runs = [
        (["interpolate", "-a", "invdist:power=2", "-zfield", "elev", "-txe", "0", "100", "-tye", "0", "80",
          "-outsize", "50", "40", points, "out1.tif"],
         "interpolate", {"INPUT": points, "ALGORITHM": "invdist:power=2", "ZFIELD": "elev", "TXE": "0 100",
                         "TYE": "0,80", "OUTSIZE": "50 40"}),
        (["color-relief", "-alpha", dem, ramp, "out2.tif"], "colorrelief",
         {"INPUT": dem, "COLOR_FILE": ramp, "ALPHA": True}),
        (["hillshade", "-multidirectional", "-z", "2", dem, "out3.tif"], "hillshade",
         {"INPUT": dem, "MULTIDIRECTIONAL": True, "Z": 2}),
    ]
    for i, (words, alg, params) in enumerate(runs, 1):
        cli(*words)
        out = str(tmp_path / ("q%d.tif" % i))
        processing.run("terrafort:" + alg, dict(params, OUTPUT=out))
        assert filecmp.cmp(tmp_path / "cli" / ("out%d.tif" % i), out, shallow=False), alg


def _qgis_process(tmp_path, plugins, args, env_drop=()):
    """qgis_process ARGS with the plugin enabled in a fresh profile, found through
    QGIS_PLUGINPATH=plugins. Debian's qgis_process wrapper passes --noversioncheck,
    which 3.22's qgis_process refuses: the binary beside it is run."""
    exe = shutil.which("qgis_process.bin") or shutil.which("qgis_process")
    if not exe:
        pytest.skip("no qgis_process (Debian's package qgis)")
    home = tmp_path / "home"
    prof = home / ".local" / "share" / "QGIS" / "QGIS3" / "profiles" / "default" / "QGIS"
    prof.mkdir(parents=True, exist_ok=True)
    (prof / "QGIS3.ini").write_text("[PythonPlugins]\nterrafort_processing=true\n")
    env = dict(os.environ, HOME=str(home), XDG_DATA_HOME=str(home / ".local" / "share"),
               QGIS_PLUGINPATH=plugins, QT_QPA_PLATFORM="offscreen")
    for k in env_drop:
        env.pop(k, None)
    r = subprocess.run([exe, *args], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_qgis_process(qgis_app, cli, data, tmp_path):
    dem = os.path.join(data, "demo.tif")
    cli("slope", "-p", "-alg", "ZevenbergenThorne", dem, "out.tif")
    out = tmp_path / "qp.tif"
    log = _qgis_process(tmp_path, os.path.join(ROOT, "tools", "qgis"),
                        ["run", "terrafort:slope", "--", "INPUT=" + dem, "OUTPUT=%s" % out, "PERCENT=true", "ALG=1"])
    assert "terrafort slope -alg ZevenbergenThorne -p" in log  # the command line it logs
    assert filecmp.cmp(tmp_path / "cli" / "out.tif", out, shallow=False)


def test_installed_tree(qgis_app, cli, tf, data, tmp_path):
    """`cmake --install` into a fresh prefix: qgis_process finds the plugin in
    share/terrafort/qgis, the plugin the package beside it, the package the library,
    with no PYTHONPATH or TERRAFORT_LIBRARY."""
    build = os.environ.get("TERRAFORT_BUILD", os.path.join(ROOT, "build"))
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", build, "--prefix", str(prefix)], check=True, capture_output=True)
    dem = os.path.join(data, "demo.tif")
    cli("fill", dem, "out.tif")
    out = tmp_path / "filled.tif"
    _qgis_process(tmp_path, str(prefix / "share" / "terrafort" / "qgis"),
                  ["run", "terrafort:fill", "--", "INPUT=" + dem, "OUTPUT=%s" % out],
                  env_drop=("PYTHONPATH", "TERRAFORT_LIBRARY"))
    assert filecmp.cmp(tmp_path / "cli" / "out.tif", out, shallow=False)


def test_every_command_with_its_parameters(qgis_app):
    prov = QgsApplication.processingRegistry().providerById("terrafort")
    algs = {a.name(): a for a in prov.algorithms()}
    assert set(algs) == {c.name.replace("-", "") for c in options.COMMANDS}
    for c in options.COMMANDS:
        names = {d.name() for d in algs[c.name.replace("-", "")].parameterDefinitions()}
        want = {{"src": "INPUT", "dst": "OUTPUT"}.get(p.name, p.name.upper()) for p in c.params + options.COMMON}
        assert names == want, c.name


def test_outputs_load_into_the_project(qgis_app, data, tmp_path):
    import processing
    res = processing.runAndLoadResults("terrafort:flowgraph", {
        "DEM": os.path.join(data, "demo.tif"), "ACC": str(tmp_path / "acc.tif"), "NETWORK": str(tmp_path / "net.gpkg"),
        "THRESHOLD": 50})
    sources = {lyr.source().split("|")[0] for lyr in QgsProject.instance().mapLayers().values()}
    assert {res["ACC"], res["NETWORK"]} <= sources
    ds = ogr.Open(res["NETWORK"])
    assert ds.GetLayer(0).GetFeatureCount() > 0
    ds = None
    QgsProject.instance().removeAllMapLayers()


def test_missing_colour_file_is_a_processing_error(qgis_app, cli, data, tmp_path):
    import processing
    dem = os.path.join(data, "demo.tif")
    r = cli("color-relief", dem, "/nonexistent/ramp.txt", "out.tif", check=False)
    assert r.returncode == 3
    message = r.stderr.strip().split(": ", 1)[1]  # after "terrafort color-relief: "
    with pytest.raises(QgsProcessingException) as e:
        processing.run("terrafort:colorrelief", {"INPUT": dem, "COLOR_FILE": "/nonexistent/ramp.txt",
                                                   "OUTPUT": str(tmp_path / "c.tif")})
    assert message in str(e.value)
    assert not os.listdir(tmp_path / "cli") and not (tmp_path / "c.tif").exists()


def test_missing_dem_is_a_processing_error(qgis_app, tmp_path):
    """Processing checks raster inputs itself before the algorithm runs: its message."""
    import processing
    with pytest.raises(QgsProcessingException, match="/nonexistent/dem.tif"):
        processing.run("terrafort:slope", {"INPUT": "/nonexistent/dem.tif", "OUTPUT": str(tmp_path / "s.tif")})
    assert not (tmp_path / "s.tif").exists()


class _Feedback(QgsProcessingFeedback):
    def __init__(self, cancel_at=None):
        super().__init__()
        self.seen, self.commands, self.cancel_at = [], [], cancel_at

    def setProgress(self, p):  # noqa: N802
        self.seen.append(p)
        if self.cancel_at is not None and p >= self.cancel_at:
            self.cancel()
        super().setProgress(p)

    def pushCommandInfo(self, s):  # noqa: N802
        self.commands.append(s)


def test_progress_and_cancel(qgis_app, data, tmp_path):
    import processing
    dem = os.path.join(data, "demo.tif")
    f = _Feedback()
    processing.run("terrafort:fill", {"INPUT": dem, "OUTPUT": str(tmp_path / "f.tif")}, feedback=f)
    assert f.seen and max(f.seen) == pytest.approx(100)
    assert f.commands == ["terrafort fill -z %s -fel %s" % (dem, tmp_path / "f.tif")]
    f = _Feedback(cancel_at=0)
    with pytest.raises(QgsProcessingException) as e:
        processing.run("terrafort:slope", {"INPUT": dem, "OUTPUT": str(tmp_path / "s.tif")}, feedback=f)
    assert "interrupted" in str(e.value)  # the library's message for a cancelled run
    assert not (tmp_path / "s.tif").exists()


def test_the_package_is_the_library():
    assert terrafort.__version__
