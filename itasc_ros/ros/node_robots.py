"""Several robots on one node: their URDFs composed, joint states merged, commands split.

Each robot of ``robots`` has its own URDF (its ``description_topic``, as its
robot_state_publisher publishes it, else its ``urdf_file``), joint state topic and command topic,
with its own joint names, as its ros2_control stack has them; the node solves them as one tree
(:func:`~itasc_ros.core.kinematics.robots.compose_urdf`: every link and joint ``<robot>_<name>``,
each root mounted at ``robots.<name>.base_pose``). :class:`RobotSet` is that translation:

* the URDF: the robots' URDFs composed into one document, again whenever a robot's
  description topic brings a new one;
* the joint states: the latest of each robot, merged into one state of the composed joints
  once every robot has sent one, as measured, with each robot's own reception time: the
  controller takes every robot at the newest one's instant (a robot behind is advanced by the
  commands it was sent, :mod:`~itasc_ros.core.control.prediction`), and when one robot's joint
  states stop, it stops that robot and the robots a constraint links to it, within their
  limits, and the others go on (:mod:`~itasc_ros.core.control.robot_groups`);
* the commands: each robot's share of every command on its own topic, in its own names.

A robot whose description is **lost** (its description topic brought a URDF that does not
parse, cannot be composed, or does not fit the configuration) is stopped: its joint states are
no longer taken (the model no longer describes that robot), so within ``input_timeout`` the
controller stops it and the robots linked to it, on the last good model, while the others go
on. The next URDF of that robot that does fit brings it back. A description topic that loses
its publisher (robot_state_publisher gone) loses nothing: the node keeps the URDF it has, and
the robot's joint states tell whether the robot still runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from ..core import Controller, InputError
from ..core.control.streams import HUGE
from ..core.kinematics.robots import SEPARATOR
from ..params import robots_urdf
from . import parameters as P
from .conversions import COMMAND_TYPES, CommandMessage, stamp_or_none
from .polled_reader import PolledReader

Array = NDArray[np.float64]


#: The most a robot's reception is moved earlier by its header stamp (see ``_merged``) [s].
MAX_SHIFT = 0.02


class RobotSet:
    """The robots of ``robots`` on ``node`` (see the module).

    Args:
        node: the node (its parameters ``robots.<name>.*`` declared).
        names: the robots' names.
        kind: ``command_out_type``.
        on_description: called with the robot's name (on the executor) when its description
            topic brought a URDF: :meth:`urdf` composes it with the others'.

    Attributes:
        lost: robot name -> why its description is lost (see the module).
    """

    def __init__(
        self,
        node: Node,
        names: list[str],
        kind: str,
        on_description: Callable[[str], None] | None = None,
    ) -> None:
        self.names = names
        self.lost: dict[str, str] = {}
        self._accepted: dict[str, str] = {}  # each robot's document in the installed model
        self.kind = kind
        self._node = node
        self._documents: dict[str, str] = {}  # each robot's URDF from its description topic
        latched = QoSProfile(
            depth=1,
            durability=DurabilityPolicy.TRANSIENT_LOCAL,
            reliability=ReliabilityPolicy.RELIABLE,
        )
        for r in names:
            topic = str(P.value(node, f"robots.{r}.description_topic"))
            if topic:

                def take(msg: String, r: str = r) -> None:
                    self._documents[r] = str(msg.data)
                    if on_description is not None:
                        on_description(r)

                node.create_subscription(String, topic, take, latched)
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.readers = [
            PolledReader(node, JointState, str(P.value(node, f"robots.{r}.joint_topic")), False)
            for r in names
        ]
        self.publishers = [
            node.create_publisher(
                COMMAND_TYPES[kind], str(P.value(node, f"robots.{r}.command_out_topic")), qos
            )
            for r in names
        ]
        self._latest: list[tuple[list[str], Array, float, float | None] | None]
        self._latest = [None] * len(names)
        self._fitted: list[tuple[NDArray[np.int64], CommandMessage, Array, Array]] = []
        self._own: list[set[str]] = []  # each robot's commanded joints, in its own names

    # --------------------------------------------------------------------- the URDF
    def waiting(self) -> list[str]:
        """The robots whose URDF can only come from their description topic, not come yet."""
        return [
            r
            for r in self.names
            if r not in self._documents
            and P.value(self._node, f"robots.{r}.description_topic")
            and not P.value(self._node, f"robots.{r}.urdf_file")
        ]

    def urdf(self) -> tuple[str | None, str]:
        """The robots' URDFs (topic, else file) composed into one document, or None and why."""
        flat = {
            f"robots.{r}.{k}": P.value(self._node, f"robots.{r}.{k}")
            for r in self.names
            for k in ("urdf_file", "description_topic", "base_pose")
        }
        return robots_urdf(flat, self.names, self._documents)

    @staticmethod
    def source(robot: str) -> str:
        """The model source naming ``robot``'s description topic (see :meth:`robot_of`)."""
        return f"description topic of robot {robot!r}"

    def robot_of(self, source: str) -> str | None:
        """The robot whose description topic ``source`` is (:meth:`source`), or None."""
        return next((r for r in self.names if source == self.source(r)), None)

    def lose(self, robot: str, why: str) -> None:
        """``robot``'s description is lost: its joint states are taken no more (it stops).

        Its rejected document is set aside (the installed model's stays in its place), so
        that another robot's new URDF is composed with the last good one of ``robot``.
        """
        self.lost[robot] = why
        if robot in self._accepted:
            self._documents[robot] = self._accepted[robot]
        else:
            self._documents.pop(robot, None)

    def found(self, robot: str | None) -> list[str]:
        """A composed model was installed or confirmed: its documents are the accepted ones.

        ``robot``: the robot whose topic brought it (None: another source); it comes back.

        Returns:
            The robots that come back ([] or ``[robot]``); the others lost stay lost.
        """
        self._accepted = dict(self._documents)
        if robot is None or self.lost.pop(robot, None) is None:
            return []
        return [robot]

    # --------------------------------------------------------------------- joint states
    def take(
        self, sim_offset: float, reject: Callable[[Exception], None]
    ) -> tuple[list[str], Array, float, float | None, Array] | None:
        """The merged joint state when a robot sent a new one and every robot has one.

        Each robot's state is checked on its own (:meth:`refusal`): a refused one goes to
        ``reject`` as an :class:`~itasc_ros.core.InputError` naming the robot, and that robot
        keeps its last good state, so that it alone ages (and goes stale: it and the robots
        linked to it stop) while the others go on.

        Returns:
            ``(names, positions, received, stamp, received_by_robot)``: the composed joints'
            names, their positions, the newest reception time [s], the newest header stamp
            [s] (None when a robot's are unstamped) and each robot's reception time [s]
            (g,), or None.
        """
        new = False
        for i, reader in enumerate(self.readers):
            got = reader.take()
            if got is None:
                continue
            msg, received = got
            if self.names[i] in self.lost:  # no model of it: it goes stale, and stops
                continue
            why = self.refusal(i, list(msg.name), msg.position)
            if why:
                reject(InputError(f"robot {self.names[i]!r}: joint state refused: {why}"))
                continue
            p = self.names[i] + SEPARATOR
            names = [p + n for n in msg.name]
            pos = np.asarray(msg.position, dtype=float)
            stamp = stamp_or_none(msg.header.stamp)
            self._latest[i] = (names, pos, received + sim_offset, stamp)
            new = True
        if not new or any(s is None for s in self._latest):
            return None
        return self._merged([s for s in self._latest if s is not None])

    def refusal(self, i: int, names: list[str], positions: Any) -> str:
        """Why robot ``i``'s joint state (its own joint names, positions) is refused, or ''.

        Refused: names and positions of different lengths, a repeated name, and, among the
        joints the model commands (before a model: every joint), a missing one or a position
        that is NaN, infinite or above :data:`~itasc_ros.core.control.streams.HUGE`.
        """
        if len(names) != len(positions):
            return f"{len(names)} names and {len(positions)} positions"
        if len(set(names)) != len(names):
            return "a joint named twice"
        own = self._own[i] if self._fitted else None
        for name, value in zip(names, positions, strict=True):
            if (own is None or name in own) and not abs(float(value)) <= HUGE:
                return f"{name} at {value}"
        missing = [] if own is None else sorted(own.difference(names))
        return f"no position of {', '.join(missing)}" if missing else ""

    @staticmethod
    def _merged(
        states: list[tuple[list[str], Array, float, float | None]],
    ) -> tuple[list[str], Array, float, float | None, Array]:
        """The robots' latest states as one, each as measured.

        The robots measure at their own times: the merged state is received at the newest
        reception, and each robot's own reception comes with it, so that the controller takes
        every robot at one instant (two hands 2 ms apart at 0.2 m/s would be 0.4 mm off) and
        judges each robot's freshness. Where every robot's state is stamped, a robot measured
        before the newest one (its header) counts as received that much before the newest
        reception (at most :data:`MAX_SHIFT` earlier than its own): its reception can be late
        while the other's is not (a driver that published late, a busy machine), its
        measurement cannot. (A robot's own velocities are not used to move it on: the
        controller does so from the commands it sent, which also covers a robot whose states
        stop.)
        """
        stamps = [s[3] for s in states]
        known = [t for t in stamps if t is not None]
        common = max(known) if len(known) == len(stamps) else None
        parts = [s[1] for s in states]
        names = [n for s in states for n in s[0]]
        received = np.array([s[2] for s in states])
        newest = float(received.max())
        if common is not None:
            for i, stamp in enumerate(stamps):
                behind = common - float(stamp or 0.0)  # [s] measured before the newest
                if 0.0 < behind:
                    at = max(newest - behind, received[i] - MAX_SHIFT)
                    received[i] = min(received[i], at)
        return names, np.concatenate(parts), newest, common, received

    # --------------------------------------------------------------------- commands
    def fit(self, ctrl: Controller) -> None:
        """Each robot's joints among ``ctrl``'s commanded ones, and its command message."""
        self._fitted = []
        self._own = []
        joints = ctrl.joint_names
        for r in self.names:
            p = r + SEPARATOR
            idx = np.array([i for i, j in enumerate(joints) if j.startswith(p)], dtype=np.int64)
            own = [joints[i][len(p) :] for i in idx]
            self._own.append(set(own))
            cmd = CommandMessage(self.kind, own)
            self._fitted.append((idx, cmd, np.zeros(len(idx)), np.zeros(len(idx))))

    def send(self, q: Array, qdot: Array, period: float, now: float) -> None:
        """Publish each robot's share of the command ``qdot`` (at ``q``) on its topic."""
        for (idx, cmd, qb, vb), pub in zip(self._fitted, self.publishers, strict=True):
            if idx.size == 0:
                continue
            np.take(q, idx, out=qb)
            np.take(qdot, idx, out=vb)
            pub.publish(cmd.wire(qb, vb, period, now))

    def destroy(self) -> None:
        """Release the joint state readers."""
        for reader in self.readers:
            reader.destroy()


__all__ = ["RobotSet"]
