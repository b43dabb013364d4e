"""Input streams of the controller: stamp order, freshness and a target's twist estimate.

Each input (joint states, each constraint's target poses and twists) is a stream. A message
carries two times: its *reception time* (the controller's clock, from which staleness is
measured) and its *header stamp* (the publisher's clock, checked for order by
:class:`StampOrder`; 0 means unstamped). ROS-free.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..kinematics._kernels import all_finite
from ._packed import (
    T_HAS_POSE,
    T_HEADER,
    T_JOG_FRESH,
    T_JOG_STAMP,
    T_JOG_VALID,
    T_JUMPS,
    T_ORDER,
    T_POSE_FRESH,
    T_REF_ACTIVE,
    T_SOURCE,
    T_STAMP,
    T_TWIST_FRESH,
    T_TWIST_STAMP,
    TA_APPLIED,
    TA_POSE,
    TA_REF_POSE,
    TA_SIZE,
    TARGET_SIZE,
)
from .cartesian_reference import CartesianReference

Array = NDArray[np.float64]

HUGE = 1e150
"""Input values larger than this [rad, m, m/s, rad/s] are rejected as garbage (the limit
:meth:`KinematicTree.compute` applies to q)."""

F8 = np.dtype(np.float64)
"""The native float64 dtype (a singleton: compared with ``is``)."""


def fresh(age: float, timeout: float) -> bool:
    """True when an input received ``age`` [s] ago is recent: ``|age| <= timeout`` (not NaN).

    Negative ages happen when the clock jumps back (use_sim_time and a looping bag): an input
    received "in the future" of the clock is as unusable as an old one.
    """
    return -timeout <= age <= timeout


class StampOrder:
    """Header stamps [s] of one input stream (joint states, a target's poses, twists or jogs).

    A stamped message's *delivery offset* is its reception time minus its stamp [s]: how late
    it was delivered plus the offset between the publisher's clock and the controller's. The
    stream keeps the smallest offset of the messages it accepted, its most punctual delivery;
    it is kept across silent gaps (the publisher's clock does not change when it pauses).

    While the last accepted stamped message is fresh (received within ``input_timeout``, see
    :func:`fresh`) a stamp older than its stamp is *out of order*, and a message whose offset
    is smaller than the kept one by more than ``input_timeout`` *leaps ahead* (a stamp in the
    future): both are refused. A message delivered late (a stalled publisher, a burst) has a
    larger offset: neither it nor the punctual ones that follow it are ahead.

    Once the last accepted is no longer fresh, the next message is accepted whatever its stamp
    and re-anchors the stream, offset included: its offset is kept alone when its stamp is
    older than the last accepted one (a restarted publisher, a clock that jumped back) or when
    it is the smaller (a clock that jumped forward); otherwise (a pause) the smaller stays. So
    a run of refusals ends within ``input_timeout`` of the last accepted message: a single bad
    stamp, a restarted publisher or a clock that jumped can never lock a stream out for longer.

    A stream's first message (or the first on a new clock) is its *anchor alone*: it may itself
    have come late (a first publish, a publisher descheduled right after stamping it), and the
    punctual message after it would then look ahead by that lateness. So while the offset rests
    on the anchor alone, the next message is measured against the anchor's offset or zero,
    whichever is the smaller: it leaps ahead only when its stamp is ahead of both the anchor's
    delivery and its own reception time by more than ``input_timeout``. The packed offset is
    inf meanwhile (:attr:`offset` gives the anchor's own). The state depends on the accepted
    messages only (a journal of them replays it). Unstamped messages (``None``) are not
    compared.

    The state is packed in a (3,) float64 array (``state``, a view of its owner's packed state
    when one is given): the compiled acceptance of the usual inputs reads and writes it
    (:mod:`._input_kernels`).

    Args:
        state: (3,) where the state is kept (its values are reset); None: an array of its own.

    Attributes:
        source: header stamp [s] of the last accepted stamped message (None: none yet).
        received: its reception time [s] (-inf: never).
        offset: the smallest delivery offset [s] of the stamped messages accepted since the
            stream last re-anchored on an older stamp (inf: none).
        state: (3,) the packed source (NaN: none), received and offset (inf: none, or the
            anchor alone).
    """

    __slots__ = ("state",)

    def __init__(self, state: Array | None = None) -> None:
        self.state = np.empty(3) if state is None else state
        self.state[:] = (math.nan, -math.inf, math.inf)

    @property
    def source(self) -> float | None:
        """Header stamp [s] of the last accepted stamped message (None: none yet)."""
        v = self.state.item(0)
        return None if v != v else v

    @source.setter
    def source(self, value: float | None) -> None:
        self.state[0] = math.nan if value is None else value

    @property
    def received(self) -> float:
        """Its reception time [s] (-inf: never)."""
        return self.state.item(1)

    @received.setter
    def received(self, value: float) -> None:
        self.state[1] = value

    @property
    def offset(self) -> float:
        """The smallest delivery offset [s] since the stream last re-anchored (inf: none)."""
        kept, source = self.state.item(2), self.state.item(0)
        if kept == math.inf and source == source:  # the anchor alone: its own
            return self.state.item(1) - source
        return kept

    def state_into(self, out: Array) -> None:
        """Write the (3,) SNAPSHOT values: the packed state (:attr:`state`)."""
        out[:3] = self.state

    def state_from(self, v: Array) -> None:
        """Set the state from its (3,) SNAPSHOT values (the inverse of :meth:`state_into`)."""
        self.state[:] = v[:3]

    def take(self, other: StampOrder) -> None:
        """Go on from ``other``'s state (the same stream, kept by a new owner)."""
        self.state[:] = other.state

    def check(self, source: float | None, received: float, timeout: float) -> str:
        """Why a message stamped ``source`` [s] received at ``received`` [s] is refused.

        Args:
            source: the message's header stamp [s], or None (unstamped: not compared).
            received: its reception time [s] on the controller's clock.
            timeout: ``input_timeout`` [s].

        Returns:
            The reason ('' when the message is in order).
        """
        if source is None:
            return ""
        if not math.isfinite(source):
            return f"stamp {source!r} is not finite"
        if self.source is None or not fresh(received - self.received, timeout):
            return ""  # nothing recent to compare with: re-anchor
        if source < self.source:
            return (
                f"stamp {source:.6f} s is older than the last accepted {self.source:.6f} s "
                "(out of order)"
            )
        kept = self.state.item(2)
        if kept == math.inf:  # the anchor alone: it may have come late
            kept = min(self.received - self.source, 0.0)
        lead = kept - (received - source)
        if lead > timeout:
            return (
                f"stamp {source:.6f} s is {lead:.3f} s further ahead of its reception time than "
                f"the stream's most punctual delivery (a stamp in the future; input_timeout "
                f"{timeout} s)"
            )
        return ""

    def accept(self, source: float | None, received: float) -> None:
        """Record an accepted message (unstamped ones leave the stream's state as it is).

        Args:
            source: its header stamp [s], or None.
            received: its reception time [s].
        """
        if source is None:
            return
        offset = float(received) - float(source)
        kept = self.state.item(2)
        if self.source is None or source < self.source:
            self.state[2] = math.inf  # another clock: its anchor alone
        elif kept == math.inf:  # the anchor's own delivery, then this one's
            self.state[2] = min(self.received - self.source, offset)
        elif offset < kept:
            self.state[2] = offset
        self.source = float(source)
        self.received = float(received)


def as_array(value: ArrayLike, what: str, reject: Any, *args: object) -> Array:
    """``value`` as a flat float array; ``reject(reason)`` -> the InputError to raise.

    A flat float64 array is taken as it is (the messages' arrays are: no conversion per input).
    ``what % args`` (``what`` without ``args``) names the value in the reason (formatted
    only then).
    """
    if type(value) is np.ndarray and value.ndim == 1 and value.dtype is F8:
        return value
    try:
        return np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise reject(f"{what % args if args else what} must be numbers: {exc}") from None


def usable(v: Array) -> bool:
    """All values finite and at most :data:`HUGE` in magnitude (NaN fails the comparison)."""
    return bool(all_finite(v, HUGE))  # compiled: no numpy dispatch per check


class TargetStream:
    """One constraint's target input: its last pose, twist estimate and explicit twist.

    Times named ``stamp`` are reception times [s] on the controller's clock; header stamps
    are kept by the :class:`StampOrder` of each stream (``order``, ``twist_order``).

    Args:
        state: (:data:`~._packed.TARGET_SIZE`,) where its packed state is kept (a row
            of its owner's streams' states, for a compiled call over them all); None: an
            array of its own.
        arrays: (:data:`~._packed.TA_SIZE`,) where its pose, its reference's pose and its
            applied twist are kept (views of it: a row of its owner's streams' arrays, which
            a tick's record reads); None: an array of its own.
    """

    def __init__(self, state: Array | None = None, arrays: Array | None = None) -> None:
        # packed: the last pose's reception time [s] and header stamp [s] (NaN: unstamped),
        # has a pose, jumps counted, the poses' stamp order, the twists' and jogs' reception
        # times, a jog's validity, the tick's freshness flags (:mod:`._packed`' layout)
        self.s = np.zeros(TARGET_SIZE) if state is None else state
        self.s[:] = 0.0
        # views of the arrays a tick's record reads (updated in place, never replaced)
        a = np.zeros(TA_SIZE) if arrays is None else arrays
        a[:] = 0.0
        self.pose = a[TA_POSE : TA_POSE + 16].reshape(4, 4)  # the stream's frame: the root's,
        self.pose[:] = np.eye(4)  # or the world's (world)
        self.stamp = -math.inf  # [s] reception time of the last pose
        self.header = math.nan  # [s] its header stamp (NaN: unstamped)
        self.order = StampOrder(self.s[T_ORDER : T_ORDER + 3])  # header stamps of the poses
        self.has_pose = False
        self.estimate = np.zeros(6)  # (6,) filtered root-frame twist from successive poses
        self.raw = np.zeros(6)  # (6,) work array: the unfiltered finite-difference twist
        self.rel = np.zeros((3, 3))  # (3, 3) work array: rotation from the last pose
        self.new_pose = np.eye(4)  # (4, 4) work array: the pose of the message being taken
        self.aimed = np.eye(4)  # (4, 4) the pose moved on to when the command acts (root)
        # (1,) 1 while the constraint's target is ``aimed``, not ``pose`` (a compiled tick aims)
        self.aim_flag = np.zeros(1)
        self.twist = np.zeros(6)  # (6,) last explicit twist (root frame)
        self.twist_stamp = -math.inf  # [s] its reception time
        self.twist_order = StampOrder()  # header stamps of the twists
        self.twist_clock = np.full(1, -math.inf)  # (1,) where twist_time is kept
        self.accel = np.zeros(6)  # (6,) the explicit twists' filtered change rate [/s]
        self.aimed_twist = np.zeros(6)  # (6,) work array: the twist when the command acts
        self.given_twist = np.zeros(6)  # (6,) the twist the constraint had at the last solve
        self.applied = a[TA_APPLIED : TA_APPLIED + 6]  # (6,) what was given to the constraint
        self.world = False  # the poses are in the world frame (world_frame), not the root's
        self.world_target = np.eye(4)  # (4, 4) the target demanded, in the world (world)
        self.world_twist = np.zeros(6)  # (6,) its twist, world axes [m/s, rad/s]
        self.placed = np.eye(4)  # (4, 4) work array: the world target seen from the base
        self.placed_twist = np.zeros(6)  # (6,) work array: its twist in the base's axes
        self.reach = math.inf  # [m] targets farther from the root are refused
        self.jumps = 0  # poses that implied a target faster than the speed limits
        self.capped = 0  # explicit twists scaled down to the speed limits
        self.source = 0  # where the last tick's twist came from (journal.TwistSource)
        # a step approached along a straight line, or a jog (its active flag in the row)
        self.ref = CartesianReference(
            self.s[T_REF_ACTIVE : T_REF_ACTIVE + 1], a[TA_REF_POSE : TA_REF_POSE + 16]
        )
        self.jog = np.zeros(6)  # (6,) last jog twist (root frame) [m/s, rad/s]
        self.jog_stamp = -math.inf  # [s] its reception time
        self.jog_order = StampOrder()  # header stamps of the jog twists
        self.jog_period = 0.0  # [s] the jog stream's average period
        self.jog_budget = 0.0  # [s] motion the received jog twists still pay for
        self.jog_start = -math.inf  # [s] reception time of the jog stream's first twist
        self.jog_count = 0  # twists of the jog stream so far
        self.jog_late = 0  # jog twists received after the jog had stopped, stamped in time

    @property
    def aiming(self) -> bool:
        """The constraint's target is :attr:`aimed` (aimed ahead), not :attr:`pose`."""
        return self.aim_flag.item(0) != 0.0

    @aiming.setter
    def aiming(self, value: bool) -> None:
        self.aim_flag[0] = 1.0 if value else 0.0

    @property
    def twist_time(self) -> float:
        """[s] the last explicit twist's header stamp (else its reception; -inf: none).

        Kept in :attr:`twist_clock` (1,), which a compiled tick reads.
        """
        return self.twist_clock.item(0)

    @twist_time.setter
    def twist_time(self, value: float) -> None:
        self.twist_clock[0] = value

    @property
    def stamp(self) -> float:
        """[s] reception time of the last pose (-inf: none)."""
        return self.s.item(T_STAMP)

    @stamp.setter
    def stamp(self, value: float) -> None:
        self.s[T_STAMP] = value

    @property
    def header(self) -> float:
        """[s] the last pose's header stamp (NaN: unstamped)."""
        return self.s.item(T_HEADER)

    @header.setter
    def header(self, value: float) -> None:
        self.s[T_HEADER] = value

    @property
    def has_pose(self) -> bool:
        """A pose was accepted."""
        return self.s.item(T_HAS_POSE) != 0.0

    @has_pose.setter
    def has_pose(self, value: bool) -> None:
        self.s[T_HAS_POSE] = 1.0 if value else 0.0

    @property
    def twist_stamp(self) -> float:
        """[s] reception time of the last explicit twist (-inf: none)."""
        return self.s.item(T_TWIST_STAMP)

    @twist_stamp.setter
    def twist_stamp(self, value: float) -> None:
        self.s[T_TWIST_STAMP] = value

    @property
    def jog_stamp(self) -> float:
        """[s] reception time of the last jog twist (-inf: none)."""
        return self.s.item(T_JOG_STAMP)

    @jog_stamp.setter
    def jog_stamp(self, value: float) -> None:
        self.s[T_JOG_STAMP] = value

    @property
    def jog_valid(self) -> float:
        """[s] a jog twist counts this long (two periods of its stream)."""
        return self.s.item(T_JOG_VALID)

    @jog_valid.setter
    def jog_valid(self, value: float) -> None:
        self.s[T_JOG_VALID] = value

    @property
    def pose_fresh(self) -> bool:
        """A pose was received within ``input_timeout`` of the last tick (the tick's look)."""
        return self.s.item(T_POSE_FRESH) != 0.0

    @property
    def twist_fresh(self) -> bool:
        """An explicit twist was received within ``input_timeout`` of the last tick."""
        return self.s.item(T_TWIST_FRESH) != 0.0

    @property
    def jog_fresh(self) -> bool:
        """A jog twist was received within :attr:`jog_valid` of the last tick."""
        return self.s.item(T_JOG_FRESH) != 0.0

    @property
    def source(self) -> int:
        """Where the last tick's twist came from (:class:`.journal.TwistSource`)."""
        return int(self.s.item(T_SOURCE))

    @source.setter
    def source(self, value: int) -> None:
        self.s[T_SOURCE] = value

    @property
    def jumps(self) -> int:
        """Poses that implied a target faster than the speed limits."""
        return int(self.s.item(T_JUMPS))

    @jumps.setter
    def jumps(self, value: int) -> None:
        self.s[T_JUMPS] = value


__all__ = ["F8", "HUGE", "StampOrder", "TargetStream", "as_array", "fresh", "usable"]
