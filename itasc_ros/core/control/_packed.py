"""The layouts of the inputs' packed states, which their objects and the compiled calls share.

Internal. Packed states (float64 arrays the input objects own; their attributes read them):

- a stamp order (:class:`~itasc_ros.core.control.streams.StampOrder`), 3 values from
  ``at``: the last accepted header stamp [s] (NaN: none), its reception time [s], the
  smallest delivery offset [s] (inf: none, or the anchor alone);
- a joint-state input (:data:`JS_SIZE`): has a state (1.0/0.0), reception time [s], header
  stamp [s] (NaN: unstamped), the states' usual interval [s], its stamp order;
- a target stream (:data:`TARGET_SIZE`): reception time [s], header stamp [s] (NaN:
  unstamped), has a pose (1.0/0.0), jumps counted, its stamp order; the last explicit
  twist's and jog twist's reception times [s] and how long a jog twist counts [s]; whether
  its pose, its twist and its jog were fresh at the last tick (1.0/0.0, the tick's look);
  the source of its last tick's twist and whether its reference is active;
- a target stream's arrays (:data:`TA_SIZE`), those a tick's record reads: its pose (4 x 4,
  row-major, in its frame), its reference's pose (4 x 4, row-major) and the twist it gave
  its constraint at the last tick (6,) [m/s, rad/s].
"""

from __future__ import annotations

#: A packed stamp order's values from its offset: source, received, offset.
ORDER_SOURCE, ORDER_RECEIVED, ORDER_OFFSET = 0, 1, 2
ORDER_SIZE = 3

#: A joint-state input's packed state.
JS_HAS_STATE, JS_STAMP, JS_HEADER, JS_INTERVAL, JS_ORDER = 0, 1, 2, 3, 4
JS_SIZE = JS_ORDER + ORDER_SIZE

#: A target stream's packed state: its poses', then its explicit twists' and jog twists'
#: reception times and how long a jog twist counts, then the tick's look at them.
T_STAMP, T_HEADER, T_HAS_POSE, T_JUMPS, T_ORDER = 0, 1, 2, 3, 4
T_TWIST_STAMP, T_JOG_STAMP, T_JOG_VALID = 7, 8, 9
T_POSE_FRESH, T_TWIST_FRESH, T_JOG_FRESH = 10, 11, 12
#: ... then where its twist came from at the last tick (:class:`.journal.TwistSource`) and
#: whether its straight-line reference is active (1.0/0.0).
T_SOURCE, T_REF_ACTIVE = 13, 14
TARGET_SIZE = 15

#: A target stream's arrays: its pose, its reference's pose, the twist it gave.
TA_POSE, TA_REF_POSE, TA_APPLIED = 0, 16, 32
TA_SIZE = 38


__all__ = [
    "JS_HAS_STATE",
    "JS_HEADER",
    "JS_INTERVAL",
    "JS_ORDER",
    "JS_SIZE",
    "JS_STAMP",
    "ORDER_OFFSET",
    "ORDER_RECEIVED",
    "ORDER_SIZE",
    "ORDER_SOURCE",
    "TARGET_SIZE",
    "TA_APPLIED",
    "TA_POSE",
    "TA_REF_POSE",
    "TA_SIZE",
    "T_HAS_POSE",
    "T_HEADER",
    "T_JOG_FRESH",
    "T_JOG_STAMP",
    "T_JOG_VALID",
    "T_JUMPS",
    "T_ORDER",
    "T_POSE_FRESH",
    "T_REF_ACTIVE",
    "T_SOURCE",
    "T_STAMP",
    "T_TWIST_FRESH",
    "T_TWIST_STAMP",
]
