"""``itasc_sim_robot``: a simulated velocity-controlled robot for demos, tests and benchmarks.

One concept a module: :mod:`.joints` (the integrator within the URDF limits, ROS-free),
:mod:`.commands` (each command message -> joint velocities), :mod:`.parameters` (the ROS
parameters and the URDF they name), :mod:`.overrides` (the command line checked before DDS
starts), :mod:`.node` (the node) and :mod:`.cli` (the console script, whose ``--help`` says
what the simulator does). ``python -m itasc_ros.tools.sim_robot`` runs the console script.
"""

from .cli import PROG, main
from .commands import (
    COMMAND_TYPES,
    DEFAULT_COMMAND_TOPIC,
    TYPE_DEFAULT_TOPICS,
    velocity_from_joint_state,
    velocity_from_multi_array,
    velocity_from_trajectory,
)
from .joints import CommandRejectedError, SimStats, SimulatedJoints
from .node import MAX_LAG_PERIODS, WARN_PERIOD, SimRobotNode
from .overrides import check_overrides
from .parameters import NODE_BUILTIN_PARAMETERS, PARAMETERS, SimParam, load_urdf_file

__all__ = [
    "COMMAND_TYPES",
    "DEFAULT_COMMAND_TOPIC",
    "MAX_LAG_PERIODS",
    "NODE_BUILTIN_PARAMETERS",
    "PARAMETERS",
    "PROG",
    "TYPE_DEFAULT_TOPICS",
    "WARN_PERIOD",
    "CommandRejectedError",
    "SimParam",
    "SimRobotNode",
    "SimStats",
    "SimulatedJoints",
    "check_overrides",
    "load_urdf_file",
    "main",
    "velocity_from_joint_state",
    "velocity_from_multi_array",
    "velocity_from_trajectory",
]
