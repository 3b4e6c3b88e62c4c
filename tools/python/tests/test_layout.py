"""The ctypes mirrors of terrain.h's structs (terrafort/_lib.py) against the
header itself: a C program compiled here prints every mirrored field's
offset and every struct's size; a field missed, added, reordered or of
another type in either shows as a difference."""
import os
import subprocess

import pytest

from terrafort import _lib

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def test_structs_match_terrain_h(tmp_path):
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "terrain.h"', "int main(void) {"]
    want = []
    for cname, cls in _lib.STRUCTS.items():
        lines.append('  printf("%%s %%zu\\n", "%s", sizeof(%s));' % (cname, cname))
        want.append("%s %d" % (cname, __import__("ctypes").sizeof(cls)))
        for field, _ in cls._fields_:
            lines.append('  printf("%%s.%%s %%zu\\n", "%s", "%s", offsetof(%s, %s));' % (cname, field, cname, field))
            want.append("%s.%s %d" % (cname, field, getattr(cls, field).offset))
    lines += ["  return 0;", "}"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    subprocess.run(["cc", "-I", os.path.join(ROOT, "libterrain", "include"), "-o", str(exe), str(src)], check=True)
    got = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")[:-1]
    assert got == want


def test_version_is_the_headers():
    import re
    import terrafort
    header = open(os.path.join(ROOT, "libterrain", "include", "terrain.h")).read()
    assert terrafort.__version__ == re.search(r'#define TR_VERSION "([^"]+)"', header).group(1)


@pytest.mark.parametrize("bad", ["/nonexistent/libterrafort.so.0"])
def test_library_not_found_is_an_import_error(bad):
    env = dict(os.environ, TERRAFORT_LIBRARY=bad, PYTHONPATH=os.path.join(ROOT, "tools", "python"))
    r = subprocess.run(["/usr/bin/python3", "-c", "import terrafort"], env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "libterrafort" in r.stderr
