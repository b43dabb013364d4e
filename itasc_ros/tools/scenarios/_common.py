"""What the scenarios share: the ideal robot, their params files, JSON-ready metrics."""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...core.control.config import ControllerConfig
from ...core.control.controller import Controller, StepOutput
from ...params import load_config
from ..resources import share_file

Array = NDArray[np.float64]


def scenario_config(params_file: str) -> ControllerConfig:
    """The controller configuration of ``config/<params_file>`` (a ROS 2 params file)."""
    return load_config(share_file("config", params_file))


def without(config: ControllerConfig, drop: Sequence[str]) -> ControllerConfig:
    """A copy of ``config`` without the constraints named in ``drop``."""
    cfg = copy.deepcopy(config)
    cfg.constraints = [c for c in cfg.constraints if c.name not in drop]
    return cfg.validate()


class IdealRobot:
    """A robot that does exactly what it is told: ``q += q' dt`` after every tick.

    Args:
        controller: the controller (its period is the tick).
        names: every joint the joint states carry (commanded and held ones).
        q: (len(names),) the initial positions [rad or m].
    """

    def __init__(self, controller: Controller, names: Sequence[str], q: ArrayLike) -> None:
        self.controller = controller
        self.names = list(names)
        self.q = np.array(q, dtype=float)
        self._cmd = np.array([self.names.index(j) for j in controller.joint_names])
        self.t = 0.0

    @property
    def dt(self) -> float:
        """The control period [s]."""
        return self.controller.period

    def sense(self) -> None:
        """Give the controller the joint state (before targets that start from the effector)."""
        self.controller.set_joint_state(self.names, self.q, self.t)

    def tick(self) -> StepOutput:
        """Run one controller tick on the last joint state and integrate its command."""
        c = self.controller
        out = c.step(self.t)
        if out.publish:
            self.q[self._cmd] += out.qdot * self.dt
        self.t += self.dt
        return out


def set_pose_target(c: Controller, name: str, pose: Array, t: float) -> None:
    """Give constraint ``name`` the target ``pose`` (4, 4) in the root frame at time ``t``."""
    from ...core.kinematics import spatial

    c.set_target(name, "", pose[:3, 3], spatial.matrix_to_quat(pose[:3, :3]), t)


def json_ready(obj: Any) -> Any:
    """``obj`` with numpy numbers as Python numbers and NaN/Inf as None."""
    if isinstance(obj, dict):
        return {str(k): json_ready(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_ready(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_ready(obj.tolist())
    if isinstance(obj, np.bool_ | bool):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating | float):
        v = float(obj)
        return v if math.isfinite(v) else None
    return obj


__all__ = ["IdealRobot", "json_ready", "scenario_config", "set_pose_target", "without"]
