"""The loop benchmark: its statistics on known inputs, then a short closed-loop run over DDS.

The short run starts the real node and the simulated robot as processes (shared-memory DDS, a
private domain) and checks that the loop closes: commands at more than half the requested rate
and never a command outside the URDF velocity limits.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from itasc_bench.loop import (
    BENCH_PRIORITY,
    RESULT_KEYS,
    latency_stats,
    out_of_limits,
    period_stats,
    proc_cpu_seconds,
    proc_rss_kb,
    run_loop_bench,
)
from itasc_bench.loop.core_floor import make_core_work
from itasc_bench.loop.scheduling import keep_cpus_warm
from itasc_bench.loop.series import (
    CORE_FLOOR_MODULE,
    CORE_FLOORS,
    FLOOR_KEYS,
    FLOOR_MODULE,
    floor_comparison,
    median_runs,
)


def test_period_stats_regular_and_missed_ticks() -> None:
    rate = 100.0
    t = np.arange(101) / rate  # 1 s of perfect 10 ms ticks
    s = period_stats(t, rate)
    assert s["missed_ticks"] == 0.0
    assert s["period_error_max_ms"] == pytest.approx(0.0, abs=1e-9)
    # Drop ticks 10 (one missed) and 50..52 (three missed); jitter one interval by +2 ms.
    t = np.delete(t, [10, 50, 51, 52])
    t[70:] += 0.002
    s = period_stats(t, rate)
    assert s["missed_ticks"] == 4.0
    assert s["period_error_max_ms"] == pytest.approx(30.0)  # the 40 ms gap
    assert s["period_error_p50_ms"] == pytest.approx(0.0, abs=1e-9)
    # 1.4 periods is late, not missed; 1.6 periods is one missed tick.
    assert period_stats([0.0, 0.014], rate)["missed_ticks"] == 0.0
    assert period_stats([0.0, 0.016], rate)["missed_ticks"] == 1.0
    assert math.isnan(period_stats([0.0], rate)["period_error_p50_ms"])


def test_latency_is_time_to_the_next_command() -> None:
    commands = [1.000, 1.010, 1.020]
    states = [0.995, 1.000, 1.004, 1.0195, 1.030]  # 1.000: the next one is 1.010 (strictly after)
    s = latency_stats(states, commands)
    assert s["latency_samples"] == 4.0  # 1.030 has no later command
    lat = np.array([5.0, 10.0, 6.0, 0.5])  # [ms]
    assert s["latency_p50_ms"] == pytest.approx(np.percentile(lat, 50))
    assert s["latency_max_ms"] == pytest.approx(10.0)
    assert math.isnan(latency_stats([2.0], commands)["latency_p50_ms"])


def test_out_of_limits() -> None:
    vmax = np.array([1.0, 2.0])
    assert not out_of_limits(np.array([1.0, -2.0]), 2, vmax)
    assert out_of_limits(np.array([1.0 + 1e-6, 0.0]), 2, vmax)
    assert out_of_limits(np.array([0.0, math.nan]), 2, vmax)
    assert out_of_limits(np.array([0.0, math.inf]), 2, vmax)
    assert out_of_limits(np.array([0.0]), 2, vmax)


def test_proc_readers_match_this_process() -> None:
    end = time.process_time() + 0.2
    while time.process_time() < end:  # burn some CPU so the counters move
        pass
    before = time.process_time()
    assert proc_cpu_seconds(os.getpid()) == pytest.approx(before, abs=0.05)
    # /proc/<pid>/statm counts resident pages: the same figure through another file.
    with open(f"/proc/{os.getpid()}/statm") as fh:
        resident_kb = int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    assert proc_rss_kb(os.getpid()) == pytest.approx(resident_kb, rel=0.02)
    assert resident_kb > 10_000


def test_run_queue_waits_are_read_per_thread() -> None:
    from itasc_bench.loop.procfs import longest_wait, thread_run_delays

    before = thread_run_delays(os.getpid())
    if not before:
        pytest.skip("this kernel keeps no scheduler statistics (/proc/<pid>/task/*/schedstat)")
    assert threading.get_native_id() in before and all(v >= 0.0 for v in before.values())
    after = thread_run_delays(os.getpid())
    assert longest_wait(before, after) >= 0.0  # the counters only grow
    assert longest_wait({1: 0.5, 2: 1.0}, {1: 0.75, 2: 1.5, 3: 9.0}) == 0.5  # new threads: out
    assert thread_run_delays(2**22 + 7) == {}  # no such process


def _starved_share(r: dict[str, Any]) -> float:
    """The share of a run's window a thread of the node waited on a run queue for a CPU.

    The loop keeps at least half its rate but for the ticks it could not run because the rest
    of the machine held the CPUs (measured beside the other tests: a thread of the node waited
    1.73 s of 3 s, load average 4.1 on 2 CPUs, and the loop ran at 0.53 of its rate).
    """
    return float(r["node_runqueue_wait_max_ms"]) / (1e3 * float(r["duration_s"]))


# judged on a real-time run (its rate, the robot's tracking in millimetres): make test runs it
# with the machine to itself (beside another worker a starved robot tracked 27 mm of 20). Each
# verdict shows the whole result as a string (pytest cuts a dict short): its steal_percent,
# run-queue waits and command gaps say whether the machine, not the loop, fell behind.
@pytest.mark.dds
@pytest.mark.slow
@pytest.mark.alone
def test_short_closed_loop_run(tmp_path: Path, dds_domain: int) -> None:
    if importlib.util.find_spec("itasc_ros.ros.node") is None:
        pytest.skip("the node (itasc_ros/ros/node.py) does not exist yet")
    rate = 250.0
    r = run_loop_bench(
        robot="panda",
        rate=rate,
        duration=3.0,
        domain=dds_domain,
        warmup=1.0,
        log_dir=tmp_path,
    )
    missing = [k for k in RESULT_KEYS if k not in r]
    assert not missing, f"result lacks {missing}: {r}"
    assert r["rate_hz"] == rate and r["duration_s"] == pytest.approx(3.0, abs=0.2)
    assert r["achieved_rate_hz"] > (0.5 - _starved_share(r)) * rate, str(r)
    assert r["commands_out_of_limits"] == 0, str(r)
    assert 0.0 <= r["missed_tick_fraction"] <= 1.0
    assert r["period_error_p50_ms"] <= r["period_error_p99_ms"] <= r["period_error_max_ms"]
    assert 0.0 < r["latency_p50_ms"] <= r["latency_p99_ms"] < 1000.0
    assert r["node_cpu_percent"] > 0.0 and r["rss_end_kb"] > 10_000
    # The loop is closed: the robot followed the moving target (0.1 m circle) to within 2 cm.
    assert r["tracking_error_rms_mm"] < 20.0, str(r)
    assert r["exit_codes"] == "sim_robot=0,node=0", str(r)


# judged on a real-time run (its rate, the robot's tracking in millimetres): make test runs it
# with the machine to itself (beside another worker a starved robot tracked 27 mm of 20)
@pytest.mark.alone
def test_joint_states_trigger_realtime_run_and_the_floor(tmp_path: Path, dds_domain: int) -> None:
    """The --trigger joint_states --realtime variant and the floor node close the same loop;
    the floor publishes zeros (it computes nothing), the node follows the target."""
    rate = 250.0
    common: dict[str, Any] = dict(
        robot="panda",
        rate=rate,
        duration=2.0,
        warmup=0.5,
        trigger="joint_states",
        realtime=True,
    )
    # one after the other in the module's domain: each run has stopped its processes on return
    r = run_loop_bench(domain=dds_domain, log_dir=tmp_path / "n", **common)
    f = run_loop_bench(
        domain=dds_domain,
        log_dir=tmp_path / "f",
        node_module=FLOOR_MODULE,
        **common,
    )
    for res in (r, f):
        assert res["control_trigger"] == "joint_states" and res["realtime"] is True
        assert res["achieved_rate_hz"] > (0.5 - _starved_share(res)) * rate, str(res)
        assert res["commands_out_of_limits"] == 0, str(res)
        assert res["exit_codes"] == "sim_robot=0,node=0", str(res)
        assert res["realtime_applied"].startswith(f"SCHED_FIFO {BENCH_PRIORITY}") or (
            "CAP_SYS_NICE" in res["realtime_applied"]
        )
    assert r["tracking_error_rms_mm"] < 20.0, str(r)
    assert f["max_velocity_ratio"] == 0.0 and f["tracking_error_rms_mm"] > 20.0, str(f)
    # The bench restored its own scheduling after the run.
    assert os.sched_getscheduler(0) == os.SCHED_OTHER
    cmp = floor_comparison([r], [f])
    assert cmp["node_cpu_percent_vs_floor"] == pytest.approx(
        r["node_cpu_percent"] / f["node_cpu_percent"]
    )
    assert set(cmp) == {f"floor_{k}" for k in FLOOR_KEYS} | {f"{k}_vs_floor" for k in FLOOR_KEYS}


# judged on a real-time run (its rate, the robot's tracking in millimetres): make test runs it
# with the machine to itself (beside another worker a starved robot tracked 27 mm of 20)
@pytest.mark.alone
def test_core_floors_solve_and_step_in_the_floors_loop(tmp_path: Path, dds_domain: int) -> None:
    """The floor plus the core's scene solve, and plus its whole tick: each publishes its
    commands, and the robot follows the run's target within its limits."""
    common: dict[str, Any] = dict(robot="panda", rate=250.0, duration=2.0, warmup=0.5)
    runs = {
        work: run_loop_bench(
            domain=dds_domain,
            log_dir=tmp_path / work,
            node_module=CORE_FLOOR_MODULE,
            node_params={"floor_work": work},
            **common,
        )
        for work in CORE_FLOORS
    }
    for res in runs.values():
        assert res["achieved_rate_hz"] > (0.5 - _starved_share(res)) * 250.0, str(res)
        assert res["commands_out_of_limits"] == 0, str(res)
        assert res["exit_codes"] == "sim_robot=0,node=0", str(res)
        assert 0.0 < res["max_velocity_ratio"] <= 1.0 and res["tracking_error_rms_mm"] < 20.0, str(
            res
        )
    for work in CORE_FLOORS:  # each did its work in the run's ticks (~625 at 250 Hz): it ran
        log = (tmp_path / work / "node.log").read_text()
        done = re.search(rf"core floor: {work} done in (\d+) ticks", log)
        assert done is not None and int(done.group(1)) > 50, log[-2000:]


