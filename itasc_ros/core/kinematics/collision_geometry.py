"""The collision model of a robot: link shapes from the URDF, obstacles, the pairs to check.

ROS-free. :func:`collision_model` puts together the parts, each in a module of its own:

- the link shapes read from the URDF's ``<collision>`` elements, meshes as convex hulls,
  with a fallback capsule for a mesh that cannot be read (``urdf_collisions``,
  ``convex_hull``; one coal shape each: ``collision_shape``);
- where ``package://`` and ``file://`` URIs of meshes and SRDFs point (``uri_resolution``);
- the self-collision pairs: every pair of links that both have geometry, minus pairs of the
  same rigid body, adjacent bodies, pairs that no active joint moves relative to each other,
  and an SRDF's ``<disable_collisions>`` pairs (``collision_pairs``);
- static obstacles in the root frame, each checked against every link shape that moves
  (``obstacles``).

Every name of those modules that callers use is importable from here too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .collision_pairs import moving_joints, read_srdf_disabled, self_collision_pairs
from .collision_shape import SHAPE_KINDS, CollisionGeometryError, CollisionShape, primitive
from .convex_hull import load_convex_hull
from .obstacles import OBSTACLE_SHAPES, parse_obstacles
from .tree import KinematicTree
from .urdf_collisions import GEOMETRY_SOURCES, link_shapes
from .uri_resolution import MESH_SEARCH_ENV, package_search_path, resolve_file, resolve_uri


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
    between: Sequence[str] = (),
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
        between: when not empty, only pairs of links of different groups (name prefixes).
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
    pairs = self_collision_pairs(tree, shapes, disabled, links, between) if self_collision else []
    n_links = len(shapes)
    moving = moving_joints(tree)
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
