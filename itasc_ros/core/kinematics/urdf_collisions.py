"""The collision shapes of a robot's links, read from the ``<collision>`` elements of its URDF.

ROS-free. Each ``<collision>`` element of a link becomes one coal shape: ``box``,
``cylinder``, ``sphere`` and ``capsule`` as they are, a ``mesh`` as the **convex hull** of its
vertices (scaled), placed at the element's ``<origin>`` in the link frame. Mesh files are
found as described in :mod:`~itasc_ros.core.kinematics.uri_resolution` and read by
:mod:`~itasc_ros.core.kinematics.convex_hull`.

**Fallback** when a mesh cannot be found or read: the link gets a capsule (a warning names the
link and the file). Its axis runs from the link frame's origin to the farthest of: the origins
of the link's child joints, and twice its inertial origin (a body reaching about as far beyond
its centre of mass as it starts before it); its radius is ``fallback_radius``; a link without
any such point gets a sphere of that radius at its origin. ``geometry = "capsules"`` gives
every link this approximation, for kinematics-only URDFs without ``<collision>`` elements.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import coal
import numpy as np
from lxml import etree
from numpy.typing import NDArray

from ..errors import UrdfError
from . import spatial
from .collision_shape import (
    SHAPE_KINDS,
    CollisionGeometryError,
    CollisionShape,
    make_shape,
    primitive,
)
from .convex_hull import coal_message, load_convex_hull
from .tree import KinematicTree
from .urdf_xml import read_urdf_xml
from .uri_resolution import resolve_uri

Array = NDArray[np.float64]


GEOMETRY_SOURCES = ("collision", "capsules")
"""``collision``: the URDF's ``<collision>`` elements; ``capsules``: every link approximated."""


@dataclass
class _Reading:
    """What reading one URDF's shapes needs besides the element: for meshes and fallbacks."""

    tree: KinematicTree
    com: dict[str, Array]
    fallback_radius: float
    search_path: Sequence[Path]
    base_dir: Path | None
    notes: list[str] = field(default_factory=list)


def _floats(text: str | None, n: int, what: str, default: float = 0.0) -> Array:
    if text is None:
        return np.full(n, default)
    try:
        v = np.array([float(t) for t in text.split()], dtype=float)
    except ValueError:
        raise UrdfError(f"{what}: expected {n} numbers, got {text!r}") from None
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise UrdfError(f"{what}: expected {n} finite numbers, got {text!r}")
    return v


def _origin_of(elem: etree._Element | None, what: str) -> Array:
    if elem is None:
        return np.eye(4)
    xyz = _floats(elem.get("xyz"), 3, f"{what} origin xyz")
    rpy = _floats(elem.get("rpy"), 3, f"{what} origin rpy")
    return spatial.make_pose(spatial.rpy_to_matrix(*rpy), xyz)


def _positive(value: str | None, what: str) -> float:
    try:
        v = float(value) if value is not None else math.nan
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and v > 0.0):
        raise UrdfError(f"{what} must be a finite number > 0, got {value!r}")
    return v


def _segment_capsule(link: str, end: Array, radius: float, source: str) -> CollisionShape:
    """A capsule from the link origin to ``end`` (3,), or a sphere when ``end`` is ~0."""
    length = float(np.linalg.norm(end))
    if length < 1e-6:
        return make_shape(link, "sphere", coal.Sphere(radius), np.eye(4), source, True)
    z = end / length
    helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    rot = np.column_stack([x, np.cross(z, x), z])
    origin = spatial.make_pose(rot, 0.5 * end)
    return make_shape(link, "capsule", coal.Capsule(radius, length), origin, source, True)


def _fallback_end(tree: KinematicTree, link: str, com: dict[str, Array]) -> Array:
    """The far end of a link's fallback capsule (see the module docstring), link frame."""
    points = [j.origin[:3, 3] for j in tree.joints if j.parent == link]
    if link in com:
        points.append(2.0 * com[link])
    if not points:
        return np.zeros(3)
    return np.asarray(max(points, key=lambda p: float(np.linalg.norm(p))), dtype=float)


def _fallback(reading: _Reading, link: str, source: str) -> CollisionShape:
    """The fallback capsule of a link (see the module docstring)."""
    end = _fallback_end(reading.tree, link, reading.com)
    return _segment_capsule(link, end, reading.fallback_radius, source)


def _inertial_origins(root: etree._Element) -> dict[str, Array]:
    """Each link's (3,) inertial origin [m] (links whose ``<inertial><origin>`` reads)."""
    com: dict[str, Array] = {}
    for le in root.findall("link"):
        name = le.get("name", "")
        io = le.find("inertial/origin")
        if io is not None:
            with contextlib.suppress(UrdfError):  # a bad inertial is not ours to reject
                com[name] = _origin_of(io, f"link {name!r} inertial")[:3, 3]
    return com


