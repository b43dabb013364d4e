"""The processes of a loop run: started with their logs, watched, stopped; DDS kept local.

The node and the simulated robot run as child processes, each writing to ``<log_dir>/<name>.log``;
this process joins them on the same shared-memory DDS domain for the run (:func:`local_dds`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from itasc_ros.tools.dds_env import LOCAL_DDS_KEYS, apply_local_dds_env

from .errors import BenchError


def start_process(
    procs: dict[str, subprocess.Popen[bytes]],
    name: str,
    cmd: list[str],
    env: dict[str, str],
    logs: Path,
) -> None:
    """Start ``cmd`` as ``procs[name]``, its output into ``logs/<name>.log``.

    Args:
        procs: The run's processes by name; the new one is added.
        name: The process's name (and its log's).
        cmd: Its command line.
        env: Its environment.
        logs: The run's log directory.
    """
    with open(logs / f"{name}.log", "wb") as fh:
        procs[name] = subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT)


def check_alive(procs: dict[str, subprocess.Popen[bytes]], logs: Path, stage: str) -> None:
    """Raise :class:`BenchError` with the end of its log if one of ``procs`` has exited.

    Args:
        procs: The run's processes by name.
        logs: The run's log directory.
        stage: When, for the message (e.g. 'during the run').
    """
    for name, proc in procs.items():
        if proc.poll() is not None:
            raise BenchError(
                f"{name} exited with {proc.returncode} {stage}; its log "
                f"({logs / (name + '.log')}):\n{tail(logs / (name + '.log'))}"
            )


def stop_all(procs: dict[str, subprocess.Popen[bytes]]) -> dict[str, int | None]:
    """SIGINT to every process, then SIGKILL to those still running after 25 s; exit codes.

    25 s is beyond the node's own bounds (its zero command within ~3 s, its DDS teardown cut
    5 s later, its exit watchdog at 20 s): a slow exit on a loaded machine ends by itself.
    """
    for proc in procs.values():
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + 25.0
    for proc in procs.values():
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return {name: proc.returncode for name, proc in procs.items()}


def tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of a log, or '(no log)'."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextmanager
def local_dds(domain: int) -> Iterator[None]:
    """This process on the local DDS environment of ``domain``; restores the old values."""
    saved = {k: os.environ.get(k) for k in LOCAL_DDS_KEYS}
    apply_local_dds_env(domain)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


__all__ = ["check_alive", "local_dds", "start_process", "stop_all", "tail"]
