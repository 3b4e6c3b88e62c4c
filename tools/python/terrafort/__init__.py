"""terrafort from Python: the raster commands of the terrafort program as
functions over its library, libterrafort.so (terrain.h), with the command's
options as keyword arguments. Each function writes the same bytes as the
command with the same options (tests/test_commands.py).

    import terrafort
    terrafort.slope("dem.tif", "slope.tif", compute_edges=True, threads=4)
    terrafort.fill("dem.tif", "filled.tif")
    s = terrafort.slope_array(z, geotransform=(0, 30, 0, 0, 0, -30))   # numpy in, numpy out

Inputs are paths or GDAL datasets (osgeo.gdal.Dataset: its file, or a copy
of an in-memory one); outputs are paths. A failure raises TerrafortError
with the library's one-line message and the command's exit code. The array
forms (*_array) take a 2-D numpy array and its geotransform and return the
product as a numpy array; they go through GeoTIFFs in a temporary folder.

Options every function takes (the program's common options): band, format,
creation_options (a list of "NAME=VALUE" or a dict), threads, tile_size,
mem (bytes), stats, stats_json, ft ("off", "dual", "replay"), inject,
device ("cpu", "auto", "gpu"); progress, a callable progress(frac, message)
called as the run goes (frac in [0, 1]; a false return cancels it:
TerrafortError, exit code of an interrupted run), and warning, a callable
warning(message) for what the command would warn about (an unknown creation
option) while the run goes on. terrafort.options holds every function's
parameters as data (kinds, flags, docs), which the QGIS provider reads.

The process is Python's: a run leaves GDAL's block cache and the C library's
heap settings as they are (the program sets both to each run's plan). The
bytes are the same; the peak memory is not: GDAL's cache is 5% of the
machine's memory unless set. By hand, fill of an 8000 x 8000 DEM with
mem=150 MiB peaked at 359 MB from Python as it starts, 132 MB after
gdal.SetCacheMax(16 << 20), and 117 MB in the program (whose heap settings
made 1 MB of that difference: 131 MB from Python with them).

Not here yet: batch (its job grammar), and the program's GDAL configuration
(--config: use osgeo.gdal.SetConfigOption)."""
import ctypes
import itertools
import json
import os
import shutil
import tempfile

from . import _lib, options

_L = _lib.load()
__version__ = _L.tr_library_version().decode()

__all__ = ["TerrafortError", "slope", "aspect", "hillshade", "tri", "tpi", "roughness", "color_relief",
           "smooth", "breach", "fill", "interpolate", "fill_voids", "flowgraph", "batch", "slope_array", "aspect_array", "hillshade_array", "tri_array", "tpi_array",
           "roughness_array", "smooth_array", "fill_array"]


class TerrafortError(RuntimeError):
    """A call that failed: str() is the library's message; .exit_code is what the
    terrafort command exits with for it (2 usage, 3 input, 4 output, ...)."""

    def __init__(self, message, status, exit_code):
        super().__init__(message)
        self.status = status
        self.exit_code = exit_code


_PROGRESS = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_double, ctypes.c_char_p, ctypes.c_void_p)
_WARNING = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p)
_FT = {"off": 0, "dual": 1, "replay": 2}
_DEVICE = {"cpu": 0, "auto": 1, "gpu": 2}
_GRAD = {"horn": 0, "zevenbergenthorne": 1}
_TRI = {"riley": 0, "wilson": 1}
_BREACH = {"complete": 0, "selective": 1, "constrained": 2}
_GDT = {"byte": 1, "uint16": 2, "int16": 3, "uint32": 4, "int32": 5, "float32": 6, "float64": 7}
_n = itertools.count()


def _choice(table, value, what):
    try:
        return table[str(value).lower()]
    except KeyError:
        raise ValueError("%s: %r is not one of %s" % (what, value, ", ".join(sorted(table)))) from None


def _b(s):
    return None if s is None else os.fsencode(s)


