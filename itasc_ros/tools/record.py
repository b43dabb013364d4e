"""``itasc-record``: record ROS 2 topics into a rosbag2 bag (MCAP or sqlite3) with rosbags.

Usage::

    itasc-record --out run1 --storage mcap --duration 30
    itasc-record --topics /joint_states /my_target:geometry_msgs/msg/PoseStamped
    python -m itasc_ros.tools.record --stamp header ... --ros-args -r __ns:=/robot1

Each topic is subscribed with a raw (CDR bytes) subscription as soon as a publisher for it
appears in the graph; its type comes from ``topic:pkg/msg/Type`` or, without one, from the
graph. The bytes go into the bag unchanged. QoS: reliable, volatile, keep-last depth 1000 —
best effort when any publisher of the topic is best effort (a reliable reader would not match
it), transient-local when all publishers are (latched topics such as robot_description).
SIGINT / SIGTERM or ``--duration`` stop the recording and close the bag properly.

The console script does not change the DDS environment (a user on a robot records on the real
network); tests and the demo set the local shared-memory environment themselves.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import struct
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import rclpy
from rclpy.exceptions import InvalidTopicNameException
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from rclpy.subscription import Subscription
from rclpy.timer import Timer
from rclpy.validate_topic_name import validate_topic_name
from rosbags.interfaces import Nodetype

from itasc_ros.cli import CliParser, closest, positive_float, run_cli, unknown_choice, writable_dir
from itasc_ros.ros.ros_args import non_ros_args
from itasc_ros.tools.bagio import (
    STORAGES,
    BagError,
    BagWriter,
    _share_dirs,
    ensure_type,
    normalize_msgtype,
)

#: Topics recorded by default: the node's inputs and outputs, its journal (what each tick
#: consumed: ``itasc-replay --compare`` recomputes every command from it) and its parameters.
DEFAULT_TOPICS: tuple[str, ...] = (
    "/joint_states",
    "/itasc_node/target_pose",
    "/itasc_node/target_twist",
    "/itasc_node/odom",
    "/cmd_vel",
    "/forward_velocity_controller/commands",
    "/itasc_node/journal",
    "/itasc_node/parameters",
    "/parameter_events",
    "/robot_description",
    "/diagnostics",
)

PROG = "itasc-record"

#: Keep-last depth of the recording subscriptions.
DEPTH = 1000

#: Time spent writing already received messages after a stop request [s].
DRAIN_TIME = 0.1

StampSource = Literal["receive", "header"]


def parse_topic_spec(spec: str) -> tuple[str, str | None]:
    """``'topic'`` or ``'topic:pkg/msg/Type'`` -> (topic, type or None).

    Raises:
        BagError: empty topic or malformed type.
    """
    topic, sep, msgtype = spec.strip().partition(":")
    if not topic:
        raise BagError(f"topic spec {spec!r} has no topic name; use 'topic' or 'topic:pkg/msg/T'")
    return topic, (normalize_msgtype(msgtype) if sep else None)


def _message_class(msgtype: str) -> Any:
    """The rclpy message class for ``pkg/msg/Type``."""
    pkg, sub, name = normalize_msgtype(msgtype).split("/")
    try:
        return getattr(importlib.import_module(f"{pkg}.{sub}"), name)
    except (ImportError, AttributeError) as exc:
        raise BagError(f"cannot import the Python message class {pkg}.{sub}.{name}") from exc


def _resolve(node: Node, topic: str) -> str:
    """Fully qualified (expanded and remapped) topic name."""
    return node.resolve_topic_name(topic)


def _adapted_qos(node: Node, topic: str) -> QoSProfile:
    """Recording QoS for ``topic`` matching every current publisher."""
    infos = node.get_publishers_info_by_topic(topic)
    best_effort = any(i.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT for i in infos)
    latched = bool(infos) and all(
        i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for i in infos
    )
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=DEPTH,
        reliability=ReliabilityPolicy.BEST_EFFORT if best_effort else ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
    )


class Recorder:
    """Raw subscriptions on ``node`` whose CDR bytes are written into ``writer``.

    The recorder polls the ROS graph (every ``poll_period``) and subscribes to each wanted topic
    once it has a publisher. Use it in any executor; the writer serialises concurrent writes.
    Closing the recorder removes its subscriptions and timer; the caller closes the writer.
    """

    def __init__(
        self,
        node: Node,
        writer: BagWriter,
        topics_and_types: Mapping[str, str | None] | Iterable[str | tuple[str, str | None]],
        *,
        stamp: StampSource = "receive",
        poll_period: float = 0.25,
    ) -> None:
        """Start recording.

        Args:
            node: the node that owns the subscriptions.
            writer: an open bag.
            topics_and_types: topic -> ``pkg/msg/Type`` or None (type from the graph); or a list
                of topics, ``'topic:pkg/msg/Type'`` specs or (topic, type) pairs.
            stamp: bag time of a message: ``'receive'`` (node clock at reception) or
                ``'header'`` (its ``header.stamp`` if the type starts with a std_msgs/Header
                and the stamp is non-zero, else the reception time).
            poll_period: graph polling period [s].

        Raises:
            BagError: a malformed spec or an unknown stamp source.
        """
        if stamp not in ("receive", "header"):
            raise BagError(f"unknown stamp source {stamp!r}; valid: 'receive', 'header'")
        items: Iterable[Any] = (
            topics_and_types.items() if isinstance(topics_and_types, Mapping) else topics_and_types
        )
        self._wanted: dict[str, str | None] = {}
        for item in items:
            topic, msgtype = parse_topic_spec(item) if isinstance(item, str) else item
            self._wanted[_resolve(node, topic)] = (
                None if msgtype is None else normalize_msgtype(msgtype)
            )
        self.node = node
        self.writer = writer
        self.stamp = stamp
        self._subs: dict[str, Subscription[Any]] = {}
        self._types: dict[str, str] = {}
        self._lock = threading.Lock()
        self._closed = False
        self.poll()
        self._timer: Timer | None = node.create_timer(poll_period, self._on_timer)

    @property
    def wanted(self) -> dict[str, str | None]:
        """Fully qualified topic -> requested type (None: from the graph)."""
        return dict(self._wanted)

    @property
    def subscribed(self) -> dict[str, str]:
        """Topic -> message type of the topics being recorded."""
        with self._lock:
            return dict(self._types)

    @property
    def counts(self) -> dict[str, int]:
        """Topic -> messages written so far."""
        return self.writer.counts

    def _on_timer(self) -> None:
        self.poll()

    def poll(self) -> list[str]:
        """Subscribe to the wanted topics that now have publishers.

        Returns:
            The topics subscribed by this call.
        """
        with self._lock:
            if self._closed:
                return []
            pending = [t for t in self._wanted if t not in self._subs]
            if not pending:
                return []
            graph = dict(self.node.get_topic_names_and_types())
            new = []
            for topic in pending:
                graph_types = graph.get(topic, [])
                if not graph_types or not self.node.get_publishers_info_by_topic(topic):
                    continue
                if self._subscribe(topic, self._wanted[topic], graph_types):
                    new.append(topic)
            return new

    def _subscribe(self, topic: str, requested: str | None, graph_types: Sequence[str]) -> bool:
        log = self.node.get_logger()
        if requested is None:
            msgtype = graph_types[0]
            if len(graph_types) > 1:
                log.warning(f"{topic} has several types {list(graph_types)}; recording {msgtype}")
        else:
            msgtype = requested
            if msgtype not in graph_types:
                log.warning(f"{topic} is published as {list(graph_types)}, not {msgtype}")
        try:
            msgtype = ensure_type(msgtype, self.writer.typestore)
            cls = _message_class(msgtype)
            self.writer.add_topic(topic, msgtype)
        except BagError as exc:
            log.error(f"not recording {topic}: {exc}")
            self._wanted.pop(topic, None)
            return False
        qos = _adapted_qos(self.node, topic)
        header_first = self.stamp == "header" and self._starts_with_header(msgtype)
        self._subs[topic] = self.node.create_subscription(
            cls, topic, self._callback(topic, header_first), qos, raw=True
        )
        self._types[topic] = msgtype
        log.info(
            f"recording {topic} [{msgtype}] ({qos.reliability.name.lower()},"
            f" {qos.durability.name.lower()}, depth {qos.depth})"
        )
        return True

    def _starts_with_header(self, msgtype: str) -> bool:
        _consts, fields = self.writer.typestore.fielddefs[msgtype]
        return bool(fields) and fields[0][1] == (Nodetype.NAME, "std_msgs/msg/Header")

    def _callback(self, topic: str, header_first: bool) -> Any:
        clock = self.node.get_clock()
        writer = self.writer

        def on_message(raw: bytes) -> None:
            t_ns = clock.now().nanoseconds
            if header_first and len(raw) >= 12:
                # CDR: 4-byte encapsulation (byte 1: little endian), then int32 sec, uint32 ns.
                sec, nsec = struct.unpack_from("<iI" if raw[1] else ">iI", raw, 4)
                if sec > 0 or (sec == 0 and nsec > 0):
                    t_ns = sec * 1_000_000_000 + nsec
            try:
                writer.write_raw(topic, t_ns, raw)
            except BagError:
                pass  # the bag was closed while messages were still arriving

        return on_message

    def close(self) -> None:
        """Remove the subscriptions and the polling timer (the writer stays open)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._timer is not None:
                self.node.destroy_timer(self._timer)
                self._timer = None
            for sub in self._subs.values():
                self.node.destroy_subscription(sub)
            self._subs.clear()


