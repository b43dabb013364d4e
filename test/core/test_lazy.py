"""Lazy package exports: a name is imported from its module on first use, and only then.

The light paths are checked in fresh processes (an interpreter's modules are shared by every
test of a worker): the configuration's checks, the flooding publisher's module and
``itasc-bench``'s argument checks import no compiled kernel (numba).
"""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from itasc_ros.core.lazy import lazy_exports


def _package(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    sys.modules[name] = module
    return module


def test_a_name_is_imported_on_first_use_and_kept() -> None:
    pkg = _package("lazy_probe_pkg")
    try:
        getattr_ = lazy_exports("lazy_probe_pkg", {"json": ["dumps"], "math": ["pi", "tau"]})
        pkg.__getattr__ = getattr_  # type: ignore[method-assign]
        assert getattr_("pi") == pytest.approx(3.141592653589793)
        assert pkg.__dict__["pi"] == getattr_("pi")  # stored: the next read is plain
        assert getattr_("dumps")([1]) == "[1]"
        with pytest.raises(AttributeError, match="'lazy_probe_pkg' has no attribute 'nope'"):
            getattr_("nope")
    finally:
        del sys.modules["lazy_probe_pkg"]


def test_core_subpackages_resolve_their_names_lazily() -> None:
    from itasc_ros.core import constraints, solve

    assert "copy_pose" in constraints.REGISTRY and "collision" in constraints.REGISTRY
    assert solve.SOLVERS == ("dls", "sdls")


LIGHT = [
    "import itasc_ros.core.control.settings",
    "import itasc_ros.core.solve.solvers",
    "import itasc_ros.core.paths",
    "import itasc_bench.loop.flood",
    "import itasc_bench.arguments, itasc_bench.cli",
    "from itasc_ros.core import ItascError, UnknownNameError",
    "from itasc_ros.tools.demo import main",  # itasc-demo's entry point, before its parse
]


@pytest.mark.parametrize("statement", LIGHT)
def test_light_paths_import_no_compiled_kernel(statement: str) -> None:
    code = f"{statement}\nimport sys\nprint(sorted(m for m in sys.modules if m == 'numba'))"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]", statement
