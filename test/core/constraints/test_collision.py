"""The collision constraint on the real Panda: distances as Pinocchio + coal, its rows, its
inequality, its settings and the self_collision demo scenario."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from robots import erd_urdf_path

from itasc_bench.collision import pinocchio_reference
from itasc_ros.core import (
    ConfigError,
    ConstraintConfig,
    Controller,
    ControllerConfig,
    CopyPose,
    KinematicTree,
    Scene,
)
from itasc_ros.core.constraints.collision import Collision
from itasc_ros.core.kinematics.home_poses import home_of
from itasc_ros.params import load_config
from itasc_ros.tools.resources import robot_urdf, share_file
from itasc_ros.tools.scenarios import self_collision

SRDF = "package://example-robot-data/robots/panda_description/srdf/panda.srdf"
ARM = [f"panda_joint{i}" for i in range(1, 8)]
HOME = home_of("panda")
H = 1e-6


@pytest.fixture(scope="module")
def arm() -> KinematicTree:
    return KinematicTree.from_urdf_file(erd_urdf_path("panda")).select_joints(ARM)


def _fd(scene: Scene, q: np.ndarray) -> np.ndarray:
    cols = [
        (scene.matrices(q + H * e)["y"] - scene.matrices(q - H * e)["y"]) / (2 * H)
        for e in np.eye(q.shape[0])
    ]
    return np.stack(cols, axis=1)


def test_distances_equal_pinocchio_and_coal_on_the_same_pairs(arm: KinematicTree) -> None:
    c = Collision(
        "c",
        srdf_file=SRDF,
        activation_distance=10.0,  # every pair queried
        obstacles=["sphere 0.4 0.2 0.5 0.1", "box 0.5 -0.3 0.2 0.1 0.2 0.3"],
    )
    scene = Scene(arm, [c])
    ref = pinocchio_reference(str(erd_urdf_path("panda")), arm, c)
    assert c.n_pairs == 44 + 2 * 16  # the SRDF's pairs; each obstacle with each moving shape
    rng = np.random.default_rng(3)
    worst = 0.0
    for q in [HOME, *(arm.random_configuration(rng) for _ in range(6))]:
        y = scene.matrices(q)["y"]
        d = ref.distances(ref.q_of(q))
        worst = max(worst, float(np.abs(y - d).max()))
    print(
        f"\nlargest |d - d_pinocchio| over {c.n_pairs} pairs and 7 configurations: {worst:.2e} m"
    )
    assert worst < 1e-6


def test_rows_match_finite_differences_on_the_meshes(arm: KinematicTree) -> None:
    c = Collision("c", srdf_file=SRDF, activation_distance=10.0, obstacles=["sphere .5 0 .4 .1"])
    scene = Scene(arm, [c])
    rng = np.random.default_rng(5)
    for _ in range(3):
        q = HOME + rng.normal(0.0, 0.3, 7)
        m = scene.matrices(q)
        np.testing.assert_allclose(m["A"], _fd(scene, q), atol=1e-6)
        assert np.all(m["B"] == 0.0) and np.all(m["wy"] > 0.0)
        # y'_d: the damper toward margin + buffer.
        np.testing.assert_allclose(m["ydot"], c.gain * (c.margin + c.buffer - m["y"]))


def test_max_rows_keeps_the_closest_pairs(arm: KinematicTree) -> None:
    every = Collision("e", srdf_file=SRDF, activation_distance=10.0)
    few = Collision("f", srdf_file=SRDF, activation_distance=10.0, max_rows=5)
    s_every, s_few = Scene(arm, [every]), Scene(arm, [few])
    q = HOME + 0.2
    y_all, y_few = s_every.matrices(q)["y"], s_few.matrices(q)["y"]
    assert few.n_rows == 5 and every.n_rows == 44
    np.testing.assert_allclose(np.sort(y_few), np.sort(y_all)[:5])
    with pytest.raises(ConfigError, match="max_rows must be a whole number"):
        ConstraintConfig("c", "collision", max_rows=2.5).validate()


def test_far_pairs_are_off_and_not_queried(arm: KinematicTree) -> None:
    c = Collision("c", srdf_file=SRDF)  # margin 0.02 + activation 0.1
    m = Scene(arm, [c]).matrices(HOME)
    far = m["y"] > c.margin + c.activation_distance
    assert far.any() and np.all(m["wy"][far] == 0.0)
    culled = ~c._queried  # bounding spheres apart: no query, y a lower bound, A = 0
    assert culled.sum() > c.n_pairs // 2 and np.all(m["A"][culled] == 0.0)
    assert np.all(m["y"][culled] > c.margin + c.activation_distance)


def _near_pose() -> np.ndarray:
    """The arm folded against its base (after 3 s of the demo scenario)."""
    from itasc_bench.collision import _scenario_path

    cfg = load_config(share_file("config", "panda_self_collision.yaml"))
    cfg = dataclasses.replace(cfg, joint_limits={})  # folded faster without Franka's limits
    return _scenario_path(
        Controller(KinematicTree.from_urdf_file(erd_urdf_path("panda")), cfg), 3.0
    )[-1]


def test_an_inequality_that_the_motion_keeps_costs_nothing(arm: KinematicTree) -> None:
    """Near the base, a target that moves the arm away: q' as without the constraint."""
    q = _near_pose()
    c = Collision("c", srdf_file=SRDF)
    up = arm.forward_kinematics(q, "panda_hand")
    up[:3, 3] += [0.05, 0.0, 0.1]
    ee_alone = CopyPose("ee", "panda_hand")
    ee_alone.set_target(up)
    ee = CopyPose("ee", "panda_hand")
    ee.set_target(up)
    with_c = Scene(arm, [ee, c])
    m = with_c.matrices(q)
    assert np.count_nonzero(m["wy"][6:]) >= 3  # candidate rows within the activation distance
    qd = with_c.solve(q, 0.002).qdot.copy()
    on = m["wy"][6:] > 0.0
    assert np.all((m["A"][6:] @ qd)[on] > m["ydot"][6:][on])  # no row at its bound
    np.testing.assert_allclose(qd, Scene(arm, [ee_alone]).solve(q, 0.002).qdot, atol=1e-12)


