"""The simulated robot: the pure integrator, and the node over real DDS in its own processes.

Oracles: the commanded velocity itself (the slope of the published positions against their
header stamps must equal it), the URDF limits (positions never leave them, speeds are clipped to
them), and ros2_control's forward command controller (a command with the wrong length or a
non-finite value is dropped and the previous one stays in force).

Three simulator processes (``python -m itasc_ros.tools.sim_robot``) run side by side in one
private domain, each in its own namespace, one per command type; this process publishes commands
and subscribes to ``joint_states`` with sensor-data QoS (as the node does).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rclpy
from builtin_interfaces.msg import Duration
from procs import (
    PANDA_URDF,
    REPO,
    SIM_ROBOT_MODULE,
    fifo_permitted,
    node_command,
    read_log,
    ros_context,
    start_ros,
    stop_process,
    thread_policies,
    wait_until,
)
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from itasc_ros.core import ConfigurationError, KinematicTree, UnknownJointError
from itasc_ros.core.kinematics import HOME_POSES, home_pose
from itasc_ros.tools.dds_env import local_dds_env
from itasc_ros.tools.sim_robot.commands import (
    velocity_from_joint_state,
    velocity_from_multi_array,
    velocity_from_trajectory,
)
from itasc_ros.tools.sim_robot.joints import CommandRejectedError, SimulatedJoints

PANDA = PANDA_URDF
UR5 = REPO / "urdf" / "ur5.urdf"


@pytest.fixture(scope="module")
def panda() -> KinematicTree:
    return KinematicTree.from_urdf_file(PANDA)


@pytest.fixture(scope="module")
def ur5() -> KinematicTree:
    return KinematicTree.from_urdf_file(UR5)


# =========================================================================== pure integrator
def test_default_initial_pose_is_home_or_neutral(panda: KinematicTree, ur5: KinematicTree) -> None:
    assert np.allclose(SimulatedJoints(panda).q, HOME_POSES["panda"])
    assert np.allclose(SimulatedJoints(ur5).q, HOME_POSES["ur5"])
    assert np.allclose(home_pose(panda), HOME_POSES["panda"])
    # A robot without a home pose starts at the tree's neutral pose.
    xml = PANDA.read_text().replace('name="panda"', 'name="not_a_panda"', 1)
    other = KinematicTree.from_urdf(xml)
    assert other.name == "not_a_panda"
    assert np.allclose(SimulatedJoints(other).q, other.neutral())


def test_integrates_command_exactly(panda: KinematicTree) -> None:
    sim = SimulatedJoints(panda)
    q0 = sim.q
    v = np.array([0.1, -0.2, 0.3, 0.05, -0.4, 0.2, 0.5])
    sim.apply(v)
    for dt in (0.001, 0.002, 0.0005, 0.004):
        sim.step(dt)
    assert np.allclose(sim.q, q0 + v * 0.0075, atol=1e-14)
    assert np.array_equal(sim.velocity, v)
    assert sim.stats.position_clamps == 0 and sim.stats.velocity_clamps == 0
    assert sim.stats.steps == 4 and sim.stats.commands_applied == 1


def test_command_is_held_until_stopped(panda: KinematicTree) -> None:
    sim = SimulatedJoints(panda)
    q0 = sim.q
    sim.apply(np.full(7, 0.1))
    sim.step(0.5)
    sim.step(0.5)
    assert np.allclose(sim.q, q0 + 0.1)
    sim.stop()
    sim.step(1.0)
    assert np.allclose(sim.q, q0 + 0.1)
    assert np.array_equal(sim.velocity, np.zeros(7))


def test_velocity_limits_clip_each_joint(panda: KinematicTree) -> None:
    sim = SimulatedJoints(panda)
    vmax = panda.velocity_limits
    sim.apply([10.0, -10.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    assert np.array_equal(sim.command[:3], [vmax[0], -vmax[1], 1.0])
    assert sim.stats.velocity_clamps == 2


def test_position_limits_stop_the_joint(panda: KinematicTree) -> None:
    sim = SimulatedJoints(panda)
    j6 = sim.index["panda_joint6"]
    v = np.zeros(7)
    v[j6] = -2.0
    v[0] = 0.1
    sim.apply(v)
    for _ in range(200):  # 2 s at 100 Hz: joint 6 reaches its lower limit after ~0.8 s
        q = sim.step(0.01)
        assert np.all(q >= panda.lower) and np.all(q <= panda.upper)
    assert sim.q[j6] == panda.lower[j6]
    assert sim.velocity[j6] == 0.0 and sim.velocity[0] == pytest.approx(0.1)
    assert sim.q[0] == pytest.approx(0.2)  # the other joints keep moving
    assert 100 <= sim.stats.position_clamps <= 125
    # Moving away from the limit is allowed at once.
    v[j6] = 0.5
    sim.apply(v)
    sim.step(0.1)
    assert sim.q[j6] == pytest.approx(panda.lower[j6] + 0.05)


@pytest.mark.parametrize(
    ("command", "match"),
    [
        ([0.1] * 6, "6 values; expected 7"),
        ([0.1] * 8, "8 values; expected 7"),
        ([0.1] * 6 + [math.nan], "non-finite"),
        ([0.1] * 6 + [math.inf], "non-finite"),
    ],
)
def test_bad_commands_are_rejected_and_previous_kept(
    panda: KinematicTree, command: list[float], match: str
) -> None:
    sim = SimulatedJoints(panda)
    sim.apply(np.full(7, 0.2))
    with pytest.raises(CommandRejectedError, match=match):
        sim.apply(command)
    assert np.array_equal(sim.command, np.full(7, 0.2))
    assert sim.stats.commands_applied == 1


def test_joint_subset_order_and_initial_positions(ur5: KinematicTree) -> None:
    joints = ["wrist_1_joint", "shoulder_pan_joint", "elbow_joint"]
    sim = SimulatedJoints(ur5, joints, [0.1, 0.2, 0.3])
    assert sim.names == joints and sim.n == 3
    assert np.array_equal(sim.q, [0.1, 0.2, 0.3])
    assert np.array_equal(sim.upper, ur5.upper[[3, 0, 2]])
    assert np.array_equal(sim.velocity_limits, ur5.velocity_limits[[3, 0, 2]])
    # Default: the home pose of those joints.
    home = SimulatedJoints(ur5, joints).q
    assert np.allclose(home, np.array(HOME_POSES["ur5"])[[3, 0, 2]])


def test_a_command_runs_out_at_its_instant_however_late_the_step() -> None:
    from itasc_ros.tools.sim_robot.node import CommandTimeout

    timeout = CommandTimeout(0.3, since=10.0)
    assert timeout.expiry(11.0) is None  # the initial zero command does not run out
    timeout.renew(12.0)
    assert timeout.expiry(12.29) is None
    assert timeout.expiry(12.45) == pytest.approx(12.3)  # a step 150 ms late: from 12.3 s
    assert timeout.expiry(12.5) is None  # once
    timeout.renew(13.0)
    timeout.hold_for(0.0)  # held for ever
    assert timeout.expiry(100.0) is None


def test_configuration_errors(panda: KinematicTree) -> None:
    with pytest.raises(UnknownJointError, match="unknown joint 'nope'; joints are: 'panda_j"):
        SimulatedJoints(panda, ["nope"])
    with pytest.raises(ConfigurationError, match="repeat"):
        SimulatedJoints(panda, ["panda_joint1", "panda_joint1"])
    with pytest.raises(ConfigurationError, match="3 values; expected 7"):
        SimulatedJoints(panda, None, [0.0, 0.0, 0.0])
    with pytest.raises(ConfigurationError, match="panda_joint4=0 not in"):
        SimulatedJoints(panda, None, [0.0] * 7)
    with pytest.raises(ConfigurationError, match="finite"):
        SimulatedJoints(panda, None, [math.nan] * 7)
    with pytest.raises(ConfigurationError, match="time step"):
        SimulatedJoints(panda).step(-0.001)


def test_message_conversions(panda: KinematicTree) -> None:
    sim = SimulatedJoints(panda)
    names = sim.names
    assert np.array_equal(
        velocity_from_multi_array(Float64MultiArray(data=[0.5] * 7), sim), np.full(7, 0.5)
    )
    # JointState: by name, unnamed joints zero; unknown names rejected.
    js = JointState(name=[names[3], names[0]], velocity=[0.4, -0.1])
    expected = np.zeros(7)
    expected[3], expected[0] = 0.4, -0.1
    assert np.array_equal(velocity_from_joint_state(js, sim), expected)
    with pytest.raises(CommandRejectedError, match="names joint 'elbow'"):
        velocity_from_joint_state(JointState(name=["elbow"], velocity=[0.1]), sim)
    with pytest.raises(CommandRejectedError, match="no velocity"):
        velocity_from_joint_state(JointState(name=[names[0]], position=[0.1]), sim)
    with pytest.raises(CommandRejectedError, match="non-finite"):
        velocity_from_joint_state(JointState(name=[names[0]], velocity=[math.nan]), sim)
    with pytest.raises(CommandRejectedError, match="twice"):
        velocity_from_joint_state(JointState(name=[names[0]] * 2, velocity=[0.1, 0.1]), sim)
    # JointTrajectory: velocities of the first point; else (positions - q) / time_from_start.
    q = sim.q
    point = JointTrajectoryPoint(
        positions=list(q + 0.01), velocities=[0.2] * 7, time_from_start=Duration(nanosec=10**7)
    )
    traj = JointTrajectory(joint_names=names, points=[point])
    assert np.allclose(velocity_from_trajectory(traj, sim, q), 0.2)
    point = JointTrajectoryPoint(
        positions=[q[1] + 0.03], time_from_start=Duration(nanosec=10**8)
    )  # only joint 2, 0.03 rad in 0.1 s
    traj = JointTrajectory(joint_names=[names[1]], points=[point])
    expected = np.zeros(7)
    expected[1] = 0.3
    assert np.allclose(velocity_from_trajectory(traj, sim, q), expected)
    with pytest.raises(CommandRejectedError, match="time_from_start"):
        velocity_from_trajectory(
            JointTrajectory(joint_names=names, points=[JointTrajectoryPoint(positions=list(q))]),
            sim,
            q,
        )
    with pytest.raises(CommandRejectedError, match="no points"):
        velocity_from_trajectory(JointTrajectory(joint_names=names), sim, q)


# =========================================================================== over DDS
@dataclass
class SimProcess:
    ns: str
    proc: subprocess.Popen[bytes]
    command_type: Any  # message class of the commands
    rate: float

    def output(self) -> str:
        return read_log(self.proc)


def start_sim(
    domain: int, tmp: Path, ns: str, command_type: Any, rate: float, *params: str
) -> SimProcess:
    files, given = [], []
    for prm in params:
        name, _, value = prm.partition(":=")
        if name == "robot_description":  # XML: through a params file, as a launch file does
            path = tmp / f"{ns}.yaml"
            doc = {"/**": {"ros__parameters": {"robot_description": value}}}
            path.write_text(json.dumps(doc))  # JSON is YAML
            files.append(path)
        else:
            given.append(prm)
    proc = start_ros(
        domain,
        f"rate:={rate}",
        "command_topic:=commands",
        *given,
        ns=f"/{ns}",
        params_files=files,
        module=SIM_ROBOT_MODULE,
        name=f"sim_robot_{ns}",
    )
    return SimProcess(ns, proc, command_type, rate)


def stop_sim(sim: SimProcess, sig: int = signal.SIGINT) -> int:
    return stop_process(sim.proc, sig, timeout=5.0)


@pytest.fixture(scope="module")
def sims(
    tmp_path_factory: pytest.TempPathFactory, dds_domain: int
) -> Iterator[dict[str, SimProcess]]:
    """Three simulators started together (their start-up overlaps)."""
    tmp = tmp_path_factory.mktemp("sim_robot")
    started = {
        "fwd": start_sim(dds_domain, tmp, "fwd", Float64MultiArray, 500.0, f"urdf_file:={PANDA}"),
        "jtc": start_sim(
            dds_domain,
            tmp,
            "jtc",
            JointTrajectory,
            250.0,
            f"urdf_file:={UR5}",
            "command_type:=trajectory_msgs/JointTrajectory",
            "joints:=[wrist_1_joint,shoulder_pan_joint,elbow_joint]",
            "initial_positions:=[-1.0,0.5,1.0]",
            "command_timeout:=0.3",
        ),
        "js": start_sim(
            dds_domain,
            tmp,
            "js",
            JointState,
            250.0,
            f"robot_description:={PANDA.read_text()}",  # from a params file, see start_sim
            "command_type:=sensor_msgs/JointState",
            "latency:=0.15",
            "noise:=0.002",
            "seed:=7",
        ),
    }
    try:
        yield started
    finally:
        codes = {ns: stop_sim(s) for ns, s in started.items() if ns != "js"}
        codes["js"] = stop_sim(started["js"], signal.SIGTERM)
        for ns, code in codes.items():
            assert code == 0, f"{ns} exited with {code}:\n{started[ns].output()}"


@pytest.fixture(scope="module")
def ros(dds_domain: int) -> Iterator[tuple[Context, SingleThreadedExecutor]]:
    with ros_context(dds_domain) as ros_:
        yield ros_


class Probe:
    """Commands one simulator and records its joint states (stamp, positions, velocities)."""

    def __init__(self, ros: tuple[Context, SingleThreadedExecutor], sim: SimProcess) -> None:
        context, executor = ros
        self.sim = sim
        self.node = rclpy.create_node(f"probe_{sim.ns}", context=context)
        self.lock = threading.Lock()
        self.names: list[str] = []
        self.stamps: list[float] = []  # [s] header stamps
        self.positions: list[np.ndarray] = []
        self.velocities: list[np.ndarray] = []
        self.stats: list[dict[str, Any]] = []
        self.node.create_subscription(
            JointState, f"/{sim.ns}/joint_states", self._on_js, qos_profile_sensor_data
        )
        self.node.create_subscription(
            String, f"/{sim.ns}/itasc_sim_robot/stats", self._on_stats, 10
        )
        self.pub = self.node.create_publisher(
            sim.command_type,
            f"/{sim.ns}/commands",
            QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE),
        )
        executor.add_node(self.node)
        wait_until(
            lambda: len(self.stamps) > 10 and self.pub.get_subscription_count() > 0,
            timeout=20.0,
            what=f"joint_states of {sim.ns} and its command subscription\n{sim.output()}",
        )

    def _on_js(self, msg: JointState) -> None:
        with self.lock:
            self.names = list(msg.name)
            self.stamps.append(msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec)
            self.positions.append(np.array(msg.position))
            self.velocities.append(np.array(msg.velocity))

    def _on_stats(self, msg: String) -> None:
        with self.lock:
            self.stats.append(json.loads(msg.data))

    def latest(self) -> np.ndarray:
        with self.lock:
            return self.positions[-1].copy()

    def window(self, t0: float, t1: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(stamps (k,), positions (k, n), velocities (k, n)) with t0 <= stamp <= t1.

        A finite window once a state stamped after ``t1`` has come: its states in full.
        """
        if math.isfinite(t1):
            self.wait_through(t1)
        with self.lock:
            t = np.array(self.stamps)
            sel = np.flatnonzero((t >= t0) & (t <= t1))
            return t[sel], np.array(self.positions)[sel], np.array(self.velocities)[sel]

    def drive(self, msg: Any, duration: float, period: float = 0.02) -> tuple[float, float]:
        """Publish ``msg`` every ``period`` for ``duration``.

        Returns:
            The wall-clock times of the first and of the last publish [s] (not of the end of
            the last sleep: a loaded machine may overrun it by tens of milliseconds).
        """
        start = last = now = time.time()
        while now - start < duration:
            last = now
            self.pub.publish(msg)
            time.sleep(period)
            now = time.time()
        return start, last

    def slope(self, t0: float, t1: float) -> np.ndarray:
        """(n,) least-squares rate of change of the positions over [t0, t1] [rad/s]."""
        t, q, _ = self.window(t0, t1)
        assert len(t) > 20, f"only {len(t)} joint states in [{t0}, {t1}]"
        return np.polyfit(t - t[0], q, 1)[0]

    def wait_through(self, t1: float) -> None:
        """Wait for a state stamped after ``t1`` [s] (a loaded machine delivers late)."""

        def check() -> bool:
            with self.lock:
                return bool(self.stamps) and self.stamps[-1] > t1

        wait_until(check, timeout=5.0, what=f"{self.sim.ns} states after {t1}")

    def onset(self, t0: float, joint: int | None = None) -> float:
        """The stamp of the first state after ``t0`` whose velocity is not zero [s].

        Where a test's windows start: a command published at ``t0`` arrives when the machine
        delivers it (a loaded machine may take a few hundred milliseconds); the simulator's
        own delay from arrival to effect is in its stats (``command_delay_ms``).
        """
        moving = np.zeros(0)

        def check() -> bool:
            nonlocal moving
            t, _, vel = self.window(t0, math.inf)
            v = vel if joint is None else vel[:, [joint]]
            moving = t[np.any(v != 0.0, axis=1)] if len(t) else np.zeros(0)
            return len(moving) > 0

        wait_until(check, timeout=5.0, what=f"{self.sim.ns} moving after {t0}")
        return float(moving[0])

    def delays(self, skip: int) -> list[float]:
        """[ms] (shortest, longest) delay from a command's arrival to its effect, from stats.

        The first stats message after the first ``skip`` in whose window a command took effect.
        """
        return list(
            self.wait_stats(lambda s: s["command_delay_ms"] is not None, skip)["command_delay_ms"]
        )

    def wait_stats(self, pred: Callable[[dict[str, Any]], bool], skip: int = 0) -> dict[str, Any]:
        """The latest stats message satisfying ``pred`` (ignoring the first ``skip``)."""
        found: list[dict[str, Any]] = []

        def check() -> bool:
            with self.lock:
                found[:] = [s for s in self.stats[skip:] if pred(s)]
            return bool(found)

        wait_until(check, timeout=3.0, what=f"stats of {self.sim.ns}; got {self.stats[-1:]}")
        return found[-1]


