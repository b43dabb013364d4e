"""The common tick in one compiled call (``FusedTick``) does what the tick's parts do.

``FusedTick.run`` makes an active tick's look, its target's twist, the solve, the command and
the tick's record in one compiled call (``tick_command``) when the tick is the common one.
Two controllers fed the same inputs, one allowed that call and one made to take the tick's
parts, send the same commands bit for bit, write the same journal bit for bit and report the
same statuses and following: through a target held still, a moving target with and without
``aim_ahead`` (aimed ahead in the call by its estimated twist, and by an explicit one: to
second order, its change rate), a target stream that pauses (its aim given up in the call), a step
followed along a straight line (the parts), late and stale joint states (stale: the call
stops after its look), a disabled output, with and without motion limits, the posture beside
the pose or on a level below it. The call is loaded when the controller is built. A scene with
collision rows (updated in Python first) takes the parts: those ticks are checked with an
aimed target, a second level and motion limits at once.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest
from twin_controllers import RATE, REPO, panda_controller, tick_state

from itasc_ros.core import KinematicTree
from itasc_ros.core.control import fused_tick as fused_tick_module
from itasc_ros.core.control._command_kernels import (
    LOOKED,
    PLAN_FIELDS,
    SENT,
    new_tick_plan,
    tick_command,
)
from itasc_ros.core.control.fused_tick import FusedTick
from itasc_ros.core.control.journal import Journal
from itasc_ros.core.control.status import Status
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_of

HOME = np.array(home_of("panda"))


@pytest.fixture(scope="module")
def tree() -> KinematicTree:
    return KinematicTree.from_urdf_file(REPO / "urdf" / "panda.urdf")


@pytest.mark.parametrize("levels", [1, 2], ids=["one_level", "two_levels"])
@pytest.mark.parametrize("aim", [True, False], ids=["aim_ahead", "no_aim"])
@pytest.mark.parametrize("limited", [True, False], ids=["motion_limits", "velocity_only"])
def test_the_fused_tick_does_what_the_parts_do(
    tree: KinematicTree, limited: bool, aim: bool, levels: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    fused = panda_controller(tree, limited, aim, levels)
    parts = panda_controller(tree, limited, aim, levels)
    codes: list[int] = []
    kernel = fused_tick_module.tick_command

    def spy(*args: Any) -> Any:
        out = kernel(*args)
        codes.append(int(out[0]))
        return out

    monkeypatch.setattr(fused_tick_module, "tick_command", spy)
    rng = np.random.default_rng(11)
    start = tree.forward_kinematics(HOME, "panda_hand")
    names = tree.joint_names
    q = HOME.copy()
    now, seen, gave_up, explicit_sent = 100.0, set(), 0, 0
    stream = fused._inputs.targets["ee"]
    for k in range(900):
        now += 1.0 / RATE
        if k == 850:  # a new target 1 cm away: a step along a straight line (the parts)
            start = start.copy()
            start[:3, 3] += rng.uniform(-0.01, 0.01, 3)
        late = 260 <= k % 300 < 275 or 700 <= k < 780  # late, then stale (> input_timeout)
        if not late:
            for c in (fused, parts):
                c.set_joint_state(names, q, now, now)
        pose = start.copy()
        twist = None
        if 150 <= k % 300 < 250:  # the target moves and comes back (its twist estimated)
            s = 2.0 * np.pi * (k % 300 - 150) / 100.0
            pose[:3, 3] += 0.005 * (1.0 - np.cos(s)) * np.array([1.0, 0.5, 0.0])
            if k >= 300:  # then with its explicit twist too (aimed by it, second order)
                speed = 0.005 * np.sin(s) * 2.0 * np.pi / 100.0 * RATE
                twist = np.array([speed, 0.5 * speed, 0.0, 0.0, 0.0, 0.02])
        quat = spatial.matrix_to_quat(pose)
        paused = 785 <= k < 845  # no pose: the stream goes stale, its aim is given up
        for c in (fused, parts):
            if not paused:
                c.set_target("ee", "", pose[:3, 3].copy(), quat, now, now)
                if twist is not None:
                    c.set_target_twist("ee", "", twist, now, now - 0.001)
            c.set_enabled(not 600 <= k < 620)  # the output off for a while, then on again
        aiming, calls = stream.aiming, len(codes)
        a = fused.step(now)
        seen.add(a.status)
        gave_up += aiming and not stream.aiming and codes[calls:] == [SENT]
        explicit_sent += twist is not None and codes[calls:] == [SENT]
        with monkeypatch.context() as m:
            m.setattr(FusedTick, "possible", lambda self: False)
            b = parts.step(now)
        assert a.status == b.status and a.publish == b.publish and a.reason == b.reason, k
        assert a.qdot.tobytes() == b.qdot.tobytes(), k
        assert a.shortfall == b.shortfall, k
        for x, y in zip(tick_state(fused), tick_state(parts), strict=True):
            assert x.tobytes() == y.tobytes(), k
        if k % 50 == 0:  # the same records, bit for bit
            ja, jb = fused.journal, parts.journal
            assert ja is not None and jb is not None
            assert ja.take().tobytes() == jb.take().tobytes(), k
        if a.publish:
            q = q + a.qdot / RATE  # the robot follows the command
    # the fused call sent the commands of the common ticks (a target aimed ahead by its
    # estimated twist included), gave the aim up when the stream paused, and stopped after
    # its look when the tick was not the common one (a stale state)
    assert codes.count(SENT) > 500, codes
    assert gave_up == (1 if aim else 0)
    assert explicit_sent > 100, explicit_sent  # a target moving by its explicit twist: aimed
    assert LOOKED in codes
    assert {Status.ACTIVE, Status.STALE} <= seen and seen & {Status.DISABLED, Status.STOPPING}


def test_the_fused_call_is_loaded_when_the_controller_is_built(tree: KinematicTree) -> None:
    c = panda_controller(tree, True, False)
    loaded, planned = len(tick_command.signatures), len(new_tick_plan.signatures)
    assert loaded >= 1 and planned >= 1
    pose = tree.forward_kinematics(HOME, "panda_hand")
    now = 10.0
    for _ in range(50):
        now += 1.0 / RATE
        c.set_joint_state(tree.joint_names, HOME, now, now)
        c.set_target("ee", "", pose[:3, 3].copy(), spatial.matrix_to_quat(pose), now, now)
        assert c.step(now).status is Status.ACTIVE
    # no tick compiled a variant of its own: neither the call nor its plan's gathering
    assert len(tick_command.signatures) == loaded
    assert len(new_tick_plan.signatures) == planned


#: Live changes made to both twins at these ticks: each may replace what the fused call's plan
#: holds (a new configuration, scene, limiter, layout or journal), or change it in place.
CHANGES: dict[int, Any] = {
    60: lambda c: c.update_parameters(damping_max=0.3, damping_epsilon=2.0),
    90: lambda c: c.update_parameters(constraints={"ee": {"gain": 5.0, "weight": 2.0}}),
    120: lambda c: c.update_parameters(max_cartesian_acceleration=0.5, max_cartesian_speed=0.2),
    150: lambda c: c.update_parameters(solver="sdls"),
    180: lambda c: setattr(c.constraint("rest"), "enabled", False),
    210: lambda c: setattr(c.constraint("rest"), "enabled", True),
    240: lambda c: c.attach_journal(None),
    270: lambda c: c.attach_journal(Journal()),
    300: lambda c: c.update_parameters(control_rate=250.0),
    330: lambda c: c.update_parameters(velocity_scale=0.5, joint_limit_margin=0.05),
    360: lambda c: c.update_parameters(actuator_lag=0.01),
    375: lambda c: c.update_parameters(input_timeout=0.2),
    380: lambda c: c.update_parameters(command_latency=0.003),
    385: lambda c: c.update_parameters(max_target_speed=0.6, max_target_angular_speed=0.01),
    390: lambda c: c.update_parameters(constraints={"ee": {"feedforward": False}}),
}


@pytest.mark.parametrize("aim", [True, False], ids=["aim_ahead", "no_aim"])
@pytest.mark.parametrize("limited", [True, False], ids=["motion_limits", "velocity_only"])
def test_the_fused_tick_follows_every_live_change_as_the_parts_do(
    tree: KinematicTree, limited: bool, aim: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fused call keeps the tick's arrays and settings between ticks (its plan): after each
    live change (a setting in place or a new scene, a constraint disabled and enabled again,
    the journal detached and attached) it commands what the parts command, bit for bit, on a
    target that moves all along; and it made those ticks itself."""
    fused, parts = panda_controller(tree, limited, aim), panda_controller(tree, limited, aim)
    sent: list[int] = []
    kernel = fused_tick_module.tick_command
    k = 0

    def spy(*args: Any) -> Any:
        out = kernel(*args)
        if int(out[0]) == SENT:
            sent.append(k)
        return out

    monkeypatch.setattr(fused_tick_module, "tick_command", spy)
    start = tree.forward_kinematics(HOME, "panda_hand")
    names = tree.joint_names
    q, now = HOME.copy(), 50.0
    for k in range(420):
        now += 1.0 / RATE
        if k in CHANGES:
            for c in (fused, parts):
                CHANGES[k](c)
        pose = start.copy()
        s = 2.0 * np.pi * k / 200.0
        pose[:3, 3] += 0.02 * np.array([np.sin(s), 1.0 - np.cos(s), 0.5 * np.sin(2.0 * s)])
        quat = spatial.matrix_to_quat(pose)
        w = 2.0 * np.pi / 200.0 * RATE  # [rad/s] ds/dt
        v = 0.02 * w * np.array([np.cos(s), np.sin(s), np.cos(2.0 * s)])
        for c in (fused, parts):
            c.set_joint_state(names, q, now, now)
            c.set_target("ee", "", pose[:3, 3].copy(), quat, now, now)
            if k >= 100:  # from here on with its explicit twist too
                c.set_target_twist("ee", "", [*v, 0.0, 0.0, 0.05], now, now)
        a = _active_twins(fused, parts, now, monkeypatch, k)
        ja, jb = fused.journal, parts.journal
        if ja is not None and jb is not None and k % 10 == 0:
            assert ja.take().tobytes() == jb.take().tobytes(), k
        q = q + a.qdot / RATE
    # the fused call made the ticks after every change (none of them left to the parts)
    for at in CHANGES:
        assert any(at <= t < at + 5 for t in sent), (at, sent[-20:])