class _Call:
    """Keeps what the C structs point at alive for the call."""

    def __init__(self):
        self.keep = []
        self.tmp = None

    def path(self, x):
        """A path, or a GDAL dataset's file (an in-memory one copied to a GeoTIFF)."""
        if hasattr(x, "GetDescription") and hasattr(x, "GetDriver"):
            desc = x.GetDescription()
            if desc and x.GetDriver().ShortName != "MEM" and os.path.exists(desc):
                return _b(desc)
            from osgeo import gdal
            if self.tmp is None:
                self.tmp = tempfile.mkdtemp(prefix="terrafort-py-")
            p = os.path.join(self.tmp, "in%d.tif" % next(_n))
            gdal.GetDriverByName("GTiff").CreateCopy(p, x)
            return _b(p)
        return _b(os.fspath(x))

    def run_opts(self, run, band=None, format=None, creation_options=None, threads=None, tile_size=None, mem=None,
                 stats=None, stats_json=None, ft=None, inject=None, device=None, progress=None, warning=None):
        if band is not None:
            run.band = int(band)
        if format is not None:
            run.format = _b(format)
        if creation_options:
            if isinstance(creation_options, dict):
                creation_options = ["%s=%s" % kv for kv in creation_options.items()]
            arr = (ctypes.c_char_p * (len(creation_options) + 1))(*[_b(c) for c in creation_options], None)
            self.keep.append(arr)
            run.creation_options = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))
        if threads is not None:
            run.threads = int(threads)
        if tile_size is not None:
            run.tile_size = int(tile_size)
        if mem is not None:
            run.mem = int(mem)
        if stats is not None:
            run.stats = int(bool(stats))
        if stats_json is not None:
            run.stats_json = _b(stats_json)
            run.stats = 1
        if ft is not None:
            run.ft = _choice(_FT, ft, "ft")
        if inject is not None:
            run.inject = _b(inject)
        if device is not None:
            run.device = _choice(_DEVICE, device, "device")
        if progress is not None:
            def on_progress(frac, msg, _user):
                try:
                    return 1 if progress(frac, msg.decode(errors="replace") if msg else "") else 0
                except Exception:  # an exception cannot cross the C call: it cancels
                    return 0
            fn = _PROGRESS(on_progress)
            self.keep.append(fn)
            run.progress = ctypes.cast(fn, ctypes.c_void_p)
        if warning is not None:
            def on_warning(msg, _user):
                try:
                    warning(msg.decode(errors="replace") if msg else "")
                except Exception:
                    pass
            fn = _WARNING(on_warning)
            self.keep.append(fn)
            run.warning = ctypes.cast(fn, ctypes.c_void_p)

    def done(self):
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)


def _invoke(name, cls, set_own, run_kw, files, init=None):
    """One library call: opts from tr_NAME_opts_init (or init's), set_own and
    the common options set, then tr_NAME(&opts, *files(c), &err); a failure
    raised as TerrafortError."""
    opts = cls()
    getattr(_L, "tr_%s_opts_init" % (init or name))(ctypes.byref(opts))
    c = _Call()
    try:
        set_own(opts)
        c.run_opts(opts.run, **run_kw)
        err = _lib.Error()
        st = getattr(_L, "tr_" + name)(ctypes.byref(opts), *files(c), ctypes.byref(err))
    finally:
        c.done()
    if st != 0:
        raise TerrafortError(err.msg.decode(errors="replace"), st, _L.tr_exit_code(st))


def _call(name, cls, src, dst, set_own, run_kw, extra_path=None, init=None):
    """A command of one input and one output (and color_relief's colour file)."""
    def files(c):
        middle = [] if extra_path is None else [_b(os.fspath(extra_path))]
        return [c.path(src), *middle, _b(os.fspath(dst))]
    _invoke(name, cls, set_own, run_kw, files, init)


def slope(src, dst, alg="Horn", percent=False, scale=None, compute_edges=False, **run):
    """gdaldem slope: degrees (percent=True: percent rise), Float32, nodata -9999."""
    def own(o):
        o.alg = _choice(_GRAD, alg, "alg")
        o.percent = int(bool(percent))
        if scale is not None:
            o.scale = float(scale)
        o.compute_edges = int(bool(compute_edges))
    _call("slope", _lib.SlopeOpts, src, dst, own, run)


def aspect(src, dst, alg="Horn", trigonometric=False, zero_for_flat=False, compute_edges=False, **run):
    """gdaldem aspect: degrees clockwise from north (trigonometric: counter-clockwise from east)."""
    def own(o):
        o.alg = _choice(_GRAD, alg, "alg")
        o.trigonometric = int(bool(trigonometric))
        o.zero_for_flat = int(bool(zero_for_flat))
        o.compute_edges = int(bool(compute_edges))
    _call("aspect", _lib.AspectOpts, src, dst, own, run)


