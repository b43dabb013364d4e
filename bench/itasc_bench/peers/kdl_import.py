"""Importing PyKDL (Orocos KDL's Python module), which is not a wheel.

:func:`import_pykdl` takes PyKDL from the venv if it is there, else from the system
``dist-packages`` directory (Debian's ``python3-pykdl``): that directory is put on ``sys.path``
only for the duration of ``import PyKDL`` and removed again, so no other system package can
shadow the venv's packages. A subprocess fallback under ``/usr/bin/python3`` is not provided: the
Debian module is built for the same CPython (3.11) as the venv and imports directly.
"""

from __future__ import annotations

import contextlib
import glob
import os
import sys
from typing import Any

from .contract import PeerUnavailable

#: Where Debian/Ubuntu install ``python3-pykdl``.
SYSTEM_DIST_PACKAGES = "/usr/lib/python3/dist-packages"

_PYKDL_GLOBS = (
    "/usr/lib/python3*/dist-packages/PyKDL*.so",
    "/usr/local/lib/python3*/dist-packages/PyKDL*.so",
    "/opt/ros/*/lib/python3*/site-packages/PyKDL*.so",
    "/opt/ros/*/local/lib/python3*/dist-packages/PyKDL*.so",
)


_pykdl: Any = None


def _pykdl_dirs() -> list[str]:
    """Candidate directories holding a PyKDL extension module, most likely first."""
    dirs = [SYSTEM_DIST_PACKAGES]
    for pattern in _PYKDL_GLOBS:
        for so in sorted(glob.glob(pattern)):
            d = os.path.dirname(so)
            if d not in dirs:
                dirs.append(d)
    return dirs


def import_pykdl() -> Any:
    """Import PyKDL, from the venv if it is there, else from the system ``dist-packages``.

    The system directory is appended to ``sys.path`` only for the ``import PyKDL`` statement and
    removed right after, so it cannot shadow packages of the venv.

    Returns:
        The ``PyKDL`` module.

    Raises:
        PeerUnavailable: If no importable PyKDL is found; the message has the install hint.
    """
    global _pykdl
    if _pykdl is not None:
        return _pykdl
    try:
        import PyKDL
    except ImportError as first:
        PyKDL = _import_from_system(first)
    _pykdl = PyKDL
    return PyKDL


def _import_from_system(first: ImportError) -> Any:
    """PyKDL from the first of :func:`_pykdl_dirs` that has one (``first``: the venv's error)."""
    errors = [f"venv: {first}"]
    for d in _pykdl_dirs():
        if not os.path.isdir(d):
            continue
        module = _import_from(d, errors)
        if module is not None:
            return module
    raise PeerUnavailable(
        "PyKDL (Orocos KDL) is not importable: install it with "
        "'apt-get install python3-pykdl' (it must be built for Python "
        f"{sys.version_info.major}.{sys.version_info.minor}); tried " + "; ".join(errors)
    ) from first


def _import_from(directory: str, errors: list[str]) -> Any:
    """PyKDL, ``directory`` on ``sys.path`` for the import only; None if not from there.

    Args:
        directory: A directory that may hold the PyKDL extension module.
        errors: Where the import error is appended when there is one.
    """
    added = directory not in sys.path
    if added:
        sys.path.append(directory)
    try:
        import PyKDL
    except ImportError as exc:
        errors.append(f"{directory}: {exc}")
        return None
    finally:
        if added:
            with contextlib.suppress(ValueError):
                sys.path.remove(directory)
    return PyKDL


__all__ = ["SYSTEM_DIST_PACKAGES", "import_pykdl"]
