"""What a replay computed, step by step (:class:`ReplayResult`): the input of metrics and plots."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


@dataclass
class ReplayResult:
    """Per-step outputs of an offline replay (k steps, n joints).

    Attributes:
        joint_names: (n,) command order.
        t: (k,) step times (bag time [s]).
        recorded: (k, n) recorded commands [rad/s] (NaN rows: none at that step).
        recomputed: (k, n) the replay's commands [rad/s] (zeros unless active).
        status: (k,) controller status per step.
        sigma_min: (k,) smallest singular value (NaN when no solve).
        damping: (k,) damping lambda (NaN when no solve).
        velocity_scale: (k,) scale applied for velocity limits (NaN when no solve).
        followed: (k,) the smallest fraction of a task's asked velocity the command gave (NaN:
            no task judged; :class:`~itasc_ros.core.control.following.Following`).
        locked: (k,) number of joints locked at a position limit.
        position_error: (k,) |target - effector| of the first pose constraint [m] (NaN if none).
        rotation_error: (k,) rotation angle between them [rad].
        q: (k, n) joint positions used [rad].
        velocity_limits: (n,) [rad/s].
        damping_epsilon: the config's damping_epsilon per step (k,).
        rejections: inputs the controller rejected; rejection_reasons: the first few reasons.
        parameter_changes: (time [s], changes) applied; ignored_parameters: names not live.
        inputs: counts of joint states, poses, twists, commands, parameter changes.
    """

    joint_names: list[str]
    t: Array
    recorded: Array
    recomputed: Array
    status: list[str]
    sigma_min: Array
    damping: Array
    velocity_scale: Array
    followed: Array
    locked: NDArray[np.int64]
    position_error: Array
    rotation_error: Array
    q: Array
    velocity_limits: Array
    damping_epsilon: Array
    rejections: int = 0
    rejection_reasons: list[str] = field(default_factory=list)
    parameter_changes: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    ignored_parameters: list[str] = field(default_factory=list)
    inputs: dict[str, int] = field(default_factory=dict)


__all__ = ["ReplayResult"]
