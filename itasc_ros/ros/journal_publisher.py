"""``~/journal`` and ``~/parameters``: what each tick consumed, and the parameters it ran with.

``~/journal`` (std_msgs/Float64MultiArray, reliable, depth :data:`JOURNAL_DEPTH`): the records
of :mod:`itasc_ros.core.control.journal`, per tick every input the controller accepted since the
last tick, then the tick itself. The ticks of :data:`PUBLISH_PERIOD` go out as one message (at
1 kHz, ten ticks a message: a tenth of the messages to publish and to record); a zero command
published outside a tick goes out at once. Published only while someone subscribes: without a
subscriber the controller has no journal and the tick pays one comparison. Each new subscriber is
followed by a SNAPSHOT of the controller's input state (it plays back from there), and a SNAPSHOT
comes every second.

``~/parameters`` (std_msgs/String, reliable, transient local, depth 20): JSON
``{"node": ..., "revision": r, "parameters": {...}}``, every parameter of the node, published at
start-up (revision 0) and after each accepted change (r + 1). The journal's PARAMETERS records
and SNAPSHOTs name the revision in force, so a replay knows the configuration of every tick.
"""

from __future__ import annotations

import array
import json
import math
from collections.abc import Mapping
from typing import Any

from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, String

from ..core import Controller
from ..core.control.journal import LABEL, Journal, ZeroReason, urdf_tag
from . import rclpy_compat

SNAPSHOT_PERIOD = 1.0  # [s] of the node's clock between SNAPSHOTs while subscribed
PUBLISH_PERIOD = 0.01  # [s] the ticks of this long are published as one message
#: Messages the journal's writer keeps for a subscriber that is slow to acknowledge them (10 s at
#: one message per PUBLISH_PERIOD): a recorder starved of the CPU for a second loses nothing.
JOURNAL_DEPTH = 1000
JOURNAL_TOPIC = "~/journal"
PARAMETERS_TOPIC = "~/parameters"


def plain(value: Any) -> Any:
    """A parameter value as JSON can hold it (arrays as lists)."""
    if isinstance(value, array.array | tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, bytes):
        return list(value)
    return value


