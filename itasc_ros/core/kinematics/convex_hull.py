"""Convex hulls of mesh files (STL, DAE, OBJ and the other formats of coal's ``MeshLoader``).

Each hull is computed once per file, modification time and scale (an LRU cache of 256).
"""

from __future__ import annotations

import functools
from pathlib import Path

import coal
import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


@functools.lru_cache(maxsize=256)
def _hull_cached(path: str, mtime: float, sx: float, sy: float, sz: float) -> coal.Convex:
    loader = coal.MeshLoader()
    bvh = loader.load(path, np.array([sx, sy, sz]))
    if bvh.num_vertices < 4:
        raise ValueError(f"{bvh.num_vertices} vertices")
    bvh.buildConvexHull(True, "Qt")
    return bvh.convex


def load_convex_hull(path: Path, scale: Array) -> coal.Convex:
    """The convex hull of a mesh file's vertices times ``scale`` (3,) (cached by file).

    Args:
        path: the mesh file.
        scale: (3,) scale factors along the mesh's x, y, z.

    Raises:
        OSError, ValueError, RuntimeError: the file cannot be read as a mesh.
    """
    p = path.resolve()
    return _hull_cached(str(p), p.stat().st_mtime, *(float(s) for s in scale))


def coal_message(text: str) -> str:
    """The line after coal's ``message:`` (its errors start with the C++ file and function).

    Args:
        text: the text of an exception raised by coal.
    """
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for i, ln in enumerate(lines):
        if ln.startswith("message:"):
            return " ".join(lines[i : i + 2]).removeprefix("message: ")
    return lines[0] if lines else "no message"


__all__ = ["coal_message", "load_convex_hull"]
