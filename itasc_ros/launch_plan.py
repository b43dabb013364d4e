"""What ``launch/itasc.launch.py`` starts, decided from its arguments without the launch libraries.

The launch file is a thin adapter: it declares :data:`ARGUMENTS`, passes the ones the user gave
to :func:`plan_launch` with the package's share directory and a way to find an executable, and
turns the :class:`LaunchPlan` into ``launch_ros`` nodes. Everything that can go wrong (an
unknown robot, a missing file, contradictory arguments, a missing executable) is found here,
before any node starts: either the whole launch is refused with a :class:`LaunchPlanError`, or
an optional part (RViz) is left out with a warning. ROS-free (yaml, xml; ``xacro`` for
``.xacro`` files).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .core.errors import ItascError
from .params import NODE_NAME, read_params_file

PACKAGE = "itasc_ros"
ROBOTS = {"panda": "panda_link0", "ur5": "base_link"}
"""Bundled demo robots -> root link (RViz fixed frame): ``urdf/<robot>.urdf``,
``config/<robot>.yaml``."""
BOOLEANS = ("true", "false")
_BUILD_HINT = "build and source itasc_ros (colcon build --packages-select itasc_ros)"
_RVIZ_HINT = "apt install ros-$ROS_DISTRO-rviz2"


class LaunchPlanError(ItascError):
    """The launch arguments cannot be launched (the message says why and what to do)."""


@dataclass(frozen=True)
class Argument:
    """One launch argument: its name, default, description and valid values (empty: any)."""

    name: str
    default: str
    description: str
    choices: tuple[str, ...] = ()


ARGUMENTS: tuple[Argument, ...] = (
    Argument(
        "robot",
        "panda",
        "bundled demo robot: urdf/<robot>.urdf and config/<robot>.yaml of itasc_ros",
        tuple(ROBOTS),
    ),
    Argument(
        "description_file",
        "",
        "your URDF or xacro file (instead of robot); empty: urdf/<robot>.urdf of itasc_ros",
    ),
    Argument(
        "params_file",
        "",
        "your itasc_node parameters file; empty: config/<robot>.yaml of itasc_ros, or the "
        "node's defaults with description_file",
    ),
    Argument(
        "start_rsp",
        "true",
        "start robot_state_publisher with the URDF; false: itasc_node reads the URDF from the "
        "running robot_state_publisher's robot_description topic, none is started",
        BOOLEANS,
    ),
    Argument(
        "use_sim",
        "false",
        "also start itasc_sim_robot (a simulated velocity-controlled robot); false on a real "
        "robot whose ros2_control runs a JointGroupVelocityController",
        BOOLEANS,
    ),
    Argument(
        "rviz",
        "false",
        "start rviz2 with rviz/itasc.rviz (robot, markers, interactive target); skipped with a "
        "warning when rviz2 is not installed",
        BOOLEANS,
    ),
)
DEFAULTS = {a.name: a.default for a in ARGUMENTS}


@dataclass(frozen=True)
class Arguments:
    """The launch arguments, checked and typed.

    Attributes:
        robot: bundled robot (always set; its files are used where no file is given).
        description_file: the user's URDF or xacro file, or None (the bundled one).
        params_file: the user's params file, or None.
        start_rsp: start robot_state_publisher (False: the URDF comes from its topic).
        use_sim: start itasc_sim_robot.
        rviz: start rviz2.
    """

    robot: str
    description_file: Path | None
    params_file: Path | None
    start_rsp: bool
    use_sim: bool
    rviz: bool


@dataclass(frozen=True)
class NodeSpec:
    """A node to start, as ``launch_ros.actions.Node`` takes it.

    Attributes:
        package: ROS package of the executable.
        executable: executable name (``lib/<package>/<executable>``).
        name: node name.
        parameters: params files (paths) and parameter dicts, in order (later ones win).
        arguments: command-line arguments.
        optional: when its executable is missing the node is skipped with a warning instead
            of refusing the whole launch.
        missing_hint: what to do when its executable is missing.
    """

    package: str
    executable: str
    name: str
    parameters: tuple[str | dict[str, Any], ...] = ()
    arguments: tuple[str, ...] = ()
    optional: bool = False
    missing_hint: str = ""


@dataclass(frozen=True)
class LaunchPlan:
    """What to start.

    Attributes:
        urdf: the URDF XML given to the nodes as their ``robot_description`` parameter; None:
            itasc_node reads the running robot_state_publisher's ``robot_description`` topic.
        urdf_source: where the URDF comes from, for the log.
        params_files: itasc_node's params files.
        nodes: the nodes to start, every executable present.
        skipped: optional nodes left out because their executable is missing.
        warnings: what the launch should log as warnings.
    """

    urdf: str | None
    urdf_source: str
    params_files: tuple[str, ...]
    nodes: tuple[NodeSpec, ...]
    skipped: tuple[NodeSpec, ...] = ()
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def summary(self) -> str:
        """One line: the URDF source, the params files and the nodes started."""
        files = ", ".join(self.params_files) or "none (the node's defaults)"
        names = ", ".join(n.name for n in self.nodes)
        return f"URDF: {self.urdf_source}; itasc_node params files: {files}; nodes: {names}"


def _flag(name: str, value: str) -> bool:
    """A boolean launch argument: 'true' or 'false' (any case)."""
    v = value.strip().lower()
    if v not in BOOLEANS:
        raise LaunchPlanError(f"{name}:={value!r} is not a boolean; use {name}:=true or false")
    return v == "true"


def _existing_file(name: str, value: str) -> Path | None:
    """The file a launch argument names (``~`` expanded), None when empty."""
    if not value.strip():
        return None
    path = Path(value.strip()).expanduser()
    if not path.is_file():
        raise LaunchPlanError(f"{name}:={value!r}: no such file")
    return path


def parse_arguments(given: Mapping[str, str]) -> Arguments:
    """Check the arguments the user gave (``name -> value``); the others take their defaults.

    Raises:
        LaunchPlanError: an unknown argument, robot or boolean; a missing file; or arguments
            that contradict each other (naming what to drop).
    """
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise LaunchPlanError(
            f"unknown launch arguments {unknown}; arguments are: {list(DEFAULTS)}"
        )
    v = {**DEFAULTS, **given}
    if v["robot"] not in ROBOTS:
        raise LaunchPlanError(f"unknown robot {v['robot']!r}; bundled robots are: {list(ROBOTS)}")
    args = Arguments(
        robot=v["robot"],
        description_file=_existing_file("description_file", v["description_file"]),
        params_file=_existing_file("params_file", v["params_file"]),
        start_rsp=_flag("start_rsp", v["start_rsp"]),
        use_sim=_flag("use_sim", v["use_sim"]),
        rviz=_flag("rviz", v["rviz"]),
    )
    _check_consistent(args, robot_given="robot" in given)
    return args


def _check_consistent(args: Arguments, robot_given: bool) -> None:
    """Refuse arguments that ask for two different things.

    Raises:
        LaunchPlanError: naming the arguments and what to drop.
    """
    if args.description_file and robot_given:
        raise LaunchPlanError(
            "give either robot:= (a bundled robot) or description_file:= (your URDF), not both"
        )
    if not args.start_rsp and args.description_file:
        raise LaunchPlanError(
            "start_rsp:=false takes the URDF from the running robot_state_publisher; drop "
            "description_file:=, or start_rsp:=true to publish that file"
        )
    if not args.start_rsp and args.use_sim:
        raise LaunchPlanError(
            "use_sim:=true needs the URDF at launch (itasc_sim_robot does not read the "
            "robot_description topic); drop start_rsp:=false"
        )


def read_description(path: Path) -> str:
    """The URDF XML of a URDF file, or of a xacro file (``*.xacro``, processed by ``xacro``).

    Raises:
        LaunchPlanError: unreadable file, xacro not installed or failing.
    """
    if path.suffix != ".xacro":
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise LaunchPlanError(f"cannot read description_file {str(path)!r}: {exc}") from exc
    try:
        import xacro  # type: ignore[import-untyped,unused-ignore]
    except ImportError as exc:
        raise LaunchPlanError(
            f"description_file {str(path)!r} is a xacro file and xacro is not installed "
            "(pip install xacro, or apt install ros-$ROS_DISTRO-xacro)"
        ) from exc
    try:
        return str(xacro.process_file(str(path)).toprettyxml(indent="  "))
    except Exception as exc:  # xacro raises its own and XML errors, all reported the same way
        raise LaunchPlanError(f"xacro cannot process {str(path)!r}: {exc}") from exc


def root_link(urdf: str, default: str) -> str:
    """The URDF's root link (the link no joint has as child), else ``default``.

    Raises:
        LaunchPlanError: the text is not well-formed XML.
    """
    try:
        robot = ET.fromstring(urdf)
    except ET.ParseError as exc:
        raise LaunchPlanError(f"the URDF is not well-formed XML: {exc}") from exc
    links = [link.get("name") for link in robot.findall("link")]
    children = {c.get("link") for c in robot.findall("joint/child")}
    roots = [name for name in links if name and name not in children]
    return roots[0] if len(roots) == 1 else default


def _urdf(args: Arguments, share: Path) -> tuple[str | None, str]:
    """The URDF XML given to the nodes (None: from the topic) and where it comes from."""
    if not args.start_rsp:
        return None, "the running robot_state_publisher's robot_description topic"
    path = args.description_file or share / "urdf" / f"{args.robot}.urdf"
    return read_description(path), str(path)


def _params(args: Arguments, share: Path) -> tuple[tuple[str, ...], dict[str, Any], str]:
    """itasc_node's params files, their parameters as itasc_node reads them, and a warning.

    Raises:
        ConfigError: a params file without a section for itasc_node.
    """
    if args.params_file:
        path = args.params_file
    elif args.description_file:
        return (
            (),
            {},
            (
                "no params_file: itasc_node runs with its defaults (every movable joint, one "
                "copy_pose constraint on the URDF's tip link)"
            ),
        )
    else:
        path = share / "config" / f"{args.robot}.yaml"
    return (str(path),), read_params_file(path, NODE_NAME), ""


def _sim_parameters(urdf: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """itasc_sim_robot's parameters: the URDF, and itasc_node's joints and command output."""
    out: dict[str, Any] = {"robot_description": urdf}
    if params.get("joints"):
        out["joints"] = list(params["joints"])
    if params.get("command_out_type"):
        out["command_type"] = str(params["command_out_type"])
    if params.get("command_out_topic"):
        out["command_topic"] = str(params["command_out_topic"])
    return out


def _rsp_node(urdf: str) -> NodeSpec:
    """robot_state_publisher publishing ``urdf`` (TF and the robot_description topic)."""
    return NodeSpec(
        "robot_state_publisher",
        "robot_state_publisher",
        "robot_state_publisher",
        ({"robot_description": urdf},),
        missing_hint="install it (apt install ros-$ROS_DISTRO-robot-state-publisher), or use "
        "start_rsp:=false next to the robot_state_publisher that already runs",
    )


def _rviz_node(args: Arguments, share: Path, urdf: str | None) -> NodeSpec:
    """rviz2 with rviz/itasc.rviz, its fixed frame the URDF's root link."""
    frame = root_link(urdf, ROBOTS[args.robot]) if urdf is not None else ROBOTS[args.robot]
    rviz_args = ("-d", str(share / "rviz" / "itasc.rviz"), "-f", frame)
    return NodeSpec(
        "rviz2", "rviz2", "rviz2", (), rviz_args, optional=True, missing_hint=_RVIZ_HINT
    )


