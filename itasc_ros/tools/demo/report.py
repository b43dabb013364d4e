"""The end of a demo run: summary, plots, flags, verdict and metrics.json; the exit status."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from itasc_ros.tools.demo.analysis import analyse
from itasc_ros.tools.demo.bag_data import BagData
from itasc_ros.tools.demo.health import (
    CommandTicks,
    JointStateTimes,
    health_notes,
    limit_flags,
    phase_flags,
    stale_stops,
    verdict_line,
)
from itasc_ros.tools.demo.json_output import metrics_line, write_metrics
from itasc_ros.tools.demo.plots import write_plots
from itasc_ros.tools.demo.prepare import DemoSetup
from itasc_ros.tools.demo.solve_trace import SolveTrace
from itasc_ros.tools.demo.summary import explain_offline, summary_table
from itasc_ros.tools.demo.video import write_video


def health_flags(
    d: DemoSetup, metrics: dict[str, Any], data: BagData, trace: SolveTrace | None
) -> list[str]:
    """Every phase that did not settle and every figure over a limit, with its cause."""
    ticks = None if trace is None else CommandTicks(trace.t, trace.status, trace.state_stamp)
    metrics["stale_events"] = None if ticks is None else len(stale_stops(ticks))
    js = JointStateTimes(data.js_t, data.js_recv)
    timeout = d.config.input_timeout
    return phase_flags(metrics, metrics["offline"]) + limit_flags(
        metrics, ticks, d.measured, js, timeout
    )


def _video(d: DemoSetup, data: BagData) -> list[Path]:
    """The run drawn by MuJoCo (the simulator's URDF: its meshes); [] and a line when not."""
    urdf = d.physics.urdf or d.urdf
    files, why = write_video(
        d.out, urdf.read_text(encoding="utf-8"), d.tree, data.js_t, data.js_q, data.target_t,
        data.target_p, base_dir=urdf.parent,
    )  # fmt: skip
    if why:
        print(f"itasc-demo: {why}", flush=True)
    return files


def report(d: DemoSetup, wall0: float, t_run: float) -> int:
    """Analyse the bag, print the summary, the flags and the verdict; 0 when healthy.

    Args:
        d: the run.
        wall0: monotonic time [s] the demo started.
        t_run: how long it ran [s].

    Returns:
        The exit status: 0 healthy, 1 not.
    """
    metrics, data, trace, limits = analyse(d)
    vlim = d.tree.velocity_limits
    print(summary_table(metrics, metrics["offline"], d.cmd_joints, vlim))
    print(explain_offline(metrics, d.gain, d.path.radius, d.config.control_rate))
    plots: list[Path] = []
    if not d.args.no_plots:
        eps = d.config.damping_epsilon
        plots = write_plots(
            d.out, data, d.measured, trace, vlim, d.cmd_joints, eps, limits,
            1.0 / d.config.control_rate,
        )  # fmt: skip
        plots += _video(d, data)
    flags = health_flags(d, metrics, data, trace)
    notes = health_notes(metrics)
    metrics["verdict"] = {"healthy": not flags, "flags": flags, "notes": notes}
    write_metrics(d.out / "metrics.json", metrics)
    wall = time.monotonic() - wall0
    metrics.update(wall_time_s=wall, run_time_s=t_run, bag=str(d.bag))
    metrics["plots"] = [str(p) for p in plots]
    print(
        f"\nOutput: {d.out}/ (bag/, {', '.join(p.name for p in plots) or 'no plots'}, "
        f"metrics.json, logs); wall time {wall:.1f} s\n"
    )
    for flag in flags:
        print(f"itasc-demo: FLAG: {flag}")
    for note in notes:
        print(f"itasc-demo: NOTE: {note}")
    print(verdict_line("itasc-demo", flags), flush=True)
    if d.args.json:
        print(metrics_line(metrics))
    return 0 if not flags else 1


__all__ = ["health_flags", "report"]
