"""The demo's verdict: which phases did not settle, which figures are over a limit, why.

ROS-free: it reads the demo's metrics (a dict of plain numbers), the recorded commands' tick
statuses (from the node's journal played back) and the joint states' stamps and reception
times. Every flag is one line naming the figure, its limit and, where the recording shows it,
its cause; :func:`verdict_line` turns them into the demo's last line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.tools.demo.formatting import mm
from itasc_ros.tools.demo.phases import Phase

Array = NDArray[np.float64]

#: Steady-state RMS tracking error allowed with feed-forward [m] (offline: ~0.1 mm).
FEEDFORWARD_ERROR_LIMIT = 0.003
#: Feedback only: steady-state RMS error allowed, as a multiple of the lag v / sqrt(K^2 + w^2).
FEEDBACK_LAG_FACTOR = 1.5
#: The node's median loop rate must reach this fraction of its control rate.
LOOP_RATE_FRACTION = 0.8
#: Tolerance of a ratio to its limit (rounding) [-].
RATIO_SLACK = 1e-9
MAX_SIGN_CHANGES_PER_S = 2.0  # at an unreachable target, after 1 s: more is chattering
MAX_STEP_OVERSHOOT = 0.02  # of the step's length

#: Why the node published an immediate zero, by the tick's recorded status or zero kind.
ZERO_CAUSES = {
    "stale": "the stale-input zero",
    "fault": "the fault zero (a solve failed)",
    "disabled": "the zero of a disable",
    "shutdown": "the shutdown zero",
    "model_change": "the zero of a model change",
    "tick_error": "the zero after an error in a tick",
    "slow_parse": "the zero while a URDF parse held the loop",
    "zero": "an immediate zero",
}


@dataclass
class CommandTicks:
    """What the node's journal says about each recorded command (k commands, time order).

    Attributes:
        t: (k,) the ticks' times [s]. status: (k,) the tick's recorded status ('active',
            'stale', ...) or, for a zero outside a tick, its kind ('shutdown', ...); '' when
            the journal does not cover the command.
        state_stamp: (k,) the header stamp [s] of the joint state the tick used (NaN: none or
            not known; empty: not known for any).
    """

    t: Array
    status: list[str]
    state_stamp: Array = field(default_factory=lambda: np.zeros(0))

    def state_stamp_at(self, i: int) -> float:
        """The header stamp [s] of the joint state command ``i``'s tick used (NaN: unknown)."""
        return float(self.state_stamp[i]) if 0 <= i < self.state_stamp.size else math.nan


@dataclass
class JointStateTimes:
    """The recorded joint states: header stamps and reception (bag) times [s]."""

    stamp: Array
    received: Array


def stale_cause(
    t: float, js: JointStateTimes, input_timeout: float, node_stamp: float = math.nan
) -> str:
    """Why the joint states were stale at ``t`` [s]: the publisher stopped, or delivery did.

    Looks at the second before ``t``: a gap in the stamps means the simulated robot published
    nothing (its process did not run); continuous stamps with a gap in the reception times
    mean the messages were held up on the way to every reader. Neither, and the node's newest
    state (``node_stamp``, the header stamp [s] its journal gives) older than states the
    recorder had received more than ``input_timeout`` before ``t``: they were held up on the
    way to the node alone, or the node refused them.
    """
    sel = (js.received >= t - 1.0) & (js.received <= t + 0.05)
    if np.count_nonzero(sel) < 2:
        return "no joint state recorded around it"
    stamp_gap = float(np.max(np.diff(js.stamp[sel])))
    recv_gap = float(np.max(np.diff(js.received[sel])))
    if stamp_gap > input_timeout:
        return (
            f"the simulated robot published no joint state for {1e3 * stamp_gap:.0f} ms (a gap "
            f"in its stamps > input_timeout {1e3 * input_timeout:.0f} ms: its process was held "
            "up, e.g. by a busy machine)"
        )
    if recv_gap > input_timeout:
        return (
            f"joint states arrived {1e3 * recv_gap:.0f} ms apart with continuous stamps (held "
            "up between the simulated robot and the node)"
        )
    newer = (js.stamp > node_stamp) & (js.received < t - input_timeout)  # False for NaN
    if np.any(newer):
        first = float(np.min(js.received[newer]))
        return (
            f"the node's newest joint state was stamped {1e3 * (t - node_stamp):.0f} ms "
            f"before, while the recorder had received {np.count_nonzero(newer)} newer ones "
            f"from {1e3 * (t - first):.0f} ms before, with continuous stamps: held up on the "
            "way to the node alone, or refused by it ('input rejected' in its log)"
        )
    return f"joint states older than input_timeout {1e3 * input_timeout:.0f} ms"


def _phase_at(t: float, phases: Sequence[Phase]) -> str:
    for ph in phases:
        if ph.start_ns * 1e-9 <= t < ph.end_ns * 1e-9:
            return str(ph.name)
    return "after the phases"


