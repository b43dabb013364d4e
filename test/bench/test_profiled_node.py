"""itasc_bench.loop.profiled_node: the parts it counts exist; counting and the report."""

from __future__ import annotations

import importlib
import re
import time
from pathlib import Path

import pytest

from itasc_bench.loop import profiled_node
from itasc_bench.loop.run import run_loop_bench

COMMANDS = "/forward_velocity_controller/commands"  # the command topic: one publish a tick


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
    ns, calls, wall = profiled_node.counts["busy test part"]
    assert calls == 3 and ns >= 3 * 1_500_000  # most of the 2 ms of CPU each call used
    assert wall >= 0.9 * ns  # a thread busy the whole call: its wall time is its CPU time
    (line,) = [x for x in profiled_node.report() if x.startswith("cpu busy test part:")]
    assert "3 calls" in line and re.search(r"; wall \d+\.\d us per call$", line)


@pytest.mark.dds
@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "parts"),
    [
        (
            "itasc_bench.loop.profiled_node",
            ("step", "send the command", f"publish {COMMANDS}", "take /joint_states (got)"),
        ),
        ("itasc_bench.loop.profiled_floor", ("wait for a joint state", f"publish {COMMANDS}")),
    ],
)
def test_a_loop_run_reports_where_its_cpu_went(
    module: str, parts: tuple[str, ...], tmp_path: Path, dds_domain: int
) -> None:
    """The node and the floor, run by the loop benchmark, print each counted part at exit.

    Takes and publishes are counted per topic.
    """
    r = run_loop_bench(
        robot="panda",
        rate=250.0,
        duration=1.0,
        warmup=0.3,
        trigger="joint_states",
        domain=dds_domain,
        log_dir=tmp_path,
        node_module=module,
    )
    assert r["exit_codes"] == "sim_robot=0,node=0", r
    log = (tmp_path / "node.log").read_text()
    for part in parts:
        found = re.search(rf"^cpu {re.escape(part)}: (\d+) calls, ", log, re.MULTILINE)
        assert found, f"no line for {part!r} in {log[-2000:]}"
        assert int(found[1]) >= 20, found[0]  # ~325 at 250 Hz: the loop ran through them