def _nodes(
    args: Arguments, share: Path, urdf: str | None, files: tuple[str, ...], params: dict[str, Any]
) -> list[NodeSpec]:
    """Every node the arguments ask for, in start order.

    The URDF is a parameter of each node that takes it (a dict, never a global parameter);
    without it itasc_node reads the robot_description topic.
    """
    nodes = [_rsp_node(urdf)] if urdf is not None else []
    description = () if urdf is None else ({"robot_description": urdf},)
    nodes.append(
        NodeSpec(
            PACKAGE, "itasc_node", NODE_NAME, (*files, *description), missing_hint=_BUILD_HINT
        )
    )
    if args.use_sim and urdf is not None:
        sim = (_sim_parameters(urdf, params),)
        nodes.append(
            NodeSpec(PACKAGE, "itasc_sim_robot", "itasc_sim_robot", sim, missing_hint=_BUILD_HINT)
        )
    if args.rviz:
        nodes.append(_rviz_node(args, share, urdf))
    return nodes


def executable_exists(package: str, executable: str) -> bool:
    """Whether ``lib/<package>/<executable>`` of an installed ROS package exists.

    That is where ``ros2 run`` and ``launch_ros`` look. False without ``ament_index_python``
    or an ament prefix path.
    """
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_prefix
    except ImportError:
        return False
    try:
        prefix = get_package_prefix(package)
    except (PackageNotFoundError, ValueError, OSError):  # OSError: no AMENT_PREFIX_PATH
        return False
    return os.access(Path(prefix) / "lib" / package / executable, os.X_OK)