def _parser() -> argparse.ArgumentParser:
    p = CliParser(
        prog=PROG,
        description="Record ROS 2 topics into a rosbag2 bag (MCAP or sqlite3) with rosbags.",
    )
    p.add_argument(
        "--topics",
        nargs="+",
        default=list(DEFAULT_TOPICS),
        metavar="TOPIC[:pkg/msg/Type]",
        help="topics to record (default: %(default)s); the type comes from the graph if omitted",
    )
    p.add_argument("--out", help="bag directory to create (default: itasc_bag_<date-time>)")
    p.add_argument("--storage", choices=sorted(STORAGES), default="mcap")
    p.add_argument(
        "--duration",
        type=positive_float,
        help="stop after this many seconds [s] (then up to 0.1 s more to write queued messages)",
    )
    p.add_argument(
        "--stamp",
        choices=["receive", "header"],
        default="receive",
        help="bag time: reception time, or header.stamp where the message has a non-zero one",
    )
    return p


def installed_msgtypes() -> list[str]:
    """``pkg/msg/Type`` of every message whose ``.msg`` file the ROS packages installed."""
    files = (f for d in _share_dirs() for f in d.glob("*/msg/*.msg"))
    return sorted({f"{f.parent.parent.name}/msg/{f.stem}" for f in files})


