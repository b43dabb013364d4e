"""Floods beside the node over DDS: the loop keeps its ticks; the last command is always zero.

Real processes (the node, the simulated robot, a flooding publisher, two CPU burners) on
shared-memory DDS in this module's domain. Each flood's run is compared with runs of an
*unread* flood (the same publisher on a topic nobody reads; the median of them, one made
before each flood run): the node's own work for the flood may cost ticks only within 1.5x of that
(plus two points of noise on this 2-core machine), no gap between commands may reach half of
``input_timeout`` unless the joint states paused too and the node stopped the robot as it
promises, and no command may leave the velocity limits. Then the node is stopped each
way (SIGINT, SIGTERM, ``~/enable false``) while the robot moves: the last command that arrives
is a zero
(``itasc-bench stops --runs 50`` is the long version).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from itasc_ros.bench.arguments import flood_kinds
from itasc_ros.bench.loop.flood import FLOODS
from itasc_ros.bench.loop.flood_series import flood_summary
from itasc_ros.bench.loop.run import run_loop_bench
from itasc_ros.bench.loop.stops import STOP_KINDS, run_stop
from itasc_ros.params import config_from_parameters, read_params_file
from itasc_ros.tools.resources import share_file

pytestmark = pytest.mark.serial  # timing: not beside other tests

RATE = 250.0  # [Hz]
DURATION = 3.0  # [s] measured per run
NOISE = 0.02  # missed-tick fraction allowed beyond 1.5x the unread run's


def _input_timeout() -> float:
    params = read_params_file(share_file("config", "panda.yaml"))
    return float(config_from_parameters(params).input_timeout)


def test_flood_kinds_and_summary() -> None:
    assert flood_kinds("jog, ik") == ["jog", "ik"]
    with pytest.raises(Exception, match="valid: jog, ik, target"):
        flood_kinds("unread")
    runs = {
        "unread": [{"missed_tick_fraction": 0.02, "command_gap_max_ms": 9.0,
                    "node_cpu_percent": 20.0, "commands_out_of_limits": 0, "flood_sent": 10}],
        "jog": [{"missed_tick_fraction": 0.03, "command_gap_max_ms": 12.0,
                 "node_cpu_percent": 30.0, "commands_out_of_limits": 0, "flood_sent": 10}],
    }  # fmt: skip
    out = flood_summary(runs)
    assert out["jog_missed_ticks_vs_unread"] == pytest.approx(1.5)
    assert out["jog_command_gap_max_ms"] == 12.0


def test_floods_do_not_stall_the_loop(tmp_path: Path, dds_domain: int) -> None:
    """Each flood against the median of the unread runs made between the floods.

    One 3 s run's missed-tick fraction moves by up to 3x from run to run beside two burners on
    this machine (0.085-0.24, then 0.068-0.25 measured in a row): a single run would judge the
    machine's minute, not the node's work. A flood above the bound in its first run is run
    twice more, each after an unread run, and judged by the medians of all (a sequential
    sample: the usual case costs no more runs).
    """
    common: dict[str, Any] = dict(
        robot="panda", rate=RATE, duration=DURATION, warmup=1.5, domain=dds_domain, burners=2
    )
    half_timeout_ms = 0.5e3 * _input_timeout()
    unread: list[dict[str, Any]] = []
    floods: dict[str, list[dict[str, Any]]] = {}

    def pair(kind: str) -> None:  # an unread run, then the flood's: the same minute for both
        i = len(unread)
        unread.append(run_loop_bench(flood="unread", log_dir=tmp_path / f"unread{i}", **common))
        runs = floods.setdefault(kind, [])
        runs.append(run_loop_bench(flood=kind, log_dir=tmp_path / f"{kind}{len(runs)}", **common))

    def missed(runs: list[dict[str, Any]]) -> float:
        return float(np.median([r["missed_tick_fraction"] for r in runs]))

    for kind in ("jog", "ik", "target"):
        pair(kind)
    for kind in ("jog", "ik", "target"):  # above the bound once: two pairs more, then medians
        if missed(floods[kind]) > 1.5 * missed(unread) + NOISE:
            pair(kind)
            pair(kind)
    base = missed(unread)
    for kind, runs in floods.items():
        what = f"{kind} flood vs unread (median missed {base:.3f}): {runs} vs {unread}"
        for r in runs:
            assert r["flood_sent"] > 0.3 * FLOODS[kind].rate * DURATION, what  # it did flood
            assert r["commands_out_of_limits"] == 0, what
            assert r["exit_codes"].startswith("sim_robot=0,node=0"), what
            # a longer gap only where the joint states paused as long (a starved simulated
            # robot beside the burners), and then with the stop the node promises -- unless the
            # hypervisor paused the machine (steal time) and the simulated robot, another
            # process, was stopped for most of the gap too: no process ran, the node neither
            # (measured once: 180 ms without a tick, the robot's states 141 ms, 1.7 % steal)
            if r["command_gap_max_ms"] >= half_timeout_ms:
                assert r["joint_state_gap_max_ms"] >= 0.5 * half_timeout_ms, what
                stop = "control stale: joint states are"
                paused = (
                    r["steal_percent"] > 0.0
                    and r["joint_state_gap_max_ms"] >= 0.5 * r["command_gap_max_ms"]
                )
                assert paused or stop in (Path(r["log_dir"]) / "node.log").read_text(), what
        assert missed(runs) <= 1.5 * base + NOISE, what


@pytest.mark.parametrize("kind", STOP_KINDS)
def test_the_last_command_is_zero(kind: str, dds_domain: int) -> None:
    r = run_stop(kind, domain=dds_domain)
    assert r["last_command_zero"], r
    assert kind == "enable" or r["node_exit_code"] == 0, r
