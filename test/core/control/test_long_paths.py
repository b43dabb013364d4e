"""Long paths are tracked under the motion limits as an ideal velocity IK tracks them.

A redundant arm's spare motion must not build up (the least motion inside the motion box), a
joint at its limit must not freeze the task, and a task the arm cannot follow is reported: over
circles, lines and spirals of random centre, size, speed and plane that sweep the Panda's
workspace for 20 s, 6-D and position-only, with and without the shipped posture, each
followable by an ideal velocity IK (the same task without joint or motion limits, every joint at
least 0.2 rad from its limits, never damped), the controller with Franka's acceleration and
jerk limits tracks within what the ideal reaches plus the limits' own delay, never leaves a
joint at a limit the ideal does not need, and never falls short in silence.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from itasc_ros.core import Controller, KinematicTree
from itasc_ros.core.kinematics import spatial
from itasc_ros.params import config_from_parameters, read_params_file
from itasc_ros.tools.resources import robot_urdf, share_file

TREE = KinematicTree.from_urdf_file(robot_urdf("panda"))
Q0 = np.array([0.0, -0.4, 0.0, -2.1, 0.0, 1.9, 0.785])
RATE = 250.0
DURATION = 20.0  # [s]
RAMP = 0.5  # [s] the path's smooth start
MARGIN = 0.2  # [rad] the ideal IK keeps every joint this far from its limits
DELAY = 1e-3  # [m] what the motion limits may add to the ideal's error


def _controller(limits: bool, posture: bool, six_d: bool) -> Controller:
    params = read_params_file(share_file("config", "panda.yaml"))
    params.update(control_rate=RATE)
    if not limits:
        params = {k: v for k, v in params.items() if not k.startswith("joint_limits.")}
    if not six_d:
        params["constraints.ee.rotation_axes"] = ""
    if not posture:  # a user's config without the shipped posture (resolving redundancy)
        params["constraint_names"] = ["ee"]
    return Controller(TREE, config_from_parameters(params))


def _path(kind: str, centre: np.ndarray, size: float, speed: float, frame: np.ndarray) -> Any:
    """Position and velocity (3,) at time t of a path in the plane of ``frame`` (3, 3)."""
    ex, ey = frame[:, 0], frame[:, 1]

    def at(t: float) -> tuple[np.ndarray, np.ndarray]:
        u = min(t / RAMP, 1.0)
        s = speed * RAMP * (u**3 - 0.5 * u**4) if t < RAMP else speed * (t - 0.5 * RAMP)
        sp = speed * (3 * u * u - 2 * u**3) if t < RAMP else speed
        if kind == "line":  # back and forth along ex, smoothly (peak speed ``speed``)
            return centre + size * math.sin(s / size) * ex, sp * math.cos(s / size) * ex
        th = s / size
        if kind == "circle":
            r, dr = size, 0.0
        else:  # a spiral: the radius breathes between 0.2 and 1.0 of ``size``
            r, dr = size * (0.6 + 0.4 * math.sin(0.3 * t)), size * 0.12 * math.cos(0.3 * t)
        radial = math.cos(th) * ex + math.sin(th) * ey
        tangent = -math.sin(th) * ex + math.cos(th) * ey
        return centre + r * radial, dr * radial + sp * (r / size) * tangent

    return at


def _run(ctrl: Controller, path: Any, quat: np.ndarray) -> dict[str, Any]:
    q = Q0.copy()
    dt, now = 1.0 / RATE, 100.0
    err = np.zeros(int(DURATION * RATE))
    at_limit = np.zeros(err.shape[0], dtype=bool)
    margin = sigma = math.inf
    silent = 0.0
    for k in range(err.shape[0]):
        p, v = path(k * dt)
        ctrl.set_joint_state(ctrl.joint_names, q, now)
        ctrl.set_target("ee", "", p, quat, now)
        ctrl.set_target_twist("ee", "", np.r_[v, 0.0, 0.0, 0.0], now)
        out = ctrl.step(now)
        assert np.all(np.isfinite(out.qdot))
        hand = TREE.forward_kinematics(q, "panda_hand")[:3, 3]
        err[k] = float(np.linalg.norm(hand - p))
        gap = np.minimum(q - TREE.lower, TREE.upper - q)
        margin = min(margin, float(gap.min()))
        sigma = min(sigma, out.result.sigma_min if out.result is not None else math.inf)
        at_limit[k] = bool(np.any(gap < 1e-3))
        if err[k] > 0.01 and not out.shortfall and k * dt > 1.0:
            silent = max(silent, err[k])
        q = np.clip(q + out.qdot * dt, TREE.lower, TREE.upper)
        now += dt
    return {"err": err, "margin": margin, "at_limit": at_limit, "silent": silent, "sigma": sigma}


@settings(
    max_examples=14,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)
@given(
    kind=st.sampled_from(["circle", "line", "spiral"]),
    size=st.floats(0.05, 0.45),
    speed=st.floats(0.05, 0.3),
    plane=st.tuples(*[st.floats(-1.0, 1.0)] * 3),
    six_d=st.booleans(),
    posture=st.booleans(),
)
def test_long_paths_track_as_the_ideal_does_and_never_freeze(
    kind: str,
    size: float,
    speed: float,
    plane: tuple[float, float, float],
    six_d: bool,
    posture: bool,
) -> None:
    hand = TREE.forward_kinematics(Q0, "panda_hand")
    quat = spatial.matrix_to_quat(hand[:3, :3])
    axis = np.array(plane) + np.array([0.0, 0.0, 1e-3])
    normal = axis / np.linalg.norm(axis)
    ex = np.cross(normal, [1.0, 0.0, 0.0] if abs(normal[0]) < 0.9 else [0.0, 1.0, 0.0])
    ex /= np.linalg.norm(ex)
    frame = np.column_stack([ex, np.cross(normal, ex), normal])
    p0 = _path(kind, np.zeros(3), size, speed, frame)(0.0)[0]
    path = _path(kind, hand[:3, 3] - p0, size, speed, frame)  # starts on the hand
    ideal_ctrl = _controller(False, posture, six_d)
    ideal = _run(ideal_ctrl, path, quat)
    # followable: within 10 mm, every joint MARGIN from its limits, never damped (near a
    # singularity the motion limits' demand limit, measured from what the damped command gives
    # the task, comes out of it later than the ideal: reported, see itasc-bench paths)
    eps = ideal_ctrl.config.damping_epsilon
    assume(ideal["margin"] >= MARGIN and ideal["err"].max() < 0.01 and ideal["sigma"] >= eps)
    boxed = _run(_controller(True, posture, six_d), path, quat)
    print(
        f"\n{kind} {size:.2f} m {speed:.2f} m/s 6-D {six_d} posture {posture}: ideal "
        f"{1e3 * ideal['err'].max():.3f} mm, limited {1e3 * boxed['err'].max():.3f} mm "
        f"(margin {ideal['margin']:.2f} / {boxed['margin']:.2f} rad)"
    )
    assert boxed["silent"] == 0.0, boxed["silent"]  # never short in silence
    assert boxed["err"].max() <= ideal["err"].max() + DELAY
    assert not boxed["at_limit"].any()  # the ideal needs no joint at a limit