def test_the_plans_fields_are_its_constructors_arguments_in_order() -> None:
    """A plan's fields are named by PLAN_FIELDS and filled by new_tick_plan's arguments in
    order: a field out of place would hold another field's array, unseen by the types."""
    assert tuple(inspect.signature(new_tick_plan.py_func).parameters) == PLAN_FIELDS


def test_an_aimed_target_beside_an_obstacle_and_a_lower_level_is_the_parts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """All at once: a target moving by its estimated twist (aimed ahead) whose circle draws the
    hand toward an obstacle (the collision rows active), a posture on a second level, motion
    limits, late joint states. A scene whose collision rows are updated in Python first is not
    solved in one call: such ticks take the parts whether the fused call is allowed or not,
    the same commands bit for bit; the hand stays off the obstacle at its margin and follows
    the target where the obstacle lets it, every command within the velocity limits."""
    from robots import erd_urdf_path

    from itasc_ros.core import ConstraintConfig, Controller, ControllerConfig
    from itasc_ros.params import load_config

    MARGIN = 0.02  # [m] noqa: N806
    arm = [f"panda_joint{i}" for i in range(1, 8)]
    tree = KinematicTree.from_urdf_file(erd_urdf_path("panda")).select_joints(arm)
    start = tree.forward_kinematics(HOME, "panda_hand")
    ball = start[:3, 3] + np.array([0.15, 0.0, 0.0])  # 15 cm ahead of the hand, 4 cm radius

    def controller() -> Controller:
        cfg = ControllerConfig(
            constraints=[
                ConstraintConfig("ee", "copy_pose", link="panda_hand"),
                ConstraintConfig(
                    "obs",
                    "collision",
                    self_collision=False,
                    obstacles=[f"sphere {ball[0]} {ball[1]} {ball[2]} 0.04"],
                    activation_distance=0.05,
                    margin=MARGIN,
                ),
                ConstraintConfig("rest", "joint_value", priority=2, values=list(HOME)),
            ],
            control_rate=RATE,
            input_timeout=0.1,
            aim_ahead=True,
        )
        cfg.joint_limits = load_config(REPO / "config" / "panda.yaml").joint_limits
        c = Controller(tree, cfg)
        c.attach_journal(Journal())
        return c

    fused, parts = controller(), controller()
    sent: list[int] = []
    kernel = fused_tick_module.tick_command

    def spy(*args: Any) -> Any:
        out = kernel(*args)
        sent.append(int(out[0]) == SENT)
        return out

    monkeypatch.setattr(fused_tick_module, "tick_command", spy)
    obs = fused.constraint("obs")
    names = tree.joint_names
    q, now, nearest, near_ticks, max_ratio = HOME.copy(), 20.0, np.inf, 0, 0.0
    err: list[float] = []
    vmax = tree.velocity_limits
    for k in range(1500):
        now += 1.0 / RATE
        pose = start.copy()  # a circle of 6 cm about the start, its near side in the ball
        s = 2.0 * np.pi * k / 1000.0  # 2 s a turn: 0.19 m/s
        pose[:3, 3] += 0.06 * np.array([np.sin(s), 1.0 - np.cos(s), 0.0])
        quat = spatial.matrix_to_quat(pose)
        late = 700 <= k < 720  # late joint states (within input_timeout)
        for c in (fused, parts):
            if not late:
                c.set_joint_state(names, q, now, now)
            c.set_target("ee", "", pose[:3, 3].copy(), quat, now, now)
        a = _active_twins(fused, parts, now, monkeypatch, k)
        if k % 25 == 0:
            ja, jb = fused.journal, parts.journal
            assert ja is not None and jb is not None
            assert ja.take().tobytes() == jb.take().tobytes(), k
        d = min(obs.distances().values())
        nearest = min(nearest, d)
        near_ticks += d < 0.05
        max_ratio = max(max_ratio, float(np.max(np.abs(a.qdot) / vmax)))
        q = q + a.qdot / RATE
        if k % 500 == 0:  # the target on the circle's side away from the obstacle
            err.append(
                float(
                    np.linalg.norm(tree.forward_kinematics(q, "panda_hand")[:3, 3] - pose[:3, 3])
                )
            )
    print(
        f"\nfused calls that sent: {sum(sent)}; nearest {1e3 * nearest:.2f} mm, "
        f"{near_ticks} ticks within 5 cm, fastest {max_ratio:.3f} of a velocity limit"
    )
    assert near_ticks > 100 and nearest > 0.9 * MARGIN, (near_ticks, nearest)  # at the margin
    assert max_ratio <= 1.0 + 1e-12
    assert max(err) < 0.005, err


def _active_twins(
    fused: Any, parts: Any, now: float, monkeypatch: pytest.MonkeyPatch, k: int
) -> Any:
    """One tick of both twins at ``now`` (``parts`` denied the fused call): both active, the
    same status, command, shortfall and tick state bit for bit; the fused twin's output."""
    a = fused.step(now)
    with monkeypatch.context() as m:
        m.setattr(FusedTick, "possible", lambda self: False)
        b = parts.step(now)
    assert a.status == b.status and a.reason == b.reason and a.status is Status.ACTIVE, k
    assert a.qdot.tobytes() == b.qdot.tobytes(), k
    assert a.shortfall == b.shortfall, k
    for x, y in zip(tick_state(fused), tick_state(parts), strict=True):
        assert x.tobytes() == y.tobytes(), k
    return a
