"""itasc-bench paths: the long paths an ideal velocity IK follows, tracked as well under limits."""

from __future__ import annotations

from itasc_bench.paths import VARIANTS, bench_paths


def test_the_shipped_config_tracks_every_followable_path_as_the_ideal_does() -> None:
    r = bench_paths(with_peers=False, count=12)  # the benchmark's first 12 (it runs 24)
    s = r["summary"]
    assert set(VARIANTS) <= set(s) and s["ideal"]["paths"] >= 5, s
    assert len(r["paths"]) == s["ideal"]["paths"]  # only the followable ones are rows
    for name in VARIANTS[1:]:  # the motion limits' own delay: within 1 mm of the ideal
        assert s[name]["max_error_m"] <= s["ideal"]["max_error_m"] + 1e-3, (name, s[name])
        assert s[name]["time_not_followed_s"] < 0.1, (name, s[name])
    assert r["placo_unavailable"] == "not asked"
