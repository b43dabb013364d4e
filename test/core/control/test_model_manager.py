"""itasc_ros.core.control.model_manager: the model lifecycle itasc_node carries out, in process.

A good URDF installs; one that does not parse keeps the model; one that does not fit drops
it (one zero on a commanding controller); a refusable request changes nothing; targets go to
a model of the same robot only; the last joint state is replayed with its own reception time.
The node-level counterparts over DDS are test_hostile_urdfs.py and test_faults.py.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from itasc_ros.core import Controller, ControllerConfig, KinematicTree
from itasc_ros.core.control import model_manager as mm
from itasc_ros.core.control.model_manager import (
    SAME_URDF,
    ModelChange,
    ModelManager,
    parse_urdf,
    read_urdf_file,
    urdf_digest,
)
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_of
from itasc_ros.core.kinematics.urdf import MAX_URDF_BYTES
from itasc_ros.params import load_config

REPO = Path(__file__).resolve().parents[3]
PANDA_XML = (REPO / "urdf" / "panda.urdf").read_bytes()
UR5_XML = (REPO / "urdf" / "ur5.urdf").read_bytes()
HOME = home_of("panda")

#: config/panda.yaml: ``joints`` names the Panda's joints (the UR5 does not fit)
PANDA = load_config(REPO / "config" / "panda.yaml")
# The Panda's joint_limits name Panda joints: a configuration with them refuses another robot
# (test_motion_limits.py); these tests switch robots under one configuration.
PANDA.joint_limits = {}


def _any_robot() -> ControllerConfig:
    """panda.yaml with ``joints`` empty, no effector link and a posture of every joint (to
    the middle of its range): fits the Panda and the UR5."""
    d = PANDA.to_dict()
    d["joints"] = []
    d["constraints"][0]["link"] = ""
    d["constraints"][1].update(joints=[], values=[])  # the posture
    return ControllerConfig.from_dict(d)


ANY_ROBOT = _any_robot()


def parsed(xml: bytes) -> tuple[str, KinematicTree | None, str]:
    """(digest, tree, why) as the node's parse step gives them."""
    tree, why = parse_urdf(xml)
    return urdf_digest(xml), tree, why


def install(
    m: ModelManager[object],
    xml: bytes = PANDA_XML,
    config: ControllerConfig = PANDA,
    source: str = "topic",
) -> Controller:
    out = m.take(source, *parsed(xml), config)
    assert out.change is ModelChange.INSTALLED, out.reason
    assert m.controller is not None
    return m.controller


def command(ctrl: Controller, now: float, q: np.ndarray | None = None) -> None:
    """Joint state and a target 5 cm ahead of the effector, one step: the controller commands."""
    q = HOME if q is None else q
    ctrl.set_joint_state(ctrl.joint_names, q, now)
    eff, _ = ctrl.poses("ee")
    goal = eff.copy()
    goal[:3, 3] += [0.05, 0.0, 0.0]
    ctrl.set_target("ee", "", goal[:3, 3], spatial.matrix_to_quat(goal), now)
    out = ctrl.step(now)
    assert out.status == "active" and out.publish and ctrl.commanding, out.reason


# ------------------------------------------------------------------------------ install
def test_a_good_urdf_installs() -> None:
    m: ModelManager[object] = ModelManager()
    assert m.controller is None and m.current_digest == ""
    out = m.take("parameter", *parsed(PANDA_XML), PANDA)
    assert out.change is ModelChange.INSTALLED and out.model_changed
    assert out.reason == "" and out.zero_on is None and out.pending == {}
    ctrl = m.controller
    assert ctrl is not None and ctrl.tree.name == "panda"
    assert m.digest == m.current_digest == urdf_digest(PANDA_XML)
    assert (m.source, m.error, m.rejections) == ("parameter", "", 0)
    assert out.logs == (
        (
            logging.INFO,
            f"model 'panda' from the parameter: joints {ctrl.joint_names}, "
            "constraints ['ee', 'posture']",
        ),
    )


def test_a_new_model_on_a_commanding_controller_sends_it_one_zero() -> None:
    m: ModelManager[object] = ModelManager()
    old = install(m)
    assert install(m) is not old
    out = m.take("topic", *parsed(PANDA_XML), PANDA)  # not commanding: no zero
    assert out.zero_on is None
    old = m.controller
    assert old is not None
    command(old, 10.0)
    out = m.take("topic", *parsed(PANDA_XML), PANDA)
    assert out.change is ModelChange.INSTALLED and out.zero_on is old
    assert m.controller is not old and m.source == "topic"


