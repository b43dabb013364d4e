"""itasc-demo on a circle the arm cannot follow: every tracking phase flagged, exit status 1.

The console script runs as a subprocess over shared-memory DDS in its own private domain. It
runs beside the other tests (not in the serial pass of ``test_demo.py``): a 2 m circle is out
of reach under any load, so the verdict does not depend on the machine's minute.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import itasc_ros
from itasc_ros.tools.dds_env import local_dds_env

pytestmark = [pytest.mark.dds, pytest.mark.slow]

ROOT = Path(itasc_ros.__file__).resolve().parents[1]


def _demo_command() -> list[str]:
    script = Path(sys.executable).parent / "itasc-demo"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "itasc_ros.tools.demo"]


def test_an_unreachable_circle_is_not_healthy(tmp_path: Path) -> None:
    """A 2 m circle (``--radius 2.0``) in the shortest run: flagged phases, exit status 1."""
    from itasc_ros.tools.demo import min_duration

    proc = subprocess.run(
        [
            *_demo_command(),
            *("--duration", f"{min_duration():g}", "--radius", "2.0"),
            *("--no-plots", "--json", "--out", str(tmp_path / "out")),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env=local_dds_env(),
        cwd=ROOT,
    )
    assert proc.returncode == 1, proc.stdout[-4000:] + proc.stderr[-4000:]
    lines = proc.stdout.strip().splitlines()
    verdict = lines[-2]
    assert verdict.startswith("itasc-demo: verdict: NOT healthy: "), lines[-8:]
    for phase in ("circle_ff", "circle_fb", "figure8_ff", "figure8_fb"):
        assert f"{phase} did not settle: steady-state RMS error" in verdict, verdict
        assert f"itasc-demo: FLAG: {phase} did not settle" in proc.stdout
    m = json.loads(lines[-1])
    assert not m["verdict"]["healthy"] and len(m["verdict"]["flags"]) >= 4
    assert m["tracking_error_feedforward_m"] > 0.5  # the arm cannot follow a 2 m circle
    assert not re.search(r"\bnan\b", proc.stdout, re.IGNORECASE)
