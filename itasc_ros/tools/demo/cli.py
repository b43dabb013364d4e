"""``itasc-demo``'s command line: its arguments and the console script's entry point."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from itasc_ros.cli import CliParser, nonnegative_float, positive_float, usage_status
from itasc_ros.tools.demo.phases import DEFAULT_DURATION, min_duration
from itasc_ros.tools.demo.target_path import RADIUS

PROG = "itasc-demo"


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``itasc-demo``'s arguments (one-line errors, exit status 2)."""
    p = CliParser(
        prog=PROG,
        description="Simulated robot + iTaSC node over DDS: circle and figure eight with and "
        "without feed-forward, step changes, an unreachable target; bag, plots, summary.",
    )
    p.add_argument("--robot", choices=["panda", "ur5"], default="panda")
    p.add_argument(
        "--duration",
        type=positive_float,
        default=DEFAULT_DURATION,
        help="total duration of the phases [s] (default %(default)g; at least "
        f"{min_duration():g}: each phase needs time to settle)",
    )
    p.add_argument(
        "--radius",
        type=positive_float,
        default=RADIUS,
        metavar="M",
        help="radius of the circle and size of the figure eight [m] (default %(default)g); "
        "one the arm cannot reach (e.g. 2.0) shows a failing run",
    )
    p.add_argument("--out", help="output folder (default demo_output/<timestamp>)")
    p.add_argument(
        "--json", action="store_true", help="print the metrics as one JSON object on the last line"
    )
    p.add_argument("--no-plots", action="store_true", help="write no PNG plots")
    p.add_argument(
        "--scenario",
        metavar="NAME",
        help="run a demo scenario instead (in-process, ideal robot; see --list-scenarios): "
        "its plot <NAME>.png goes to --out, --json prints its metrics",
    )
    p.add_argument(
        "--list-scenarios", action="store_true", help="list the scenarios of --scenario and exit"
    )
    p.add_argument(
        "--quick", action="store_true", help="with --scenario: a shorter run (as the tests do)"
    )
    p.add_argument(
        "--physics",
        choices=["ideal", "mujoco"],
        default="ideal",
        help="the simulated robot: ideal (follows each command exactly) or mujoco (MuJoCo "
        "dynamics: velocity servos with --actuator-lag, torque limits, gravity compensated; "
        "the Panda with example-robot-data's inertias)",
    )
    p.add_argument(
        "--actuator-lag",
        type=nonnegative_float,
        default=0.02,
        metavar="S",
        help="mujoco: the servos' time constant [s] (default %(default)g)",
    )
    p.add_argument(
        "--node-lag",
        type=nonnegative_float,
        default=None,
        metavar="S",
        help="the node's actuator_lag [s] (default: --actuator-lag with mujoco, else 0; 0: "
        "the node does not compensate the lag)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Console script entry point; returns the exit status (0 healthy, 1 not, 2 usage).

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).
    """
    args = build_parser().parse_args(argv)
    # the runs (the core, DDS, plotting) are imported once the arguments are checked
    from itasc_ros.tools.demo.prepare import timestamped_out
    from itasc_ros.tools.demo.run import run_demo
    from itasc_ros.tools.demo.scenario import list_scenarios, run_scenario

    if args.list_scenarios:
        return list_scenarios()
    if args.scenario:
        out = timestamped_out(args)
        return usage_status(PROG, lambda: run_scenario(args.scenario, out, args.quick, args.json))
    return usage_status(PROG, lambda: run_demo(args))


__all__ = ["PROG", "build_parser", "main"]
