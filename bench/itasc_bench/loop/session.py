"""This process's side of one loop run: the processes, the subscriptions, the target thread.

This process spins no executor: one thread (:class:`~itasc_bench.loop.reader.WaitSetReader`)
waits on an ``rcl`` wait set and takes the messages, another publishes the target
(:func:`~itasc_bench.loop.target.publish_targets`), so that the measuring process takes as
little CPU as it can from the processes it measures. :meth:`LoopSession.run` starts the node
and the sim robot, waits for the first command, warms up, measures the window and stops
everything, in that order.
"""

from __future__ import annotations

import math
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import rclpy
from geometry_msgs.msg import PoseStamped
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from itasc_ros.ros.realtime import apply_realtime, current_policy

from .errors import BenchError
from .flood import STARTED, flood_command
from .plan import LoopPlan
from .processes import check_alive, start_process, stop_all, tail
from .reader import WaitSetReader
from .recorder import Recorder
from .scheduling import BENCH_PRIORITY, restore_scheduling, start_burners, stop_burners
from .target import TARGET_TOPIC, publish_targets
from .window import Window, measure

#: The node's journal topic (node name itasc_node).
JOURNAL_TOPIC = "/itasc_node/journal"
#: Time allowed for the node's first command (start-up, URDF, first inputs) [s]. A first start
#: after a fresh install compiles the node's kernels into numba's cache: 60-70 s measured on a
#: slowed 2-core host (a run with a 60 s allowance gave up just as the node began to command).
START_TIMEOUT = 180.0