@pytest.fixture(scope="module")
def fwd(ros: tuple[Context, SingleThreadedExecutor], sims: dict[str, SimProcess]) -> Probe:
    return Probe(ros, sims["fwd"])


@pytest.fixture(scope="module")
def jtc(ros: tuple[Context, SingleThreadedExecutor], sims: dict[str, SimProcess]) -> Probe:
    return Probe(ros, sims["jtc"])


@pytest.fixture(scope="module")
def jsc(ros: tuple[Context, SingleThreadedExecutor], sims: dict[str, SimProcess]) -> Probe:
    return Probe(ros, sims["js"])


def array(values: Any) -> Float64MultiArray:
    return Float64MultiArray(data=[float(v) for v in values])


@pytest.mark.dds
def test_fwd_publishes_home_pose_at_rate(fwd: Probe, panda: KinematicTree) -> None:
    assert fwd.names == panda.joint_names
    n_stats = len(fwd.stats)
    now = time.time()
    time.sleep(1.0)
    t, q, v = fwd.window(now, now + 1.0)
    rate = (len(t) - 1) / (t[-1] - t[0])
    # The machine is shared: this probe's queue may drop states (best effort), and the
    # simulator catches a late tick up (a burst of short intervals after a long one) unless it
    # is more than a few periods late, when its schedule restarts and ticks are lost (an
    # overrun); no tick is ever added.
    assert 0.5 * 500.0 < rate < 1.01 * 500.0, f"joint_states at {rate:.1f} Hz"
    assert np.all(np.diff(t) > 0.0)
    assert np.allclose(q, HOME_POSES["panda"]) and np.all(v == 0.0)
    # The simulator's own count of steps: the rate exactly, bar overruns.
    before = fwd.wait_stats(lambda s: True, skip=n_stats)
    stats = fwd.wait_stats(lambda s: s["steps"] > 0, skip=len(fwd.stats))  # a full window
    assert 0.5 * 500.0 < stats["rate_hz"] < 1.01 * 500.0, stats
    if stats["overruns"] == before["overruns"]:
        assert stats["rate_hz"] > 0.97 * 500.0, stats
    assert stats["rate_target_hz"] == 500.0


