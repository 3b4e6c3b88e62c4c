"""Where the tests find the program they compare with and the test DEMs: the
build tree's by default (CTest passes them: cli_tests.cmake's python_package)."""
import os
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


@pytest.fixture(scope="session")
def tf():
    return os.environ.get("TERRAFORT_BIN", os.path.join(ROOT, "build", "tools", "terrafort"))


@pytest.fixture(scope="session")
def data():
    return os.environ.get("TERRAFORT_TESTDATA", os.path.join(ROOT, "build", "testdata"))


@pytest.fixture
def cli(tf, tmp_path):
    """Runs `terrafort ARGS -q` and returns the output path (the last argument)."""
    def run(*args):
        subprocess.run([tf, *map(str, args), "-q"], check=True, cwd=tmp_path)
        return os.path.join(tmp_path, str(args[-1]))
    return run
