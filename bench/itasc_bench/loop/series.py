"""Several loop runs as one result: medians, and ratios to a peer run paired with each run.

``itasc-bench loop --runs N`` interleaves the node's runs with the floor's (``--floor``, the node
of :data:`FLOOR_MODULE` that computes nothing) and with the node's runs with ``~/journal``
subscribed (``--journal``); a change of the machine's state between pairs of runs cancels out
of the ratios.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from . import core_floor

#: ``--floor``: the node that does no kinematics (same topics, QoS, executor).
FLOOR_MODULE = "itasc_bench.floor_node"
#: ``--core-floor``: the floor plus the core's work (:mod:`itasc_bench.loop.core_floor`).
CORE_FLOOR_MODULE = core_floor.__name__
#: ``--core-floor``: its works (``floor_work``), in the order they run after the floor.
CORE_FLOORS = core_floor.WORKS
#: ``--floor``: the figures reported for the floor and as node / floor ratios.
FLOOR_KEYS = (
    "achieved_rate_hz",
    "missed_tick_fraction",
    "publish_missed_tick_fraction",
    "latency_p50_ms",
    "latency_p99_ms",
    "node_cpu_percent",
    "joint_state_missed_tick_fraction",
)
#: ``--runs``: figures added up over the runs instead of their median.
SUMMED_KEYS = ("commands_out_of_limits", "commands_received", "joint_states_received")
#: ``--runs``: further figures listed run by run.
RUN_KEYS = ("period_error_max_ms", "delivery_p99_ms", "commands_out_of_limits", "steal_percent")


def median_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One result from several runs: medians, sums of :data:`SUMMED_KEYS`, values in ``runs``.

    A single run is returned as it is (no ``runs`` key).
    """
    if len(runs) == 1:
        return dict(runs[0])
    out: dict[str, Any] = {}
    for k, v in runs[0].items():
        if isinstance(v, bool) or not isinstance(v, int | float):
            out[k] = v
        elif k in SUMMED_KEYS:  # a bad command in any run must show
            out[k] = sum(r[k] for r in runs)
        else:
            out[k] = float(statistics.median(float(r[k]) for r in runs))
    out["runs"] = {k: [r[k] for r in runs] for k in (*FLOOR_KEYS, *RUN_KEYS) if k in runs[0]}
    return out


def floor_comparison(nodes: list[dict[str, Any]], floors: list[dict[str, Any]]) -> dict[str, Any]:
    """``floor_<key>`` (median over the runs) and ``<key>_vs_floor`` for :data:`FLOOR_KEYS`.

    The ratio is the median of the runs' node / floor ratios (each run beside the floor run that
    followed it), so that a change of the machine's state between pairs of runs cancels out.
    """
    out: dict[str, Any] = {}
    for k in FLOOR_KEYS:
        out[f"floor_{k}"] = float(statistics.median(float(f[k]) for f in floors))
        ratios = [n[k] / f[k] if f[k] else math.inf for n, f in zip(nodes, floors, strict=True)]
        out[f"{k}_vs_floor"] = float(statistics.median(ratios))
        if len(floors) > 1:
            out[f"floor_runs_{k}"] = [f[k] for f in floors]
    return out


def peer_comparison(
    runs: list[dict[str, Any]], others: list[dict[str, Any]], name: str, other: str
) -> dict[str, Any]:
    """``<name>_<key>`` (median) and ``<key>_<name>_vs_<other>`` (median of the pairs' ratios).

    Each run is paired with the run of ``others`` made just before it (interleaved runs).
    """
    out: dict[str, Any] = {}
    for k in FLOOR_KEYS:
        out[f"{name}_{k}"] = float(statistics.median(float(r[k]) for r in runs))
        ratios = [r[k] / o[k] if o[k] else math.inf for r, o in zip(runs, others, strict=True)]
        out[f"{k}_{name}_vs_{other}"] = float(statistics.median(ratios))
    return out


__all__ = [
    "CORE_FLOORS",
    "CORE_FLOOR_MODULE",
    "FLOOR_KEYS",
    "FLOOR_MODULE",
    "RUN_KEYS",
    "SUMMED_KEYS",
    "floor_comparison",
    "median_runs",
    "peer_comparison",
]
