"""Tracking error of the recorded run beside the replayed run's (``--compare``).

The error is the first target constraint's effector to its target (position), over the ticks
active in both runs; ``--compare`` fails when the RMS errors differ by more than
``--tracking-tolerance`` [mm].

Online, a tick of the new run is compared with the recording's at the same moment only where it
used the same inputs: the joint state and the target whose header stamps (shifted by the
replay) are those the recorded tick used, within the input's own period and one tick. Where the
replay or the node ran late (a loaded machine), the online node pairs a joint state with
another target than the recorded node did, and its error at that tick says nothing about the
node; those ticks are counted (``out_of_step``), not compared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

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


class _Columns(NamedTuple):
    """A playback's ticks as columns.

    Times [s], statuses, position errors [m], the header stamps [s] of the joint state and of
    the target each used (NaN: none).
    """

    t: Array
    status: list[str]
    error: Array
    state_stamp: Array
    target_stamp: Array


def _tick_columns(playback: Playback, replayed: bool) -> _Columns:
    """The playback's ticks as columns (``replayed``: the replay's statuses)."""
    ticks = [t for t in playback.ticks if t.kind == "tick"]
    return _Columns(
        np.array([x.t for x in ticks], dtype=float),
        [x.replayed_status if replayed else x.status for x in ticks],
        np.array([x.position_error for x in ticks], dtype=float),
        np.array([x.state_stamp for x in ticks], dtype=float),
        np.array([x.target_stamp for x in ticks], dtype=float),
    )


def _period(stamps: Array) -> float:
    """The median interval [s] between an input's distinct stamps (0: fewer than two)."""
    s = np.unique(stamps[np.isfinite(stamps)])
    return float(np.median(np.diff(s))) if s.size > 1 else 0.0


def _same_input(recorded: Array, replayed: Array, offset: float, within: float) -> Array:
    """Per pair: the same input in both runs.

    The replayed stamp is the recorded one shifted by ``offset`` within ``within`` [s], or
    neither has a stamp (nothing to tell them apart).
    """
    neither = ~np.isfinite(recorded) & ~np.isfinite(replayed)
    with np.errstate(invalid="ignore"):
        near = np.abs(replayed - recorded - offset) <= within
    return np.asarray(neither | near, dtype=bool)


def _figures(e_m: Array) -> dict[str, float]:
    """``rms_mm``, ``max_mm`` [mm] and ``ticks`` of position errors ``e_m`` (k,) [m]."""
    e = 1e3 * e_m
    return {
        "rms_mm": float(np.sqrt(np.mean(e**2))) if e.size else math.nan,
        "max_mm": float(np.max(e)) if e.size else math.nan,
        "ticks": int(e.size),
    }


class TrackingPair(NamedTuple):
    """Both runs' figures over the same moments (:func:`tracking_pair`).

    Attributes:
        recorded, replayed: ``rms_mm``, ``max_mm`` [mm] and ``ticks`` of each run.
        out_of_step: ticks active in both runs left out because the replayed tick used other
            inputs than the recorded one (its joint state's or target's stamp, shifted, further
            than that input's period and one tick from the recorded tick's).
    """

    recorded: dict[str, float]
    replayed: dict[str, float]
    out_of_step: int = 0


def tracking_pair(
    recorded: Playback,
    replayed: Playback,
    offset: float = 0.0,
    replayed_status: bool = False,
) -> TrackingPair:
    """Tracking error of two runs of the same inputs, over the ticks active in both.

    The error is the first target constraint's effector to its target (position). A tick of
    ``recorded`` at time t is paired with the tick of ``replayed`` nearest to t + ``offset``
    (within one tick period), so that both figures cover the same moments; a pair counts only
    when the replayed tick used the same inputs (header stamps of its joint state and of the
    target, shifted by ``offset``, within that input's period and one tick period of the
    recorded tick's): a run that took its inputs late (a replay or a node behind on a loaded
    machine) pairs a joint state with another target, and its error says nothing of the node.

    Args:
        recorded: the recorded run's journal played back.
        replayed: the replayed run's (the same playback offline, the new bag's online).
        offset: replayed time minus recorded time of the same input [s] (the replay shifts the
            header stamps by as much).
        replayed_status: pair on the replay's statuses of ``replayed`` (offline) rather than
            the recorded ones.

    Returns:
        Both runs' figures and the ticks left out of step.
    """
    rec = _tick_columns(recorded, False)
    rep = _tick_columns(replayed, replayed_status)
    rt, ot = rec.t, rep.t
    if rt.size < 2 or ot.size == 0:
        return TrackingPair(_figures(np.zeros(0)), _figures(np.zeros(0)))
    period = float(np.median(np.diff(rt)))
    j = np.clip(np.searchsorted(ot, rt + offset), 1, max(ot.size - 1, 1))
    j = np.where(np.abs(ot[j - 1] - rt - offset) <= np.abs(ot[j] - rt - offset), j - 1, j)
    j = np.minimum(j, ot.size - 1)
    near = np.abs(ot[j] - rt - offset) <= period
    both = np.array(
        [rec.status[i] == "active" and rep.status[j[i]] == "active" for i in range(rt.size)],
        dtype=bool,
    )
    paired = near & both & np.isfinite(rec.error) & np.isfinite(rep.error[j])
    in_step = np.ones(rt.size, dtype=bool)
    for mine, theirs in (
        (rec.state_stamp, rep.state_stamp),
        (rec.target_stamp, rep.target_stamp),
    ):
        within = _period(mine) + period
        in_step &= _same_input(mine, theirs[j], offset, within)
    keep = paired & in_step
    return TrackingPair(
        _figures(rec.error[keep]),
        _figures(rep.error[j][keep]),
        int(np.count_nonzero(paired & ~in_step)),
    )


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
        out_of_step: ticks active in both runs left out: the replayed tick used other inputs
            (:class:`TrackingPair`).
    """

    recorded: dict[str, float]
    replayed: dict[str, float]
    tolerance_mm: float
    labels: tuple[str, str] = ("the recording", "the replay")
    recorded_active: int = 0
    out_of_step: int = 0

    @property
    def diff_mm(self) -> float:
        """|RMS replayed - RMS recorded| [mm] (NaN when a run has no active tick)."""
        return abs(self.replayed["rms_mm"] - self.recorded["rms_mm"])

    @property
    def ok(self) -> bool:
        """Both runs track alike over the ticks active in both with the same inputs.

        None such: nothing to compare, unless every tick active in both was out of step (then
        the replay did not show them alike).
        """
        if self.recorded["ticks"] == 0:
            # the replayed run was never active with it, or never took the same inputs
            return self.recorded_active == 0 and self.out_of_step == 0
        return bool(self.diff_mm <= self.tolerance_mm)

    def to_dict(self) -> dict[str, Any]:
        """Plain numbers for JSON."""
        return {
            "ok": self.ok,
            "recorded": dict(self.recorded),
            "replayed": dict(self.replayed),
            "rms_difference_mm": self.diff_mm,
            "recorded_active_ticks": self.recorded_active,
            "out_of_step_ticks": self.out_of_step,
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
        if self.out_of_step:
            lines.append(
                f"  {self.out_of_step} more ticks active in both left out: there {self.labels[1]} "
                "used other inputs than the recording at that moment (it took them late)"
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
    "TrackingPair",
    "stamp_offset",
    "tracking_pair",
]