@pytest.mark.dds
def test_fwd_moves_at_commanded_velocity(fwd: Probe) -> None:
    v = np.array([0.2, -0.1, 0.15, 0.1, -0.2, 0.1, 0.3])
    n_stats = len(fwd.stats)
    start, end = fwd.drive(array(v), 0.6)
    first = fwd.onset(start)
    assert end - first > 0.3, f"the command arrived {first - start:.3f} s after it was sent"
    assert np.allclose(fwd.slope(first, end), v, atol=0.01)
    _, _, vel = fwd.window(first, end)
    assert np.allclose(vel, v)  # published velocity = the command in force
    # The forward controller acts from a command's arrival (no latency configured).
    assert fwd.delays(n_stats) == [0.0, 0.0]
    # Held: still moving after the last message (command_timeout 0, as ros2_control).
    time.sleep(0.2)
    assert np.allclose(fwd.slope(end + 0.05, end + 0.2), v, atol=0.02)
    fwd.drive(array(np.zeros(7)), 0.1)


@pytest.mark.dds
def test_fwd_clips_speed_and_stops_at_position_limit(fwd: Probe, panda: KinematicTree) -> None:
    vmax = panda.velocity_limits
    v = np.zeros(7)
    v[0] = 5.0  # above the 2.175 rad/s limit of joint 1
    v[5] = -5.0  # towards the lower limit of joint 6 (-0.0175 rad), about 0.7 s away
    start, end = fwd.drive(array(v), 1.2)
    fwd.drive(array(np.zeros(7)), 0.1)
    first = fwd.onset(start)
    assert end - first > 0.8, f"the command arrived {first - start:.3f} s after it was sent"
    _, q, vel = fwd.window(start, end + 0.1)
    assert np.all(q >= panda.lower) and np.all(q <= panda.upper)
    assert np.allclose(fwd.slope(first, first + 0.4)[[0, 5]], [vmax[0], -vmax[5]], atol=0.05)
    at_limit = q[:, 5] == panda.lower[5]
    assert at_limit[-1] and np.count_nonzero(at_limit) > 100
    assert np.all(vel[at_limit, 5] == 0.0)  # stopped there, not moving
    stats = fwd.wait_stats(lambda s: s["position_clamps"] > 100)
    assert stats["velocity_clamps"] >= 2 * 10