def hillshade(src, dst, alg="Horn", z=None, scale=None, azimuth=None, altitude=None, combined=False,
              multidirectional=False, igor=False, compute_edges=False, **run):
    """gdaldem hillshade: a Byte shade; combined, multidirectional or igor as gdaldem's flags."""
    if sum(map(bool, (combined, multidirectional, igor))) > 1:
        raise ValueError("hillshade: combined, multidirectional and igor exclude each other")

    def own(o):
        o.alg = _choice(_GRAD, alg, "alg")
        o.mode = 1 if combined else 2 if multidirectional else 3 if igor else 0
        for k, v in (("z", z), ("scale", scale), ("azimuth", azimuth), ("altitude", altitude)):
            if v is not None:
                setattr(o, k, float(v))
        o.compute_edges = int(bool(compute_edges))
    _call("hillshade", _lib.HillshadeOpts, src, dst, own, run)


def tri(src, dst, alg=None, compute_edges=False, **run):
    """gdaldem TRI (alg "Riley", the default, or "Wilson")."""
    def own(o):
        if alg is not None:
            o.alg = _choice(_TRI, alg, "alg")
        o.compute_edges = int(bool(compute_edges))
    _call("tri", _lib.TriOpts, src, dst, own, run)


def tpi(src, dst, compute_edges=False, **run):
    """gdaldem TPI."""
    def own(o):
        o.compute_edges = int(bool(compute_edges))
    _call("tpi", _lib.TpiOpts, src, dst, own, run)


def roughness(src, dst, compute_edges=False, **run):
    """gdaldem roughness."""
    def own(o):
        o.compute_edges = int(bool(compute_edges))
    _call("roughness", _lib.RoughnessOpts, src, dst, own, run)


def color_relief(src, color_file, dst, exact_color_entry=False, nearest_color_entry=False, alpha=False, **run):
    """gdaldem color-relief: RGB (alpha=True: RGBA) through a colour file."""
    if exact_color_entry and nearest_color_entry:
        raise ValueError("color_relief: exact_color_entry and nearest_color_entry exclude each other")

    def own(o):
        o.mode = 1 if exact_color_entry else 2 if nearest_color_entry else 0
        o.alpha = int(bool(alpha))
    _call("color_relief", _lib.ColorReliefOpts, src, dst, own, run, extra_path=color_file)


def smooth(src, dst, passes=None, **run):
    """Iterated 3x3 mean filter (passes: 1..8, default 2)."""
    def own(o):
        if passes is not None:
            o.passes = int(passes)
    _call("smooth", _lib.SmoothOpts, src, dst, own, run)


def _burn(o, keep, burn, burn_depth, burn_layer, burn_all_touched):
    """Stream burning's keywords into a tr_burn_opts (terrafort-fill(1), BURNING)."""
    if burn is not None:
        keep.append(_b(os.fspath(burn)))
        o.file = keep[-1]
    if burn_depth is not None:
        o.depth = float(burn_depth)
    if burn_layer is not None:
        keep.append(_b(burn_layer))
        o.layer = keep[-1]
    o.all_touched = int(bool(burn_all_touched))


def breach(src, dst, epsilon=False, mode="complete", max_length=None, max_depth=None, fill=False, burn=None,
           burn_depth=None, burn_layer=None, burn_all_touched=False, **run):
    """Depression breaching (Lindsay 2016, as RichDEM's rd_depressions_breach): mode
    "complete" cuts every pit's least-cost path, "selective" only paths within max_length
    cells and max_depth map units, "constrained" every path but only max_length cells of it
    and no cell deeper than max_depth; fill=True then fills what the limits left;
    epsilon=True makes every cut path and filled cell fall by one float step a cell; burn
    (lines, any OGR vector) lowers the cells they touch by burn_depth first."""
    if max_length is not None and (isinstance(max_length, bool) or int(max_length) != max_length or max_length < 1):
        raise ValueError("breach: max_length %r is not a whole number of cells, 1 or more" % (max_length,))
    if max_depth is not None and not float(max_depth) > 0:
        raise ValueError("breach: max_depth %r is not a depth above 0" % (max_depth,))

    keep = []

    def own(o):
        o.epsilon = int(bool(epsilon))
        o.mode = _choice(_BREACH, mode, "mode")
        o.max_length = 0 if max_length is None else int(max_length)
        o.max_depth = 0.0 if max_depth is None else float(max_depth)
        o.fill = int(bool(fill))
        _burn(o.burn, keep, burn, burn_depth, burn_layer, burn_all_touched)

    _call("breach", _lib.BreachOpts, src, dst, own, run)