def test_a_violated_inequality_is_held_at_its_bound(arm: KinematicTree) -> None:
    """From home toward a target inside the base: on every tick where the task alone would
    break a row within the activation distance, every such row holds (a bound of the solve,
    not a weighted task), some of them at their bound."""
    c = Collision("c", srdf_file=SRDF)
    ee, alone = CopyPose("ee", "panda_hand"), CopyPose("ee", "panda_hand")
    into = arm.forward_kinematics(HOME, "panda_hand")
    into[:3, 3] = self_collision.TARGET
    ee.set_target(into)
    alone.set_target(into)
    scene, free_scene = Scene(arm, [ee, c]), Scene(arm, [alone])
    q, dt, violated = HOME.copy(), 0.002, 0
    for _ in range(1500):
        m = scene.matrices(q)
        rows, ydot, on = m["A"][6:], m["ydot"][6:], m["wy"][6:] > 0.0
        free = free_scene.solve(q, dt).qdot
        qd = scene.solve(q, dt).qdot.copy()
        if np.any((rows @ free)[on] < ydot[on] - 1e-6):  # the task alone breaks a row
            violated += 1
            rate = rows @ qd
            assert np.all(rate[on] >= ydot[on] - 1e-9)
            assert np.any(np.abs(rate[on] - ydot[on]) < 1e-9)  # held at the bound
        q = q + dt * qd
    assert violated > 100, violated


def test_too_many_pairs_ask_for_max_rows() -> None:
    """Talos: more than MAX_ROWS pairs without its SRDF; 883 with it, 20 rows with max_rows."""
    from robots import erd_robots_dir

    tree = KinematicTree.from_urdf_file(erd_urdf_path("talos"))
    srdf = str(erd_robots_dir() / "talos_data" / "srdf" / "talos.srdf")
    with pytest.raises(ConfigError, match=r"collision pairs would be \d+ rows, more than 1000"):
        Controller(tree, ControllerConfig(constraints=[ConstraintConfig("c", "collision")]))
    cfg = ConstraintConfig("c", "collision", srdf_file=srdf, max_rows=20.0)
    c = Controller(tree, ControllerConfig(constraints=[cfg])).constraint("c")
    assert isinstance(c, Collision) and c.n_pairs == 883 and c.n_rows == 20


def test_settings_errors_are_named() -> None:
    with pytest.raises(ConfigError, match="valid obstacles are: 'box x y z size_x"):
        ConstraintConfig("c", "collision", obstacles=["pyramid 0 0 0 1"]).validate()
    with pytest.raises(ConfigError, match=r"srdf_file 'package://nope/x\.srdf' not found"):
        ConstraintConfig("c", "collision", srdf_file="package://nope/x.srdf").validate()
    with pytest.raises(ConfigError, match="two link names"):
        ConstraintConfig("c", "collision", disabled_pairs=["panda_link0"]).validate()
    tree = KinematicTree.from_urdf_file(robot_urdf("panda"))  # kinematics only
    with pytest.raises(ConfigError, match=r"no collision pairs.*geometry: capsules"):
        Controller(tree, ControllerConfig(constraints=[ConstraintConfig("c", "collision")]))


def test_the_params_file_runs_on_the_bundled_urdf_and_a_live_change_keeps_the_geometry() -> None:
    """config/panda_self_collision.yaml names its geometry: it works on the kinematic URDF."""
    cfg = load_config(share_file("config", "panda_self_collision.yaml"))
    ctrl = Controller(KinematicTree.from_urdf_file(robot_urdf("panda")), cfg)
    c = ctrl.constraint("collision")
    # The 44 pairs less the 32 of the finger boxes: the bundled URDF has no fingers.
    assert isinstance(c, Collision) and c.n_pairs == 12
    model = c.model
    ctrl.update_parameters(**{"constraints.collision.margin": 0.03})
    c2 = ctrl.constraint("collision")
    assert isinstance(c2, Collision) and c2.margin == 0.03 and c2.model is model