def command_cause(
    indices: Sequence[int],
    ticks: CommandTicks | None,
    phases: Sequence[Phase],
    js: JointStateTimes,
    input_timeout: float,
) -> str:
    """The cause of a figure computed from the commands ``indices`` (e.g. an acceleration)."""
    if ticks is None:
        return "cause unknown (the journal could not be played back)"
    for i in indices:
        status = ticks.status[i] if 0 <= i < len(ticks.status) else ""
        if status in ZERO_CAUSES:
            t = float(ticks.t[i])
            where = f" at t={t - phases[0].start_ns * 1e-9:.2f} s ({_phase_at(t, phases)})"
            why = ""
            if status == "stale":
                why = f": {stale_cause(t, js, input_timeout, ticks.state_stamp_at(i))}"
            return ZERO_CAUSES[status] + where + why
    seen = sorted({ticks.status[i] for i in indices if 0 <= i < len(ticks.status)})
    return f"the controller's own commands (tick status {', '.join(seen) or 'unknown'})"


def stale_stops(ticks: CommandTicks | None) -> list[int]:
    """The first command of each stale-input stop: a run of commands of status 'stale'.

    A stop publishes one zero, or, under motion limits, the ramp down to rest: one stop.
    """
    if ticks is None:
        return []
    status = ticks.status
    return [
        i for i, s in enumerate(status) if s == "stale" and (i == 0 or status[i - 1] != "stale")
    ]


def phase_flags(m: dict[str, Any], offline: dict[str, dict[str, float]]) -> list[str]:
    """Every measured phase that did not settle, with its figure and limit."""
    flags = []
    for name, ph in m["phases"].items():
        if "rms_error_m" in ph:
            rms = ph["rms_error_m"]
            if ph["feedforward"]:
                limit, what = FEEDFORWARD_ERROR_LIMIT, "feed-forward limit"
            else:
                lag = offline.get(name, {}).get("expected_lag_m", math.nan)
                limit, what = FEEDBACK_LAG_FACTOR * lag, f"{FEEDBACK_LAG_FACTOR:g} x the lag"
            if not rms <= limit:
                flags.append(
                    f"{name} did not settle: steady-state RMS error {mm(rms)} > {mm(limit)} "
                    f"({what})"
                )
        elif "settle_times_s" in ph:
            for k, s in enumerate(ph["settle_times_s"]):
                if s is None:
                    flags.append(
                        f"{name}: step {k + 1} of {len(ph['settle_times_s'])} did not settle "
                        f"within its {ph['step_hold_s']:.2f} s"
                    )
        elif "final_distance_m" in ph:
            far = ph["final_distance_m"]
            if not far < ph["target_distance_from_home_m"]:
                flags.append(f"{name}: the arm did not stretch toward the target ({far:.3f} m)")
            if not ph.get("commands_finite", True):
                flags.append(f"{name}: non-finite commands")
        own = ph.get("step_overshoot_own_ratio", ph.get("step_overshoot_ratio", 0.0))
        if own > MAX_STEP_OVERSHOOT:
            flags.append(
                f"{name}: a step overshoots by {100 * own:.1f} % of its length (at most "
                f"{100 * MAX_STEP_OVERSHOOT:g} %){_stall_part(ph)}"
            )
    return flags


def _steps(ph: dict[str, Any]) -> list[tuple[float, float, float]]:
    """Per step: its overshoot and the part of it during stalls, the longest command gap.

    The demo's metrics of the steps phase: fractions of the step's length, the gap in [s].
    """
    return list(
        zip(
            ph.get("step_overshoots", []),
            ph.get("step_overshoots_stalled", []),
            ph.get("step_command_gap_max_s", []),
            strict=False,
        )
    )


def _stall_part(ph: dict[str, Any]) -> str:
    """``, besides ...``: what the step of the largest own overshoot travelled during stalls."""
    steps = _steps(ph)
    if not steps:
        return ""
    _, stalled, gap = max(steps, key=lambda r: r[0] - r[1])
    if stalled <= 0.0:
        return ""
    return f", besides {100 * stalled:.1f} % while its commands were {1e3 * gap:.0f} ms apart"


def stall_notes(m: dict[str, Any]) -> list[str]:
    """A step that overshot past the limit only while the node's commands stalled.

    The robot moves on the node's last command while the node does not run (a busy host held
    it up): that travel is the host's, not the controller's, and is left out of the verdict.
    """
    ph = m.get("phases", {}).get("steps", {})
    period_ms = 1e3 / float(m.get("control_rate_hz", math.nan))
    notes = []
    for k, (ratio, stalled, gap) in enumerate(_steps(ph)):
        if ratio > MAX_STEP_OVERSHOOT and ratio - stalled <= MAX_STEP_OVERSHOOT:
            notes.append(
                f"steps: step {k + 1} overshoots by {100 * ratio:.1f} % of its length, "
                f"{100 * stalled:.1f} % of it while the node's commands were up to "
                f"{1e3 * gap:.0f} ms apart (its period: {period_ms:.0f} ms; the robot moved on "
                "the last one while the node did not run, a busy host held it up): the "
                f"controller's own {100 * (ratio - stalled):.1f} % (at most "
                f"{100 * MAX_STEP_OVERSHOOT:g} %)"
            )
    return notes


