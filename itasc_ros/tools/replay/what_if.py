"""What-if: the recorded run against a re-computed one with changed live parameters.

``--set NAME=VALUE`` without ``--compare``, on a bag with a journal: the recorded targets,
times and events drive an ideal robot (it follows the commands exactly) with the changed
parameters; the figures of both runs are printed side by side, and ``--out`` plots the recorded
run against the re-computed one (tracking error, joint velocities), to tune on a bag rather
than on the robot.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from itasc_ros.tools.replay.journal_playback import play_journal, setup_joints, ticks_result
from itasc_ros.tools.replay.metrics import replay_metrics
from itasc_ros.tools.replay.node_setup import load_setup
from itasc_ros.tools.replay.plots import write_what_if_plots
from itasc_ros.tools.replay.report import side_by_side
from itasc_ros.tools.replay.result import ReplayResult


def what_if(
    args: argparse.Namespace,
    bag: Path,
    result: ReplayResult,
    overrides: Mapping[str, Any],
    summary: dict[str, Any],
) -> list[Path]:
    """Print the recorded run's figures beside the what-if run's; write the what-if plots.

    Args:
        args: the command line (``params_file``, ``urdf``, ``node_name``, ``out``,
            ``no_plots``).
        bag: the recorded bag.
        result: the what-if run (the journal played back with ``overrides`` on an ideal robot).
        overrides: the changed live parameters.
        summary: the JSON summary; gets the recorded run's figures (``recorded``).

    Returns:
        The plots written (none without ``--out``, with ``--no-plots`` or without a journal).
    """
    base = load_setup(bag, args.params_file, args.urdf, None, args.node_name)
    recorded_pb = play_journal(bag, base, any_urdf=args.urdf is not None)
    if recorded_pb is None:
        return []
    rec = ticks_result(recorded_pb, setup_joints(base, recorded_pb))
    summary["recorded"] = replay_metrics(rec)
    change = ", ".join(f"{k}={v}" for k, v in overrides.items())
    print(side_by_side(rec, result, "recorded", f"what-if ({change})"))
    if args.out and not args.no_plots:
        return write_what_if_plots(rec, result, overrides, args.out)
    return []


__all__ = ["what_if"]
