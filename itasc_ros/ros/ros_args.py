"""A console script's ``--ros-args`` read before ``rclpy.init``: mistakes become one line.

:func:`non_ros_args` strips the ROS arguments (as ``rclpy.utilities.remove_ros_args``) and
turns rcl's parse errors into a :class:`~itasc_ros.cli.UsageError` naming the valid flags;
:func:`check_params_files` checks that each ``--params-file`` exists;
:func:`param_overrides` reads the ``-p name:=value`` pairs meant for one node, so that a script
can check them before it starts DDS. Neither needs an rclpy context.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import yaml
from rclpy.utilities import remove_ros_args

from ..cli import UsageError, existing_file, unknown_choice
from .rclpy_compat import RCLError, RCLInvalidROSArgsError, UnknownROSArgsError

#: The flags that ``--ros-args`` accepts (rcl's).
ROS_FLAGS: tuple[str, ...] = (
    "-r",
    "--remap",
    "-p",
    "--param",
    "--params-file",
    "-e",
    "--enclave",
    "--log-level",
    "--log-config-file",
    "--log-file-name",
    "--enable-rosout-logs",
    "--disable-rosout-logs",
    "--enable-stdout-logs",
    "--disable-stdout-logs",
    "--enable-external-lib-logs",
    "--disable-external-lib-logs",
)


def non_ros_args(argv: Sequence[str]) -> list[str]:
    """``argv`` without its ROS arguments (``argv[0]`` kept).

    Raises:
        UsageError: a missing ``--params-file``, a malformed ``--ros-args`` section (unknown
            flag, bad remap or parameter), naming the valid flags.
    """
    check_params_files(argv)  # rcl's own message for a missing file names no file
    try:
        return list(remove_ros_args(list(argv)))
    except UnknownROSArgsError as exc:
        bad = re.findall(r"'([^']*)'", str(exc)) or [str(exc)]  # rcl gives "['--a', '-b']"
        raise UsageError(unknown_choice("ROS argument", bad[0], ROS_FLAGS)) from None
    except (RCLInvalidROSArgsError, RCLError) as exc:
        raise UsageError(f"bad --ros-args: {_rcl_reason(str(exc))}") from None


def check_params_files(argv: Sequence[str]) -> None:
    """Each ``--params-file`` of the command line names a readable file.

    Raises:
        UsageError: naming the file (and the closest existing one).
    """
    items = list(argv)
    for i, arg in enumerate(items[:-1]):
        if arg == "--params-file":
            existing_file(items[i + 1], "params file")


def _rcl_reason(message: str) -> str:
    """The error message of rcl without its source locations."""
    reason = message.split(". Error:")[0]
    reason = re.sub(r"^Failed to parse ROS arguments: ", "", reason)
    return reason.split(", at /")[0].strip()


def param_overrides(argv: Sequence[str], node_name: str) -> dict[str, object]:
    """The ``-p`` / ``--param`` ``name:=value`` pairs of ``argv`` for node ``node_name``.

    Values are parsed as rcl parses them (YAML). Pairs prefixed with another node's name
    (``other:name:=value``) are left out; ``--params-file`` files are not read.

    Raises:
        UsageError: a pair without ``:=``.
    """
    out: dict[str, object] = {}
    for pair in _param_pairs(argv):
        name, sep, text = pair.partition(":=")
        if not sep or not name:
            raise UsageError(f"-p {pair!r}: a parameter is given as -p name:=value")
        node, colon, param = name.rpartition(":")
        if colon and node.lstrip("/") not in (node_name, "*", "**"):
            continue
        try:
            out[param] = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError:
            out[param] = text
    return out


def ros_flag_values(argv: Sequence[str], flags: Sequence[str]) -> list[str]:
    """The values that follow any of ``flags`` inside the ``--ros-args`` of ``argv``, in order."""
    values: list[str] = []
    in_ros = False
    items = list(argv)
    for i, arg in enumerate(items):
        if arg == "--ros-args":
            in_ros = True
        elif arg == "--":
            in_ros = False
        elif in_ros and arg in flags and i + 1 < len(items):
            values.append(items[i + 1])
    return values


def _param_pairs(argv: Sequence[str]) -> list[str]:
    return ros_flag_values(argv, ("-p", "--param"))


__all__ = [
    "ROS_FLAGS",
    "check_params_files",
    "non_ros_args",
    "param_overrides",
    "ros_flag_values",
]
