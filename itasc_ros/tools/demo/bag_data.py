"""The signals of the demo's bag that its metrics and plots need, as numpy arrays."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core import KinematicTree
from itasc_ros.tools.bagio import read_bag
from itasc_ros.tools.demo.processes import NODE
from itasc_ros.tools.replay import NodeSetup

Array = NDArray[np.float64]


@dataclass
class BagData:
    """The recorded signals the metrics need (times in ROS time [s]).

    Attributes:
        js_t: (k,) joint states' header stamps. js_recv: (k,) their reception (bag) times.
        js_q: (k, n) positions [rad], tree order. js_v: (k, n) velocities [rad/s].
        ee: (k, 3) effector positions [m]. target_t: (m,) target stamps.
        target_p: (m, 3) target positions [m]. cmd_t: (c,) commands' bag (reception) times.
        cmd: (c, n) commands [rad/s] in command order. status: the node's ``~/status``
        (time, parsed JSON). diagnostics: the node's diagnostics (time, key -> value).
    """

    js_t: Array  # (k,) header stamps
    js_recv: Array  # (k,) reception (bag) times
    js_q: Array  # (k, n) tree order
    js_v: Array  # (k, n)
    ee: Array  # (k, 3) effector positions
    target_t: Array  # (m,)
    target_p: Array  # (m, 3)
    cmd_t: Array  # (c,) bag (reception) times
    cmd: Array  # (c, n) in command order
    status: list[tuple[float, dict[str, Any]]]
    diagnostics: list[tuple[float, dict[str, str]]]


@dataclass
class _Columns:
    """The bag's messages as lists, one per signal, while it is read."""

    js_t: list[float] = field(default_factory=list)
    js_recv: list[float] = field(default_factory=list)
    js_q: list[Array] = field(default_factory=list)
    js_v: list[Array] = field(default_factory=list)
    tt: list[float] = field(default_factory=list)
    tp: list[Array] = field(default_factory=list)
    ct: list[float] = field(default_factory=list)
    cv: list[Array] = field(default_factory=list)
    status: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    diags: list[tuple[float, dict[str, str]]] = field(default_factory=list)
    order: list[int] | None = None  # joint-state index of each tree joint

    def add_joint_state(self, t_ns: int, msg: Any, tree: KinematicTree) -> None:
        if self.order is None:
            names = list(msg.name)
            self.order = [names.index(j) for j in tree.joint_names]
        order = self.order
        self.js_t.append(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)
        self.js_recv.append(t_ns * 1e-9)
        self.js_q.append(np.asarray(msg.position, dtype=float)[order])
        v = np.asarray(msg.velocity, dtype=float)
        self.js_v.append(v[order] if v.size else np.zeros(len(order)))

    def add_target(self, msg: Any) -> None:
        self.tt.append(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)
        p = msg.pose.position
        self.tp.append(np.array([p.x, p.y, p.z]))

    def add_command(self, t_ns: int, msg: Any) -> None:
        if hasattr(msg, "data"):
            self.ct.append(t_ns * 1e-9)
            self.cv.append(np.asarray(msg.data, dtype=float))

    def add_status(self, t_ns: int, msg: Any) -> None:
        try:
            self.status.append((t_ns * 1e-9, json.loads(msg.data)))
        except ValueError:
            pass

    def add_diagnostics(self, t_ns: int, msg: Any) -> None:
        for st in msg.status:
            if st.name.startswith("itasc_node"):
                self.diags.append((t_ns * 1e-9, {kv.key: kv.value for kv in st.values}))


def read_demo_bag(
    bag: Path, setup: NodeSetup, tree: KinematicTree, tip: str, cmd_joints: Sequence[str]
) -> BagData:
    """Read the demo's bag and compute the effector positions of the joint states.

    Args:
        bag: the bag's folder.
        setup: the node's topics.
        tree: the robot.
        tip: the effector link.
        cmd_joints: the commanded joints (n), in command order.
    """
    c = _Columns()
    pose_topic = next(iter(setup.pose_topics.values()))
    status_topic = f"{NODE}/status"
    topics = [setup.joint_topic, pose_topic, setup.command_topic, status_topic, "/diagnostics"]
    for topic, t_ns, msg in read_bag(bag, topics):
        if topic == setup.joint_topic:
            c.add_joint_state(t_ns, msg, tree)
        elif topic == pose_topic:
            c.add_target(msg)
        elif topic == setup.command_topic:
            c.add_command(t_ns, msg)
        elif topic == status_topic:
            c.add_status(t_ns, msg)
        else:
            c.add_diagnostics(t_ns, msg)
    n = tree.n_joints
    q = np.asarray(c.js_q, dtype=float).reshape(-1, n)
    ee = np.array([tree.forward_kinematics(qi, tip)[:3, 3] for qi in q]).reshape(-1, 3)
    return BagData(
        js_t=np.asarray(c.js_t),
        js_recv=np.asarray(c.js_recv),
        js_q=q,
        js_v=np.asarray(c.js_v, dtype=float).reshape(-1, n),
        ee=ee,
        target_t=np.asarray(c.tt),
        target_p=np.asarray(c.tp, dtype=float).reshape(-1, 3),
        cmd_t=np.asarray(c.ct),
        cmd=np.asarray(c.cv, dtype=float).reshape(-1, len(cmd_joints)),
        status=c.status,
        diagnostics=c.diags,
    )


__all__ = ["BagData", "read_demo_bag"]