def test_enabled_applies_to_the_installed_and_every_later_controller() -> None:
    m: ModelManager[object] = ModelManager()
    m.set_enabled(False)
    ctrl = install(m)
    assert not ctrl.enabled
    m.set_enabled(True)
    assert ctrl.enabled
    m.set_enabled(False)
    assert not ctrl.enabled and not install(m).enabled


# ------------------------------------------------------------------------------ rejected
def test_an_unparsable_urdf_keeps_the_model() -> None:
    m: ModelManager[object] = ModelManager()
    ctrl = install(m)
    command(ctrl, 10.0)
    digest, tree, why = parsed(b"<robot name='x'><link")
    assert tree is None and why
    out = m.take("topic", digest, tree, why, PANDA)
    reason = f"URDF from the topic rejected (keeping model 'panda'): {why}"
    assert out.change is ModelChange.KEPT and not out.model_changed
    assert out.reason == reason and out.logs == ((logging.ERROR, reason),)
    assert out.zero_on is None
    assert m.controller is ctrl and ctrl.commanding
    assert (m.error, m.rejections, m.source) == (reason, 1, "topic")
    assert m.current_digest == urdf_digest(PANDA_XML)


def test_an_unparsable_urdf_without_a_model_leaves_none() -> None:
    m: ModelManager[object] = ModelManager()
    out = m.take("parameter", "d", None, "not XML", PANDA)
    reason = (
        "URDF from the parameter rejected (no model, no command until a good URDF arrives): "
        "not XML"
    )
    assert out.change is ModelChange.IDLE and out.reason == reason and out.zero_on is None
    assert m.controller is None and m.error == reason and m.rejections == 1
    install(m)
    assert m.error == ""  # a good URDF clears it


def test_a_urdf_that_does_not_fit_drops_the_model_with_one_zero() -> None:
    m: ModelManager[object] = ModelManager()
    old = install(m, source="topic")
    command(old, 10.0)
    out = m.take("topic", *parsed(UR5_XML), PANDA)
    assert out.change is ModelChange.DROPPED and out.model_changed
    assert out.zero_on is old  # it was commanding
    assert out.reason.startswith(
        "URDF from the topic rejected (model 'panda' dropped, no command until a fitting URDF "
        "arrives): robot 'ur5' does not fit the configuration: "
    ), out.reason
    assert "panda_joint1" in out.reason
    assert out.logs == ((logging.ERROR, out.reason),)
    assert m.controller is None and (m.digest, m.source, m.current_digest) == ("", "", "")
    assert m.error == out.reason and m.rejections == 1
    # no model now: the next unfit URDF has nothing to drop; a fitting one comes back
    again = m.take("topic", *parsed(UR5_XML), PANDA)
    assert again.change is ModelChange.IDLE and again.zero_on is None
    back = m.take("topic", *parsed(PANDA_XML), PANDA)
    assert back.change is ModelChange.INSTALLED and back.zero_on is None and m.error == ""


def test_a_model_that_was_not_commanding_is_dropped_without_a_zero() -> None:
    m: ModelManager[object] = ModelManager()
    install(m)
    out = m.take("topic", *parsed(UR5_XML), PANDA)
    assert out.change is ModelChange.DROPPED and out.zero_on is None


def test_an_internal_error_building_the_controller_drops_the_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    m: ModelManager[object] = ModelManager()
    old = install(m)
    command(old, 10.0)

    def broken(*args: object) -> Controller:
        raise RuntimeError("boom")

    monkeypatch.setattr(mm, "Controller", broken)
    out = m.take("topic", *parsed(PANDA_XML), PANDA)
    assert out.change is ModelChange.DROPPED and out.zero_on is old
    assert out.reason.endswith("robot 'panda': internal error: RuntimeError: boom")


def test_refuse_changes_nothing() -> None:
    m: ModelManager[object] = ModelManager()
    ctrl = install(m, source="parameter")
    command(ctrl, 10.0)
    digest = m.digest
    for xml in (UR5_XML, b"garbage"):
        out = m.take("parameter", *parsed(xml), PANDA, refuse=True)
        assert out.change is ModelChange.REFUSED and not out.model_changed
        assert out.reason.startswith("URDF from the parameter refused, nothing changed: ")
        assert out.logs == ((logging.ERROR, out.reason),) and out.zero_on is None
        assert m.controller is ctrl and ctrl.commanding
        assert (m.digest, m.source, m.error) == (digest, "parameter", "")
    assert (
        "robot 'ur5' does not fit the configuration"
        in m.take("parameter", *parsed(UR5_XML), PANDA, refuse=True).reason
    )
    assert m.rejections == 3
    out = m.reject("file", "cannot read urdf_file 'x'", refuse=True)
    assert out.reason == "URDF from the file refused, nothing changed: cannot read urdf_file 'x'"
    assert m.controller is ctrl