def fill(src, dst, epsilon=False, out_type=None, tmp_dir=None, burn=None, burn_depth=None, burn_layer=None,
         burn_all_touched=False, **run):
    """Depression filling (TauDEM pitremove): epsilon=True drains every cell strictly
    downhill; out_type a GDAL type name ("Float32" default, "Float64", "Int32", ...);
    burn (stream lines, any OGR vector) lowers the cells they touch by burn_depth (the
    DEM's elevation units) before the fill."""
    keep = []

    def own(o):
        o.epsilon = int(bool(epsilon))
        if out_type is not None:
            o.out_type = _choice(_GDT, out_type, "out_type")
        if tmp_dir is not None:
            keep.append(_b(tmp_dir))
            o.graph.tmp_dir = keep[-1]
        _burn(o.burn, keep, burn, burn_depth, burn_layer, burn_all_touched)
    _call("fill_dem", _lib.FillDemOpts, src, dst, own, run)


def _strings(keep, words):
    """A NULL-terminated char ** of words, kept alive in keep."""
    arr = (ctypes.c_char_p * (len(words) + 1))(*[_b(w) for w in words], None)
    keep.append(arr)
    return ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))


def interpolate(src, dst, algorithm=None, zfield=None, z_increase=None, z_multiply=None, layers=None, where=None,
                sql=None, spat=None, clipsrc=None, txe=None, tye=None, outsize=None, tr=None, out_type=None,
                a_srs=None, open_options=None, xyz=False, tmp_dir=None, **run):
    """gdal_grid: the points of src (any OGR source, or "x y z" text) onto a grid.
    algorithm as gdal_grid's -a ("invdist:power=2:smoothing=1", "nearest", ...);
    txe/tye (min, max), outsize (cols, rows), tr (xres, yres) and spat
    (xmin, ymin, xmax, ymax) as pairs and tuples; layers and open_options as lists."""
    keep = []

    def own(o):
        for k, v in (("algorithm", algorithm), ("zfield", zfield), ("where", where), ("sql", sql),
                     ("clipsrc", clipsrc), ("a_srs", a_srs), ("tmp_dir", tmp_dir)):
            if v is not None:
                keep.append(_b(v))
                setattr(o, k, keep[-1])
        if z_increase is not None:
            o.z_increase = float(z_increase)
        if z_multiply is not None:
            o.z_multiply = float(z_multiply)
        if layers:
            o.layers = _strings(keep, list(layers))
        if open_options:
            o.open_options = _strings(keep, list(open_options))
        if spat is not None:
            o.has_spat = 1
            o.spat[:] = [float(v) for v in spat]
        if txe is not None:
            o.has_txe = 1
            o.txe[:] = [float(v) for v in txe]
        if tye is not None:
            o.has_tye = 1
            o.tye[:] = [float(v) for v in tye]
        if outsize is not None:
            o.outsize[:] = [int(v) for v in outsize]
        if tr is not None:
            o.tr[:] = [float(v) for v in tr]
        if out_type is not None:
            o.out_type = _choice(_GDT, out_type, "out_type")
        o.xyz = int(bool(xyz))
    _call("interpolate", _lib.InterpolateOpts, src, dst, own, run)


def fill_voids(src, dst, max_distance=None, smoothing_iterations=None, **run):
    """gdal_fillnodata: the nodata cells of a raster filled by inverse distance from the
    valid cells around them (max_distance cells; smoothing_iterations 3x3 passes)."""
    def own(o):
        o.fill_voids = 1
        if max_distance is not None:
            o.max_distance = float(max_distance)
        if smoothing_iterations is not None:
            o.smoothing_iterations = int(smoothing_iterations)
    _call("fill_voids", _lib.InterpolateOpts, src, dst, own, run, init="interpolate")


_ENCODING = {"taudem": 0, "esri": 1, "grass": 2}
_UNITS = {"cells": 0, "area": 1}
_BASINS_BY = {"links": 0, "edges": 1, "outlets": 2}


