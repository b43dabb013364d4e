"""Collision: keep every checked pair of shapes at least ``margin`` apart (an inequality).

For each pair (a, b) the collision library coal gives the distance d and the nearest points
p_a, p_b (root frame) with the unit normal n from a to b. The output of its row is ``y = d``
and, with the point Jacobians of the two links at the nearest points,
``y' = -n^T (J_a(p_a) - J_b(p_b)) q'`` (the seed's "collision limits"): ``A = -n^T (J_a - J_b)``,
``B = 0`` (a static obstacle has ``J_b = 0``).

The inequality ``d >= margin``, row by row:

* a row is off (weight 0) beyond ``margin + activation_distance``; inside, its weight rises
  smoothly (smoothstep) to ``weight`` at the margin;
* it asks ``y' >= y'_d = gain (margin + buffer - d)``: above ``margin + buffer`` an approach
  no faster than ``gain`` times the room left (a velocity damper: the distance closes at most
  exponentially), below it a push outward;
* the rows are one-sided and hard (:attr:`one_sided`, :attr:`hard`): a row on (inside the
  activation distance) is no level's task but a bound of every priority level, kept as the
  joints' velocity box is (:mod:`itasc_ros.core.solve.saturation`), so no task at any
  priority drives a pair below its margin; a pair that the motion keeps apart anyway neither
  brakes nor pulls the robot.

Rows: one per pair (``max_rows`` 0) or the ``max_rows`` closest pairs (a fixed layout).

Broad phase: a pair is queried only when a lower bound of its distance is within
``margin + activation_distance`` (its row may act). The bound is the larger of two: the
distance of the shapes' bounding spheres, and the pair's last queried distance minus how far
each shape has moved since (temporal coherence: at 1 kHz a pair a few centimetres beyond the
activation distance is queried again only every few dozen ticks). A pair not queried has
weight 0, ``A = 0`` and ``y`` = that lower bound; a pair queried beyond the activation distance
has its exact ``y`` and weight 0 (its nearest points are not read).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import coal
import numpy as np
from numpy.typing import NDArray

from ..errors import ConstraintError
from ..kinematics.collision_geometry import (
    GEOMETRY_SOURCES,
    CollisionGeometryError,
    CollisionModel,
    collision_model,
    parse_obstacles,
    read_srdf_disabled,
    resolve_file,
)
from ..kinematics.tree import KinematicTree
from . import _collision_kernels as K
from .base import Constraint
from .schema import Field

Array = NDArray[np.float64]

GJK_TOLERANCE = 1e-9
"""Convergence tolerance of coal's GJK distance queries [m]."""

MAX_ROWS = 1000
"""Most rows of one collision constraint: more pairs need ``max_rows`` (or ``links``)."""

NORMAL_FROM_POINTS = 1e-6
"""Above this |distance| [m] the normal is (p_b - p_a) / d (coal's own normal is read below)."""

_MODELS: dict[tuple[Any, ...], CollisionModel] = {}  # built models by URDF and settings


def _pair_list(specs: list[str]) -> list[tuple[str, str]]:
    out = []
    for s in specs:
        words = s.split()
        if len(words) != 2:
            raise CollisionGeometryError(
                f"disabled pair {s!r} must be two link names separated by a space, "
                "e.g. 'panda_link0 panda_hand'"
            )
        out.append((words[0], words[1]))
    return out


