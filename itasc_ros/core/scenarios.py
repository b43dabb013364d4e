"""Closed-loop scenarios of the core solver, shared by the tests, the benchmark and the demo.

Each scenario integrates ``q += q' dt`` (a perfect velocity-controlled robot) with a
:class:`~itasc_ros.core.solve.Scene` and returns plain numbers, so that every caller reports
the same figures for the same parameters; :class:`LaggingRobot` and :func:`lagging_circle`
put a robot whose velocity servos lag under any velocity IK (the controller, a peer).
ROS-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .constraints import CopyPose
from .errors import ConfigurationError
from .kinematics.tree import KinematicTree
from .paths import PLANES, SHAPES, path_point
from .solve.scene import Scene

Array = NDArray[np.float64]


def circle_tracking(
    robot_tree: KinematicTree,
    tip: str,
    home_q: ArrayLike,
    feedforward: bool,
    radius: float = 0.1,
    speed: float = 0.25,
    gain: float = 20.0,
    dt: float = 0.002,
    duration: float = 4.0,
    shape: str = "circle",
    *,
    plane: str = "yz",
    settle: float | None = None,
    solver: str = "dls",
) -> dict[str, Any]:
    """Track a target moving on a circle (or a figure eight) around the home tip position.

    The target's orientation is the home orientation of ``tip``; its position runs on the path
    of :func:`path_point` centred at the home tip position (so it starts ``radius`` away from
    the tip). Every tick ``k`` (time ``t = k dt``) the target pose and its twist
    ``(v(t), 0)`` are given with ``CopyPose.set_target(pose, twist)``; the constraint is built
    with ``feedforward=feedforward``, so the only difference between the two runs is whether
    ``B Xu'`` enters the solve. The robot follows ``q += q' dt`` exactly.

    Without feed-forward the steady-state lag of a first-order loop is
    ``speed / sqrt(gain^2 + omega^2)`` (~ ``speed / gain``, 12.4 mm for the defaults); with it
    only the discretisation error remains (~ ``speed * omega * dt / gain``).

    Args:
        robot_tree: the robot (its active joints are driven).
        tip: effector link.
        home_q: (n,) start configuration [rad or m].
        feedforward: feed the target twist forward (``B Xu'``) or not.
        radius: path radius [m].
        speed: path speed [m/s] (angular rate ``speed / radius``).
        gain: feedback gain K [1/s].
        dt: control period [s].
        duration: run time [s].
        shape: 'circle' or 'figure8'.
        plane: plane of the root frame of the path: 'yz' (default), 'xy' or 'xz'.
        settle: time [s] after which the error counts as steady state (default duration / 2).
        solver: 'dls' or 'sdls'.

    Returns:
        A dict of plain numbers: ``rms_error_m`` and ``max_error_m`` (position error over the
        steady-state window), ``rms_rotation_error_rad``, ``max_joint_speed`` [rad/s] and
        ``max_joint_speed_ratio`` (max of |q'_i| / velocity limit, whole run),
        ``max_joint_accel`` [rad/s^2] (largest |delta q'| / dt after the first tick),
        ``expected_lag_m`` (feedback-only lag on the circle, ``speed / sqrt(gain^2 +
        omega^2)``), ``min_sigma``, ``ticks``,
        ``feedforward``, ``shape``, ``radius_m``, ``speed_m_s``, ``gain``, ``dt_s``,
        ``duration_s``, ``settle_s``.

    Raises:
        ConfigurationError: an unknown shape or plane, or non-positive numbers.
    """
    if shape not in SHAPES:
        raise ConfigurationError(f"unknown shape {shape!r}; shapes are: {', '.join(SHAPES)}")
    if plane not in PLANES:
        raise ConfigurationError(f"unknown plane {plane!r}; planes are: {', '.join(PLANES)}")
    for name, val in (("radius", radius), ("speed", speed), ("dt", dt), ("duration", duration)):
        if not (math.isfinite(val) and val > 0.0):
            raise ConfigurationError(f"{name} must be a finite number > 0, got {val!r}")
    settle_s = 0.5 * duration if settle is None else float(settle)
    if not (0.0 <= settle_s < duration):
        raise ConfigurationError(f"settle must be in [0, duration), got {settle!r}")

    q = np.array(home_q, dtype=float)  # (n,)
    home = robot_tree.forward_kinematics(q, tip)  # (4, 4)
    center = home[:3, 3].copy()
    c = CopyPose("track", tip, gain=gain, feedforward=feedforward)
    scene = Scene(robot_tree, [c], solver=solver)
    vlim = scene.velocity_limits  # (n,)
    pose = home.copy()  # (4, 4)
    twist = np.zeros(6)  # (6,) v [m/s], w [rad/s]
    qdot_prev = np.zeros_like(q)
    n_ticks = round(duration / dt)
    first_ss = math.ceil(settle_s / dt)
    sq_pos = 0.0
    sq_rot = 0.0
    n_ss = 0
    max_err = 0.0
    max_speed = 0.0
    max_ratio = 0.0
    max_accel = 0.0
    min_sigma = math.inf
    for k in range(n_ticks):
        p, v = path_point(k * dt, center, radius, speed, shape, plane)
        pose[:3, 3] = p
        twist[:3] = v
        c.set_target(pose, twist)
        res = scene.solve(q, dt)
        pos_err, rot_err = c.pose_errors()  # at q, before this tick's motion
        if k >= first_ss:
            sq_pos += pos_err * pos_err
            sq_rot += rot_err * rot_err
            n_ss += 1
            max_err = max(max_err, pos_err)
        qd = res.qdot
        max_speed = max(max_speed, float(np.max(np.abs(qd))))
        max_ratio = max(max_ratio, float(np.max(np.abs(qd) / vlim)))
        if k > 0:
            max_accel = max(max_accel, float(np.max(np.abs(qd - qdot_prev))) / dt)
        min_sigma = min(min_sigma, res.sigma_min)
        qdot_prev[:] = qd
        q += qd * dt
    omega = speed / radius
    return {
        "rms_error_m": math.sqrt(sq_pos / max(n_ss, 1)),
        "max_error_m": max_err,
        "rms_rotation_error_rad": math.sqrt(sq_rot / max(n_ss, 1)),
        "max_joint_speed": max_speed,
        "max_joint_speed_ratio": max_ratio,
        "max_joint_accel": max_accel,
        "expected_lag_m": speed / math.hypot(gain, omega),
        "min_sigma": min_sigma,
        "ticks": n_ticks,
        "feedforward": bool(feedforward),
        "shape": shape,
        "radius_m": float(radius),
        "speed_m_s": float(speed),
        "gain": float(gain),
        "dt_s": float(dt),
        "duration_s": float(duration),
        "settle_s": settle_s,
    }


HOSTILE_KINDS = ("pose", "twist", "jump")
"""Kinds of :class:`HostileInput`."""


@dataclass(frozen=True)
class HostileInput:
    """One bad input slipped into a good target stream.

    Attributes:
        t: when it arrives [s].
        kind: 'pose' (a target position, e.g. a perception glitch), 'twist' (an explicit
            target twist) or 'jump' (the good pose of that moment flagged as a jump, as the RViz
            marker's snap does).
        value: 'pose': (3,) position [m] in the root frame; 'twist': (6,) [m/s, rad/s];
            'jump': unused.
    """

    t: float
    kind: str
    value: tuple[float, ...] = ()


def stream_with_hostile_inputs(
    tree: KinematicTree,
    config: Any,
    home_q: ArrayLike,
    hostile: list[HostileInput],
    duration: float = 6.0,
    stream_rate: float = 50.0,
    radius: float = 0.1,
    speed: float = 0.25,
) -> dict[str, Any]:
    """A good target stream on a circle, with and without hostile inputs: where the robot goes.

    Two closed loops of a :class:`~itasc_ros.core.control.Controller` (the node's core),
    ``q += q' dt`` at ``config.control_rate``, the joint state given every tick: one fed the
    good stream only, one fed the same stream plus ``hostile``. The good stream is the first
    constraint's target on the circle of :func:`path_point` around the home effector pose, at
    ``stream_rate``, stamped with the simulated time. The deviation is the distance between the
    two effectors at the same instant.

    Args:
        tree: the robot.
        config: a ``ControllerConfig`` whose first constraint is a copy_pose with a target.
        home_q: (n,) start configuration, in the controller's joint order [rad or m].
        hostile: the bad inputs; rejected ones are counted, not raised.
        duration: run time [s].
        stream_rate: rate of the good poses [Hz].
        radius: circle radius [m].
        speed: target speed on the circle [m/s].

    Returns:
        Plain numbers and lists: ``t`` [s] and ``deviation_m`` per tick; ``max_deviation_m``;
        ``recovery_s`` (time from the last hostile input until the deviation stays below 1 mm,
        ``inf`` if it never does); ``deviation_at_m`` {'1s', '3s', '5s' after the last hostile
        input}; ``max_feedforward_m_s`` / ``max_feedforward_rad_s`` (largest fed-forward target
        twist, hostile run; NaN when the controller does not report it); ``rejected`` (hostile
        inputs refused); ``jumps`` (poses read as jumps).
    """
    from .control.controller import Controller  # the controller imports the scene, not this module
    from .errors import InputError
    from .kinematics.spatial import matrix_to_quat

    def run(events: list[HostileInput]) -> tuple[Array, dict[str, Any]]:
        ctrl = Controller(tree, config)
        name = ctrl.pose_constraints[0]
        tip = ctrl.config.constraint(name).link
        q = np.array(home_q, dtype=float)
        home = tree.forward_kinematics(q, tip)
        quat = matrix_to_quat(home)
        dt, period = ctrl.period, 1.0 / stream_rate
        n = round(duration / dt)
        eff = np.zeros((n, 3))
        pending = sorted(events, key=lambda e: e.t)
        stats = {"rejected": 0, "ff_lin": 0.0, "ff_ang": 0.0}
        next_pose, good = 0.0, home[:3, 3].copy()
        for k in range(n):
            t = k * dt
            ctrl.set_joint_state(ctrl.joint_names, q, t)
            while next_pose <= t + 1e-9:
                good, _ = path_point(next_pose, home[:3, 3], radius, speed, "circle", "yz")
                ctrl.set_target(name, "", good, quat, t, next_pose)
                next_pose += period
            while pending and pending[0].t <= t + 1e-9:
                e = pending.pop(0)
                try:
                    if e.kind == "pose":
                        ctrl.set_target(name, "", np.array(e.value), quat, t, e.t)
                    elif e.kind == "twist":
                        ctrl.set_target_twist(name, "", np.array(e.value), t, e.t)
                    else:
                        ctrl.set_target(name, "", good, quat, t, e.t, jump=True)
                except InputError:
                    stats["rejected"] += 1
            out = ctrl.step(t)
            if hasattr(ctrl, "fed_forward_twist"):
                ff = ctrl.fed_forward_twist(name)
                stats["ff_lin"] = max(stats["ff_lin"], float(np.linalg.norm(ff[:3])))
                stats["ff_ang"] = max(stats["ff_ang"], float(np.linalg.norm(ff[3:])))
            else:
                stats["ff_lin"] = stats["ff_ang"] = math.nan
            q += out.qdot * dt
            eff[k] = tree.forward_kinematics(q, tip)[:3, 3]
        stats["jumps"] = getattr(ctrl, "target_jumps", lambda _: -1)(name)
        return eff, stats

    clean, _ = run([])
    dirty, stats = run(list(hostile))
    dev = np.linalg.norm(dirty - clean, axis=1)  # (n,)
    dt = 1.0 / float(config.control_rate)
    t = np.arange(len(dev)) * dt
    last = max((e.t for e in hostile), default=0.0)
    above = np.flatnonzero(dev >= 1e-3)
    recovery = 0.0 if above.size == 0 else float(t[above[-1]] + dt - last)
    if above.size and above[-1] == len(dev) - 1:
        recovery = math.inf
    at = {}
    for s in (1, 3, 5):
        k = round((last + s) / dt)
        at[f"{s}s"] = float(dev[k]) if k < len(dev) else math.nan
    return {
        "t": t.tolist(),
        "deviation_m": dev.tolist(),
        "max_deviation_m": float(dev.max()),
        "recovery_s": max(recovery, 0.0),
        "deviation_at_m": at,
        "max_feedforward_m_s": stats["ff_lin"],
        "max_feedforward_rad_s": stats["ff_ang"],
        "rejected": stats["rejected"],
        "jumps": stats["jumps"],
    }


class LaggingRobot:
    """Joints whose velocities follow the command through a first-order lag (as real servos).

    ``tau v' + v = u``, integrated exactly over :attr:`SUB` steps (the command held over each
    tick, as a velocity interface holds it).

    Args:
        q0: (n,) the start positions [rad or m].
        lag: the time constant ``tau`` [s] (0: the joints follow each command at once).
    """

    SUB = 0.001
    """The integration step [s]."""

    def __init__(self, q0: ArrayLike, lag: float) -> None:
        self.q = np.array(q0, dtype=float)
        self.v = np.zeros_like(self.q)
        self.lag = float(lag)

    def step(self, u: Array, dt: float) -> Array:
        """Follow the command ``u`` (n,) for ``dt`` [s]; returns the positions (a view)."""
        steps = max(1, round(dt / self.SUB))
        h = dt / steps
        keep = math.exp(-h / self.lag) if self.lag > 0.0 else 0.0
        for _ in range(steps):
            self.v = u + (self.v - u) * keep
            self.q += self.v * h
        return self.q


def lagging_circle(
    tree: KinematicTree,
    tip: str,
    q0: ArrayLike,
    command: Any,
    robot_lag: float,
    rate: float = 250.0,
    radius: float = 0.1,
    speed: float = 0.25,
    duration: float = 6.0,
) -> dict[str, float]:
    """A circle in the yz plane around the home tip position, tracked through lagging servos.

    Args:
        tree: the robot.
        tip: the effector link.
        q0: (n,) the start configuration (the circle starts at its tip).
        command: ``command(t, q, pose, twist) -> q'``: the velocity IK under test, given the
            time [s], the joint positions (n,), the target pose (4, 4) and twist (6,).
        robot_lag: the servos' time constant [s].
        rate: the IK's rate [Hz].
        radius: the circle's radius [m].
        speed: the target's speed along it [m/s].
        duration: [s]; the error counts over its second half.

    Returns:
        ``rms_error_m`` and ``max_error_m`` of the tip to the target over the second half.
    """
    robot = LaggingRobot(q0, robot_lag)
    home = tree.forward_kinematics(robot.q, tip)
    c0 = home[:3, 3].copy()
    w = speed / radius
    dt = 1.0 / rate
    errors = []
    pose = home.copy()
    for k in range(int(duration * rate)):
        t = k * dt
        pose[:3, 3] = c0 + radius * np.array([0.0, math.sin(w * t), math.cos(w * t) - 1.0])
        twist = np.array([0.0, speed * math.cos(w * t), -speed * math.sin(w * t), 0.0, 0, 0])
        q = robot.step(np.asarray(command(t, robot.q.copy(), pose, twist), dtype=float), dt)
        if t >= duration / 2:
            t1 = t + dt
            at = c0 + radius * np.array([0.0, math.sin(w * t1), math.cos(w * t1) - 1.0])
            errors.append(float(np.linalg.norm(tree.forward_kinematics(q, tip)[:3, 3] - at)))
    e = np.array(errors)
    return {"rms_error_m": float(np.sqrt(np.mean(e**2))), "max_error_m": float(e.max())}


__all__ = [
    "HOSTILE_KINDS",
    "HostileInput",
    "LaggingRobot",
    "circle_tracking",
    "lagging_circle",
    "stream_with_hostile_inputs",
]
