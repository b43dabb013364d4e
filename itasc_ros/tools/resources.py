"""Find the package's data files (urdf/, config/, rviz/) installed or in a source checkout."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

from ..cli import closest, unknown_choice
from ..core.errors import ItascError

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


class RobotNotFoundError(ItascError, FileNotFoundError):
    """A robot name that is not bundled, or a URDF path that does not exist (names both)."""


def bundled_robots() -> list[str]:
    """Names of the bundled robots (``urdf/<name>.urdf``), sorted."""
    folder = share_dir() / "urdf"
    return sorted(p.stem for p in folder.glob("*.urdf") if p.is_file())


def is_urdf_path(robot: str) -> bool:
    """True when ``robot`` is a path (ends in ``.urdf`` or has a ``/``), not a robot name."""
    return robot.endswith(".urdf") or "/" in robot


def robot_urdf(robot: str) -> Path:
    """The URDF of a bundled robot name ('panda', 'ur5') or of a path.

    A string that ends in ``.urdf`` or contains a ``/`` is a path; anything else is the name of
    a bundled robot, or else an existing file.

    Raises:
        RobotNotFoundError: no such file, or no such robot; the message names the closest
            robot and the bundled ones.
    """
    robots = bundled_robots()
    if is_urdf_path(robot):
        path = Path(robot).expanduser()
        if path.is_file():
            return path
        why = "is not a file" if path.exists() else f"does not exist{_near_urdf(path)}"
        raise RobotNotFoundError(
            f"URDF file {robot!r} {why}; bundled robots: {_closest_first(path.stem, robots)}"
        )
    if robot in robots:
        return share_dir() / "urdf" / f"{robot}.urdf"
    if Path(robot).is_file():  # a URDF named otherwise (robot.xml) in this directory
        return Path(robot)
    raise RobotNotFoundError(unknown_choice("robot", robot, robots) + " (or a path to a .urdf)")


def _near_urdf(path: Path) -> str:
    """`` (did you mean '<dir>/<name>.urdf'?)`` for a URDF file next to ``path``, else ''."""
    try:
        names = [c.name for c in path.parent.iterdir() if c.suffix == ".urdf"]
    except OSError:
        return ""
    hit = closest(path.name, names)
    return f" (did you mean {str(path.parent / hit)!r}?)" if hit else ""


def _closest_first(name: str, robots: list[str]) -> str:
    ranked = sorted(robots, key=lambda r: -difflib.SequenceMatcher(None, name, r).ratio())
    return ", ".join(repr(r) for r in ranked) or "(none)"


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


__all__ = [
    "RobotNotFoundError",
    "bundled_robots",
    "example_robot_data_file",
    "is_urdf_path",
    "robot_urdf",
    "share_dir",
    "share_file",
]
