"""The benchmark page: ``doc/benchmarks.md`` written from ``itasc-bench ... --json`` results.

Each benchmark of :data:`RUNS` is one ``itasc-bench`` command line; ``python -m
itasc_bench.page --run`` runs them (or ``--only`` some), keeps each one's JSON line as
``bench/results/<name>.json`` (replacing the last one: the results are the current ones, their
history is git's) and writes the page from every result: one section per benchmark, its
command, the machine and versions it ran on, then its ratios to the peers (ours / peer: below
1 we are faster or closer) before its other figures. ``--check`` says whether the page is the
one its results give (a test keeps it so).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

#: Benchmark -> the arguments of its ``itasc-bench`` command line (``--json`` is added), in
#: the page's order.
RUNS: dict[str, list[str]] = {
    "kinematics": ["kinematics"],
    "tick": ["tick"],
    "tracking": ["tracking"],
    "paths": ["paths"],
    "lag": ["lag"],
    "outliers": ["outliers"],
    "unreachable": ["unreachable", "--samples", "20"],
    "hierarchy": ["hierarchy"],
    "collision": ["collision"],
    "ik": ["ik", "--samples", "1000"],
    "loop": ["loop", "--trigger", "joint_states", "--realtime", "--floor", "--runs", "3"],
    "loop_cpu": ["loop", "--duration", "8", "--core-floor", "--runs", "8"],
    "journal": ["loop", "--journal", "--runs", "3"],
    "flood": ["flood", "--runs", "2"],
    "stops": ["stops", "--runs", "50"],
    "soak": ["soak"],
}

#: What each benchmark measures (the section's first line).
ABOUT: dict[str, str] = {
    "kinematics": "FK and the tip's Jacobian of the Panda and of Talos, beside Orocos KDL "
    "(PyKDL) and Pinocchio [us per call].",
    "tick": "One control tick of the Panda (FK, Jacobian, 6-D pose task, damping, limits) beside "
    "KDL's WDLS tick, and beside PlaCo and Drake, which solve with the same limits inside their "
    "program; the node's whole tick (with its parts: the joint state's and the target's "
    "acceptance, the step and the scene's solve in it; the time in its compiled calls, and the "
    "ratio to KDL's it would have with no Python), the node's and KDL's ticks on a moving arm "
    "back to back and once per 4 ms period as a 250 Hz node makes them (`paced`: caches no "
    "longer warm), a Talos tick, and two priority levels against one [us per call].",
    "tracking": "A target on a 0.1 m circle at 0.25 m/s, with and without feed-forward "
    "(the controller closed on an ideal velocity robot) [m].",
    "paths": "Long circles, lines and spirals (20 s each) under Franka's motion limits: the "
    "largest tracking error and the time the task was reported short, the shipped config "
    "beside the ideal velocity IK (no motion limits) and PlaCo.",
    "lag": "The circle on a robot whose velocity servos lag 0-30 ms (in process, Franka's "
    "limits): our controller without and with actuator_lag, beside pink through the same "
    "servos (pink feeds no target velocity forward) [m].",
    "outliers": "One bad target pose in a 50 Hz stream on a circle: how far the effector goes "
    "off the run without it, and how long it takes to come back.",
    "unreachable": "A target 2 m away from random starts (Panda, UR5, their limits): the most "
    "sign changes per second of a joint's command after 1 s (chattering).",
    "hierarchy": "Strict priority under saturation (Panda, the hand 0.3 m away at gain 20 above "
    "a posture): the first level's task velocity with and without the second, beside PlaCo "
    "and Drake.",
    "collision": "The collision constraint's distance queries per tick on the Panda's pairs "
    "beside Pinocchio + coal on the same pairs, and the tick with self-collision on [us].",
    "ik": "Position IK on the TRAC-IK protocol (5 ms, every pose error component <= 1e-5, 1000 "
    "random reachable targets per row) beside TRAC-IK and KDL's NR_JL.",
    "loop": "The node at 1 kHz over DDS with the simulated robot (joint_states trigger, "
    "real-time scheduling), beside the floor node that computes nothing.",
    "loop_cpu": "The node's CPU at 1 kHz (timer trigger) in layers: the floor node, the floor "
    "plus the scene's solve, the floor plus the whole tick.",
    "journal": "The 1 kHz loop with a subscriber of ``~/journal`` (exact replay) beside the same "
    "run without.",
    "flood": "The loop at 250 Hz beside two CPU burners under input floods (jog twists 5 kHz, IK "
    "requests 2 kHz, target poses 5 kHz), each beside the same run with a flood nobody reads.",
    "stops": "The last command the robot receives when the node is stopped while it moves "
    "(SIGINT, SIGTERM, ``~/enable false``).",
    "soak": "Ten minutes at 1 kHz: bad commands (NaN, over a limit) and the node's memory.",
}

#: Distributions whose versions a result records (those installed).
VERSIONS = (
    "itasc_ros",
    "numpy",
    "numba",
    "scipy",
    "ros-rclpy",
    "ros-jazzy-rclpy",
    "pin",
    "pytracik",
    "drake",
    "daqp",
    "coal",
)

RESULTS = Path("bench") / "results"
PAGE = Path("doc") / "benchmarks.md"


def machine() -> dict[str, Any]:
    """The machine and software a result was measured on (recorded with every result)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for dist in VERSIONS:
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return {
        "cpu": cpu,
        "cpus": os.cpu_count() or 0,
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "versions": versions,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
    }


