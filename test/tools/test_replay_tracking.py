"""The tracking comparison of ``itasc-replay --compare``: the same moments, the same inputs.

Two runs are played back as tick columns: the error at a tick is a function of the joint state
and of the target the tick used (as the node's is), so a run that took its inputs late has other
errors at the same moments without tracking any worse. Those ticks are left out and counted; a
run that tracks another way at the same inputs is still told apart.
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from itasc_ros.tools.replay.tracking import TrackingComparison, tracking_pair

STATE_PERIOD = 0.004  # [s] joint states at 250 Hz
TARGET_PERIOD = 0.02  # [s] targets at 50 Hz
TICK = 0.004  # [s] the node's ticks at 250 Hz


def _error(state: float, target: float) -> float:
    """A tick's position error [m] from the stamps [s] of its inputs: the hand follows a moving
    target 50 ms behind (0.1 m/s)."""
    return abs(0.1 * target - 0.1 * (state - 0.05)) + 0.002


def _run(
    *,
    shift: float = 0.0,
    phase: float = 0.0,
    state_late: float = 0.0,
    stamped: bool = True,
    worse: float = 0.0,
    seconds: float = 4.0,
) -> Any:
    """A run's ticks: inputs stamped on a common timeline, shifted by ``shift`` [s].

    Args:
        shift: the replay's shift of times and stamps [s].
        phase: the ticks' phase against the inputs [s].
        state_late: how much later than its stamp each joint state reached the node [s].
        stamped: the inputs carry header stamps (else NaN).
        worse: added to every error [m] (a node tracking another link).
        seconds: the run's length [s].
    """
    ticks = []
    for i in range(int(seconds / TICK)):
        t = 0.1 + phase + i * TICK
        state = math.floor((t - 0.001 - state_late) / STATE_PERIOD) * STATE_PERIOD
        target = math.floor((t - 0.001) / TARGET_PERIOD) * TARGET_PERIOD
        stamps = (state + shift, target + shift) if stamped else (math.nan, math.nan)
        ticks.append(
            SimpleNamespace(
                t=t + shift,
                kind="tick",
                status="active",
                replayed_status="active",
                position_error=_error(state, target) + worse,
                state_stamp=stamps[0],
                target_stamp=stamps[1],
            )
        )
    return SimpleNamespace(ticks=ticks)


def _compare(recorded: Any, replayed: Any, offset: float, tol_mm: float = 2.0) -> Any:
    pair = tracking_pair(recorded, replayed, offset)
    active = len(recorded.ticks)
    return pair, TrackingComparison(
        pair.recorded, pair.replayed, tol_mm, recorded_active=active, out_of_step=pair.out_of_step
    )


def test_a_replay_that_kept_the_timing_compares_every_tick() -> None:
    """Shifted by 100 s and ticking 1 ms later: the same inputs at each moment, the same error."""
    pair, cmp = _compare(_run(), _run(shift=100.0, phase=0.001), 100.0)
    assert pair.out_of_step == 0
    assert pair.recorded["ticks"] == pair.replayed["ticks"] > 900
    assert cmp.ok and cmp.diff_mm < 0.05, cmp.to_dict()


def test_joint_states_taken_late_are_left_out_not_compared() -> None:
    """The online node got each joint state 0.3 s late (a replay behind on a loaded machine):
    at those ticks it paired old joint states with new targets, tens of mm off. Compared, the
    runs would differ by more than the tolerance; the ticks are counted out of step instead."""
    recorded, late = _run(), _run(shift=100.0, state_late=0.3)
    # unstamped, every tick is compared at the same moment: the runs look 20 mm apart
    naive = tracking_pair(
        _run(stamped=False), _run(shift=100.0, state_late=0.3, stamped=False), 100.0
    )
    assert abs(naive.replayed["rms_mm"] - naive.recorded["rms_mm"]) > 20.0, naive
    pair, cmp = _compare(recorded, late, 100.0)
    assert pair.out_of_step > 900 and pair.recorded["ticks"] == 0, pair
    assert not cmp.ok, "no tick with the same inputs: the replay did not show them alike"
    assert "left out" in cmp.text() and cmp.to_dict()["out_of_step_ticks"] == pair.out_of_step


def test_a_run_late_for_a_while_is_compared_where_it_kept_the_timing() -> None:
    """Late for one second of four: that second left out, the rest compared, alike."""
    recorded = _run()
    on_time, late = _run(shift=100.0), _run(shift=100.0, state_late=0.25)
    pairs = zip(on_time.ticks, late.ticks, strict=True)
    replayed = SimpleNamespace(ticks=[b if 101.5 <= b.t < 102.5 else a for a, b in pairs])
    pair, cmp = _compare(recorded, replayed, 100.0)
    assert 200 <= pair.out_of_step <= 260, pair
    assert pair.recorded["ticks"] + pair.out_of_step == len(recorded.ticks)
    assert cmp.ok and cmp.diff_mm < 0.05, cmp.to_dict()


def test_another_way_of_tracking_at_the_same_inputs_is_told_apart() -> None:
    """A node tracking 50 mm off at the very same inputs fails; none of it is out of step."""
    pair, cmp = _compare(_run(), _run(shift=100.0, worse=0.05), 100.0, tol_mm=10.0)
    assert pair.out_of_step == 0
    assert not cmp.ok and cmp.diff_mm == pytest.approx(50.0, abs=1.0)


def test_inputs_without_stamps_are_compared_by_the_moment_alone() -> None:
    """Without header stamps nothing tells the inputs apart: every tick is compared."""
    pair, _ = _compare(_run(stamped=False), _run(stamped=False, shift=100.0), 100.0)
    assert pair.out_of_step == 0 and pair.recorded["ticks"] > 900


def test_no_active_tick_in_common_is_nothing_to_compare() -> None:
    """A replay never active beside the recording's inactive run: nothing to compare, ok."""
    recorded = _run()
    for tick in recorded.ticks:
        tick.status = "stale"
    pair, cmp = _compare(recorded, _run(shift=100.0), 100.0)
    cmp.recorded_active = 0
    assert pair.recorded["ticks"] == 0 and pair.out_of_step == 0 and cmp.ok
    assert np.isnan(cmp.diff_mm)