def limit_flags(
    m: dict[str, Any],
    ticks: CommandTicks | None,
    phases: Sequence[Phase],
    js: JointStateTimes,
    input_timeout: float,
) -> list[str]:
    """Every figure over its limit, with its cause where the journal shows it."""
    flags = []
    for key, label, back in (
        ("max_joint_acceleration_ratio", "max joint acceleration", 1),
        ("max_joint_jerk_ratio", "max joint jerk", 2),
    ):
        ratio = m.get(key, 0.0)
        if ratio > 1.0 + RATIO_SLACK:
            at = int(m[key.replace("_ratio", "_index")])
            near = range(at, at - back - 1, -1)  # the command reaching it first, then before
            cause = command_cause(near, ticks, phases, js, input_timeout)
            flags.append(f"{label} {100 * ratio:.0f} % of its limit: {cause}")
    if m.get("max_joint_speed_ratio", 0.0) > 1.0 + RATIO_SLACK:
        flags.append(f"max joint speed {100 * m['max_joint_speed_ratio']:.1f} % of its limit")
    stops = stale_stops(ticks)
    if stops and ticks is not None:
        t0 = phases[0].start_ns * 1e-9
        when = ", ".join(f"{float(ticks.t[i]) - t0:.2f} s" for i in stops[:5])
        first = stops[0]
        why = stale_cause(float(ticks.t[first]), js, input_timeout, ticks.state_stamp_at(first))
        flags.append(f"{len(stops)} stale-input stop(s) at {when}: {why}")
    if not m.get("joints_within_limits", False):
        flags.append("a joint state outside the position limits")
    if not m.get("commands_finite", False):
        flags.append("non-finite commands")
    rate, control = float(m.get("loop_rate_hz", math.nan)), float(m["control_rate_hz"])
    if not rate >= LOOP_RATE_FRACTION * control:
        flags.append(
            f"loop rate {rate:.1f} Hz < {100 * LOOP_RATE_FRACTION:.0f} % of {control:g} Hz"
            f"{_loop_cause(m, control)}"
        )
    rc = m.get("replay_compare")
    if rc is None:
        flags.append("the offline replay of the bag failed")
    elif not rc["ok"]:
        flags.append(
            f"the offline replay does not reproduce the commands ({rc['mismatches']} "
            f"mismatches, {rc['compared']}/{rc['commands']} compared)"
        )
    return flags


def _loop_cause(m: dict[str, Any], control: float) -> str:
    """``: ...``: whether the node's own ticks fill its period or the machine held it up."""
    mean = float(m.get("solve_time_mean_ms", math.nan))
    if not math.isfinite(mean):
        return ""
    period = 1e3 / control
    why = (
        "its ticks fill the period"
        if mean > 0.5 * period
        else "the node was held up between them (a busy machine)"
    )
    return f": a tick took {mean:.2f} ms on average (period {period:.1f} ms): {why}"


def health_notes(m: dict[str, Any]) -> list[str]:
    """What the run showed that is worth a look but does not make it unhealthy.

    A step that overshot only while the node's commands stalled (:func:`stall_notes`); a joint
    whose velocity changes sign more than :data:`MAX_SIGN_CHANGES_PER_S` times a second
    after 1 s at the unreachable target: a short chatter at the acceleration limits of a
    heavily saturated 6-D task (every command still within the limits; doc/safety.md, open items).
    """
    notes = stall_notes(m)
    far = m.get("phases", {}).get("unreachable", {})
    chatter = far.get("max_velocity_sign_changes_per_s", 0.0)
    if chatter > MAX_SIGN_CHANGES_PER_S:
        notes.append(
            f"unreachable: a joint's velocity changes sign {chatter:.1f} times/s after 1 s "
            f"(more than {MAX_SIGN_CHANGES_PER_S:g}: a chatter at the acceleration limits)"
        )
    return notes


def verdict_line(prog: str, flags: Sequence[str]) -> str:
    """``<prog>: verdict: healthy`` or ``<prog>: verdict: NOT healthy: <reasons>``."""
    if not flags:
        return f"{prog}: verdict: healthy"
    return f"{prog}: verdict: NOT healthy: " + "; ".join(flags)


__all__ = [
    "CommandTicks",
    "JointStateTimes",
    "command_cause",
    "health_notes",
    "limit_flags",
    "phase_flags",
    "stale_cause",
    "stale_stops",
    "stall_notes",
    "verdict_line",
]
