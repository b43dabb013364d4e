"""What ``itasc-replay`` prints: figures, notes, a side-by-side table and the JSON line."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from itasc_ros.tools.replay.metrics import replay_metrics
from itasc_ros.tools.replay.node_setup import NodeSetup
from itasc_ros.tools.replay.result import ReplayResult

_SIDE_BY_SIDE = (  # (label, metric key, scale, unit)
    ("tracking error RMS", "position_error_rms_m", 1e3, "mm"),
    ("tracking error max", "position_error_max_m", 1e3, "mm"),
    ("peak joint speed", "max_joint_speed_rad_s", 1.0, "rad/s"),
    ("peak joint speed / limit", "max_joint_speed_ratio", 100.0, "%"),
    ("commands at a velocity limit", "velocity_limit_hits", 1.0, ""),
    ("smallest sigma_min", "sigma_min_min", 1.0, ""),
    ("singularity events", "singularity_events", 1.0, ""),
    ("steps with a locked joint", "locked_steps", 1.0, ""),
    ("time a task was not followed", "time_not_followed_s", 1.0, "s"),
)


def fmt(v: Any) -> str:
    """A value for the report: a float with 6 significant digits, anything else as str."""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def print_replay(
    bag: Path,
    setup: NodeSetup,
    metrics: Mapping[str, Any],
    notes: Sequence[str],
    result: ReplayResult,
) -> None:
    """Print where the configuration came from, the figures, the notes and rejected inputs."""
    print(f"itasc-replay {bag}: parameters from {setup.params_source}; URDF {setup.urdf_source}")
    for k, v in metrics.items():
        print(f"  {k:32s} {fmt(v)}")
    for line in [*notes, *(f"rejected input: {r}" for r in result.rejection_reasons)]:
        print(f"  {line}")


def print_json(summary: Mapping[str, Any]) -> None:
    """Print the summary as one JSON object on one line (other values as :func:`fmt` text)."""
    print(json.dumps(summary, default=fmt))


def side_by_side(a: ReplayResult, b: ReplayResult, label_a: str, label_b: str) -> str:
    """A table of two runs' figures (tracking error, peak speed, ...), one row each."""
    ma, mb = replay_metrics(a), replay_metrics(b)
    width = max(len(r[0]) for r in _SIDE_BY_SIDE) + 8
    col = max(len(label_a), 12)
    lines = [f"  {'':<{width}} {label_a:>{col}}   {label_b}"]
    for label, key, scale, unit in _SIDE_BY_SIDE:
        name = f"{label} [{unit}]" if unit else label
        cells = [
            f"{scale * float(m[key]):.4g}" if key in m and m[key] is not None else "n/a"
            for m in (ma, mb)
        ]
        lines.append(f"  {name:<{width}} {cells[0]:>{col}}   {cells[1]}")
    return "\n".join(lines)


__all__ = ["fmt", "print_json", "print_replay", "side_by_side"]
