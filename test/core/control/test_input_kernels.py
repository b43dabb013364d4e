"""The compiled acceptance of the usual inputs takes and refuses exactly what the Python path does.

A joint state given as a float64 array with a known name list, and a root-frame target pose
given as float64 arrays, are taken in one compiled call (``_input_kernels``); the same inputs
given as lists go through the Python path. Two controllers fed the same random streams (stamped
and unstamped, out of order, leaping ahead, NaN, huge, beyond the reach, jumps, pauses, clocks
that jump back), one each way, keep the same state bit for bit after every input and send the
same commands.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

from itasc_ros.core import ConstraintConfig, Controller, ControllerConfig, KinematicTree
from itasc_ros.core.control import inputs as inputs_module
from itasc_ros.core.control import joint_input as joint_input_module
from itasc_ros.core.control._input_kernels import (
    AHEAD,
    IN_ORDER,
    NOT_FINITE,
    OUT_OF_ORDER,
    order_accept,
    order_refusal,
)
from itasc_ros.core.control.journal import Journal
from itasc_ros.core.control.streams import StampOrder
from itasc_ros.core.errors import InputError
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_of

REPO = Path(__file__).resolve().parents[3]
HOME = np.array(home_of("panda"))
TIMEOUT = 0.1  # [s]


@pytest.fixture(scope="module")
def tree() -> KinematicTree:
    return KinematicTree.from_urdf_file(REPO / "urdf" / "panda.urdf")


def make(tree: KinematicTree) -> Controller:
    cfg = ControllerConfig(
        constraints=[ConstraintConfig("ee", "copy_pose", link="panda_hand")],
        control_rate=250.0,
        input_timeout=TIMEOUT,
    )
    c = Controller(tree, cfg)
    c.attach_journal(Journal())
    return c


def counted(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """Count the calls of ``module.name`` (a kernel as the module that calls it binds it)."""
    calls = [0]
    kernel = getattr(module, name)

    def spy(*args: Any) -> Any:
        calls[0] += 1
        return kernel(*args)

    monkeypatch.setattr(module, name, spy)
    return calls


def state(c: Controller) -> list[np.ndarray]:
    """Everything the inputs keep, as arrays (bit-for-bit comparable, NaN included)."""
    inp = c._inputs
    js, st = inp.joints, inp.targets["ee"]
    return [
        js.q.copy(), js.stamps.copy(), js.s.copy(), st.s.copy(), st.pose.copy(),
        st.estimate.copy(), np.array([inp.rejections, st.jumps, st.ref.active]),
        cast(Any, c.scene.get("ee")).target.pose.copy(),
    ]  # fmt: skip


def same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return all(
        x.shape == y.shape and np.array_equal(x, y, equal_nan=True)
        for x, y in zip(a, b, strict=True)
    )


def offer(c: Controller, call: str, args: tuple[Any, ...]) -> str:
    try:
        getattr(c, call)(*args)
    except InputError as exc:
        return str(exc)
    return ""


def test_random_streams_are_taken_alike_by_the_compiled_and_the_python_path(
    tree: KinematicTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast_js = counted(monkeypatch, joint_input_module, "take_joint_state")
    fast_target = counted(monkeypatch, inputs_module, "take_target_pose")
    rng = np.random.default_rng(7)
    fast, slow = make(tree), make(tree)
    names = tree.joint_names
    home = tree.forward_kinematics(HOME, "panda_hand")
    quat0 = spatial.matrix_to_quat(home)
    now, stamp = 100.0, 50.0
    refused = {"joint_state": 0, "target": 0}
    steps = 0
    for k in range(3000):
        now += float(rng.choice([0.004, 0.001, 0.0, 0.3, -0.05], p=[0.8, 0.08, 0.04, 0.04, 0.04]))
        stamp += float(rng.choice([0.004, -0.01, 5.0, 0.0], p=[0.9, 0.04, 0.03, 0.03]))
        header = None if rng.random() < 0.3 else stamp
        if rng.random() < 0.02:
            header = math.nan
        if rng.random() < 0.5:
            q = HOME + 0.01 * np.sin(0.01 * k + np.arange(7))
            if rng.random() < 0.03:
                q[int(rng.integers(7))] = rng.choice([math.nan, math.inf, 1e200])
            received = now if rng.random() > 0.01 else math.nan
            ok = [
                offer(fast, "set_joint_state", (names, q.copy(), received, header)),
                offer(slow, "set_joint_state", (names, q.tolist(), received, header)),
            ]
            kind = "joint_state"
        else:
            p = home[:3, 3] + 0.05 * np.array([math.sin(0.02 * k), math.cos(0.02 * k), 0.0])
            quat = quat0.copy()
            roll = rng.random()
            if roll < 0.03:
                p[0] += 0.5  # a jump
            elif roll < 0.05:
                p[0] += 10.0  # beyond the reach
            elif roll < 0.06:
                p[1] = math.nan
            elif roll < 0.07:
                quat[:] = 0.0
            elif roll < 0.08:
                quat *= 1e-200  # normalised without underflow
            ok = [
                offer(fast, "set_target", ("ee", "", p.copy(), quat.copy(), now, header)),
                offer(slow, "set_target", ("ee", "", p.tolist(), quat.tolist(), now, header)),
            ]
            kind = "target"
        assert ok[0] == ok[1], (k, ok)
        refused[kind] += bool(ok[0])
        assert same(state(fast), state(slow)), k
        if rng.random() < 0.3:
            out = [fast.step(now), slow.step(now)]
            steps += 1
            assert out[0].status == out[1].status, k
            assert np.array_equal(out[0].qdot, out[1].qdot), k
    # both kinds came both ways, the compiled path took most, and the journals are alike
    assert min(refused.values()) > 20 and steps > 500, refused
    assert fast_js[0] > 1000 and fast_target[0] > 1000, (fast_js, fast_target)
    assert fast.journal is not None and slow.journal is not None
    assert np.array_equal(fast.journal.take(), slow.journal.take(), equal_nan=True)


@pytest.mark.parametrize("stamped", [True, False])
def test_the_packed_stamp_order_follows_the_rule_of_the_python_one(stamped: bool) -> None:
    rng = np.random.default_rng(3)
    order, packed = StampOrder(), np.array([math.nan, -math.inf, math.inf])
    verdicts = {IN_ORDER: "", NOT_FINITE: "not finite", OUT_OF_ORDER: "older", AHEAD: "ahead"}
    seen = set()
    received, source = 0.0, 10.0
    for _ in range(2000):
        received += float(rng.choice([0.004, 0.2, -0.01], p=[0.9, 0.05, 0.05]))
        source += float(rng.choice([0.004, -0.02, 0.5, -3.0], p=[0.85, 0.05, 0.05, 0.05]))
        stamp = source if rng.random() > 0.01 else math.inf
        why = order.check(stamp if stamped else None, received, TIMEOUT)
        code = order_refusal(packed, 0, stamp, stamped, received, TIMEOUT)
        seen.add(code)
        assert (verdicts[code] in why) and (bool(why) == (code != IN_ORDER)), (why, code)
        if not why:
            order.accept(stamp if stamped else None, received)
            order_accept(packed, 0, stamp, stamped, received)
        assert np.array_equal(order.state, packed, equal_nan=True)
    assert seen == (set(verdicts) if stamped else {IN_ORDER})
