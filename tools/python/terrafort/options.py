"""Each command's parameters as data: name (the function's keyword), kind,
the command's flag spellings, a one-line doc, choices and default. The
functions in terrafort/__init__.py take exactly these keywords, and the
QGIS Processing provider (tools/qgis/terrafort_processing) builds every
algorithm's dialog from this table alone; nothing there names an option.

Why here and not elsewhere: the C option table (tools/options.h; `terrafort
CMD --options` prints it) is what the parser, --help, batch and this file
answer to; Python keeps the keyword names, kinds for QGIS's widgets and
defaults beside the functions it calls, and tests/test_options.py pins this
file to both neighbours: its names and defaults against each function's
signature, its flags and their roles (a file read or written) against the
command's table (a flag the command gains or loses without a row here, or a
row whose flag the command does not know, fails it).

Kinds: raster, vector, file (inputs); raster_out, vector_out, file_out
(outputs); bool, int, number, choice, string, numbers:N (N numbers),
strings (a list)."""
from collections import namedtuple

Param = namedtuple("Param", "name kind flags doc choices default optional")


def P(name, kind, flags="", doc="", choices=None, default=None, optional=None):
    """A row; optional defaults to: inputs and outputs required, options not."""
    if optional is None:
        optional = kind not in ("raster", "vector", "file", "raster_out", "vector_out", "file_out")
    if kind == "bool" and default is None:
        default = False
    return Param(name, kind, tuple(flags.split()), doc, tuple(choices) if choices else None, default, optional)


# name: the algorithm's (QGIS: without "-"); cli: the command's words before its flags
Command = namedtuple("Command", "name function title summary params cli")
Command.__new__.__defaults__ = (None,)

_GRAD = ("Horn", "ZevenbergenThorne")
_GDT = ("Byte", "UInt16", "Int16", "UInt32", "Int32", "Float32", "Float64")
_EDGES = P("compute_edges", "bool", "-compute_edges", "compute edge cells too")
_SCALE = P("scale", "number", "-s -scale",
           "vertical / horizontal units (without it a geographic DEM gets metric cell sizes)")


# Stream burning (terrafort-fill(1), BURNING): fill, breach and flowgraph from a DEM
_BURN = [P("burn", "vector", "--burn", "Stream lines burnt into the DEM first (GRASS r.carve, WhiteboxTools FillBurn)",
           optional=True),
         P("burn_depth", "number", "--burn-depth",
           "how far the lines' cells are lowered, in the DEM's elevation units (required with burn)"),
         P("burn_layer", "string", "--burn-layer", "the layer of the burn lines (default: the first)"),
         P("burn_all_touched", "bool", "--burn-all-touched",
           "burn every cell a line passes through, not GDAL's line rule")]


def _local(name, doc):
    return [P("src", "raster", doc="DEM"), P("dst", "raster_out", doc=doc)]


