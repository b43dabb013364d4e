"""A subscription the control tick reads: DDS keeps the latest message, the tick takes it.

A subscription of an rclpy node is served by the executor: every message that arrives costs the
executor's thread (the control loop's) a callback before any work of its own: a publisher
flooding jog twists at kilohertz rates then takes most of the loop's thread and ticks are
missed. A :class:`PolledReader` is a subscription the executor never sees (rcl's
subscription on the node's handle, so its topic resolves, remaps and shows in the graph as the
node's own): its DDS reader keeps the latest message (history depth 1: DDS's own threads do the
depositing, outside Python's lock) and the tick takes it when it starts. A flood costs the tick
one take (a look when nothing came, one message's conversion otherwise), whatever its rate.

Messages replaced before a tick took them are counted (gaps in each publisher's sequence numbers,
reported in ``/diagnostics``). A message's reception time is DDS's own receive timestamp (the
system clock), so staleness is measured from when it arrived, not from when the tick took it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.type_support import check_is_valid_msg_type

from . import rclpy_compat

M = TypeVar("M")


class PolledReader(Generic[M]):
    """The latest message of one topic, taken by the control tick (see the module).

    Args:
        node: the node whose subscription this is (name resolution, remapping, the graph).
        msg_type: the message class.
        topic: the topic name (``~/...`` and relative names resolve as for the node's own).
        reliable: RELIABLE (True, as the targets' publishers expect) or BEST_EFFORT.
        depth: the messages DDS keeps (1: the latest; more: a bounded queue, the oldest
            replaced first).
        raw: take each message as its serialized bytes (CDR), not converted into ``msg_type``
            (the reader then deserializes what it needs; see
            :mod:`~itasc_ros.ros.wire`).
    """

    def __init__(
        self,
        node: Node,
        msg_type: type[M],
        topic: str,
        reliable: bool = True,
        depth: int = 1,
        raw: bool = False,
    ) -> None:
        qos = QoSProfile(
            depth=depth,
            reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
        )
        self.msg_type = msg_type
        self.raw = raw
        check_is_valid_msg_type(msg_type)  # imports its type support, as create_subscription
        self._node = node
        self._qos = qos
        self.reliable = reliable
        self._handle: Any = rclpy_compat.rcl_subscription(node, msg_type, topic, qos)
        self._retired: Any = None  # the subscription before the last renewal
        self.topic = str(self._handle.get_topic_name())
        self.taken = 0  # messages taken
        self.dropped = 0  # messages replaced by a newer one before a tick took them
        #: whether rclpy numbers the messages per publisher, so that ``dropped`` counts
        #: (Kilted; Humble and Jazzy give no publisher id): None until a message was taken
        self.numbered: bool | None = None
        self._sequence: dict[bytes, int] = {}  # the last sequence number of each publisher

    @property
    def handle(self) -> Any:
        """Rcl's subscription (for a wait set)."""
        return self._handle

    def take(self) -> tuple[M, float] | None:
        """The message that arrived since the last take, with its reception time, or None.

        Returns:
            ``(message, received)``: ``received`` is the system-clock time [s] DDS received
            it (the time of the take when the middleware does not say); the message is its
            serialized ``bytes`` for a ``raw`` reader.
        """
        got = self._handle.take_message(self.msg_type, self.raw)
        if got is None:
            return None
        msg, info = got
        self.taken += 1
        self._count_gap(info)
        stamp = info.get("received_timestamp") or 0
        return msg, (stamp * 1e-9 if stamp > 0 else time.time())

    def take_all(self) -> list[tuple[M, float]]:
        """Every message waiting (at most ``depth``), oldest first."""
        out = []
        while (got := self.take()) is not None:
            out.append(got)
        return out

    def _count_gap(self, info: dict[str, Any]) -> None:
        """Add the messages a publisher sent between this one and its previous one taken."""
        seq = info.get("publication_sequence_number")
        gid = info.get("publisher_gid")
        if not isinstance(seq, int) or not isinstance(gid, dict):
            self.numbered = False  # rclpy or the middleware does not number them
            return
        self.numbered = True
        key = bytes(gid.get("data", b""))
        last = self._sequence.get(key)
        if last is not None and seq > last + 1:
            self.dropped += seq - last - 1
        if len(self._sequence) > 64 and key not in self._sequence:
            self._sequence.clear()  # publishers come and go: bounded
        self._sequence[key] = seq

    def matched_publishers(self) -> int | None:
        """The publishers DDS matched with this reader (None where rclpy cannot say: Humble)."""
        return rclpy_compat.matched_publishers(self._handle)

    def renew(self) -> None:
        """Replace the rcl subscription by a new one on the same topic (a new DDS reader).

        Safe while another thread takes from the reader: the old subscription is kept (its
        messages no longer taken) until the next renewal or :meth:`destroy`.
        """
        fresh = rclpy_compat.rcl_subscription(self._node, self.msg_type, self.topic, self._qos)
        if self._retired is not None:
            self._retired.destroy_when_not_in_use()
        self._retired, self._handle = self._handle, fresh
        self._sequence.clear()

    def destroy(self) -> None:
        """Release the subscription (before the node is destroyed)."""
        self._handle.destroy_when_not_in_use()
        if self._retired is not None:
            self._retired.destroy_when_not_in_use()


class MatchWatch:
    """Renews a best-effort reader that the ROS graph says has publishers DDS never matched.

    A reader whose DDS discovery with a publisher failed takes nothing, and nothing else would
    ever re-create it: the node would wait for its joint states forever. While the reader takes
    nothing, :meth:`check` compares the publishers of its topic in the graph with those DDS
    matched; when more are in the graph for ``grace`` seconds it renews the reader (a new DDS
    reader, discovered anew) and says so. A best-effort reader matches every publisher of its
    type, so the only other cause is a publisher of another message type on the topic, which
    the message names. At most one renewal every ``grace`` seconds.

    Args:
        node: the reader's node (its graph).
        reader: a best-effort reader.
        grace: how long [s] the graph and the reader must disagree before a renewal.
    """

    def __init__(self, node: Node, reader: PolledReader[Any], grace: float = 3.0) -> None:
        self._node = node
        self._reader = reader
        self.grace = grace
        self.renewals = 0
        self._taken = -1  # the reader's count at the last check
        self._since: float | None = None  # when the disagreement was first seen

    def check(self, now: float) -> str:
        """Compare, and renew if due (call about once a second).

        Args:
            now: a monotonic time [s].

        Returns:
            '' or the warning to log after a renewal.
        """
        reader = self._reader
        taken, self._taken = self._taken, reader.taken
        if reader.taken != taken or reader.reliable:
            self._since = None  # messages come: nothing to check
            return ""
        matched = reader.matched_publishers()
        if matched is None:
            return ""  # this rclpy cannot say
        in_graph = self._node.count_publishers(reader.topic)
        if in_graph <= matched:
            self._since = None
            return ""
        if self._since is None:
            self._since = now
            return ""
        if now - self._since < self.grace:
            return ""
        self._since = now
        reader.renew()
        self.renewals += 1
        return (
            f"{reader.topic}: {in_graph} publisher(s) in the ROS graph, {matched} matched by "
            f"this node's reader for {self.grace:.0f} s: reader re-created (renewal "
            f"{self.renewals}; a publisher of another message type than "
            f"{reader.msg_type.__name__} is never matched)"
        )


def replaced_count(readers: Iterable[PolledReader[Any]]) -> str:
    """The messages of ``readers`` replaced before they were taken, for a diagnostic's value.

    Returns:
        The count, or ``"unknown"`` with the reason where a reader's messages are not numbered
        per publisher (rclpy before Kilted gives no publisher id).
    """
    readers = list(readers)
    if any(r.numbered is False for r in readers):
        return "unknown (this rclpy gives no publisher ids)"
    return str(sum(r.dropped for r in readers))


class Waiter:
    """Waits on one ``rcl`` wait set for a reader's messages, a wake-up call or a timeout.

    Args:
        context: the rclpy context of the node.
        reader: the reader whose messages end a wait (None: only :meth:`wake` and the
            timeout do).
    """

    def __init__(self, context: Any, reader: PolledReader[Any] | None = None) -> None:
        self.context = context
        self._reader = reader
        self._guard = rclpy_compat.guard_condition(context)
        self._wait_set = rclpy_compat.wait_set(0 if reader is None else 1, 1, context)

    def wait(self, timeout: float) -> None:
        """Wait at most ``timeout`` [s] (call with ``context.handle`` held, as rclpy does)."""
        ws = self._wait_set
        ws.clear_entities()
        ws.add_guard_condition(self._guard)
        if self._reader is not None:
            ws.add_subscription(self._reader.handle)
        ws.wait(int(1e9 * timeout) if timeout > 0.0 else 0)  # NaN: no wait

    def wake(self) -> None:
        """End the current (or the next) wait now."""
        self._guard.trigger_guard_condition()


__all__ = ["PolledReader", "Waiter"]
