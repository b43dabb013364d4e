"""After the run: the bag's metrics, its exact offline replay and the offline tracking figures.

The node's journal in the bag is played back (``itasc-replay --compare``) to recompute every
command and recover the node's solves; ``scenarios.circle_tracking`` (what
``itasc-bench tracking`` runs) gives the same tracking phases' errors without DDS.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from itasc_ros.core.scenarios import circle_tracking
from itasc_ros.core.solve.joint_limits import JointLimits
from itasc_ros.tools.demo.bag_data import BagData, read_demo_bag
from itasc_ros.tools.demo.metrics import compute_metrics
from itasc_ros.tools.demo.prepare import DemoSetup
from itasc_ros.tools.demo.solve_trace import SolveTrace, solve_trace
from itasc_ros.tools.demo.target_path import PLANE, SPEED
from itasc_ros.tools.replay import compare_commands, load_setup, play_journal, setup_joints

OFFLINE_KEYS = ("rms_error_m", "max_error_m", "max_joint_speed_ratio", "expected_lag_m")


def replay_bag(d: DemoSetup) -> tuple[Any, Any]:
    """The node's journal played back and every command compared (None, None on failure)."""
    try:
        bag_setup = load_setup(d.bag, urdf=str(d.urdf))
        playback = play_journal(d.bag, bag_setup)
        if playback is None:
            raise RuntimeError(f"no journal on {bag_setup.journal_topic} in the bag")
        joints = setup_joints(bag_setup, playback)
        return compare_commands(d.bag, bag_setup, playback, joints), playback
    except Exception as exc:  # the analysis must not hide the demo's results
        print(f"itasc-demo: offline replay of the bag failed: {exc}", file=sys.stderr)
        return None, None


def offline_tracking(d: DemoSetup) -> dict[str, dict[str, float]]:
    """``circle_tracking`` (what ``itasc-bench tracking`` runs) for each tracking phase.

    Returns:
        Phase name -> :data:`OFFLINE_KEYS` ([m] errors and lag, speed ratio).
    """
    offline: dict[str, dict[str, float]] = {}
    for ph in d.phases:
        if ph.tracking:
            r = circle_tracking(
                d.tree,
                d.tip,
                d.home_q,
                ph.feedforward,
                d.path.radius,
                SPEED,
                d.gain,
                1.0 / d.config.control_rate,
                ph.duration,
                ph.kind,
                plane=PLANE,
            )
            offline[ph.name] = {k: r[k] for k in OFFLINE_KEYS}
    return offline


def _trace_in_tick_order(trace: SolveTrace, data: BagData) -> SolveTrace:
    """The trace and the recorded commands in the ticks' time order, on the ticks' times."""
    trace.t = np.where(np.isfinite(trace.t), trace.t, data.cmd_t)
    order = np.argsort(trace.t, kind="stable")
    trace = trace.reordered(order)
    # the ticks' times rather than the recorder's reception times
    data.cmd_t, data.cmd = trace.t, data.cmd[order]
    return trace


def analyse(d: DemoSetup) -> tuple[dict[str, Any], BagData, SolveTrace | None, list[JointLimits]]:
    """The metrics of the recorded bag, its offline replay and the offline tracking figures.

    Returns:
        The metrics, the bag's signals (commands on the ticks' times where the journal covers
        them), the node's solves (or None) and the commanded joints' limits.
    """
    replay_cmp, playback = replay_bag(d)
    data = read_demo_bag(d.bag, d.setup, d.tree, d.tip, d.cmd_joints)
    trace = solve_trace(replay_cmp, playback)
    if trace is not None:
        trace = _trace_in_tick_order(trace, data)
    by_joint = d.config.limits()
    limits = [by_joint.get(j, JointLimits()) for j in d.cmd_joints]
    t = d.tree
    metrics = compute_metrics(
        data,
        d.measured,
        d.path,
        t.velocity_limits,
        t.lower,
        t.upper,
        trace,
        d.config.damping_epsilon,
        d.config.control_rate,
        limits,
        d.physics.lag,
    )
    metrics["commands_recorded"] = int(data.cmd_t.size)
    ph = d.physics
    metrics["robot"] = {
        "physics": ph.kind,
        "actuator_lag_s": ph.lag,
        "node_actuator_lag_s": ph.node_lag,
    }
    if replay_cmp is not None:
        metrics["replay_compare"] = replay_cmp.to_dict()
    offline = offline_tracking(d)
    metrics["offline"] = offline
    metrics["offline_tracking_error_feedforward_m"] = offline["circle_ff"]["rms_error_m"]
    metrics["offline_tracking_error_feedback_only_m"] = offline["circle_fb"]["rms_error_m"]
    return metrics, data, trace, limits


__all__ = ["OFFLINE_KEYS", "analyse", "offline_tracking", "replay_bag"]
