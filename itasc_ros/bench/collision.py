"""The collision constraint's distance queries beside Pinocchio + coal on the same pairs.

:func:`pinocchio_reference` builds Pinocchio's model and collision ``GeometryModel`` from the
same URDF (Pinocchio's own mesh loading), each mesh replaced by its convex hull as the
constraint uses it, with exactly the constraint's pairs (and its static obstacles). Its
:meth:`PinocchioReference.distances` runs ``pinocchio.computeDistances`` (FK, geometry
placements, one coal distance query per pair, in C++). Used by ``itasc-bench collision`` and
by the tests (distances equal to 1e-6).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..core.constraints.collision import GJK_TOLERANCE, Collision
from ..core.kinematics.collision_geometry import package_search_path
from ..core.kinematics.tree import KinematicTree
from .harness import time_interleaved

Array = NDArray[np.float64]


@dataclass
class PinocchioReference:
    """Pinocchio's model, data and geometry of a robot with the constraint's pairs.

    Attributes:
        model: ``pinocchio.Model``.
        data: its data.
        geom_model: ``pinocchio.GeometryModel`` with the pairs in the constraint's order.
        geom_data: its data (distance requests with the constraint's tolerance).
        q_index: (n,) index in Pinocchio's q of each of the tree's active joints.
    """

    model: Any
    data: Any
    geom_model: Any
    geom_data: Any
    q_index: NDArray[np.int64]

    def q_of(self, q: Array) -> Array:
        """Pinocchio's configuration (nq,) for the tree's joint positions ``q`` (n,)."""
        import pinocchio as pin

        out = np.asarray(pin.neutral(self.model), dtype=float).copy()
        out[self.q_index] = q
        return out

    def distances(self, q_pin: Array) -> Array:
        """(p,) the distance of every pair at Pinocchio's configuration ``q_pin`` [m]."""
        import pinocchio as pin

        pin.computeDistances(self.model, self.data, self.geom_model, self.geom_data, q_pin)
        return np.array([r.min_distance for r in self.geom_data.distanceResults])


def pinocchio_reference(urdf_path: str, tree: KinematicTree, c: Collision) -> PinocchioReference:
    """Pinocchio + coal with the pairs of a bound collision constraint (see the module doc).

    Args:
        urdf_path: the URDF file with the collision geometry (the constraint's).
        tree: the tree the constraint is bound to (its active joints map into Pinocchio's q).
        c: the bound constraint.
    """
    import coal
    import pinocchio as pin

    assert c.model is not None
    model = pin.buildModelFromUrdf(urdf_path)
    dirs = [str(d) for d in package_search_path(c.package_path) if d.is_dir()]
    with warnings.catch_warnings():  # "package dirs passed": they are the same ones
        warnings.simplefilter("ignore", UserWarning)
        geom = pin.buildGeomFromUrdf(model, urdf_path, pin.GeometryType.COLLISION, dirs)
    for go in geom.geometryObjects:  # meshes as their convex hulls, as the constraint has them
        g = go.geometry
        if isinstance(g, coal.BVHModelBase):
            g.buildConvexHull(True, "Qt")
            go.geometry = g.convex
    # The constraint's shapes in Pinocchio's order: link name and index of the <collision>.
    index: dict[tuple[str, int], int] = {}
    for i, go in enumerate(geom.geometryObjects):
        link = model.frames[go.parentFrame].name
        k = sum(1 for key in index if key[0] == link)
        index[(link, k)] = i
    ours: list[int] = []
    seen: dict[str, int] = {}
    for sh in c.model.shapes:
        if sh.link:
            k = seen.get(sh.link, 0)
            seen[sh.link] = k + 1
            ours.append(index[(sh.link, k)])
        else:  # a static obstacle: a geometry object on the universe
            placement = pin.SE3(sh.origin[:3, :3].copy(), sh.origin[:3, 3].copy())
            ob = pin.GeometryObject(f"obstacle_{len(ours)}", 0, 0, placement, sh.geometry)
            ours.append(geom.addGeometryObject(ob))
    for a, b in c.model.pairs:
        geom.addCollisionPair(pin.CollisionPair(ours[a], ours[b]))
    gdata = pin.GeometryData(geom)
    for rq in gdata.distanceRequests:
        rq.gjk_tolerance = GJK_TOLERANCE
        rq.enable_signed_distance = True
    q_index = np.array(
        [model.joints[model.getJointId(j)].idx_q for j in tree.joint_names], dtype=np.int64
    )
    return PinocchioReference(model, model.createData(), geom, gdata, q_index)


PANDA_URDF = "package://example-robot-data/robots/panda_description/urdf/panda.urdf"
PANDA_SRDF = "package://example-robot-data/robots/panda_description/srdf/panda.srdf"
ARM = [f"panda_joint{i}" for i in range(1, 8)]


def _near_configuration(ctrl: Any, seconds: float) -> Array:
    """The Panda's joints after ``seconds`` of the self_collision scenario (pairs close)."""
    from ..core.kinematics import spatial
    from ..tools.scenarios.self_collision import HOME, TARGET

    q = HOME.copy()
    quat = spatial.matrix_to_quat(ctrl.tree.forward_kinematics(q, "panda_hand")[:3, :3])
    dt = 1.0 / ctrl.config.control_rate
    for k in range(round(seconds / dt)):
        ctrl.set_joint_state(ctrl.joint_names, q, k * dt)
        if k == 0:
            ctrl.set_target("ee", "", TARGET, quat, 0.0)
        q = q + ctrl.step(k * dt).qdot * dt
    return q


def bench_collision(number: int, repeats: int) -> dict[str, Any]:
    """Distance queries per tick: the constraint vs ``pinocchio.computeDistances``; the tick.

    The Panda of example-robot-data, the pairs its SRDF leaves in (meshes as convex hulls), at
    two configurations: ``home`` and ``near`` (after 3 s of the self_collision scenario, the
    arm folded against its base). ``queries``: FK + every pair's distance and nearest points
    (the constraint with the broad phase off, so that both compute every pair), beside
    Pinocchio's FK + geometry placements + the same queries in C++. ``queries_culled``: the
    constraint as configured (pairs farther than margin + activation_distance by their
    bounding spheres are not queried). ``rows``: the constraint's whole update (queries and
    rows of A). ``tick``: the controller's tick (joint state, target, step) of
    config/panda_self_collision.yaml, and the same configuration without the collision
    constraint.
    """
    import copy

    from ..core import Controller, Scene
    from ..core.kinematics.collision_geometry import resolve_file
    from ..params import load_config
    from ..tools.resources import share_file

    urdf = resolve_file(PANDA_URDF, (), "Panda URDF")
    full = KinematicTree.from_urdf_file(urdf)
    tree = full.select_joints(ARM)
    every = Collision("c", srdf_file=PANDA_SRDF, activation_distance=10.0)
    culled = Collision("c", srdf_file=PANDA_SRDF)
    Scene(tree, [every])
    scene = Scene(tree, [culled])
    ref = pinocchio_reference(str(urdf), tree, every)
    cfg = load_config(share_file("config", "panda_self_collision.yaml"))
    plain = copy.deepcopy(cfg)
    plain.constraints = [c for c in plain.constraints if c.type != "collision"]
    near = _near_configuration(Controller(full, cfg), 3.0)
    out: dict[str, Any] = {"pairs": every.n_pairs, "robot": "panda", "urdf": str(urdf)}
    for label, q in (("home", np.array(PANDA_HOME)), ("near", near)):
        qp = ref.q_of(q)
        tree.compute(q)
        every.update_distances(tree)
        err = float(np.abs(every._dist - ref.distances(qp)).max())

        def ours(q: Array = q) -> None:
            tree.compute(q)
            every.update_distances(tree)

        def ours_culled(q: Array = q) -> None:
            tree.compute(q)
            culled.update_distances(tree)

        def peer(qp: Array = qp) -> Array:
            return ref.distances(qp)

        def rows(q: Array = q) -> None:
            scene.update(q)

        funcs: dict[str, Callable[[], Any]] = {
            "itasc_ros": ours,
            "pinocchio": peer,
            "itasc_ros_culled": ours_culled,
            "itasc_ros_rows": rows,
        }
        funcs.update(_ticks(Controller, full, cfg, plain, q))
        t = time_interleaved(funcs, number, repeats)
        tree.compute(q)
        culled.update_distances(tree)
        row: dict[str, Any] = {f"{k}_us": v * 1e6 for k, v in t.items()}
        row["queries_ratio_vs_pinocchio"] = t["itasc_ros"] / t["pinocchio"]
        row["max_distance_difference_m"] = err
        row["min_distance_m"] = float(every._dist.min())
        row["pairs_queried_culled"] = int(culled._queried.sum())
        row["tick_collision_overhead_us"] = (t["tick_collision"] - t["tick_plain"]) * 1e6
        row["tick_fits_1khz"] = bool(t["tick_collision"] < 1e-3)
        out[label] = row
    out["queries_ratio_vs_pinocchio"] = out["near"]["queries_ratio_vs_pinocchio"]
    out["tick_collision_near_us"] = out["near"]["tick_collision_us"]
    return out


def _ticks(ctrl_cls: Any, full: KinematicTree, cfg: Any, plain: Any, q: Array) -> dict[str, Any]:
    """The node's tick in the core with and without the collision constraint, at ``q``."""
    from ..core.kinematics import spatial
    from ..tools.scenarios.self_collision import TARGET

    funcs = {}
    for name, c in (("tick_collision", cfg), ("tick_plain", plain)):
        ctrl = ctrl_cls(full, c)
        quat = spatial.matrix_to_quat(ctrl.tree.forward_kinematics(q, "panda_hand")[:3, :3])
        clock = [1000.0]

        def tick(ctrl: Any = ctrl, clock: list[float] = clock, quat: Array = quat) -> Any:
            clock[0] += 0.001
            now = clock[0]
            ctrl.set_joint_state(ARM, q, now, now)
            ctrl.set_target("ee", "", TARGET, quat, now, now)
            return ctrl.step(now)

        funcs[name] = tick
    return funcs


PANDA_HOME = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]

__all__ = ["PinocchioReference", "bench_collision", "pinocchio_reference"]
