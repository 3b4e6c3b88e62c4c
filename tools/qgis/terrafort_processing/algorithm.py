"""One Processing algorithm for one terrafort command, built from the
command's row in terrafort.options: each parameter's kind picks its QGIS
parameter (a raster input a raster layer, an output a destination that QGIS
loads into the project, a choice an enum, ...), and processAlgorithm turns
the values back into the function's keywords and calls the library through
the Python package, so the files are the command's bytes.

Parameter names are the keywords upper-cased (src and dst: INPUT and
OUTPUT, as QGIS's own algorithms name them); enums take the index of the
choice, as every QGIS 3.22 enum does. The run's progress and warnings go to
QgsProcessingFeedback, cancelling it cancels the run, and a failure is a
QgsProcessingException with the library's one-line message. The feedback
also shows the `terrafort` command line that writes the same files."""
import re
import shlex

from qgis.core import (QgsProcessing, QgsProcessingAlgorithm, QgsProcessingException, QgsProcessingParameterBoolean,
                       QgsProcessingParameterDefinition, QgsProcessingParameterEnum,
                       QgsProcessingParameterFeatureSource, QgsProcessingParameterFile,
                       QgsProcessingParameterFileDestination, QgsProcessingParameterNumber,
                       QgsProcessingParameterRasterDestination, QgsProcessingParameterRasterLayer,
                       QgsProcessingParameterString, QgsProcessingParameterVectorDestination)

from .provider import import_terrafort

_GROUPS = {"fill": "Hydrology", "flowgraph": "Hydrology", "interpolate": "Interpolation",
           "fill-voids": "Interpolation"}
_OUTPUTS = ("raster_out", "vector_out", "file_out")


def qgis_name(param):
    return {"src": "INPUT", "dst": "OUTPUT"}.get(param.name, param.name.upper())


def _definition(p, advanced=False):
    """The QGIS parameter for a row of terrafort.options."""
    name, doc, opt = qgis_name(p), p.doc[:1].upper() + p.doc[1:], p.optional
    if p.flags and p.kind not in _OUTPUTS + ("raster", "vector", "file"):
        doc = "%s [%s]" % (doc, p.flags[0])
    k = p.kind
    if k == "raster":
        d = QgsProcessingParameterRasterLayer(name, doc, optional=opt)
    elif k == "vector":
        d = QgsProcessingParameterFeatureSource(name, doc, [QgsProcessing.TypeVectorPoint], optional=opt)
    elif k == "file":
        d = QgsProcessingParameterFile(name, doc, optional=opt)
    elif k == "raster_out":
        d = QgsProcessingParameterRasterDestination(name, doc, optional=opt, createByDefault=not opt)
    elif k == "vector_out":
        d = QgsProcessingParameterVectorDestination(name, doc, QgsProcessing.TypeVectorLine, optional=opt,
                                                    createByDefault=not opt)
    elif k == "file_out":
        d = QgsProcessingParameterFileDestination(name, doc, "CSV files (*.csv)", optional=opt,
                                                  createByDefault=not opt)
    elif k == "bool":
        d = QgsProcessingParameterBoolean(name, doc, defaultValue=bool(p.default), optional=True)
    elif k in ("int", "number"):
        t = QgsProcessingParameterNumber.Integer if k == "int" else QgsProcessingParameterNumber.Double
        d = QgsProcessingParameterNumber(name, doc, t, defaultValue=p.default, optional=True)
    elif k == "choice":
        default = p.choices.index(p.default) if p.default in p.choices else None
        d = QgsProcessingParameterEnum(name, doc, list(p.choices), defaultValue=default, optional=True)
    elif k in ("string", "strings") or k.startswith("numbers:"):
        if k == "strings":
            doc += " (separated by |)"
        elif k != "string":
            doc += " (%s numbers)" % k.split(":")[1]
        d = QgsProcessingParameterString(name, doc, defaultValue=p.default, optional=True)
    else:
        raise ValueError("terrafort.options: unknown kind %r of %s" % (k, p.name))
    if advanced:
        d.setFlags(d.flags() | QgsProcessingParameterDefinition.FlagAdvanced)
    return d