@pytest.mark.dds
def test_fwd_rejects_wrong_length_and_non_finite(fwd: Probe) -> None:
    fwd.drive(array(np.zeros(7)), 0.1)
    time.sleep(0.05)
    before = fwd.latest()
    rejected0 = max((s["commands_rejected"] for s in fwd.stats), default=0)
    start = time.time()
    for bad in ([0.5] * 6, [0.5] * 8, [0.5] * 6 + [math.nan], [math.inf] * 7):
        fwd.pub.publish(array(bad))
    time.sleep(0.4)
    _, q, vel = fwd.window(start, time.time())
    assert len(q) > 50 and np.all(np.isfinite(q))
    assert np.array_equal(q, np.broadcast_to(before, q.shape)) and np.all(vel == 0.0)
    fwd.wait_stats(lambda s: s["commands_rejected"] >= rejected0 + 4)
    assert "dropped command" in fwd.sim.output()


@pytest.mark.dds
def test_jtc_velocities_positions_and_timeout(jtc: Probe, ur5: KinematicTree) -> None:
    names = ["wrist_1_joint", "shoulder_pan_joint", "elbow_joint"]
    assert jtc.names == names
    assert np.allclose(jtc.latest(), [-1.0, 0.5, 1.0])
    # Streaming with velocities, as the node does (positions = q + q' dt, velocities = q').
    v = np.array([0.3, -0.2, 0.1])
    point = JointTrajectoryPoint(
        positions=list(jtc.latest() + v * 0.004),
        velocities=list(v),
        time_from_start=Duration(nanosec=4_000_000),
    )
    start, end = jtc.drive(JointTrajectory(joint_names=names, points=[point]), 0.6)
    first = jtc.onset(start)
    assert end - first > 0.3, f"the command arrived {first - start:.3f} s after it was sent"
    assert np.allclose(jtc.slope(first, end), v, atol=0.01)
    # command_timeout 0.3 s: the joints stop about 0.3 s after the last message, between the
    # last state that moved and the first at rest (a starved simulator publishes no states
    # between: the stop is at its instant, the states around it may be far apart).
    time.sleep(0.9)
    t, _, vel = jtc.window(end, end + 0.9)
    moving = np.flatnonzero(np.any(vel != 0.0, axis=1))
    assert t[moving[-1]] - end < 0.6 and t[moving[-1] + 1] - end > 0.25
    assert np.all(vel[t > end + 0.6] == 0.0)
    jtc.wait_stats(lambda s: s["command_timeouts"] >= 1)
    # Positions only, for one joint: (positions - q) / time_from_start, others stand still.
    q = jtc.latest()
    point = JointTrajectoryPoint(positions=[q[2] - 0.1], time_from_start=Duration(sec=1))
    start = time.time()
    jtc.pub.publish(JointTrajectory(joint_names=["elbow_joint"], points=[point]))
    first = jtc.onset(start)  # the command times out 0.3 s after it took effect
    time.sleep(max(0.0, first + 0.3 - time.time()))
    assert np.allclose(jtc.slope(first, first + 0.25), [0.0, 0.0, -0.1], atol=0.01)

    # The ~0.9 s without a command before it: a gap over command_gap (0.05 s) in ~/stats, as
    # the stamps of the states integrated at its start and end (the new command's onset).
    def gapped(stats: dict[str, Any]) -> bool:
        return any(b - a > 0.8 and abs(b - first) < 0.05 for a, b in stats["command_gaps"])

    assert jtc.wait_stats(gapped)
    # A joint the simulated robot does not have: rejected.
    point = JointTrajectoryPoint(velocities=[1.0], time_from_start=Duration(nanosec=10**7))
    jtc.pub.publish(JointTrajectory(joint_names=["wrist_3_joint"], points=[point]))
    jtc.wait_stats(lambda s: s["commands_rejected"] >= 1)


