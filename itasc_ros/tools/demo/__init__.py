"""``itasc-demo``: the main job on a fresh machine, end to end over real DDS.

Starts the simulated robot (``python -m itasc_ros.tools.sim_robot``) and the iTaSC node
(``python -m itasc_ros.ros.itasc_node`` with config/<robot>.yaml) as separate processes on
shared-memory DDS in a private domain; in this process a target generator, the recorder
(:class:`~itasc_ros.tools.record.Recorder` into an MCAP bag) and the metrics. Phases (scaled to
``--duration``):

1. circle (0.1 m, 0.25 m/s) with feed-forward: the target twist on ``~/target_twist``;
2. the same circle without: ``constraints.ee.feedforward`` set false with the node's
   SetParameters service and no twist published (with feed-forward off the node ignores
   target twists, estimated or given, so nothing is fed forward);
3. / 4. a figure eight with and without feed-forward;
5. step changes of the target (feed-forward on, zero twist given, so the jump is not read as a
   velocity);
6. an unreachable target 2 m away: the arm stretches toward it, damped near the singularity,
   within its limits.

At the end: a summary table, the offline ``scenarios.circle_tracking`` numbers for the same
parameters beside the demo's (``itasc-bench tracking`` computes the same), and an output folder
(``--out``, default ``demo_output/<timestamp>``) with the bag, the processes' logs and PNG plots.
``--json`` prints the metrics as one JSON object on the last line.

``--scenario NAME`` runs one of the demo scenarios of :mod:`itasc_ros.tools.scenarios`
instead (in this process, on an ideal robot; ``--list-scenarios`` lists them): its plot
``<NAME>.png`` and metrics ``<NAME>.json`` go to ``--out``, and ``--json`` prints the metrics.

Modules, from the command line down: :mod:`.cli` (arguments, ``main``), :mod:`.scenario`
(``--scenario``), :mod:`.run` (one DDS run), :mod:`.prepare` (the run's setup, checked),
:mod:`.processes` (the simulated robot and the node), :mod:`.live` (targets, recorder,
display; rclpy), :mod:`.tap_writer`, :mod:`.report` (summary, plots, verdict),
:mod:`.analysis` (metrics, offline replay and tracking), :mod:`.bag_data`,
:mod:`.solve_trace`, :mod:`.metrics`, :mod:`.plots`, :mod:`.summary`, :mod:`.health` (the
verdict's flags), :mod:`.phases`, :mod:`.target_path`, :mod:`.formatting`,
:mod:`.json_output`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from itasc_ros.core.lazy import lazy_exports

if TYPE_CHECKING:
    from itasc_ros.tools.demo.analysis import analyse
    from itasc_ros.tools.demo.bag_data import BagData, read_demo_bag
    from itasc_ros.tools.demo.cli import main
    from itasc_ros.tools.demo.live import STARTUP_TIMEOUT, DemoRun, LiveState
    from itasc_ros.tools.demo.metrics import (
        SETTLE_BAND,
        SETTLE_FLOOR,
        STEADY_FRACTION,
        compute_metrics,
        position_errors,
    )
    from itasc_ros.tools.demo.phases import (
        BASE_PHASES,
        BASE_TOTAL,
        DEFAULT_DURATION,
        STEP_HOLD_MIN,
        STEP_OFFSETS,
        TRACKING_MIN,
        UNREACHABLE_MIN,
        WARMUP,
        Phase,
        min_duration,
        plan_phases,
    )
    from itasc_ros.tools.demo.plots import write_plots
    from itasc_ros.tools.demo.prepare import MAX_DOMAIN_ID, DemoSetup, dds_domain, prepare
    from itasc_ros.tools.demo.processes import NODE, SIM_RATE, stop_process
    from itasc_ros.tools.demo.report import health_flags, report
    from itasc_ros.tools.demo.run import run_demo, run_live
    from itasc_ros.tools.demo.scenario import run_scenario
    from itasc_ros.tools.demo.solve_trace import SolveTrace, solve_trace
    from itasc_ros.tools.demo.summary import summary_table
    from itasc_ros.tools.demo.tap_writer import TapWriter
    from itasc_ros.tools.demo.target_path import (
        PLANE,
        RADIUS,
        SPEED,
        UNREACHABLE_DISTANCE,
        TargetPath,
    )

#: Imported on first use: ``itasc-demo --help`` and a usage mistake import no run.
__getattr__ = lazy_exports(
    __name__,
    {
        ".analysis": ["analyse"],
        ".bag_data": ["BagData", "read_demo_bag"],
        ".cli": ["main"],
        ".live": ["STARTUP_TIMEOUT", "DemoRun", "LiveState"],
        ".metrics": [
            "SETTLE_BAND", "SETTLE_FLOOR", "STEADY_FRACTION", "compute_metrics",
            "position_errors",
        ],
        ".phases": [
            "BASE_PHASES", "BASE_TOTAL", "DEFAULT_DURATION", "STEP_HOLD_MIN", "STEP_OFFSETS",
            "TRACKING_MIN", "UNREACHABLE_MIN", "WARMUP", "Phase", "min_duration", "plan_phases",
        ],
        ".plots": ["write_plots"],
        ".prepare": ["MAX_DOMAIN_ID", "DemoSetup", "dds_domain", "prepare"],
        ".processes": ["NODE", "SIM_RATE", "stop_process"],
        ".report": ["health_flags", "report"],
        ".run": ["run_demo", "run_live"],
        ".scenario": ["run_scenario"],
        ".solve_trace": ["SolveTrace", "solve_trace"],
        ".summary": ["summary_table"],
        ".tap_writer": ["TapWriter"],
        ".target_path": ["PLANE", "RADIUS", "SPEED", "UNREACHABLE_DISTANCE", "TargetPath"],
    },
)  # fmt: skip

__all__ = [
    "BASE_PHASES",
    "BASE_TOTAL",
    "DEFAULT_DURATION",
    "MAX_DOMAIN_ID",
    "NODE",
    "PLANE",
    "RADIUS",
    "SETTLE_BAND",
    "SETTLE_FLOOR",
    "SIM_RATE",
    "SPEED",
    "STARTUP_TIMEOUT",
    "STEADY_FRACTION",
    "STEP_HOLD_MIN",
    "STEP_OFFSETS",
    "TRACKING_MIN",
    "UNREACHABLE_DISTANCE",
    "UNREACHABLE_MIN",
    "WARMUP",
    "BagData",
    "DemoRun",
    "DemoSetup",
    "LiveState",
    "Phase",
    "SolveTrace",
    "TapWriter",
    "TargetPath",
    "analyse",
    "compute_metrics",
    "dds_domain",
    "health_flags",
    "main",
    "min_duration",
    "plan_phases",
    "position_errors",
    "prepare",
    "read_demo_bag",
    "report",
    "run_demo",
    "run_live",
    "run_scenario",
    "solve_trace",
    "stop_process",
    "summary_table",
    "write_plots",
]
