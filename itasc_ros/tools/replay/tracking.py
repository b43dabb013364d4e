"""Tracking error of the recorded run beside the replayed run's (``--compare``).

The error is the first target constraint's effector to its target (position), over the ticks
active in both runs; ``--compare`` fails when the RMS errors differ by more than
``--tracking-tolerance`` [mm].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core.control.playback import Playback
from itasc_ros.tools.bagio import read_bag
from itasc_ros.tools.replay.node_setup import NodeSetup

Array = NDArray[np.float64]

#: Default largest difference of the RMS tracking error, recorded vs replayed run [mm]. Online,
#: the node ticks at other moments between the same inputs: while an error decays at K e per
#: second, a tick period earlier or later changes it by up to K e / control_rate (measured:
#: 0.24 mm apart on a 50 mm step, RMS 12.6 mm).
DEFAULT_TRACKING_TOLERANCE_MM = 2.0


def _tick_columns(playback: Playback, replayed: bool) -> tuple[Array, list[str], Array]:
    """(times [s], statuses, position errors [m]) of the playback's ticks."""
    ticks = [t for t in playback.ticks if t.kind == "tick"]
    t = np.array([x.t for x in ticks], dtype=float)
    status = [x.replayed_status if replayed else x.status for x in ticks]
    pe = np.array([x.position_error for x in ticks], dtype=float)
    return t, status, pe


def _figures(e_m: Array) -> dict[str, float]:
    """``rms_mm``, ``max_mm`` [mm] and ``ticks`` of position errors ``e_m`` (k,) [m]."""
    e = 1e3 * e_m
    return {
        "rms_mm": float(np.sqrt(np.mean(e**2))) if e.size else math.nan,
        "max_mm": float(np.max(e)) if e.size else math.nan,
        "ticks": int(e.size),
    }


def tracking_pair(
    recorded: Playback,
    replayed: Playback,
    offset: float = 0.0,
    replayed_status: bool = False,
) -> tuple[dict[str, float], dict[str, float]]:
    """Tracking error of two runs of the same inputs, over the ticks active in both.

    The error is the first target constraint's effector to its target (position). A tick of
    ``recorded`` at time t is paired with the tick of ``replayed`` nearest to t + ``offset``
    (within one tick period), so that both figures cover the same moments.

    Args:
        recorded: the recorded run's journal played back.
        replayed: the replayed run's (the same playback offline, the new bag's online).
        offset: replayed time minus recorded time of the same input [s].
        replayed_status: pair on the replay's statuses of ``replayed`` (offline) rather than
            the recorded ones.

    Returns:
        (recorded, replayed) figures: ``rms_mm``, ``max_mm`` [mm] and ``ticks``.
    """
    rt, rs, re_ = _tick_columns(recorded, False)
    ot, os_, oe = _tick_columns(replayed, replayed_status)
    if rt.size < 2 or ot.size == 0:
        return _figures(np.zeros(0)), _figures(np.zeros(0))
    period = float(np.median(np.diff(rt)))
    j = np.clip(np.searchsorted(ot, rt + offset), 1, max(ot.size - 1, 1))
    j = np.where(np.abs(ot[j - 1] - rt - offset) <= np.abs(ot[j] - rt - offset), j - 1, j)
    j = np.minimum(j, ot.size - 1)
    near = np.abs(ot[j] - rt - offset) <= period
    both = np.array(
        [rs[i] == "active" and os_[j[i]] == "active" for i in range(rt.size)], dtype=bool
    )
    keep = near & both & np.isfinite(re_) & np.isfinite(oe[j])
    return _figures(re_[keep]), _figures(oe[j][keep])


def stamp_offset(recorded_bag: Path, replayed_bag: Path, setup: NodeSetup) -> float:
    """Replayed minus recorded header stamp of the first joint state [s] (online: the shift).

    With several robots, the first robot's joint states.
    """
    firsts = []
    for bag in (recorded_bag, replayed_bag):
        for _topic, _t, msg in read_bag(bag, setup.joint_topics[:1]):
            firsts.append(msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9)
            break
    return firsts[1] - firsts[0] if len(firsts) == 2 else 0.0


@dataclass
class TrackingComparison:
    """The tracking error of the recorded run beside the replayed run's.

    Attributes:
        recorded, replayed: each run's ``rms_mm``, ``max_mm`` [mm] and ``ticks``
            (:func:`tracking_pair`).
        tolerance_mm: largest accepted difference of the RMS errors [mm].
        labels: what each run is (for the report).
        recorded_active: the recording's active ticks (paired or not).
    """

    recorded: dict[str, float]
    replayed: dict[str, float]
    tolerance_mm: float
    labels: tuple[str, str] = ("the recording", "the replay")
    recorded_active: int = 0

    @property
    def diff_mm(self) -> float:
        """|RMS replayed - RMS recorded| [mm] (NaN when a run has no active tick)."""
        return abs(self.replayed["rms_mm"] - self.recorded["rms_mm"])

    @property
    def ok(self) -> bool:
        """Both runs track alike over the ticks active in both (none: nothing to compare)."""
        if self.recorded["ticks"] == 0:
            return self.recorded_active == 0  # the replayed run was never active with it
        return bool(self.diff_mm <= self.tolerance_mm)

    def to_dict(self) -> dict[str, Any]:
        """Plain numbers for JSON."""
        return {
            "ok": self.ok,
            "recorded": dict(self.recorded),
            "replayed": dict(self.replayed),
            "rms_difference_mm": self.diff_mm,
            "recorded_active_ticks": self.recorded_active,
            "tolerance_mm": self.tolerance_mm,
        }

    def text(self) -> str:
        """The report: both runs' figures, the difference, the threshold and the result."""
        width = max(len(x) for x in self.labels) + 12
        lines = [
            "tracking error (first target's effector to its target, over the ticks active in "
            "both runs):"
        ]
        for name, label, f in (
            ("recorded", self.labels[0], self.recorded),
            ("replayed", self.labels[1], self.replayed),
        ):
            lines.append(
                f"  {f'{name} ({label})':<{width}} RMS {f['rms_mm']:9.3f} mm, max "
                f"{f['max_mm']:9.3f} mm ({f['ticks']} ticks)"
            )
        verdict = "OK" if self.ok else "FAILED: the runs do not track alike"
        lines.append(
            f"  RMS difference {self.diff_mm:.3f} mm (threshold {self.tolerance_mm:g} mm, "
            f"--tracking-tolerance): {verdict}"
        )
        return "\n".join(lines)


__all__ = [
    "DEFAULT_TRACKING_TOLERANCE_MM",
    "TrackingComparison",
    "stamp_offset",
    "tracking_pair",
]
