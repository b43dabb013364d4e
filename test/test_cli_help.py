"""Every console script answers ``--help`` with its usage and exits 0 without touching DDS.

Each script runs as its own process, as a user runs it, with shared-memory DDS and a private
ROS_DOMAIN_ID set in that process's environment; a second run, in a process forked from one that
has imported the scripts (``scripts.ScriptRunner``), replaces ``rclpy.init`` by an exit with
status 3, so a script that starts ROS for ``--help`` fails here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from scripts import SCRIPTS, ScriptRunner

from itasc_ros.tools.dds_env import local_dds_env

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TIMEOUT = 60.0  # [s] generous for a loaded 2-core machine; a --help takes about 1 s


def _env(domain: int) -> dict[str, str]:
    """Shared-memory DDS and the private ``domain``, whatever the calling shell has."""
    env = local_dds_env(domain)
    env["FASTDDS_BUILTIN_TRANSPORTS"] = "SHM"
    return env


def test_every_console_script_is_checked() -> None:
    assert set(SCRIPTS) == {
        "itasc_node",
        "itasc_sim_robot",
        "itasc-demo",
        "itasc-record",
        "itasc-replay",
        "itasc-bench",
        "itasc-ik",
    }


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_help_prints_the_usage_and_exits_0(script: str, dds_domain: int) -> None:
    path = BIN / script
    if not path.exists():
        pytest.skip(f"{script} is not installed next to {sys.executable} (pip install -e .)")
    proc = subprocess.run(
        [str(path), "--help"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=_env(dds_domain),
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "usage" in proc.stdout.lower()
    assert script in proc.stdout


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_help_never_initialises_rclpy(
    script: str, dds_domain: int, script_runner: ScriptRunner
) -> None:
    run = script_runner.run(script, ["--help"], _env(dds_domain), no_init=True, timeout=TIMEOUT)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "rclpy.init called" not in run.stderr
    assert "usage" in run.stdout.lower()