# ----------------------------------------------------------------------------- running
def run(names: Iterable[str], results: Path, bench: Sequence[str]) -> list[str]:
    """Run the benchmarks ``names`` and keep each one's JSON line as ``results/<name>.json``.

    Args:
        names: benchmarks of :data:`RUNS`.
        results: the results' folder.
        bench: the ``itasc-bench`` command (e.g. ``[sys.executable, "-m", "itasc_bench.cli"]``).

    Returns:
        The benchmarks that failed, each with its last line of output (a failed run keeps the
        previous result).
    """
    results.mkdir(parents=True, exist_ok=True)
    failed = []
    for name in names:
        cmd = [*bench, *RUNS[name], "--json"]
        print(f"== {name}: {' '.join(cmd[len(bench) :])}", flush=True)
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
        lines = proc.stdout.strip().splitlines()
        print("\n".join(lines[:-1]), flush=True)
        if proc.returncode != 0 or not lines:
            failed.append(f"{name}: exit status {proc.returncode}")
            continue
        try:
            result = json.loads(lines[-1])
        except json.JSONDecodeError:
            failed.append(f"{name}: no JSON line")
            continue
        result["command"] = "itasc-bench " + " ".join([*RUNS[name], "--json"])
        result.setdefault("machine", machine())
        (results / f"{name}.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return failed


# ----------------------------------------------------------------------------- the page
#: Longest list shown whole; a longer one (a time series) is summarised.
LIST_SHOWN = 8


def _number(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v).replace("|", "/").replace("\n", " ")


def _is_ratio(name: str) -> bool:
    """A figure that compares ours with a peer (its name's last part says ratio or vs)."""
    leaf = name.rsplit(".", 1)[-1]
    return bool(re.search(r"(^|_)(ratio|vs)(_|$)", leaf))


def _rows(prefix: str, value: Any, out: list[tuple[str, str]], notes: list[str]) -> None:
    """Flatten ``value`` into (figure, value) rows: nested names joined with dots."""
    if isinstance(value, Mapping):
        for k in sorted(value):
            if k == "notes" and isinstance(value[k], list):
                notes.extend(f"{prefix}: {n}" if prefix else str(n) for n in value[k])
                continue
            _rows(f"{prefix}.{k}" if prefix else str(k), value[k], out, notes)
    elif isinstance(value, list) and all(not isinstance(v, Mapping | list) for v in value):
        if len(value) <= LIST_SHOWN:
            out.append((prefix, ", ".join(_number(v) for v in value)))
        else:  # a time series: the JSON has it whole
            nums = [v for v in value if isinstance(v, int | float) and not isinstance(v, bool)]
            span = f", {_number(min(nums))} to {_number(max(nums))}" if nums else ""
            out.append((prefix, f"{len(value)} values{span}"))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _rows(f"{prefix}[{i}]", v, out, notes)
    else:
        out.append((prefix, _number(value)))


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], names: bool = True) -> list[str]:
    """A Markdown table; ``names``: the first column holds figures' names (as code)."""
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(f"`{c}`" if i == 0 and names else c for i, c in enumerate(r))
              + " |" for r in rows]  # fmt: skip
    return lines


