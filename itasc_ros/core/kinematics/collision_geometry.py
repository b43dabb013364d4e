"""Collision geometry of a robot: shapes from the URDF, pairs from the tree and an SRDF.

ROS-free. Each ``<collision>`` element of a link becomes one shape of the collision library
`coal <https://github.com/coal-library/coal>`_ (the one Pinocchio uses): ``box``,
``cylinder``, ``sphere`` and ``capsule`` as they are, a ``mesh`` as the **convex hull** of its
vertices (scaled), placed at the element's ``<origin>`` in the link frame.

Mesh files: a ``package://NAME/rest`` URI is looked up as ``DIR/NAME/rest`` for each
directory ``DIR`` of the search path (:func:`package_search_path`): the directories given by
the caller, then ``ROS_PACKAGE_PATH``, then ``share/`` of each prefix in
``AMENT_PREFIX_PATH`` and ``CMAKE_PREFIX_PATH``, then the ``share/`` directories of the Python
installation (where the ``example-robot-data`` wheel installs its robots, as
``cmeel.prefix/share/example-robot-data``). A ``file://`` URI or a plain path is taken as it
is, relative to the URDF file's folder when relative. STL (binary or ASCII), DAE, OBJ and the
other formats of coal's ``MeshLoader`` (assimp) are read.

**Fallback** when a mesh cannot be found or read: the link gets a capsule (a warning names the
link and the file). Its axis runs from the link frame's origin to the farthest of: the origins
of the link's child joints, and twice its inertial origin (a body reaching about as far beyond
its centre of mass as it starts before it); its radius is ``fallback_radius``; a link without
any such point gets a sphere of that radius at its origin. ``geometry = "capsules"`` gives
every link this approximation, for kinematics-only URDFs without ``<collision>`` elements.

Self-collision pairs: every pair of links that both have geometry, minus pairs of the same
rigid body (links joined by fixed joints), pairs of bodies joined directly by one joint
(adjacent), pairs that no active joint moves relative to each other, and the
``<disable_collisions>`` pairs of an SRDF when one is given (example-robot-data ships SRDFs).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import site
import sys
import warnings
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import coal
import numpy as np
from lxml import etree
from numpy.typing import NDArray

from ..errors import ConstraintError, UrdfError
from . import spatial
from .tree import KinematicTree
from .urdf import _parse_xml, _xml_parser

Array = NDArray[np.float64]

log = logging.getLogger(__name__)

SHAPE_KINDS = ("box", "cylinder", "sphere", "capsule", "mesh")
"""Kinds of ``<collision>`` geometry read from a URDF."""

OBSTACLE_SHAPES = {
    "box": ("x y z size_x size_y size_z", 6),
    "sphere": ("x y z radius", 4),
    "cylinder": ("x y z radius length", 5),
    "capsule": ("x y z radius length", 5),
}
"""Static obstacle shapes: the numbers after the shape name [m] (root frame; the axis of a
cylinder or capsule is the root z axis, a box's sizes are full edge lengths as in URDF)."""

GEOMETRY_SOURCES = ("collision", "capsules")
"""``collision``: the URDF's ``<collision>`` elements; ``capsules``: every link approximated."""

MESH_SEARCH_ENV = ("ROS_PACKAGE_PATH", "AMENT_PREFIX_PATH", "CMAKE_PREFIX_PATH")
"""Environment variables the ``package://`` search path is read from (in this order)."""


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


@dataclass
class CollisionModel:
    """The shapes of a robot, its obstacles and the pairs to check.

    Attributes:
        shapes: link shapes then obstacles.
        pairs: (i, j) indices into ``shapes``; ``shapes[j]`` may be an obstacle, never i.
        warnings: what was approximated (missing meshes) and why.
    """

    shapes: list[CollisionShape]
    pairs: list[tuple[int, int]]
    warnings: list[str] = field(default_factory=list)

    def pair_names(self) -> list[tuple[str, str]]:
        """(link_a, link_b) of each pair ('' for an obstacle)."""
        return [(self.shapes[i].link, self.shapes[j].link) for i, j in self.pairs]


# ------------------------------------------------------------------------------- meshes
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

    Raises:
        OSError, ValueError, RuntimeError: the file cannot be read as a mesh.
    """
    p = path.resolve()
    return _hull_cached(str(p), p.stat().st_mtime, *(float(s) for s in scale))


# ------------------------------------------------------------------------------- shapes
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


def _bounding(geometry: coal.CollisionGeometry, origin: Array) -> tuple[Array, float]:
    """Centre (3,) in the link frame and radius of a sphere bounding a shape at ``origin``."""
    geometry.computeLocalAABB()
    c = np.asarray(geometry.aabb_center, dtype=float).reshape(3)
    return origin[:3, :3] @ c + origin[:3, 3], float(geometry.aabb_radius)


def primitive(kind: str, dims: Sequence[float]) -> coal.CollisionGeometry:
    """A coal primitive: box (sx, sy, sz full sizes), sphere (r), cylinder / capsule (r, length).

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


def _shape(link: str, kind: str, geometry: coal.CollisionGeometry, origin: Array, source: str,
           approximated: bool = False) -> CollisionShape:  # fmt: skip
    center, radius = _bounding(geometry, origin)
    return CollisionShape(link, kind, origin, geometry, center, radius, source, approximated)


def _segment_capsule(link: str, end: Array, radius: float, source: str) -> CollisionShape:
    """A capsule from the link origin to ``end`` (3,), or a sphere when ``end`` is ~0."""
    length = float(np.linalg.norm(end))
    if length < 1e-6:
        return _shape(link, "sphere", coal.Sphere(radius), np.eye(4), source, True)
    z = end / length
    helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x)
    rot = np.column_stack([x, np.cross(z, x), z])
    origin = spatial.make_pose(rot, 0.5 * end)
    return _shape(link, "capsule", coal.Capsule(radius, length), origin, source, True)


