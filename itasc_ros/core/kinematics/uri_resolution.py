"""Where a URI of a URDF or SRDF points: ``package://`` search path, ``file://``, plain paths.

A ``package://NAME/rest`` URI is looked up as ``DIR/NAME/rest`` for each directory ``DIR``
of the search path (:func:`package_search_path`): the directories given by the caller, then
``ROS_PACKAGE_PATH``, then ``share/`` of each prefix in ``AMENT_PREFIX_PATH`` and
``CMAKE_PREFIX_PATH``, then the ``share/`` directories of the Python installation (where the
``example-robot-data`` wheel installs its robots, as ``cmeel.prefix/share/example-robot-data``).
A ``file://`` URI or a plain path is taken as it is, relative to the URDF file's folder when
relative.
"""

from __future__ import annotations

import os
import site
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from .collision_shape import CollisionGeometryError

MESH_SEARCH_ENV = ("ROS_PACKAGE_PATH", "AMENT_PREFIX_PATH", "CMAKE_PREFIX_PATH")
"""Environment variables the ``package://`` search path is read from (in this order)."""


def package_search_path(extra: Iterable[str] = ()) -> list[Path]:
    """The directories a ``package://NAME/...`` URI is looked up in, in order.

    Args:
        extra: directories given by the user, searched first.
    """
    dirs: list[Path] = [Path(d).expanduser() for d in extra if d]
    for d in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep):
        if d:
            dirs.append(Path(d))
    for var in ("AMENT_PREFIX_PATH", "CMAKE_PREFIX_PATH"):
        for d in os.environ.get(var, "").split(os.pathsep):
            if d:
                dirs.append(Path(d) / "share")
    for root in [*site.getsitepackages(), site.getusersitepackages()]:
        dirs.append(Path(root) / "cmeel.prefix" / "share")
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix)):
        dirs.append(Path(prefix) / "share")
    return list(dict.fromkeys(dirs))


def resolve_uri(uri: str, search_path: Sequence[Path], base_dir: Path | None) -> Path | None:
    """The file a URI names (a URDF mesh ``filename``, an SRDF), or None when not found.

    Args:
        uri: ``package://NAME/rest``, ``file:///abs/path``, or a path.
        search_path: directories holding packages (see :func:`package_search_path`).
        base_dir: folder of the URDF file, for relative paths (None: the current folder).
    """
    if uri.startswith("package://"):
        rest = uri[len("package://") :].lstrip("/")  # Talos' URDF writes package:///name/
        for d in search_path:
            p = d / rest
            if p.is_file():
                return p
            # A directory that is the package itself (e.g. ROS_PACKAGE_PATH=/path/to/pkg).
            name, _, tail = rest.partition("/")
            if d.name == name and (d / tail).is_file():
                return d / tail
        return None
    path = Path(uri[len("file://") :] if uri.startswith("file://") else uri)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return path if path.is_file() else None


def resolve_file(uri: str, package_path: Iterable[str] = (), what: str = "file") -> Path:
    """The file of a ``package://`` URI, ``file://`` URI or path (see :func:`resolve_uri`).

    Args:
        uri: the URI or path.
        package_path: extra ``package://`` search directories (searched first).
        what: what the file is, for the error message (e.g. ``"SRDF"``).

    Raises:
        CollisionGeometryError: not found, naming the directories searched.
    """
    search = package_search_path(package_path)
    path = resolve_uri(uri, search, None)
    if path is None:
        where = (
            "; package:// is looked up in: " + ", ".join(str(d) for d in search)
            if uri.startswith("package://")
            else ""
        )
        raise CollisionGeometryError(f"{what} {uri!r} not found{where}")
    return path


__all__ = ["MESH_SEARCH_ENV", "package_search_path", "resolve_file", "resolve_uri"]
