"""The controller's health, ROS-free: the diagnostic level and message, the markers' colour.

itasc_node reports what it knows (the control status, the loop rate, URDF and input
rejections, a failed tick...) as a :class:`Health`; :func:`diagnose` turns it into the level
and message of its ``/diagnostics`` status, :func:`colour_state` into the colour of its
``~/markers``. The node only converts the result to ``DiagnosticStatus`` / ``ColorRGBA``.
doc/safety.md quotes the messages.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum

from .controller import Status, StepOutput

REJECTION_MEMORY = 2.0  # [s] a rejected input keeps the diagnostic at WARN this long
LOOP_RATE_FRACTION = 0.9  # a timer-driven loop below this fraction of control_rate: WARN
MAX_REASON_CHARS = 1000  # longest reason shown in /diagnostics and ~/status [characters]

RGBA = tuple[float, float, float, float]

COLOURS: dict[str, RGBA] = {  # colour state -> RGBA of the markers
    "tracking": (0.1, 0.8, 0.1, 1.0),  # green
    "limited": (0.95, 0.8, 0.1, 1.0),  # yellow: velocity scaled or a joint at its limit
    "singular": (1.0, 0.45, 0.0, 1.0),  # orange: damping on (sigma_min < damping_epsilon)
    "stale": (0.5, 0.5, 0.5, 1.0),  # grey: waiting, stale inputs or disabled: no motion
    "fault": (0.9, 0.1, 0.1, 1.0),  # red: the solve failed
}


class Level(IntEnum):
    """Diagnostic level; the values are those of ``diagnostic_msgs/DiagnosticStatus``."""

    OK = 0
    WARN = 1
    ERROR = 2
    STALE = 3


@dataclass(frozen=True)
class Health:
    """What the node knows when it reports (plain values).

    Attributes:
        has_model: a controller is installed.
        status: the last control status (``waiting``, ``active``, ``stale``, ``disabled``,
            ``fault``), or None before the first tick of the installed model.
        reason: the reason of that status ('' for none).
        held: robots stopped while the others go on (several robots; a stale one's).
        loop_rate: ticks per second over the last diagnostics window [Hz].
        control_rate: the configured ``control_rate`` [Hz].
        timer_trigger: the loop ticks on its timer (``control_trigger: timer``), so the loop
            rate is expected to reach ``control_rate``.
        urdf_error: why the latest URDF was not installed ('' when it was).
        since_rejection: seconds since the latest rejected input (inf: never).
        last_rejection: the reason of the latest rejected input.
        tick_error: an unexpected exception in the control tick ('' for none).
        shortfall: a task the commands have not followed for a while, how much and why
            (:attr:`~itasc_ros.core.control.status.StepOutput.shortfall`; '' for none).
    """

    has_model: bool
    status: str | None = None
    reason: str = ""
    held: tuple[str, ...] = ()
    loop_rate: float = 0.0
    control_rate: float = 0.0
    timer_trigger: bool = False
    urdf_error: str = ""
    since_rejection: float = math.inf
    last_rejection: str = ""
    tick_error: str = ""
    shortfall: str = ""


def diagnose(h: Health) -> tuple[Level, str]:
    """The level and message of the controller's diagnostic status.

    * No model: ERROR with the URDF error (a bad URDF to fix), else WARN, waiting for one.
    * The control status: ``<status>: <reason>``; ``stale`` is WARN, and so is a robot held
      while the others go on, ``fault`` ERROR, the others OK (``tracking`` before the first
      tick).
    * At least WARN: a timer-driven loop below 90 % of ``control_rate`` (``; loop at N Hz``
      appended), a URDF error while running on the last good model (prefixed), an input
      rejected in the last :data:`REJECTION_MEMORY` seconds (``input rejected: <reason>;``
      prefixed, with or without a model).
    * WARN: a task not followed (``active: <shortfall>``: the task, how much of it and why).
    * ERROR: a failed control tick (prefixed).
    """
    level, message = Level.OK, "tracking"
    if not h.has_model:
        if h.urdf_error:  # idle because of a bad URDF: an error to fix
            level, message = Level.ERROR, h.urdf_error
        else:
            level, message = Level.WARN, "no URDF yet: waiting for robot_description"
    else:
        if h.status is not None:
            message = h.status if not h.reason else f"{h.status}: {h.reason}"
            if h.status == Status.STALE or h.held:
                level = Level.WARN
            elif h.status == Status.FAULT:
                level = Level.ERROR
            if h.shortfall and h.status == Status.ACTIVE:
                level = max(level, Level.WARN)
                message = f"{message}; {h.shortfall}" if h.reason else f"{h.status}: {h.shortfall}"
        if h.timer_trigger and h.loop_rate < LOOP_RATE_FRACTION * h.control_rate:
            level = max(level, Level.WARN)
            message += f"; loop at {h.loop_rate:.0f} Hz"
        if h.urdf_error:  # running on the last good model
            level = max(level, Level.WARN)
            message = f"{h.urdf_error}; {message}"
    if h.since_rejection < REJECTION_MEMORY:
        level = max(level, Level.WARN)
        message = f"input rejected: {h.last_rejection}; {message}"
    if h.tick_error:
        level = Level.ERROR
        message = f"{h.tick_error}; {message}"
    return level, message


def colour_state(
    status: str | None, damping: float = 0.0, velocity_scale: float = 1.0, locked: bool = False
) -> str:
    """The markers' state (a key of :data:`COLOURS`).

    Args:
        status: the control status, or None before the first tick.
        damping: the solve's damping (> 0: near a singularity).
        velocity_scale: the solve's velocity scaling (< 1: limited).
        locked: a joint is locked at its position limit.

    Returns:
        ``stale`` (no motion: no tick yet, waiting, stale, disabled), ``fault``, ``singular``,
        ``limited`` or ``tracking``, the first that applies.
    """
    if status is None or status in (Status.WAITING, Status.STALE, Status.DISABLED):
        return "stale"
    if status == Status.FAULT:
        return "fault"
    if damping > 0.0:
        return "singular"
    if velocity_scale < 1.0 or locked:
        return "limited"
    return "tracking"


def step_colour(out: StepOutput | None) -> tuple[str, RGBA]:
    """The markers' state and RGBA for a control tick's output (None: no tick yet)."""
    if out is None:
        state = colour_state(None)
    elif out.result is None:
        state = colour_state(str(out.status))
    else:
        r = out.result
        state = colour_state(str(out.status), r.damping, r.velocity_scale, bool(r.locked.any()))
    return state, COLOURS[state]


def clip_reason(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """``text`` cut to ``limit`` characters for a log line or a diagnostic."""
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"
