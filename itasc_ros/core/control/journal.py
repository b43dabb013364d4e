"""Journal: what each control tick consumed, as a flat float64 record stream (ROS-free).

A :class:`~itasc_ros.core.control.Controller` with a journal attached appends one record per
accepted input (joint state, target pose, target twist, ``enable``), per live parameter change
and per tick (:meth:`Controller.step`), with the very values and times the controller used:
reception times on its clock, header stamps, positions in the controller's joint order. Fed
back through the same methods in the same order (:mod:`itasc_ros.core.control.playback`), they give
the same commands bit for bit: the twist estimate, stamp order and freshness decisions are
recomputed by the code that made them, not guessed.

The node publishes the records of each tick as one ``std_msgs/Float64MultiArray`` (``~/journal``,
only while someone subscribes); :func:`decode` reads them back.

Layout of a message's ``data``: ``[FORMAT, sequence, record, record, ...]``; each record is
``[code, length, payload...]`` with ``length`` payload values, so a reader can skip codes it does
not know. ``NaN`` stands for "no header stamp"; ``-inf`` for "never". Payloads (``n``: the
URDF's movable joints, :attr:`KinematicTree.all_joint_names` order; ``c``: the commanded joints;
``k``: the constraints that take a target, in configuration order):

=============  =============================================================================
SNAPSHOT       :data:`SNAPSHOT_HEAD` values (revision, urdf tag, model number, n, k, enabled,
               halted, has_state, joint-state reception time, header stamp, stamp order
               (last accepted stamp, its reception time, smallest delivery offset)), q (n),
               per target :data:`STREAM_SIZE` values
               (:func:`stream_layout`), then the motion limiter's state: the last tick's
               time, the last command (c) and its acceleration (c), then the odometry's
               :data:`ODOMETRY_SIZE` values (has state, reception time, header stamp, stamp
               order (3), pose (16), twist in the world's axes (6), jumps), then each
               robot's joint-state reception time (g: the ``robots``, 0 for one robot),
               the states' interval, a late state's prediction (5 c + 3), then the solve's
               memory (:data:`~itasc_ros.core.solve.small_svd.MEMORY_SIZE`: where its next
               SVD starts, :attr:`~itasc_ros.core.solve.Scene.solve_memory`)
JOINT_STATE    reception time, header stamp, q (n), each robot's reception time (g)
TARGET         target index, reception time, header stamp, frame (link index, -1 root,
               -2 world), jump, position (3), quaternion x y z w (4)
TWIST          target index, reception time, header stamp, frame, twist (6)
JOG            target index, reception time, header stamp, frame, jog twist (6)
ODOMETRY       reception time, header stamp, position (3), quaternion x y z w (4), twist in the
               base's axes (6): the base in ``world_frame``
ENABLED        1 or 0
PARAMETERS     the configuration revision now in force, 1 if the controller's live settings
               were updated (``update_parameters``) or 0 (a node-only parameter changed)
TICK           now, status code, published, revision, joint-state reception time, header stamp,
               c, q (c), per target :data:`TICK_TARGET_SIZE` values (twist source, pose reception
               time, header stamp, pose rows 0-2 (12), applied twist (6)), command (c)
ZERO           time, reason code: a zero command published outside a tick
=============  =============================================================================

Every journal starts with a SNAPSHOT of the controller's input state (a subscriber may join a
running node); the node adds one every second, so that a reader that lost messages (the
sequence number jumps) resynchronises, and one that did not checks its state against it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]

FORMAT = 8.0
"""First value of every journal message: the layout version."""

LABEL = "itasc_journal_v1"
"""``layout.dim[0].label`` of a journal message."""

STREAM_SIZE = 123
"""Values per target stream in a SNAPSHOT (see :func:`stream_layout`)."""

SNAPSHOT_HEAD = 13
"""Values before the joint positions in a SNAPSHOT."""

TICK_TARGET_SIZE = 21
"""Values per target in a TICK record."""

ODOMETRY_SIZE = 29
"""Values of the odometry's state at the end of a SNAPSHOT."""


class Code(IntEnum):
    """Record codes (the first value of a record)."""

    SNAPSHOT = 1
    JOINT_STATE = 2
    TARGET = 3
    TWIST = 4
    ENABLED = 5
    PARAMETERS = 6
    TICK = 7
    ZERO = 8
    JOG = 9
    ODOMETRY = 10


