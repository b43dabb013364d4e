"""``itasc-bench hierarchy``'s core: the saturated two-level case, ours only (no peer needed)."""

from __future__ import annotations

import math

from itasc_ros.bench.hierarchy import bench_hierarchy

RUN_KEYS = {
    "ticks",
    "level1_speed_m_s",
    "level1_velocity_m_s",
    "level1_error_mm",
    "final_level1_error_mm",
    "final_posture_error_rad",
    "first_velocity_scale",
    "ended",
}


def test_ours_figures_are_there_and_finite() -> None:
    r = bench_hierarchy(peers=False)
    assert set(r) == {"case", "ours", "placo", "drake"}
    assert r["placo"] == r["drake"] == {"unavailable": "not measured (peers off)"}
    assert r["case"]["asked_speed_m_s"] == 6.0
    ours = r["ours"]
    for name in ("alone", "with_level2"):
        run = ours[name]
        assert set(run) == RUN_KEYS
        assert run["ended"] == "" and run["ticks"] == 250
        assert len(run["level1_error_mm"]) == 250
        assert all(math.isfinite(e) for e in run["level1_error_mm"])
        # the velocity limits bind: well below the 6 m/s asked, and scaled at the first tick
        assert 0.0 < run["level1_speed_m_s"] < 6.0
        assert 0.0 < run["first_velocity_scale"] < 1.0
        assert math.isfinite(run["final_posture_error_rad"])
    for key in ("speed_ratio", "task_velocity_change_m_s", "max_error_difference_mm"):
        assert math.isfinite(ours[key]) and ours[key] >= 0.0
    # the target is reached in 0.5 s either way (within a few mm)
    assert ours["alone"]["final_level1_error_mm"] < 5.0