# ------------------------------------------------------------------------------ same URDF
def test_the_same_urdf_again_clears_the_error() -> None:
    m: ModelManager[object] = ModelManager()
    ctrl = install(m, source="topic")
    digest = m.current_digest
    m.take("topic", "other", None, "bad", PANDA)
    assert m.error
    out = m.take("topic", digest, None, SAME_URDF, PANDA)
    assert out.change is ModelChange.SAME and out.reason == "" and out.zero_on is None
    assert out.logs == ((logging.INFO, "URDF from the topic is the current model's again"),)
    assert m.error == "" and m.controller is ctrl
    assert m.take("topic", digest, None, SAME_URDF, PANDA).logs == ()  # no error: no log


def test_an_outdated_same_urdf_result_is_ignored() -> None:
    m: ModelManager[object] = ModelManager()
    ctrl = install(m, source="topic")
    m.take("topic", "other", None, "bad", PANDA)
    error = m.error
    out = m.take("topic", "digest of an older model", None, SAME_URDF, PANDA)
    assert out.change is ModelChange.IGNORED and out.logs == ()
    assert m.error == error and m.controller is ctrl


def test_the_topic_is_ignored_while_the_parameter_set_the_model() -> None:
    m: ModelManager[object] = ModelManager()
    ctrl = install(m, source="parameter")
    out = m.take("topic", *parsed(UR5_XML), ANY_ROBOT)
    assert out.change is ModelChange.IGNORED and out.reason == "" and out.logs == ()
    assert m.controller is ctrl and m.rejections == 0


# ------------------------------------------------------------------------------ carry-over
def test_targets_are_carried_over_to_the_same_robot_only() -> None:
    m: ModelManager[object] = ModelManager()
    panda = install(m, config=ANY_ROBOT, source="topic")
    command(panda, 10.0)
    _, target = panda.poses("ee")
    assert target is not None
    stamp = panda.target_stamp("ee")

    again = install(m, config=ANY_ROBOT, source="topic")  # same root link: carried over
    _, carried = again.poses("ee")
    assert carried is not None and np.allclose(carried, target)
    assert again.target_stamp("ee") == stamp  # its own time, not the install's

    command(again, 11.0)
    out = m.take("topic", *parsed(UR5_XML), ANY_ROBOT)  # another root link: not carried
    assert out.change is ModelChange.INSTALLED and out.zero_on is again
    ur5 = m.controller
    assert ur5 is not None and ur5.tree.root_link != again.tree.root_link
    assert ur5.poses("ee")[1] is None and ur5.target_stamp("ee") == -np.inf


def test_a_target_the_new_model_refuses_is_not_carried_over() -> None:
    m: ModelManager[object] = ModelManager()
    old = install(m, source="parameter")
    old.set_joint_state(old.joint_names, HOME, 10.0)
    far = np.array([3.0, 0.0, 0.5])  # within reach + 2 m, beyond reach + 0.5 m
    old.set_target("ee", "", far, np.array([0.0, 0.0, 0.0, 1.0]), 10.0)
    tight = ControllerConfig.from_dict({**PANDA.to_dict(), "target_reach_margin": 0.5})
    out = m.take("parameter", *parsed(PANDA_XML), tight)
    assert out.change is ModelChange.INSTALLED
    assert out.logs[0][0] == logging.WARNING
    assert out.logs[0][1].startswith("target of 'ee' not carried over: "), out.logs
    assert "beyond the robot's reach" in out.logs[0][1]
    assert out.logs[-1][0] == logging.INFO  # installed all the same
    assert m.controller is not None and m.controller.poses("ee")[1] is None


# ------------------------------------------------------------------------------ joint state
def test_the_last_joint_state_is_replayed_with_its_reception_time() -> None:
    m: ModelManager[object] = ModelManager()
    names = list(PANDA.joints)
    m.remember_joint_state(names, HOME, 5.0, 10.0)  # header stamp 5.0, received at 10.0
    ctrl = install(m)  # installed at 10.5 (a long parse)
    assert ctrl.has_joint_state and ctrl.joint_state_stamp == 10.0
    assert np.allclose(ctrl.q, HOME)
    eff, _ = ctrl.poses("ee")
    ctrl.set_target("ee", "", eff[:3, 3] + [0.05, 0, 0], spatial.matrix_to_quat(eff), 10.5)
    out = ctrl.step(10.5)
    assert out.status == "stale" and not out.publish  # 0.5 s old: no command from it
    # the next fresh state re-anchors the stamp order (0.6 s of stamps ahead, 0.51 s later)
    ctrl.set_joint_state(names, HOME, 10.51, 5.6)
    out = ctrl.step(10.51)
    assert out.status == "active" and out.publish