class JournalPublisher:
    """Publishes a node's journal while subscribed, and its parameters with their revision.

    Args:
        node: the node (topics are created under its name).
    """

    def __init__(self, node: Node) -> None:
        self._node = node
        self._pub = node.create_publisher(
            Float64MultiArray,
            JOURNAL_TOPIC,
            QoSProfile(
                history=HistoryPolicy.KEEP_LAST,
                depth=JOURNAL_DEPTH,
                reliability=ReliabilityPolicy.RELIABLE,
            ),
            event_callbacks=rclpy_compat.matched_callbacks(self._on_matched),
        )
        self._params_pub = node.create_publisher(
            String,
            PARAMETERS_TOPIC,
            QoSProfile(
                depth=20,
                reliability=ReliabilityPolicy.RELIABLE,
                durability=DurabilityPolicy.TRANSIENT_LOCAL,
            ),
        )
        self.journal = Journal()
        self.revision = 0
        self._msg = Float64MultiArray()
        self._msg.layout.dim = [MultiArrayDimension(label=LABEL, size=0, stride=0)]
        self._wanted = False
        self._count = 0  # subscribers
        self._broken = ""  # why the journal was switched off ('' while it works)
        self._ctrl: Controller | None = None  # the controller the journal is attached to
        self._next_snapshot = 0.0
        self._next_publish = 0.0

    @property
    def subscribers(self) -> int:
        """Subscribers of ``~/journal`` (as last reported)."""
        return self._count

    @property
    def active(self) -> bool:
        """True while a controller writes into the journal."""
        return self._ctrl is not None

    def _on_matched(self, info: Any) -> None:  # a QoSPublisherMatchedInfo
        self._subscribers(info.current_count)

    def check_subscribers(self) -> None:
        """Poll the subscriber count (for rmw without matched events; called at 10 Hz)."""
        self._subscribers(self._pub.get_subscription_count())

    def _subscribers(self, count: int) -> None:
        """A new subscriber gets a SNAPSHOT at the next flush: it can play back from there."""
        if count > self._count:
            self._next_snapshot = self._next_publish = -math.inf
        self._count = count
        self._wanted = count > 0

    def sync(self, ctrl: Controller | None, digest: str) -> None:
        """Attach the journal to ``ctrl`` while subscribed, detach it otherwise (every tick).

        Args:
            ctrl: the installed controller (None: no model).
            digest: the installed URDF's digest (identifies the model in SNAPSHOTs).
        """
        want = ctrl if self._wanted and not self._broken else None
        if want is self._ctrl:
            return
        if self._ctrl is not None:
            self._ctrl.attach_journal(None)
        self._ctrl = want
        if want is not None:
            j = self.journal
            j.take()  # drop what an earlier controller left
            j.label(self.revision, urdf_tag(digest), j.model + 1)
            want.attach_journal(j)

    def wait_delivered(self, timeout: float) -> None:
        """Wait at most ``timeout`` [s] until every subscriber acknowledged what was published.

        At exit: the last ticks' records reach a recorder before the node goes away.
        """
        if self._ctrl is None or timeout <= 0.0:
            return
        try:
            self._pub.wait_for_all_acked(Duration(seconds=timeout))
        except Exception:  # an rmw without it, a context going down: nothing more to do
            pass

    def flush(self, now: float, force: bool = False) -> None:
        """After each tick: publish the records of the last :data:`PUBLISH_PERIOD` (or now).

        Never raises: a journal that fails is switched off with an error in the log (the
        control loop goes on).
        """
        try:
            self._flush(now, force)
        except Exception as exc:  # the journal must never stop the control loop
            self._broken = f"{type(exc).__name__}: {exc}"
            self._node.get_logger().error(f"~/journal switched off: {self._broken}")
            self.sync(None, "")

    def _flush(self, now: float, force: bool) -> None:
        ctrl = self._ctrl
        if ctrl is None or (now < self._next_publish and not force):
            return
        if now >= self._next_snapshot:
            self._next_snapshot = now + SNAPSHOT_PERIOD
            ctrl.write_snapshot(self.journal)
        self._next_publish = now + PUBLISH_PERIOD
        if self.journal.empty:
            return
        data = self.journal.take()
        out = array.array("d")
        out.frombytes(data.data.cast("B"))  # the buffer itself: one copy
        self._msg.data = out
        self._msg.layout.dim[0].size = self._msg.layout.dim[0].stride = len(out)
        self._pub.publish(self._msg)

    def zero(self, now: float, reason: ZeroReason) -> None:
        """Journal a zero command published outside a tick, and publish it now."""
        if self._ctrl is not None:
            self.journal.zero(now, reason)
            self.flush(now, force=True)

    def parameters_changed(self, controller_updated: bool) -> None:
        """An accepted change: the next revision, journaled if it changed the controller.

        Called in the critical section of the change (no tick between them); the parameters
        are published after it (:meth:`publish_parameters`): their text and their write to DDS
        need not hold a tick.
        """
        self.revision += 1
        self.journal.revision = self.revision
        if self._ctrl is not None:
            self.journal.parameters(self.revision, controller_updated)

    def publish_parameters(self, parameters: Mapping[str, Any]) -> None:
        """Publish every parameter with the current revision on ``~/parameters``."""
        text = json.dumps(
            {
                "node": self._node.get_fully_qualified_name(),
                "revision": self.revision,
                "parameters": {k: plain(v) for k, v in sorted(parameters.items())},
            }
        )
        self._params_pub.publish(String(data=text))


__all__ = [
    "JOURNAL_TOPIC",
    "PARAMETERS_TOPIC",
    "PUBLISH_PERIOD",
    "SNAPSHOT_PERIOD",
    "JournalPublisher",
    "plain",
]