class TerrafortAlgorithm(QgsProcessingAlgorithm):
    def __init__(self, command):
        super().__init__()
        self.command = command

    def createInstance(self):  # noqa: N802
        return TerrafortAlgorithm(self.command)

    def name(self):
        return self.command.name.replace("-", "")

    def displayName(self):  # noqa: N802
        return self.command.title

    def group(self):
        return _GROUPS.get(self.command.name, "Terrain")

    def groupId(self):  # noqa: N802
        return self.group().lower()

    def shortHelpString(self):  # noqa: N802
        rows = ["<b>%s</b>: %s" % (qgis_name(p), p.doc) for p in self.command.params]
        return "%s.<br>terrafort %s; see man terrafort-%s.<br><br>%s" % (
            self.command.summary, " ".join(self.command.cli), self.command.cli[0], "<br>".join(rows))

    def initAlgorithm(self, config=None):  # noqa: N802
        terrafort = import_terrafort()
        for p in self.command.params:
            self.addParameter(_definition(p))
        for p in terrafort.options.COMMON:
            self.addParameter(_definition(p, advanced=True))

    def _value(self, p, parameters, context):
        """The keyword's value for row p, or None where the parameter is unset."""
        name = qgis_name(p)
        raw = parameters.get(name)
        k = p.kind
        if k == "raster":
            if raw is None or raw == "":
                return None
            layer = self.parameterAsRasterLayer(parameters, name, context)
            # a path QGIS cannot open goes to the library as it is, for its message
            return layer.source() if layer is not None else self.parameterAsString(parameters, name, context)
        if k == "vector":
            if raw is None or raw == "":
                return None
            path, layer = self.parameterAsCompatibleSourceLayerPathAndLayerName(
                parameters, name, context, ["gpkg", "shp", "geojson", "csv", "xyz"])
            return (path, layer)
        if k == "file":
            return self.parameterAsFile(parameters, name, context) or None
        if k in _OUTPUTS:
            if raw is None:
                return None
            out = self.parameterAsOutputLayer(parameters, name, context) if k != "file_out" else \
                self.parameterAsFileOutput(parameters, name, context)
            return out or None
        if raw is None or raw == "":
            return None
        if k == "bool":
            return self.parameterAsBool(parameters, name, context)
        if k == "int":
            return self.parameterAsInt(parameters, name, context)
        if k == "number":
            return self.parameterAsDouble(parameters, name, context)
        if k == "choice":
            return p.choices[self.parameterAsEnum(parameters, name, context)]
        if k == "strings":
            return list(raw) if isinstance(raw, (list, tuple)) else \
                [s.strip() for s in self.parameterAsString(parameters, name, context).split("|") if s.strip()]
        if k.startswith("numbers:"):
            if isinstance(raw, (list, tuple)):
                nums = [float(v) for v in raw]
            else:
                nums = [float(v) for v in re.split(r"[\s,]+", self.parameterAsString(parameters, name, context).strip())]
            if len(nums) != int(k.split(":")[1]):
                raise QgsProcessingException("%s: %s numbers expected, got %d" % (name, k.split(":")[1], len(nums)))
            return nums
        return self.parameterAsString(parameters, name, context)

    def processAlgorithm(self, parameters, context, feedback):  # noqa: N802
        terrafort = import_terrafort()
        kw, results = {}, {}
        for p in list(self.command.params) + list(terrafort.options.COMMON):
            v = self._value(p, parameters, context)
            if v is None:
                continue
            if p.kind == "vector":  # an OGR path and, in a multi-layer source, its layer
                v, layer = v
                if layer and p.name == "src" and self.command.name == "interpolate" and "layers" not in kw:
                    kw["layers"] = [layer]
                if layer and p.name == "burn" and not kw.get("burn_layer"):
                    kw["burn_layer"] = layer
            kw[p.name] = v
            if p.kind in _OUTPUTS:
                results[qgis_name(p)] = v
        feedback.pushCommandInfo(self.command_line(kw))
        fn = getattr(terrafort, self.command.function)
        args = [kw.pop(p.name, None) for p in self.command.params if not p.optional and p.kind != "bool"]

        def progress(frac, _msg):
            feedback.setProgress(100.0 * frac)
            return not feedback.isCanceled()
        try:
            fn(*args, progress=progress, warning=feedback.pushWarning, **kw)
        except (terrafort.TerrafortError, ValueError) as e:
            raise QgsProcessingException(str(e)) from None
        return results

    def command_line(self, kw):
        """The terrafort command writing the same files (keywords as processAlgorithm passes them)."""
        terrafort = import_terrafort()
        words, positional = ["terrafort", *self.command.cli], []
        for p in list(self.command.params) + list(terrafort.options.COMMON):
            v = kw.get(p.name)
            if v is None or v is False:
                continue
            if not p.flags:
                positional.append(str(v))
            elif p.kind == "bool":
                words.append(p.flags[0])
            elif p.kind == "strings":
                for s in v:
                    words += [p.flags[0], s]
            elif p.kind.startswith("numbers:"):
                words += [p.flags[0], *("%.17g" % x for x in v)]
            else:
                words += [p.flags[0], "%.17g" % v if isinstance(v, float) else str(v)]
        return " ".join(shlex.quote(w) for w in words + positional)