COMMANDS = [
    Command("slope", "slope", "Slope", "slope in degrees or percent (gdaldem slope); Float32, nodata -9999",
            _local("slope", "Slope") + [
                P("alg", "choice", "-alg", "gradient", _GRAD, "Horn"),
                P("percent", "bool", "-p", "percent rise instead of degrees"),
                _SCALE, _EDGES]),
    Command("aspect", "aspect", "Aspect", "aspect in degrees clockwise from north (gdaldem aspect)",
            _local("aspect", "Aspect") + [
                P("alg", "choice", "-alg", "gradient", _GRAD, "Horn"),
                P("trigonometric", "bool", "-trigonometric", "counter-clockwise from east instead"),
                P("zero_for_flat", "bool", "-zero_for_flat", "0 instead of nodata on flat cells"),
                _EDGES]),
    Command("hillshade", "hillshade", "Hillshade", "shaded relief (gdaldem hillshade); Byte 1..255, nodata 0",
            _local("hillshade", "Hillshade") + [
                P("alg", "choice", "-alg", "gradient", _GRAD, "Horn"),
                P("z", "number", "-z", "vertical exaggeration (default 1)"),
                _SCALE,
                P("azimuth", "number", "-az -azimuth", "light from, degrees clockwise from north (default 315)"),
                P("altitude", "number", "-alt -altitude", "light above the horizon, degrees (default 45)"),
                P("combined", "bool", "-combined", "shade darkened by the slope"),
                P("multidirectional", "bool", "-multidirectional", "lights from 225, 270, 315 and 360 degrees"),
                P("igor", "bool", "-igor", "Igor's shading: no shadows on slopes facing the light"),
                _EDGES]),
    Command("tri", "tri", "Terrain ruggedness index (TRI)", "terrain ruggedness index (gdaldem TRI)",
            _local("tri", "TRI") + [P("alg", "choice", "-alg", "Riley (default) or Wilson", ("Riley", "Wilson")),
                                    _EDGES]),
    Command("tpi", "tpi", "Topographic position index (TPI)", "topographic position index (gdaldem TPI)",
            _local("tpi", "TPI") + [_EDGES]),
    Command("roughness", "roughness", "Roughness", "roughness (gdaldem roughness)",
            _local("roughness", "Roughness") + [_EDGES]),
    Command("color-relief", "color_relief", "Color relief", "colour a DEM through a gdaldem colour file; RGB(A) Byte",
            [P("src", "raster", doc="DEM"), P("color_file", "file", doc="Colour file (gdaldem color-relief)"),
             P("dst", "raster_out", doc="Color relief"),
             P("exact_color_entry", "bool", "-exact_color_entry", "no interpolation: exact entries only"),
             P("nearest_color_entry", "bool", "-nearest_color_entry", "no interpolation: the nearest entry's colour"),
             P("alpha", "bool", "-alpha", "add an alpha band")]),
    Command("smooth", "smooth", "Smooth", "iterated 3x3 mean filter",
            _local("smooth", "Smoothed") + [P("passes", "int", "--passes", "passes of the filter (1..8, default 2)")]),
    Command("breach", "breach", "Breach depressions",
            "least-cost breaching, complete or within limits, then optional filling (Lindsay 2016, as RichDEM)",
            _local("breach", "Breached DEM") + [
                P("epsilon", "bool", "--epsilon", "cut paths and filled cells fall by one float step a cell"),
                P("mode", "choice", "--mode",
                  "complete: every path cut; selective: only paths within the limits; constrained: every path "
                  "cut, but no longer nor deeper than the limits", ("complete", "selective", "constrained"),
                  "complete"),
                P("max_length", "int", "--max-length", "selective, constrained: cells of a path at most"),
                P("max_depth", "number", "--max-depth", "selective, constrained: the deepest cut, in the DEM's units"),
                P("fill", "bool", "--fill", "then fill what the limits left (selective, constrained)")] + _BURN),
    Command("fill", "fill", "Fill depressions", "fill depressions (TauDEM pitremove)",
            [P("src", "raster", "-z", "DEM"), P("dst", "raster_out", "-fel", "Filled DEM"),
             P("epsilon", "bool", "--epsilon", "no flats: every cell drains strictly downhill"),
             P("out_type", "choice", "-ot", "output data type (default Float32)", _GDT),
             P("tmp_dir", "string", "--tmp", "folder for spilled state (default: the output's)")] + _BURN),
    Command("flowgraph", "flowgraph", "Flow graph (D8 / D-infinity)",
            "D8 and D-infinity directions, accumulation, streams, order, basins and network (TauDEM); "
            "only the products given are computed",
            [P("dem", "raster", "", "DEM (or existing directions)", optional=True),
             P("acc", "raster_out", "--acc -ad8", "Accumulation (Float64)", optional=True),
             P("streams", "raster_out", "--streams -src", "Stream cells (Byte)", optional=True),
             P("order", "raster_out", "--order -ord", "Strahler order (Byte)", optional=True),
             P("basins", "raster_out", "--basins -w -gw", "Basins (Int32)", optional=True),
             P("network", "vector_out", "--network -net", "Stream network", optional=True),
             P("dir", "raster_out", "--dir -p", "D8 directions (Byte)", optional=True),
             P("dir_in", "raster", "--dir-in -p", "Existing D8 directions instead of a DEM", optional=True),
             P("dir_encoding", "choice", "--dir-encoding", "direction codes", ("taudem", "esri", "grass")),
             P("filled", "bool", "--filled", "the DEM is already depression-free"),
             P("filled_in", "raster", "--filled-in -fel", "Elevations for the network's drops", optional=True),
             P("slope", "raster_out", "--slope -sd8", "D8 slope, drop / distance (Float32)", optional=True),
             P("weights", "raster", "--weights -wg", "Weight per cell instead of 1", optional=True),
             P("units", "choice", "--units", "contributing cells or area in map units", ("cells", "area")),
             P("no_edge_check", "bool", "--no-edge-check -nc", "keep cells whose area may reach off the DEM"),
             P("acc_type", "choice", "--acc-type", "accumulation type (default Float64)", ("Float32", "Float64")),
             P("threshold", "number", "--threshold -thresh", "stream cells: accumulation >= this (default 100)"),
             P("basins_by", "choice", "--basins-by", "a basin per stream link, edge cell or outlet",
               ("links", "edges", "outlets")),
             P("outlets", "vector", "--outlets -o", "Outlet points", optional=True),
             P("snap", "int", "--snap -md", "move outlets down the flow path at most N cells (default 50)"),
             P("network_format", "string", "-nf", "OGR driver of the network (default: by extension)"),
             P("basin_stats", "file_out", "--basin-stats", "Basin statistics (CSV)", optional=True),
             P("method", "choice", "--method",
               "d8, dinf, or multiple flow directions quinn, holmgren, freeman, or rho8 (--acc alone; default: dinf "
               "when only its products are asked)", ("d8", "dinf", "quinn", "holmgren", "freeman", "rho8")),
             P("ang", "raster_out", "--ang -ang", "D-infinity flow angle (Float32)", optional=True),
             P("slp", "raster_out", "--slp -slp", "D-infinity slope (Float32)", optional=True),
             P("sca", "raster_out", "--sca -sca", "Specific catchment area (Float32)", optional=True),
             P("twi", "raster_out", "--twi -twi", "Topographic wetness index (Float32)", optional=True),
             P("moved_outlets", "vector_out", "--moved-outlets -om", "Moved outlets (points: id, Dist_moved)",
               optional=True),
             P("snap_distance", "number", "--snap-distance",
               "instead: move outlets to the largest accumulation within this distance (map units)"),
             P("id_field", "string", "--id-field", "label basins by this integer field of the outlets"),
             P("outlet_table", "file_out", "--outlet-table -id", "Outlet table (id iddown)", optional=True),
             P("hand", "raster_out", "--hand -dd", "Height above nearest drainage (Float32)", optional=True),
             P("d8_dist", "raster_out", "--d8-dist -dist", "D8 distance to the streams (Float32)", optional=True),
             P("plen", "raster_out", "--plen -plen", "Longest upslope path length (Float32)", optional=True),
             P("tlen", "raster_out", "--tlen -tlen", "Total upslope path length (Float32)", optional=True),
             P("gord", "raster_out", "--gord -gord", "Grid Strahler order (Int16)", optional=True),
             P("holmgren_x", "number", "--holmgren-x", "Holmgren's exponent, 1 to 100 (default 4)"),
             P("freeman_p", "number", "--freeman-p", "Freeman's exponent, above 0 to 100 (default 1.1)"),
             P("tree", "file_out", "--tree -tree", "Link tree (TauDEM streamnet's tree.txt)", optional=True),
             P("coord", "file_out", "--coord -coord", "Link points (TauDEM streamnet's coord.txt)", optional=True),
             P("streams_in", "raster", "--streams-in", "Stream cells given (>= 1) instead of the threshold",
               optional=True),
             P("acc_in", "raster", "--acc-in", "Accumulation given, with the stream cells given", optional=True)]
            + _BURN + [P("ang_in", "raster", "--ang-in", "Existing D-infinity angles instead of a DEM (--sca alone)",
                         optional=True),
                       P("slp_in", "raster", "--slp-in", "Existing D-infinity slope instead of a DEM (--twi alone)",
                         optional=True),
                       P("sca_in", "raster", "--sca-in", "Existing specific catchment area with --slp-in (--twi alone)",
                         optional=True),
                       P("seed", "int", "--seed", "Rho8's draws: a hash of (seed, cell, neighbour) (default 1)"),
                       P("spi", "raster_out", "--spi", "Stream power index sca x slp (D-infinity; SAGA's)",
                         optional=True)]),
    Command("interpolate", "interpolate", "Interpolate points (gdal_grid)", "scattered points to a grid (gdal_grid)",
            [P("src", "vector", "", "Points"), P("dst", "raster_out", "", "Grid"),
             P("algorithm", "string", "-a", "gdal_grid's -a, e.g. invdist:power=2 (default invdist)"),
             P("zfield", "string", "-zfield", "the value's attribute (default: the geometry's Z)"),
             P("z_increase", "number", "-z_increase", "value = (z + increase) * multiply"),
             P("z_multiply", "number", "-z_multiply", "value = (z + increase) * multiply"),
             P("layers", "strings", "-l", "layers of the points' source"),
             P("where", "string", "-where", "attribute filter"),
             P("sql", "string", "-sql", "SQL selecting the points"),
             P("spat", "numbers:4", "-spat", "keep points in XMIN YMIN XMAX YMAX"),
             P("clipsrc", "string", "-clipsrc", "keep points inside: WKT, a file or spat_extent"),
             P("txe", "numbers:2", "-txe", "output XMIN XMAX (default: the points')"),
             P("tye", "numbers:2", "-tye", "output YMIN YMAX (default: the points')"),
             P("outsize", "numbers:2", "-outsize", "output COLS ROWS (default 256 256)"),
             P("tr", "numbers:2", "-tr", "output XRES YRES"),
             P("out_type", "choice", "-ot", "output type (default Float64)", _GDT),
             P("a_srs", "string", "-a_srs", "output CRS (default: the points' layer's)"),
             P("open_options", "strings", "-oo", "open options NAME=VALUE of the points' driver"),
             P("xyz", "bool", "--xyz", "read the points as \"x y z\" text"),
             P("tmp_dir", "string", "--tmp", "folder of the points' index on disk")]),
    Command("fill-voids", "fill_voids", "Fill voids (gdal_fillnodata)",
            "nodata cells filled by inverse distance (interpolate --fill-voids)",
            _local("fill-voids", "Filled") + [
                P("max_distance", "number", "-md", "cells searched (default 100)"),
                P("smoothing_iterations", "int", "-si", "smoothing passes (default 0)")],
            ("interpolate", "--fill-voids")),
]