def _fallback_end(tree: KinematicTree, link: str, com: dict[str, Array]) -> Array:
    """The far end of a link's fallback capsule (see the module docstring), link frame."""
    points = [j.origin[:3, 3] for j in tree.joints if j.parent == link]
    if link in com:
        points.append(2.0 * com[link])
    if not points:
        return np.zeros(3)
    return np.asarray(max(points, key=lambda p: float(np.linalg.norm(p))), dtype=float)


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
        search_path: where ``package://`` URIs are looked up (see :func:`package_search_path`).
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
    root = _parse_xml(xml)
    links = set(tree.link_names)
    com: dict[str, Array] = {}
    for le in root.findall("link"):
        name = le.get("name", "")
        io = le.find("inertial/origin")
        if io is not None:
            with contextlib.suppress(UrdfError):  # a bad inertial is not ours to reject
                com[name] = _origin_of(io, f"link {name!r} inertial")[:3, 3]
    shapes: list[CollisionShape] = []
    notes: list[str] = []
    for le in root.findall("link"):
        name = le.get("name", "")
        if name not in links:
            continue
        if geometry == "capsules":
            end = _fallback_end(tree, name, com)
            shapes.append(_segment_capsule(name, end, fallback_radius, "capsule"))
            continue
        for k, ce in enumerate(le.findall("collision")):
            what = f"link {name!r} collision {k}"
            origin = _origin_of(ce.find("origin"), what)
            ge = ce.find("geometry")
            kids = [] if ge is None else [g for g in ge if isinstance(g.tag, str)]
            if not kids:
                raise UrdfError(f"{what}: <geometry> needs one of: {', '.join(SHAPE_KINDS)}")
            g = kids[0]
            if g.tag == "box":
                dims = _floats(g.get("size"), 3, f"{what} box size")
                if np.any(dims <= 0.0):
                    raise UrdfError(f"{what}: box sizes must be > 0, got {dims.tolist()}")
                shapes.append(_shape(name, "box", primitive("box", dims.tolist()), origin, "box"))
            elif g.tag == "sphere":
                r = _positive(g.get("radius"), f"{what} sphere radius")
                shapes.append(_shape(name, "sphere", coal.Sphere(r), origin, "sphere"))
            elif g.tag in ("cylinder", "capsule"):
                r = _positive(g.get("radius"), f"{what} {g.tag} radius")
                length = _positive(g.get("length"), f"{what} {g.tag} length")
                geo = primitive(g.tag, (r, length))
                shapes.append(_shape(name, g.tag, geo, origin, g.tag))
            elif g.tag == "mesh":
                uri = g.get("filename", "")
                scale = _floats(g.get("scale"), 3, f"{what} mesh scale", 1.0)
                path = resolve_uri(uri, search_path, base_dir)
                hull = None
                reason = "not found on the search path"
                if path is not None:
                    try:
                        hull = load_convex_hull(path, scale)
                    except (OSError, ValueError, RuntimeError) as exc:
                        reason = f"unreadable ({_first_message(str(exc))})"
                if hull is not None and path is not None:
                    shapes.append(_shape(name, "mesh", hull, origin, str(path)))
                else:
                    notes.append(
                        f"link {name!r}: mesh {uri!r} {reason}; approximated by a capsule of "
                        f"radius {fallback_radius} m"
                    )
                    end = _fallback_end(tree, name, com)
                    shapes.append(_segment_capsule(name, end, fallback_radius, uri))
            else:
                raise UrdfError(
                    f"{what}: unknown geometry <{g.tag}>; valid: {', '.join(SHAPE_KINDS)}"
                )
    for note in notes:
        warnings.warn(note, stacklevel=2)
        log.warning(note)
    return shapes, notes


