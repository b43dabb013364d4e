"""rosbag2 reading and writing with ``rosbags`` (no ROS installation needed).

The bags are ordinary rosbag2 directories (``metadata.yaml`` + one ``.mcap`` or ``.db3`` file)
that ``ros2 bag info/play`` reads: sqlite3 bags are written as rosbag2 version 8 (the most
portable), MCAP bags as version 9.

Messages here are ``rosbags`` typestore objects (dataclasses with numpy arrays), not rclpy
messages. The default typestore is ``Stores.ROS2_KILTED``, the distribution of the rclpy wheels
in this project; for every message type the project uses its RIHS01 type hashes equal those of
the installed ``*_msgs`` packages, and the CDR it writes is what rclpy reads (see
test/tools/test_bagio.py). Types that the typestore lacks are loaded from ``share/<pkg>/msg/*.msg``
under ``AMENT_PREFIX_PATH`` / the Python prefix, or from the bag's own message definitions.

This module never imports rclpy.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import numpy as np
from rosbags.interfaces import Connection, MessageDefinitionFormat, Nodetype
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.serde import SerdeError
from rosbags.typesys import Stores, get_types_from_idl, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

from itasc_ros.core.errors import ItascError

Storage = Literal["mcap", "sqlite3"]

#: Storage name -> (rosbags storage plugin, rosbag2 format version).
STORAGES: dict[str, tuple[StoragePlugin, Literal[8, 9]]] = {
    "mcap": (StoragePlugin.MCAP, 9),
    "sqlite3": (StoragePlugin.SQLITE3, 8),
}

#: The typestore matching the ROS 2 wheels (rclpy Kilted) installed with this package.
DEFAULT_STORE = Stores.ROS2_KILTED


class BagError(ItascError):
    """A bag cannot be written or read (existing path, unknown topic or type, bad storage)."""


@functools.cache
def _cached_typestore(store: Stores) -> Typestore:
    return get_typestore(store)


def default_typestore() -> Typestore:
    """The shared typestore for :data:`DEFAULT_STORE` (types may be added to it on demand)."""
    return _cached_typestore(DEFAULT_STORE)


def normalize_msgtype(msgtype: str) -> str:
    """``pkg/Type`` or ``pkg/msg/Type`` -> ``pkg/msg/Type``.

    Raises:
        BagError: not of either form.
    """
    parts = msgtype.strip().split("/")
    if len(parts) == 2 and all(parts):
        return f"{parts[0]}/msg/{parts[1]}"
    if len(parts) == 3 and all(parts):
        return "/".join(parts)
    raise BagError(f"message type {msgtype!r} must look like 'pkg/msg/Type' or 'pkg/Type'")


def _share_dirs() -> list[Path]:
    prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    prefixes += [sys.prefix]
    return [Path(p) / "share" for p in dict.fromkeys(prefixes)]


def _referenced_types(fielddefs: Any) -> set[str]:
    """Names of the message types a typestore field list refers to."""
    out: set[str] = set()

    def visit(desc: Any) -> None:
        kind, arg = desc
        if kind == Nodetype.NAME:
            out.add(arg)
        elif kind in (Nodetype.ARRAY, Nodetype.SEQUENCE):
            visit(arg[0])

    _consts, fields = fielddefs
    for _name, desc in fields:
        visit(desc)
    return out


def ensure_type(msgtype: str, typestore: Typestore | None = None) -> str:
    """Make ``msgtype`` (and the types it uses) known to ``typestore``.

    Missing types are parsed from ``<prefix>/share/<pkg>/msg/<Type>.msg`` for each prefix in
    ``AMENT_PREFIX_PATH`` and the Python prefix (where the ROS wheels install them).

    Returns:
        The normalised type name ``pkg/msg/Type``.

    Raises:
        BagError: the type is neither in the typestore nor found as a ``.msg`` file.
    """
    ts = typestore or default_typestore()
    msgtype = normalize_msgtype(msgtype)
    pending = [msgtype]
    while pending:
        name = pending.pop()
        if name in ts.fielddefs:
            continue
        pkg, sub, typ = name.split("/")
        candidates = [d / pkg / sub / f"{typ}.msg" for d in _share_dirs()]
        found = next((p for p in candidates if p.is_file()), None)
        if found is None:
            raise BagError(
                f"message type {name!r} is unknown to the typestore and no .msg file was found"
                f" in: {', '.join(str(p) for p in candidates)}"
            )
        types = get_types_from_msg(found.read_text(encoding="utf-8"), name)
        ts.register(types)
        for fielddefs in types.values():
            pending.extend(t for t in _referenced_types(fielddefs) if t not in ts.fielddefs)
    return msgtype


def deserialize(raw: bytes | memoryview, msgtype: str, typestore: Typestore | None = None) -> Any:
    """Deserialize CDR bytes into a typestore message, tolerating trailing padding.

    ``rclpy.serialization.serialize_message`` returns a buffer sized by Fast CDR's size
    estimate, which can be longer than the message (uninitialised bytes at the end); DDS
    delivers exact sizes. ``Typestore.deserialize_cdr`` rejects more than 3 extra bytes, so on
    that error the message is decoded again without the size check.

    Args:
        raw: CDR data with its 4-byte encapsulation header.
        msgtype: ``pkg/msg/Type``.
        typestore: default :func:`default_typestore`.

    Raises:
        SerdeError: the data does not decode as ``msgtype``.
    """
    ts = typestore or default_typestore()
    try:
        return ts.deserialize_cdr(raw, msgtype)
    except SerdeError as exc:
        if "size mismatch" not in str(exc):
            raise
    msgdef = ts.get_msgdef(msgtype)
    func = msgdef.deserialize_cdr_le if raw[1] else msgdef.deserialize_cdr_be
    message, _pos = func(memoryview(raw)[4:], 0, msgdef.cls, ts)
    return message


class BagWriter:
    """Write a rosbag2 bag (context manager).

    Example::

        with BagWriter("out_bag", "mcap") as bag:
            bag.add_topic("/joint_states", "sensor_msgs/msg/JointState")
            bag.write("/joint_states", t_ns, joint_state_msg(t_ns, names, q))

    Leaving the ``with`` block closes the bag and writes ``metadata.yaml`` even when an
    exception (e.g. KeyboardInterrupt) ends it, so everything written so far is kept. Writes
    are serialised by a lock, so several executor threads may share one writer.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        storage: Storage = "mcap",
        typestore: Typestore | None = None,
    ) -> None:
        """Prepare (but do not yet open) a bag.

        Args:
            path: bag directory to create; it must not exist.
            storage: ``'mcap'`` (rosbag2 version 9) or ``'sqlite3'`` (version 8).
            typestore: default :func:`default_typestore` (ROS 2 Kilted).

        Raises:
            BagError: unknown storage or existing path.
        """
        if storage not in STORAGES:
            raise BagError(f"unknown storage {storage!r}; valid: {', '.join(STORAGES)}")
        self.path = Path(path)
        if self.path.exists():
            raise BagError(f"bag path {str(self.path)!r} exists already; choose a new one")
        self.storage = storage
        self.typestore = typestore or default_typestore()
        plugin, version = STORAGES[storage]
        self._writer = Writer(self.path, version=version, storage_plugin=plugin)
        self._conns: dict[str, Connection] = {}
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._open = False

    def open(self) -> BagWriter:
        """Create the bag directory and storage file."""
        self._writer.open()
        self._open = True
        return self

    def close(self) -> None:
        """Finish the storage file and write ``metadata.yaml`` (idempotent)."""
        with self._lock:
            if not self._open:
                return
            self._open = False
            try:
                self._writer.close()
            except BaseException:
                self._writer.abort()
                raise

    def __enter__(self) -> BagWriter:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def topics(self) -> dict[str, str]:
        """Topic -> message type of the topics added so far."""
        return {t: c.msgtype for t, c in self._conns.items()}

    @property
    def counts(self) -> dict[str, int]:
        """Topic -> number of messages written so far."""
        with self._lock:
            return dict(self._counts)

    def add_topic(self, topic: str, msgtype: str) -> Connection:
        """Register a topic (once) with its message type ``pkg/msg/Type``.

        Returns:
            The rosbags connection (adding the same topic and type again returns it).

        Raises:
            BagError: bag not open, unknown type, or the topic exists with another type.
        """
        msgtype = ensure_type(msgtype, self.typestore)
        with self._lock:
            if not self._open:
                raise BagError(f"bag {str(self.path)!r} is not open; use it in a 'with' block")
            conn = self._conns.get(topic)
            if conn is not None:
                if conn.msgtype != msgtype:
                    raise BagError(
                        f"topic {topic!r} is already in the bag as {conn.msgtype!r},"
                        f" not {msgtype!r}"
                    )
                return conn
            conn = self._writer.add_connection(topic, msgtype, typestore=self.typestore)
            self._conns[topic] = conn
            self._counts[topic] = 0
            return conn

    def write_raw(self, topic: str, t_ns: int, cdr: bytes | memoryview) -> None:
        """Write already serialized CDR data (as received from DDS) unchanged.

        Args:
            topic: a topic added with :meth:`add_topic`.
            t_ns: bag time stamp [ns] (>= 0).
            cdr: serialized message including the 4-byte encapsulation header.

        Raises:
            BagError: unknown topic, closed bag or negative time.
        """
        if t_ns < 0:
            raise BagError(f"time stamp {t_ns} ns on {topic!r} is negative")
        with self._lock:
            if not self._open:
                raise BagError(f"bag {str(self.path)!r} is not open")
            conn = self._conns.get(topic)
            if conn is None:
                raise BagError(
                    f"topic {topic!r} was not added; added topics: {sorted(self._conns)}"
                )
            self._writer.write(conn, int(t_ns), cdr)
            self._counts[topic] += 1

    def write(self, topic: str, t_ns: int, msg: Any) -> None:
        """Serialize a typestore message and write it; adds the topic on first use.

        Args:
            topic: topic name.
            t_ns: bag time stamp [ns].
            msg: typestore message (e.g. from :func:`joint_state_msg`).
        """
        msgtype = getattr(msg, "__msgtype__", None)
        if not isinstance(msgtype, str):
            raise BagError(f"{type(msg).__name__} is not a rosbags typestore message")
        if topic not in self._conns:
            self.add_topic(topic, msgtype)
        self.write_raw(topic, t_ns, self.typestore.serialize_cdr(msg, msgtype))