# The options every function takes (**run): the program's common options that
# make sense in one call. The output's format comes from its file name in QGIS.
COMMON = [
    P("threads", "int", "--threads", "threads (default: all cores)"),
    P("tile_size", "int", "--tile-size", "cells per tile side (default 512)"),
    P("mem", "int", "--mem", "bytes a run may keep in memory (default: 3/4 of what it may have; "
      "fill: 1.2x its DEM, flowgraph: 1.3x a stage, where that holds half of its state)"),
    P("band", "int", "-b --band", "input band (default 1)"),
    P("creation_options", "strings", "-co --co", "creation options NAME=VALUE of the output's driver"),
    P("stats", "bool", "--stats", "write the output's statistics into it"),
    P("ft", "choice", "--ft", "fault tolerance: every tile computed twice and checked, or tracked and replayed",
      ("off", "dual", "replay")),
    P("device", "choice", "--device", "where local kernels run", ("cpu", "auto", "gpu")),
]

COMMANDS = [c if c.cli else c._replace(cli=(c.name,)) for c in COMMANDS]
BY_NAME = {c.name: c for c in COMMANDS}

# What the commands take and the table leaves out, and why: the QGIS dialog
# and the Python functions offer neither (tests/test_options.py: every flag
# of `terrafort CMD --help` is a row above, a common row or named here).
_ENGINE = "the AAP engine's tuning, for its benchmarks and tests, not for analysis"
NOT_EXPOSED = {
    "fill": dict.fromkeys(("--schedule", "--staleness", "--ds-max", "--l-bottom", "--l-up", "--straggler-ratio",
                           "--z-cache-mb", "--cache-mb", "--aap-stats"), _ENGINE) |
    {"--epsilon-step": "the increment of --epsilon: one float ulp is what TauDEM-like output needs"},
    "flowgraph": dict.fromkeys(("--schedule", "--staleness", "--ds-max", "--l-bottom", "--l-up", "--straggler-ratio",
                                "--cache-mb", "--z-cache-mb", "--aap-stats"), _ENGINE) |
    {"--tmp": "the spill folder: the function takes no tmp_dir yet (the output's folder is used)",
     "-m": "TauDEM dinfdistdown's '-m ave v', accepted on the command line for its form: hand is that, nothing to choose",
     "-z": "TauDEM's spelling of the DEM, which is src"},
    "interpolate": dict.fromkeys(("-clipsrclayer", "-clipsrcwhere", "-clipsrcsql"),
                                 "filters of a -clipsrc file's features: the function takes no such keywords yet"),
    "common": {
        "-of": "the format comes from the output's file name", "--format": "as -of",
        "--config": "GDAL's configuration: QGIS's own settings (osgeo.gdal.SetConfigOption from Python)",
        "-q": "progress goes to QGIS's feedback", "--quiet": "as -q",
        "--progress": "as -q", "-progress": "as -q", "-h": "help", "--help": "help",
        "--hist-buckets": "statistics' side outputs (--stats is exposed)", "--percentiles": "as --hist-buckets",
        "--stats-json": "as --hist-buckets", "--coll-timeout": "mpirun only",
        "--coll-arity": "mpirun only",
        "--ft-tolerance": "fault-tolerance tuning (--ft is exposed)", "--ft-error-rate": "as --ft-tolerance",
        "--ft-profile": "as --ft-tolerance", "--ft-mode": "as --ft-tolerance", "--ft-report": "as --ft-tolerance",
        "--ft-timeout": "as --ft-tolerance", "--ft-max-errors": "as --ft-tolerance", "--ft-check": "as --ft-tolerance",
        "--replay-on": "as --ft-tolerance", "--rank-timeout": "mpirun only", "--inject": "fault injection, for tests",
        "--options": "the option table itself, which this module is checked against",
    },
}
