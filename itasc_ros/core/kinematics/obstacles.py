"""Static obstacles in the root frame, read from strings like ``"box 0.4 0 0.2 0.1 0.1 0.1"``."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from . import spatial
from .collision_shape import CollisionGeometryError, CollisionShape, make_shape, primitive

OBSTACLE_SHAPES = {
    "box": ("x y z size_x size_y size_z", 6),
    "sphere": ("x y z radius", 4),
    "cylinder": ("x y z radius length", 5),
    "capsule": ("x y z radius length", 5),
}
"""Static obstacle shapes: the numbers after the shape name [m] (root frame; the axis of a
cylinder or capsule is the root z axis, a box's sizes are full edge lengths as in URDF)."""


def parse_obstacles(specs: Sequence[str]) -> list[CollisionShape]:
    """Static obstacles in the root frame from strings like ``"box 0.4 0 0.2 0.1 0.1 0.1"``.

    Args:
        specs: one string per obstacle: a shape of :data:`OBSTACLE_SHAPES` and its numbers [m].

    Returns:
        One shape per obstacle, its ``link`` ''.

    Raises:
        CollisionGeometryError: naming the obstacle and the valid shapes with their numbers.
    """
    valid = "; ".join(f"'{k} {v[0]}'" for k, v in OBSTACLE_SHAPES.items())
    out = []
    for i, spec in enumerate(specs):
        words = str(spec).split()
        kind = words[0] if words else ""
        if kind not in OBSTACLE_SHAPES:
            raise CollisionGeometryError(
                f"obstacle {i} {spec!r}: unknown shape {kind!r}; valid obstacles are: {valid}"
            )
        n = OBSTACLE_SHAPES[kind][1]
        try:
            nums = [float(w) for w in words[1:]]
        except ValueError:
            nums = []
        if (
            len(nums) != n
            or not all(math.isfinite(v) for v in nums)
            or any(v <= 0.0 for v in nums[3:])
        ):
            raise CollisionGeometryError(
                f"obstacle {i} {spec!r}: a {kind} takes {n} finite numbers "
                f"'{OBSTACLE_SHAPES[kind][0]}' [m], sizes > 0; valid obstacles are: {valid}"
            )
        origin = spatial.make_pose(None, np.array(nums[:3]))
        out.append(make_shape("", kind, primitive(kind, nums[3:]), origin, str(spec)))
    return out


__all__ = ["OBSTACLE_SHAPES", "parse_obstacles"]