@pytest.mark.dds
def test_js_latency_delays_response_and_noise(jsc: Probe, panda: KinematicTree) -> None:
    names = panda.joint_names
    assert jsc.names == names
    # Noise on the published positions only (std 0.002 rad); the robot itself stands still.
    now = time.time()
    time.sleep(0.5)
    _, q, vel = jsc.window(now, now + 0.5)
    residual = q - np.asarray(HOME_POSES["panda"])
    assert np.std(residual) == pytest.approx(0.002, rel=0.15) and np.all(vel == 0.0)
    # Velocity by name; the response comes 0.15 s (latency) after the command.
    msg = JointState(name=[names[0], names[2]], velocity=[0.2, -0.3])
    n_stats = len(jsc.stats)
    start = time.time()
    jsc.pub.publish(msg)
    _, end = jsc.drive(msg, 0.7)
    first = jsc.onset(start)
    # Never before the latency; the delay from each command's arrival to its effect is it.
    assert first - start >= 0.149, f"response after {first - start:.3f} s"
    assert end - first > 0.3, f"the command arrived {first - start - 0.15:.3f} s after it was sent"
    assert jsc.delays(n_stats) == pytest.approx([150.0, 150.0], abs=1e-3)
    slope = jsc.slope(first, end)
    assert np.allclose(slope[[0, 2]], [0.2, -0.3], atol=0.02)
    assert np.allclose(np.delete(slope, [0, 2]), 0.0, atol=0.02)
    jsc.drive(JointState(name=names, velocity=[0.0] * 7), 0.05)


