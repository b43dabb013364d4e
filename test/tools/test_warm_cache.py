"""The kernels' cache warmed ahead of the processes that use them (itasc_ros.tools.warm_cache)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from itasc_ros.tools import warm_cache

REPO = Path(__file__).resolve().parents[2]


def test_each_parameters_file_gets_a_controller_and_its_ticks(tmp_path: Path) -> None:
    """A repository's layout: config/, and urdf/ beside it (two_pandas.yaml's robots' files)."""
    (tmp_path / "config").mkdir()
    for name in ("panda.yaml", "panda_mobile.yaml", "two_pandas.yaml"):
        shutil.copy(REPO / "config" / name, tmp_path / "config" / name)
    (tmp_path / "urdf").mkdir()
    shutil.copy(REPO / "urdf" / "panda.urdf", tmp_path / "urdf" / "panda.urdf")
    lines = warm_cache.warm_control(tmp_path / "config")
    assert [line.split(":")[0] for line in lines] == sorted(
        ["panda.yaml", "panda_mobile.yaml", "two_pandas.yaml"]
    )
    assert not [line for line in lines if "skipped" in line], lines


def test_a_file_whose_robot_cannot_be_built_is_reported_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text(
        "itasc_node:\n  ros__parameters:\n    robots: [a]\n    robots.a.urdf_file: no/such.urdf\n"
    )
    lines = warm_cache.warm_control(tmp_path)
    assert len(lines) == 1 and lines[0].startswith("broken.yaml: skipped ("), lines


def test_the_ik_paths_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert warm_cache.main(["--part", "ik"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("warm_cache: ik: ") and out.rstrip().endswith(" s"), out
