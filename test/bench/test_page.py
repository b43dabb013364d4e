"""The benchmark page: written from the results' JSON, current, one section per benchmark."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from itasc_bench import page
from itasc_bench.cli import SUBCOMMANDS, _parser

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results"
PAGE = REPO / "doc" / "benchmarks.md"


def test_the_page_is_the_one_its_results_give() -> None:
    """doc/benchmarks.md is written by ``python -m itasc_bench.page`` from bench/results/:
    a result measured again (or a page edited by hand) leaves it stale."""
    assert page.page(RESULTS) == PAGE.read_text(), (
        f"{PAGE.relative_to(REPO)} is not the page of {RESULTS.relative_to(REPO)}: run "
        f"{sys.executable} -m itasc_bench.page"
    )


def test_every_benchmark_has_a_current_result_with_its_machine() -> None:
    found = sorted(p.stem for p in RESULTS.glob("*.json"))
    assert found == sorted(page.RUNS), "one result per benchmark, no other"
    for name in found:
        result = json.loads((RESULTS / f"{name}.json").read_text())
        assert result["command"] == "itasc-bench " + " ".join([*page.RUNS[name], "--json"])
        m = result["machine"]
        assert m["cpus"] > 0 and m["cpu"] and m["python"] and "itasc_ros" in m["versions"]
        assert len(result) > 2, f"{name}: no figures"


def test_every_subcommand_has_a_run_the_cli_accepts() -> None:
    """One table per ``itasc-bench`` subcommand (``all`` is several of them)."""
    run = {args[0] for args in page.RUNS.values()}
    assert run == set(SUBCOMMANDS) - {"all"}
    for name, args in page.RUNS.items():
        parsed = _parser().parse_args([*args, "--json"])
        assert parsed.what == args[0] and parsed.json, name
        assert name in page.ABOUT, f"{name}: what it measures"


def test_a_section_puts_ratios_first_and_names_the_machine() -> None:
    result = {
        "command": "itasc-bench tick --json",
        "machine": page.machine(),
        "tick": {"panda": {"ours_us": 26.0, "pykdl_us": 17.7, "notes": ["a note"]}},
        "tick_ratio_vs_pykdl": 1.47,
        "tick_ratio_vs_placo": 6.6,
    }
    lines = page.section("tick", result)
    text = "\n".join(lines)
    assert lines[0] == "## tick" and "`itasc-bench tick --json`" in text
    assert f"({result['machine']['cpus']} CPUs)" in text and "itasc_ros" in text
    ratio = text.index("`tick_ratio_vs_pykdl` | 1.47")
    assert ratio < text.index("`tick.panda.ours_us` | 26")
    assert text.index("`tick_ratio_vs_placo` | 6.6") < text.index("`tick.panda.pykdl_us` | 17.7")
    assert "- tick.panda: a note" in text


def test_a_list_of_records_is_one_row_each() -> None:
    """``ik`` prints ``{"results": [...]}``: the solvers side by side, a row per record."""
    records = [  # sorted keys, as a result file keeps them: the words come first anyway
        {"mean_ms": 0.1, "robot": "panda", "solver": "itasc", "success_rate": 1.0},
        {"mean_ms": 0.7, "robot": "panda", "solver": "trac_ik", "success_rate": 0.98},
    ]
    text = "\n".join(page.section("ik", {"command": "c", "machine": {}, "results": records}))
    assert "| robot | solver | mean_ms | success_rate |" in text
    assert "| panda | itasc | 0.1 | 1 |" in text and "| panda | trac_ik | 0.7 | 0.98 |" in text


def test_check_says_when_the_page_is_stale(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "tick.json").write_text(
        json.dumps({"command": "c", "machine": page.machine(), "tick_ratio_vs_pykdl": 1.5})
    )
    out = tmp_path / "benchmarks.md"
    assert page.main(["--results", str(results), "--write", str(out)]) == 0
    assert page.main(["--results", str(results), "--write", str(out), "--check"]) == 0
    (results / "tick.json").write_text(
        json.dumps({"command": "c", "machine": page.machine(), "tick_ratio_vs_pykdl": 1.4})
    )
    assert page.main(["--results", str(results), "--write", str(out), "--check"]) == 1


@pytest.mark.parametrize("only", ["nothing", "tick,nothing"])
def test_an_unknown_benchmark_is_a_usage_error(only: str, tmp_path: Path) -> None:
    assert page.main(["--run", "--only", only, "--results", str(tmp_path)]) == 2
    assert not list(tmp_path.iterdir()), "nothing ran"
