"""The C library under the package: libterrafort.so loaded with ctypes, and
terrain.h's option structs mirrored field by field (tests/test_layout.py
compiles a C program that prints each field's offset and each struct's size
from the installed header and compares them with these)."""
import ctypes
import ctypes.util
import os

c_int, c_double, c_char_p, c_void_p, c_int64 = (ctypes.c_int, ctypes.c_double, ctypes.c_char_p,
                                                 ctypes.c_void_p, ctypes.c_int64)


class FileRole(ctypes.Structure):
    _fields_ = [("path", c_char_p), ("what", c_char_p)]


class RunOpts(ctypes.Structure):
    _fields_ = [
        ("band", c_int), ("format", c_char_p), ("creation_options", ctypes.POINTER(c_char_p)),
        ("threads", c_int), ("tile_size", c_int), ("mem", c_int64),
        ("progress", c_void_p), ("progress_user", c_void_p),
        ("warning", c_void_p), ("warning_user", c_void_p),
        ("stats", c_int), ("stats_json", c_char_p), ("hist_buckets", c_int),
        ("percentiles", ctypes.POINTER(c_double)), ("npercentiles", c_int), ("coll_timeout_ms", c_int),
        ("ft", c_int), ("ft_tolerance", c_double), ("ft_error_rate", c_double), ("ft_basic", c_int),
        ("ft_source_profile", c_int), ("ft_timeout_ms", c_int), ("ft_report", c_char_p), ("inject", c_char_p),
        ("ft_max_errors", c_int), ("ft_check", c_double), ("device", c_int), ("replay_on_cpu", c_int),
        ("live", c_void_p), ("cancelled", c_void_p), ("coll", c_void_p),
        ("gdal_cache", c_void_p), ("gdal_cache_user", c_void_p),
        ("reads", FileRole * 4), ("held", c_void_p), ("ft_report_append", c_int), ("device_pin", c_int),
        ("coll_arity", c_int), ("rank_progress", c_void_p),
        ("stage_of_several", c_int), ("heap_spill", c_void_p), ("heap_spill_user", c_void_p),
    ]


class GraphOpts(ctypes.Structure):
    _fields_ = [
        ("schedule", c_char_p), ("staleness", c_int), ("ds_max_ms", c_double), ("l_bottom", c_int),
        ("l_up", c_int), ("straggler_ratio", c_double), ("cache_mb", c_double), ("aap_stats", c_char_p),
        ("aap_stats_append", c_int), ("tmp_dir", c_char_p), ("ft_report_append", c_int), ("mem_of_input", c_double),
    ]


class SlopeOpts(ctypes.Structure):
    _fields_ = [("run", RunOpts), ("alg", c_int), ("percent", c_int), ("scale", c_double),
                ("compute_edges", c_int)]


class AspectOpts(ctypes.Structure):
    _fields_ = [("run", RunOpts), ("alg", c_int), ("trigonometric", c_int), ("zero_for_flat", c_int),
                ("compute_edges", c_int)]


class HillshadeOpts(ctypes.Structure):
    _fields_ = [("run", RunOpts), ("alg", c_int), ("mode", c_int), ("z", c_double), ("scale", c_double),
                ("azimuth", c_double), ("altitude", c_double), ("compute_edges", c_int)]


class TriOpts(ctypes.Structure):
    _fields_ = [("run", RunOpts), ("alg", c_int), ("compute_edges", c_int)]


class TpiOpts(ctypes.Structure):
    _fields_ = [("run", RunOpts), ("compute_edges", c_int)]


class RoughnessOpts(ctypes.Structure):
    _fields_ = [("run", RunOpts), ("compute_edges", c_int)]


class ColorReliefOpts(ctypes.Structure):
    _fields_ = [("run", RunOpts), ("mode", c_int), ("alpha", c_int)]


class SmoothOpts(ctypes.Structure):
    _fields_ = [("run", RunOpts), ("passes", c_int)]


class BurnOpts(ctypes.Structure):
    _fields_ = [("file", c_char_p), ("layer", c_char_p), ("depth", c_double), ("all_touched", c_int)]


