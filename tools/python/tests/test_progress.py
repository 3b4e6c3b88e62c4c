"""The run options progress and warning (what the QGIS provider hands its
feedback to): progress sees fractions up to 1 with the same bytes as
without it; a false return cancels the run (TerrafortError, the command's
exit code for an interrupted run, no output); an exception in the callable
cancels too; warning hears what the command warns about."""
import filecmp
import os

import pytest

import terrafort


def test_progress_reaches_one_and_changes_nothing(cli, data, tmp_path):
    dem = os.path.join(data, "demo.tif")
    ref = cli("fill", dem, "cli.tif")
    seen = []
    terrafort.fill(dem, str(tmp_path / "py.tif"), progress=lambda f, m: seen.append(f) or True)
    assert seen and max(seen) == pytest.approx(1.0) and all(0 <= f <= 1 for f in seen)
    assert filecmp.cmp(ref, str(tmp_path / "py.tif"), shallow=False)


@pytest.mark.parametrize("stop", [lambda f, m: False, lambda f, m: 1 / 0], ids=["false", "raises"])
def test_progress_cancels(stop, data, tmp_path):
    with pytest.raises(terrafort.TerrafortError) as e:
        terrafort.slope(os.path.join(data, "demo.tif"), str(tmp_path / "s.tif"), progress=stop)
    assert "interrupted" in str(e.value) and e.value.exit_code != 0
    assert not os.listdir(tmp_path)


def test_warning_hears_an_unknown_creation_option(cli, data, tmp_path):
    dem = os.path.join(data, "demo.tif")
    heard = []
    terrafort.slope(dem, str(tmp_path / "s.tif"), creation_options=["NOT_AN_OPTION=1"], warning=heard.append)
    assert heard and any("NOT_AN_OPTION" in w for w in heard)
