"""Import path kept for callers of the replay's node setup.

The names live in :mod:`~itasc_ros.tools.replay.node_setup`,
:mod:`~itasc_ros.tools.replay.recorded_parameters` and :mod:`~itasc_ros.tools.replay.errors`
(all re-exported by :mod:`itasc_ros.tools.replay`).
"""

from __future__ import annotations

from itasc_ros.tools.replay.errors import ReplayError
from itasc_ros.tools.replay.node_setup import NodeSetup, load_setup
from itasc_ros.tools.replay.recorded_parameters import (
    NODE_DEFAULTS,
    PARAMETER_EVENTS_TOPIC,
    PARAMS_TOPIC,
    bag_parameters,
    is_live_parameter,
    node_parameters,
    parameter_value,
    parameters_snapshot_msg,
    write_parameters_snapshot,
)

__all__ = [
    "NODE_DEFAULTS",
    "PARAMETER_EVENTS_TOPIC",
    "PARAMS_TOPIC",
    "NodeSetup",
    "ReplayError",
    "bag_parameters",
    "is_live_parameter",
    "load_setup",
    "node_parameters",
    "parameter_value",
    "parameters_snapshot_msg",
    "write_parameters_snapshot",
]
