"""Shared test helper: twin Panda controllers whose ticks are compared bit for bit.

A test builds two controllers with :func:`panda_controller`, feeds them the same inputs, makes
one take another path through its tick (the compiled command, the fused tick, the parts) and
compares :func:`tick_state` of both after every tick.

Tests import this module as ``from twin_controllers import panda_controller`` (the test
directory is put on ``sys.path``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from itasc_ros.core import ConstraintConfig, Controller, ControllerConfig, KinematicTree
from itasc_ros.core.control.journal import Journal
from itasc_ros.core.kinematics.home_poses import home_of
from itasc_ros.params import load_config

REPO = Path(__file__).resolve().parents[1]
#: The twins' control rate [Hz].
RATE = 500.0


def panda_controller(
    tree: KinematicTree, limited: bool, aim: bool = True, levels: int = 1
) -> Controller:
    """A pose task on ``panda_hand`` and a joint posture, at :data:`RATE`, with a journal.

    Args:
        tree: the Panda's kinematic tree.
        limited: with Franka's acceleration and jerk limits (config/panda.yaml's
            ``joint_limits``), else the velocity limits only.
        aim: ``aim_ahead``.
        levels: 1: the posture (toward zero, weight 0.1) beside the pose in one level; 2: the
            posture (toward the Panda's home) on a second level, below the pose.
    """
    rest = (
        ConstraintConfig("rest", "joint_value", weight=0.1, priority=1)
        if levels == 1
        else ConstraintConfig("rest", "joint_value", priority=2, values=list(home_of("panda")))
    )
    cfg = ControllerConfig(
        constraints=[ConstraintConfig("ee", "copy_pose", link="panda_hand"), rest],
        control_rate=RATE,
        input_timeout=0.1,
        aim_ahead=aim,
    )
    if limited:
        cfg.joint_limits = load_config(REPO / "config" / "panda.yaml").joint_limits
    c = Controller(tree, cfg)
    c.attach_journal(Journal())
    return c


def tick_state(c: Controller) -> list[np.ndarray]:
    """What a tick changes in ``c``, as arrays (bit-for-bit comparable, NaN included).

    The limiter's command and acceleration, the prediction's rows and scalars, the tasks'
    fractions, the clock, the target streams' packed states and arrays, the pose task's twist.
    """
    lim, pred = c._model.limiter, c._prediction
    return [
        lim.v.copy(), lim.a.copy(), pred.sent.copy(), pred.state.copy(), pred.values.copy(),
        c.following.fraction.copy(), c._clock.copy(), c._inputs.stream_states.copy(),
        c._inputs.stream_arrays.copy(), c.constraint("ee").target_twist,
    ]  # fmt: skip
