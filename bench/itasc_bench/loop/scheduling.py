"""The CPUs and scheduling of a loop run: real-time priorities, the node's CPU, warm CPUs.

``realtime``: the node, the sim robot and this process on SCHED_FIFO priorities, the node on a
CPU of its own; this process's own scheduling is saved before and restored after the run.
``keep_warm``: one SCHED_IDLE busy loop per CPU for the run (:func:`keep_cpus_warm`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: ``realtime``: SCHED_FIFO priorities of the node, the sim robot and this process.
NODE_PRIORITY, SIM_PRIORITY, BENCH_PRIORITY = 80, 70, 75


def split_cpus() -> tuple[list[int], list[int]]:
    """``realtime``: ([the node's CPU], [the others]); ([], []) on a single-CPU machine."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return [], []
    return cpus[-1:], cpus[:-1]


#: ``keep_warm``: the spinner run on each CPU, on SCHED_IDLE (it only gets a CPU nothing else
#: wants, and gives it up at once).
_SPINNER = (
    "import os, sys\n"
    "os.sched_setaffinity(0, {int(sys.argv[1])})\n"
    "os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
    "while True:\n"
    "    pass\n"
)


@contextmanager
def keep_cpus_warm(enabled: bool) -> Iterator[int]:
    """``keep_warm``: one SCHED_IDLE busy loop per CPU for the duration; yields their count.

    The process-level stand-in for a real-time host's ``idle=poll``: an idle virtual CPU halts
    and the hypervisor runs something else on it, so the next wake-up finds cold caches (a tick
    after an idle millisecond takes longer than back to back). A spinner on
    SCHED_IDLE never halts the CPU and never competes: any other thread preempts it.
    """
    spinners: list[subprocess.Popen[bytes]] = []
    try:
        if enabled:
            for cpu in sorted(os.sched_getaffinity(0)):
                spinners.append(
                    subprocess.Popen(
                        [sys.executable, "-c", _SPINNER, str(cpu)],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                )
        yield len(spinners)
    finally:
        for proc in spinners:
            proc.kill()
            proc.wait()


def start_burners(count: int) -> list[subprocess.Popen[bytes]]:
    """``count`` processes spinning at the normal priority (a busy machine).

    Stop them with :func:`stop_burners`. Unlike :func:`keep_cpus_warm`'s, they compete for the
    CPUs with everything else, as the other programs of a robot's computer do.
    """
    return [
        subprocess.Popen(
            [sys.executable, "-c", "while True:\n    pass\n"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(count)
    ]


def stop_burners(burners: list[subprocess.Popen[bytes]]) -> None:
    """Kill the processes of :func:`start_burners` and wait for them; empties ``burners``."""
    for proc in burners:
        proc.kill()
        proc.wait()
    burners.clear()


def saved_scheduling() -> tuple[int, Any, set[int]]:
    """This thread's policy, its parameters and its CPUs, for :func:`restore_scheduling`."""
    return os.sched_getscheduler(0), os.sched_getparam(0), os.sched_getaffinity(0)


def restore_scheduling(saved: tuple[int, Any, set[int]]) -> None:
    """Every thread of this process back on the policy and CPUs of :func:`saved_scheduling`."""
    for tid in map(int, os.listdir("/proc/self/task")):
        try:
            os.sched_setscheduler(tid, saved[0], saved[1])
            os.sched_setaffinity(tid, saved[2])
        except OSError:  # a thread that ended meanwhile
            pass


__all__ = [
    "BENCH_PRIORITY",
    "NODE_PRIORITY",
    "SIM_PRIORITY",
    "keep_cpus_warm",
    "restore_scheduling",
    "saved_scheduling",
    "split_cpus",
    "start_burners",
    "stop_burners",
]
