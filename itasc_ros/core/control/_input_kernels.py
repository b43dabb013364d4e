"""Compiled acceptance of the usual inputs: a joint state, a target pose (numba).

Internal: the public API is :meth:`itasc_ros.core.control.Controller.set_joint_state` and
:meth:`~itasc_ros.core.control.Controller.set_target`. A joint state and a target pose come in
every tick of a streaming node; taken through a dozen Python calls each (checks, stamp order,
twist estimate, bookkeeping), their acceptance cost the tick more than the solve. The usual
input (a float64 array, a known name list, a root-frame pose) is taken here in one call over
the input's packed state; the rest (a refusal's reason, a link's or the world's frame, a step
approached along a reference) stays with the Python path, which these kernels never
contradict: they accept exactly what it accepts, write exactly what it writes, and leave
everything untouched when they return :data:`REFUSED`.

Packed states: the layouts of :mod:`._packed`.
"""

from __future__ import annotations

import math

from numba import njit, types

from ..kinematics._kernels import INPUT_VECTOR, gather_within
from ._journal_kernels import write_joint_state, write_target
from ._packed import (
    JS_HAS_STATE,
    JS_HEADER,
    JS_INTERVAL,
    JS_ORDER,
    JS_STAMP,
    ORDER_OFFSET,
    ORDER_RECEIVED,
    ORDER_SOURCE,
    T_HAS_POSE,
    T_HEADER,
    T_JUMPS,
    T_ORDER,
    T_STAMP,
)
from ._target_kernels import POSE_OK, pose_from_position_quat, stream_step

#: Stamp-order verdicts of :func:`order_refusal`.
IN_ORDER, NOT_FINITE, OUT_OF_ORDER, AHEAD = 0, 1, 2, 3
#: Results of the acceptance kernels: refused (nothing changed; the Python path says why),
#: accepted within a stream, accepted as a step (a first pose, a jump, one after a pause).
REFUSED, SMOOTH, STEP = -1, 0, 1


_V = types.Array(types.float64, 1, "C")
_M = types.Array(types.float64, 2, "C")
_I = types.Array(types.int64, 1, "C")
_F, _B, _N = types.float64, types.boolean, types.int64


@njit(types.int64(_V, _N, _F, _B, _F, _F), cache=True, nogil=True)
def order_refusal(s, at, source, stamped, received, timeout):
    """Why a message stamped ``source`` [s] received at ``received`` [s] is refused.

    The rule of :meth:`~itasc_ros.core.control.streams.StampOrder.check` over the packed order
    ``s[at:at + 3]``; ``stamped`` False: unstamped, not compared.

    Returns:
        :data:`IN_ORDER`, :data:`NOT_FINITE`, :data:`OUT_OF_ORDER` or :data:`AHEAD`.
    """
    if not stamped:
        return IN_ORDER
    if not math.isfinite(source):
        return NOT_FINITE
    last = s[at + ORDER_SOURCE]
    age = received - s[at + ORDER_RECEIVED]
    if last != last or not (-timeout <= age <= timeout):
        return IN_ORDER  # nothing recent to compare with: re-anchor
    if source < last:
        return OUT_OF_ORDER
    kept = s[at + ORDER_OFFSET]
    if kept == math.inf:  # the anchor alone: it may have come late
        kept = min(s[at + ORDER_RECEIVED] - last, 0.0)
    if kept - (received - source) > timeout:
        return AHEAD
    return IN_ORDER


@njit(types.void(_V, _N, _F, _B, _F), cache=True, nogil=True)
def order_accept(s, at, source, stamped, received):
    """Record an accepted message in the packed order ``s[at:at + 3]``.

    The rule of :meth:`~itasc_ros.core.control.streams.StampOrder.accept`; ``stamped`` False:
    the order is left as it is.
    """
    if not stamped:
        return
    offset = received - source
    last = s[at + ORDER_SOURCE]
    kept = s[at + ORDER_OFFSET]
    if last != last or source < last:
        s[at + ORDER_OFFSET] = math.inf  # another clock: its anchor alone
    elif kept == math.inf:  # the anchor's own delivery, then this one's
        s[at + ORDER_OFFSET] = min(s[at + ORDER_RECEIVED] - last, offset)
    elif offset < kept:
        s[at + ORDER_OFFSET] = offset
    s[at + ORDER_SOURCE] = source
    s[at + ORDER_RECEIVED] = received


@njit(
    types.int64(INPUT_VECTOR, _I, _F, _V, _V, _N, _V, _V, _F, _F, _B, _F, _F, _V, _N),
    cache=True,
    nogil=True,
)
def take_joint_state(
    pos, idx, huge, work, q, implicit, stamps, s, received, source, stamped, timeout, filt, buf,
    at,
):  # fmt: skip
    """Accept a joint state whose names were mapped (``idx``), or refuse it untouched.

    Args:
        pos: (m,) the message's positions [rad or m].
        idx: (n,) the message index of each commanded, measured joint.
        huge: positions above this are refused [rad or m].
        work: (n,) work array.
        q: (implicit + n,) the commanded joints' positions, written from ``implicit`` on.
        implicit: the first commanded joints no joint state gives.
        stamps: (implicit + n,) each joint's reception time, written from ``implicit`` on [s].
        s: (:data:`JS_SIZE`,) the input's packed state.
        received: reception time [s].
        source: header stamp [s] (read when ``stamped``).
        stamped: the message has a header stamp.
        timeout: ``input_timeout`` [s].
        filt: weight of the newest interval in the usual interval [-].
        buf: a journal's buffer (read when ``at`` >= 0).
        at: where its JOINT_STATE record goes (room reserved for it: ``q`` holds every
            movable joint, URDF order, and no robot has a stamp of its own), written once
            accepted; -1: none.

    Returns:
        :data:`SMOOTH` (accepted) or :data:`REFUSED`.
    """
    if not math.isfinite(received) or not gather_within(pos, idx, huge, work):
        return REFUSED
    if order_refusal(s, JS_ORDER, source, stamped, received, timeout) != IN_ORDER:
        return REFUSED
    for i in range(idx.shape[0]):
        q[implicit + i] = work[i]
    if s[JS_HAS_STATE] != 0.0:  # the states' usual interval: a filtered mean of the last ones
        gap = min(max(received - s[JS_STAMP], 0.0), timeout)
        if s[JS_INTERVAL] == 0.0:  # the first interval: the estimate starts there
            s[JS_INTERVAL] = gap
        else:
            s[JS_INTERVAL] += filt * (gap - s[JS_INTERVAL])
    s[JS_HAS_STATE] = 1.0
    s[JS_STAMP] = received
    for i in range(implicit, stamps.shape[0]):
        stamps[i] = received
    s[JS_HEADER] = source if stamped else math.nan
    order_accept(s, JS_ORDER, source, stamped, received)
    if at >= 0:
        write_joint_state(buf, at, received, s[JS_HEADER], q, q[:0])
    return SMOOTH


