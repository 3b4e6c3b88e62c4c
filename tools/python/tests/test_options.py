"""terrafort.options (the parameters the QGIS provider builds its dialogs
from) against its two neighbours: each function's signature (names, order,
defaults) and each command's --help (every flag a row names is one the
command knows; every flag the command knows is a row, a common row, or
named in NOT_EXPOSED with its reason). A flag added to one side only fails
here."""
import inspect
import re
import subprocess

import pytest

import terrafort
from terrafort import options

FLAG = re.compile(r"(?:^|[][ ,|(])(-{1,2}[A-Za-z][-A-Za-z0-9_]*)", re.M)


def _help(tf, words):
    text = subprocess.run([tf, *words, "--help"], capture_output=True, text=True, check=True).stdout
    text = text.replace("gdalinfo -hist", "gdalinfo")  # prose, not a flag
    own, _, common = text.partition("\nCommon options:")
    return set(FLAG.findall(own)), set(FLAG.findall(common))


@pytest.mark.parametrize("cmd", options.COMMANDS, ids=[c.name for c in options.COMMANDS])
def test_rows_are_the_functions_keywords(cmd):
    sig = inspect.signature(getattr(terrafort, cmd.function))
    params = [p for p in sig.parameters.values() if p.kind != p.VAR_KEYWORD]
    assert [p.name for p in params] == [r.name for r in cmd.params]
    for p, r in zip(params, cmd.params):
        assert (None if p.default is p.empty else p.default) == r.default, r.name
    assert cmd.name in terrafort.options.BY_NAME and cmd.params[0].kind in ("raster", "vector")


def test_common_rows_are_run_options():
    run = inspect.signature(terrafort._Call.run_opts).parameters
    assert all(r.name in run for r in options.COMMON)


@pytest.mark.parametrize("cli", sorted({c.cli[0] for c in options.COMMANDS}))
def test_rows_and_help_name_the_same_flags(cli, tf):
    own, common = _help(tf, [cli])
    rows = set()
    for c in options.COMMANDS:
        if c.cli[0] == cli:
            rows |= set(c.cli[1:])
            for r in c.params:
                assert set(r.flags) <= own, (c.name, r.name, set(r.flags) - own)
                rows |= set(r.flags)
    common_rows = {f for r in options.COMMON for f in r.flags}
    skipped = set(options.NOT_EXPOSED.get(cli, {})) | set(options.NOT_EXPOSED["common"])
    assert own - rows - common_rows - skipped == set()
    assert common_rows <= common
    assert common - common_rows - set(options.NOT_EXPOSED["common"]) == set()
