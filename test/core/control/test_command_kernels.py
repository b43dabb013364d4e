"""The compiled command of an active tick sends exactly what the Python path sends.

``solve_command`` (``_command_kernels``) makes an active tick's solve, its cap while a joint
state is late, the motion limits' clip and take, the send and the tasks' fractions in one
compiled call (``plan_command`` on the tick's plan, once the controller's parts made the rest
of a tick with a moving target). Two controllers fed the same inputs, one through that call
and one through the Python path (the scene's ``run`` then the limiter's ``take_clipped``, the
prediction's ``publish``, the scene's ``following``), send the same commands bit for bit, keep
the same limiter and prediction state and report the same following, with and without motion
limits, through late joint states (the cap), a moving target, a disabled output and a new
target far away.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from twin_controllers import RATE, REPO, panda_controller, tick_state

from itasc_ros.core import KinematicTree
from itasc_ros.core.control import fused_tick as fused_module
from itasc_ros.core.control._command_kernels import NOT_SOLVED, SENT
from itasc_ros.core.control.status import Status
from itasc_ros.core.kinematics import spatial
from itasc_ros.core.kinematics.home_poses import home_of
from itasc_ros.core.solve.scene import Scene

HOME = np.array(home_of("panda"))


@pytest.fixture(scope="module")
def tree() -> KinematicTree:
    return KinematicTree.from_urdf_file(REPO / "urdf" / "panda.urdf")


@pytest.mark.parametrize("limited", [True, False], ids=["motion_limits", "velocity_only"])
def test_the_compiled_command_sends_what_the_python_path_sends(
    tree: KinematicTree, limited: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    fused, plain = panda_controller(tree, limited), panda_controller(tree, limited)
    codes: list[int] = []
    kernel = fused_module.plan_command  # the call on the tick's plan (resolved at its first)

    def spy(*args: Any) -> Any:
        out = kernel(*args)
        codes.append(int(out[0]))
        return out

    monkeypatch.setattr(fused_module, "plan_command", spy)
    rng = np.random.default_rng(7)
    start = tree.forward_kinematics(HOME, "panda_hand")
    names = tree.joint_names
    q = HOME.copy()
    now, capped, seen = 100.0, 0, set()
    for k in range(600):
        now += 1.0 / RATE
        if k % 150 == 140:  # a new target 0.3 m away: a step under the limits
            start = start.copy()
            start[:3, 3] += rng.uniform(-0.3, 0.3, 3) * np.array([1.0, 1.0, 0.3])
        late = 200 <= k % 300 < 230  # no joint state for 60 ms: the prediction caps
        if not late:
            for c in (fused, plain):
                c.set_joint_state(names, q, now, now)
        pose = start.copy()
        pose[:3, 3] += 0.05 * np.array([np.sin(2.0 * now), np.cos(2.0 * now), 0.0])
        quat = spatial.matrix_to_quat(pose)
        for c in (fused, plain):
            c.set_target("ee", "", pose[:3, 3].copy(), quat, now, now)
            c.set_enabled(not 480 <= k < 500)  # the output off for a while, then on again
        a = fused.step(now)
        seen.add(a.status)
        capped += fused._prediction.cap_norm != 0.0
        with monkeypatch.context() as m:
            m.setattr(Scene, "compiled_tick", property(lambda self: False))
            m.setattr(Scene, "solves_in_one_call", property(lambda self: False))
            b = plain.step(now)
        assert a.status == b.status and a.publish == b.publish and a.reason == b.reason, k
        assert a.qdot.tobytes() == b.qdot.tobytes(), k
        assert a.shortfall == b.shortfall, k
        for x, y in zip(tick_state(fused), tick_state(plain), strict=True):
            assert x.tobytes() == y.tobytes(), k
        if a.publish:
            q = q + a.qdot / RATE  # the robot follows the command
    assert codes.count(SENT) > 400  # the compiled command ran, and the cases above with it
    assert NOT_SOLVED not in codes
    assert capped > 0  # some ticks were capped (states late)
    assert Status.ACTIVE in seen and seen & {Status.DISABLED, Status.STOPPING}  # off: a ramp