@pytest.mark.dds
def test_bad_configuration_exits_with_status_2(tmp_path: Path, dds_domain: int) -> None:
    run = subprocess.run(
        node_command(
            "-r",
            "__ns:=/bad",
            "-p",
            f"urdf_file:={PANDA}",
            "-p",
            "joints:=[panda_joint1,nope]",
            module=SIM_ROBOT_MODULE,
        ),
        env=local_dds_env(dds_domain),
        capture_output=True,
        timeout=20.0,
    )
    assert run.returncode == 2
    assert "unknown joint 'nope'; joints are: 'panda_joint1'" in run.stderr.decode()


def test_thread_priority_puts_the_tick_and_the_executor_on_sched_fifo(
    tmp_path: Path, dds_domain: int
) -> None:
    """The tick's thread and the executor's run SCHED_FIFO, DDS's threads on the normal
    scheduler, every thread on the CPU asked for; not permitted, the simulator warns."""
    sim = start_sim(
        dds_domain, tmp_path, "rt", Float64MultiArray, 250.0, f"urdf_file:={PANDA}",
        "thread_priority:=10", "cpu_affinity:=[0]",
    )  # fmt: skip
    try:
        if fifo_permitted():
            wait_until(
                lambda: (
                    sum(p == os.SCHED_FIFO for p, _, _ in thread_policies(sim.proc.pid).values())
                    >= 2
                ),
                20.0,
                "the simulator's real-time threads",
            )
            threads = thread_policies(sim.proc.pid)
            assert threads[sim.proc.pid][:2] == (os.SCHED_FIFO, {0}), threads
            fifo = [tid for tid, (p, _, _) in threads.items() if p == os.SCHED_FIFO]
            assert len(fifo) == 2, threads  # the executor's (main) and the tick's
            dds = [p for p, _, name in threads.values() if name.startswith("dds.")]
            assert dds and set(dds) == {os.SCHED_OTHER}, threads
            assert all(cpus == {0} for _, cpus, _ in threads.values()), threads
        else:
            wait_until(
                lambda: "real-time scheduling not applied" in sim.output(), 20.0, "a warning"
            )
    finally:
        assert stop_sim(sim) == 0, sim.output()