def _first_message(text: str) -> str:
    """The line after coal's ``message:`` (its errors start with the C++ file and function)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for i, ln in enumerate(lines):
        if ln.startswith("message:"):
            return " ".join(lines[i : i + 2]).removeprefix("message: ")
    return lines[0] if lines else "no message"


def parse_obstacles(specs: Sequence[str]) -> list[CollisionShape]:
    """Static obstacles in the root frame from strings like ``"box 0.4 0 0.2 0.1 0.1 0.1"``.

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
        out.append(_shape("", kind, primitive(kind, nums[3:]), origin, str(spec)))
    return out


# ------------------------------------------------------------------------------- pairs
def read_srdf_disabled(path: str | Path) -> set[frozenset[str]]:
    """The ``<disable_collisions link1 link2>`` pairs of an SRDF file.

    Raises:
        CollisionGeometryError: the file cannot be read or is not an SRDF.
    """
    try:
        data = Path(path).read_bytes()
        root = etree.fromstring(data, _xml_parser())
    except (OSError, etree.XMLSyntaxError) as exc:
        raise CollisionGeometryError(f"cannot read SRDF {str(path)!r}: {exc}") from None
    if root is None or root.tag != "robot":
        raise CollisionGeometryError(f"SRDF {str(path)!r}: root element must be <robot>")
    out = set()
    for e in root.iter("disable_collisions"):
        a, b = e.get("link1"), e.get("link2")
        if a and b:
            out.add(frozenset((a, b)))
    return out


def _bodies(tree: KinematicTree) -> dict[str, str]:
    """Each link's rigid body: the nearest link at or above it reached by a movable joint."""
    body = {tree.root_link: tree.root_link}
    for j in tree.joints:  # parents before children
        body[j.child] = body[j.parent] if j.type == "fixed" else j.child
    return body


def _moving_joints(tree: KinematicTree) -> dict[str, frozenset[str]]:
    """For each link, the active joints between the root and it (mimic joints: their leader)."""
    active = set(tree.joint_names)
    leader = {}
    for j in tree.joints:
        leader[j.name] = j.mimic.joint if j.mimic is not None else j.name
    out = {tree.root_link: frozenset[str]()}
    for j in tree.joints:
        lead = leader.get(j.name, j.name)
        while lead in leader and leader[lead] != lead:  # a mimic chain ends at its leader
            lead = leader[lead]
        extra = {lead} if j.type != "fixed" and lead in active else set()
        out[j.child] = out[j.parent] | extra
    return out


