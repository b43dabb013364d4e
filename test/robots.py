"""Shared test helper: where the robot URDFs live.

Two sources of URDFs:

* ``erd_urdf_path(robot)``: the reference URDFs shipped by the ``example-robot-data`` wheel
  (installed under ``<site-packages>/cmeel.prefix/share/example-robot-data/robots``), found
  by :func:`itasc_ros.tools.resources.example_robot_data_file` as the scenarios find them.
* ``bundled_urdf_path(robot)``: the kinematics-only URDFs bundled with itasc_ros in
  ``<repo>/urdf/<robot>.urdf``.

Tests import this module as ``from robots import erd_urdf_path`` (the test directory is put on
``sys.path``).
"""

from __future__ import annotations

import pathlib

from itasc_ros.tools.resources import example_robot_data_file

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

_REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent


def erd_robots_dir() -> pathlib.Path:
    """The example-robot-data ``robots`` directory.

    Returns:
        Absolute path of ``.../share/example-robot-data/robots``.

    Raises:
        FileNotFoundError: If the ``example-robot-data`` distribution is not installed.
    """
    rel = ERD_URDFS["panda"]  # any file of the wheel: the directory is its ancestor
    return example_robot_data_file(rel).parents[len(pathlib.PurePath(rel).parts) - 1]


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
    return example_robot_data_file(rel)


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
