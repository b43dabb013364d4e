"""itasc-demo end to end: simulated Panda + node over DDS, bag, plots, JSON metrics.

Runs the console script (``--physics mujoco --duration 40``, what ``make demo`` runs: the MuJoCo
robot behind 20 ms servos, the node told the lag) as a subprocess, and checks its JSON (the last
line), the MCAP bag (read with rosbags' Reader), the PNG plots and the video.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from rosbags.rosbag2 import Reader

import itasc_ros
from itasc_ros.tools.dds_env import local_dds_env

# alone: the physics demo's verdict judges a real-time run (its step overshoot 0.6 % with the
# machine to itself, 6-24 % beside another test worker on a 2-CPU machine half as fast)
pytestmark = [pytest.mark.dds, pytest.mark.slow, pytest.mark.alone]

ROOT = Path(itasc_ros.__file__).resolve().parents[1]
EXPECTED_TOPICS = {
    "/joint_states": "sensor_msgs/msg/JointState",
    "/itasc_node/target_pose": "geometry_msgs/msg/PoseStamped",
    "/itasc_node/target_twist": "geometry_msgs/msg/TwistStamped",
    "/forward_velocity_controller/commands": "std_msgs/msg/Float64MultiArray",
    "/diagnostics": "diagnostic_msgs/msg/DiagnosticArray",
    "/itasc_node/status": "std_msgs/msg/String",
    "/parameter_events": "rcl_interfaces/msg/ParameterEvent",
    "/itasc_replay/node_parameters": "std_msgs/msg/String",
    "/itasc_node/journal": "std_msgs/msg/Float64MultiArray",
    "/itasc_node/parameters": "std_msgs/msg/String",
}


def _demo_command() -> list[str]:
    script = Path(sys.executable).parent / "itasc-demo"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "itasc_ros.tools.demo"]


def _finite_numbers(obj: Any, path: str = "") -> list[str]:
    """Paths of the numbers in a JSON object that are not finite (NaN is written as null)."""
    bad = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            bad += _finite_numbers(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            bad += _finite_numbers(v, f"{path}[{i}]")
    elif obj is None or (isinstance(obj, float) and not math.isfinite(obj)):
        bad.append(path)
    return bad


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, dds_domain: int) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("demo") / "out"
    # the module's own domain, as a user's ROS_DOMAIN_ID (not the session's: a process killed in
    # a domain can leave its shared-memory ports unusable to the next participants for a while)
    env = local_dds_env(dds_domain)
    t0 = time.monotonic()
    proc = subprocess.run(
        [*_demo_command(), "--physics", "mujoco", "--duration", "40", "--json", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=ROOT,
    )
    wall = time.monotonic() - t0
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    metrics = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"out": out, "metrics": metrics, "stdout": proc.stdout, "wall": wall, "env": env}


def test_healthy_verdict_and_the_users_domain(demo: dict[str, Any]) -> None:
    lines = demo["stdout"].strip().splitlines()
    # the first line names the domain: the one set in the environment (ROS_DOMAIN_ID)
    domain = demo["env"]["ROS_DOMAIN_ID"]
    assert lines[0].startswith(f"itasc-demo: DDS domain {domain} (ROS_DOMAIN_ID"), lines[0]
    assert "shared memory only" in lines[0]
    assert not re.search(r"\bnan\b", demo["stdout"], re.IGNORECASE)
    verdict = demo["metrics"]["verdict"]
    # Healthy, or flagged only for what a loaded machine does, each with its cause: a starved
    # simulated robot (or a DDS delivery pause) makes the node stop as it promises (stale-input
    # stops), a node held up misses ticks (the loop rate: a wall-clock figure, the benchmarks'
    # to judge); the demo says so rather than call the run healthy. Any other flag fails.
    machine = ("stale-input stop", "loop rate ")
    assert all(any(m in f for m in machine) for f in verdict["flags"]), verdict
    assert verdict["healthy"] == (verdict["flags"] == []), verdict
    if verdict["healthy"]:
        assert lines[-2] == "itasc-demo: verdict: healthy", lines[-6:]  # before the JSON line
        assert "FLAG" not in demo["stdout"]
    else:
        assert lines[-2].startswith("itasc-demo: verdict: NOT healthy: "), lines[-6:]


def test_an_unreachable_circle_is_not_healthy(tmp_path: Path, dds_domain: int) -> None:
    """A 2 m circle (``--radius 2.0``) in the shortest run: flagged phases, exit status 1."""
    from itasc_ros.tools.demo import min_duration

    proc = subprocess.run(
        [
            *_demo_command(),
            *("--duration", f"{min_duration():g}", "--radius", "2.0"),
            *("--no-plots", "--json", "--out", str(tmp_path / "out")),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env=local_dds_env(dds_domain),
        cwd=ROOT,
    )
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 1 and len(lines) > 2, proc.stdout[-4000:] + proc.stderr[-4000:]
    verdict = lines[-2]
    assert verdict.startswith("itasc-demo: verdict: NOT healthy: "), lines[-8:]
    for phase in ("circle_ff", "circle_fb", "figure8_ff", "figure8_fb"):
        assert f"{phase} did not settle: steady-state RMS error" in verdict, verdict
        assert f"itasc-demo: FLAG: {phase} did not settle" in proc.stdout
    m = json.loads(lines[-1])
    assert not m["verdict"]["healthy"] and len(m["verdict"]["flags"]) >= 4
    assert m["tracking_error_feedforward_m"] > 0.5  # the arm cannot follow a 2 m circle
    assert not re.search(r"\bnan\b", proc.stdout, re.IGNORECASE)


def test_feedforward_beats_feedback_only(demo: dict[str, Any]) -> None:
    m = demo["metrics"]
    ff, fb = m["tracking_error_feedforward_m"], m["tracking_error_feedback_only_m"]
    assert 0.0 < ff < 0.5 * fb, (ff, fb)
    assert 0.0 < m["figure8_error_feedforward_m"] < 0.5 * m["figure8_error_feedback_only_m"]
    # The timing-free figures: the offline replay's (the same control law, no DDS), exact.
    off_ff, off_fb = (
        m["offline_tracking_error_feedforward_m"],
        m["offline_tracking_error_feedback_only_m"],
    )
    assert 0.0 < off_ff < 0.1 * off_fb, (off_ff, off_fb)
    # feedback only lags by v / sqrt(K^2 + w^2) (12.4 mm): offline within 5 %; over DDS a
    # starved node's late ticks and stops only add to it (2x: a loaded machine's margin)
    lag = m["offline"]["circle_fb"]["expected_lag_m"]
    assert abs(off_fb - lag) < 0.05 * lag
    assert 0.8 * lag < fb < 2.0 * lag, (fb, lag)
    assert ff < 0.01  # quiet: < 1 mm (offline: 0.06 mm); loaded: a few mm; fb is 12.4 mm


def test_metrics_are_finite_and_safe(demo: dict[str, Any]) -> None:
    m = demo["metrics"]
    # a step that did not settle within its slot of the short run reports None
    bad = [k for k in _finite_numbers(m) if ".settle_times_s[" not in k]
    assert not bad, bad
    assert m["commands_finite"] and m["joints_within_limits"]
    assert m["max_joint_speed_ratio"] <= 1.0 + 1e-9  # never above a velocity limit
    assert m["loop_rate_hz"] > 0.3 * m["control_rate_hz"]
    assert m["solve_time_mean_ms"] > 0.0
    # motion a real robot accepts: every command pair within Franka's limits, the shutdown's
    # controlled stop included
    assert m["max_joint_acceleration_ratio"] <= 1.0 and m["max_joint_jerk_ratio"] <= 1.0
    # the edges: a step overshoots by at most 2 % of its length of its own (0.5-0.8 % on a quiet
    # machine; what the robot travelled on the node's last command while the node did not run,
    # a busy host holding it up, counted apart: 10 % in a 43 ms stall); at the unreachable
    # target the sign changes per second after 1 s are counted, and noted above 2 (a short
    # chatter of the saturated 6-D task at the acceleration limits: 1.25-2.8 per s over DDS)
    steps = m["phases"]["steps"]
    assert len(steps["step_overshoots"]) == len(steps["settle_times_s"])  # every step judged
    assert 0.0 <= m["step_overshoot_own_ratio"] <= m["step_overshoot_ratio"] < 0.5
    for ratio, stalled in zip(
        steps["step_overshoots"], steps["step_overshoots_stalled"], strict=True
    ):
        assert 0.0 <= stalled <= ratio
    chatter = m["max_velocity_sign_changes_per_s"]
    assert math.isfinite(chatter) and (chatter > 2.0) == bool(m["verdict"]["notes"])
    # straight-line steps within the joint limits: ~0.4 s each
    settled, total = map(int, steps["settled"].split("/"))
    assert settled >= total - 1 and 0.0 < steps["settle_time_max_s"] < 1.0
    far = m["phases"]["unreachable"]
    assert 1.0 < far["final_distance_m"] < 2.0  # stretched toward it, cannot get there
    assert far["damping_max_used"] > 0.0  # damped near the stretched-out singularity
    assert m["singularity_events"] >= 1
    rc = m["replay_compare"]  # the journal played back recomputes every command exactly
    assert rc["commands"] == m["commands_recorded"] > 0
    assert rc["ok"] and rc["compared"] == rc["commands"], rc
    assert rc["max_abs_diff"] <= 1e-12 and rc["mismatches"] == 0, rc


def test_bag_has_every_topic(demo: dict[str, Any]) -> None:
    with Reader(demo["out"] / "bag") as reader:
        topics = {t: (info.msgtype, info.msgcount) for t, info in reader.topics.items()}
        assert reader.duration > 15e9  # [ns]
    for topic, msgtype in EXPECTED_TOPICS.items():
        assert topic in topics, topics
        assert topics[topic][0] == msgtype
        assert topics[topic][1] > 0, (topic, topics[topic])
    assert list((demo["out"] / "bag").glob("*.mcap"))
    assert topics["/joint_states"][1] > topics["/forward_velocity_controller/commands"][1] > 1000


def test_plots_and_summary(demo: dict[str, Any]) -> None:
    for name in ("tracking_error.png", "joint_velocities.png", "sigma_min.png"):
        png = demo["out"] / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.stat().st_size > 10_000
    assert (demo["out"] / "metrics.json").is_file()
    text = demo["stdout"]
    for row in (
        "loop rate",
        "solve time",
        "circle RMS error, feed-forward",
        "circle RMS error, feedback only",
        "figure8 RMS error",
        "max joint speed vs limit",
        "limit hits",
        "singularity events",
        "step response settle time",
        "unreachable target",
        "offline replay of the bag",
    ):
        assert row in text, row
    assert "offline" in text and "itasc-bench tracking" in text
    print(f"itasc-demo --duration 40 wall time: {demo['wall']:.1f} s")


def test_the_physics_robot_with_its_lag_told_tracks_and_steps_cleanly(
    demo: dict[str, Any],
) -> None:
    """On MuJoCo's Panda behind 20 ms servos, the node told the lag: the circle with
    feed-forward within 0.6 mm RMS over DDS under the suite's load (0.12-0.15 mm on a quiet
    machine, 0.3 mm under the suite's load, 0.51 mm on a machine half as fast under it;
    0.6-1.3 mm when the node is not told), no step beyond 2 % of its length (but for what it
    travelled while the node's commands stalled), the recording
    replayed exactly, and the run drawn into a video with a still."""
    m = demo["metrics"]
    assert m["robot"] == {"physics": "mujoco", "actuator_lag_s": 0.02, "node_actuator_lag_s": 0.02}
    assert m["tracking_error_feedforward_m"] < 6e-4, m["tracking_error_feedforward_m"]
    assert m["step_overshoot_own_ratio"] < 0.02
    assert m["replay_compare"]["max_abs_diff"] == 0.0
    video = [p for p in ("demo.webp", "demo.gif") if (demo["out"] / p).is_file()]
    assert video, "no video"
    data = (demo["out"] / video[0]).read_bytes()
    assert data[:4] in (b"RIFF", b"GIF8") and 50_000 < len(data) < 4_000_000
    assert (demo["out"] / "demo_still.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
