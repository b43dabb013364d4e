"""Shared test helper: where the robot URDFs live.

Two sources of URDFs:

* ``erd_urdf_path(robot)``: the reference URDFs shipped by the ``example-robot-data`` wheel
  (installed under ``<site-packages>/cmeel.prefix/share/example-robot-data/robots``).
* ``bundled_urdf_path(robot)``: the kinematics-only URDFs bundled with itasc_ros in
  ``<repo>/urdf/<robot>.urdf``.

Tests import this module as ``from robots import erd_urdf_path`` (the test directory is put on
``sys.path``). It depends on nothing from itasc_ros.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import pathlib
import site
import sys

#: Robot name -> URDF path relative to the example-robot-data ``robots`` directory.
ERD_URDFS: dict[str, str] = {
    "panda": "panda_description/urdf/panda.urdf",
    "ur3": "ur_description/urdf/ur3_robot.urdf",
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "ur10": "ur_description/urdf/ur10_robot.urdf",
    "z1": "z1_description/urdf/z1.urdf",
    "so100": "so_arm_description/urdf/so100.urdf",
    "baxter": "baxter_description/urdf/baxter.urdf",
    "tiago": "tiago_description/robots/tiago.urdf",
    "talos": "talos_data/robots/talos_full_v2.urdf",
}

_DIST_NAME = "example-robot-data"
_SHARE_SUFFIX = ("share", "example-robot-data", "robots")
_REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent


def _robots_dir_from_metadata() -> pathlib.Path | None:
    """The ``robots`` directory from the installed distribution's file list, if any."""
    try:
        files = importlib.metadata.distribution(_DIST_NAME).files
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in files or []:
        parts = f.parts
        n = len(_SHARE_SUFFIX)
        for i in range(len(parts) - n):  # the suffix must be followed by at least a file name
            if parts[i : i + n] == _SHARE_SUFFIX:
                # Walk up from the file to the ``robots`` directory.
                d = pathlib.Path(str(f.locate())).parents[len(parts) - (i + n) - 1]
                if d.is_dir():
                    return d.resolve()
                break
    return None


def _robots_dir_from_prefixes() -> pathlib.Path | None:
    """The ``robots`` directory found under the interpreter's prefixes / site-packages."""
    roots: list[pathlib.Path] = []
    for p in [*site.getsitepackages(), site.getusersitepackages(), *sys.path]:
        if p:
            roots.append(pathlib.Path(p))
    for prefix in {sys.prefix, sys.base_prefix, os.environ.get("CMEEL_PREFIX", "")}:
        if prefix:
            roots.append(pathlib.Path(prefix))
            roots.append(pathlib.Path(prefix) / "share")
    for root in roots:
        for candidate in (
            root / "cmeel.prefix" / pathlib.Path(*_SHARE_SUFFIX),
            root / pathlib.Path(*_SHARE_SUFFIX),
            root / pathlib.Path(*_SHARE_SUFFIX[1:]),
        ):
            if candidate.is_dir():
                return candidate.resolve()
    # Last resort: a bounded search under sys.prefix (e.g. an unusual lib/pythonX.Y layout).
    for match in pathlib.Path(sys.prefix).glob("lib*/python*/site-packages/cmeel.prefix"):
        candidate = match / pathlib.Path(*_SHARE_SUFFIX)
        if candidate.is_dir():
            return candidate.resolve()
    return None


@functools.cache
def erd_robots_dir() -> pathlib.Path:
    """The example-robot-data ``robots`` directory.

    Returns:
        Absolute path of ``.../share/example-robot-data/robots``.

    Raises:
        FileNotFoundError: If the ``example-robot-data`` distribution is not installed.
    """
    found = _robots_dir_from_metadata() or _robots_dir_from_prefixes()
    if found is None:
        raise FileNotFoundError(
            "example-robot-data not found: install the 'example-robot-data' wheel "
            f"(looked in its distribution metadata and under {sys.prefix})"
        )
    return found


def erd_urdf_path(robot: str) -> pathlib.Path:
    """Path of the example-robot-data reference URDF of ``robot``.

    Args:
        robot: One of ``ERD_URDFS`` ('panda', 'ur3', 'ur5', 'ur10', 'z1', 'so100', 'baxter',
            'tiago', 'talos').

    Returns:
        Absolute path of an existing URDF file.

    Raises:
        ValueError: If ``robot`` is not a known name.
        FileNotFoundError: If example-robot-data or that URDF is missing.
    """
    try:
        rel = ERD_URDFS[robot]
    except KeyError:
        raise ValueError(
            f"unknown robot {robot!r}; valid choices: {', '.join(sorted(ERD_URDFS))}"
        ) from None
    path = erd_robots_dir() / rel
    if not path.is_file():
        raise FileNotFoundError(f"example-robot-data URDF for {robot!r} missing: {path}")
    return path


def bundled_urdf_path(robot: str) -> pathlib.Path:
    """Path of the kinematics-only URDF bundled with itasc_ros: ``<repo>/urdf/<robot>.urdf``.

    The path is computed from this file's location and is not checked for existence, so callers
    can test ``.exists()`` for robots that have no bundled URDF.

    Args:
        robot: Robot name, e.g. 'panda' or 'ur5'.

    Returns:
        Absolute path ``<repo>/urdf/<robot>.urdf``.
    """
    return _REPO_ROOT / "urdf" / f"{robot}.urdf"
