"""The plugin object QGIS makes through classFactory: it adds the provider
to the Processing registry (initProcessing, also called headless by
qgis_process) and takes it away on unload."""
from qgis.core import QgsApplication

from .provider import TerrafortProvider


class TerrafortPlugin:
    def __init__(self, iface=None):
        self.iface = iface
        self.provider = None

    def initProcessing(self):  # noqa: N802
        self.provider = TerrafortProvider()
        QgsApplication.processingRegistry().addProvider(self.provider)

    def initGui(self):  # noqa: N802
        self.initProcessing()

    def unload(self):
        if self.provider is not None:
            QgsApplication.processingRegistry().removeProvider(self.provider)
            self.provider = None
