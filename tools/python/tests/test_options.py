"""terrafort.options (the parameters the QGIS provider builds its dialogs
from) against its two neighbours: each function's signature (names, order,
defaults) and each command's option table, as `terrafort CMD --options`
prints the one the command parses with (every flag a row names is one the
command knows; every flag the command knows is a row, a common row, or
named in NOT_EXPOSED with its reason; a row taking a file takes the role the
table gives it). A flag added to one side only fails here."""
import inspect
import re
import subprocess

import pytest

import terrafort
from terrafort import options

FLAG = re.compile(r"(?:^|[][ ,|(])(-{1,2}[A-Za-z][-A-Za-z0-9_]*)", re.M)


def _table(tf, words):
    """The command's option table: {spelling: (kind, role, nvalues, group)}."""
    text = subprocess.run([tf, *words, "--options"], capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in text.splitlines():
        if line.startswith("#"):  # what batch reads besides the rows: #set, #form
            continue
        names, kind, role, nvalues, _choices, _range, _default, group = line.split("\t")
        for n in names.split():
            assert n not in rows, ("spelled twice", n)
            rows[n] = (kind, role, int(nvalues), group)
    return rows


def _groups(tf, words):
    table = _table(tf, words)
    own = {n for n, r in table.items() if r[3] != "common"}
    common = {n for n, r in table.items() if r[3] == "common"}
    return own, common


def test_table_is_what_help_names(tf):
    """Every spelling --help names is one of the table's, and every spelling of a
    row --help shows is in it (the help is printed from the table)."""
    for c in sorted({c.cli[0] for c in options.COMMANDS}):
        table = _table(tf, [c])
        text = subprocess.run([tf, c, "--help"], capture_output=True, text=True, check=True).stdout
        text = text.replace("gdalinfo -hist", "gdalinfo")  # prose, not a flag
        named = set(FLAG.findall(text))
        assert named - set(table) == set(), c


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
def test_rows_and_table_name_the_same_flags(cli, tf):
    table = _table(tf, [cli])
    own, common = _groups(tf, [cli])
    rows = set()
    for c in options.COMMANDS:
        if c.cli[0] == cli:
            rows |= set(c.cli[1:])
            for r in c.params:
                assert set(r.flags) <= own, (c.name, r.name, set(r.flags) - own)
                rows |= set(r.flags)
                # a file the function writes is one the table writes; a file it reads, one the table reads
                roles = {table[f][1] for f in r.flags}
                if r.kind.endswith("_out"):
                    assert roles <= {"out", "out-if-dem"}, (c.name, r.name, roles)
                elif r.kind in ("raster", "vector", "file"):
                    assert roles <= {"in", "out-if-dem"}, (c.name, r.name, roles)
    common_rows = {f for r in options.COMMON for f in r.flags}
    skipped = set(options.NOT_EXPOSED.get(cli, {})) | set(options.NOT_EXPOSED["common"])
    assert own - rows - common_rows - skipped == set()
    assert common_rows <= common
    assert common - common_rows - set(options.NOT_EXPOSED["common"]) == set()