class _Clocks:
    """Stand-in for the ``time`` module of the simulated robot: a monotonic and a system clock
    that the test moves, and readings that a scheduling delay splits on request."""

    def __init__(self) -> None:
        self.mono, self.offset, self.split = 100.0, 1.7e9, 0.0

    def monotonic(self) -> float:
        return self.mono

    def time(self) -> float:
        wall = self.mono + self.offset
        self.mono += self.split  # the process stood still between this and the next reading
        return wall


def test_state_stamps_are_the_system_clock_and_never_go_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from itasc_ros.tools.sim_robot import node as sim_node

    real = sim_node.WallStamps()
    assert abs(real.at(time.monotonic()) - time.time()) < 0.05
    clocks = _Clocks()
    monkeypatch.setattr(sim_node, "time", clocks)
    w = sim_node.WallStamps()
    stamps = []
    for k in range(6):
        clocks.split = 0.005 if k == 2 else 0.0  # a reading split by 5 ms is not taken
        instant = clocks.mono
        stamps.append(w.at(instant))
        assert stamps[-1] == pytest.approx(instant + 1.7e9, abs=1e-6)
        clocks.mono += 0.004
    clocks.offset -= 0.1  # the system clock stepped back: the stamps hold, then follow it
    held = [w.at(clocks.mono + 0.004 * k) for k in range(3)]
    assert np.all(np.diff(stamps + held) > 0.5 * sim_node.WallStamps.STEP)  # float64 of 1.7e9 s
    clocks.mono += 1.0
    assert w.at(clocks.mono) == pytest.approx(clocks.mono + clocks.offset, abs=1e-6)
