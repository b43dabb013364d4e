"""itasc_ros.core.control.health: the diagnostic level and message rules, the markers' colours.

In process, no ROS: the rules itasc_node's /diagnostics and ~/markers follow (SAFETY.md quotes
the messages).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from itasc_ros.core.control.health import (
    COLOURS,
    LOOP_RATE_FRACTION,
    MAX_REASON_CHARS,
    REJECTION_MEMORY,
    Health,
    Level,
    clip_reason,
    colour_state,
    diagnose,
    step_colour,
)

RATE = 250.0  # control_rate [Hz]


def running(**kw: object) -> Health:
    """A model at full loop rate with the timer trigger; ``kw`` overrides."""
    base: dict[str, object] = dict(
        has_model=True, loop_rate=RATE, control_rate=RATE, timer_trigger=True
    )
    base.update(kw)
    return Health(**base)  # type: ignore[arg-type]


def test_levels_mirror_diagnostic_msgs() -> None:
    assert [int(v) for v in Level] == [0, 1, 2, 3]
    assert Level.OK < Level.WARN < Level.ERROR
    msgs = pytest.importorskip("diagnostic_msgs.msg")
    status = msgs.DiagnosticStatus
    for level, byte in zip(
        Level, (status.OK, status.WARN, status.ERROR, status.STALE), strict=True
    ):
        assert bytes([level]) == byte


# ------------------------------------------------------------------------------ no model
def test_no_model_and_no_urdf_yet_is_a_warning() -> None:
    assert diagnose(Health(has_model=False)) == (
        Level.WARN,
        "no URDF yet: waiting for robot_description",
    )


def test_no_model_because_of_a_bad_urdf_is_an_error_with_its_reason() -> None:
    error = "URDF from the parameter rejected (no model, no command until a good URDF arrives): x"
    assert diagnose(Health(has_model=False, urdf_error=error)) == (Level.ERROR, error)


def test_no_model_ignores_the_status_and_the_loop_rate() -> None:
    h = Health(has_model=False, status="fault", reason="x", loop_rate=0.0, control_rate=RATE)
    assert diagnose(h) == (Level.WARN, "no URDF yet: waiting for robot_description")


# ------------------------------------------------------------------------------ the status
def test_before_the_first_tick_the_message_is_tracking() -> None:
    assert diagnose(running()) == (Level.OK, "tracking")


@pytest.mark.parametrize(
    ("status", "reason", "level", "message"),
    [
        ("active", "", Level.OK, "active"),
        (
            "waiting",
            "no joint state received yet",
            Level.OK,
            "waiting: no joint state received yet",
        ),
        (
            "disabled",
            "~/enable is false: zero command sent, then silence",
            Level.OK,
            "disabled: ~/enable is false: zero command sent, then silence",
        ),
        (
            "stale",
            "joint states are 0.300 s old (input_timeout 0.1 s)",
            Level.WARN,
            "stale: joint states are 0.300 s old (input_timeout 0.1 s)",
        ),
        (
            "fault",
            "solve failed: LinAlgError: SVD did not converge",
            Level.ERROR,
            "fault: solve failed: LinAlgError: SVD did not converge",
        ),
    ],
)
def test_status_sets_level_and_message(
    status: str, reason: str, level: Level, message: str
) -> None:
    assert diagnose(running(status=status, reason=reason)) == (level, message)


def test_a_robot_held_while_the_others_go_on_warns() -> None:
    why = "joint states of robot b (0.120 s old) stale (input_timeout 0.1 s): it decelerating"
    h = running(status="active", reason=why, held=("b",))
    assert diagnose(h) == (Level.WARN, f"active: {why}")


# ------------------------------------------------------------------------------ loop rate
def test_a_timer_loop_below_90_percent_of_control_rate_warns() -> None:
    assert LOOP_RATE_FRACTION == 0.9
    slow = running(status="active", loop_rate=200.0)
    assert diagnose(slow) == (Level.WARN, "active; loop at 200 Hz")
    at_limit = running(status="active", loop_rate=0.9 * RATE)
    assert diagnose(at_limit) == (Level.OK, "active")


def test_the_loop_rate_is_not_checked_with_the_joint_states_trigger() -> None:
    h = running(status="active", loop_rate=10.0, timer_trigger=False)
    assert diagnose(h) == (Level.OK, "active")


def test_a_slow_loop_does_not_lower_an_error() -> None:
    h = running(status="fault", reason="x", loop_rate=1.0)
    assert diagnose(h) == (Level.ERROR, "fault: x; loop at 1 Hz")


# ------------------------------------------------------------------------------ URDF error
def test_a_urdf_error_while_running_on_the_last_good_model_warns() -> None:
    error = "URDF from the topic rejected (keeping model 'panda'): bad"
    assert diagnose(running(status="active", urdf_error=error)) == (
        Level.WARN,
        f"{error}; active",
    )
    assert diagnose(running(status="fault", reason="x", urdf_error=error)) == (
        Level.ERROR,
        f"{error}; fault: x",
    )


# ------------------------------------------------------------------------------ rejections
def test_a_rejection_warns_for_rejection_memory_seconds() -> None:
    assert REJECTION_MEMORY == 2.0
    why = "joint state has non-finite positions for ['panda_joint3']"
    recent = running(status="active", since_rejection=1.9, last_rejection=why)
    assert diagnose(recent) == (Level.WARN, f"input rejected: {why}; active")
    for since in (REJECTION_MEMORY, 5.0, math.inf):
        old = running(status="active", since_rejection=since, last_rejection=why)
        assert diagnose(old) == (Level.OK, "active")


def test_a_rejection_without_a_model_is_reported_too() -> None:
    h = Health(has_model=False, since_rejection=0.1, last_rejection="r")
    assert diagnose(h) == (
        Level.WARN,
        "input rejected: r; no URDF yet: waiting for robot_description",
    )


# ------------------------------------------------------------------------------ tick error
def test_a_tick_error_is_an_error_with_or_without_a_model() -> None:
    tick = "control step failed: RuntimeError: boom"
    assert diagnose(running(status="active", tick_error=tick)) == (
        Level.ERROR,
        f"{tick}; active",
    )
    assert diagnose(Health(has_model=False, tick_error=tick)) == (
        Level.ERROR,
        f"{tick}; no URDF yet: waiting for robot_description",
    )


def test_every_rule_at_once_in_order() -> None:
    h = running(
        status="stale",
        reason="joint states are 1.000 s old",
        loop_rate=100.0,
        urdf_error="U",
        since_rejection=0.5,
        last_rejection="R",
        tick_error="T",
    )
    assert diagnose(h) == (
        Level.ERROR,
        "T; input rejected: R; U; stale: joint states are 1.000 s old; loop at 100 Hz",
    )


# ------------------------------------------------------------------------------ colours
def test_colour_table() -> None:
    assert COLOURS == {
        "tracking": (0.1, 0.8, 0.1, 1.0),
        "limited": (0.95, 0.8, 0.1, 1.0),
        "singular": (1.0, 0.45, 0.0, 1.0),
        "stale": (0.5, 0.5, 0.5, 1.0),
        "fault": (0.9, 0.1, 0.1, 1.0),
    }


@pytest.mark.parametrize(
    ("args", "state"),
    [
        ((None,), "stale"),
        (("waiting",), "stale"),
        (("stale",), "stale"),
        (("disabled",), "stale"),
        (("disabled", 0.1, 0.5, True), "stale"),  # no motion, whatever the last solve said
        (("fault",), "fault"),
        (("fault", 0.1, 0.5, True), "fault"),
        (("active",), "tracking"),
        (("active", 0.0, 1.0, False), "tracking"),
        (("active", 0.02, 1.0, False), "singular"),
        (("active", 0.02, 0.5, True), "singular"),  # damping first
        (("active", 0.0, 0.5, False), "limited"),
        (("active", 0.0, 1.0, True), "limited"),
    ],
)
def test_colour_state_rules(args: tuple[object, ...], state: str) -> None:
    assert colour_state(*args) == state  # type: ignore[arg-type]


def _out(status: str, damping: float = 0.0, scale: float = 1.0, locked: bool = False) -> object:
    result = SimpleNamespace(
        damping=damping, velocity_scale=scale, locked=np.array([locked, False])
    )
    return SimpleNamespace(status=status, result=result)


def test_step_colour_reads_the_step_output() -> None:
    assert step_colour(None) == ("stale", COLOURS["stale"])
    assert step_colour(SimpleNamespace(status="active", result=None)) == (  # type: ignore[arg-type]
        "tracking",
        COLOURS["tracking"],
    )
    for out, state in (
        (_out("active"), "tracking"),
        (_out("active", damping=0.01), "singular"),
        (_out("active", scale=0.3), "limited"),
        (_out("active", locked=True), "limited"),
        (_out("fault"), "fault"),
        (_out("stale", damping=0.01), "stale"),
    ):
        assert step_colour(out) == (state, COLOURS[state])  # type: ignore[arg-type]


def test_clip_reason() -> None:
    assert clip_reason("short") == "short"
    long = "x" * (MAX_REASON_CHARS + 5)
    assert clip_reason(long) == "x" * MAX_REASON_CHARS + f"... ({len(long)} characters)"
    assert clip_reason("abcdef", 3) == "abc... (6 characters)"
