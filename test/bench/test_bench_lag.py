"""``itasc-bench lag``: the lag table, ours told and not told beside pink on the same servos."""

from __future__ import annotations

from itasc_bench.lag import LAGS, bench_lag


def test_the_lag_table_shows_the_lag_inverted_and_pink_beside_it() -> None:
    rows = bench_lag()
    assert [k for k in rows if k != "notes"] == [f"{lag * 1e3:g}ms" for lag in LAGS]
    ideal = rows["0ms"]["told_rms_m"]
    assert ideal == rows["0ms"]["not_told_rms_m"] < 1e-4  # no lag: the same run
    for key in ("10ms", "20ms", "30ms"):
        r = rows[key]
        assert r["told_rms_m"] < 0.35 * r["not_told_rms_m"], (key, r)
        assert r["not_told_rms_m"] > r["told_rms_m"] > 0.9 * ideal
        if "pink_rms_m" in r:  # feedback only: about speed / gain whatever the lag
            assert 0.010 < r["pink_rms_m"] < 0.015, r
    assert "pink_rms_m" in rows["20ms"] or "pink" in " ".join(rows.get("notes", []))