class BreachOpts(ctypes.Structure):
    _fields_ = [("run", RunOpts), ("epsilon", c_int), ("burn", BurnOpts), ("mode", c_int), ("max_length", c_int64),
                ("max_depth", c_double), ("fill", c_int)]


class FillDemOpts(ctypes.Structure):
    _fields_ = [("run", RunOpts), ("graph", GraphOpts), ("out_type", c_int), ("epsilon", c_int),
                ("epsilon_step", c_double), ("burn", BurnOpts)]


class InterpolateOpts(ctypes.Structure):
    _fields_ = [
        ("run", RunOpts), ("algorithm", c_char_p), ("zfield", c_char_p), ("z_increase", c_double),
        ("z_multiply", c_double), ("layers", ctypes.POINTER(c_char_p)), ("where", c_char_p), ("sql", c_char_p),
        ("has_spat", c_int), ("spat", c_double * 4), ("clipsrc", c_char_p), ("clipsrc_layer", c_char_p),
        ("clipsrc_where", c_char_p), ("clipsrc_sql", c_char_p), ("has_txe", c_int), ("has_tye", c_int),
        ("txe", c_double * 2), ("tye", c_double * 2), ("outsize", c_int64 * 2), ("tr", c_double * 2),
        ("out_type", c_int), ("a_srs", c_char_p), ("open_options", ctypes.POINTER(c_char_p)), ("xyz", c_int),
        ("fill_voids", c_int), ("max_distance", c_double), ("smoothing_iterations", c_int), ("tmp_dir", c_char_p),
    ]


class FlowgraphOpts(ctypes.Structure):
    _fields_ = [
        ("run", RunOpts), ("graph", GraphOpts), ("dir_in", c_char_p), ("encoding", c_int), ("dir_out", c_char_p),
        ("filled_in", c_char_p), ("filled", c_int), ("slope", c_char_p), ("weights", c_char_p), ("units", c_int),
        ("no_edge_check", c_int), ("acc_float32", c_int), ("threshold", c_double), ("basins_by", c_int),
        ("outlets", c_char_p), ("snap", c_int), ("acc", c_char_p), ("streams", c_char_p), ("order", c_char_p),
        ("basins", c_char_p), ("network", c_char_p), ("network_format", c_char_p), ("basin_stats", c_char_p),
        ("method", c_int), ("ang", c_char_p), ("slp", c_char_p), ("sca", c_char_p), ("twi", c_char_p),
        ("moved_outlets", c_char_p), ("snap_distance", c_double), ("id_field", c_char_p), ("outlet_table", c_char_p),
        ("hand", c_char_p), ("d8_dist", c_char_p), ("plen", c_char_p), ("tlen", c_char_p), ("gord", c_char_p),
        ("holmgren_x", c_double), ("freeman_p", c_double), ("tree", c_char_p), ("coord", c_char_p),
        ("streams_in", c_char_p), ("acc_in", c_char_p),
        ("burn", BurnOpts),
        ("ang_in", c_char_p), ("slp_in", c_char_p), ("sca_in", c_char_p), ("seed", ctypes.c_uint64), ("spi", c_char_p),
    ]


class BatchOpts(ctypes.Structure):
    _fields_ = [("run", RunOpts), ("jobs_file", c_char_p), ("dir", c_char_p), ("glob", c_char_p), ("cmd", c_char_p),
                ("summary", c_char_p), ("force", c_int), ("jobs_per_rank", c_int), ("kill_after_s", c_double),
                ("program", c_char_p)]


class Error(ctypes.Structure):
    _fields_ = [("msg", ctypes.c_char * 1024)]


