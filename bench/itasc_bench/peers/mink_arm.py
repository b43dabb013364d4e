"""mink on an arm among obstacles: a hand pose kept clear of the collision pairs by a limit.

The peer of ``itasc-bench ik``'s ``panda_obstacles`` row beside :mod:`~itasc_bench.peers.
pink_arm`: mink's differential IK with a ``FrameTask`` on the hand and a
``CollisionAvoidanceLimit`` on every pair of the collision constraint, on MuJoCo's model of the
same URDF (its collision meshes, which MuJoCo collides as their convex hulls, as the constraint
does; the constraint's obstacles added as geoms of the world), its configuration limits in the
QP (``daqp``), integrated until the pose is within the tolerance or the budget ends.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core.constraints.collision import Collision
from itasc_ros.core.kinematics.collision_geometry import resolve_file
from itasc_ros.core.kinematics.tree import KinematicTree

from .contract import PeerUnavailable
from .poses import pose_error

Array = NDArray[np.float64]


def import_mink() -> Any:
    """The ``mink`` module, with ``daqp`` as its QP solver.

    Raises:
        PeerUnavailable: mink or ``daqp`` is not installed (``make limit-peers`` installs
            mink).
    """
    try:
        import mink
        import qpsolvers
    except ImportError as exc:
        raise PeerUnavailable(
            "mink is not importable: install it with 'make limit-peers' (pip install mink)"
        ) from exc
    if "daqp" not in qpsolvers.available_solvers:
        raise PeerUnavailable("mink's QP solver daqp is not installed: pip install daqp")
    return mink


def _model(urdf_path: str, c: Collision) -> tuple[Any, list[int]]:
    """MuJoCo's model of the arm and the obstacles; the geom of each of the constraint's shapes.

    Raises:
        PeerUnavailable: MuJoCo is not installed, or cannot read the URDF or its meshes.
    """
    try:
        import mujoco
        from lxml import etree
    except ImportError as exc:
        raise PeerUnavailable("MuJoCo is not importable: pip install mink") from exc
    assert c.model is not None
    doc = etree.parse(urdf_path)
    for el in doc.xpath("//visual"):
        el.getparent().remove(el)
    meshes = {str(m.get("filename")) for m in doc.xpath("//collision//mesh")}
    dirs = {resolve_file(f, c.package_path, "a collision mesh").parent for f in meshes}
    if len(dirs) > 1:
        raise PeerUnavailable(f"the collision meshes are in several folders: {sorted(dirs)}")
    ext = etree.SubElement(doc.getroot(), "mujoco")
    etree.SubElement(
        ext,
        "compiler",
        fusestatic="false",
        strippath="true",
        meshdir=str(dirs.pop() if dirs else "."),
    )
    try:
        spec = mujoco.MjSpec.from_string(etree.tostring(doc, encoding="unicode"))
        for sh in c.model.shapes:
            if not sh.link:  # an obstacle: a geom of the world
                _add_obstacle(mujoco, spec, sh)
        model = spec.compile()
    except Exception as exc:  # MuJoCo's own errors: the peer cannot run on this URDF
        raise PeerUnavailable(f"MuJoCo cannot load {urdf_path}: {exc}") from exc
    geoms: list[int] = []
    seen: dict[str, int] = {}
    world = [g for g in range(model.ngeom) if model.geom_bodyid[g] == 0]
    for sh in c.model.shapes:
        if sh.link:
            own = [g for g in range(model.ngeom) if model.geom_bodyid[g] == model.body(sh.link).id]
            k = seen.get(sh.link, 0)
            seen[sh.link] = k + 1
            geoms.append(own[k])
        else:
            geoms.append(world.pop(0))
    return model, geoms


def _add_obstacle(mujoco: Any, spec: Any, sh: Any) -> None:
    """One of the constraint's obstacles (a box or a sphere) as a geom of the world."""
    g = spec.worldbody.add_geom()
    g.pos = sh.origin[:3, 3]
    if sh.kind == "box":
        g.type = mujoco.mjtGeom.mjGEOM_BOX
        g.size = np.asarray(sh.geometry.halfSide)
    elif sh.kind == "sphere":
        g.type = mujoco.mjtGeom.mjGEOM_SPHERE
        g.size = [sh.geometry.radius, 0.0, 0.0]
    else:
        raise PeerUnavailable(f"obstacle shape {sh.kind!r} not given to MuJoCo here")


class MinkArm:
    """mink placing one frame on a pose with the constraint's pairs kept ``margin`` apart.

    Args:
        urdf_path: the URDF with the collision geometry (the constraint's).
        tree: the tree the constraint is bound to (its active joints; the others held).
        c: the bound collision constraint (its pairs, obstacles and margin).
        frame: the link placed on the target.
        eps: the largest pose error component at a solution [m or rad].
        timeout: the time budget [s].
        dt: the integration step of one differential IK [s] (task gain 1).
        lm_damping: the frame task's Levenberg-Marquardt damping.

    Raises:
        PeerUnavailable: mink, MuJoCo or daqp is not installed, or the model cannot be made.
    """

    def __init__(
        self,
        urdf_path: str,
        tree: KinematicTree,
        c: Collision,
        frame: str,
        eps: float,
        timeout: float,
        dt: float = 1.0,
        lm_damping: float = 1e-3,
    ) -> None:
        mink = self.mink = import_mink()
        assert c.model is not None
        self.model, geoms = _model(urdf_path, c)
        self._adr = np.array([self.model.joint(n).qposadr[0] for n in tree.joint_names])
        self.frame = frame
        self.task = mink.FrameTask(
            frame, "body", position_cost=1.0, orientation_cost=1.0, lm_damping=lm_damping
        )
        pairs = [([geoms[a]], [geoms[b]]) for a, b in c.model.pairs]
        self.limits = [
            mink.ConfigurationLimit(self.model),
            mink.CollisionAvoidanceLimit(
                self.model,
                pairs,
                minimum_distance_from_collisions=c.margin,
                collision_detection_distance=c.margin + c.activation_distance,
            ),
        ]
        self.eps, self.timeout, self.dt = eps, timeout, dt

    def solve(self, seed: Array, target: Array) -> Array | None:
        """The tree's joint positions (n,) placing the frame on ``target`` (4, 4), or None."""
        mink = self.mink
        self.task.set_target(mink.SE3.from_matrix(target))
        q = np.zeros(self.model.nq)
        q[self._adr] = seed
        conf = mink.Configuration(self.model, q)
        deadline = time.perf_counter() + self.timeout
        while time.perf_counter() < deadline:
            pose = conf.get_transform_frame_to_world(self.frame, "body").as_matrix()
            if np.all(np.abs(pose_error(pose, target)) <= self.eps):
                return np.asarray(conf.q)[self._adr].copy()
            try:
                v = mink.solve_ik(conf, [self.task], self.dt, "daqp", limits=self.limits)
            except mink.exceptions.NoSolutionFound:  # an infeasible QP (a start in collision)
                return None
            conf.integrate_inplace(v, self.dt)
        return None


__all__ = ["MinkArm", "import_mink"]