def _ratios_first(rows: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [r for r in rows if _is_ratio(r[0])] + [r for r in rows if not _is_ratio(r[0])]


def _records(result: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """A result that is a list of records (``ik``): its records, else None."""
    records = result.get("results")
    if isinstance(records, list) and records and all(isinstance(r, Mapping) for r in records):
        return records
    return None


def _machine_line(m: Mapping[str, Any]) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in sorted(m.get("versions", {}).items()))
    return (
        f"Measured {m.get('date', '?')} on {m.get('cpu', '?')} ({m.get('cpus', '?')} CPUs), "
        f"{m.get('system', '?')}, Python {m.get('python', '?')}; {versions}."
    )


def section(name: str, result: Mapping[str, Any]) -> list[str]:
    """The page's section of one benchmark's result.

    Its headline figures (the result's top-level numbers, the keys ``itasc-bench`` documents),
    ratios first; then the records of a result that is a list of them (``ik``: a row each);
    then every other figure, flattened, ratios first; then the notes.
    """
    lines = [f"## {name}", "", ABOUT.get(name, ""), "", f"`{result.get('command', '?')}`", ""]
    lines += [_machine_line(result.get("machine", {})), ""]
    figures = {k: v for k, v in result.items() if k not in ("command", "machine")}
    records = _records(figures)
    if records is not None:
        figures.pop("results")
    headline = {k: v for k, v in figures.items() if not isinstance(v, Mapping | list)}
    top: list[tuple[str, str]] = []
    _rows("", headline, top, [])
    if top:
        lines += _table(("figure", "value"), _ratios_first(top))
    if records is not None:  # what a row is first (its words), then its figures
        keys = list(dict.fromkeys(k for r in records for k in r))
        words = [k for k in keys if all(isinstance(r.get(k, ""), str) for r in records)]
        columns = words + [k for k in keys if k not in words]
        rows = [[_number(r.get(c, "")) for c in columns] for r in records]
        table = _table(columns, rows, names=False)
        lines += ["", *table] if top else table
    shown = {(k.rsplit(".", 1)[-1], v) for k, v in top}
    rest: list[tuple[str, str]] = []
    notes: list[str] = []
    _rows("", {k: v for k, v in figures.items() if k not in headline}, rest, notes)
    rest = [r for r in rest if (r[0].rsplit(".", 1)[-1], r[1]) not in shown]  # the headline's
    if rest:
        lines += ["", "All figures:", "", *_table(("figure", "value"), _ratios_first(rest))]
    if notes:
        lines += ["", *(f"- {n}" for n in notes)]
    return [*lines, ""]


def page(results: Path) -> str:
    """The benchmark page of every result in ``results`` (:data:`RUNS`' order, then others)."""
    found = {p.stem: p for p in sorted(results.glob("*.json"))}
    order = [n for n in RUNS if n in found] + sorted(n for n in found if n not in RUNS)
    lines = [
        "# Benchmarks",
        "",
        "The current figures of `itasc-bench`, each beside its peers in the same run (medians; "
        "a ratio is ours / the peer's: below 1 we are faster, or closer to the path). This page "
        "is written from the results' JSON (`bench/results/`) by `make bench`, which runs every "
        "benchmark again; `python -m itasc_bench.page --run --only <name>` measures one again. "
        "Earlier figures are in the repository's history and in the CHANGELOG.",
        "",
        "Benchmarks: " + ", ".join(f"[{n}](#{n})" for n in order) + ".",
        "",
    ]
    for name in order:
        lines += section(name, json.loads(found[name].read_text()))
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m itasc_bench.page``: run the benchmarks and/or write (or check) the page."""
    ap = argparse.ArgumentParser(prog="python -m itasc_bench.page", description=__doc__)
    ap.add_argument("--run", action="store_true", help="run the benchmarks first")
    ap.add_argument("--only", default="", help="with --run: comma-separated benchmarks")
    ap.add_argument("--results", type=Path, default=RESULTS, help="the results' folder")
    ap.add_argument("--write", type=Path, default=PAGE, help="the page to write")
    ap.add_argument("--check", action="store_true", help="exit 1 if the page is not current")
    args = ap.parse_args(argv)
    failed: list[str] = []
    if args.run:
        names = [n for n in args.only.split(",") if n] or list(RUNS)
        unknown = sorted(set(names) - set(RUNS))
        if unknown:
            print(f"{ap.prog}: error: unknown benchmarks {unknown}", file=sys.stderr)
            return 2
        failed = run(names, args.results, [sys.executable, "-m", "itasc_bench.cli"])
    text = page(args.results)
    if args.check:
        current = args.write.is_file() and args.write.read_text() == text
        if not current:
            print(f"{args.write} is not the page of {args.results}: run {ap.prog}")
        return 0 if current else 1
    args.write.write_text(text)
    print(f"wrote {args.write} from {args.results}")
    for f in failed:
        print(f"{ap.prog}: failed: {f}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["ABOUT", "RUNS", "machine", "main", "page", "run", "section"]
