"""QGIS started once, headless (QT_QPA_PLATFORM=offscreen, no GUI), with
Processing initialised and the terrafort plugin started the way QGIS starts
it (qgis.utils, from the plugin folder: tools/qgis); the program and the
test DEMs as tools/python/tests/conftest.py finds them (CTest passes them:
cli_tests.cmake's qgis_provider)."""
import os
import subprocess
import sys

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
try:
    from qgis.core import QgsApplication
except ImportError as e:  # the one reason to skip: no QGIS here (scripts/setup installs it)
    pytest.skip("QGIS's Python API cannot be imported (%s): apt-get install qgis python3-qgis" % e,
                allow_module_level=True)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PLUGINS = os.path.join(ROOT, "tools", "qgis")


@pytest.fixture(scope="session")
def qgis_app(tmp_path_factory):
    QgsApplication.setPrefixPath("/usr", True)
    # settings in a fresh folder, not the user's profile
    app = QgsApplication([], False, str(tmp_path_factory.mktemp("qgis-config")))
    app.initQgis()
    sys.path.append(os.path.join(QgsApplication.pkgDataPath(), "python", "plugins"))
    from processing.core.Processing import Processing
    Processing.initialize()
    import qgis.utils
    qgis.utils.plugin_paths.insert(0, PLUGINS)
    sys.path.insert(0, PLUGINS)
    qgis.utils.updateAvailablePlugins()
    assert qgis.utils.loadPlugin("terrafort_processing")
    assert qgis.utils.startProcessingPlugin("terrafort_processing")
    yield app


@pytest.fixture(scope="session")
def tf():
    return os.environ.get("TERRAFORT_BIN", os.path.join(ROOT, "build", "tools", "terrafort"))


@pytest.fixture(scope="session")
def data():
    return os.environ.get("TERRAFORT_TESTDATA", os.path.join(ROOT, "build", "testdata"))


@pytest.fixture
def cli(tf, tmp_path):
    """Runs `terrafort ARGS -q` in tmp_path/cli; returns the CompletedProcess."""
    def run(*args, check=True):
        d = tmp_path / "cli"
        d.mkdir(exist_ok=True)
        return subprocess.run([tf, *map(str, args), "-q"], check=check, cwd=d, capture_output=True, text=True)
    return run
