"""The node with the CPU time of each part of its tick counted: where a loop run's CPU goes.

``run_loop_bench(node_module="itasc_bench.loop.profiled_node")`` runs it in place of
``itasc_node``. Each part of :data:`PARTS` is wrapped to add the CPU time of the thread that
calls it (``time.thread_time_ns``: what the thread used, not what it waited for) and its
wall-clock time (``time.perf_counter_ns``: the difference is time off the CPU, waiting). Each
:class:`~itasc_ros.ros.polled_reader.PolledReader` take is counted per topic, apart for takes
that got a message and takes that found none, and each publish per topic. When the node exits,
one line per part goes to its stderr (the run's ``node.log``)::

    cpu step: <calls> calls, <us> us per call, <s> s; wall <us> us per call

The wrappers cost CPU of their own on every call: compare parts
with each other and with the same wrapper on another build, not with an unwrapped node.
"""

from __future__ import annotations

import atexit
import importlib
import sys
import time
from collections.abc import Callable
from typing import Any

#: (module, class, method, label) of each part counted.
PARTS: tuple[tuple[str, str, str, str], ...] = (
    ("itasc_ros.ros.control_loop", "ControlLoop", "_wait", "wait for a joint state"),
    ("itasc_ros.ros.node", "ItascNode", "_on_tick", "tick (all of it)"),
    ("itasc_ros.ros.node_inputs", "NodeInputs", "take_joint_state", "take the waking joint state"),
    ("itasc_ros.ros.node_inputs", "NodeInputs", "take", "take and apply the inputs"),
    ("itasc_ros.ros.node_inputs", "NodeInputs", "apply_joint_state", "apply the joint state"),
    ("itasc_ros.ros.wire", "JointStateWire", "read", "apply: read its bytes"),
    ("itasc_ros.core.control.controller", "Controller", "set_joint_state", "apply: controller"),
    ("itasc_ros.core.control.joint_input", "JointStateInput", "accept", "apply: check, keep"),
    ("itasc_ros.core.control.controller", "Controller", "step", "step"),
    ("itasc_ros.core.control.aim", "TargetAim", "update", "step: aim"),
    ("itasc_ros.core.control.controller", "Controller", "_command", "step: solve, command"),
    ("itasc_ros.ros.node_outputs", "NodeOutputs", "send", "send the command"),
    ("itasc_ros.ros.node", "ItascNode", "_housekeeping", "housekeeping"),
)

#: label -> [CPU ns, calls, wall-clock ns]
counts: dict[str, list[int]] = {}


def _add(label: str, ns: int, wall_ns: int) -> None:
    c = counts.setdefault(label, [0, 0, 0])
    c[0] += ns
    c[1] += 1
    c[2] += wall_ns


def _counted(f: Callable[..., Any], label: str) -> Callable[..., Any]:
    def counted(*args: Any, **kwargs: Any) -> Any:
        t, w = time.thread_time_ns(), time.perf_counter_ns()
        try:
            return f(*args, **kwargs)
        finally:
            _add(label, time.thread_time_ns() - t, time.perf_counter_ns() - w)

    return counted


def _counted_take(f: Callable[..., Any]) -> Callable[..., Any]:
    def take(reader: Any) -> Any:
        t, w = time.thread_time_ns(), time.perf_counter_ns()
        got = f(reader)
        what = "got" if got is not None else "none"
        wall = time.perf_counter_ns() - w
        _add(f"take {reader.topic} ({what})", time.thread_time_ns() - t, wall)
        return got

    return take


def _counted_publish(f: Callable[..., Any]) -> Callable[..., Any]:
    def publish(pub: Any, msg: Any) -> None:
        t, w = time.thread_time_ns(), time.perf_counter_ns()
        f(pub, msg)
        _add(f"publish {pub.topic_name}", time.thread_time_ns() - t, time.perf_counter_ns() - w)

    return publish


def install() -> None:
    """Wrap every part of :data:`PARTS` and the readers' takes (once per process)."""
    for module, cls_name, method, label in PARTS:
        cls = getattr(importlib.import_module(module), cls_name)
        setattr(cls, method, _counted(getattr(cls, method), label))
    reader = importlib.import_module("itasc_ros.ros.polled_reader").PolledReader
    reader.take = _counted_take(reader.take)
    publisher = importlib.import_module("rclpy.publisher").Publisher
    publisher.publish = _counted_publish(publisher.publish)


def report() -> list[str]:
    """One line per part: calls, CPU per call [us], CPU in all [s]; also printed to stderr."""
    lines = [
        f"cpu {label}: {n} calls, {ns / max(n, 1) / 1e3:.1f} us per call, {ns / 1e9:.2f} s; "
        f"wall {wall / max(n, 1) / 1e3:.1f} us per call"
        for label, (ns, n, wall) in counts.items()
    ]
    for line in lines:
        print(line, file=sys.stderr, flush=True)
    return lines


def main(args: list[str] | None = None) -> int:
    """Run the node with its parts counted; report them when it exits."""
    install()
    from itasc_ros.ros import node

    atexit.register(report)
    return node.main(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