@njit(
    types.int64(
        INPUT_VECTOR,
        INPUT_VECTOR,
        _F,
        _V,
        _F,
        _F,
        _B,
        _F,
        _F,
        _F,
        _F,
        _F,
        _F,
        _M,
        _M,
        _M,
        _V,
        _V,
        _N,
        _V,
        _N,
        _M,
        _B,
    ),
    cache=True,
)
def take_target_pose(
    p, qt, huge, s, received, source, stamped, timeout, reach, dt_floor, max_speed,
    max_angular_speed, tau, new_pose, pose, rel, raw, estimate, index, buf, at, target, give,
):  # fmt: skip
    """Accept a root-frame pose of a target stream, or refuse it untouched.

    Checks it (3 values of at most ``huge``, a finite non-zero quaternion, a finite reception
    time, the stamp order, at most ``reach`` from the root), updates the stream's twist
    estimate from the last pose (:func:`~._target_kernels.stream_step`, a jump counted) and
    keeps the pose, its times and its stamp.

    Args:
        p: (3,) the position [m].
        qt: (4,) the quaternion (x, y, z, w).
        huge: positions above this are refused [m].
        s: (:data:`TARGET_SIZE`,) the stream's packed state.
        received: reception time [s].
        source: header stamp [s] (read when ``stamped``).
        stamped: the message has a header stamp.
        timeout: ``input_timeout`` [s].
        reach: the stream's reach [m].
        dt_floor: the control period [s] (poses of a burst are no jumps).
        max_speed: the targets' speed limit [m/s].
        max_angular_speed: their angular speed limit [rad/s].
        tau: the twist filter's time constant [s].
        new_pose: (4, 4) the pose read (written unless refused for its values).
        pose: (4, 4) the stream's last pose, then this one.
        rel: (3, 3) work array.
        raw: (6,) work array.
        estimate: (6,) the stream's twist estimate (root frame) [m/s, rad/s].
        index: the stream's index (its journal records').
        buf: a journal's buffer (read when ``at`` >= 0).
        at: where its TARGET record goes (room reserved for it), written once accepted;
            -1: none.
        target: (4, 4) the constraint's target pose, the pose given it when ``give`` and
            the pose is within the stream (:data:`SMOOTH`); else untouched.
        give: give a pose within the stream to ``target`` (the stream's constraint takes its
            poses as they come: no reference of a step or a jog leads it).

    Returns:
        :data:`STEP` (accepted: a first pose, a jump, a pose after a pause: the estimate
        restarts from zero), :data:`SMOOTH` (accepted within the stream) or :data:`REFUSED`.
    """
    if pose_from_position_quat(p, qt, huge, new_pose) != POSE_OK or not math.isfinite(received):
        return REFUSED
    if order_refusal(s, T_ORDER, source, stamped, received, timeout) != IN_ORDER:
        return REFUSED
    dist = math.sqrt(new_pose[0, 3] ** 2 + new_pose[1, 3] ** 2 + new_pose[2, 3] ** 2)
    if dist > reach:
        return REFUSED
    has_pose = s[T_HAS_POSE] != 0.0
    t_src = source if stamped else received
    last = s[T_ORDER + ORDER_SOURCE]
    t_prev = last if stamped and last == last else s[T_STAMP]
    dt = t_src - t_prev
    jump = False
    if has_pose and 0.0 < dt <= timeout:
        jump = stream_step(
            new_pose, pose, dt, dt_floor, max_speed, max_angular_speed, tau, rel, raw, estimate
        )
        if jump:
            s[T_JUMPS] += 1.0
    step = jump or not (has_pose and 0.0 <= dt <= timeout)
    if step:
        for i in range(6):
            estimate[i] = 0.0
    for i in range(4):
        for j in range(4):
            pose[i, j] = new_pose[i, j]
    s[T_STAMP] = received
    s[T_HEADER] = source if stamped else math.nan
    order_accept(s, T_ORDER, source, stamped, received)
    s[T_HAS_POSE] = 1.0
    if at >= 0:
        write_target(buf, at, index, received, s[T_HEADER], -1, 0.0, p, qt)
    if step:
        return STEP
    if give:
        for i in range(4):
            for j in range(4):
                target[i, j] = new_pose[i, j]
    return SMOOTH


__all__ = [
    "AHEAD",
    "IN_ORDER",
    "NOT_FINITE",
    "OUT_OF_ORDER",
    "REFUSED",
    "SMOOTH",
    "STEP",
    "order_accept",
    "order_refusal",
    "take_joint_state",
    "take_target_pose",
]