def flowgraph(dem=None, acc=None, streams=None, order=None, basins=None, network=None, dir=None, dir_in=None,
              dir_encoding=None, filled=False, filled_in=None, slope=None, weights=None, units=None,
              no_edge_check=False, acc_type=None, threshold=None, basins_by=None, outlets=None, snap=None,
              network_format=None, basin_stats=None, method=None, ang=None, slp=None, sca=None, twi=None,
              moved_outlets=None, snap_distance=None, id_field=None, outlet_table=None, hand=None, d8_dist=None,
              plen=None, tlen=None, gord=None, holmgren_x=None, freeman_p=None, tree=None, coord=None,
              streams_in=None, acc_in=None, burn=None, burn_depth=None, burn_layer=None, burn_all_touched=False,
              ang_in=None, slp_in=None, sca_in=None, seed=None, spi=None, **run):
    """terrafort flowgraph (TauDEM's D8 tools): from a DEM (or dir_in, existing
    directions) the products asked for - dir, slope (sd8), acc, streams, order,
    basins, network, basin_stats (a CSV row per basin), moved_outlets (where
    each of outlets went), outlet_table (TauDEM's "id iddown"); with method "dinf"
    (chosen by ang, slp, sca or twi alone) TauDEM's D-infinity ang, slp, sca
    and twi (or sca alone from ang_in, existing angles: TauDEM areadinf, and
    hand from them with the filled dem (filled=True) and streams_in: TauDEM
    dinfdistdown; or twi alone from slp_in and sca_in: TauDEM twi); spi, the
    stream power index sca x slp (SAGA's), from the DEM or slp_in and sca_in;
    hand (TauDEM dinfdistdown -m ave v) and d8_dist (d8hdisttostrm) to
    the streams of threshold (or streams_in), with either method; plen, tlen and gord (TauDEM
    gridnet); tree and coord, TauDEM streamnet's text files of the links -
    all written or none. streams_in (and acc_in), the stream cells (and the
    area) given as streamnet's -src (and -ad8), replace the threshold. With method "quinn", "holmgren" (exponent
    holmgren_x, default 4), "freeman" (freeman_p, default 1.1) or "rho8"
    (Fairfield & Leymarie, one receiver, draws a hash of seed, default 1): acc alone,
    multiple-flow-direction accumulation in cells as RichDEM computes it.
    Keyword names are the command's long options; acc_type "Float32" or
    "Float64" (the default). burn (stream lines, any OGR vector) lowers the
    DEM's cells they touch by burn_depth before its fill."""
    keep = []

    def own(o):
        for k, v in (("dir_in", dir_in), ("dir_out", dir), ("filled_in", filled_in), ("slope", slope),
                     ("weights", weights), ("outlets", outlets), ("acc", acc), ("streams", streams),
                     ("order", order), ("basins", basins), ("network", network), ("network_format", network_format),
                     ("basin_stats", basin_stats), ("ang", ang), ("slp", slp), ("sca", sca), ("twi", twi),
                     ("moved_outlets", moved_outlets), ("id_field", id_field), ("outlet_table", outlet_table),
                     ("hand", hand), ("d8_dist", d8_dist), ("plen", plen), ("tlen", tlen), ("gord", gord),
                     ("tree", tree), ("coord", coord), ("streams_in", streams_in), ("acc_in", acc_in),
                     ("ang_in", ang_in), ("slp_in", slp_in), ("sca_in", sca_in), ("spi", spi)):
            if v is not None:
                keep.append(_b(os.fspath(v)) if k not in ("network_format", "id_field") else _b(v))
                setattr(o, k, keep[-1])
        if dir_encoding is not None:
            o.encoding = _choice(_ENCODING, dir_encoding, "dir_encoding")
        if method is not None:
            o.method = _choice({"d8": 0, "dinf": 1, "quinn": 2, "holmgren": 3, "freeman": 4, "rho8": 5}, method,
                               "method")
        elif any(v is not None for v in (ang, slp, sca, twi, ang_in, slp_in, sca_in, spi)):
            o.method = 1
        if holmgren_x is not None:
            o.holmgren_x = float(holmgren_x)
        if freeman_p is not None:
            o.freeman_p = float(freeman_p)
        if seed is not None:
            if int(seed) != seed or not 0 <= int(seed) <= 2 ** 53:
                raise ValueError("seed must be an integer from 0 to 2**53, got %r" % (seed,))
            o.seed = int(seed)
        o.filled = int(bool(filled))
        if units is not None:
            o.units = _choice(_UNITS, units, "units")
        o.no_edge_check = int(bool(no_edge_check))
        if acc_type is not None:
            o.acc_float32 = _choice({"float32": 1, "float64": 0}, acc_type, "acc_type")
        if threshold is not None:
            o.threshold = float(threshold)
        if basins_by is not None:
            o.basins_by = _choice(_BASINS_BY, basins_by, "basins_by")
        if snap is not None:
            o.snap = int(snap)
        if snap_distance is not None:
            o.snap_distance = float(snap_distance)
        _burn(o.burn, keep, burn, burn_depth, burn_layer, burn_all_touched)

    _invoke("flowgraph", _lib.FlowgraphOpts, own, run, lambda c: [None if dem is None else c.path(dem)])


