"""``itasc_node``'s entry point: a stop asked while the node's modules load is kept.

The node is started as its own process (``python -m itasc_ros.ros.itasc_node``, what the
console script runs) on a private domain; SIGINT or SIGTERM is sent once the process has begun
to load numba's native library (llvmlite: its modules load for seconds after the handlers are
installed): the node ends with exit status 0, no traceback, no dropped ``KeyboardInterrupt``.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from procs import PANDA_URDF, read_log, start_ros, stop_process

pytestmark = pytest.mark.dds

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 120.0  # [s] a loaded machine's start-up


def _loading_llvmlite(pid: int) -> bool:
    """True once the process maps llvmlite's library (numba is being imported)."""
    try:
        return "llvmlite" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_while_the_node_loads_ends_it_cleanly(dds_domain: int, sig: int) -> None:
    node = start_ros(
        dds_domain, f"urdf_file:={PANDA_URDF}", params_files=[REPO / "config" / "panda.yaml"]
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while not _loading_llvmlite(node.pid):
            assert node.poll() is None, read_log(node)[-3000:]
            assert time.monotonic() < deadline, "the node never loaded numba"
            time.sleep(0.005)
        node.send_signal(sig)
        code = node.wait(TIMEOUT)
    finally:
        if node.poll() is None:
            stop_process(node)
    log = read_log(node)
    print(f"\n{signal.Signals(sig).name} while loading: exit {code}; log {log!r:.300}")
    assert code == 0, log[-3000:]
    for dropped in ("Traceback", "KeyboardInterrupt", "Exception ignored"):
        assert dropped not in log, log[-3000:]
