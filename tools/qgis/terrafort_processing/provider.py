"""The Processing provider "terrafort": one algorithm per row of
terrafort.options.COMMANDS (algorithm.py), so a command, a parameter or a
choice added to the Python package appears here without an edit.

The package is imported from where Python finds it (Debian's dist-packages
after `cmake --install`), else from beside this plugin: the source tree's
tools/python (this file is tools/qgis/terrafort_processing/provider.py), or
the installed tree's lib/python3*/dist-packages (this file is then under
PREFIX/share/terrafort/qgis/). Without it the provider loads no algorithm
and says why in QGIS's message log."""
import glob
import os
import sys

from qgis.core import Qgis, QgsMessageLog, QgsProcessingProvider


def import_terrafort():
    """The terrafort package, or raises ImportError naming where it looked."""
    try:
        import terrafort
        return terrafort
    except ImportError as first:
        here = os.path.dirname(os.path.abspath(__file__))
        tried = [os.path.normpath(os.path.join(here, "..", "..", "python"))]
        prefix = os.path.normpath(os.path.join(here, "..", "..", "..", ".."))
        tried += sorted(glob.glob(os.path.join(prefix, "lib", "python3*", "dist-packages")))
        for d in tried:
            if os.path.isfile(os.path.join(d, "terrafort", "__init__.py")):
                sys.path.append(d)
                import terrafort
                return terrafort
        raise ImportError("%s (also looked in %s)" % (first, ", ".join(tried))) from None


class TerrafortProvider(QgsProcessingProvider):
    def __init__(self):
        super().__init__()
        self.error = None

    def id(self):  # noqa: A003
        return "terrafort"

    def name(self):
        return "terrafort"

    def longName(self):  # noqa: N802
        try:
            return "terrafort %s" % import_terrafort().__version__
        except ImportError:
            return "terrafort"

    def loadAlgorithms(self):  # noqa: N802
        try:
            terrafort = import_terrafort()
        except ImportError as e:
            self.error = str(e)
            QgsMessageLog.logMessage("terrafort: no algorithms: %s" % e, "Processing", Qgis.Critical)
            return
        from .algorithm import TerrafortAlgorithm
        for cmd in terrafort.options.COMMANDS:
            self.addAlgorithm(TerrafortAlgorithm(cmd))
