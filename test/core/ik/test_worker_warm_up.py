"""``warm_up_ik`` compiles every IK kernel: a real robot's requests then compile nothing.

The node calls it before its control loop starts; on a fresh install the first request would
otherwise compile the kernels beside the loop (a 100 ms gap between commands, measured).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from numba.core.registry import CPUDispatcher

from itasc_ros.core import KinematicTree
from itasc_ros.core.ik.worker import IkWorker, warm_up_ik

REPO = Path(__file__).resolve().parents[3]


def _signatures() -> dict[str, int]:
    return {
        f"{name}.{key}": len(value.signatures)
        for name, mod in list(sys.modules.items())
        if name.startswith("itasc_ros.core")
        for key, value in vars(mod).items()
        if isinstance(value, CPUDispatcher)
    }


def test_requests_after_the_warm_up_compile_nothing() -> None:
    warm_up_ik()
    tree = KinematicTree.from_urdf_file(REPO / "urdf" / "panda.urdf")
    worker = IkWorker(lambda _: None, 0.02)
    worker.close()
    tree.forward_kinematics(tree.neutral(), "panda_hand")  # the tree's own kernels, not IK's
    before = _signatures()
    goal = tree.forward_kinematics(tree.neutral() + 0.1, "panda_hand")
    quat = np.array([1.0, 0.0, 0.0, 0.0])
    for frame, position in (("", goal[:3, 3]), ("panda_link3", [0.1, 0.0, 0.2]), ("", [3, 0, 0])):
        out = worker.solve(tree, "panda_hand", tree.neutral(), frame, np.array(position), quat)
        assert out.result is not None or out.error, out
    compiled = {k: v for k, v in _signatures().items() if v > before.get(k, 0)}
    assert not compiled, f"compiled by a request after the warm-up: {compiled}"