def self_collision_pairs(
    tree: KinematicTree,
    shapes: Sequence[CollisionShape],
    disabled: Collection[frozenset[str]] = (),
    links: Sequence[str] = (),
) -> list[tuple[int, int]]:
    """Pairs of link shapes to check (see the module docstring for what is left out).

    Args:
        tree: the tree (its active joints decide which pairs can move).
        shapes: the link shapes (obstacles are ignored here).
        disabled: link pairs never checked (an SRDF's ``disable_collisions``).
        links: when not empty, only pairs with at least one link in it.
    """
    body = _bodies(tree)
    parent_body: dict[str, str] = {}
    for j in tree.joints:
        if j.type != "fixed":
            parent_body[j.child] = body[j.parent]
    moving = _moving_joints(tree)
    keep = set(links)
    pairs = []
    for i in range(len(shapes)):
        a = shapes[i].link
        if not a:
            continue
        for k in range(i + 1, len(shapes)):
            b = shapes[k].link
            if not b or a == b:
                continue
            ba, bb = body[a], body[b]
            if ba == bb or parent_body.get(ba) == bb or parent_body.get(bb) == ba:
                continue
            if frozenset((a, b)) in disabled or moving[a] == moving[b]:
                continue
            if keep and a not in keep and b not in keep:
                continue
            pairs.append((i, k))
    return pairs


def collision_model(
    tree: KinematicTree,
    xml: str | bytes | None,
    *,
    geometry: str = "collision",
    fallback_radius: float = 0.05,
    package_path: Iterable[str] = (),
    base_dir: Path | None = None,
    srdf: str = "",
    self_collision: bool = True,
    links: Sequence[str] = (),
    disabled_pairs: Iterable[tuple[str, str]] = (),
    obstacles: Sequence[str] = (),
) -> CollisionModel:
    """Shapes and pairs: self-collision pairs, then each obstacle against each link shape.

    Args:
        tree: the kinematic tree.
        xml: the URDF with the collision elements (None: no link geometry, obstacles only
            against nothing; give one).
        geometry: see :func:`link_shapes`.
        fallback_radius: see :func:`link_shapes` [m].
        base_dir: see :func:`link_shapes`.
        package_path: extra ``package://`` search directories (searched first).
        srdf: path or ``package://`` URI of an SRDF whose ``disable_collisions`` pairs are
            left out ('' = none).
        self_collision: check link against link.
        links: when not empty, only pairs involving these links (and obstacles against them).
        disabled_pairs: further link pairs never checked.
        obstacles: static obstacles (see :func:`parse_obstacles`).

    Raises:
        CollisionGeometryError: a bad obstacle, SRDF, unknown link in ``links``/pairs.
        UrdfError: a malformed ``<collision>`` element.
    """
    names = set(tree.link_names)
    for ln in [*links, *(x for p in disabled_pairs for x in p)]:
        if ln not in names:
            raise CollisionGeometryError(
                f"unknown link {ln!r} in the collision pair filter; links are: "
                + ", ".join(tree.link_names)
            )
    shapes: list[CollisionShape] = []
    notes: list[str] = []
    if xml is not None:
        shapes, notes = link_shapes(
            tree,
            xml,
            geometry=geometry,
            fallback_radius=fallback_radius,
            search_path=package_search_path(package_path),
            base_dir=base_dir,
        )
    disabled = {frozenset(p) for p in disabled_pairs}
    if srdf:
        disabled |= read_srdf_disabled(resolve_file(srdf, package_path, "SRDF"))
    pairs = self_collision_pairs(tree, shapes, disabled, links) if self_collision else []
    n_links = len(shapes)
    moving = _moving_joints(tree)
    for ob in parse_obstacles(obstacles):
        shapes.append(ob)
        j = len(shapes) - 1
        for i in range(n_links):
            ln = shapes[i].link
            if (not links or ln in links) and moving[ln]:
                pairs.append((i, j))
    return CollisionModel(shapes, pairs, notes)


__all__ = [
    "GEOMETRY_SOURCES",
    "MESH_SEARCH_ENV",
    "OBSTACLE_SHAPES",
    "SHAPE_KINDS",
    "CollisionGeometryError",
    "CollisionModel",
    "CollisionShape",
    "collision_model",
    "link_shapes",
    "load_convex_hull",
    "package_search_path",
    "parse_obstacles",
    "primitive",
    "read_srdf_disabled",
    "resolve_file",
    "resolve_uri",
    "self_collision_pairs",
]
