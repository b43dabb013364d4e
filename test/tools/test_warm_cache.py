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


def test_the_ik_paths_and_the_public_solves_run(capsys: pytest.CaptureFixture[str]) -> None:
    from itasc_ros.core.ik import _frames_kernels, _ik_kernels, _pose_kernel
    from itasc_ros.core.solve import solver

    assert warm_cache.main(["--part", "ik"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[1].strip() for line in lines] == ["ik", "solves", "exit"], lines
    assert all(line.endswith(" s") for line in lines), lines
    # each path's kernel is loaded (or compiled) in this process: the chain's loop, the
    # constraint sets' compiled attempts and steps, the public solves
    for kernel in (
        _pose_kernel.ik_solve,
        _frames_kernels.frames_newton,
        _ik_kernels.bounded_step,
        solver.solve_limited,
        solver.solve_prioritized,
    ):
        assert kernel.signatures, kernel


def test_a_node_s_kernels_are_ready_after_warm_node() -> None:
    """What itasc-demo runs before it starts its node: the tick's and the IK worker's kernels."""
    from itasc_ros.core import KinematicTree
    from itasc_ros.core.control import _command_kernels
    from itasc_ros.core.ik import _pose_kernel
    from itasc_ros.core.solve import workspace
    from itasc_ros.params import config_from_parameters, read_params_file
    from itasc_ros.tools.resources import robot_urdf

    config = config_from_parameters(read_params_file(REPO / "config" / "panda.yaml"))
    tree = KinematicTree.from_urdf_file(robot_urdf("panda"))
    spent = warm_cache.warm_node(tree, config)
    assert spent >= 0.0
    assert workspace.scene_tick.signatures  # compiled or loaded in this process
    assert _command_kernels.solve_command.signatures  # the active tick's command
    compiled = [
        f for f in vars(_pose_kernel).values() if getattr(f, "signatures", None) is not None
    ]
    assert compiled and any(f.signatures for f in compiled)
