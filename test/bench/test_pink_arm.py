"""itasc_bench.peers.pink_arm: pink with a collision barrier on the Panda among obstacles."""

from __future__ import annotations

import pytest

from itasc_bench import ik_obstacles as obstacles
from itasc_bench.ik_protocol import EPS, solved
from itasc_bench.peers import PeerUnavailable
from itasc_bench.peers.pink_arm import PinkArm


def test_pink_reaches_a_near_pose_and_keeps_every_pair_at_the_margin() -> None:
    try:
        tree, coll, ref, _ = obstacles._scene()
        pink = PinkArm(ref, obstacles.TIP, coll.margin, EPS, timeout=1.0)
    except (PeerUnavailable, FileNotFoundError, ImportError) as exc:
        pytest.skip(str(exc))
    q0 = tree.neutral()
    target = tree.forward_kinematics(q0 + 0.1, obstacles.TIP)
    q = pink.solve(q0, target)
    assert q is not None and solved(tree, obstacles.TIP, q, target, tree.lower, tree.upper)
    assert ref.distances(ref.q_of(q)).min() >= coll.margin - 1e-6
