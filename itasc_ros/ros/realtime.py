"""Real-time scheduling of a process: CPU affinity for its threads, SCHED_FIFO for its own.

A velocity loop at 1 kHz on a loaded machine misses ticks when the kernel runs something else
while its timer or its joint state is due. Real robot set-ups give the control process a
real-time priority and, often, cores of its own (``ros2_control_node`` does the same with its
``thread_priority`` and ``cpu_affinity`` parameters). On Linux both are per *thread*.

:func:`apply_realtime` puts every thread of the process that exists when it is called on the
CPUs asked for, and the *calling* thread (the executor's) on SCHED_FIFO; the thread that ticks
joins it with :func:`set_thread_priority`. Every other thread stays on the normal scheduler:
the middleware's (DDS reception, events, asynchronous writers) and the workers'. A real-time
thread is set to reset on fork, so the threads it starts later begin on the normal scheduler
too (still on its CPUs). Threads of one SCHED_FIFO priority on one CPU never preempt each other:
a thread there that retries a lock in a loop (Fast DDS's asynchronous writer does, while a
sample is removed) never lets the lock's holder run again, and the process stalls for good. On
the normal scheduler every runnable thread gets its turn; the real-time threads still preempt
them all. Threads that must not run at the real-time priority (the URDF parser, IK requests)
call :func:`demote_current_thread`.

Needs ``CAP_SYS_NICE`` (root, or ``rtprio`` in ``/etc/security/limits.conf``, or a container
started with ``--cap-add=sys_nice``); without it the calls fail and the reasons are returned so
that the caller can warn and carry on at the normal priority.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

#: The SCHED_FIFO priorities Linux accepts.
PRIORITY_RANGE = (1, 99)
#: ``sched_setscheduler``'s flag: the threads a real-time thread starts begin on SCHED_OTHER.
_RESET_ON_FORK = getattr(os, "SCHED_RESET_ON_FORK", 0)


def _threads() -> list[int]:
    """Thread ids of this process (``/proc/self/task``)."""
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:  # not Linux: only the calling thread
        return [0]


def check_priority(priority: int) -> None:
    """Raise ValueError, naming the choices, unless ``priority`` is 0 (off) or 1-99."""
    lo, hi = PRIORITY_RANGE
    if priority != 0 and not lo <= priority <= hi:
        raise ValueError(f"thread_priority {priority} is not 0 (off) or {lo}-{hi}")


def apply_realtime(priority: int, cpus: Sequence[int], also: Sequence[int] = ()) -> list[str]:
    """Put every thread of this process on ``cpus``, the calling one on SCHED_FIFO ``priority``.

    The other threads stay on their scheduler (see the module); the threads the calling one
    starts later begin on the normal scheduler, on ``cpus``.

    Args:
        priority: SCHED_FIFO priority, 1-99; 0 leaves the scheduling policy alone.
        cpus: CPU indices the threads may run on; empty leaves the affinity alone.
        also: native ids of other threads of this process to put on SCHED_FIFO ``priority``
            (a thread that ticks, started before this call).

    Returns:
        One line per failure (e.g. ``"SCHED_FIFO priority 80: [Errno 1] Operation not
        permitted (needs CAP_SYS_NICE ...)"``); empty when everything was applied.

    Raises:
        ValueError: ``priority`` outside 0-99 or a CPU index this machine does not have,
            with the valid choices.
    """
    check_priority(priority)
    count = os.cpu_count() or 1
    bad = [c for c in cpus if not 0 <= c < count]
    if bad:
        raise ValueError(
            f"cpu_affinity {list(cpus)}: no CPU {bad}; this machine has CPUs 0-{count - 1}"
        )
    problems: list[str] = []
    for tid in _threads() if cpus else []:
        try:
            os.sched_setaffinity(tid, set(cpus))
        except OSError as exc:
            if tid == 0 or os.path.exists(f"/proc/self/task/{tid}"):  # not a thread that ended
                problems.append(f"cpu_affinity {list(cpus)}: {exc}")
                break  # the same reason for every thread: report it once
    for tid in (0, *also):  # the priority whether or not the CPUs could be set
        refused = set_thread_priority(priority, tid)
        if refused:
            problems += refused
            break  # the same reason for every thread: report it once
    return problems


def set_thread_priority(priority: int, tid: int = 0) -> list[str]:
    """Put a thread on SCHED_FIFO ``priority`` (0: leave it alone).

    The threads it starts later begin on the normal scheduler.

    Args:
        priority: SCHED_FIFO priority, 1-99.
        tid: the thread's native id; 0: the calling thread.

    Returns:
        One line per failure (see :func:`apply_realtime`); empty when applied.

    Raises:
        ValueError: ``priority`` outside 0-99.
    """
    check_priority(priority)
    if not priority:
        return []
    try:
        os.sched_setscheduler(tid, os.SCHED_FIFO | _RESET_ON_FORK, os.sched_param(priority))
    except OSError as exc:
        return [
            f"SCHED_FIFO priority {priority}: {exc} (needs CAP_SYS_NICE: root, an "
            "rtprio limit in /etc/security/limits.conf, or --cap-add=sys_nice)"
        ]
    return []


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
    policy = os.sched_getscheduler(0) & ~_RESET_ON_FORK
    return (
        names.get(policy, str(policy)),
        os.sched_getparam(0).sched_priority,
        sorted(os.sched_getaffinity(0)),
    )
