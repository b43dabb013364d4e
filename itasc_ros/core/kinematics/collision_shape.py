"""A collision shape: a coal geometry attached to a link, with its bounding sphere.

ROS-free. The shapes are those of the collision library
`coal <https://github.com/coal-library/coal>`_ (the one Pinocchio uses): ``box``,
``cylinder``, ``sphere``, ``capsule``, and a mesh's convex hull. Also the error of every bad
collision setting (:class:`CollisionGeometryError`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import coal
import numpy as np
from numpy.typing import NDArray

from ..errors import ConstraintError

Array = NDArray[np.float64]

SHAPE_KINDS = ("box", "cylinder", "sphere", "capsule", "mesh")
"""Kinds of ``<collision>`` geometry read from a URDF."""


class CollisionGeometryError(ConstraintError):
    """Bad collision settings: an obstacle, an SRDF, a pair filter or a URDF to read."""


@dataclass(eq=False)
class CollisionShape:
    """One collision shape, rigidly attached to a link (or to the root frame: an obstacle).

    Attributes:
        link: the link it moves with ('' for a static obstacle in the root frame).
        kind: one of :data:`SHAPE_KINDS`.
        origin: (4, 4) pose of the shape in the link frame (root frame for an obstacle).
        geometry: the coal shape (a ``coal.Convex`` for a mesh).
        center: (3,) centre of a sphere bounding the shape, in the link frame [m].
        radius: radius of that bounding sphere [m].
        source: the mesh file, or a description of the shape.
        approximated: True when it is the fallback capsule of a mesh that could not be read.
    """

    link: str
    kind: str
    origin: Array
    geometry: coal.CollisionGeometry = field(repr=False)
    center: Array = field(default_factory=lambda: np.zeros(3))
    radius: float = 0.0
    source: str = ""
    approximated: bool = False


def primitive(kind: str, dims: Sequence[float]) -> coal.CollisionGeometry:
    """A coal primitive: box (sx, sy, sz full sizes), sphere (r), cylinder / capsule (r, length).

    Args:
        kind: ``box``, ``sphere``, ``cylinder`` or ``capsule``.
        dims: the sizes listed above [m].

    Raises:
        CollisionGeometryError: an unknown kind, naming the valid ones.
    """
    if kind == "box":
        return coal.Box(float(dims[0]), float(dims[1]), float(dims[2]))
    if kind == "sphere":
        return coal.Sphere(float(dims[0]))
    if kind == "cylinder":
        return coal.Cylinder(float(dims[0]), float(dims[1]))
    if kind == "capsule":
        return coal.Capsule(float(dims[0]), float(dims[1]))
    raise CollisionGeometryError(
        f"unknown shape {kind!r}; shapes are: {', '.join(k for k in SHAPE_KINDS if k != 'mesh')}"
    )


def _bounding(geometry: coal.CollisionGeometry, origin: Array) -> tuple[Array, float]:
    """Centre (3,) in the link frame and radius of a sphere bounding a shape at ``origin``."""
    geometry.computeLocalAABB()
    c = np.asarray(geometry.aabb_center, dtype=float).reshape(3)
    return origin[:3, :3] @ c + origin[:3, 3], float(geometry.aabb_radius)


def make_shape(
    link: str,
    kind: str,
    geometry: coal.CollisionGeometry,
    origin: Array,
    source: str,
    approximated: bool = False,
) -> CollisionShape:
    """A :class:`CollisionShape` with its bounding sphere computed.

    Args:
        link: the link it moves with ('' for an obstacle).
        kind: one of :data:`SHAPE_KINDS`.
        geometry: the coal shape.
        origin: (4, 4) pose of the shape in the link frame [m].
        source: the mesh file, or a description of the shape.
        approximated: whether it stands in for a mesh that could not be read.
    """
    center, radius = _bounding(geometry, origin)
    return CollisionShape(link, kind, origin, geometry, center, radius, source, approximated)


__all__ = [
    "SHAPE_KINDS",
    "CollisionGeometryError",
    "CollisionShape",
    "make_shape",
    "primitive",
]