def _register_from_bag(conn: Connection, ts: Typestore) -> None:
    """Add a connection's type to ``ts`` from the bag's definition if ``ts`` lacks it."""
    if conn.msgtype in ts.fielddefs:
        return
    if conn.msgdef.format == MessageDefinitionFormat.MSG and conn.msgdef.data:
        ts.register(get_types_from_msg(conn.msgdef.data, conn.msgtype))
    elif conn.msgdef.format == MessageDefinitionFormat.IDL and conn.msgdef.data:
        ts.register(get_types_from_idl(conn.msgdef.data))
    else:
        ensure_type(conn.msgtype, ts)


def read_bag(
    path: str | os.PathLike[str],
    topics: Iterable[str] | None = None,
    typestore: Typestore | None = None,
) -> Iterator[tuple[str, int, Any]]:
    """Messages of a bag in time order.

    Args:
        path: bag directory (sqlite3 or MCAP).
        topics: only these topics (default: all). Topics absent from the bag are ignored.
        typestore: default :func:`default_typestore`; types the bag defines are added to it.

    Yields:
        ``(topic, t_ns, msg)`` with the bag time stamp [ns] and the deserialized message.
    """
    ts = typestore or default_typestore()
    wanted = None if topics is None else set(topics)
    with Reader(Path(path)) as reader:
        conns = [c for c in reader.connections if wanted is None or c.topic in wanted]
        if not conns:
            return
        for conn in conns:
            _register_from_bag(conn, ts)
        for conn, t_ns, raw in reader.messages(connections=conns):
            yield conn.topic, t_ns, deserialize(raw, conn.msgtype, ts)


