"""The scene's model and workspace: named views of the kernels' buffers, the same solve.

* every array the scene and its result expose is a view of the workspace's buffers, and a
  solve allocates none (the buffers are the same objects tick after tick);
* the scene's compiled solve on its box is the generic kernel's
  (:func:`~itasc_ros.core.solve.solver.solve_prioritized`) given that box, bit for bit;
* a constraint in two scenes: its target twist, held in the solving scene's workspace, is the
  one set, whichever scene solved last; a pose task's target pose and tick record likewise;
* a scene whose constraints have compiled ticks (pose tasks, joint values, a centre of mass)
  solves in one call (:func:`~itasc_ros.core.solve.workspace.scene_tick`) what the constraints'
  own updates give, bit for bit, through live changes of targets, frames, gains, weights, axes
  and priorities, alone or beside a constraint that updates its own rows;
* the added limits the compiled solve applies from their records (the motion box, the held
  joints) give the box, its sides and the command their own calls give, bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from robots import erd_urdf_path

from itasc_ros.core import (
    CenterOfMass,
    ConfigurationError,
    Constraint,
    CopyPose,
    JointValue,
    KinematicTree,
    Scene,
)
from itasc_ros.core.kinematics.home_poses import home_of
from itasc_ros.core.solve import solver as S
from itasc_ros.core.solve.joint_limits import JointLimits
from itasc_ros.core.solve.limits import FixedBox, HeldJoints, MotionBox
from itasc_ros.core.solve.motion_limits import MotionLimiter
from itasc_ros.tools.resources import robot_urdf

TREE = KinematicTree.from_urdf_file(robot_urdf("panda"))
HOME = home_of("panda")
N = TREE.n_joints
DT = 0.002


def _scene() -> tuple[Scene, CopyPose]:
    ee = CopyPose("ee", "panda_link8", gain=20.0)
    ee.set_target(TREE.forward_kinematics(HOME + 0.4, "panda_link8"))
    ee.set_target_twist([0.05, 0.0, 0.02, 0.0, 0.1, 0.0])
    posture = JointValue("posture", TREE.joint_names, HOME, weight=0.1)
    posture.set_priority(2)
    return Scene(TREE, [ee, posture], velocity_scale=0.3), ee


def test_the_scenes_arrays_are_views_of_the_workspace_and_a_solve_allocates_none() -> None:
    scene, _ = _scene()
    scene.solve(HOME, DT)
    ws = scene._ws
    buffers = (ws.model, ws.joints, ws.rows, ws.joint_flags, ws.row_flags)
    res = scene.solve(HOME + 0.01, DT)
    after = (ws.model, ws.joints, ws.rows, ws.joint_flags, ws.row_flags)
    assert all(a is b for a, b in zip(buffers, after, strict=True))
    for view in (res.qdot, scene.box_lo, scene.box_hi, scene._side, scene._q, scene._wq):
        assert view.base is ws.joints
    assert res.locked is ws.joint_flags
    for view in (scene._a, scene._b, scene._wy, scene._rhs):
        assert view.base is ws.rows
    assert scene.get("ee")._target_twist.base is ws.rows


def test_the_scenes_solve_is_the_kernels_on_its_box_bit_for_bit() -> None:
    scene, _ = _scene()
    scene.add_limit(FixedBox(np.full(N, -0.2), np.full(N, 0.15)))
    q = HOME + 0.05
    res = scene.solve(q, DT)
    m = scene._a.shape[0]
    qdot, locked, info = np.zeros(N), np.zeros(N, dtype=bool), np.zeros(S.INFO_SIZE)
    box_side = scene._side.copy()
    S.solve_prioritized(
        scene._a.copy(), scene._rhs.copy(), scene._wy.copy(), scene._wq.copy(), q,
        np.full(N, -np.inf), np.full(N, np.inf), np.full(N, np.inf), DT, 0, scene.damping_max,
        scene.damping_epsilon, scene.sdls_gamma_max, qdot, locked, np.zeros((m, N)),
        np.zeros(m), np.zeros(N), np.zeros(N), info, scene._levels.copy(), scene._nlev,
        np.zeros((N, N)), np.zeros((m, N)), np.zeros(m), np.zeros(N), scene.box_lo.copy(),
        scene.box_hi.copy(), scene._ineq.copy(), box_side, scene._redundant.copy(),
    )  # fmt: skip
    assert qdot.tobytes() == res.qdot.tobytes()
    assert np.array_equal(locked, res.locked)
    assert info.tobytes() == scene._info.tobytes()


def test_a_constraint_in_two_scenes_keeps_the_twist_set_on_it() -> None:
    one, ee = _scene()
    other = Scene(TREE, [ee])
    twist = np.array([0.0, 0.1, 0.0, 0.2, 0.0, 0.0])
    ee.set_target_twist(twist)
    for scene in (one, other, one):
        scene.solve(HOME, DT)
        assert np.array_equal(ee.target_twist, twist)
        assert ee._target_twist.base is scene._ws.rows
    ee.set_target_twist(2.0 * twist)
    other.solve(HOME, DT)
    assert np.array_equal(ee.target_twist, 2.0 * twist)


class _OwnCallsMotionBox(MotionBox):
    """The motion box through its own calls (a subclass: the scene does not compile it)."""


class _OwnCallsHeld(HeldJoints):
    """The held joints through their own calls."""


def _limited(compiled: bool, held: bool) -> tuple[Scene, MotionLimiter, HeldJoints]:
    scene, _ = _scene()
    lower, upper = scene.position_limits
    limits = [JointLimits(2.0, 3.0, 3.0, 60.0)] * N
    limiter = MotionLimiter(scene.velocity_limits, limits, lower, upper)
    scene.add_limit((MotionBox if compiled else _OwnCallsMotionBox)(limiter, DT, 0.1))
    hold = (HeldJoints if compiled else _OwnCallsHeld)(N)
    if held:
        scene.add_limit(hold)
    return scene, limiter, hold


def test_the_compiled_motion_box_and_held_joints_are_their_own_calls_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    for held in (False, True):
        runs = [_limited(compiled, held) for compiled in (True, False)]
        assert runs[0][0]._python_limits is False and runs[1][0]._python_limits is True
        q, sides = TREE.upper - 0.25, 0
        for tick in range(300):  # toward the upper limits: braking sides, a hold and its end
            q += rng.normal(0.0, 0.002, N) + 0.004 * (TREE.upper - q)
            out = []
            for scene, limiter, hold in runs:
                if held and tick == 100:
                    hold.hold(np.arange(N) < 3, limiter.v * 0.5)
                if held and tick == 200:
                    hold.release()
                res = scene.solve(q, DT)
                cmd = np.zeros(N)
                limiter.take_clipped(res.qdot, limiter.vmax_hard, cmd, scene.box_lo,
                                     scene.box_hi, DT)  # fmt: skip
                out.append((res.qdot.copy(), scene.box_lo.copy(), scene.box_hi.copy(),
                            scene._side.copy(), limiter.v.copy()))  # fmt: skip
            for a, b in zip(*out, strict=True):
                assert a.tobytes() == b.tobytes(), (held, tick)
            sides += bool(runs[0][0]._side.any())
        assert np.abs(runs[0][1].v).max() > 0.1 and sides > 5  # it moved, near the limits


class _OwnUpdate(CopyPose):
    """A CopyPose whose scene calls its update (no compiled tick)."""

    def compiled_tick(self, tree: KinematicTree) -> None:
        return None


class _OwnJointUpdate(JointValue):
    """A JointValue whose scene calls its update (no compiled tick)."""

    def compiled_tick(self, tree: KinematicTree) -> None:
        return None


class _OwnComUpdate(CenterOfMass):
    """A CenterOfMass whose scene calls its update (no compiled tick)."""

    def compiled_tick(self, tree: KinematicTree) -> None:
        return None


def _pose_tasks(
    cls: type[CopyPose], limited: bool, posture: bool = False, mixed: bool = False
) -> tuple[Scene, list[CopyPose], MotionLimiter | None]:
    """Two pose tasks at two levels, a posture below them (``posture``), which updates its
    own rows in both scenes (``mixed``: the compiled tick of a scene with another constraint).
    """
    hand = cls("hand", "panda_link8", gain=20.0)
    elbow = cls("elbow", "panda_link4", rotation_axes="", reference="root", gain=5.0, weight=0.5)
    elbow.set_priority(2)
    for c, q in ((hand, HOME + 0.3), (elbow, HOME - 0.2)):
        c.set_target(TREE.forward_kinematics(q, c.effector))
    terms: list[Constraint] = [hand, elbow]
    if posture:  # a redundancy term below them, on every joint, toward the home pose
        rest = (JointValue if cls is CopyPose and not mixed else _OwnJointUpdate)(
            "posture", [], HOME, weight=0.1, gain=3.0
        )
        rest.set_priority(3)
        rest.resolves_redundancy = True
        terms.append(rest)
    scene = Scene(TREE, terms, velocity_scale=0.5)
    limiter = None
    if limited:
        lower, upper = scene.position_limits
        limiter = MotionLimiter(
            scene.velocity_limits, [JointLimits(2.0, 3.0, 3.0, 60.0)] * N, lower, upper
        )
        scene.add_limit(MotionBox(limiter, DT, 0.1))
    return scene, [hand, elbow], limiter


def test_a_scene_of_compiled_ticks_solves_as_the_constraints_updates_bit_for_bit() -> None:
    rng = np.random.default_rng(3)
    for limited, posture, mixed in ((0, 0, 0), (1, 0, 0), (1, 1, 0), (1, 1, 1)):
        runs = [_pose_tasks(cls, limited, posture, mixed) for cls in (CopyPose, _OwnUpdate)]
        assert runs[0][0]._compiled and not runs[1][0]._compiled
        q, fastest = HOME.copy(), 0.0
        for tick in range(240):
            q += rng.normal(0.0, 0.01, N)
            pose = TREE.forward_kinematics(HOME + rng.normal(0.0, 0.3, N), "panda_link8")
            out = []
            for scene, (hand, elbow), limiter in runs:
                hand.set_target(pose)  # live changes: the record's values, not its layout
                if tick == 60:
                    hand.set_reference("effector")
                    elbow.set_gain(12.0)
                if tick == 120:
                    hand.set_weight(0.3)
                    elbow.set_axes("xz", "")
                if tick == 180:
                    hand.set_priority(2)
                    if posture:
                        scene.get("posture").set_values(HOME + 0.1)
                if tick == 200:  # the public attributes set directly: taken all the same
                    elbow.gain, hand.weight = 7.0, 0.7
                res = scene.solve(q, DT)
                if limiter is not None:  # the command taken: the next tick's box from it
                    cmd = np.zeros(N)
                    limiter.take_clipped(res.qdot, limiter.vmax_hard, cmd, scene.box_lo,
                                         scene.box_hi, DT)  # fmt: skip
                out.append((res.qdot.copy(), res.errors.copy(), scene.box_lo.copy(),
                            np.array([res.sigma_min, res.damping, *hand.pose_errors()]),
                            scene.matrices(q)["A"]))  # fmt: skip
            for a, b in zip(*out, strict=True):
                assert a.tobytes() == b.tobytes(), (limited, posture, mixed, tick)
            fastest = max(fastest, float(np.abs(out[0][0]).max()))
        assert fastest > 0.01  # it moved


def test_a_compiled_tick_refuses_a_non_finite_q_as_the_updates_do() -> None:
    messages = []
    for cls in (CopyPose, _OwnUpdate):
        scene, _, _ = _pose_tasks(cls, limited=False)
        scene.solve(HOME, DT)
        q = HOME.copy()
        q[2] = np.nan
        with pytest.raises(ConfigurationError, match="NaN, Inf or huge") as err:
            scene.solve(q, DT)
        messages.append(str(err.value))
        assert np.isfinite(scene.solve(HOME, DT).qdot).all()  # the next good q solves
    assert messages[0] == messages[1]


def test_a_pose_task_in_two_scenes_keeps_its_target_and_its_record() -> None:
    one, (hand, _), _ = _pose_tasks(CopyPose, limited=False)
    other = Scene(TREE, [hand])
    assert one._compiled and other._compiled
    goals = [TREE.forward_kinematics(HOME + d, "panda_link8") for d in (0.1, -0.1, 0.2)]
    for scene, goal in zip((one, other, one), goals, strict=True):
        hand.set_target(goal)
        res = scene.solve(HOME, DT)
        assert np.array_equal(hand.target.pose, goal)
        assert np.shares_memory(hand.target.pose, scene._ws.rows)
        assert np.shares_memory(hand.jac, scene._ws.rows)
        alone = Scene(TREE, [_copy_of(hand, goal)]).solve(HOME, DT)
        if scene is other:
            assert res.qdot.tobytes() == alone.qdot.tobytes()


def _copy_of(hand: CopyPose, goal: np.ndarray) -> CopyPose:
    c = CopyPose("copy", hand.effector, gain=hand.gain, weight=hand.weight)
    c.set_target(goal)
    return c


def test_a_centre_of_mass_compiled_solves_as_its_update_bit_for_bit() -> None:
    """A UR5 (its inertials): a pose task under its centre of mass in a band, then on a target."""
    tree = KinematicTree.from_urdf_file(erd_urdf_path("ur5"))
    home = home_of("ur5")
    mid = tree.center_of_mass(home)[0][:2]
    runs = []
    for com_cls, pose_cls in ((CenterOfMass, CopyPose), (_OwnComUpdate, _OwnUpdate)):
        band = com_cls("com", "xy", mid - 0.01, mid + 0.02, margin=0.008, weight=2.0, gain=4.0)
        hand = pose_cls("hand", tree.tip_link(), gain=10.0)
        hand.set_target(tree.forward_kinematics(home + 0.5, tree.tip_link()))
        hand.set_priority(2)
        runs.append(Scene(tree, [band, hand], velocity_scale=0.5))
    assert runs[0]._compiled and not runs[1]._compiled
    q, banded = home.copy(), 0
    for tick in range(300):
        out = []
        for scene in runs:
            if tick == 200:
                scene.get("com").set_com_target(mid + 0.01)
            res = scene.solve(q, DT)
            out.append((res.qdot.copy(), res.errors.copy(), scene._wy.copy()))
        for a, b in zip(*out, strict=True):
            assert a.tobytes() == b.tobytes(), tick
        banded += bool(out[0][2][:2].any()) and tick < 200  # the band's rows acted
        q += out[0][0] * DT
    assert (
        banded > 10 and np.abs(runs[0].get("com").center_of_mass()[:2] - mid - 0.01).max() < 0.01
    )
