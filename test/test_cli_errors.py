"""A user's mistake in a console script is one line on stderr and exit status 2.

Each case runs a console script as its own process, with shared-memory DDS and a private
ROS_DOMAIN_ID, and checks: status 2, exactly one non-empty line on stderr naming the wrong value
and what is valid (the closest name for a typo), and no traceback. The argument checks run before
``rclpy.init``: the cases run with ``rclpy.init`` replaced by an exit with status 3, so a script
that starts DDS for a mistake fails here. The cases' processes are forked from one that has
imported the scripts (``scripts.ScriptRunner``: milliseconds a case instead of a second of
imports); each script's first case also runs as the installed ``.venv/bin/<script>``, from a
fresh process, as a user runs it.
"""

from __future__ import annotations

import inspect
import json
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scripts import ScriptRun, ScriptRunner

from itasc_ros.core import solve_ik
from itasc_ros.tools import ik as ik_cli
from itasc_ros.tools.dds_env import local_dds_env

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TIMEOUT = 60.0  # [s] generous for a loaded 2-core machine; a case takes about 0.5 s
PANDA = str(REPO / "urdf" / "panda.urdf")
XYZ = ["--xyz", "0.4", "0.1", "0.5"]
QUAT = ["--quat", "1", "0", "0", "0"]
# (script, arguments ({tmp}: a fresh directory), texts stderr must contain)
CASES: list[tuple[str, list[str], list[str]]] = [
    # itasc-record
    ("itasc-record", ["--topics", "/x:foo_msgs/msg/Nope", "--out", "{tmp}/bag"],
     ["'foo_msgs/msg/Nope'", "'std_msgs'"]),
    ("itasc-record", ["--topics", "/x:std_msgs/msg/Strin", "--out", "{tmp}/bag"],
     ["'std_msgs/msg/Strin'", "did you mean 'std_msgs/msg/String'?"]),
    ("itasc-record", ["--topics", "/x:std_msg/String", "--out", "{tmp}/bag"],
     ["'std_msg/msg/String'", "did you mean 'std_msgs'?"]),
    ("itasc-record", ["--topics", "/x:String"], ["'String'", "'pkg/msg/Type'"]),
    ("itasc-record", ["--topics", "bad topic"], ["'bad topic'", "'/joint_states'"]),
    ("itasc-record", ["--out", "/proc/nope/bag"], ["'/proc/nope'", "not writable"]),
    ("itasc-record", ["--out", "{tmp}/a_file/bag"], ["a_file'", "not a directory"]),
    ("itasc-record", ["--out", "{tmp}"], ["--out '", "exists already"]),
    ("itasc-record", ["--duration", "abc"], ["'abc'", "number > 0"]),
    ("itasc-record", ["--duration", "-1"], ["'-1'", "number > 0"]),
    ("itasc-record", ["--storage", "mcpa"], ["'mcpa'", "did you mean 'mcap'?"]),
    ("itasc-record", ["--ros-args", "--parms-file", "x.yaml"],
     ["'--parms-file'", "did you mean '--params-file'?"]),
    ("itasc-record", ["--ros-args", "-r", "foo"], ["'-r foo'", "remap"]),
    # itasc-ik
    ("itasc-ik", ["nope.urdf", *XYZ], ["'nope.urdf'", "'panda'", "'ur5'"]),
    ("itasc-ik", ["pandaa", *XYZ], ["'pandaa'", "did you mean 'panda'?"]),
    ("itasc-ik", [str(REPO / "urdf" / "pnada.urdf"), *XYZ],
     ["pnada.urdf' does not exist", "panda.urdf'?", "'panda'"]),
    ("itasc-ik", ["panda", "--link", "panda_hnad", *XYZ],
     ["'panda_hnad'", "did you mean 'panda_hand'?", "'panda_link0'"]),
    ("itasc-ik", ["panda", "--frame", "panda_lnik3", *XYZ],
     ["'panda_lnik3'", "did you mean 'panda_link3'?"]),
    ("itasc-ik", ["panda", "--xyz", "0.4", "0"], ["--xyz", "expected 3 arguments"]),
    ("itasc-ik", ["panda", "--xyz", "0.4", "x", "0.5"], ["'x'", "finite number"]),
    ("itasc-ik", ["panda", "--xyz", "0.4", "nan", "0.5"], ["'nan'", "finite number"]),
    ("itasc-ik", ["panda", *XYZ, "--quat", "0", "0", "0", "0"],
     ["(0.0, 0.0, 0.0, 0.0)", "no rotation"]),
    ("itasc-ik", ["panda", *XYZ, "--seed", "0", "0"], ["7 values", "'panda_joint1'"]),
    ("itasc-ik", ["panda", *XYZ, "--timeout", "-1"], ["'-1'", "number > 0"]),
    ("itasc-ik", ["panda", *XYZ, "--prefer", "spede"], ["'spede'", "did you mean 'speed'?"]),
    ("itasc-ik", ["panda", *XYZ, "--lnik", "panda_hand"], ["--lnik", "did you mean '--link'?"]),
    # itasc-bench
    ("itasc-bench", ["tikc"], ["'tikc'", "did you mean 'tick'?"]),
    ("itasc-bench", ["ik", "--robots", "panda,xram7"], ["'xram7'", "did you mean 'xarm7'?"]),
    ("itasc-bench", ["loop", "--robot", "pandaa"], ["'pandaa'", "did you mean 'panda'?"]),
    ("itasc-bench", ["tick", "--number", "0"], ["'0'", "whole number > 0"]),
    ("itasc-bench", ["ik", "--samples", "many"], ["'many'", "whole number > 0"]),
    ("itasc-bench", ["loop", "--rate", "abc"], ["'abc'", "number > 0"]),
    ("itasc-bench", ["loop", "--rate", "5000"], ["'5000'", "[1, 2000]"]),
    ("itasc-bench", ["soak", "--duration", "-5"], ["'-5'", "number > 0"]),
    ("itasc-bench", ["loop", "--runs", "0"], ["'0'", "whole number > 0"]),
    ("itasc-bench", ["loop", "--trigger", "timr"], ["'timr'", "did you mean 'timer'?"]),
    ("itasc-bench", ["tick", "--json", "{tmp}/out.json"], ["out.json", "unrecognized"]),
    ("itasc-bench", ["tick", "--jsno"], ["--jsno", "did you mean '--json'?"]),
    # itasc_sim_robot
    ("itasc_sim_robot", ["--ros-args", "-p", "rate:=250.0"], ["urdf_file", "panda"]),
    ("itasc_sim_robot", ["--ros-args", "-p", "urdf_file:=nope.urdf"], ["'nope.urdf'", "'panda'"]),
    ("itasc_sim_robot", ["--ros-args", "-p", "urdf_file:=pandaa"],
     ["'pandaa'", "did you mean 'panda'?"]),
    ("itasc_sim_robot", ["--ros-args", "-p", "urdf_file:=panda", "-p", "rate:=-1"],
     ["'rate'", "got -1", "[1, 5000]"]),
    ("itasc_sim_robot", ["--ros-args", "-p", "urdf_file:=panda", "-p", "rate:=0"],
     ["'rate'", "got 0", "[1, 5000]"]),
    ("itasc_sim_robot", ["--ros-args", "-p", "urdf_file:=panda", "-p", "rate:=fast"],
     ["'rate'", "'fast'", "a number"]),
    ("itasc_sim_robot", ["--ros-args", "-p", f"urdf_file:={PANDA}", "-p",
                         "joints:=[panda_joint1,panda_jiont2]"],
     ["'panda_jiont2'", "did you mean 'panda_joint2'?"]),
    ("itasc_sim_robot", ["--ros-args", "-p", "urdf_file:=panda", "-p", "rtae:=250"],
     ["'rtae'", "did you mean 'rate'?"]),
    ("itasc_sim_robot", ["--ros-args", "-p", "urdf_file:=panda", "-p",
                         "command_type:=std_msgs/Float64"],
     ["'std_msgs/Float64'", "did you mean 'std_msgs/Float64MultiArray'?"]),
    ("itasc_sim_robot", ["--ros-args", "-p", "urdf_file:=panda", "-p", "thread_priority:=200"],
     ["'thread_priority'", "got 200", "[0, 99]"]),
    ("itasc_sim_robot", ["--ros-args", "-p", "urdf_file:=panda", "-p", "initial_positions:=[0]"],
     ["1 values", "'panda_joint1'"]),
    ("itasc_sim_robot", ["--ros-args", "-p", "urdf_file:=panda", "-p", "cpu_affinity:=[99]"],
     ["[99]", "CPUs 0-"]),
    ("itasc_sim_robot", ["--ros-args", "--log-levle", "info"],
     ["'--log-levle'", "did you mean '--log-level'?"]),
    ("itasc_sim_robot", ["urdf/panda.urdf"], ["'urdf/panda.urdf'", "-p urdf_file:="]),
]  # fmt: skip
IDS = [f"{script}:{' '.join(args)}" for script, args, _ in CASES]
#: Each script's first case, run from a fresh process of the installed script.
FIRSTS = {script: (args, expected) for script, args, expected in reversed(CASES)}


