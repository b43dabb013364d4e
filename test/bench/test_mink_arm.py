"""itasc_bench.peers.mink_arm: mink with a collision limit on the Panda among obstacles."""

from __future__ import annotations

import pytest

from itasc_bench import ik_obstacles as obstacles
from itasc_bench.ik_protocol import EPS, solved
from itasc_bench.peers import PeerUnavailable
from itasc_bench.peers.mink_arm import MinkArm
from itasc_ros.core.kinematics.collision_geometry import resolve_file


def test_mink_reaches_a_near_pose_and_keeps_every_pair_at_the_margin() -> None:
    try:
        tree, coll, ref, _ = obstacles._scene()
        urdf = resolve_file(str(coll.urdf_file), coll.package_path, "Panda URDF")
        mink = MinkArm(str(urdf), tree, coll, obstacles.TIP, EPS, timeout=1.0)
    except (PeerUnavailable, FileNotFoundError, ImportError) as exc:
        pytest.skip(str(exc))
    q0 = tree.neutral()
    target = tree.forward_kinematics(q0 + 0.1, obstacles.TIP)
    q = mink.solve(q0, target)
    assert q is not None and solved(tree, obstacles.TIP, q, target, tree.lower, tree.upper)
    assert ref.distances(ref.q_of(q)).min() >= coll.margin - 1e-6  # Pinocchio + coal's check
