"""The ROS-free parts of ``itasc-demo``: its phases, targets, verdict and JSON (no process).

The end-to-end run over DDS is ``test_demo.py``; here each piece is called directly with the
numbers the demo would give it, and its output is checked.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np
import pytest

from itasc_ros.tools.demo.bag_data import BagData
from itasc_ros.tools.demo.health import (
    FEEDFORWARD_ERROR_LIMIT,
    CommandTicks,
    JointStateTimes,
    health_notes,
    limit_flags,
    phase_flags,
    stale_cause,
    stale_stops,
    verdict_line,
)
from itasc_ros.tools.demo.json_output import finite_or_none, metrics_line
from itasc_ros.tools.demo.metrics import STALL_PERIODS, step_overshoots
from itasc_ros.tools.demo.phases import (
    STEP_HOLD_MIN,
    STEP_OFFSETS,
    TRACKING_MIN,
    UNREACHABLE_MIN,
    WARMUP,
    Phase,
    min_duration,
    plan_phases,
    step_hold,
)
from itasc_ros.tools.demo.target_path import SPEED, UNREACHABLE_DISTANCE, TargetPath


@pytest.mark.parametrize("total", [min_duration(), 20.0, 40.0, 123.4])
def test_the_phases_share_the_duration_and_each_can_settle(total: float) -> None:
    phases = plan_phases(total)
    assert phases[0].name == "warmup" and phases[0].duration == WARMUP
    assert not phases[0].measured and all(p.measured for p in phases[1:])
    assert math.isclose(sum(p.duration for p in phases[1:]), total, rel_tol=1e-12)
    by_name = {p.name: p for p in phases}
    assert step_hold(by_name["steps"]) >= STEP_HOLD_MIN
    assert by_name["unreachable"].duration >= UNREACHABLE_MIN
    assert min(p.duration for p in phases if p.tracking) >= TRACKING_MIN - 1e-9
    assert [p.feedforward for p in phases if p.tracking] == [True, False, True, False]


def test_min_duration_is_what_the_cli_says() -> None:
    assert min_duration() == 18.7  # itasc-demo --duration 12: "at least 18.7 s"
    short = plan_phases(18.6)
    assert min(p.duration for p in short if p.tracking) < TRACKING_MIN


def test_the_targets_of_each_phase() -> None:
    center = np.array([0.3, 0.4, 0.5])
    quat = np.array([0.0, 0.0, 0.0, 1.0])
    path = TargetPath(center, quat, radius=0.1)
    phases = {p.name: p for p in plan_phases(40.0)}
    # the far target: 2 m away horizontally, away from the base
    assert np.allclose(path.far - center, UNREACHABLE_DISTANCE * np.array([0.6, 0.8, 0.0]))
    p, twist = path.sample(phases["unreachable"], 1.0)
    assert np.array_equal(p, path.far) and not twist.any()
    p, twist = path.sample(phases["warmup"], 0.5)
    assert np.array_equal(p, center) and not twist.any()
    steps = phases["steps"]
    for i, offset in enumerate(STEP_OFFSETS):
        tau = (i + 0.5) * step_hold(steps)
        assert path.step_index(steps, tau) == i
        p, twist = path.sample(steps, tau)
        assert np.allclose(p, center + np.array(offset)) and not twist.any()
    assert path.step_index(steps, 10 * steps.duration) == len(STEP_OFFSETS) - 1
    for name in ("circle_ff", "figure8_fb"):  # on the path, moving at (at most) its speed
        p, twist = path.sample(phases[name], 0.7)
        assert np.linalg.norm(p - center) <= 0.1 + 1e-12
        assert 0.0 < np.linalg.norm(twist[:3]) <= SPEED * (1 + 1e-9) and not twist[3:].any()


def _metrics(ff_rms: float, fb_rms: float) -> dict[str, object]:
    return {
        "phases": {
            "circle_ff": {"rms_error_m": ff_rms, "feedforward": True},
            "circle_fb": {"rms_error_m": fb_rms, "feedforward": False},
            "steps": {"settle_times_s": [0.4, None], "step_hold_s": 1.25},
            "unreachable": {
                "final_distance_m": 1.6,
                "target_distance_from_home_m": 2.0,
                "commands_finite": True,
            },
        },
        "control_rate_hz": 250.0,
        "loop_rate_hz": 249.9,
        "joints_within_limits": True,
        "commands_finite": True,
        "max_joint_acceleration_ratio": 1.5,
        "max_joint_acceleration_index": 3,
        "replay_compare": {"ok": True, "mismatches": 0, "compared": 4, "commands": 4},
    }


def test_phase_flags_name_the_figure_and_its_limit() -> None:
    offline = {"circle_fb": {"expected_lag_m": 0.0124}}
    flags = phase_flags(_metrics(0.0002, 0.0125), offline)
    assert flags == ["steps: step 2 of 2 did not settle within its 1.25 s"]
    flags = phase_flags(_metrics(0.004, 0.02), offline)
    limit_mm = f"{1e3 * FEEDFORWARD_ERROR_LIMIT:.3f} mm"
    assert flags[0] == (
        f"circle_ff did not settle: steady-state RMS error 4.000 mm > {limit_mm} "
        "(feed-forward limit)"
    )
    assert flags[1] == (
        "circle_fb did not settle: steady-state RMS error 20.000 mm > 18.600 mm (1.5 x the lag)"
    )


def test_limit_flags_find_the_cause_in_the_journal() -> None:
    phases = plan_phases(40.0)
    t = 100.0
    for p in phases:
        p.start_ns, p.end_ns = int(t * 1e9), int((t + p.duration) * 1e9)
        t += p.duration
    stamps = np.arange(100.0, 102.0, 0.002)
    stamps = stamps[(stamps < 101.0) | (stamps > 101.3)]  # the simulated robot paused 0.3 s
    js = JointStateTimes(stamps, stamps + 0.001)
    ticks = CommandTicks(np.array([101.30, 101.34, 101.38, 101.42]), ["active"] + ["stale"] * 3)
    flags = limit_flags(_metrics(0.0, 0.0), ticks, phases, js, input_timeout=0.1)
    assert flags[0].startswith("max joint acceleration 150 % of its limit: the stale-input zero")
    assert "at t=1.42 s (circle_ff): the simulated robot" in flags[0]  # the command reaching it
    assert re.search(r"published no joint state for 30\d ms", flags[0]), flags[0]
    assert flags[1].startswith("1 stale-input stop(s) at 1.34 s: ")  # one stop, its 3 commands
    assert len(flags) == 2
    late = JointStateTimes(np.arange(100.0, 101.0, 0.002), np.arange(100.0, 101.0, 0.002))
    late.received[late.received > 100.5] += 0.2  # delivery held up, stamps continuous
    assert stale_cause(100.8, late, 0.1).startswith("joint states arrived 202 ms apart")
    # the recorder heard every state on time; the node's newest is 150 ms old: its alone
    steady = JointStateTimes(np.arange(100.0, 101.0, 0.004), np.arange(100.0, 101.0, 0.004) + 1e-3)
    why = stale_cause(100.8, steady, 0.1, node_stamp=100.65)
    assert why.startswith("the node's newest joint state was stamped 150 ms before"), why
    assert "recorder had received 12 newer ones from 147 ms before" in why, why
    assert stale_cause(100.8, steady, 0.1) == "joint states older than input_timeout 100 ms"
    assert verdict_line("itasc-demo", []) == "itasc-demo: verdict: healthy"
    assert verdict_line("itasc-demo", ["a", "b"]) == "itasc-demo: verdict: NOT healthy: a; b"


def test_metrics_json_has_no_nan() -> None:
    metrics = {"a": math.nan, "b": [1.0, math.inf], "c": np.float64(2.5), "d": np.arange(2)}
    assert finite_or_none(metrics)["a"] is None
    assert json.loads(metrics_line(metrics)) == {
        "a": None,
        "b": [1.0, None],
        "c": 2.5,
        "d": [0, 1],
    }


def test_a_stop_is_a_run_of_stale_commands() -> None:
    """Under motion limits a stale stop publishes its ramp: one stop, several commands."""
    status = ["active", "stale", "stale", "stale", "active", "stale", "", "stale", "stale"]
    ticks = CommandTicks(np.arange(len(status)) * 0.004, status)
    assert stale_stops(ticks) == [1, 5, 7]
    assert stale_stops(CommandTicks(np.zeros(2), ["stale", "stale"])) == [0]
    assert stale_stops(None) == []


def _steps_run(cmd_t: np.ndarray) -> tuple[BagData, Phase, TargetPath]:
    """Five 1 s steps, each reached along a line and overshot by 3 % of its length at 0.55 s;
    the node's commands at ``cmd_t`` [s]."""
    path = TargetPath(np.array([0.3, 0.4, 0.5]), np.array([0.0, 0.0, 0.0, 1.0]), radius=0.1)
    ph = Phase("steps", "steps", True, 5.0, start_ns=0, end_ns=int(5e9))
    t = np.arange(0.0, 5.0, 0.002)
    ee = np.zeros((t.size, 3))
    start = path.center
    for i in range(len(STEP_OFFSETS)):
        sel = (t >= i) & (t < i + 1)
        f = np.interp(t[sel] - i, [0.0, 0.1, 0.5, 0.55, 0.7, 1.0], [0, 0, 1, 1.03, 1, 1])
        ee[sel] = start + f[:, None] * (path.step_target(i) - start)
        start = path.step_target(i)
    empty = np.zeros((0, 3))
    data = BagData(
        t, t, np.zeros((t.size, 7)), np.zeros((t.size, 7)), ee, np.zeros(0), empty, cmd_t,
        np.zeros((cmd_t.size, 7)), [], [],
    )  # fmt: skip
    return data, ph, path


