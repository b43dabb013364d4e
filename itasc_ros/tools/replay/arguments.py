"""``itasc-replay``'s command line: its options and the checks of what the user gave.

Parameters come from, in this order of precedence: ``--set KEY=VALUE`` (ROS names such as
``constraints.ee.gain=40``), ``--params-file`` (a ROS 2 params file such as config/panda.yaml),
the node's ``~/parameters`` in the bag, the snapshot on
:data:`~itasc_ros.tools.replay.recorded_parameters.PARAMS_TOPIC`. A wrong name gets the closest
valid one (:func:`load_with_overrides`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml

from itasc_ros.cli import (
    CliParser,
    UsageError,
    closest,
    existing_path,
    positive_float,
    writable_dir,
)
from itasc_ros.core import REGISTRY
from itasc_ros.core.control.config import LIVE_KEYS
from itasc_ros.core.errors import ConfigError, ItascError
from itasc_ros.params import config_from_parameters, read_params_file
from itasc_ros.tools.bagio import bag_summary
from itasc_ros.tools.replay.compare import DEFAULT_TOLERANCE
from itasc_ros.tools.replay.node_setup import NodeSetup, load_setup
from itasc_ros.tools.replay.recorded_parameters import NODE_DEFAULTS, bag_parameters
from itasc_ros.tools.replay.tracking import DEFAULT_TRACKING_TOLERANCE_MM


def _add_inputs(p: argparse.ArgumentParser) -> None:
    """The bag, its node's parameters and URDF, the changed parameters."""
    p.add_argument("bag", help="rosbag2 directory (MCAP or sqlite3)")
    p.add_argument(
        "--params-file",
        help="ROS 2 params file of the node (default: the node's parameters in the bag)",
    )
    p.add_argument("--urdf", help="URDF file or bundled robot name (default: from the params)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="change a live parameter, e.g. constraints.ee.gain=40 (repeatable); without "
        "--compare: a what-if replay on an ideal robot",
    )
    p.add_argument("--node-name", default="itasc_node", help="the recorded node's name")
    p.add_argument(
        "--at",
        choices=["commands", "rate"],
        default=None,
        help="bag without a journal: step at each recorded command (default when the bag has "
        "commands) or at control_rate",
    )


def _add_checks(p: argparse.ArgumentParser) -> None:
    """``--compare`` and its tolerances."""
    p.add_argument(
        "--compare",
        action="store_true",
        help="recompute every recorded command from the journal; exit 1 unless all agree",
    )
    p.add_argument(
        "--tolerance",
        type=positive_float,
        default=DEFAULT_TOLERANCE,
        help="largest accepted |recorded - recomputed| per joint [rad/s] (default %(default)g)",
    )
    p.add_argument(
        "--tracking-tolerance",
        type=positive_float,
        default=DEFAULT_TRACKING_TOLERANCE_MM,
        metavar="MM",
        help="--compare: largest accepted difference of the RMS tracking error between the "
        "recorded and the replayed run [mm] (default %(default)g)",
    )


def _add_outputs(p: argparse.ArgumentParser) -> None:
    """Plots, JSON and the ``--online`` run."""
    p.add_argument("--out", help="folder for plots (and the --online bag)")
    p.add_argument("--no-plots", action="store_true", help="write no PNG plots")
    p.add_argument(
        "--json", action="store_true", help="print the results as one JSON object on the last line"
    )
    p.add_argument(
        "--online",
        action="store_true",
        help="republish into a running node over DDS and record its commands and journal",
    )
    p.add_argument(
        "--online-out",
        help="bag to record with --online (default: <out>/online_bag or <bag>_online)",
    )
    p.add_argument(
        "--storage",
        choices=["mcap", "sqlite3"],
        default="mcap",
        help="storage of the --online bag",
    )
    p.add_argument(
        "--speed", type=positive_float, default=1.0, help="--online playback rate factor"
    )
    p.add_argument(
        "--wait", type=positive_float, default=15.0, help="--online: seconds to wait for the node"
    )


def parser() -> argparse.ArgumentParser:
    """The ``itasc-replay`` argument parser (one-line errors, exit status 2)."""
    p = CliParser(
        prog="itasc-replay",
        description="Replay a recorded bag through the iTaSC controller: offline "
        "(exactly, from the node's journal; deterministic, no ROS graph) or --online into a "
        "running node.",
    )
    _add_inputs(p)
    _add_checks(p)
    _add_outputs(p)
    return p


def parse_override(spec: str) -> tuple[str, Any]:
    """``'name=value'`` -> (name, value parsed as YAML: numbers, true/false, lists).

    Raises:
        ConfigError: no '=' or an empty name.
    """
    name, sep, value = spec.partition("=")
    if not sep or not name.strip():
        raise ConfigError(
            f"override {spec!r} must look like 'name=value', e.g. 'constraints.ee.gain=40'"
        )
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        parsed = value
    return name.strip(), parsed


def check_bag(path: str) -> Path:
    """``path`` as a Path if it is a readable rosbag2 bag, else :class:`UsageError`."""
    bag = existing_path(path, "bag")
    try:
        bag_summary(bag)
    except Exception as exc:  # rosbags raises its own errors for what is not a bag
        raise UsageError(
            f"{path!r} is not a rosbag2 bag (a folder with metadata.yaml, or an .mcap / .db3 "
            f"file): {exc}"
        ) from None
    return bag


def check_outputs(args: argparse.Namespace) -> None:
    """``--out`` and ``--online-out``'s folder must be writable, else :class:`UsageError`."""
    if args.out:
        writable_dir(args.out, "--out")
    if args.online_out:
        writable_dir(Path(args.online_out).expanduser().resolve().parent, "--online-out's folder")


def parameter_names(args: argparse.Namespace, bag: Path) -> set[str]:
    """The flat parameter names a ``--set`` may use (for "did you mean")."""
    if args.params_file:
        params = read_params_file(args.params_file, args.node_name)
    else:
        params = (bag_parameters(bag, args.node_name) or ({}, ""))[0]
    names = set(NODE_DEFAULTS) | set(params) | set(LIVE_KEYS)
    try:
        config = config_from_parameters({**NODE_DEFAULTS, **params})
    except ItascError:
        return names
    for c in config.constraints:
        fields = REGISTRY[c.type].FIELDS if c.type in REGISTRY else ()
        names |= {f"constraints.{c.name}.{f.name}" for f in fields}
    return names


def load_with_overrides(
    args: argparse.Namespace, bag: Path, overrides: dict[str, Any]
) -> NodeSetup:
    """The node's setup with ``--set``; a wrong name gets the closest valid one.

    Raises:
        UsageError: a parameter name or value that cannot be used.
    """
    try:
        return load_setup(bag, args.params_file, args.urdf, overrides, args.node_name)
    except ConfigError as exc:
        if not overrides:
            raise
        known = parameter_names(args, bag)
        for name in overrides:
            if name not in known:
                near = closest(name, known)
                hint = f"; did you mean {near!r}?" if near else ""
                raise UsageError(f"--set {name}: unknown parameter{hint} ({exc})") from None
        raise UsageError(f"--set {', '.join(overrides)}: {exc}") from None


__all__ = [
    "check_bag",
    "check_outputs",
    "load_with_overrides",
    "parameter_names",
    "parse_override",
    "parser",
]
