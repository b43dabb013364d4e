"""itasc_ros.bench.loop.profiled_node: the parts it counts exist; counting and the report."""

from __future__ import annotations

import importlib
import time

import pytest

from itasc_ros.bench.loop import profiled_node


@pytest.mark.parametrize("part", profiled_node.PARTS, ids=lambda p: f"{p[1]}.{p[2]}")
def test_every_part_counted_exists(part: tuple[str, str, str, str]) -> None:
    module, cls, method, _ = part  # a renamed method would silently go uncounted
    assert callable(getattr(getattr(importlib.import_module(module), cls), method))


def test_a_counted_call_adds_its_thread_cpu_time_and_is_reported() -> None:
    def busy(until: float) -> int:
        n = 0
        while time.thread_time() < until:
            n += 1
        return n

    counted = profiled_node._counted(busy, "busy test part")
    profiled_node.counts.pop("busy test part", None)
    for _ in range(3):
        assert counted(time.thread_time() + 0.002) > 0  # the result comes back
    ns, calls = profiled_node.counts["busy test part"]
    assert calls == 3 and ns >= 3 * 1_500_000  # most of the 2 ms of CPU each call used
    (line,) = [x for x in profiled_node.report() if x.startswith("cpu busy test part:")]
    assert "3 calls" in line