def _mesh_shape(
    g: etree._Element, link: str, what: str, origin: Array, reading: _Reading
) -> CollisionShape:
    """A ``<mesh>``'s convex hull, or the link's fallback capsule (with a note) when unread."""
    uri = g.get("filename", "")
    scale = _floats(g.get("scale"), 3, f"{what} mesh scale", 1.0)
    path = resolve_uri(uri, reading.search_path, reading.base_dir)
    hull = None
    reason = "not found on the search path"
    if path is not None:
        try:
            hull = load_convex_hull(path, scale)
        except (OSError, ValueError, RuntimeError) as exc:
            reason = f"unreadable ({coal_message(str(exc))})"
    if hull is not None and path is not None:
        return make_shape(link, "mesh", hull, origin, str(path))
    reading.notes.append(
        f"link {link!r}: mesh {uri!r} {reason}; approximated by a capsule of "
        f"radius {reading.fallback_radius} m"
    )
    return _fallback(reading, link, uri)


def _primitive_shape(g: etree._Element, link: str, what: str, origin: Array) -> CollisionShape:
    """The shape of a ``<box>``, ``<sphere>``, ``<cylinder>`` or ``<capsule>``."""
    if g.tag == "box":
        dims = _floats(g.get("size"), 3, f"{what} box size")
        if np.any(dims <= 0.0):
            raise UrdfError(f"{what}: box sizes must be > 0, got {dims.tolist()}")
        return make_shape(link, "box", primitive("box", dims.tolist()), origin, "box")
    if g.tag == "sphere":
        r = _positive(g.get("radius"), f"{what} sphere radius")
        return make_shape(link, "sphere", coal.Sphere(r), origin, "sphere")
    if g.tag in ("cylinder", "capsule"):
        r = _positive(g.get("radius"), f"{what} {g.tag} radius")
        length = _positive(g.get("length"), f"{what} {g.tag} length")
        geo = primitive(g.tag, (r, length))
        return make_shape(link, g.tag, geo, origin, g.tag)
    raise UrdfError(f"{what}: unknown geometry <{g.tag}>; valid: {', '.join(SHAPE_KINDS)}")


def _collision_shape(ce: etree._Element, link: str, k: int, reading: _Reading) -> CollisionShape:
    """The shape of a link's ``k``-th ``<collision>`` element."""
    what = f"link {link!r} collision {k}"
    origin = _origin_of(ce.find("origin"), what)
    ge = ce.find("geometry")
    kids = [] if ge is None else [g for g in ge if isinstance(g.tag, str)]
    if not kids:
        raise UrdfError(f"{what}: <geometry> needs one of: {', '.join(SHAPE_KINDS)}")
    g = kids[0]
    if g.tag == "mesh":
        return _mesh_shape(g, link, what, origin, reading)
    return _primitive_shape(g, link, what, origin)


def link_shapes(
    tree: KinematicTree,
    xml: str | bytes,
    *,
    geometry: str = "collision",
    fallback_radius: float = 0.05,
    search_path: Sequence[Path] = (),
    base_dir: Path | None = None,
) -> tuple[list[CollisionShape], list[str]]:
    """The collision shapes of the tree's links read from a URDF document.

    Links of the URDF that the tree does not have are skipped.

    Args:
        tree: the kinematic tree (its links and joints place the shapes).
        xml: the URDF document with the ``<collision>`` elements.
        geometry: one of :data:`GEOMETRY_SOURCES`.
        fallback_radius: radius of the fallback capsules [m].
        search_path: where ``package://`` URIs are looked up (see
            :func:`~itasc_ros.core.kinematics.uri_resolution.package_search_path`).
        base_dir: folder of the URDF file, for relative mesh paths.

    Returns:
        (shapes, warnings): one warning per mesh replaced by its fallback capsule.

    Raises:
        CollisionGeometryError: an unknown geometry source, naming the valid ones.
        UrdfError: a malformed ``<collision>`` element.
    """
    if geometry not in GEOMETRY_SOURCES:
        raise CollisionGeometryError(
            f"unknown geometry {geometry!r}; choices are: {', '.join(GEOMETRY_SOURCES)}"
        )
    root = read_urdf_xml(xml)
    links = set(tree.link_names)
    reading = _Reading(tree, _inertial_origins(root), fallback_radius, search_path, base_dir)
    shapes: list[CollisionShape] = []
    for le in root.findall("link"):
        name = le.get("name", "")
        if name not in links:
            continue
        if geometry == "capsules":
            shapes.append(_fallback(reading, name, "capsule"))
            continue
        for k, ce in enumerate(le.findall("collision")):
            shapes.append(_collision_shape(ce, name, k, reading))
    for note in reading.notes:
        warnings.warn(note, stacklevel=2)  # the node routes warnings to its ROS log
    return shapes, reading.notes


__all__ = ["GEOMETRY_SOURCES", "link_shapes"]