def test_a_core_floor_with_an_unknown_work_names_the_valid_ones() -> None:
    class Node:  # the rclpy node's one method the work's set-up reads first
        def get_parameters_by_prefix(self, prefix: str) -> dict[str, Any]:
            return {"floor_work": SimpleNamespace(value="everything")}

    with pytest.raises(ValueError, match="solve, step"):
        make_core_work(Node(), 250.0)


def test_runs_are_summarised_by_medians_and_ratios_by_pairs() -> None:
    """--runs N: medians of each figure, sums of bad commands, ratios run by run."""
    keys = {k: 1.0 for k in FLOOR_KEYS}
    extra = {"period_error_max_ms": 1.0, "delivery_p99_ms": 0.5}
    nodes = [
        {**keys, **extra, "latency_p99_ms": v, "commands_out_of_limits": b, "robot": "panda"}
        for v, b in ((0.9, 0), (2.0, 1), (1.0, 0))
    ]
    floors = [{**keys, "latency_p99_ms": v} for v in (0.45, 0.5, 2.0)]
    m = median_runs(nodes)
    assert m["latency_p99_ms"] == 1.0 and m["robot"] == "panda"
    assert m["commands_out_of_limits"] == 1  # summed: one bad command in any run shows
    assert m["runs"]["latency_p99_ms"] == [0.9, 2.0, 1.0]
    cmp = floor_comparison(nodes, floors)
    assert cmp["floor_latency_p99_ms"] == 0.5
    assert cmp["latency_p99_ms_vs_floor"] == pytest.approx(2.0)  # median of 2.0, 4.0, 0.5
    assert median_runs(nodes[:1]) == nodes[0]