def test_obstacles_change_live() -> None:
    tree = KinematicTree.from_urdf_file(erd_urdf_path("panda"))
    cc = ConstraintConfig(
        "obs",
        "collision",
        self_collision=False,
        obstacles=["sphere 0.5 0 0.5 0.05"],
        activation_distance=1.0,  # every pair queried: exact distances
    )
    ctrl = Controller(tree, ControllerConfig(joints=ARM, constraints=[cc]))
    ctrl.set_joint_state(ARM, HOME, 0.0)
    ctrl.step(0.0)
    c = ctrl.constraint("obs")
    assert isinstance(c, Collision)
    assert c._queried.all()
    before = c.distances()[("panda_hand", "")]
    ctrl.update_parameters(**{"constraints.obs.obstacles": ["sphere 0.5 0 0.5 0.15"]})
    ctrl.step(0.001)
    c2 = ctrl.constraint("obs")
    assert isinstance(c2, Collision) and c2.n_pairs == c.n_pairs
    assert c2.distances()[("panda_hand", "")] == pytest.approx(before - 0.1, abs=1e-6)
    with pytest.raises(ConfigError, match="valid obstacles are"):
        ctrl.update_parameters(**{"constraints.obs.obstacles": ["sphere 0.5 0 0.5"]})
    assert ctrl.constraint("obs") is c2  # refused whole: nothing changed


def test_a_journal_with_collision_plays_back_exactly() -> None:
    """The active set keeps no state between ticks: a journal attached mid-run replays."""
    from itasc_ros.core.control.journal import Journal, decode
    from itasc_ros.core.control.playback import ConfigHistory, Playback
    from itasc_ros.core.kinematics import spatial

    tree = KinematicTree.from_urdf_file(erd_urdf_path("panda"))
    cfg = load_config(share_file("config", "panda_self_collision.yaml"))
    ctrl = Controller(tree, cfg)
    q = HOME.copy()
    quat = spatial.matrix_to_quat(ctrl.tree.forward_kinematics(q, "panda_hand")[:3, :3])
    journal, messages, dt = Journal(), [], ctrl.period
    acting = 0  # journaled ticks with collision rows within their activation distance
    for k in range(700):
        if k == 400:  # the arm is against its base: collision rows switch on and off
            ctrl.attach_journal(journal)
        now = 1000.0 + k * dt
        ctrl.set_joint_state(ctrl.joint_names, q, now)
        if k in (0, 500):  # then a step 10 cm up
            goal = self_collision.TARGET + np.array([0.0, 0.0, 0.1 if k else 0.0])
            ctrl.set_target("ee", "", goal, quat, now)
        q = q + ctrl.step(now).qdot * dt
        if ctrl.journal is not None:
            acting += bool(np.any(ctrl.scene._wy[6:] > 0.0))
            if k % 100 == 0:
                ctrl.write_snapshot(ctrl.journal)
            messages.append(ctrl.journal.take().copy())
    pb = Playback(ConfigHistory(0, cfg, {}, {0.0: lambda: tree}))
    for data in messages:
        msg = decode(data)
        pb.feed(msg.sequence, msg.records)
    assert pb.log.problems == [] and pb.log.state_mismatches == 0
    assert len(pb.ticks) == 300 and all(t.published for t in pb.ticks)
    assert max(t.diff for t in pb.ticks) == 0.0
    assert acting > 0, acting


def test_self_collision_scenario_keeps_the_margin(tmp_path: Path) -> None:
    m = self_collision.run(tmp_path, quick=True)
    print("\n" + json.dumps(m))
    json.dumps(m)  # JSON-able
    assert (tmp_path / "self_collision.png").stat().st_size > 10_000
    assert m["collision_pairs"] == 44 and m["collision_margin_m"] == 0.02
    assert m["min_collision_distance_m"] >= m["collision_margin_m"] - 0.001
    # The hand went toward the target inside the base while its whole pose task could: the
    # collision rows are bounds of the task, which is scaled along its direction (from the
    # decelerating motion's point nearest zero while the motion limits brake the arm: the
    # orientation held within 1 mrad); it stops where no motion along it keeps the rows and
    # joint 4's limit, closer to the target than it started.
    assert m["final_position_error_m"] < 0.6 * m["start_position_error_m"]
    assert m["final_orientation_error_rad"] < 1e-3
    # Independently: Pinocchio + coal at the final configuration agree.
    arm = KinematicTree.from_urdf_file(erd_urdf_path("panda")).select_joints(ARM)
    c = Collision("c", srdf_file=SRDF, activation_distance=10.0)
    Scene(arm, [c])
    ref = pinocchio_reference(str(erd_urdf_path("panda")), arm, c)
    q = np.array(m["final_tick_q_rad"])  # the state of the last tick's distances
    d = ref.distances(ref.q_of(q)).min()
    assert d == pytest.approx(m["final_collision_distance_m"], abs=1e-5)
