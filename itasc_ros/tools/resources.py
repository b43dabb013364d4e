"""Find the package's data files (urdf/, config/, rviz/) installed or in a source checkout."""

from __future__ import annotations

import sys
from pathlib import Path

PACKAGE = "itasc_ros"


def share_dir() -> Path:
    """The package's share directory: ament install, pip data_files, or the source tree."""
    candidates = []
    try:  # a ROS install (colcon / apt)
        from ament_index_python.packages import get_package_share_directory

        candidates.append(Path(get_package_share_directory(PACKAGE)))
    except Exception:  # not found in the ament index, or ament_index_python missing
        pass
    candidates.append(Path(sys.prefix) / "share" / PACKAGE)
    candidates.append(Path(__file__).resolve().parents[2])  # source checkout / editable
    for c in candidates:
        if (c / "urdf").is_dir():
            return c
    raise FileNotFoundError(
        f"cannot find the {PACKAGE} share directory; looked in: "
        + ", ".join(str(c) for c in candidates)
    )


def share_file(kind: str, name: str) -> Path:
    """Path of a data file, e.g. ``share_file('urdf', 'panda.urdf')``.

    Raises:
        FileNotFoundError: naming the files that exist in that folder.
    """
    folder = share_dir() / kind
    path = folder / name
    if not path.is_file():
        have = sorted(p.name for p in folder.glob("*")) if folder.is_dir() else []
        raise FileNotFoundError(f"no {kind} file {name!r}; available: {', '.join(have)}")
    return path


def robot_urdf(robot: str) -> Path:
    """The bundled URDF of a robot name ('panda', 'ur5') or a path to a URDF file."""
    p = Path(robot)
    if p.suffix == ".urdf" and p.is_file():
        return p
    return share_file("urdf", f"{robot}.urdf")


def example_robot_data_file(rel: str) -> Path:
    """A file of the ``example-robot-data`` wheel (e.g. ``talos_data/robots/talos_full_v2.urdf``).

    Raises:
        FileNotFoundError: the wheel is not installed or has no such file
            (``pip install example-robot-data``).
    """
    for base in Path(sys.prefix).glob("lib/python3*/site-packages/cmeel.prefix/share"):
        p = base / "example-robot-data" / "robots" / rel
        if p.is_file():
            return p
    raise FileNotFoundError(
        f"no example-robot-data file {rel!r} under {sys.prefix}: pip install example-robot-data"
    )


__all__ = ["example_robot_data_file", "robot_urdf", "share_dir", "share_file"]