def batch(jobs_file=None, dir=None, glob=None, cmd=None, summary=None, force=False, jobs=None, program=None,
          progress=None):
    """`terrafort batch` as a call (tr_batch): each line of jobs_file a terrafort command
    line (or a job per file of dir matching glob, from the template cmd: {} {name} {stem}
    {base} {dir}), run as a child process of the terrafort program (program, else
    $TERRAFORT_PROGRAM, else terrafort on PATH), jobs at once (default 1); a job done
    before whose files are all there is skipped unless force. Returns the JSON summary as
    a dict (summary: its file, default JOBS_FILE.summary.json). A failing job raises
    TerrafortError (exit_code 11) once the others ran; the summary file has the details."""
    def set_own(o):
        o.jobs_file, o.dir, o.glob, o.cmd = _b(jobs_file), _b(dir), _b(glob), _b(cmd)
        o.summary, o.program = _b(summary), _b(program)
        o.force = int(bool(force))
        if jobs is not None:
            o.jobs_per_rank = int(jobs)
    if summary == "-":
        raise ValueError("batch: summary '-' (standard output) is for the command; give a file")
    _invoke("batch", _lib.BatchOpts, set_own, {"progress": progress}, lambda c: [])
    path = summary or ((os.fspath(jobs_file) if jobs_file else "terrafort-batch") + ".summary.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _array(fn, z, geotransform=(0.0, 1.0, 0.0, 0.0, 0.0, -1.0), crs=None, nodata=None, **opts):
    import numpy as np
    from osgeo import gdal, osr
    z = np.asarray(z)
    if z.ndim != 2:
        raise ValueError("a 2-D array is needed, not %d-D" % z.ndim)
    types = {np.dtype(np.float32): gdal.GDT_Float32, np.dtype(np.float64): gdal.GDT_Float64,
             np.dtype(np.int16): gdal.GDT_Int16, np.dtype(np.int32): gdal.GDT_Int32,
             np.dtype(np.uint8): gdal.GDT_Byte, np.dtype(np.uint16): gdal.GDT_UInt16}
    if z.dtype not in types:
        z = z.astype(np.float32)
    tmp = tempfile.mkdtemp(prefix="terrafort-py-")
    try:
        src, dst = os.path.join(tmp, "in.tif"), os.path.join(tmp, "out.tif")
        ds = gdal.GetDriverByName("GTiff").Create(src, z.shape[1], z.shape[0], 1, types[z.dtype])
        ds.SetGeoTransform(list(geotransform))
        if crs is not None:
            s = osr.SpatialReference()
            s.SetFromUserInput(str(crs))
            ds.SetProjection(s.ExportToWkt())
        band = ds.GetRasterBand(1)
        if nodata is not None:
            band.SetNoDataValue(float(nodata))
        band.WriteArray(z)
        ds = band = None
        fn(src, dst, **opts)
        out = gdal.Open(dst)
        a = out.ReadAsArray()
        out = None
        return a
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _array_form(fn):
    def form(z, geotransform=(0.0, 1.0, 0.0, 0.0, 0.0, -1.0), crs=None, nodata=None, **opts):
        return _array(fn, z, geotransform, crs, nodata, **opts)
    form.__name__ = form.__qualname__ = fn.__name__ + "_array"
    form.__doc__ = ("%s() of an array: z (rows x cols) with its geotransform, CRS (any form OSR reads) and "
                    "nodata; the same keyword options; returns the product as a numpy array." % fn.__name__)
    return form


slope_array = _array_form(slope)
aspect_array = _array_form(aspect)
hillshade_array = _array_form(hillshade)
tri_array = _array_form(tri)
tpi_array = _array_form(tpi)
roughness_array = _array_form(roughness)
smooth_array = _array_form(smooth)
fill_array = _array_form(fill)
