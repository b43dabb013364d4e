"""The measured window of a loop run: the processes' counters at its start and at its end.

CPU time of the node, of the sim robot and of this process, the machine's steal time, the node's
resident memory (sampled every second for a soak), and the window's bounds on the wall clock;
the processes are checked to be alive every second.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .processes import check_alive
from .procfs import (
    longest_wait,
    machine_steal_seconds,
    proc_cpu_seconds,
    proc_rss_kb,
    thread_run_delays,
)


@dataclass(frozen=True)
class Window:
    """The counters of a measured window.

    Attributes:
        wall: Its length [s] (monotonic clock).
        w0: Its start, wall clock [s].
        w1: Its end, wall clock [s].
        cpu0: CPU time [s] of the node, the sim robot and this process at the start.
        cpu1: The same at the end.
        steal0: The machine's steal time [s] at the start.
        steal1: The same at the end.
        rss_start: The node's resident memory [kB] at the start.
        rss_end: The same at the end.
        rss_samples: (time into the window [s], the node's resident memory [kB]), every
            second of a soak; empty otherwise.
        node_wait: The most any one of the node's threads waited on a run queue for a CPU
            during the window [s] (0 where the kernel keeps no scheduler statistics).
    """

    wall: float
    w0: float
    w1: float
    cpu0: tuple[float, float, float]
    cpu1: tuple[float, float, float]
    steal0: float
    steal1: float
    rss_start: int
    rss_end: int
    rss_samples: list[tuple[float, int]]
    node_wait: float = 0.0


def _cpu(node_pid: int, sim_pid: int) -> tuple[float, float, float]:
    """CPU time [s] of the node, the sim robot and this process."""
    return proc_cpu_seconds(node_pid), proc_cpu_seconds(sim_pid), time.process_time()


def measure(
    procs: dict[str, subprocess.Popen[bytes]], logs: Path, duration: float, soak: bool
) -> Window:
    """Wait ``duration`` seconds, the processes' counters read at both ends.

    Args:
        procs: The run's processes ('node' and 'sim_robot').
        logs: The run's log directory (for the message of a process that died).
        duration: The window's length [s].
        soak: Sample the node's memory every second.

    Raises:
        BenchError: A process exited during the window.
    """
    node_pid, sim_pid = procs["node"].pid, procs["sim_robot"].pid
    rss_samples: list[tuple[float, int]] = []
    cpu0 = _cpu(node_pid, sim_pid)
    steal0 = machine_steal_seconds()
    waits0 = thread_run_delays(node_pid)
    rss_start = proc_rss_kb(node_pid)
    t0 = time.monotonic()
    w0 = time.time()  # the measured window, wall clock [s]
    end = t0 + duration
    next_sample = t0
    while (now := time.monotonic()) < end:
        if now >= next_sample:
            check_alive(procs, logs, "during the run")
            if soak:
                rss_samples.append((now - t0, proc_rss_kb(node_pid)))
            next_sample += 1.0
        time.sleep(min(0.1, max(0.0, end - now)))
    wall = time.monotonic() - t0
    w1 = time.time()
    cpu1 = _cpu(node_pid, sim_pid)
    steal1 = machine_steal_seconds()
    node_wait = longest_wait(waits0, thread_run_delays(node_pid))
    rss_end = proc_rss_kb(node_pid)
    check_alive(procs, logs, "at the end of the run")
    return Window(
        wall, w0, w1, cpu0, cpu1, steal0, steal1, rss_start, rss_end, rss_samples, node_wait
    )


__all__ = ["Window", "measure"]