def bag_summary(path: str | os.PathLike[str]) -> dict[str, tuple[str, int]]:
    """Topic -> (message type, message count) of a bag, from its metadata."""
    with Reader(Path(path)) as reader:
        out: dict[str, tuple[str, int]] = {}
        for topic, info in reader.topics.items():
            msgtype = info.msgtype or "/".join(sorted({c.msgtype for c in info.connections}))
            out[topic] = (msgtype, int(info.msgcount))
        return out


# ---------------------------------------------------------------------------------------------
# Typestore message builders (no rclpy)


def _ts(typestore: Typestore | None) -> Typestore:
    return typestore or default_typestore()


def time_msg(t_ns: int, typestore: Typestore | None = None) -> Any:
    """builtin_interfaces/msg/Time for a time [ns] (>= 0)."""
    if t_ns < 0:
        raise BagError(f"time stamp {t_ns} ns is negative")
    sec, nanosec = divmod(int(t_ns), 1_000_000_000)
    return _ts(typestore).types["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec)


def stamp_to_ns(stamp: Any) -> int:
    """builtin_interfaces/msg/Time (typestore or rclpy) -> time [ns]."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def header_msg(t_ns: int, frame_id: str = "", typestore: Typestore | None = None) -> Any:
    """std_msgs/msg/Header with a stamp [ns] and a frame id."""
    return _ts(typestore).types["std_msgs/msg/Header"](
        stamp=time_msg(t_ns, typestore), frame_id=frame_id
    )


def _f64(values: Iterable[float] | None, name: str, n: int | None = None) -> np.ndarray:
    arr = np.asarray([] if values is None else list(values), dtype=np.float64).reshape(-1)
    if n is not None and arr.size not in (0, n):
        raise BagError(f"{name} has {arr.size} values; expected {n} (one per joint) or none")
    return arr


def joint_state_msg(
    t_ns: int,
    names: Sequence[str],
    position: Iterable[float],
    velocity: Iterable[float] | None = None,
    effort: Iterable[float] | None = None,
    frame_id: str = "",
    typestore: Typestore | None = None,
) -> Any:
    """sensor_msgs/msg/JointState.

    Args:
        t_ns: header stamp [ns].
        names: (n,) joint names.
        position: (n,) joint positions [rad or m].
        velocity: (n,) joint velocities [rad/s or m/s], or None for an empty array.
        effort: (n,) efforts [N m or N], or None for an empty array.
        frame_id: header frame id.
        typestore: default :func:`default_typestore`.
    """
    n = len(names)
    return _ts(typestore).types["sensor_msgs/msg/JointState"](
        header=header_msg(t_ns, frame_id, typestore),
        name=[str(s) for s in names],
        position=_f64(position, "position", n),
        velocity=_f64(velocity, "velocity", n),
        effort=_f64(effort, "effort", n),
    )


def _vec3(ts: Typestore, xyz: Sequence[float], type_name: str) -> Any:
    x, y, z = (float(v) for v in xyz)
    return ts.types[type_name](x=x, y=y, z=z)


def pose_stamped_msg(
    t_ns: int,
    frame: str,
    xyz: Sequence[float],
    quat_xyzw: Sequence[float] = (0.0, 0.0, 0.0, 1.0),
    typestore: Typestore | None = None,
) -> Any:
    """geometry_msgs/msg/PoseStamped.

    Args:
        t_ns: header stamp [ns].
        frame: header frame id.
        xyz: (3,) position [m].
        quat_xyzw: (4,) orientation quaternion (x, y, z, w), stored as given.
        typestore: default :func:`default_typestore`.
    """
    ts = _ts(typestore)
    qx, qy, qz, qw = (float(v) for v in quat_xyzw)
    pose = ts.types["geometry_msgs/msg/Pose"](
        position=_vec3(ts, xyz, "geometry_msgs/msg/Point"),
        orientation=ts.types["geometry_msgs/msg/Quaternion"](x=qx, y=qy, z=qz, w=qw),
    )
    return ts.types["geometry_msgs/msg/PoseStamped"](header=header_msg(t_ns, frame, ts), pose=pose)


def twist_stamped_msg(
    t_ns: int,
    frame: str,
    linear: Sequence[float],
    angular: Sequence[float],
    typestore: Typestore | None = None,
) -> Any:
    """geometry_msgs/msg/TwistStamped.

    Args:
        t_ns: header stamp [ns].
        frame: header frame id.
        linear: (3,) linear velocity [m/s].
        angular: (3,) angular velocity [rad/s].
        typestore: default :func:`default_typestore`.
    """
    ts = _ts(typestore)
    twist = ts.types["geometry_msgs/msg/Twist"](
        linear=_vec3(ts, linear, "geometry_msgs/msg/Vector3"),
        angular=_vec3(ts, angular, "geometry_msgs/msg/Vector3"),
    )
    return ts.types["geometry_msgs/msg/TwistStamped"](
        header=header_msg(t_ns, frame, ts), twist=twist
    )


def float64_multi_array_msg(data: Iterable[float], typestore: Typestore | None = None) -> Any:
    """std_msgs/msg/Float64MultiArray with an empty layout (as ros2_control expects).

    Args:
        data: (n,) values, e.g. joint velocity commands [rad/s].
        typestore: default :func:`default_typestore`.
    """
    ts = _ts(typestore)
    layout = ts.types["std_msgs/msg/MultiArrayLayout"](dim=[], data_offset=0)
    return ts.types["std_msgs/msg/Float64MultiArray"](layout=layout, data=_f64(data, "data"))


__all__ = [
    "DEFAULT_STORE",
    "STORAGES",
    "BagError",
    "BagWriter",
    "Storage",
    "bag_summary",
    "default_typestore",
    "deserialize",
    "ensure_type",
    "float64_multi_array_msg",
    "header_msg",
    "joint_state_msg",
    "normalize_msgtype",
    "pose_stamped_msg",
    "read_bag",
    "stamp_to_ns",
    "time_msg",
    "twist_stamped_msg",
]