class TwistSource(IntEnum):
    """Where the twist fed forward at a tick came from."""

    NONE = 0
    ESTIMATED = 1  # from successive target poses
    EXPLICIT = 2  # from the target's twist topic
    REFERENCE = 3  # the straight-line reference toward a target step, or a jog


class ZeroReason(IntEnum):
    """Why a zero command was published outside a tick (ZERO records)."""

    SHUTDOWN = 1
    MODEL_CHANGE = 2  # the model was replaced or dropped while commanding
    TICK_ERROR = 3  # an unexpected exception in the tick
    SLOW_PARSE = 4  # a URDF parse held the loop while commanding


STATUS_CODES = ("waiting", "active", "stale", "disabled", "fault", "stopping")
"""TICK status code -> :class:`~itasc_ros.core.control.controller.Status` value."""


def stream_layout() -> dict[str, slice]:
    """Field name -> slice of one target stream's :data:`STREAM_SIZE` SNAPSHOT values.

    ``order``, ``twist_order`` and ``jog_order`` are a
    :class:`~itasc_ros.core.control.streams.StampOrder`: the last accepted header stamp [s]
    (NaN: none), its reception time [s] and the smallest delivery offset [s] (inf: none, or
    the anchor alone).
    ``twist_time`` and ``accel`` are the explicit twists' time and filtered change rate;
    ``given_twist`` the twist the constraint was given at the last solve (aimed ahead or not)
    and ``aiming`` 1.0 when its target was aimed ahead then. ``world`` is 1.0 for a stream in
    the world frame, ``world_target`` and ``world_twist`` what it demands there.
    """
    sizes = (
        ("has_pose", 1),
        ("pose", 16),
        ("stamp", 1),
        ("header", 1),
        ("order", 3),
        ("estimate", 6),
        ("twist", 6),
        ("twist_stamp", 1),
        ("twist_order", 3),
        ("applied", 6),
        ("jumps", 1),
        ("capped", 1),
        ("source", 1),
        ("ref_active", 1),
        ("ref_jogging", 1),
        ("ref_pose", 16),
        ("ref_twist", 6),
        ("jog", 6),
        ("jog_stamp", 1),
        ("jog_order", 3),
        ("jog_valid", 1),
        ("jog_period", 1),
        ("jog_budget", 1),
        ("jog_start", 1),
        ("jog_count", 1),
        ("twist_time", 1),
        ("accel", 6),
        ("given_twist", 6),
        ("aiming", 1),
        ("world", 1),
        ("world_target", 16),
        ("world_twist", 6),
    )
    out, i = {}, 0
    for name, size in sizes:
        out[name] = slice(i, i + size)
        i += size
    assert i == STREAM_SIZE
    return out


STREAM = stream_layout()


def stamp_value(stamp: float | None) -> float:
    """A header stamp as stored: NaN for None (no stamp)."""
    return math.nan if stamp is None else float(stamp)


def stamp_of(value: float) -> float | None:
    """A stored header stamp back: None for NaN."""
    return None if math.isnan(value) else float(value)


