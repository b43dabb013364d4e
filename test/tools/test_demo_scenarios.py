"""``itasc-demo --scenario``: the scenario package's contract and each scenario's figures.

Every module of :mod:`itasc_ros.tools.scenarios` keeps the contract (``NAME``,
``DESCRIPTION``, ``run(out_dir, quick)`` writing ``<NAME>.png`` and returning JSON-able
metrics); the CLI lists them and prints one JSON object. Each scenario runs in-process with
``quick=True`` and its metrics are asserted.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from itasc_ros.tools import demo, scenarios

_RESULTS: dict[str, dict[str, Any]] = {}


def _run(name: str, out: Path) -> dict[str, Any]:
    """Each scenario runs once per session (quick), shared by its tests."""
    if name not in _RESULTS:
        _RESULTS[name] = scenarios.load(name).run(out, quick=True)
        assert (out / f"{name}.png").stat().st_size > 10_000
    return _RESULTS[name]


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scenarios")


@pytest.mark.parametrize("name", scenarios.names())
def test_every_scenario_keeps_the_contract(name: str, out_dir: Path) -> None:
    module = scenarios.load(name)
    assert module.NAME == name
    assert isinstance(module.DESCRIPTION, str) and module.DESCRIPTION
    metrics = _run(name, out_dir)
    text = json.dumps(metrics, allow_nan=False)  # JSON-able, finite
    assert json.loads(text) == metrics and metrics


def test_priorities_pose_is_isolated_and_the_posture_converges(out_dir: Path) -> None:
    m = _run("priorities", out_dir)
    print(f"\npriorities: {m}")
    assert m["velocity_scaled_ticks"] == 0 and m["locked_ticks"] == 0
    # at every tick, the pose rows' rate is the pose-only solve's (the null space is exact)
    assert m["pose_rate_max_diff"] <= 1e-9
    # two separate closed-loop runs: equal but for the Euler step's second-order terms
    # (q += q' dt), which shrink with the period (1e-6 m at 2 kHz)
    assert m["pose_error_max_diff"] < 5e-5
    # in continuous time (the scene's q'(q) integrated by DOP853 at 1e-12) the pose error is
    # the single task's to 1e-9, while the posture moves the arm elsewhere in the null space
    assert m["pose_error_max_diff_continuous"] <= 1e-9
    assert m["posture_travel_continuous"] > 0.1
    assert m["velocity_scaled_or_locked"] == 0
    assert m["pose_error_end_continuous"] < 1e-3 * m["pose_error_start_continuous"]
    assert m["pose_error_end"] < 1e-3
    assert m["posture_error_end"] < 0.75 * m["posture_error_start"]
    assert m["posture_error_end"] < 0.75 * m["posture_error_end_without_posture_task"]


def test_talos_com_band_is_held_while_the_hands_move(out_dir: Path) -> None:
    m = _run("talos_com", out_dir)
    print(f"\ntalos_com: {m}")
    assert m["max_com_outside_band_m"] <= 1e-6
    assert m["max_com_outside_band_without_com_constraint_m"] > 0.02  # it would have left
    for hand in ("left_hand", "right_hand"):
        assert m["hand_error_end_of_waypoints_m"][hand][0] < 0.05  # nearly there
        assert m["hand_error_end_of_waypoints_without_com_constraint_m"][hand][0] < 1e-3


def test_talos_whole_body_bends_the_legs_and_keeps_the_feet_and_the_band(out_dir: Path) -> None:
    m = _run("talos_whole_body", out_dir)
    print(f"\ntalos_whole_body: {m}")
    assert all(m["success"]) and m["feet_error_max"] <= 1e-5
    assert m["com_outside_band_max_m"] == 0.0
    assert m["base_z_m"][-1] < -0.3  # the pelvis went down: the legs bent
    assert not any(m["success_legs_held"][1:])  # held legs: the low waypoints are out of reach
    assert min(m["hand_error_legs_held_m"][2:]) > 0.1


def test_the_cli_lists_and_runs_scenarios(
    out_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert demo.main(["--list-scenarios"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in listed] == scenarios.names()
    assert demo.main(["--scenario", "no_such", "--out", str(out_dir)]) == 2
    assert "scenarios are: " + ", ".join(scenarios.names()) in capsys.readouterr().err
    cli_out = out_dir / "cli"
    assert demo.main(["--scenario", "priorities", "--quick", "--json", "--out", str(cli_out)]) == 0
    metrics = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert math.isclose(
        metrics["posture_error_start"], _run("priorities", out_dir)["posture_error_start"]
    )
    assert (cli_out / "priorities.png").is_file() and (cli_out / "priorities.json").is_file()


def test_mobile_base_holds_the_hand_in_the_world_and_reaches_beyond_the_arm(
    out_dir: Path,
) -> None:
    m = _run("mobile_base", out_dir)
    print(f"\nmobile_base: {m}")
    assert m["hold_error_max_fed_m"] < 1e-3  # held in the world while the base drives
    assert m["hold_error_rms_without_base_twist_m"] > 10.0 * m["hold_error_rms_fed_m"]
    assert m["reach_target_distance_m"] > 3.0 and m["reach_error_end_m"] < 1e-3
    assert m["reach_base_travel_m"] > 2.0  # the base did the travelling
    assert m["reach_max_velocity_ratio"] <= 1.0 + 1e-9
    assert m["reach_max_base_acceleration_mps2"] <= 1.0 + 1e-6  # base_max_acceleration
    assert m["reach_max_base_angular_acceleration_radps2"] <= 2.0 + 1e-6
    assert (out_dir / "mobile_base.png").stat().st_size > 10_000


def test_two_pandas_carry_the_box_without_squeezing_it(out_dir: Path) -> None:
    m = _run("two_pandas", out_dir)
    print(f"\ntwo_pandas: {m}")
    assert m["grasp_error_max_m"] < 1e-4 and m["grasp_angle_max_rad"] < math.radians(0.1)
    assert m["box_error_max_m"] < 5e-3
    assert m["closest_pair_between_robots_m"] >= m["margin_m"] - 1e-3
    assert (out_dir / "two_pandas.png").stat().st_size > 10_000