class LoopSession:
    """The run's processes and this process's node, reader and target thread.

    Attributes:
        plan: The run.
        rec: What this process records.
        procs: The node and the sim robot by name, once started.
        realtime_applied: ``realtime``: this process's policy and CPUs, or why not applied.
        t_path0: Wall-clock time of the target path's start [s].
        startup: Time from the processes' start to the first command [s].
        stop_s: Time the processes took to stop [s].
        codes: Their exit codes by name.
    """

    def __init__(
        self,
        plan: LoopPlan,
        rec: Recorder,
        journal: bool,
        flood: tuple[str, float] | None = None,
        burners: int = 0,
    ) -> None:
        """This process's node on the run's domain (call inside its local DDS environment).

        Args:
            plan: The run.
            rec: Gets the messages.
            journal: Subscribe to the node's ``~/journal`` too.
            flood: (kind, rate [Hz]) of a flooding process started after the first command
                (:mod:`~itasc_bench.loop.flood`); a target flood replaces this process's
                own target.
            burners: CPU-burning processes started with the flood (after the first command)
                and stopped at the window's end (:func:`.scheduling.start_burners`).
        """
        self.plan = plan
        self.rec = rec
        self._journal = journal
        self._flood = flood
        self.flood_sent = 0
        self._burner_count = burners
        self._burners: list[subprocess.Popen[bytes]] = []
        self._context = rclpy.Context()
        rclpy.init(
            context=self._context,
            domain_id=plan.domain,
            signal_handler_options=SignalHandlerOptions.NO,
        )
        self._node = rclpy.create_node("itasc_bench_loop", context=self._context)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._reader: WaitSetReader | None = None
        self._stop_target = threading.Event()
        self._target_thread: threading.Thread | None = None
        self.realtime_applied = ""
        self.t_path0 = math.nan
        self.startup = math.nan
        self.stop_s = math.nan
        self.codes: dict[str, int | None] = {}

    def run(self, warmup: float, duration: float, soak: bool, saved: Any) -> Window:
        """Start, wait for the first command, warm up, measure; always stop everything.

        Args:
            warmup: Time between the first command and the window [s].
            duration: The window's length [s].
            soak: Sample the node's memory every second.
            saved: This process's scheduling before the run (restored after a real-time run).

        Raises:
            BenchError: A process died or no command arrived.
        """
        try:
            t_start = time.monotonic()
            self._start()
            if self._flood is not None and self._flood[0] == "target":
                self._start_flood()  # it is the target: the first command waits for it
            self._wait_first_command()
            self.startup = time.monotonic() - t_start
            self._burners = start_burners(self._burner_count)
            if self._flood is not None and self._flood[0] != "target":
                self._start_flood()
            time.sleep(warmup)
            self._check_alive("during the warm-up")
            window = measure(self.procs, self.plan.logs, duration, soak)
            stop_burners(self._burners)
            return window
        finally:
            self._stop(saved)

    def start_moving(self, moving: float) -> None:
        """Start, wait for the first command, let the robot move ``moving`` seconds."""
        self._start()
        self._wait_first_command()
        time.sleep(moving)
        self._check_alive("while the robot moved")

    def set_enabled(self, enabled: bool, timeout: float = 5.0) -> None:
        """Call the node's ``~/enable`` (from a node of its own: the reader keeps its topics).

        Raises:
            BenchError: no answer within ``timeout`` [s].
        """
        from rclpy.executors import SingleThreadedExecutor
        from std_srvs.srv import SetBool

        caller = rclpy.create_node("itasc_bench_enable", context=self._context)
        executor = SingleThreadedExecutor(context=self._context)
        executor.add_node(caller)
        try:
            client: Any = caller.create_client(SetBool, "/itasc_node/enable")
            if not client.wait_for_service(timeout_sec=timeout):
                raise BenchError("the node's ~/enable service did not appear")
            future = client.call_async(SetBool.Request(data=enabled))
            executor.spin_until_future_complete(future, timeout_sec=timeout)
            if not future.done():
                raise BenchError(f"~/enable did not answer within {timeout:g} s")
        finally:
            executor.shutdown()
            caller.destroy_node()

    def wait_silence(self, quiet: float, timeout: float = 10.0) -> None:
        """Until no command has arrived for ``quiet`` seconds (at most ``timeout``)."""
        deadline = time.monotonic() + timeout
        count, since = len(self.rec.cmd_received), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.02)
            if len(self.rec.cmd_received) != count:
                count, since = len(self.rec.cmd_received), time.monotonic()
            elif time.monotonic() - since >= quiet:
                return

    def close(self, saved: Any) -> None:
        """Stop everything (see :meth:`run`)."""
        self._stop(saved)

    def _check_alive(self, stage: str) -> None:
        check_alive(self.procs, self.plan.logs, stage)

    def _start(self) -> None:
        """The sim robot and the node, this process's priority, subscriptions and threads."""
        plan = self.plan
        for name, cmd in (("sim_robot", plan.sim_cmd), ("node", plan.node_cmd)):
            start_process(self.procs, name, cmd, plan.env, plan.logs)
        if plan.realtime:  # this thread on SCHED_FIFO, this process's threads on its CPUs
            problems = apply_realtime(BENCH_PRIORITY, plan.other_cpus)
            self.realtime_applied = "; ".join(problems) or "{} {} on CPUs {}".format(
                *current_policy()
            )
        handlers, target_pub = self._subscribe()
        self._reader = WaitSetReader(self._context, handlers)
        self._reader.start()
        robot = plan.robot
        if self._flood is not None and self._flood[0] == "target":
            return  # the flood publishes the target
        self._target_thread = threading.Thread(
            target=publish_targets,
            args=(
                target_pub,
                robot.tree.root_link,
                robot.quat,
                robot.center,
                self.t_path0,
                self._stop_target,
            ),
            daemon=True,
        )
        self._target_thread.start()

    def _subscribe(self) -> tuple[list[tuple[Any, Any]], Any]:
        """The commands', joint states' (and journal's) subscriptions; the target publisher."""
        rec, node = self.rec, self._node
        reliable = QoSProfile(
            history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.RELIABLE
        )
        cmd_sub = node.create_subscription(
            Float64MultiArray, self.plan.robot.command_topic, rec.on_command_info, reliable
        )
        js_sub = node.create_subscription(
            JointState, "/joint_states", rec.on_joint_state_raw, reliable, raw=True
        )
        target_pub = node.create_publisher(PoseStamped, TARGET_TOPIC, 10)
        self.t_path0 = time.time()
        handlers: list[tuple[Any, Any]] = [
            (cmd_sub, rec.on_command_info),
            (js_sub, rec.on_joint_state_raw),
        ]
        if self._journal:
            journal_sub = node.create_subscription(
                Float64MultiArray, JOURNAL_TOPIC, rec.on_journal_raw, reliable, raw=True
            )
            handlers.append((journal_sub, rec.on_journal_raw))
        return handlers, target_pub

    def _start_flood(self) -> None:
        """The flooding process, if the run has one."""
        if self._flood is None:
            return
        kind, rate = self._flood
        r = self.plan.robot
        cmd = flood_command(kind, rate, r.tree.root_link, r.center, r.quat, self.t_path0)
        start_process(self.procs, "flood", cmd, self.plan.env, self.plan.logs)
        self._wait_flooding()

    def _wait_flooding(self) -> None:
        """Until the flooding process has published, at most :data:`START_TIMEOUT`.

        It prints :data:`STARTED` then: a run's window never starts before its flood does.

        Raises:
            BenchError: The flood died or did not start in time.
        """
        log = self.plan.logs / "flood.log"
        deadline = time.monotonic() + START_TIMEOUT
        while STARTED not in tail(log, 1000).splitlines():
            self._check_alive("before the flood started")
            if time.monotonic() > deadline:
                raise BenchError(
                    f"the flood did not start within {START_TIMEOUT:g} s; its log:\n" + tail(log)
                )
            time.sleep(0.02)

    def _wait_first_command(self) -> None:
        """Until both streams reach this process, at most :data:`START_TIMEOUT`."""
        rec = self.rec
        deadline = time.monotonic() + START_TIMEOUT
        while not rec.cmd_received or not rec.js_stamps:  # both streams reach us
            self._check_alive("before the first command")
            if time.monotonic() > deadline:
                thread = self._target_thread
                target = "none (flood)" if thread is None else f"alive: {thread.is_alive()}"
                raise BenchError(
                    f"no command on {self.plan.robot.command_topic} or no joint state within "
                    f"{START_TIMEOUT:g} s (commands {len(rec.cmd_received)}, joint states "
                    f"{len(rec.js_stamps)}, target thread {target}); node log:\n"
                    + tail(self.plan.logs / "node.log")
                )
            time.sleep(0.05)

    def _stop(self, saved: Any) -> None:
        """The processes (exit codes, time), the threads, this process's node and scheduling."""
        stop_burners(self._burners)
        t_stop = time.monotonic()
        self.codes = stop_all(self.procs)
        if "flood" in self.procs:
            self.flood_sent = _sent(self.plan.logs / "flood.log")
        self.stop_s = time.monotonic() - t_stop
        self._stop_target.set()
        if self._target_thread is not None:
            self._target_thread.join(timeout=2.0)
        if self._reader is not None:
            self._reader.stop()
        self._node.destroy_node()
        rclpy.try_shutdown(context=self._context)
        if self.plan.realtime:
            restore_scheduling(saved)


def _sent(log: Path) -> int:
    """The count a flooding process printed when it stopped (``sent <n>``; 0 if none)."""
    for line in reversed(tail(log, 5).splitlines()):
        if line.startswith("sent "):
            return int(line.split()[1])
    return 0


__all__ = ["JOURNAL_TOPIC", "START_TIMEOUT", "LoopSession"]
