"""The tick's compiled look: its time, its inputs' freshness and the prediction, as documented.

``look`` (``_tick_kernels``) replaced a handful of Python calls; these tests state the rules it
keeps: the time since the last tick (the period at the first tick and when the clock did not
move on, at most ``input_timeout``), freshness as ``|age| <= input_timeout`` (a state received
"in the future" of a clock that jumped back is not fresh, nor a missing odometry), then the
same prediction and lead as :class:`StatePrediction`'s own calls, on a controller's clock
through jumps, gaps and late states.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from itasc_ros.core.control._packed import JS_INTERVAL, JS_SIZE, JS_STAMP, TARGET_SIZE
from itasc_ros.core.control._tick_kernels import (
    CLOCK_SIZE,
    ELAPSED,
    JOINT_AGE,
    JOINTS_FRESH,
    LAST_STEP,
    ODOM_FRESH,
    look,
)
from itasc_ros.core.control.prediction import StatePrediction
from itasc_ros.core.control.streams import TargetStream

PERIOD, TIMEOUT = 0.002, 0.1  # [s]


def fresh_clock() -> np.ndarray:
    clock = np.zeros(CLOCK_SIZE)
    clock[LAST_STEP], clock[ELAPSED], clock[JOINT_AGE] = -math.inf, PERIOD, math.inf
    return clock


def joints(stamp: float, interval: float = PERIOD) -> np.ndarray:
    s = np.zeros(JS_SIZE)
    s[JS_STAMP], s[JS_INTERVAL] = stamp, interval
    return s


def run(clock: np.ndarray, now: float, js: np.ndarray, odom: float = -math.inf) -> None:
    """``look`` with a zero prediction of two joints (its clock's part only)."""
    pred = StatePrediction(2, PERIOD)
    look(
        clock, now, PERIOD, TIMEOUT, js, odom, np.zeros((0, TARGET_SIZE)), np.zeros(2),
        np.full(2, js[JS_STAMP]), pred.state, pred.values, 0.0, PERIOD,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("last", "now", "elapsed"),
    [
        (-math.inf, 10.0, PERIOD),  # the first tick
        (10.0, 10.003, 0.003),  # a late tick: its own time
        (10.0, 10.5, TIMEOUT),  # after a pause: at most input_timeout
        (10.0, 10.0, PERIOD),  # the clock did not move on
        (10.0, 9.0, PERIOD),  # the clock jumped back
    ],
)
def test_the_time_since_the_last_tick(last: float, now: float, elapsed: float) -> None:
    clock = fresh_clock()
    clock[LAST_STEP] = last
    run(clock, now, joints(now))
    assert clock[ELAPSED] == pytest.approx(elapsed, abs=1e-12)
    assert clock[LAST_STEP] == now


@pytest.mark.parametrize(
    ("received", "fresh"),
    [
        (10.0, True),
        (10.0 - TIMEOUT, True),  # exactly input_timeout old: still fresh
        (10.0 - TIMEOUT - 1e-6, False),
        (10.0 + TIMEOUT, True),  # received a little "after now": within the bound
        (10.0 + 5.0, False),  # the clock jumped back: "in the future" is not fresh
        (-math.inf, False),  # never received
    ],
)
def test_freshness_is_an_age_within_input_timeout(received: float, fresh: bool) -> None:
    clock = fresh_clock()
    run(clock, 10.0, joints(received), odom=received)
    assert clock[JOINT_AGE] == 10.0 - received
    assert clock[JOINTS_FRESH] == float(fresh)
    assert clock[ODOM_FRESH] == float(fresh)


@pytest.mark.parametrize("lag", [0.0, 0.02])
def test_the_prediction_and_lead_are_the_predictions_own(lag: float) -> None:
    """Ticks at 500 Hz whose joint states stop, restart late, and arrive in bursts: the
    compiled look moves the prediction exactly as ``StatePrediction.advance`` then ``lead``."""
    rng = np.random.default_rng(3)
    n = 3
    ours, theirs = StatePrediction(n, PERIOD), StatePrediction(n, PERIOD)
    clock, last_tick = fresh_clock(), -math.inf
    measured, stamps = np.zeros(n), np.full(n, -math.inf)
    js = joints(-math.inf, 0.0)
    now, late = 50.0, 0
    for k in range(400):
        now += PERIOD * rng.uniform(0.5, 1.6)
        if not 100 <= k < 140 and rng.uniform() < 0.8:  # a gap, then states now and then
            measured = measured + rng.normal(0.0, 0.01, n)
            stamps[:] = now - rng.uniform(0.0, 0.004)
            js[JS_STAMP], js[JS_INTERVAL] = stamps[0], PERIOD
        look(
            clock, now, PERIOD, TIMEOUT, js, -math.inf, np.zeros((0, TARGET_SIZE)), measured,
            stamps, ours.state, ours.values, lag, PERIOD,
        )  # fmt: skip
        elapsed = now - last_tick if math.isfinite(last_tick) else PERIOD
        last_tick = now
        theirs.advance(measured, stamps, now, PERIOD if math.isfinite(stamps[0]) else 0.0)
        theirs.lead(lag, min(elapsed, TIMEOUT))
        command = rng.normal(0.0, 0.5, n)
        ours.publish(command)
        theirs.publish(command)
        assert ours.state.tobytes() == theirs.state.tobytes(), k
        assert ours.values.tobytes() == theirs.values.tobytes(), k
        late += ours.late > 0.0
    assert late > 30  # the gap's ticks predicted (and the late states among the others)


@pytest.mark.parametrize("age", [0.0, 0.05, TIMEOUT, TIMEOUT + 1e-6, -0.05, -1.0, math.inf])
def test_each_target_streams_freshness(age: float) -> None:
    """Three streams judged in one call: a pose and an explicit twist are fresh within
    ``input_timeout``, a jog twist within its own validity; a stream without a pose has no
    fresh pose, whatever its stamp."""
    states = np.zeros((3, TARGET_SIZE))
    streams = [TargetStream(states[i]) for i in range(3)]
    now = 10.0
    for i, st in enumerate(streams):
        st.stamp = st.twist_stamp = st.jog_stamp = now - age
        st.has_pose = i != 2
        st.jog_valid = 0.02 * (i + 1)
    run_streams = fresh_clock()
    pred = StatePrediction(1, PERIOD)
    look(
        run_streams, now, PERIOD, TIMEOUT, joints(now), -math.inf, states, np.zeros(1),
        np.full(1, now), pred.state, pred.values, 0.0, PERIOD,
    )  # fmt: skip
    within = abs(age) <= TIMEOUT
    for i, st in enumerate(streams):
        assert st.pose_fresh == (within and i != 2)
        assert st.twist_fresh == within
        assert st.jog_fresh == (abs(age) <= st.jog_valid)