# struct name in terrain.h -> the class mirroring it (tests/test_layout.py walks this)
STRUCTS = {
    "tr_file_role": FileRole, "tr_run_opts": RunOpts, "tr_graph_opts": GraphOpts, "tr_slope_opts": SlopeOpts,
    "tr_aspect_opts": AspectOpts, "tr_hillshade_opts": HillshadeOpts, "tr_tri_opts": TriOpts,
    "tr_tpi_opts": TpiOpts, "tr_roughness_opts": RoughnessOpts, "tr_color_relief_opts": ColorReliefOpts,
    "tr_smooth_opts": SmoothOpts, "tr_burn_opts": BurnOpts, "tr_breach_opts": BreachOpts, "tr_fill_dem_opts": FillDemOpts, "tr_interpolate_opts": InterpolateOpts,
    "tr_flowgraph_opts": FlowgraphOpts, "tr_batch_opts": BatchOpts,
    "tr_error": Error,
}


def _candidates():
    env = os.environ.get("TERRAFORT_LIBRARY")
    if env:
        return [env]  # then nowhere else
    here = os.path.dirname(os.path.abspath(__file__))
    out = [
        # installed: PREFIX/lib/python3.X/dist-packages/terrafort -> PREFIX/lib
        os.path.join(here, "..", "..", "..", "libterrafort.so.0"),
        # the source tree: tools/python/terrafort -> build/lib
        os.path.join(here, "..", "..", "..", "build", "lib", "libterrafort.so.0"),
    ]
    found = ctypes.util.find_library("terrafort")
    if found:
        out.append(found)
    return out


def load():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path)
            continue
        lib = ctypes.CDLL(path)
        _declare(lib)
        _register_gdal()
        return lib
    raise ImportError("terrafort: libterrafort.so not found (looked for %s; set TERRAFORT_LIBRARY)"
                      % ", ".join(tried))


def _register_gdal():
    """GDAL's drivers, as every program over the library registers them first
    (terrain.h); the GDAL the library loaded (one per process, osgeo's too)."""
    name = ctypes.util.find_library("gdal")
    if not name:
        raise ImportError("terrafort: GDAL's library not found")
    ctypes.CDLL(name).GDALAllRegister()


def _declare(lib):
    for name, cls in (("slope", SlopeOpts), ("aspect", AspectOpts), ("hillshade", HillshadeOpts),
                      ("tri", TriOpts), ("tpi", TpiOpts), ("roughness", RoughnessOpts),
                      ("color_relief", ColorReliefOpts), ("smooth", SmoothOpts), ("fill_dem", FillDemOpts),
                      ("interpolate", InterpolateOpts), ("breach", BreachOpts)):
        init = getattr(lib, "tr_%s_opts_init" % name)
        init.argtypes, init.restype = [ctypes.POINTER(cls)], None
        fn = getattr(lib, "tr_" + name)
        if name == "color_relief":
            fn.argtypes = [ctypes.POINTER(cls), c_char_p, c_char_p, c_char_p, ctypes.POINTER(Error)]
        else:
            fn.argtypes = [ctypes.POINTER(cls), c_char_p, c_char_p, ctypes.POINTER(Error)]
        fn.restype = c_int
    lib.tr_fill_voids.argtypes = [ctypes.POINTER(InterpolateOpts), c_char_p, c_char_p, ctypes.POINTER(Error)]
    lib.tr_fill_voids.restype = c_int
    lib.tr_flowgraph_opts_init.argtypes = [ctypes.POINTER(FlowgraphOpts)]
    lib.tr_flowgraph_opts_init.restype = None
    lib.tr_flowgraph.argtypes = [ctypes.POINTER(FlowgraphOpts), c_char_p, ctypes.POINTER(Error)]
    lib.tr_flowgraph.restype = c_int
    lib.tr_graph_opts_init.argtypes, lib.tr_graph_opts_init.restype = [ctypes.POINTER(GraphOpts)], None
    lib.tr_batch_opts_init.argtypes, lib.tr_batch_opts_init.restype = [ctypes.POINTER(BatchOpts)], None
    lib.tr_batch.argtypes, lib.tr_batch.restype = [ctypes.POINTER(BatchOpts), ctypes.POINTER(Error)], c_int
    lib.tr_exit_code.argtypes, lib.tr_exit_code.restype = [c_int], c_int
    lib.tr_library_version.argtypes, lib.tr_library_version.restype = [], c_char_p
