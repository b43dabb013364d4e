"""Real-time scheduling of a process: SCHED_FIFO priority and CPU affinity for all its threads.

A velocity loop at 1 kHz on a loaded machine misses ticks when the kernel runs something else
while its timer or its joint state is due. Real robot set-ups give the control process a
real-time priority and, often, cores of its own (``ros2_control_node`` does the same with its
``thread_priority`` and ``cpu_affinity`` parameters). On Linux both are per *thread*, so this
module applies them to every thread of the process that exists when it is called (the DDS
threads, the executor's thread); threads started later inherit them from their creator.
Threads that must not run at the real-time priority (the URDF parser) call
:func:`demote_current_thread`.

Needs ``CAP_SYS_NICE`` (root, or ``rtprio`` in ``/etc/security/limits.conf``, or a container
started with ``--cap-add=sys_nice``); without it the calls fail and the reasons are returned so
that the caller can warn and carry on at the normal priority.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

#: The SCHED_FIFO priorities Linux accepts.
PRIORITY_RANGE = (1, 99)


def _threads() -> list[int]:
    """Thread ids of this process (``/proc/self/task``)."""
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:  # not Linux: only the calling thread
        return [0]


def apply_realtime(priority: int, cpus: Sequence[int]) -> list[str]:
    """Put every thread of this process on SCHED_FIFO ``priority`` and on ``cpus``.

    Args:
        priority: SCHED_FIFO priority, 1-99; 0 leaves the scheduling policy alone.
        cpus: CPU indices the threads may run on; empty leaves the affinity alone.

    Returns:
        One line per failure (e.g. ``"SCHED_FIFO priority 80: [Errno 1] Operation not
        permitted (needs CAP_SYS_NICE ...)"``); empty when everything was applied.

    Raises:
        ValueError: ``priority`` outside 0-99 or a CPU index this machine does not have,
            with the valid choices.
    """
    lo, hi = PRIORITY_RANGE
    if priority != 0 and not lo <= priority <= hi:
        raise ValueError(f"thread_priority {priority} is not 0 (off) or {lo}-{hi}")
    count = os.cpu_count() or 1
    bad = [c for c in cpus if not 0 <= c < count]
    if bad:
        raise ValueError(
            f"cpu_affinity {list(cpus)}: no CPU {bad}; this machine has CPUs 0-{count - 1}"
        )
    problems: list[str] = []
    for tid in _threads():
        if cpus:
            try:
                os.sched_setaffinity(tid, set(cpus))
            except OSError as exc:
                problems.append(f"cpu_affinity {list(cpus)}: {exc}")
        if priority:
            try:
                os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(priority))
            except OSError as exc:
                problems.append(
                    f"SCHED_FIFO priority {priority}: {exc} (needs CAP_SYS_NICE: root, an "
                    "rtprio limit in /etc/security/limits.conf, or --cap-add=sys_nice)"
                )
        if problems:
            break  # the same reason for every thread: report it once
    return problems


def demote_current_thread() -> None:
    """Put the calling thread back on the normal scheduler (SCHED_OTHER); never raises."""
    try:
        if os.sched_getscheduler(0) != os.SCHED_OTHER:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except (OSError, AttributeError):
        pass


def current_policy() -> tuple[str, int, list[int]]:
    """This thread's scheduling policy name, priority and allowed CPUs (for diagnostics)."""
    names = {os.SCHED_OTHER: "SCHED_OTHER", os.SCHED_FIFO: "SCHED_FIFO", os.SCHED_RR: "SCHED_RR"}
    policy = os.sched_getscheduler(0)
    return (
        names.get(policy, str(policy)),
        os.sched_getparam(0).sched_priority,
        sorted(os.sched_getaffinity(0)),
    )
