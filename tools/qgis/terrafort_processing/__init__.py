"""terrafort's QGIS plugin: registers the Processing provider "terrafort"
(provider.py) when QGIS initialises Processing. Installed as a folder in
the profile's python/plugins, or found through QGIS_PLUGINPATH (README,
QGIS)."""


def classFactory(iface):  # noqa: N802 (QGIS's name)
    from .plugin import TerrafortPlugin
    return TerrafortPlugin(iface)