def test_a_joint_state_of_another_robot_is_not_replayed() -> None:
    m: ModelManager[object] = ModelManager()
    m.remember_joint_state(list(PANDA.joints), HOME, None, 10.0)
    ur5 = install(m, UR5_XML, ANY_ROBOT)  # the InputError stays inside
    assert not ur5.has_joint_state


# ------------------------------------------------------------------------------ pending
def test_targets_held_without_a_model_are_handed_over_once() -> None:
    m: ModelManager[object] = ModelManager()
    first, latest = object(), object()
    m.hold_target("ee", first)
    m.hold_target("ee", latest)  # the latest per constraint
    out = m.take("parameter", *parsed(PANDA_XML), PANDA)
    assert out.pending == {"ee": latest} and m.pending_targets == {}
    assert m.take("parameter", *parsed(PANDA_XML), PANDA).pending == {}


# ------------------------------------------------------------------------------ helpers
def test_parse_urdf_never_raises_and_digest_is_of_the_bytes() -> None:
    tree, why = parse_urdf(PANDA_XML)
    assert tree is not None and why == ""
    for bad in (b"", b"<robot", "<robot name='r'/>", b"\xff\xfe\x00garbage"):
        tree, why = parse_urdf(bad)
        assert tree is None and why
    assert urdf_digest("<r/>") == urdf_digest(b"<r/>") != urdf_digest("<r />")
    assert urdf_digest("\udcff")  # a lone surrogate (from a decoded topic) hashes too


def test_read_urdf_file(tmp_path: Path) -> None:
    assert read_urdf_file(str(REPO / "urdf" / "panda.urdf")) == (PANDA_XML, "")
    missing = str(tmp_path / "missing.urdf")
    data, why = read_urdf_file(missing)
    assert data is None and why.startswith(f"cannot read urdf_file {missing!r}: ")
    big = tmp_path / "big.urdf"
    with open(big, "wb") as fh:
        fh.truncate(MAX_URDF_BYTES + 1)
    assert read_urdf_file(str(big)) == (
        None,
        f"urdf_file {str(big)!r} is larger than the {MAX_URDF_BYTES} bytes accepted",
    )


def test_health_and_model_manager_import_no_ros() -> None:
    code = (
        "import sys, itasc_ros.core.control.health, itasc_ros.core.control.model_manager\n"
        "ros = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('rclpy', 'diagnostic_msgs', 'std_msgs', 'geometry_msgs', 'sensor_msgs', "
        "'visualization_msgs', 'rcl_interfaces'))\n"
        "assert not ros, ros\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)


def test_a_reload_keeps_a_world_target_in_the_world_and_the_odometry() -> None:
    """A new model of the same robot (a reload) goes on holding the target fixed in odom."""
    import dataclasses

    cfg = dataclasses.replace(PANDA, world_frame="odom")
    m: ModelManager[object] = ModelManager()
    m.take("parameter", *parsed(PANDA_XML), cfg)
    old = m.controller
    assert old is not None
    base = np.eye(4)
    base[:3, 3] = [1.0, 2.0, 0.0]
    odom = np.r_[base[:3, 3], 0.0, 0.0, 0.0, 1.0, np.zeros(6)]
    old.set_joint_state(old.joint_names, HOME, 1.0)
    old.set_odometry("odom", "", odom, 1.0)
    goal = base @ old.tree.forward_kinematics(HOME, "panda_hand")
    goal[:3, 3] += [0.03, 0.0, 0.0]
    old.set_target("ee", "odom", goal[:3, 3], spatial.matrix_to_quat(goal), 1.0)
    m.remember_joint_state(old.joint_names, HOME, None, 1.0)
    out = m.take("parameter", f"{urdf_digest(PANDA_XML)}-reload", *parsed(PANDA_XML)[1:], cfg)
    new = m.controller
    assert out.model_changed and new is not None and new is not old
    frame, pose = new.given_target("ee") or ("", np.eye(4))
    assert frame == "odom" and np.allclose(pose, goal)  # in the world, not the root
    odometry = new.odometry()
    assert odometry is not None and np.allclose(odometry[0], base)
    step = new.step(1.004)
    assert step.status == "active", step.reason
    # The target seen from the base (approached along the straight-line reference from the
    # effector, 3 cm away): near the goal minus the base, not 2.2 m off in the root frame.
    placed = new.poses("ee")[1]
    assert placed is not None
    assert np.linalg.norm(placed[:3, 3] - (goal[:3, 3] - base[:3, 3])) <= 0.03 + 1e-9