def _env(domain: int) -> dict[str, str]:
    """Shared-memory DDS and the private ``domain``, whatever the calling shell has."""
    return local_dds_env(domain)


def _args(args: list[str], tmp: Path) -> list[str]:
    (tmp / "a_file").write_text("not a directory\n")
    return [a.replace("{tmp}", str(tmp)) for a in args]


def _check_one_line(
    proc: subprocess.CompletedProcess[str] | ScriptRun, expected: list[str]
) -> str:
    everything = proc.stdout + proc.stderr
    assert "Traceback" not in everything, everything[-3000:]
    assert "rclpy.init called" not in proc.stderr
    assert proc.returncode == 2, everything[-3000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    for text in expected:
        assert text in lines[0], f"{text!r} not in {lines[0]!r}"
    return lines[0]


@pytest.mark.parametrize(("script", "args", "expected"), CASES, ids=IDS)
def test_mistake_is_one_line_and_status_2_before_rclpy_init(
    script: str,
    args: list[str],
    expected: list[str],
    tmp_path: Path,
    dds_domain: int,
    script_runner: ScriptRunner,
) -> None:
    run = script_runner.run(
        script, _args(args, tmp_path), _env(dds_domain), tmp_path, no_init=True, timeout=TIMEOUT
    )
    line = _check_one_line(run, expected)
    assert line.startswith(f"{script}: error: ")
    assert "np.float64" not in line
    assert not (tmp_path / "bag").exists()  # a refused recording leaves no empty bag


@pytest.mark.parametrize("script", sorted(FIRSTS))
def test_a_mistake_on_the_installed_script(script: str, tmp_path: Path, dds_domain: int) -> None:
    path = BIN / script
    if not path.exists():
        pytest.skip(f"{script} is not installed next to {sys.executable} (pip install -e .)")
    args, expected = FIRSTS[script]
    proc = subprocess.run(
        [str(path), *_args(args, tmp_path)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=_env(dds_domain),
        cwd=tmp_path,
    )
    assert _check_one_line(proc, expected).startswith(f"{script}: error: ")


def test_ik_prints_plain_numbers_and_a_json_line(
    dds_domain: int, script_runner: ScriptRunner
) -> None:
    proc = script_runner.run(
        "itasc-ik",
        # what it prints, not the default 5 ms budget (a loaded machine can spend that)
        ["panda", "--link", "panda_hand", *XYZ, *QUAT, "--json", "--timeout", "1"],
        _env(dds_domain),
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "np.float64" not in proc.stdout and "array(" not in proc.stdout
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    assert data["success"] is True and data["link"] == "panda_hand"
    numbers = [*data["q"], data["position_error_m"], data["rotation_error_rad"], data["time_ms"]]
    assert all(type(v) is float for v in numbers)
    assert data["position_error_m"] <= 1e-5
    assert "position error" in proc.stdout and "solved" in proc.stdout.splitlines()[0]


def test_ik_json_error_line_beside_the_one_line_on_stderr(
    dds_domain: int, script_runner: ScriptRunner
) -> None:
    proc = script_runner.run(
        "itasc-ik", ["panda", "--xyz", "5", "0", "0.5", "--json"], _env(dds_domain),
        timeout=TIMEOUT,
    )  # fmt: skip
    line = _check_one_line(proc, ["5.025 m", "reaches"])
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    assert data == {"success": False, "error": line.split("error: ", 1)[1]}


def test_ik_default_budget_is_5_ms_as_solve_ik_and_the_readme() -> None:
    args = ik_cli._parser().parse_args(["panda", *XYZ])
    assert args.timeout == 0.005
    assert inspect.signature(solve_ik).parameters["timeout"].default == args.timeout
    assert "Defaults: a 5 ms budget (`timeout`)" in (REPO / "doc" / "ik.md").read_text()


def _read_until(proc: subprocess.Popen[str], text: str) -> str:
    """The process's output up to the first line containing ``text`` (or its end)."""
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + TIMEOUT
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not sel.select(timeout=0.5):
                continue
            line = proc.stdout.readline()
            lines.append(line)
            if not line or text in line:
                break
    return "".join(lines)


def test_sim_robot_takes_an_integer_rate_and_a_robot_name(tmp_path: Path, dds_domain: int) -> None:
    """``rate:=250`` (an integer for a double) works; ``urdf_file:=panda`` is the bundled URDF."""
    proc = subprocess.Popen(
        [str(BIN / "itasc_sim_robot"), "--ros-args", "-p", "urdf_file:=panda",
         "-p", "rate:=250", "-p", "latency:=0", "-p", "initial_positions:=[0,0,0,-2,0,2,1]",
         "-r", "__ns:=/cli_errors"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=_env(dds_domain),
        cwd=tmp_path,
    )  # fmt: skip
    try:
        out = _read_until(proc, "simulating")
    finally:
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=TIMEOUT)
    out += rest
    assert "simulating panda (7 joints) at 250 Hz" in out, out
    assert "Traceback" not in out
    assert proc.returncode == 0, out
