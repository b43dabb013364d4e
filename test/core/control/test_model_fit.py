"""A controller compiles (or loads) every kernel when it is built, never in a tick.

On a fresh install no numba cache exists: a kernel first called in a tick compiles there, a
100-500 ms stall of the control loop (measured: a 160 ms gap in the jog flood run of a fresh
clone). Every shipped configuration is built, then driven through targets (steps, a stream, a
frame that is a link, a jump), explicit twists, a jog, a disable and enable and a stop; no
compiled function of the package may gain a signature (a compilation or a cache load) meanwhile.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from numba.core.registry import CPUDispatcher

import itasc_ros
from itasc_ros.core import Controller, KinematicTree
from itasc_ros.core.kinematics.spatial import matrix_to_quat
from itasc_ros.params import config_from_parameters, read_params_file

REPO = Path(__file__).resolve().parents[3]
CONFIGS = ["panda", "panda_self_collision", "panda_obstacles", "panda_priorities", "ur5"]


def _signatures() -> dict[str, int]:
    """Every compiled function of the core: its number of compiled signatures."""
    for m in pkgutil.walk_packages(itasc_ros.__path__, "itasc_ros."):
        if ".core." in m.name:
            importlib.import_module(m.name)
    out = {}
    for name, mod in list(sys.modules.items()):
        if name.startswith("itasc_ros.core"):
            for key, value in vars(mod).items():
                if isinstance(value, CPUDispatcher):
                    out[f"{name}.{key}"] = len(value.signatures)
    return out


def _read_only(values: list[float]) -> np.ndarray:
    """``values`` as a read-only float64 buffer, as a deserialized message's array is."""
    return np.frombuffer(np.array(values, dtype=float).tobytes(), dtype=np.float64)


def _drive(ctrl: Controller) -> None:
    """300 ticks at 250 Hz: states, targets, twists, a jog, disable/enable, a jump, late states.

    Every input comes in turn as a plain vector, a read-only buffer (a message's) and a strided
    view (a matrix's column): one compiled variant takes them all.
    """
    names = ctrl.full_tree.all_joint_names
    states = (
        np.zeros(len(names)),
        _read_only([0.0] * len(names)),
        np.zeros((len(names), 2))[:, 0],
    )
    ee = ctrl.pose_constraints[0]
    link = ctrl.constraint(ee).effector_link
    goal = ctrl.tree.forward_kinematics(ctrl.tree.neutral(), link)
    quat = matrix_to_quat(goal)
    quats = (quat, _read_only(list(quat)), np.repeat(quat, 2)[::2])
    columns = np.zeros((3, 40))  # each target position a column (strided)
    twist, jog = [0.01, 0.0, 0.0, 0.0, 0.0, 0.1], [0.05, 0.0, 0.0, 0.0, 0.0, 0.2]
    t = 100.0
    for k in range(300):
        t += 0.004
        if not 240 < k < 250:  # late for a while (not stale): the prediction caps the command
            ctrl.set_joint_state(names, states[k % 3], t, t)
        if k == 5 or 10 < k < 40:  # a step, then a stream
            position = goal[:3, 3] + [0.1, 0.001 * k, 0.0]
            if k % 3 == 1:
                position = _read_only(list(position))
            elif k % 3 == 2:
                columns[:, k] = position
                position = columns[:, k]
            ctrl.set_target(ee, "", position, quats[k % 3], t, t)
        if 50 < k < 60:
            ctrl.set_target_twist(ee, "", twist if k % 2 else _read_only(twist), t, t)
        if 80 < k < 120:
            ctrl.set_jog_twist(ee, "", jog if k % 2 else _read_only(jog), t, t)
        if k in (150, 170):
            ctrl.set_enabled(k == 170)
        if k == 200:  # in a link's frame, as a jump
            ctrl.set_target(ee, link, [0.0, 0.0, 0.05], [0.0, 0.0, 0.0, 1.0], t, t, jump=True)
        ctrl.step(t)


def _compiled_while_driven(name: str) -> dict[str, tuple[int, int]]:
    """The kernels that gained a signature while a fresh controller of config ``name`` ran."""
    cfg = config_from_parameters(read_params_file(REPO / "config" / f"{name}.yaml"))
    urdf = REPO / "urdf" / ("ur5.urdf" if name == "ur5" else "panda.urdf")
    ctrl = Controller(KinematicTree.from_urdf_file(urdf), cfg)
    before = _signatures()
    _drive(ctrl)
    after = _signatures()
    return {k: (before.get(k, 0), v) for k, v in after.items() if v > before.get(k, 0)}


def test_no_kernel_is_compiled_after_the_controller_is_built() -> None:
    """In a process of its own, as a node is: this one has compiled kernels for other tests."""
    proc = subprocess.run(
        [sys.executable, __file__, *CONFIGS], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    compiled = json.loads(proc.stdout.strip().splitlines()[-1])
    assert compiled == {name: {} for name in CONFIGS}, (
        f"compiled in a tick or an input (before, after): {compiled}"
    )


if __name__ == "__main__":  # the test's own process: one fresh controller per config
    print(json.dumps({name: _compiled_while_driven(name) for name in sys.argv[1:]}))