def test_a_steps_overshoot_travelled_while_the_node_stalled_is_the_hosts() -> None:
    """A gap between the node's commands longer than ``STALL_PERIODS`` periods: the robot moved
    on its last command; that travel along the step, up to the overshoot's peak, is the
    stall's (at most the overshoot), the rest the controller's, which alone is flagged."""
    period = 0.004
    ticks = np.arange(0.0, 5.0, period)
    quiet = step_overshoots(*_steps_run(ticks), period)
    assert [round(o.ratio, 6) for o in quiet] == [0.03] * 5
    assert all(o.stalled_ratio == 0.0 and o.own_ratio == o.ratio for o in quiet)
    assert max(o.longest_gap_s for o in quiet) < STALL_PERIODS * period
    stalled = ticks[
        ~(((ticks > 1.300) & (ticks < 1.340)) | ((ticks > 2.600) & (ticks < 2.640)))
        & ~((ticks > 3.488) & (ticks < 3.508))
        & ~((ticks > 4.300) & (ticks < 4.312))
    ]
    over = step_overshoots(*_steps_run(stalled), period)
    # step 2: 36 ms unattended on the ramp (2.5 lengths/s): 9 %, capped at the overshoot
    assert over[1].ratio == pytest.approx(0.03) and over[1].stalled_ratio == over[1].ratio
    assert over[1].own_ratio == 0.0 and over[1].longest_gap_s == pytest.approx(0.04)
    # step 3: the gap came after the peak: all of it the controller's
    assert over[2].stalled_ratio == 0.0 and over[2].own_ratio == pytest.approx(0.03)
    # step 4: 20 ms apart (5 periods), 16 ms unattended: 8 ms of the ramp's end (2 % of the
    # length), 8 ms of the overshoot's rise (0.48 %)
    assert over[3].stalled_ratio == pytest.approx(0.0248)
    assert over[3].own_ratio == pytest.approx(0.0052)
    # step 5: 12 ms apart (3 periods) on the ramp: a loop's jitter, not a stall
    assert over[4].stalled_ratio == 0.0 and over[4].longest_gap_s == pytest.approx(0.012)
    # the robot's lag moves the window: a command acts that much later
    lagged = step_overshoots(*_steps_run(stalled), period, lag=0.02)
    assert lagged[3].stalled_ratio == pytest.approx(0.03 * 16 / 50)  # 16 ms of the rise
    steps = {
        "step_overshoots": [o.ratio for o in over],
        "step_overshoots_stalled": [o.stalled_ratio for o in over],
        "step_command_gap_max_s": [o.longest_gap_s for o in over],
        "step_overshoot_ratio": max(o.ratio for o in over),
        "step_overshoot_own_ratio": max(o.own_ratio for o in over),
    }
    m: dict[str, Any] = {"phases": {"steps": steps}, "control_rate_hz": 250.0}
    flags = phase_flags(m, {})
    assert flags == ["steps: a step overshoots by 3.0 % of its length (at most 2 %)"], (
        flags
    )  # step 3's, no stall in it
    notes = health_notes(m)
    assert len(notes) == 2 and notes[0].startswith(
        "steps: step 2 overshoots by 3.0 % of its length, 3.0 % of it while the node's "
        "commands were up to 40 ms apart (its period: 4 ms;"
    ), notes
    assert notes[1].startswith(
        "steps: step 4 overshoots by 3.0 % of its length, 2.5 % of it while the node's commands "
        "were up to 20 ms apart"
    ) and notes[1].endswith("the controller's own 0.5 % (at most 2 %)"), notes
    # a step that is over the limit on its own: flagged, the stall in it told beside
    m["phases"]["steps"] = {
        "step_overshoots": [0.01, 0.03, 0.045],
        "step_overshoots_stalled": [0.0, 0.03, 0.02],
        "step_command_gap_max_s": [0.005, 0.04, 0.012],
        "step_overshoot_ratio": 0.045,
        "step_overshoot_own_ratio": 0.025,
    }
    assert phase_flags(m, {}) == [
        "steps: a step overshoots by 2.5 % of its length (at most 2 %), besides 2.0 % while its "
        "commands were 12 ms apart"
    ]
    assert len(health_notes(m)) == 1  # step 2's


def test_a_low_loop_rate_names_whether_the_ticks_or_the_machine_took_the_time() -> None:
    phases = plan_phases(40.0)
    js = JointStateTimes(np.zeros(0), np.zeros(0))
    m = {**_metrics(0.0, 0.0), "max_joint_acceleration_ratio": 0.5, "loop_rate_hz": 150.0}
    m["solve_time_mean_ms"] = 0.3
    assert limit_flags(m, None, phases, js, 0.1) == [
        "loop rate 150.0 Hz < 80 % of 250 Hz: a tick took 0.30 ms on average (period 4.0 ms): "
        "the node was held up between them (a busy machine)"
    ]
    m["solve_time_mean_ms"] = 3.5
    assert limit_flags(m, None, phases, js, 0.1)[0].endswith("its ticks fill the period")