def check_executables(
    nodes: list[NodeSpec], executable_exists: Callable[[str, str], bool]
) -> tuple[tuple[NodeSpec, ...], tuple[NodeSpec, ...], tuple[str, ...]]:
    """Split the nodes into those to start and the optional ones whose executable is missing.

    Args:
        nodes: the nodes asked for.
        executable_exists: ``(package, executable) -> bool``, e.g. ``lib/<package>/<executable>``
            under ``ament_index_python.get_package_prefix(package)``.

    Returns:
        (nodes to start, skipped optional nodes, a warning for each skipped one).

    Raises:
        LaunchPlanError: a required executable is missing (every one named, with what to do).
    """
    missing = [n for n in nodes if not executable_exists(n.package, n.executable)]
    required = [n for n in missing if not n.optional]
    if required:
        lines = [
            f"{n.package}/{n.executable} is not installed: {n.missing_hint}" for n in required
        ]
        raise LaunchPlanError("nothing started: " + "; ".join(lines))
    warnings = tuple(
        f"{n.package}/{n.executable} is not installed: {n.name} skipped ({n.missing_hint})"
        for n in missing
    )
    started = tuple(n for n in nodes if n not in missing)
    return started, tuple(missing), warnings


def plan_launch(
    given: Mapping[str, str], share: Path, executable_exists: Callable[[str, str], bool]
) -> LaunchPlan:
    """The launch's decisions: which URDF, which parameters, which nodes.

    Args:
        given: the launch arguments the user gave (``name -> value``); the others take their
            defaults (:data:`ARGUMENTS`).
        share: the package's share directory (``urdf/``, ``config/``, ``rviz/``).
        executable_exists: ``(package, executable) -> bool``.

    Raises:
        LaunchPlanError: bad arguments or a missing required executable; nothing must start.
        ConfigError: a params file without a section for itasc_node.
    """
    args = parse_arguments(given)
    urdf, source = _urdf(args, share)
    files, params, note = _params(args, share)
    nodes, skipped, warnings = check_executables(
        _nodes(args, share, urdf, files, params), executable_exists
    )
    notes = (note,) if note else ()
    return LaunchPlan(urdf, source, files, nodes, skipped, (*notes, *warnings))


__all__ = [
    "ARGUMENTS",
    "DEFAULTS",
    "PACKAGE",
    "ROBOTS",
    "Argument",
    "Arguments",
    "LaunchPlan",
    "LaunchPlanError",
    "NodeSpec",
    "check_executables",
    "executable_exists",
    "parse_arguments",
    "plan_launch",
    "read_description",
    "root_link",
]