def check_msgtype(msgtype: str) -> str:
    """``msgtype`` normalised if it can be recorded (typestore and rclpy class), else an error.

    Raises:
        BagError: an unknown type, naming the closest installed types (or packages).
    """
    msgtype = normalize_msgtype(msgtype)
    try:
        ensure_type(msgtype)
        _message_class(msgtype)
    except BagError:
        raise BagError(_unknown_msgtype(msgtype)) from None
    return msgtype


def _unknown_msgtype(msgtype: str) -> str:
    known = installed_msgtypes()
    pkg = msgtype.split("/")[0]
    in_pkg = [t for t in known if t.split("/")[0] == pkg]
    if in_pkg:
        return unknown_choice("message type", msgtype, in_pkg)
    packages = sorted({t.split("/")[0] for t in known})
    hint = closest(pkg, packages)
    did = f" (did you mean {hint!r}?)" if hint else ""
    shown = ", ".join(repr(k) for k in packages) or "(none)"
    return (
        f"unknown message type {msgtype!r}: no installed message package {pkg!r}{did};"
        f" installed: {shown}"
    )


def _check_topic(topic: str) -> None:
    try:
        validate_topic_name(topic)
    except InvalidTopicNameException:
        raise BagError(
            f"invalid topic name {topic!r}: use letters, digits, '_' and '/' separators, not"
            " starting with a digit or ending in '/' (e.g. '/joint_states')"
        ) from None


def _check_out(out: str) -> None:
    """A bag directory that does not exist yet in a writable directory, else an error."""
    path = Path(out).expanduser()
    if path.exists():
        raise BagError(f"--out {out!r} exists already; choose a new bag directory")
    parent = next((p for p in path.parents if p.exists()), Path("."))
    if not parent.is_dir():
        raise BagError(f"--out {out!r} is inside {str(parent)!r}, which is not a directory")
    writable_dir(path.parent, "--out's parent directory")


def _checked_specs(topics: Sequence[str]) -> list[tuple[str, str | None]]:
    specs = [parse_topic_spec(s) for s in topics]
    for topic, _msgtype in specs:
        _check_topic(topic)
    return [(t, None if m is None else check_msgtype(m)) for t, m in specs]


def main(argv: Sequence[str] | None = None) -> int:
    """Console script entry point; returns the exit status (2: a mistake, named on one line)."""
    args_all = list(sys.argv if argv is None else [PROG, *argv])
    return run_cli(PROG, lambda: _main(args_all))


def _main(args_all: list[str]) -> int:
    args = _parser().parse_args(non_ros_args(args_all)[1:])
    out = args.out or datetime.now().strftime("itasc_bag_%Y_%m_%d-%H_%M_%S")
    specs = _checked_specs(args.topics)  # before DDS starts: a mistake costs nothing
    _check_out(out)
    writer = BagWriter(out, args.storage)

    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    _record(args_all, writer, specs, args, stop)
    return 0


def _record(
    args_all: list[str],
    writer: BagWriter,
    specs: list[tuple[str, str | None]],
    args: argparse.Namespace,
    stop: threading.Event,
) -> None:
    """Record until ``stop`` or ``args.duration``, then close the bag."""
    context = rclpy.Context()
    rclpy.init(args=args_all, context=context, signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("itasc_recorder", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    log = node.get_logger()
    out = str(writer.path)
    try:
        with writer:
            # --duration counts from before the first subscription: no message is taken
            # outside duration + DRAIN_TIME, however late this process runs
            end = None if args.duration is None else time.monotonic() + args.duration
            recorder = Recorder(node, writer, specs, stamp=args.stamp)
            log.info(f"writing {args.storage} bag {out}; waiting for {', '.join(recorder.wanted)}")
            while not stop.is_set() and (end is None or time.monotonic() < end):
                executor.spin_once(timeout_sec=0.05)
            # Write what is already queued in the subscriptions before closing.
            drain_end = time.monotonic() + DRAIN_TIME
            while time.monotonic() < drain_end:
                executor.spin_once(timeout_sec=0.01)
            recorder.close()
            counts = writer.counts
        log.info(f"closed bag {out}: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)


if __name__ == "__main__":
    sys.exit(main())
