"""Floods beside the node over DDS: the loop keeps its ticks; the last command is always zero.

Real processes (the node, the simulated robot, a flooding publisher) on shared-memory DDS in
this module's domain, beside whatever else the machine runs: each flood floods, the loop keeps
most of its ticks, no gap between commands reaches half of ``input_timeout`` unless the node
stopped the robot as it promises (its joint states stalled), and no command leaves the velocity
limits. What a flood costs (its missed ticks against an unread flood's, beside CPU burners) is
``itasc-bench flood``'s. Then the node is stopped each
way (SIGINT, SIGTERM, ``~/enable false``) while the robot moves: the last command that arrives
is a zero
(``itasc-bench stops --runs 50`` is the long version).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from itasc_bench.arguments import flood_kinds
from itasc_bench.loop.flood import FLOODS
from itasc_bench.loop.flood_series import flood_summary
from itasc_bench.loop.run import run_loop_bench
from itasc_bench.loop.stops import STOP_KINDS, run_stop
from itasc_ros.params import config_from_parameters, read_params_file
from itasc_ros.tools.resources import share_file

RATE = 250.0  # [Hz]
DURATION = 3.0  # [s] measured per run
MISSED_MAX = 0.5  # missed-tick fraction: the loop keeps most of its ticks under a flood


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
    """Each flood: it floods, the loop goes on commanding within the limits, and a gap in the
    commands comes only with the stop the node promises when its inputs stall.

    Behaviour, not the flood's cost: the missed-tick fraction against an unread flood's beside
    CPU burners moved by up to 3x from run to run on this machine (0.068-0.25), and is
    ``itasc-bench flood``'s figure (``<flood>_missed_ticks_vs_unread``). Here the machine's own
    load (the other tests) is the load; the loop must keep most of its ticks under each flood.
    """
    common: dict[str, Any] = dict(
        robot="panda", rate=RATE, duration=DURATION, warmup=1.5, domain=dds_domain
    )
    half_timeout_ms = 0.5e3 * _input_timeout()
    for kind in ("jog", "ik", "target"):
        r = run_loop_bench(flood=kind, log_dir=tmp_path / kind, **common)
        what = f"{kind} flood: {r}"
        assert r["flood_sent"] > 0.3 * FLOODS[kind].rate * DURATION, what  # it did flood
        assert r["commands_out_of_limits"] == 0, what
        assert r["exit_codes"].startswith("sim_robot=0,node=0"), what
        # The loop goes on: most of its ticks under the flood (0.07-0.25 missed beside two
        # burners, the benchmark's worst case), but for the ticks it could not run because the
        # rest of the machine took the CPUs: a thread of the node waited on a run queue for that
        # share of the window (measured: 0.52 of the ticks missed while a thread of the node
        # waited 1.73 s of 3 s, load average 4.1 on 2 CPUs). A flood that held the loop in the
        # node (the GIL, a callback hogging the executor) is not such a wait: it stays bounded.
        starved_share = r["node_runqueue_wait_max_ms"] / (1e3 * r["duration_s"])
        assert r["missed_tick_fraction"] < MISSED_MAX + starved_share, what
        # A gap of half input_timeout or more only with the stop the node promises when its
        # joint states stall (its log: stale, a zero command sent), or with the machine paused
        # by the hypervisor (steal time) as long: no process ran, the node neither. Not "only
        # where this process saw the joint states pause too": DDS delivery to the node paused
        # under the jog flood while this process got the states every 12 ms (181 ms without a
        # command, the node stale and stopping as it promises; doc/realtime.md "A rare stall
        # under a jog flood").
        # Or with the node starved of the CPU as long by the rest of the machine (a thread of
        # it waited on a run queue at least half the gap: measured, 336 ms without a command
        # while the tests of a fresh clone and a compilation beside them loaded 2 CPUs with
        # 3.8 runnable tasks on average, the node neither stale nor using more than 12 %).
        if r["command_gap_max_ms"] >= half_timeout_ms:
            stale = "control stale: joint states are"
            paused = (
                r["steal_percent"] > 0.0
                and r["joint_state_gap_max_ms"] >= 0.5 * r["command_gap_max_ms"]
            )
            starved = r["node_runqueue_wait_max_ms"] >= 0.5 * r["command_gap_max_ms"]
            # Or this process, the observer, received nothing either (no joint state of the
            # simulated robot's 250 Hz in the window, or a gap of theirs as long): a gap it
            # cannot tell from its own (measured once beside a CPU burner: 0 commands and 0
            # joint states received in the 3 s window, the node at 17 % and never stale).
            blind = (
                r["joint_states_received"] == 0
                or r["joint_state_gap_max_ms"] >= 0.5 * r["command_gap_max_ms"]
            )
            log = (Path(r["log_dir"]) / "node.log").read_text()
            assert paused or starved or blind or stale in log, what


@pytest.mark.parametrize("kind", STOP_KINDS)
def test_the_last_command_is_zero(kind: str, dds_domain: int) -> None:
    r = run_stop(kind, domain=dds_domain)
    assert r["last_command_zero"], r
    assert kind == "enable" or r["node_exit_code"] == 0, r
