"""Compiled writers of the journal's per-tick records (numba; layouts of :mod:`.journal`).

Internal: the public API is :meth:`itasc_ros.core.control.Controller.attach_journal`. A tick
and its inputs are journaled in the control thread; as numpy slice assignments (a dozen per
tick, each a dispatch of its own) the records would cost the tick more than the solve's parts
they record. Each writer here
writes one whole record, ``[code, length, payload...]``, into the journal's buffer at the index
the journal reserved (:meth:`.journal.Journal.reserve`), and allocates nothing.
"""

from __future__ import annotations

from numba import njit, types

from ..kinematics._kernels import INPUT_VECTOR
from ._packed import (
    JS_HEADER,
    JS_STAMP,
    T_HEADER,
    T_REF_ACTIVE,
    T_SOURCE,
    T_STAMP,
    TA_APPLIED,
    TA_POSE,
    TA_REF_POSE,
)
from .journal import TICK_TARGET_SIZE, Code

TICK = float(Code.TICK)
JOINT_STATE = float(Code.JOINT_STATE)
TARGET = float(Code.TARGET)

TICK_HEAD = 7
"""Values of a TICK payload before the joint positions."""

_BUF = types.Array(types.float64, 1, "C")
_DATA = INPUT_VECTOR  # a column of a matrix, a read-only message buffer: one variant
_I, _F = types.int64, types.float64


def tick_length(n: int, k: int) -> int:
    """Payload values of a TICK record of ``n`` commanded joints and ``k`` targets."""
    return TICK_HEAD + 2 * n + k * TICK_TARGET_SIZE


@njit(cache=True)
def write_tick(
    buf, at, now, status, published, revision, joint_state, active, q, qdot, streams, arrays,
):  # fmt: skip
    """Write a TICK record at ``buf[at]`` (its length by :func:`tick_length`).

    Args:
        buf: (>= at + 2 + length,) the journal's buffer.
        at: index of the record's code.
        now: the tick's time [s].
        status: its status code (:data:`.journal.STATUS_CODES` index).
        published: True when the command was published.
        revision: the configuration revision in force.
        joint_state: (:data:`~._packed.JS_SIZE`,) the joint-state input's packed state: the
            reception time [s] of the joint state used and its header stamp [s] (NaN: none).
        active: True when the tick solved (the targets' twist sources are recorded; else 0).
        q: (n,) the joint positions used [rad or m].
        qdot: (n,) the command [rad/s or m/s].
        streams: (k, :data:`~._packed.TARGET_SIZE`) the target streams' packed states (their
            twist source, pose reception time [s], header stamp [s] (NaN: none), whether the
            straight-line reference is active).
        arrays: (k, :data:`~._packed.TA_SIZE`) the target streams' arrays: each one's pose
            and reference pose (4 x 4 row-major, root frame) and the twist it was given
            [m/s, rad/s].
    """
    n = q.shape[0]
    k = streams.shape[0]
    buf[at] = TICK
    buf[at + 1] = TICK_HEAD + 2 * n + k * TICK_TARGET_SIZE
    i = at + 2
    buf[i] = now
    buf[i + 1] = status
    buf[i + 2] = published
    buf[i + 3] = revision
    buf[i + 4] = joint_state[JS_STAMP]
    buf[i + 5] = joint_state[JS_HEADER]
    buf[i + 6] = n
    i += TICK_HEAD
    for c in range(n):
        buf[i + c] = q[c]
    i += n
    for j in range(k):
        st = streams[j]
        buf[i] = st[T_SOURCE] if active else 0.0
        buf[i + 1] = st[T_STAMP]
        buf[i + 2] = st[T_HEADER]
        row = arrays[j]
        used = TA_REF_POSE if st[T_REF_ACTIVE] != 0.0 else TA_POSE
        for c in range(12):  # rows 0-2
            buf[i + 3 + c] = row[used + c]
        for c in range(6):
            buf[i + 15 + c] = row[TA_APPLIED + c]
        i += TICK_TARGET_SIZE
    for c in range(n):
        buf[i + c] = qdot[c]


@njit(types.void(_BUF, _I, _F, _F, _DATA, _DATA), cache=True)
def write_joint_state(buf, at, received, header, positions, robots):
    """Write a JOINT_STATE record at ``buf[at]`` (payload ``2 + n_all + g`` values).

    Args:
        buf: the journal's buffer.
        at: index of the record's code.
        received: reception time [s].
        header: header stamp [s] (NaN: none).
        positions: (n_all,) every movable joint's position, URDF order [rad or m].
        robots: (g,) each robot's joint-state reception time [s] (``robots``; g = 0: one).
    """
    m = positions.shape[0]
    g = robots.shape[0]
    buf[at] = JOINT_STATE
    buf[at + 1] = 2 + m + g
    buf[at + 2] = received
    buf[at + 3] = header
    for c in range(m):
        buf[at + 4 + c] = positions[c]
    for r in range(g):
        buf[at + 4 + m + r] = robots[r]


@njit(inline="always", cache=True, nogil=True)
def _input_head(buf, at, code, length, index, received, header, frame):
    """The first six values of a target's input record: code, length, index, times, frame."""
    buf[at] = code
    buf[at + 1] = length
    buf[at + 2] = index
    buf[at + 3] = received
    buf[at + 4] = header
    buf[at + 5] = frame


@njit(types.void(_BUF, _I, _I, _F, _F, _I, _F, _DATA, _DATA), cache=True)
def write_target(buf, at, index, received, header, frame, jump, p, qt):
    """Write a TARGET record at ``buf[at]`` (payload 12 values).

    Args:
        buf: the journal's buffer.
        at: index of the record's code.
        index: the target's stream index.
        received: reception time [s].
        header: header stamp [s] (NaN: none).
        frame: the frame's code (link index, -1 root).
        jump: 1.0 when the pose was given as a jump, else 0.0.
        p: (3,) position as received [m].
        qt: (4,) quaternion (x, y, z, w) as received.
    """
    _input_head(buf, at, TARGET, 12, index, received, header, frame)
    buf[at + 6] = jump
    for c in range(3):
        buf[at + 7 + c] = p[c]
    for c in range(4):
        buf[at + 10 + c] = qt[c]


@njit(types.void(_BUF, _I, _F, _I, _F, _F, _I, _DATA), cache=True, nogil=True)
def write_twist(buf, at, code, index, received, header, frame, twist):
    """Write a TWIST or JOG record at ``buf[at]`` (payload 10 values).

    Args:
        buf: the journal's buffer.
        at: index of the record's code.
        code: the record's code (TWIST or JOG).
        index: the target's stream index.
        received: reception time [s].
        header: header stamp [s] (NaN: none).
        frame: the frame's code (link index, -1 root).
        twist: (6,) the twist as received, in the frame's axes [m/s, rad/s].
    """
    _input_head(buf, at, code, 10, index, received, header, frame)
    for c in range(6):
        buf[at + 6 + c] = twist[c]


__all__ = [
    "TICK_HEAD",
    "tick_length",
    "write_joint_state",
    "write_target",
    "write_tick",
    "write_twist",
]
