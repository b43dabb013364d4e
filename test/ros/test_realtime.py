"""itasc_ros.ros.realtime: CPU affinity for every thread of a process, SCHED_FIFO for its own.

The calls that change scheduling run in a child process, so the test runner keeps its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from procs import fifo_permitted

from itasc_ros.ros.realtime import (
    apply_realtime,
    current_policy,
    demote_current_thread,
    set_thread_priority,
)


@pytest.mark.parametrize("priority", [-1, 100, 1000])
def test_priority_out_of_range_names_the_choices(priority: int) -> None:
    with pytest.raises(ValueError, match=r"is not 0 \(off\) or 1-99"):
        apply_realtime(priority, [])


def test_unknown_cpu_names_the_machine_s_cpus() -> None:
    n = os.cpu_count() or 1
    with pytest.raises(ValueError, match=rf"no CPU \[{n}\]; this machine has CPUs 0-{n - 1}"):
        apply_realtime(0, [0, n])


def test_nothing_asked_changes_nothing() -> None:
    before = current_policy()
    assert apply_realtime(0, []) == []
    assert current_policy() == before


CHILD = textwrap.dedent(
    """
    import json, os, threading
    from itasc_ros.ros.realtime import apply_realtime, demote_current_thread, set_thread_priority
    ready, done = threading.Event(), threading.Event()
    def idle():
        ready.set(); done.wait()
    early = threading.Thread(target=idle); early.start(); ready.wait()
    ready.clear()
    named = threading.Thread(target=idle); named.start(); ready.wait()
    problems = apply_realtime(5, [0], [named.native_id])
    out = {}
    def later():  # started by a real-time thread after the call: on the normal scheduler
        out["later"] = os.sched_getscheduler(0)
        out["later_cpus"] = sorted(os.sched_getaffinity(0))
        out["joined"] = set_thread_priority(5)
        out["ticking"] = os.sched_getscheduler(0)
        demote_current_thread()
        out["demoted"] = os.sched_getscheduler(0)
    t = threading.Thread(target=later); t.start(); t.join()
    out["early"] = os.sched_getscheduler(early.native_id)
    out["named"] = os.sched_getscheduler(named.native_id)
    out["main"] = os.sched_getscheduler(0)
    out["cpus"] = sorted(os.sched_getaffinity(early.native_id))
    done.set(); early.join(); named.join()
    print(json.dumps({"problems": problems, **out}))
    """
)


def test_the_calling_thread_gets_the_policy_every_thread_the_cpus() -> None:
    """SCHED_FIFO for the calling thread and the threads named, reset on fork: the other
    threads (DDS's) and those started later stay on the normal scheduler, on the CPUs; a
    thread that ticks joins with set_thread_priority."""
    res = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
    out = json.loads(res.stdout.strip().splitlines()[-1])
    if not fifo_permitted():
        assert out["problems"] and "needs CAP_SYS_NICE" in out["problems"][-1]
        return
    assert out["problems"] == [] and out["joined"] == []
    reset_on_fork = os.SCHED_FIFO | os.SCHED_RESET_ON_FORK
    assert out["main"] == out["named"] == out["ticking"] == reset_on_fork
    assert out["early"] == out["later"] == out["demoted"] == os.SCHED_OTHER
    assert out["cpus"] == out["later_cpus"] == [0]


def test_a_real_time_priority_out_of_range_for_a_thread_names_the_choices() -> None:
    with pytest.raises(ValueError, match=r"is not 0 \(off\) or 1-99"):
        set_thread_priority(100)
    assert set_thread_priority(0) == []  # nothing asked: nothing changed


def test_demote_is_harmless_on_a_normal_thread() -> None:
    demote_current_thread()
    assert current_policy()[0] == "SCHED_OTHER"


AFFINITY_REFUSED = textwrap.dedent(
    """
    import json, os, threading
    from itasc_ros.ros import realtime
    done = threading.Event()
    named = threading.Thread(target=done.wait); named.start()
    def refuse(tid, cpus):
        raise PermissionError(1, "Operation not permitted")
    os.sched_setaffinity = refuse
    problems = realtime.apply_realtime(5, [0], [named.native_id])
    out = {"problems": problems, "named": os.sched_getscheduler(named.native_id)}
    done.set(); named.join()
    print(json.dumps(out))
    """
)


def test_cpus_refused_still_give_the_threads_their_priority() -> None:
    """The CPUs refused are reported once; the calling thread and those named still get theirs."""
    res = subprocess.run(
        [sys.executable, "-c", AFFINITY_REFUSED], capture_output=True, text=True, check=True
    )
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["problems"][0].startswith("cpu_affinity [0]: ")
    if fifo_permitted():
        assert out["problems"] == out["problems"][:1]
        assert out["named"] == os.SCHED_FIFO | os.SCHED_RESET_ON_FORK
    else:
        assert len(out["problems"]) == 2 and "needs CAP_SYS_NICE" in out["problems"][1]
