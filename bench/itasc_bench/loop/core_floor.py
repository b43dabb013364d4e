"""The floor plus the core's work: what a tick costs before the node's own ROS side.

``itasc-bench loop --floor --core-floor`` runs this node beside the floor and the node, so that
the node's CPU splits into three measured layers:

* the floor (:mod:`itasc_bench.floor_node`): rclpy and DDS, the wait, a take and a publish;
* ``floor_work:=solve``: the floor, and each tick the configured scene solved at the joint
  state it took (:meth:`~itasc_ros.core.solve.scene.Scene.solve`: FK, Jacobians, the tasks'
  rows, the joints' velocity and position box and the prioritized solve; no motion limits),
  its first pose task given the run's target (:data:`~itasc_bench.loop.target.TARGET_TOPIC`,
  taken as the floor takes its joint state: a message, converted) when one came, its command
  published: the robot follows the target;
* ``floor_work:=step``: the floor, and each tick the whole core tick as the node runs it
  (:meth:`~itasc_ros.core.control.Controller.set_joint_state`, ``set_target`` when a target
  came, :meth:`~itasc_ros.core.control.Controller.step` with its motion limits), its command
  published;
* the node: that, and its ROS side (serialized reads, checks, the journal, diagnostics,
  markers, housekeeping).

It takes the node's parameters file and ``urdf_file`` as the node does; the controller is the
one those parameters configure. ``floor_work`` is this module's own parameter. On exit it prints
how many ticks did the work (``core floor: <work> done in <n> ticks``).
"""

from __future__ import annotations

import array
import atexit
import sys
import time
from typing import Any

import numpy as np

WORKS = ("solve", "step")
"""The values of ``floor_work``."""


def _parameters(node: Any) -> dict[str, Any]:
    """The node's parameters (declared from the overrides) as the flat dict of a params file."""
    return {name: p.value for name, p in node.get_parameters_by_prefix("").items()}


def make_core_work(node: Any, rate: float) -> Any:
    """The work of a tick for ``floor_work`` (see the module), built from the node's parameters.

    Raises:
        ValueError: ``floor_work`` is not one of :data:`WORKS` (naming them).
    """
    from geometry_msgs.msg import PoseStamped

    from itasc_ros.core import Controller
    from itasc_ros.core.kinematics.spatial import pose_from_xyz_quat
    from itasc_ros.core.kinematics.tree import KinematicTree
    from itasc_ros.params import CONTROLLER_KEYS, config_from_parameters
    from itasc_ros.ros.polled_reader import PolledReader

    from .target import TARGET_TOPIC

    flat = _parameters(node)
    work = str(flat.get("floor_work", "step"))
    if work not in WORKS:
        raise ValueError(f"floor_work must be one of {', '.join(WORKS)}; got {work!r}")
    kept = {
        k: v
        for k, v in flat.items()
        if k in CONTROLLER_KEYS or k.startswith(("constraints.", "joint_limits."))
    }
    config = config_from_parameters(kept)
    if work == "solve":  # the scene alone: no motion limits (no box from the last command)
        config.joint_limits = {}
    tree = KinematicTree.from_urdf_file(str(flat["urdf_file"]))
    ctrl = Controller(tree, config)
    name = next(c.name for c in config.constraints if c.takes_target)
    constraint = ctrl.scene.get(name)
    targets = PolledReader(node, PoseStamped, TARGET_TOPIC)
    index: dict[tuple[str, ...], np.ndarray] = {}  # a message's names -> the scene's joints
    q = np.zeros(tree.n_joints)
    zeros = array.array("d", bytes(8 * len(ctrl.joint_names)))
    done = [0]  # ticks that did the work (a target had come)
    last: list[Any] = [None]  # the joint state the controller was given last
    atexit.register(lambda: print(f"core floor: {work} done in {done[0]} ticks", flush=True))

    def target() -> tuple[np.ndarray, np.ndarray] | None:
        """The position (3,) [m] and quaternion (x, y, z, w) of a target that came, or None."""
        got = targets.take()
        if got is None:
            return None
        pose = got[0].pose
        p, o = pose.position, pose.orientation
        return np.array([p.x, p.y, p.z]), np.array([o.x, o.y, o.z, o.w])

    def solve(msg: Any) -> array.array[float]:
        key = tuple(msg.name)
        idx = index.get(key)
        if idx is None:
            idx = index[key] = np.array([key.index(j) for j in tree.joint_names])
        np.take(np.frombuffer(msg.position), idx, out=q)
        t = target()
        if t is not None:
            constraint.set_target(pose_from_xyz_quat(*t))
        if not constraint.has_target:
            return zeros
        done[0] += 1
        return array.array("d", ctrl.scene.solve(q, 1.0 / rate).qdot)

    def step(msg: Any) -> array.array[float]:
        now = time.time()
        if msg is not last[0]:  # a new joint state (a timer tick may find none)
            ctrl.set_joint_state(msg.name, np.frombuffer(msg.position), now)
            last[0] = msg
        t = target()
        if t is not None:
            ctrl.set_target(name, "", t[0], t[1], now)
        out = ctrl.step(now)
        if out.result is not None:
            done[0] += 1
        return array.array("d", out.qdot) if out.publish else zeros

    return solve if work == "solve" else step


def main(args: list[str] | None = None) -> int:
    """Run the floor node with the core's work in each tick (see the module)."""
    from itasc_bench import floor_node

    return floor_node.main(args, make_core_work)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
