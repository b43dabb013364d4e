"""itasc_node over real DDS fed a hypothesis-generated stream of bad and good inputs.

The node runs as its own process (the console script's entry point) on the bundled Panda URDF,
commanding the joints in a shuffled order. This process is the robot (a good joint-state stream
at 100 Hz from a thread) and a broken client: batches of JointState / PoseStamped / TwistStamped
messages drawn from the strategies of ``test_fuzz_inputs`` (garbage floats, wrong lengths,
repeated/unknown/missing joints, zero and non-normalised quaternions, frames that are not URDF
links, stamps zero / past / future / out of order), published on the node's topics. A
:class:`procs.CommandChecker` checks every command the node publishes.

Shown: no bad command at all (length, NaN/Inf, URDF velocity limits), commands flowed during the
fuzzing and move the robot again on good input after it, /diagnostics and ~/status said why
inputs were rejected (each reason one of the controller's), the node survived, and SIGINT gives a
zero command and exit code 0. Examples are generated (not shrunk: DDS timing is not replayable)
and derandomised, so the stream is the same on every run.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped, TwistStamped
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from procs import (
    CommandChecker,
    RosTestClient,
    StaticRobot,
    allocate_domain,
    client_fixture,
    read_log,
    running,
    start_panda_node,
    stop_process,
)
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from test_fuzz_inputs import (
    HAND,
    HOME,
    LIMITS,
    JointStateEvent,
    SourceClock,
    TargetEvent,
    TwistEvent,
    input_events,
    to_message,
)

pytestmark = pytest.mark.dds

DOMAIN = allocate_domain()  # this module's own, held for the session (used at import)
NS = "/fuzz"
TIMEOUT = 60.0  # [s] a hang's bound: a start-up beside six starting nodes took > 15 s
JOINT_ORDER = [
    "panda_joint4",
    "panda_joint7",
    "panda_joint1",
    "panda_joint6",
    "panda_joint3",
    "panda_joint2",
    "panda_joint5",
]
BATCHES = 10  # hypothesis examples
BATCH = 40  # messages per example: 400 fuzz messages
GAP = 0.003  # [s] between fuzz messages
# Words of every rejection message of the controller (a reason outside these is a bug).
REASONS = (
    "names but",
    "more than once",
    "lacks joints",
    "non-finite positions",
    "huge positions",
    "out of order",
    "in the future",
    "position must be 3 finite",
    "must be 4 finite",
    "zero norm",
    "is not a URDF link",
    "needs a joint state",
    "must be 6 finite",
    "beyond the robot's reach",
)


client = client_fixture(DOMAIN, "itasc_fuzz_test_client")


@pytest.fixture(scope="module")
def fuzz(client: RosTestClient) -> Iterator[dict[str, Any]]:
    """The node, the robot, the checker and the fuzz publishers (one set for the module)."""
    diagnostics = client.collect(DiagnosticArray, "/diagnostics")
    status = client.collect(String, f"{NS}/itasc_node/status")
    checker = CommandChecker(client, [LIMITS[j] for j in JOINT_ORDER], f"{NS}/commands")
    params = ("control_rate:=200.0", f"joints:={json.dumps(JOINT_ORDER)}")
    # The last test stops the node with SIGINT; SIGKILL if it still runs after a failure.
    with running(start_panda_node(DOMAIN, NS, *params), signal.SIGKILL) as proc:
        names = [*list(HOME)[::-1], "panda_finger_joint1"]
        at_home = {**HOME, "panda_finger_joint1": 0.02}
        robot = StaticRobot(client, f"{NS}/joint_states", names, at_home).start()
        pubs = {
            JointState: client.publisher(JointState, f"{NS}/joint_states", 10),
            PoseStamped: client.publisher(PoseStamped, f"{NS}/itasc_node/target_pose", 100),
            TwistStamped: client.publisher(TwistStamped, f"{NS}/itasc_node/target_twist", 100),
        }
        try:
            for pub in pubs.values():
                client.wait_for_subscribers(pub, 1, TIMEOUT)
            yield {
                "proc": proc,
                "robot": robot,
                "pubs": pubs,
                "checker": checker,
                "diagnostics": diagnostics,
                "status": status,
                "moving_during_fuzz": 0,
            }
        finally:
            robot.close()


def good_target(client: RosTestClient, dx: float) -> PoseStamped:
    event = TargetEvent("", [float(v) for v in HAND[:3, 3] + [dx, 0.0, 0.0]], [1, 0, 0, 0], "now")
    clock = SourceClock(client.node.get_clock().now().nanoseconds * 1e-9)
    return to_message(event, clock)


@settings(
    max_examples=BATCHES,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@given(batch=st.lists(input_events, min_size=BATCH, max_size=BATCH))
def test_fuzz_stream_never_gives_a_bad_command(
    client: RosTestClient,
    fuzz: dict[str, Any],
    batch: list[JointStateEvent | TargetEvent | TwistEvent],
) -> None:
    checker: CommandChecker = fuzz["checker"]
    clock = SourceClock(client.node.get_clock().now().nanoseconds * 1e-9)
    # Each batch starts from a good target, so that the faults hit a moving robot.
    fuzz["pubs"][PoseStamped].publish(good_target(client, 0.04))
    time.sleep(0.05)
    for event in batch:
        clock.now = client.node.get_clock().now().nanoseconds * 1e-9
        msg = to_message(event, clock)
        fuzz["pubs"][type(msg)].publish(msg)
        time.sleep(GAP)
    time.sleep(0.03)
    last = checker.last
    if last is not None and np.any(last):
        fuzz["moving_during_fuzz"] += 1
    assert checker.bad == [], checker.bad[:5]
    assert fuzz["proc"].poll() is None, read_log(fuzz["proc"])[-3000:]


def test_after_the_fuzz_the_node_moves_on_good_input_and_stops_cleanly(
    client: RosTestClient, fuzz: dict[str, Any]
) -> None:
    checker: CommandChecker = fuzz["checker"]
    proc = fuzz["proc"]
    total, zeros, bad = checker.snapshot()
    assert bad == 0 and checker.bad == []
    assert total > 100, "commands flowed during the fuzzing"
    assert total - zeros > 50 and fuzz["moving_during_fuzz"] > 0

    # Why inputs were rejected: /diagnostics (WARN) and ~/status, each reason a known one.
    rejected = [
        s
        for msg in client.received("/diagnostics")
        for s in msg.status
        if s.name == "itasc_node: controller" and s.message.startswith("input rejected:")
    ]
    assert rejected and all(s.level >= DiagnosticStatus.WARN for s in rejected)
    reasons = {dict((kv.key, kv.value) for kv in s.values)["last_rejection"] for s in rejected}
    statuses = [json.loads(m.data) for m in client.received(f"{NS}/itasc_node/status")]
    reasons |= {s["last_rejection"] for s in statuses}
    reasons.discard("")
    unknown = [r for r in reasons if not any(word in r for word in REASONS)]
    assert reasons and unknown == []
    assert len({w for r in reasons for w in REASONS if w in r}) >= 3  # several kinds seen
    assert statuses[-1]["rejections"] > 50
    print(
        f"fuzz: {total} commands ({zeros} zero, {bad} bad), "
        f"{statuses[-1]['rejections']} inputs rejected; reasons seen: {sorted(reasons)}"
    )
    assert "input rejected:" in read_log(proc)

    # Good input only: the node commands motion again (moving the hand 3 cm).
    target = good_target(client, -0.03)
    fuzz["pubs"][PoseStamped].publish(target)
    t_good = time.monotonic()
    client.wait_for(
        lambda: checker.last is not None and np.abs(checker.last).max() > 0.05,
        TIMEOUT,
        "motion commands on good input",
    )
    before = checker.snapshot()[0]  # commands go on: one per tick (~200 Hz; fewer when starved)
    client.wait_for(lambda: checker.snapshot()[0] - before > 20, TIMEOUT, "commands going on")
    assert time.monotonic() - t_good < 2.0 * TIMEOUT

    # Still alive; SIGINT: a zero command, then exit 0.
    assert proc.poll() is None
    assert stop_process(proc, signal.SIGINT) == 0
    client.wait_for(
        lambda: checker.last is not None and not np.any(checker.last), TIMEOUT, "the zero command"
    )
    assert "shutdown: zero command sent" in read_log(proc)
    assert checker.bad == [] and checker.bad_count == 0
    assert isinstance(checker.last, np.ndarray) and checker.last.shape == (7,)