class Collision(Constraint):
    """Self-collision and obstacle avoidance: ``d >= margin`` for every checked pair.

    Args:
        name: constraint name.
        margin: smallest distance kept [m].
        activation_distance: a row acts below ``margin + activation_distance`` [m] (> 0).
        buffer: the push-out aims at ``margin + buffer`` [m].
        geometry: 'collision' (the URDF's collision elements) or 'capsules' (every link a
            capsule along its joint-origin segment: for kinematics-only URDFs).
        urdf_file: URDF with the collision geometry, a path or ``package://`` URI ('' = the
            robot's own URDF; its links missing from the robot are skipped).
        package_path: directories searched first for ``package://`` meshes.
        srdf_file: SRDF (path or ``package://`` URI) whose ``disable_collisions`` pairs are
            not checked ('' = none).
        fallback_radius: radius of the capsules that replace missing meshes [m].
        self_collision: check the robot's links against each other.
        links: when not empty, only pairs involving one of these links.
        between: when not empty, only pairs of links of different groups (name prefixes).
        disabled_pairs: further pairs never checked, as 'link_a link_b' strings.
        obstacles: static obstacles in the root frame ('box x y z sx sy sz', 'sphere x y z r',
            'cylinder x y z r length', 'capsule x y z r length').
        max_rows: 0 = one row per pair; else the rows of the ``max_rows`` closest pairs.
        weight: weight of a row at or below the margin.
        gain: feedback gain K [1/s] of the damper.
    """

    type_name = "collision"
    one_sided = True
    hard = True
    FIELDS = (
        Field("margin", "double", 0.02, "Smallest distance kept [m].", 0.0, 1.0, live=True),
        Field(
            "activation_distance",
            "double",
            0.1,
            "A pair acts when closer than margin + this [m].",
            0.001,
            10.0,
            live=True,
        ),
        Field(
            "buffer", "double", 0.005, "The push-out aims at margin + buffer [m].", 0.0, 0.5, True
        ),
        Field(
            "geometry",
            "string",
            "collision",
            "Link shapes: the URDF's <collision> elements, or capsules along each link.",
            choices="one of: " + ", ".join(GEOMETRY_SOURCES),
        ),
        Field(
            "urdf_file",
            "string",
            "",
            "URDF with the collision geometry, path or package:// URI ('' = the robot's).",
        ),
        Field("package_path", "string_array", [], "Directories searched for package:// meshes."),
        Field(
            "srdf_file",
            "string",
            "",
            "SRDF (path or package:// URI) whose disable_collisions pairs are skipped.",
        ),
        Field(
            "fallback_radius",
            "double",
            0.05,
            "Radius of the capsule replacing a missing mesh [m].",
            0.001,
            1.0,
        ),
        Field("self_collision", "bool", True, "Check the robot's links against each other."),
        Field("links", "string_array", [], "Only pairs involving these links ([] = all)."),
        Field(
            "between",
            "string_array",
            [],
            "Only pairs of links of different groups, each a link-name prefix (several "
            "robots: [a_, b_]); [] = every pair.",
        ),
        Field("disabled_pairs", "string_array", [], "Pairs never checked: 'link_a link_b'."),
        Field(
            "obstacles",
            "string_array",
            [],
            "Static obstacles, root frame [m]: 'box x y z sx sy sz', 'sphere x y z r', "
            "'cylinder x y z r length', 'capsule x y z r length'.",
            live=True,
        ),
        Field(
            "max_rows",
            "double",
            0.0,
            "Rows: 0 = one per pair, else the closest max_rows pairs.",
            0.0,
            10000.0,
        ),
        Field("weight", "double", 1e4, "Weight of a row at the margin.", 0.0, 1e6, live=True),
        Field("gain", "double", 5.0, "Damper gain K [1/s].", 0.0, 1000.0, live=True),
        *(f for f in Constraint.FIELDS if f.name not in ("weight", "gain")),
    )

    @classmethod
    def example_settings(cls, tree: KinematicTree) -> list[dict[str, Any]]:
        """Capsule self-collision and obstacles, every pair active (see :class:`Constraint`)."""
        tip = tree.tip_link()
        p = tree.forward_kinematics(tree.neutral(), tip)[:3, 3]
        return [
            {"geometry": "capsules", "activation_distance": 5.0, "fallback_radius": 0.04},
            {
                "geometry": "capsules",
                "self_collision": False,
                "obstacles": [
                    f"sphere {p[0] + 0.3:.3f} {p[1]:.3f} {p[2]:.3f} 0.05",
                    f"capsule {p[0]:.3f} {p[1] - 0.4:.3f} {p[2]:.3f} 0.05 0.2",
                ],
                "activation_distance": 5.0,
                "max_rows": 4.0,
                "margin": 0.05,
            },
        ]

    @classmethod
    def from_settings(cls, name: str, settings: Mapping[str, Any]) -> Collision:
        """Build from checked settings (see :class:`Constraint`); geometry is read at bind."""
        return cls(name, **dict(settings))

    def __init__(
        self,
        name: str,
        margin: float = 0.02,
        activation_distance: float = 0.1,
        buffer: float = 0.005,
        geometry: str = "collision",
        urdf_file: str = "",
        package_path: list[str] | None = None,
        srdf_file: str = "",
        fallback_radius: float = 0.05,
        self_collision: bool = True,
        links: list[str] | None = None,
        between: list[str] | None = None,
        disabled_pairs: list[str] | None = None,
        obstacles: list[str] | None = None,
        max_rows: float = 0.0,
        weight: float = 1e4,
        gain: float = 5.0,
        **base: Any,
    ) -> None:
        super().__init__(name, weight, gain, feedforward=False)
        for key, value in base.items():  # the base type's further settings (e.g. priority)
            setattr(self, key, value)
        self.set_margin(margin, activation_distance, buffer)
        if geometry not in GEOMETRY_SOURCES:
            raise CollisionGeometryError(
                f"{name}: unknown geometry {geometry!r}; choices are: "
                + ", ".join(GEOMETRY_SOURCES)
            )
        if max_rows != int(max_rows) or max_rows < 0:
            raise CollisionGeometryError(f"{name}: max_rows must be a whole number >= 0")
        self.geometry = geometry
        self.urdf_file = urdf_file
        self.package_path = list(package_path or [])
        self.srdf_file = srdf_file
        self.fallback_radius = float(fallback_radius)
        self.self_collision = bool(self_collision)
        self.links = list(links or [])
        self.between = list(between or [])
        self.disabled_pairs = _pair_list(list(disabled_pairs or []))
        self.obstacles = list(obstacles or [])
        parse_obstacles(self.obstacles)  # named errors now, not at bind
        if srdf_file:
            read_srdf_disabled(resolve_file(srdf_file, self.package_path, f"{name}: srdf_file"))
        self._urdf_path = (
            resolve_file(urdf_file, self.package_path, f"{name}: urdf_file") if urdf_file else None
        )
        self.max_rows = int(max_rows)
        self.model: CollisionModel | None = None
        self._rows = 0
        self._dist = np.zeros(0)
        self._measured = False  # distances measured since the last bind

    def set_margin(self, margin: float, activation_distance: float, buffer: float) -> None:
        """Margin [m], activation distance [m] (> 0) and buffer [m]."""
        for what, v in (("margin", margin), ("buffer", buffer)):
            if not (math.isfinite(v) and v >= 0.0):
                raise CollisionGeometryError(f"{self.name}: {what} must be >= 0, got {v!r}")
        if not (math.isfinite(activation_distance) and activation_distance > 0.0):
            raise CollisionGeometryError(
                f"{self.name}: activation_distance must be > 0, got {activation_distance!r}"
            )
        self.margin = float(margin)
        self.activation_distance = float(activation_distance)
        self.buffer = float(buffer)

    # -- geometry ---------------------------------------------------------------------
    def _model(self, tree: KinematicTree) -> CollisionModel:
        if self._urdf_path is not None:
            try:
                xml: str | bytes | None = self._urdf_path.read_bytes()
            except OSError as exc:
                raise CollisionGeometryError(
                    f"{self.name}: cannot read urdf_file: {exc}"
                ) from None
            base_dir: Path | None = self._urdf_path.resolve().parent
        else:
            xml, base_dir = tree.urdf_xml, None
        if xml is None:
            raise CollisionGeometryError(
                f"{self.name}: the tree has no URDF document to read collision geometry from; "
                "set urdf_file"
            )
        raw = xml.encode("utf-8") if isinstance(xml, str) else xml
        key = (
            hashlib.sha1(raw).hexdigest(),
            tuple(tree.link_names),
            tuple(tree.joint_names),
            self.geometry,
            self.fallback_radius,
            tuple(self.package_path),
            str(base_dir),
            self.srdf_file,
            self.self_collision,
            tuple(self.links),
            tuple(self.between),
            tuple(self.disabled_pairs),
            tuple(self.obstacles),
        )
        model = _MODELS.get(key)
        if model is None:
            model = collision_model(
                tree,
                xml,
                geometry=self.geometry,
                fallback_radius=self.fallback_radius,
                package_path=self.package_path,
                base_dir=base_dir,
                srdf=self.srdf_file,
                self_collision=self.self_collision,
                links=self.links,
                disabled_pairs=self.disabled_pairs,
                between=self.between,
                obstacles=self.obstacles,
            )
            if len(_MODELS) > 32:
                _MODELS.clear()
            _MODELS[key] = model
        if not model.pairs:
            raise CollisionGeometryError(
                f"{self.name}: no collision pairs to check ({len(model.shapes)} shapes): the "
                "URDF has no <collision> elements on movable links, or the filters leave none; "
                "set geometry: capsules for a kinematics-only URDF, or add obstacles"
            )
        return model

    @property
    def n_pairs(self) -> int:
        """Number of checked pairs (after :meth:`bind`)."""
        return 0 if self.model is None else len(self.model.pairs)

    @property
    def pair_distances(self) -> Array:
        """(p,) each pair's distance at the last update [m], in the pairs' order.

        Exact where it was queried, else a lower bound (the broad phase's). Read only; valid
        until the next update.
        """
        return self._dist

    @property
    def pairs_queried(self) -> NDArray[np.bool_]:
        """(p,) the pairs whose distance the last update queried exactly.

        The others were culled by the broad phase. Read only; valid until the next update.
        """
        return self._queried

    @property
    def n_rows(self) -> int:
        """Number of output rows m (see :class:`Constraint`)."""
        return self._rows

    def bind(self, tree: KinematicTree) -> None:
        """Read the geometry, pair it, and preallocate the queries (see :class:`Constraint`)."""
        model = self._model(tree)
        self.model = model
        self._measured = False
        shapes, pairs = model.shapes, model.pairs
        s, p, n = len(shapes), len(pairs), tree.n_joints
        rows = p if self.max_rows == 0 else min(self.max_rows, p)
        if rows > MAX_ROWS:
            raise CollisionGeometryError(
                f"{self.name}: {p} collision pairs would be {rows} rows, more than {MAX_ROWS}; "
                "set max_rows (the closest pairs, e.g. 20) or links, or give an SRDF"
            )
        self._link_idx = np.array(
            [tree.link_index(sh.link) if sh.link else -1 for sh in shapes], dtype=np.int64
        )
        self._origins = np.array([sh.origin for sh in shapes]).reshape(s, 4, 4)
        self._centers = np.array([sh.center for sh in shapes]).reshape(s, 3)
        self._radius = np.array([sh.radius for sh in shapes])
        self._rot = np.zeros((s, 3, 3))
        self._pos = np.zeros((s, 3))
        self._cw = np.zeros((s, 3))
        for k, sh in enumerate(shapes):
            if not sh.link:  # obstacles: fixed in the root frame
                self._rot[k] = sh.origin[:3, :3]
                self._pos[k] = sh.origin[:3, 3]
                self._cw[k] = sh.center
        self._rot_views = [self._rot[k] for k in range(s)]
        self._pos_views = [self._pos[k] for k in range(s)]
        self._tf = [coal.Transform3s() for _ in range(s)]
        for k in range(s):
            self._tf[k].setRotation(self._rot[k])
            self._tf[k].setTranslation(self._pos[k])
        self._pairs = np.array(pairs, dtype=np.int64).reshape(p, 2)
        self._queries = [
            coal.ComputeDistance(shapes[a].geometry, shapes[b].geometry) for a, b in pairs
        ]
        self._requests = []
        for _ in range(p):
            rq = coal.DistanceRequest()
            rq.enable_signed_distance = True
            rq.gjk_tolerance = GJK_TOLERANCE
            self._requests.append(rq)
        self._results = [coal.DistanceResult() for _ in range(p)]
        self._calls = [
            (self._queries[r], self._tf[a], self._tf[b], self._requests[r], self._results[r])
            for r, (a, b) in enumerate(pairs)
        ]
        self._dist = np.zeros(p)  # (p,) distance (or its lower bound) of each pair [m]
        self._queried = np.zeros(p, dtype=np.bool_)
        self._exact = np.zeros(p)  # (p,) each pair's last queried distance [m]
        self._known = np.zeros(p, dtype=np.bool_)  # a pair has been queried since bind
        self._last_c = np.zeros((p, 2, 3))  # its shapes' centres then [m]
        self._last_r = np.zeros((p, 2, 3, 3))  # and rotations
        self._todo = np.zeros(p, dtype=np.int64)  # pairs to query this tick
        self._need = np.zeros(s, dtype=np.bool_)
        self._shape_list = np.zeros(s, dtype=np.int64)  # link shapes to place this tick
        self._pa = np.zeros((p, 3))  # nearest points [m], root frame
        self._pb = np.zeros((p, 3))
        self._normal = np.zeros((p, 3))  # unit normal from a to b
        rows = p if self.max_rows == 0 else min(self.max_rows, p)
        self._rows = rows
        self._row_pair = np.arange(rows, dtype=np.int64)
        self._row_active = np.zeros(rows, dtype=np.bool_)
        self._ja = np.zeros((6, n))
        self._jb = np.zeros((6, n))
        self._has_b = np.array([bool(shapes[b].link) for _, b in pairs])
        self._pair_links = np.array(
            [(self._link_idx[a], self._link_idx[b]) for a, b in pairs], dtype=np.int64
        ).reshape(p, 2)
        self._kernel_arrays = tree.kernel_arrays()
        self._jfull = np.zeros((6, len(tree.all_joint_names)))
        self._structure_changed()

    # -- the tick -----------------------------------------------------------------------
    def update_distances(self, tree: KinematicTree) -> None:
        """Distances, nearest points and normals of every pair after ``tree.compute(q)``."""
        K.shape_poses(
            tree.poses_ref(),
            self._link_idx,
            self._origins,
            self._centers,
            self._rot,
            self._pos,
            self._cw,
        )
        reach = self.margin + self.activation_distance
        n, ns = K.plan_queries(
            self._pairs,
            self._cw,
            self._rot,
            self._radius,
            self._link_idx,
            reach,
            self._dist,
            self._queried,
            self._todo,
            self._need,
            self._shape_list,
            self._exact,
            self._known,
            self._last_c,
            self._last_r,
        )
        tfs, rots, poss, shape_list = self._tf, self._rot_views, self._pos_views, self._shape_list
        for i in range(ns):
            k = shape_list[i]
            tf = tfs[k]
            tf.setRotation(rots[k])
            tf.setTranslation(poss[k])
        dist, pa, pb, normal, calls, todo = (
            self._dist,
            self._pa,
            self._pb,
            self._normal,
            self._calls,
            self._todo,
        )
        for i in range(n):
            r = todo[i]
            query, tfa, tfb, request, res = calls[r]
            res.clear()  # a result keeps the smallest distance it has seen
            d = query(tfa, tfb, request, res)
            dist[r] = d
            if d >= reach:  # the row is off: its points and normal are not read
                continue
            pa[r] = res.getNearestPoint1()
            pb[r] = res.getNearestPoint2()
            if -NORMAL_FROM_POINTS < d < NORMAL_FROM_POINTS:
                normal[r] = res.normal  # else (p_b - p_a) / d, in the kernel
        self._measured = True

    def update(
        self, tree: KinematicTree, q: Array, a: Array, b: Array, y: Array, ydot: Array, wy: Array
    ) -> None:
        """Write this constraint's rows (see :meth:`Constraint.update`)."""
        self.update_distances(tree)
        if self._rows < self._dist.shape[0]:
            K.closest_rows(self._dist, self._rows, self._row_pair)
        b[:, :] = 0.0
        ints, floats, poses, _, sel = self._kernel_arrays
        K.collision_rows(
            ints,
            floats,
            poses,
            sel,
            self._jfull,
            self._ja,
            self._jb,
            self._row_pair,
            self._queried,
            self._dist,
            self._pa,
            self._pb,
            self._normal,
            self._pair_links,
            self._has_b,
            self.margin,
            self.activation_distance,
            self.buffer,
            self.gain,
            self.weight,
            NORMAL_FROM_POINTS,
            a,
            y,
            ydot,
            wy,
            self._row_active,
        )

    def error(self, y: Array) -> float:
        """How far the closest acting pair is inside the margin [m] (0 when none is)."""
        worst = 0.0
        for r in range(self._rows):
            if self._row_active[r]:
                worst = max(worst, self.margin - float(y[r]))
        return worst

    # -- reporting ------------------------------------------------------------------------
    def min_distance(self, q: Array | None = None) -> float:
        """Smallest distance over the pairs [m]: at ``q``, or at the last solve.

        Pairs too far apart to be queried count with a lower bound of their distance.

        Args:
            q: (n,) joint positions of the bound tree [rad or m] to measure at (this recomputes
                the tree's link poses); None: the distances of the last solve.

        Raises:
            ConstraintError: not bound to a tree yet, or ``q`` is None and nothing has been
                measured since the constraint was bound (no fake distance before a solve).
        """
        self._measure(q)
        return float(self._dist.min()) if self._dist.shape[0] else math.inf

    def distances(self, q: Array | None = None) -> dict[tuple[str, str], float]:
        """Distance [m] of each link pair, by (link_a, link_b): at ``q``, or at the last solve.

        '' stands for an obstacle; a link pair with several shapes gives its smallest distance,
        and a pair too far apart to be queried a lower bound (above margin + activation).

        Args:
            q: as :meth:`min_distance`.

        Raises:
            ConstraintError: as :meth:`min_distance`.
        """
        self._measure(q)
        assert self.model is not None
        out: dict[tuple[str, str], float] = {}
        for (la, lb), d in zip(self.model.pair_names(), self._dist, strict=True):
            out[(la, lb)] = min(out.get((la, lb), math.inf), float(d))
        return out

    def _measure(self, q: Array | None) -> None:
        """Measure the distances at ``q``, or check that a solve has measured them."""
        tree = self.bound_tree
        if tree is None:
            raise ConstraintError(
                f"{self.name}: no distances: the constraint is not bound to a robot yet "
                "(add it to a Scene or a Controller)"
            )
        if q is not None:
            tree.compute(np.asarray(q, dtype=float))
            self.update_distances(tree)
        elif not self._measured:
            raise ConstraintError(
                f"{self.name}: no distances yet: they are measured at each solve "
                "(Scene.solve, Controller.step); solve first, or pass q to measure there"
            )


__all__ = ["GJK_TOLERANCE", "MAX_ROWS", "NORMAL_FROM_POINTS", "Collision"]
