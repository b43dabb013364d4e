"""A user's mistakes on ``itasc-demo`` and ``itasc-replay``: one line, exit status 2.

Each case runs the console script as a process (no ROS process starts: the mistake is found
first) and checks that stderr is exactly one non-empty line naming what is wrong and what is
valid (the closest valid name for a typo), with no traceback. The cases' processes are forked
from one that has imported the scripts (``scripts.ScriptRunner``); a case of each script also
runs from a fresh process of the installed script (or ``python -m``), as a user runs it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from scripts import ScriptRun, ScriptRunner

import itasc_ros
from itasc_ros.tools.dds_env import local_dds_env

ROOT = Path(itasc_ros.__file__).resolve().parents[1]
GOLDEN = ROOT / "test" / "data" / "golden" / "panda_circle.mcap"


def _script(name: str, module: str) -> list[str]:
    script = Path(sys.executable).parent / name
    return [str(script)] if script.is_file() else [sys.executable, "-m", module]


def _run(cmd: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``cmd`` run from a fresh process."""
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=60,
        env=env or local_dds_env(),
        cwd=ROOT,
    )


def _fork(
    runner: ScriptRunner, script: str, args: list[str], env: dict[str, str] | None = None
) -> ScriptRun:
    """``script args`` run in a process forked from the runner's."""
    return runner.run(script, args, env or local_dds_env(), ROOT, no_init=True, timeout=60)


def _assert_one_line(
    proc: subprocess.CompletedProcess[str] | ScriptRun, prog: str, *expected: str
) -> None:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{prog}: error: "), lines[0]
    for text in expected:
        assert text in lines[0], (text, lines[0])


@pytest.fixture(scope="module")
def not_a_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A regular file: a folder below it cannot be created."""
    path = tmp_path_factory.mktemp("cli") / "a_file"
    path.write_text("not a folder\n")
    return path


DEMO_CASES = {
    "duration below the minimum": (["--duration", "12"], ["--duration 12", "at least 18.7 s"]),
    "non-positive duration": (["--duration", "0"], ["--duration", "is not a number > 0"]),
    "negative duration": (["--duration", "-5"], ["is not a number > 0"]),
    "duration not a number": (["--duration", "ten"], ["'ten' is not a number"]),
    "unknown robot": (["--robot", "pandaa"], ["'pandaa'", "did you mean 'panda'?", "'ur5'"]),
    "unknown scenario": (["--scenario", "prioritis"], ["did you mean 'priorities'?"]),
    "non-positive radius": (["--radius", "0"], ["--radius", "is not a number > 0"]),
}


@pytest.mark.parametrize("case", sorted(DEMO_CASES))
def test_demo_mistakes(case: str, script_runner: ScriptRunner) -> None:
    args, expected = DEMO_CASES[case]
    _assert_one_line(_fork(script_runner, "itasc-demo", args), "itasc-demo", *expected)


def test_demo_unwritable_out_and_bad_domain(not_a_dir: Path, script_runner: ScriptRunner) -> None:
    proc = _fork(script_runner, "itasc-demo", ["--out", str(not_a_dir / "out")])
    _assert_one_line(proc, "itasc-demo", "--out", "is not writable")
    args = ["--scenario", "priorities", "--out", str(not_a_dir / "out")]
    _assert_one_line(_fork(script_runner, "itasc-demo", args), "itasc-demo", "is not writable")
    env = local_dds_env()
    env["ROS_DOMAIN_ID"] = "lab"  # the user's own domain, but not a number
    proc = _fork(script_runner, "itasc-demo", [], env)
    _assert_one_line(proc, "itasc-demo", "ROS_DOMAIN_ID='lab'", "valid: 0 to 232")


def test_demo_as_a_module_is_the_console_script() -> None:
    """``python -m itasc_ros.tools.demo`` (no installed script) answers as ``itasc-demo``."""
    module = [sys.executable, "-m", "itasc_ros.tools.demo"]
    proc = _run([*module, "--robot", "pandaa"])
    _assert_one_line(proc, "itasc-demo", "'pandaa'", "did you mean 'panda'?")
    listed = _run([*module, "--list-scenarios"])
    assert listed.returncode == 0, listed.stderr
    script = _run([*_script("itasc-demo", "itasc_ros.tools.demo"), "--list-scenarios"])
    assert listed.stdout == script.stdout and "priorities: " in listed.stdout


REPLAY_CASES = {
    "missing bag (typo)": (
        [str(GOLDEN.with_suffix(".mcp"))],
        ["does not exist", f"did you mean {str(GOLDEN)!r}?"],
    ),
    "unknown robot": (
        [str(GOLDEN), "--urdf", "pandda"],
        ["'pandda'", "did you mean 'panda'?", "'ur5'"],
    ),
    "unknown parameter (typo)": (
        [str(GOLDEN), "--set", "constraints.ee.gian=3"],
        ["constraints.ee.gian", "did you mean 'constraints.ee.gain'?"],
    ),
    "unknown top-level parameter": (
        [str(GOLDEN), "--set", "damping_mx=0.1"],
        ["damping_mx", "did you mean 'damping_max'?"],
    ),
    "bad parameter value": (
        [str(GOLDEN), "--set", "constraints.ee.gain=abc"],
        ["constraints.ee.gain", "gain must be a number", "'abc'"],
    ),
    "override without '='": ([str(GOLDEN), "--set", "gain"], ["name=value"]),
    "non-positive speed": (
        [str(GOLDEN), "--online", "--speed", "0"],
        ["--speed", "is not a number > 0"],
    ),
    "non-positive tracking tolerance": (
        [str(GOLDEN), "--compare", "--tracking-tolerance", "-1"],
        ["--tracking-tolerance", "> 0"],
    ),
}


@pytest.mark.parametrize("case", sorted(REPLAY_CASES))
def test_replay_mistakes(case: str, script_runner: ScriptRunner) -> None:
    args, expected = REPLAY_CASES[case]
    _assert_one_line(_fork(script_runner, "itasc-replay", args), "itasc-replay", *expected)


def test_replay_unwritable_out_and_not_a_bag(not_a_dir: Path, script_runner: ScriptRunner) -> None:
    args = [str(GOLDEN), "--out", str(not_a_dir / "plots")]
    proc = _fork(script_runner, "itasc-replay", args)
    _assert_one_line(proc, "itasc-replay", "--out", "is not writable")
    proc = _fork(script_runner, "itasc-replay", [str(not_a_dir)])
    _assert_one_line(proc, "itasc-replay", "is not a rosbag2 bag", ".mcap")


def test_a_replay_mistake_on_the_installed_script() -> None:
    args, expected = REPLAY_CASES["unknown parameter (typo)"]
    proc = _run([*_script("itasc-replay", "itasc_ros.tools.replay"), *args])
    _assert_one_line(proc, "itasc-replay", *expected)
