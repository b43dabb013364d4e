"""Compiled look of a control tick at its inputs: its time, their freshness, the prediction.

Internal: the public API is :meth:`itasc_ros.core.control.Controller.step`. A tick starts by
measuring the time since the last one, judging which inputs are fresh and advancing the joint
positions it solves at (:class:`~itasc_ros.core.control.prediction.StatePrediction`): taken as
a handful of Python calls, each paid its dispatch and its attribute reads, more than the work.
:func:`look` does them in one call over the controller's packed clock (:data:`CLOCK_SIZE`
values), the joint-state input's packed state and the prediction's.

The clock's values: the time of the last tick [s] (-inf before the first), the time since it
[s] (at most ``input_timeout``; the period at the first tick or when the clock did not move
on), the joint state's age [s], whether the joint state and the odometry are fresh (1.0/0.0).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ._packed import (
    JS_INTERVAL,
    JS_STAMP,
    T_HAS_POSE,
    T_JOG_FRESH,
    T_JOG_STAMP,
    T_JOG_VALID,
    T_POSE_FRESH,
    T_STAMP,
    T_TWIST_FRESH,
    T_TWIST_STAMP,
)
from .prediction import head_for, predict

Array = NDArray[np.float64]

#: The controller's packed clock.
LAST_STEP, ELAPSED, JOINT_AGE, JOINTS_FRESH, ODOM_FRESH = range(5)
CLOCK_SIZE = 5


@njit(cache=True, nogil=True)
def look(  # pragma: no cover - compiled
    clock, now, period, timeout, joints, odom_stamp, streams, measured, stamps, state, values,
    lag, late,
):  # fmt: skip
    """A tick's look at its inputs at ``now`` [s], then where its joints are.

    The time since the last tick (:data:`ELAPSED`: ``now`` minus the last, the ``period``
    when that is not a positive finite time, at most ``timeout``); the joint state's age and
    freshness, the odometry's freshness (an input is fresh when ``|age| <= timeout``: one
    received "in the future" of ``now``, the clock having jumped back, is not), each target
    stream's (its pose's, its explicit twist's; its jog twist's within its own validity); then
    the
    prediction at ``now`` (:func:`~itasc_ros.core.control.prediction.predict`) and where the
    joints head for behind servos that lag ``lag`` [s] over the time since the last tick
    (:func:`~itasc_ros.core.control.prediction.head_for`).

    Args:
        clock: (:data:`CLOCK_SIZE`,) in/out: the controller's packed clock.
        now: the tick's time [s].
        period: the nominal control period [s].
        timeout: ``input_timeout`` [s].
        joints: the joint-state input's packed state (its reception time and interval).
        odom_stamp: the odometry's reception time [s] (-inf: none).
        streams: (k, :data:`~._packed.TARGET_SIZE`) in/out: the target streams'
            packed states (their freshness flags written).
        measured: (n,) the measured joint positions.
        stamps: (n,) each joint's state's reception time [s].
        state: (6, n) in/out: the prediction's rows.
        values: (3,) in/out: the prediction's scalars.
        lag: ``actuator_lag`` [s].
        late: the prediction's period [s] (a state is late once older than
            :data:`~itasc_ros.core.control.prediction.LATE_AFTER` times it or the states'
            usual interval).
    """
    dt = now - clock[LAST_STEP]
    clock[LAST_STEP] = now
    if not (0.0 < dt < math.inf):
        dt = period
    elapsed = min(dt, timeout)
    clock[ELAPSED] = elapsed
    age = now - joints[JS_STAMP]
    clock[JOINT_AGE] = age
    clock[JOINTS_FRESH] = 1.0 if -timeout <= age <= timeout else 0.0
    odom_age = now - odom_stamp
    clock[ODOM_FRESH] = 1.0 if -timeout <= odom_age <= timeout else 0.0
    for i in range(streams.shape[0]):
        st = streams[i]
        pose_age = now - st[T_STAMP]
        fresh = st[T_HAS_POSE] != 0.0 and -timeout <= pose_age <= timeout
        st[T_POSE_FRESH] = 1.0 if fresh else 0.0
        twist_age = now - st[T_TWIST_STAMP]
        st[T_TWIST_FRESH] = 1.0 if -timeout <= twist_age <= timeout else 0.0
        valid, jog_age = st[T_JOG_VALID], now - st[T_JOG_STAMP]
        st[T_JOG_FRESH] = 1.0 if -valid <= jog_age <= valid else 0.0
    predict(state, values, measured, stamps, now, joints[JS_INTERVAL], late)
    head_for(state, lag, elapsed)


def warm_up(joints: Array, streams: Array, measured: Array, stamps: Array, state: Array) -> None:
    """Compile (or load) :func:`look` now, on copies of its arrays: no tick waits for it.

    ``joints``, ``streams``, ``measured``, ``stamps``, ``state``: a controller's
    (:func:`look`'s).
    """
    look(
        np.zeros(CLOCK_SIZE), 0.0, 0.001, 0.1, joints.copy(), -math.inf, streams.copy(),
        measured.copy(), stamps.copy(), state.copy(), np.zeros(3), 0.0, 0.001,
    )  # fmt: skip


__all__ = [
    "CLOCK_SIZE",
    "ELAPSED",
    "JOINTS_FRESH",
    "JOINT_AGE",
    "LAST_STEP",
    "ODOM_FRESH",
    "look",
    "warm_up",
]
