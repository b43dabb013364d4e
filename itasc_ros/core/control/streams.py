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

from .cartesian_reference import CartesianReference

Array = NDArray[np.float64]

HUGE = 1e150
"""Input values larger than this [rad, m, m/s, rad/s] are rejected as garbage (the limit
:meth:`KinematicTree.compute` applies to q)."""


def fresh(age: float, timeout: float) -> bool:
    """True when an input received ``age`` [s] ago is recent: ``|age| <= timeout`` (not NaN).

    Negative ages happen when the clock jumps back (use_sim_time and a looping bag): an input
    received "in the future" of the clock is as unusable as an old one.
    """
    return -timeout <= age <= timeout


class StampOrder:
    """Header stamps [s] of one input stream (joint states, a target's poses or twists).

    A stamped message is compared with the last accepted stamped message of its stream while
    that one is fresh (received within ``input_timeout``, see :func:`_fresh`): an older stamp is
    *out of order*; a stamp further ahead than the reception times allow, plus
    ``input_timeout`` of jitter, *leaps ahead* (a stamp in the future). Both are rejected. Once
    the last stamped message is no longer fresh the stream re-anchors on the next one, so a
    single bad stamp, a restarted publisher or a clock that jumped can never lock a stream out
    for longer than ``input_timeout``. Unstamped messages (stamp zero) are not compared.
    """

    def __init__(self) -> None:
        self.source: float | None = None  # [s] header stamp of the last accepted message
        self.received = -math.inf  # [s] its reception time

    def check(self, source: float | None, received: float, timeout: float) -> str:
        """'' when a message stamped ``source`` [s] received at ``received`` [s] is in order."""
        if source is None:
            return ""
        if not math.isfinite(source):
            return f"stamp {source!r} is not finite"
        elapsed = received - self.received
        if self.source is None or not fresh(elapsed, timeout):
            return ""  # nothing recent to compare with: re-anchor
        if source < self.source:
            return (
                f"stamp {source:.6f} s is older than the last accepted {self.source:.6f} s "
                "(out of order)"
            )
        lead = source - self.source - max(elapsed, 0.0)
        if lead > timeout:
            return (
                f"stamp {source:.6f} s is {lead:.3f} s further ahead of the last accepted "
                f"{self.source:.6f} s than the time between them (a stamp in the future; "
                f"input_timeout {timeout} s)"
            )
        return ""

    def accept(self, source: float | None, received: float) -> None:
        """Record an accepted message (unstamped ones leave the anchor as it is)."""
        if source is not None:
            self.source = float(source)
            self.received = float(received)


def as_array(value: ArrayLike, what: str, reject: Any) -> Array:
    """``value`` as a flat float array; ``reject(reason)`` -> the InputError to raise."""
    try:
        return np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise reject(f"{what} must be numbers: {exc}") from None


def usable(v: Array) -> bool:
    """All values finite and at most :data:`HUGE` in magnitude (NaN fails the comparison)."""
    return bool((np.abs(v) <= HUGE).all())  # the method: no np.all dispatch in the tick


class TargetStream:
    """One constraint's target input: its last pose, twist estimate and explicit twist.

    Times named ``stamp`` are reception times [s] on the controller's clock; header stamps
    are kept by the :class:`StampOrder` of each stream (``order``, ``twist_order``).
    """

    def __init__(self) -> None:
        self.pose = np.eye(4)  # (4, 4) root frame
        self.stamp = -math.inf  # [s] reception time of the last pose
        self.header = math.nan  # [s] its header stamp (NaN: unstamped)
        self.order = StampOrder()  # header stamps of the poses
        self.has_pose = False
        self.estimate = np.zeros(6)  # (6,) filtered root-frame twist from successive poses
        self.raw = np.zeros(6)  # (6,) work array: the unfiltered finite-difference twist
        self.rel = np.zeros((3, 3))  # (3, 3) work array: rotation from the last pose
        self.new_pose = np.eye(4)  # (4, 4) work array: the pose of the message being taken
        self.twist = np.zeros(6)  # (6,) last explicit twist (root frame)
        self.twist_stamp = -math.inf  # [s]
        self.twist_order = StampOrder()  # header stamps of the twists
        self.applied = np.zeros(6)  # (6,) what was given to the constraint last step
        self.reach = math.inf  # [m] targets farther from the root are refused
        self.jumps = 0  # poses that implied a target faster than the speed limits
        self.capped = 0  # explicit twists scaled down to the speed limits
        self.source = 0  # where the last tick's twist came from (journal.TwistSource)
        self.ref = CartesianReference()  # a step approached along a straight line, or a jog
        self.jog = np.zeros(6)  # (6,) last jog twist (root frame) [m/s, rad/s]
        self.jog_stamp = -math.inf  # [s] its reception time
        self.jog_order = StampOrder()  # header stamps of the jog twists
        self.jog_valid = 0.0  # [s] a jog twist counts this long (two periods of its stream)
        self.jog_period = 0.0  # [s] the jog stream's average period
        self.jog_budget = 0.0  # [s] motion the received jog twists still pay for
        self.jog_start = -math.inf  # [s] reception time of the jog stream's first twist
        self.jog_count = 0  # twists of the jog stream so far
        self.jog_late = 0  # jog twists received after the jog had stopped, stamped in time


__all__ = ["HUGE", "StampOrder", "TargetStream", "as_array", "fresh", "usable"]
