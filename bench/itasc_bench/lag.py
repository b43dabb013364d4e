"""``itasc-bench lag``: tracking through velocity servos that lag, beside pink on the same robot.

A real arm follows a velocity command through its own servo (5-30 ms on Franka and UR velocity
interfaces): the feed-forward's lead is lost in the lag. In process, the Panda's circle
(0.1 m at 0.25 m/s, ``config/panda.yaml``'s pose task at 250 Hz, Franka's limits) on
:class:`~itasc_ros.core.scenarios.LaggingRobot` for lags 0, 10, 20 and 30 ms: our controller
without ``actuator_lag`` and with it set to the robot's lag, and pink's differential IK
(``FrameTask`` at the same feedback gain, no target velocity to feed forward) driven through
the same lagging servos. Keys: ``lag`` (per lag: RMS and max error [m] of each) and
``lag_20ms_compensated_ratio`` (the error at 20 ms with the lag told over the error without).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import numpy as np
from numpy.typing import NDArray

from itasc_ros.core import Controller, KinematicTree
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_pose
from itasc_ros.core.scenarios import lagging_circle
from itasc_ros.params import load_config
from itasc_ros.tools.resources import robot_urdf, share_file

from .peers.contract import PeerUnavailable
from .report import print_table

Array = NDArray[np.float64]

LAGS = (0.0, 0.01, 0.02, 0.03)
"""The servos' time constants [s]."""
RATE = 250.0
"""The velocity IK's rate [Hz]."""
TIP = "panda_hand"


def ours(tree: KinematicTree, lag: float) -> Any:
    """Our controller (``config/panda.yaml``, ``actuator_lag`` ``lag``) as a command function."""
    cfg = load_config(share_file("config", "panda.yaml"))
    ctrl = Controller(tree, dataclasses.replace(cfg, actuator_lag=lag, control_rate=RATE))
    names = ctrl.joint_names
    zero = np.zeros(len(names))

    def command(t: float, q: Array, pose: Array, twist: Array) -> Array:
        ctrl.set_joint_state(names, q, t, t)
        quat = spatial.matrix_to_quat(pose[:3, :3])
        ctrl.set_target("ee", "", pose[:3, 3], quat, t, t)
        ctrl.set_target_twist("ee", "", twist, t, t)
        out = ctrl.step(t)
        return out.qdot if out.publish else zero

    return command


def pink_peer(gain: float) -> Any:
    """Pink's differential IK on the same URDF, a hand ``FrameTask`` at feedback gain ``gain``.

    Raises:
        PeerUnavailable: pink or its QP solver is not installed.
    """
    try:
        import pink
        import pinocchio as pin
        import qpsolvers
        from pink.tasks import FrameTask
    except ImportError as exc:
        raise PeerUnavailable(f"pink is not importable: {exc}") from exc
    if "daqp" not in qpsolvers.available_solvers:
        raise PeerUnavailable("pink's QP solver daqp is not installed: pip install daqp")
    model = pin.buildModelFromUrdf(str(robot_urdf("panda")))
    data = model.createData()
    dt = 1.0 / RATE
    task = FrameTask(TIP, position_cost=1.0, orientation_cost=1.0, gain=min(gain * dt, 1.0))

    def command(t: float, q: Array, pose: Array, twist: Array) -> Array:
        del t, twist  # pink takes no target velocity
        conf = pink.Configuration(model, data, q)
        task.set_target(pin.SE3(pose[:3, :3], pose[:3, 3]))
        return np.asarray(pink.solve_ik(conf, [task], dt, solver="daqp"), dtype=float)

    return command


def bench_lag() -> dict[str, Any]:
    """The table: per lag, the RMS and max error [m] of ours (without, with) and pink's."""
    tree = KinematicTree.from_urdf_file(robot_urdf("panda"))
    q0 = home_pose(tree)
    gain = next(c.gain for c in load_config(share_file("config", "panda.yaml")).constraints
                if c.takes_target)  # fmt: skip
    rows: dict[str, Any] = {}
    notes = []
    for lag in LAGS:
        row: dict[str, Any] = {}
        for name, told in (("not_told", 0.0), ("told", lag)):
            r = lagging_circle(tree, TIP, q0, ours(tree, told), lag, RATE)
            row[f"{name}_rms_m"], row[f"{name}_max_m"] = r["rms_error_m"], r["max_error_m"]
        try:
            r = lagging_circle(tree, TIP, q0, pink_peer(gain), lag, RATE)
            row["pink_rms_m"], row["pink_max_m"] = r["rms_error_m"], r["max_error_m"]
        except PeerUnavailable as exc:
            notes = [f"pink: {exc}"]
        rows[f"{lag * 1e3:g}ms"] = row
    if notes:
        rows["notes"] = notes
    return rows


def lag_command(args: argparse.Namespace) -> dict[str, Any]:
    """Run and print ``itasc-bench lag``; the figures for the JSON line."""
    del args
    rows = bench_lag()
    print_table("tracking through lagging servos (circle 0.1 m at 0.25 m/s, 250 Hz) [m]", rows)
    at20 = rows["20ms"]
    return {
        "lag": rows,
        "lag_20ms_compensated_ratio": at20["told_rms_m"] / at20["not_told_rms_m"],
    }


__all__ = ["LAGS", "bench_lag", "lag_command", "ours", "pink_peer"]