class Journal:
    """A growing buffer of records; :meth:`take` hands out and clears what was written.

    Writing allocates nothing unless the buffer must grow (it doubles; the node empties it
    every tick, so it stops growing after the first ticks).

    Args:
        capacity: initial number of float64 values.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self._buf = np.zeros(max(capacity, 64))
        self._capacity = self._buf.shape[0]
        self._n = 2  # [FORMAT, sequence] come first
        self._buf[0] = FORMAT
        self.sequence = 0
        self.revision = 0  # the configuration revision (set by the owner of the parameters)
        self.urdf_tag = 0.0  # identifies the URDF of the journaled model (see urdf_tag())
        self.model = 0  # counts the models journaled (a new controller: a new model number)

    def label(self, revision: int, urdf_tag: float, model: int) -> None:
        """Label the records from here on: configuration revision, URDF tag, model number."""
        self.revision, self.urdf_tag, self.model = revision, urdf_tag, model

    @property
    def size(self) -> int:
        """Values written since the last :meth:`take` (header included)."""
        return self._n

    @property
    def empty(self) -> bool:
        """True when no record was written since the last :meth:`take`."""
        return self._n <= 2

    def begin(self, code: Code, length: int) -> Array:
        """Start a record; returns the (length,) view to fill with its payload."""
        b, n = self.reserve(length)
        b[n], b[n + 1] = code, length
        return b[n + 2 : n + 2 + length]

    def reserve(self, length: int) -> tuple[Array, int]:
        """Room for one record of ``length`` payload values, for a writer that fills it whole.

        Args:
            length: payload values of the record.

        Returns:
            The buffer and the index where the record (its code, its length, then its
            payload) goes; the buffer is valid until the next write.
        """
        n = self._n
        end = n + 2 + length
        if end > self._capacity:
            grown = np.zeros(max(2 * self._capacity, end))
            grown[:n] = self._buf[:n]
            self._buf, self._capacity = grown, grown.shape[0]
        self._n = end
        return self._buf, n

    def release(self, at: int) -> None:
        """Give back the room :meth:`reserve` gave at ``at``, its record not written.

        Only the last reservation can be given back (nothing was written after it).
        """
        self._n = at

    def take(self) -> Array:
        """The message so far, ``[FORMAT, sequence, records...]``; then empty the buffer.

        The view is valid until the next write; the sequence number advances.
        """
        self._buf[1] = self.sequence
        out = self._buf[: self._n]
        self.sequence += 1
        self._n = 2
        return out

    # ------------------------------------------------------------------ small records
    def enabled(self, flag: bool) -> None:
        """An ENABLED record."""
        self.begin(Code.ENABLED, 1)[0] = 1.0 if flag else 0.0

    def parameters(self, revision: int, updated: bool = True) -> None:
        """A PARAMETERS record: the parameters changed to ``revision``.

        Args:
            revision: the new configuration revision.
            updated: the controller's live settings were updated (``update_parameters`` ran).
        """
        self.revision = int(revision)
        rec = self.begin(Code.PARAMETERS, 2)
        rec[0], rec[1] = revision, updated

    def zero(self, t: float, reason: ZeroReason) -> None:
        """A ZERO record: a zero command published at ``t`` [s] outside a tick."""
        p = self.begin(Code.ZERO, 2)
        p[0], p[1] = t, reason


def urdf_tag(digest: str) -> float:
    """A float that identifies a URDF: the first 48 bits of its hex digest (exact in float64)."""
    return float(int(digest[:12], 16)) if digest else 0.0


@dataclass(frozen=True)
class Record:
    """One decoded record: its code and payload (a view into the message data)."""

    code: int
    payload: Array


@dataclass(frozen=True)
class Message:
    """One decoded journal message."""

    sequence: int
    records: list[Record]


class JournalError(ValueError):
    """A journal message that does not follow the layout (named reason)."""


def decode(data: Array) -> Message:
    """Split one message's data into records.

    Raises:
        JournalError: a wrong format number or a record running past the end.
    """
    d = np.asarray(data, dtype=float)
    if d.shape[0] < 2 or d[0] != FORMAT:
        raise JournalError(
            f"not an itasc journal message of format {FORMAT:g} (starts with {d[:2].tolist()})"
        )
    out: list[Record] = []
    i = 2
    while i < d.shape[0]:
        if i + 2 > d.shape[0]:
            raise JournalError(f"record header cut off at value {i}")
        code, length = int(d[i]), int(d[i + 1])
        end = i + 2 + length
        if length < 0 or end > d.shape[0]:
            raise JournalError(f"record {code} at value {i} runs past the end ({length} values)")
        out.append(Record(code, d[i + 2 : end]))
        i = end
    return Message(int(d[1]), out)


def records(messages: Iterator[Array] | list[Array]) -> Iterator[tuple[int, Record]]:
    """The records of successive messages, each with its message's sequence number."""
    for data in messages:
        msg = decode(data)
        for r in msg.records:
            yield msg.sequence, r


__all__ = [
    "FORMAT",
    "LABEL",
    "SNAPSHOT_HEAD",
    "STATUS_CODES",
    "STREAM",
    "STREAM_SIZE",
    "TICK_TARGET_SIZE",
    "Code",
    "Journal",
    "JournalError",
    "Message",
    "Record",
    "TwistSource",
    "ZeroReason",
    "decode",
    "records",
    "stamp_of",
    "stamp_value",
    "urdf_tag",
]
