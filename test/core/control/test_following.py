"""Following: how much of each task the commands give, and the report when one stays short."""

from __future__ import annotations

import math

import numpy as np

from itasc_ros.core import Controller, KinematicTree
from itasc_ros.core.control.following import FOLLOWED, REPORT_AFTER, Following
from itasc_ros.core.kinematics import spatial
from itasc_ros.params import load_config
from itasc_ros.tools.resources import robot_urdf, share_file


def _causes(qdot: np.ndarray) -> list[str]:
    return [f"cause at {qdot[0]:.1f}"]


def test_a_task_short_for_long_enough_is_reported_with_its_cause_then_forgotten() -> None:
    f = Following(["ee", "posture"])
    qdot = np.array([1.0])
    t, dt = 10.0, 0.01
    f.fraction[:] = [1.0, math.nan]  # followed; posture asks for nothing
    f.update(t, dt, _causes, qdot)
    assert f.report == "" and f.fractions() == {"ee": 1.0}
    k = 0
    while k * dt < REPORT_AFTER - 1e-9:  # short, not yet for long enough
        f.fraction[:] = [0.4, math.nan]
        f.update(t + k * dt, dt, _causes, qdot)
        assert f.report == "", k
        k += 1
    f.fraction[:] = [0.4, math.nan]
    f.update(t + k * dt, dt, _causes, qdot)
    assert f.report.startswith("task 'ee' followed at 40 % for 0.25 s: cause at 1.0"), f.report
    assert f.short_time[0] == k * dt + dt or abs(f.short_time[0] - (k + 1) * dt) < 1e-12
    assert f.short_time[1] == 0.0
    f.fraction[:] = [FOLLOWED, math.nan]  # followed again: nothing to report
    f.update(t + (k + 1) * dt, dt, _causes, qdot)
    assert f.report == ""
    f.fraction[:] = [0.1, 0.2]
    f.update(t + (k + 2) * dt, dt, _causes, qdot)
    f.idle()  # no command: nothing is short
    assert f.report == "" and np.all(np.isnan(f.fraction))


def test_a_joint_driven_into_its_limit_is_named_when_the_task_cannot_be_followed() -> None:
    """The hand turned around the base's axis at 0.6 rad/s from joint 1 at 2.3 rad: joint 1
    reaches its upper limit at ~2.5 s and joint 3 takes the turn over (the task is followed
    there: nothing to report); once it cannot, the task falls short and the controller says
    which task, how much of it and why: joint 1 at its upper limit."""
    cfg = load_config(share_file("config", "panda.yaml"))
    tree = KinematicTree.from_urdf_file(robot_urdf("panda"))
    ctrl = Controller(tree, cfg)
    q = np.array([2.3, -0.3, 0.0, -2.0, 0.0, 1.8, 0.785])
    hand = tree.forward_kinematics(q, "panda_hand")
    r, th0, z = np.hypot(*hand[:2, 3]), math.atan2(hand[1, 3], hand[0, 3]), hand[2, 3]
    dt, now, w = 1.0 / 250.0, 100.0, 0.6
    reports: list[tuple[float, str]] = []
    for k in range(int(6.0 / dt)):
        t = k * dt
        th = th0 + w * t
        p = np.array([r * math.cos(th), r * math.sin(th), z])
        c, s = math.cos(w * t), math.sin(w * t)
        rz = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        ctrl.set_joint_state(ctrl.joint_names, q, now)
        ctrl.set_target("ee", "", p, spatial.matrix_to_quat(rz @ hand[:3, :3]), now)
        ctrl.set_target_twist("ee", "", np.r_[w * np.array([-p[1], p[0], 0.0]), 0, 0, w], now)
        out = ctrl.step(now)
        assert np.all(np.isfinite(out.qdot))
        if out.shortfall:
            reports.append((t, out.shortfall))
        q = np.clip(q + out.qdot * dt, tree.lower, tree.upper)
        now += dt
    assert reports, "the task fell short in silence"
    first_t, first = reports[0]
    assert first_t > 2.5 and abs(q[0] - tree.upper[0]) < 1e-6  # joint 1 held at its limit
    assert (
        first.startswith("task 'ee' followed at ") and "panda_joint1 at its upper limit" in first
    )
    assert ctrl.following.short_time[0] > 1.0
