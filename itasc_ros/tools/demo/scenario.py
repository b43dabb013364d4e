"""``itasc-demo --scenario NAME``: one scenario of :mod:`itasc_ros.tools.scenarios`, in-process.

The scenario runs on an ideal robot; its plot ``<NAME>.png`` and metrics ``<NAME>.json`` go to
the output folder, and ``--json`` prints the metrics.
"""

from __future__ import annotations

import sys
from pathlib import Path

from itasc_ros.cli import UsageError, closest, writable_dir
from itasc_ros.core import ItascError
from itasc_ros.tools import scenarios
from itasc_ros.tools.demo.json_output import metrics_line, write_metrics


def run_scenario(name: str, out: Path, quick: bool, as_json: bool) -> int:
    """Run scenario ``name``, write its plot and metrics into ``out``, print its metrics.

    Args:
        name: the scenario.
        out: the output folder (created).
        quick: a shorter run.
        as_json: print the metrics as one JSON line rather than one per line.

    Returns:
        0, or 1 when the scenario cannot run (e.g. example-robot-data is not installed).

    Raises:
        UsageError: an unknown scenario (naming the closest one) or an unwritable ``out``.
    """
    try:
        module = scenarios.load(name)
    except ItascError as exc:
        near = closest(name, scenarios.names())
        raise UsageError(f"{exc}" + (f"; did you mean {near!r}?" if near else "")) from None
    writable_dir(out, "--out")
    try:
        metrics = module.run(out, quick=quick)
    except (ItascError, FileNotFoundError) as exc:  # e.g. example-robot-data not installed
        print(f"itasc-demo: scenario {name}: {exc}", file=sys.stderr)
        return 1
    write_metrics(out / f"{name}.json", metrics)
    if as_json:
        print(metrics_line(metrics))
    else:
        print(f"itasc-demo: scenario {name}: {module.DESCRIPTION}")
        for k, v in metrics.items():
            print(f"  {k}: {v}")
        print(f"Output: {out / (name + '.png')}, {out / (name + '.json')}")
    return 0


def list_scenarios() -> int:
    """``itasc-demo --list-scenarios``: one ``name: description`` line each; returns 0."""
    for name, text in scenarios.descriptions().items():
        print(f"{name}: {text}")
    return 0


__all__ = ["list_scenarios", "run_scenario"]
