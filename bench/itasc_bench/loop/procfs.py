"""What ``/proc`` says of a process and of the machine: CPU time, waits, memory, steal."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import BenchError


def proc_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process [s], from ``/proc/<pid>/stat``."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()  # after "pid (comm) "; fields[0] = state
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return ticks / os.sysconf("SC_CLK_TCK")


def machine_steal_seconds() -> float:
    """CPU time the hypervisor gave to others while this (virtual) machine wanted it [s].

    The ``steal`` column of ``/proc/stat`` summed over the CPUs (0 on bare metal or where the
    kernel does not report it).
    """
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
    except OSError:
        return 0.0
    steal = int(fields[8]) if len(fields) > 8 else 0
    return steal / os.sysconf("SC_CLK_TCK")


def thread_run_delays(pid: int) -> dict[int, float]:
    """Per thread of a process, the time it has waited on a run queue for a CPU [s].

    The second field of ``/proc/<pid>/task/<tid>/schedstat`` (empty where the kernel does not
    keep scheduler statistics, or the process is gone).
    """
    out: dict[int, float] = {}
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            fields = (task / "schedstat").read_text().split()
        except OSError:
            continue  # the thread ended
        if len(fields) >= 2:
            out[int(task.name)] = int(fields[1]) * 1e-9
    return out


def longest_wait(before: dict[int, float], after: dict[int, float]) -> float:
    """The most any one thread waited for a CPU between two :func:`thread_run_delays` [s]."""
    return max((after[t] - before[t] for t in after.keys() & before.keys()), default=0.0)


def proc_rss_kb(pid: int) -> int:
    """Resident set size of a process [kB] (``VmRSS`` of ``/proc/<pid>/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise BenchError(f"no VmRSS in /proc/{pid}/status")


__all__ = [
    "longest_wait",
    "machine_steal_seconds",
    "proc_cpu_seconds",
    "proc_rss_kb",
    "thread_run_delays",
]
