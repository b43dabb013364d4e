"""The demo's phases: what each one does, how long, and how a run's duration is shared out.

A run is a warm-up at the home pose (not measured) and six measured phases: a circle and a
figure eight with and without feed-forward, step changes of the target and an unreachable
target. Their durations scale with ``--duration`` but the steps and the unreachable target
keep the time they need to settle. ROS-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_DURATION = 40.0  # [s] sum of the phases
WARMUP = 1.0  # [s] at the home pose before the measured phases
STEP_OFFSETS = (  # [m] step targets relative to the home tip
    (0.0, 0.1, 0.0),
    (0.0, 0.1, -0.1),
    (0.0, -0.05, -0.05),
    (0.05, 0.0, 0.05),
    (0.0, 0.0, 0.0),
)


@dataclass
class Phase:
    """One phase of the demo.

    Attributes:
        name: short key ('circle_ff', ...). kind: 'circle', 'figure8', 'steps' or
        'unreachable'. feedforward: the node's feed-forward parameter in this phase.
        duration: [s]. start_ns / end_ns: ROS time of the phase (filled when it runs).
    """

    name: str
    kind: str
    feedforward: bool
    duration: float
    start_ns: int = 0
    end_ns: int = 0

    @property
    def tracking(self) -> bool:
        """True for the circle and figure-eight phases."""
        return self.kind in ("circle", "figure8")

    @property
    def measured(self) -> bool:
        """False for the warm-up."""
        return self.kind != "hold"


#: The measured phases: name, kind, feed-forward, duration [s] in a run of BASE_TOTAL seconds.
BASE_PHASES = (
    ("circle_ff", "circle", True, 8.0),
    ("circle_fb", "circle", False, 8.0),
    ("figure8_ff", "figure8", True, 6.0),
    ("figure8_fb", "figure8", False, 6.0),
    ("steps", "steps", True, 6.0),
    ("unreachable", "unreachable", True, 4.0),
)
BASE_TOTAL = sum(b[3] for b in BASE_PHASES)  # [s]
STEP_HOLD_MIN = 1.0  # [s] per step target: time to settle (measured ~0.4-0.5 s)
UNREACHABLE_MIN = 2.0  # [s] to stretch out toward the far target
TRACKING_MIN = 2.5  # [s] the shortest tracking phase (its second half is the steady state)


def plan_phases(total: float) -> list[Phase]:
    """The demo's phases; their durations add up to ``total`` [s] (>= :func:`min_duration`).

    The step and unreachable phases scale with ``total`` but keep the time they need to
    settle (:data:`STEP_HOLD_MIN` per step, :data:`UNREACHABLE_MIN`); the tracking phases
    share the rest in their proportions. A warm-up of :data:`WARMUP` seconds at the home pose
    comes first (not measured): the node's first solves compile and every connection
    settles before the measurements.

    Args:
        total: the measured phases' total duration [s].

    Returns:
        The warm-up, then the six measured phases of :data:`BASE_PHASES`.
    """
    scale = total / BASE_TOTAL
    fixed = {
        "steps": max(6.0 * scale, STEP_HOLD_MIN * len(STEP_OFFSETS)),
        "unreachable": max(4.0 * scale, UNREACHABLE_MIN),
    }
    tracking = sum(d for n, _, _, d in BASE_PHASES if n not in fixed)
    share = (total - sum(fixed.values())) / tracking
    return [Phase("warmup", "hold", True, WARMUP)] + [
        Phase(n, k, ff, fixed.get(n, d * share)) for n, k, ff, d in BASE_PHASES
    ]


def min_duration() -> float:
    """The shortest ``--duration`` [s] in which every phase can settle (0.1 s steps)."""
    tracking = [d for n, _, _, d in BASE_PHASES if n not in ("steps", "unreachable")]
    need = (
        STEP_HOLD_MIN * len(STEP_OFFSETS)
        + UNREACHABLE_MIN
        + TRACKING_MIN * sum(tracking) / min(tracking)
    )
    return math.ceil(need * 10.0 - 1e-9) / 10.0


def step_hold(phase: Phase) -> float:
    """How long each step target of a 'steps' ``phase`` is held [s]."""
    return phase.duration / len(STEP_OFFSETS)


__all__ = [
    "BASE_PHASES",
    "BASE_TOTAL",
    "DEFAULT_DURATION",
    "STEP_HOLD_MIN",
    "STEP_OFFSETS",
    "TRACKING_MIN",
    "UNREACHABLE_MIN",
    "WARMUP",
    "Phase",
    "min_duration",
    "plan_phases",
    "step_hold",
]