def test_keep_warm_spins_one_sched_idle_process_per_cpu_and_stops_them() -> None:
    with keep_cpus_warm(False) as none:
        assert none == 0
    with keep_cpus_warm(True) as count:
        assert count == len(os.sched_getaffinity(0))
        # the spinners set their policy first thing: waited for (not a fixed 0.3 s: a starved
        # child may take longer to start)
        mine = _until(lambda: _spinners() if _all_idle(_spinners(), count) else None) or []
        assert len(mine) == count
        assert {os.sched_getscheduler(p) for p in mine} == {os.SCHED_IDLE}
    assert _until(lambda: not _spinners()), _spinners()


def _spinners() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and _is_spinner_child(int(p))]


def _all_idle(pids: list[int], count: int) -> bool:
    try:
        return len(pids) == count and all(os.sched_getscheduler(p) == os.SCHED_IDLE for p in pids)
    except OSError:
        return False


def _until(pred: Any, timeout: float = 30.0) -> Any:
    """``pred()`` once truthy (polled every 20 ms), else its last value after ``timeout`` [s]."""
    deadline = time.monotonic() + timeout
    while not (value := pred()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return value


def _is_spinner_child(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
    return int(ppid) == os.getpid() and b"SCHED_IDLE" in cmdline and state != "Z"
