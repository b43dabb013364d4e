"""The package builds with colcon (ament_python) and installs its share/ files and scripts."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
COLCON = Path(sys.executable).parent / "colcon"
SCRIPTS = [
    "itasc_node",
    "itasc_sim_robot",
    "itasc-demo",
    "itasc-record",
    "itasc-replay",
    "itasc-ik",
]

#: What a copy of the source tree leaves out (venvs, builds, caches, outputs).
SOURCE_IGNORED = shutil.ignore_patterns(
    ".venv*",
    ".git",
    "build",
    "install",
    "log",
    "*.egg-info",
    "__pycache__",
    "demo_output",
    ".*cache*",
    ".hypothesis",
    "_build",
)


@pytest.fixture(scope="module")
def colcon_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not COLCON.exists():
        pytest.skip(f"colcon not installed next to {sys.executable}")
    ws = tmp_path_factory.mktemp("ws")
    src = ws / "src" / "itasc_ros"
    shutil.copytree(REPO, src, ignore=SOURCE_IGNORED)
    env_path = f"{Path(sys.executable).parent}:/usr/bin:/bin"
    proc = subprocess.run(
        [str(COLCON), "build", "--base-paths", "src"],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": env_path, "HOME": str(ws)},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return ws / "install" / "itasc_ros"


def test_share_files_installed(colcon_install: Path) -> None:
    share = colcon_install / "share" / "itasc_ros"
    assert (share / "package.xml").is_file()
    assert (
        colcon_install / "share" / "ament_index" / "resource_index" / "packages" / "itasc_ros"
    ).is_file()
    for folder, pattern in (
        ("launch", "*.py"),
        ("config", "*.yaml"),
        ("urdf", "*.urdf"),
        ("rviz", "*.rviz"),
    ):
        expected = sorted(p.name for p in (REPO / folder).glob(pattern))
        assert expected, f"the source tree has no {folder}/{pattern}"
        installed = sorted(p.name for p in (share / folder).glob(pattern))
        assert installed == expected, folder


def test_scripts_where_ros2_run_finds_them(colcon_install: Path) -> None:
    lib = colcon_install / "lib" / "itasc_ros"
    for script in SCRIPTS:
        assert (lib / script).is_file(), script


def test_python_packages_installed(colcon_install: Path) -> None:
    """Every package of itasc_ros (core, ros, tools) is installed; the benchmarks are not."""
    expected = sorted(
        p.parent.relative_to(REPO).as_posix() for p in (REPO / "itasc_ros").rglob("__init__.py")
    )
    assert "itasc_ros/tools" in expected
    (site,) = colcon_install.glob("lib/python3*/site-packages")
    installed = sorted(
        p.parent.relative_to(site).as_posix() for p in (site / "itasc_ros").rglob("__init__.py")
    )
    assert installed == expected
    assert not list(colcon_install.parent.glob("*bench*")), "bench/ is not a colcon package"
    assert not list(site.glob("itasc_bench*"))
    (entry_points,) = site.glob("itasc_ros*.egg-info/entry_points.txt")
    assert "itasc-bench" not in entry_points.read_text()


def test_the_wheel_holds_what_a_robot_runs(tmp_path: Path) -> None:
    """The package a robot installs (pip's wheel of the repository): the node, the core, the
    tools a user runs and their console scripts; neither the benchmarks (bench/, a
    distribution of their own) nor the tests."""
    src = tmp_path / "src"  # a copy: the build writes its build/ beside setup.py
    shutil.copytree(REPO, src, ignore=SOURCE_IGNORED)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(tmp_path), str(src)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (wheel,) = tmp_path.glob("itasc_ros-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        scripts = z.read(entry_points).decode()
    top = {n.split("/")[0] for n in names}
    assert {t for t in top if not t.startswith("itasc_ros-")} == {"itasc_ros"}, top
    packages = {n.rsplit("/", 1)[0] for n in names if n.endswith("/__init__.py")}
    assert {"itasc_ros/core", "itasc_ros/ros", "itasc_ros/tools"} <= packages
    assert not [n for n in names if "bench" in n or n.startswith("test")], "the lab is shipped"
    for script in SCRIPTS:
        assert f"{script} = " in scripts, script
    assert "itasc-bench" not in scripts


def test_installed_urdf_loads(colcon_install: Path) -> None:
    from itasc_ros.core import KinematicTree

    tree = KinematicTree.from_urdf_file(colcon_install / "share/itasc_ros/urdf/panda.urdf")
    assert tree.n_joints == 7
