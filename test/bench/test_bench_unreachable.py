"""``itasc-bench unreachable``: at a target 2 m away the arm comes to rest without chattering.

The runs are the bench's own (the configs' limits, one tick of delay, in process): from the
home pose and from the first two random starts of the bench, no joint's command changes sign
more than 2 times per second after 1 s at the far target.
"""

from __future__ import annotations

import pytest

from itasc_bench.unreachable import CHATTER, bench_unreachable, unreachable_run


@pytest.mark.parametrize("robot", ["panda", "ur5"])
def test_no_chattering_at_an_unreachable_target(robot: str) -> None:
    figures = [unreachable_run(robot, 0, 0.0)] + [unreachable_run(robot, s, 0.4) for s in (1, 2)]
    print(f"\n{robot}: sign changes per s after 1 s: {figures}")
    assert all(f <= CHATTER for f in figures), figures


def test_the_bench_reports_every_run() -> None:
    r = bench_unreachable(robots=("ur5",), runs=1)
    assert r["runs"] == 1 and len(r["ur5"]["sign_changes_per_s"]) == 1
    assert r["ur5"]["runs_chattering"] == sum(f > CHATTER for f in r["ur5"]["sign_changes_per_s"])
    assert r["ur5"]["max_sign_changes_per_s"] >= r["ur5"]["median_sign_changes_per_s"] >= 0.0
