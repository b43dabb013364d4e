"""``itasc-bench tick`` as a user runs it: the peers with limits inside the solve in its JSON.

The installed console script runs once, briefly (``--number 20 --repeats 1``); its last line is
the JSON object. A peer that cannot run here is named with the reason, not a crash.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from itasc_bench.peers import PeerUnavailable, import_pydrake
from itasc_bench.peers.availability import check_placo
from itasc_ros.tools.dds_env import local_dds_env

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def tick_json() -> dict:
    done = subprocess.run(
        [str(BIN / "itasc-bench"), "tick", "--number", "20", "--repeats", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        env=local_dds_env(),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _usable(check) -> bool:
    try:
        check()
    except PeerUnavailable:
        return False
    return True


@pytest.mark.parametrize(("peer", "check"), [("placo", check_placo), ("drake", import_pydrake)])
def test_tick_json_has_the_limits_peers(tick_json, peer, check) -> None:
    tick = tick_json["tick"]
    panda = tick["panda"]
    if not _usable(check):
        assert "make limit-peers" in tick[f"{peer}_unavailable"]
        assert f"{peer}_us" not in panda and f"tick_ratio_vs_{peer}" not in tick_json
        return
    assert f"{peer}_unavailable" not in tick
    assert 0.0 < panda[f"{peer}_us"] < 1e5
    ratio = panda["itasc_ros_us"] / panda[f"{peer}_us"]
    assert math.isclose(panda[f"ratio_vs_{peer}"], ratio, rel_tol=1e-12)
    assert tick[f"tick_ratio_vs_{peer}"] == panda[f"ratio_vs_{peer}"]
    assert tick_json[f"tick_ratio_vs_{peer}"] == panda[f"ratio_vs_{peer}"]


def test_tick_json_keeps_the_pykdl_figures(tick_json) -> None:
    tick = tick_json["tick"]
    assert tick["panda"]["itasc_ros_us"] > 0.0
    assert "tick_ratio_vs_pykdl" in tick_json or "pykdl_unavailable" in tick
    assert set(tick["priorities"]) == {"one_level_us", "two_levels_us", "ratio_two_vs_one_level"}


def test_tick_json_counts_the_node_ticks_calls(tick_json) -> None:
    """The node's tick beside PyKDL's, and the compiled and Python calls it makes per tick."""
    tick = tick_json["tick"]
    calls = tick["node_tick_calls"]
    assert set(calls) == {"compiled", "python"}
    assert 1.0 <= calls["compiled"] < calls["python"]  # a tick solves; Python glues it
    if "pykdl_us" in tick["panda"]:
        ratio = tick["panda"]["controller_node_tick_us"] / tick["panda"]["pykdl_us"]
        assert math.isclose(tick_json["node_tick_ratio_vs_pykdl"], ratio, rel_tol=1e-12)


def test_tick_json_says_where_the_node_tick_goes(tick_json) -> None:
    """The node's tick in parts: its inputs' acceptance, the step and the scene's solve in it."""
    parts = tick_json["tick"]["node_tick_parts"]
    assert set(parts) == {
        "joint_state_us", "target_us", "step_us", "solve_us", "step_without_solve_us",
        "solve_share", "compiled_us", "python_us", "compiled_share",
    }  # fmt: skip
    assert all(0.0 < parts[k] < 1e5 for k in ("joint_state_us", "target_us", "step_us"))
    whole = parts["joint_state_us"] + parts["target_us"] + parts["step_us"]
    assert math.isclose(parts["solve_share"], parts["solve_us"] / whole, rel_tol=1e-12)
    assert 0.0 < parts["solve_us"] < parts["step_us"]  # the solve is part of the step
    assert math.isclose(
        parts["step_without_solve_us"], parts["step_us"] - parts["solve_us"], rel_tol=1e-12
    )
    # the compiled calls' time and their share of the same ticks (timed in ticks of their own)
    assert parts["compiled_us"] > 0.0 and 0.0 < parts["compiled_share"] < 1.0
    python = whole * (1.0 - parts["compiled_share"])
    assert math.isclose(parts["python_us"], python, rel_tol=1e-12)
    if "node_tick_ratio_vs_pykdl" in tick_json:
        assert math.isclose(
            tick_json["node_tick_compiled_ratio_vs_pykdl"],
            parts["compiled_share"] * tick_json["node_tick_ratio_vs_pykdl"],
            rel_tol=1e-12,
        )


def test_tick_json_paces_the_moving_ticks_as_a_node(tick_json) -> None:
    """The node's and KDL's moving ticks made once per period of a 250 Hz node, beside their
    times back to back: each ratio is of the figures it names."""
    tick = tick_json["tick"]
    if "pykdl_moving_us" not in tick["panda"]:
        assert "paced" not in tick
        return
    paced = tick["paced"]
    assert paced["period_ms"] == 4.0
    node, kdl = paced["node_tick_moving_us"], paced["pykdl_moving_us"]
    assert 0.0 < node < 1e5 and 0.0 < kdl < 1e5
    assert math.isclose(paced["ratio_vs_pykdl"], node / kdl, rel_tol=1e-12)
    assert tick_json["node_tick_paced_ratio_vs_pykdl"] == paced["ratio_vs_pykdl"]
    panda = tick["panda"]
    for key, hot in (
        ("node_tick_moving", panda["controller_node_tick_moving_us"]),
        ("pykdl_moving", panda["pykdl_moving_us"]),
    ):
        ratio = paced[f"{key}_us"] / hot
        assert math.isclose(paced[f"{key}_vs_back_to_back"], ratio, rel_tol=1e-9)
