"""The compiled kernels' cache: one directory per version of the core's sources."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from itasc_ros.core import compiled_cache as cc


def _core(tmp_path: Path) -> Path:
    core = tmp_path / "core"
    (core / "solve").mkdir(parents=True)
    (core / "solve" / "kernels.py").write_text("RCOND = 1e-12\n")
    (core / "constants.py").write_text("HUGE = 1e150\n")
    return core


def test_a_change_to_any_core_file_is_a_new_version(tmp_path: Path) -> None:
    """A callee's module or a constant's module changed: its callers compile again."""
    core = _core(tmp_path)
    v0 = cc.versioned_dir(tmp_path / "cache", core)
    assert v0 == cc.versioned_dir(tmp_path / "cache", core)  # nothing changed
    (core / "solve" / "kernels.py").write_text("RCOND = 1e-9\n")  # the same size, a new time
    os.utime(core / "solve" / "kernels.py", ns=(1, 1))
    v1 = cc.versioned_dir(tmp_path / "cache", core)
    assert v1 != v0 and v1.parent == v0.parent  # the same installation, another version
    other = _core(tmp_path / "other")  # the same sources elsewhere: another installation
    assert cc.versioned_dir(tmp_path / "cache", other).parent != v0.parent


def test_older_versions_of_an_installation_are_removed(tmp_path: Path) -> None:
    old, new = tmp_path / "install" / "old", tmp_path / "install" / "new"
    (old / "sub").mkdir(parents=True)
    (old / "sub" / "kernel.nbc").write_bytes(b"stale")
    new.mkdir()
    cc.remove_older_versions(new)
    assert new.is_dir() and not old.exists()


def test_the_caches_of_deleted_installations_are_removed_and_nothing_else(tmp_path: Path) -> None:
    base, live = tmp_path / "cache", _core(tmp_path / "live")
    for name, core in (("gone", tmp_path / "deleted" / "core"), ("live", live)):
        (base / name / "v1").mkdir(parents=True)
        (base / name / cc.SOURCE_MARK).write_text(str(core))
    (base / "foreign" / "v1").mkdir(parents=True)  # not an installation's: no mark
    cc.remove_orphans(base)
    assert sorted(p.name for p in base.iterdir()) == ["foreign", "live"]


def test_the_base_is_the_users_and_a_child_does_not_nest_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("NUMBA_CACHE_DIR", cc.CHOSEN_DIR, cc.CHOSEN_BASE):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    chosen = cc.use_versioned_cache()
    assert chosen == cc.versioned_dir(tmp_path / "xdg" / "itasc_ros" / "numba")
    assert (chosen.parent / cc.SOURCE_MARK).read_text() == str(cc.CORE)
    assert cc.use_versioned_cache() == chosen  # a child process: inherited, not nested
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    assert cc.use_versioned_cache() == cc.versioned_dir(tmp_path / "mine")
    assert os.environ["NUMBA_CACHE_DIR"] == str(cc.versioned_dir(tmp_path / "mine"))


def test_every_kernel_of_a_process_caches_in_the_chosen_directory(tmp_path: Path) -> None:
    """In a fresh process: numba's cache directory once the core and a kernel are imported."""
    code = (
        "import json, os\n"
        "import itasc_ros.core.solve.solver as s\n"
        "import numba.core.config as c\n"
        "print(json.dumps([c.CACHE_DIR, os.environ['NUMBA_CACHE_DIR'],"
        " s.solve_prioritized._cache._cache_path]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in (cc.CHOSEN_DIR, cc.CHOSEN_BASE)}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "base")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    config_dir, env_dir, kernel_path = json.loads(out.stdout.strip().splitlines()[-1])
    expected = str(cc.versioned_dir(tmp_path / "base"))
    assert config_dir == env_dir == expected
    assert kernel_path.startswith(expected)
