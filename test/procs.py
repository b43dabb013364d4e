"""Test helpers: start ROS processes with captured logs, and a threaded rclpy test client.

Tests import this module as ``from procs import ...`` (the test directory is on ``sys.path``).
The child processes get ``itasc_ros.tools.dds_env.local_dds_env(domain)`` (shared-memory DDS,
private domain); the test process enters :func:`dds_env` (``apply_local_dds_env(domain)``, undone
at the end) before ``rclpy.init``.

A test module's domain is the ``dds_domain`` fixture (conftest.py), or, where the module needs it
at import time, ``DOMAIN = allocate_domain()`` (:mod:`domains`): ids that no other module or
pytest session of this machine holds meanwhile.

A DDS test module starts its processes with :func:`start_ros` (``itasc_node`` or the simulated
robot, its namespace, remappings, params files and ``-p`` parameters) and stops them with
:func:`running` (or :func:`stop_process`); its ``client`` fixture is :func:`client_fixture`, or
:func:`ros_context` gives it an rclpy context spun in a thread.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import rclpy
from domains import allocate_domain
from rclpy.context import Context
from rclpy.exceptions import InvalidHandle
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from scripts import runner
from sensor_msgs.msg import JointState

from itasc_ros.tools.dds_env import LOCAL_DDS_KEYS, apply_local_dds_env, local_dds_env

LOG_DIR = Path(tempfile.gettempdir()) / "itasc_test_logs"
REPO = Path(__file__).resolve().parents[1]
PANDA_URDF = REPO / "urdf" / "panda.urdf"
NODE_MODULE = "itasc_ros.ros.itasc_node"
SIM_ROBOT_MODULE = "itasc_ros.tools.sim_robot"
#: Console script module -> the program's name (the stem of its log files).
HANG = 60.0
"""[s] the default bound of a wait for a service's answer or a match: a hang's bound, not a
budget: a passing test waits no longer, and a starved machine takes seconds more."""

STOP_TIMEOUT = 25.0
"""[s] a stopped process's exit, then SIGKILL: beyond the node's own bounds (its zero command
within ~3 s, its DDS teardown cut 5 s later, its exit watchdog at 20 s), so a slow exit on a
loaded machine ends by itself with its status; a hang's bound, not a budget."""

PROGRAMS = {NODE_MODULE: "itasc_node", SIM_ROBOT_MODULE: "itasc_sim_robot"}
#: itasc_node's parameters in the tests' Panda nodes: commands on <ns>/commands, ee at the hand.
PANDA_NODE_PARAMS = ("command_out_topic:=commands", "constraints.ee.link:=panda_hand")


def start_process(
    args: list[str], env: dict[str, str], name: str | None = None
) -> subprocess.Popen:
    """Start a process with stdout+stderr captured to a log file (``p.log_path``).

    Args:
        args: the command line (e.g. ``[sys.executable, '-m', 'itasc_ros.ros.itasc_node', ...]``).
        env: its environment (from ``local_dds_env``).
        name: log file stem (default: the module or program name).
    """
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    stem = name or (args[2] if len(args) > 2 and args[1] == "-m" else Path(args[0]).name)
    log_path = LOG_DIR / f"{stem}-{os.getpid()}-{time.monotonic_ns()}.log"
    env = dict(env)
    env.setdefault("PYTHONUNBUFFERED", "1")  # log lines reach the file as they happen
    env.setdefault("RCUTILS_LOGGING_BUFFERED_STREAM", "0")
    log = log_path.open("wb")
    p = subprocess.Popen(
        args, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
    )
    log.close()
    p.log_path = log_path  # type: ignore[attr-defined]
    return p


def read_log(p: subprocess.Popen) -> str:
    """The captured output of a process started with :func:`start_process`."""
    return Path(p.log_path).read_text(errors="replace")  # type: ignore[attr-defined]


def thread_policies(pid: int) -> dict[int, tuple[int, set[int], str]]:
    """Scheduling policy (without SCHED_RESET_ON_FORK), CPUs and name of a process's threads."""
    out = {}
    for tid in map(int, os.listdir(f"/proc/{pid}/task")):
        try:
            policy = os.sched_getscheduler(tid) & ~os.SCHED_RESET_ON_FORK
            name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            out[tid] = (policy, os.sched_getaffinity(tid), name)
        except OSError:  # the thread ended meanwhile
            pass
    return out


def fifo_permitted() -> bool:
    """Whether this machine lets a process of this user run SCHED_FIFO (CAP_SYS_NICE)."""
    probe = "import os; os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0


def stop_process(
    p: subprocess.Popen, sig: int = signal.SIGINT, timeout: float = STOP_TIMEOUT
) -> int:
    """Send ``sig`` and wait; escalate to SIGKILL after ``timeout`` [s]. Returns the exit code."""
    if p.poll() is None:
        p.send_signal(sig)
        _wait_or_kill(p, timeout)
    return int(p.returncode)


def _wait_or_kill(p: subprocess.Popen, timeout: float) -> None:
    """Wait ``timeout`` [s] for ``p``; then SIGKILL it, its threads' stacks in its log first.

    A node dumps every thread's stack on SIGUSR1 (``faulthandler``): the log of a process that
    hung on its way out says where.
    """
    try:
        p.wait(timeout)
    except subprocess.TimeoutExpired:
        if p.args[:3] == [sys.executable, "-m", NODE_MODULE]:
            p.send_signal(signal.SIGUSR1)
            time.sleep(1.0)
        p.kill()
        p.wait(5.0)


def exit_report(procs: dict[str, subprocess.Popen], codes: list[int], tail: int = 3000) -> str:
    """The processes that did not exit with 0: each one's exit code and the end of its log.

    Use as an assertion's message: a node killed after its stop timeout has its threads' stacks
    at the end of its log (:func:`stop_process` has it dump them first), so the failure itself
    says where the node hung.

    Args:
        procs: the processes by name.
        codes: their exit codes, in the same order.
        tail: characters of each log.
    """
    return "\n".join(
        f"{name} exited with {code}; the end of its log:\n{read_log(p)[-tail:]}"
        for (name, p), code in zip(procs.items(), codes, strict=True)
        if code != 0
    )


def stop_processes(
    procs: list[subprocess.Popen], sig: int = signal.SIGINT, timeout: float = STOP_TIMEOUT
) -> list[int]:
    """:func:`stop_process` for several processes at once: signal them all, then wait."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(sig)
    codes = []
    for p in procs:  # one signal each: a second SIGINT during Python's exit gives -2
        _wait_or_kill(p, timeout)
        codes.append(int(p.returncode))
    return codes


def node_command(*ros_args: str, module: str = NODE_MODULE) -> list[str]:
    """``[python, -m, module, --ros-args, *ros_args]``: the console script's entry point."""
    return [sys.executable, "-m", module, "--ros-args", *ros_args]


def ros_arguments(
    *params: str,
    ns: str = "",
    remaps: Sequence[str] = (),
    params_files: Sequence[str | Path] = (),
) -> list[str]:
    """ROS arguments: ``-r __ns:=<ns>``, ``-r <remap>``, ``--params-file <f>``, ``-p <param>``.

    Args:
        params: ``name:=value`` assignments, after the params files (so they win).
        ns: the node's namespace ('' = none).
        remaps: ``from:=to`` remappings.
        params_files: ROS 2 params files, in order.
    """
    args = ["-r", f"__ns:={ns}"] if ns else []
    for remap in remaps:
        args += ["-r", remap]
    for path in params_files:
        args += ["--params-file", str(path)]
    for param in params:
        args += ["-p", param]
    return args


def start_ros(
    domain: int,
    *params: str,
    ns: str = "",
    remaps: Sequence[str] = (),
    params_files: Sequence[str | Path] = (),
    module: str = NODE_MODULE,
    name: str | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.Popen:
    """Start a console script (``itasc_node`` by default) on the local DDS of ``domain``.

    Args:
        domain: the private ROS domain.
        params: ``-p`` assignments (see :func:`ros_arguments`, as are ``ns``, ``remaps`` and
            ``params_files``).
        module: the console script's module (:data:`NODE_MODULE`, :data:`SIM_ROBOT_MODULE`).
        name: log file stem; default the program's name and the namespace.
        env: the environment; default ``local_dds_env(domain)``.
    """
    args = ros_arguments(*params, ns=ns, remaps=remaps, params_files=params_files)
    stem = name or PROGRAMS.get(module, module) + ns.replace("/", "_")
    return start_process(
        node_command(*args, module=module), local_dds_env(domain) if env is None else env, stem
    )


def start_recorder(domain: int, bag: Path, topics: Sequence[str]) -> subprocess.Popen:
    """``itasc-record`` of ``topics`` into ``bag`` as its own process (local DDS of ``domain``)."""
    args = [sys.executable, "-m", "itasc_ros.tools.record", "--out", str(bag), "--topics"]
    return start_process([*args, *topics], local_dds_env(domain), f"itasc_record_{bag.name}")


def stop_recorded(processes: list[subprocess.Popen], recorder: subprocess.Popen) -> None:
    """Stop ``processes`` (SIGINT), give the recorder their last messages, then stop it."""
    stop_processes(processes)
    time.sleep(0.3)
    stop_processes([recorder])


def run_replay(
    *args: str, timeout: float = 120.0, env: dict[str, str] | None = None
) -> tuple[int, str, dict[str, Any]]:
    """``itasc-replay ARGS --json`` as a process: (exit code, output, last-line JSON).

    The process is forked from one that has imported the script (``scripts.runner``).
    """
    run = runner().run(
        "itasc-replay", [*args, "--json"], dict(os.environ) if env is None else env, REPO,
        timeout=timeout,
    )  # fmt: skip
    out = run.stdout + run.stderr
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith("{")]
    assert run.returncode is not None, f"itasc-replay ran out of {timeout} s: {out[-3000:]}"
    return run.returncode, out, (json.loads(lines[-1]) if lines else {})


def replay_compare(bag: Path) -> tuple[dict[str, Any], str]:
    """``itasc-replay BAG --compare --no-plots --json`` (must exit 0): its JSON and output."""
    code, out, res = run_replay(str(bag), "--compare", "--no-plots", timeout=180)
    assert code == 0, out
    return res, out


def replay_online(
    bag: Path, out_bag: Path, domain: int, *extra: str
) -> tuple[int, dict[str, Any], str]:
    """``itasc-replay BAG --online --online-out OUT --compare``: the bag's inputs republished
    into a running node of ``domain``, its commands recorded into ``OUT`` and compared.

    Args:
        extra: more arguments of itasc-replay (``--tracking-tolerance 15``).

    Returns:
        (exit code, the last JSON line or {}, the output).
    """
    args = [str(bag), "--online", "--online-out", str(out_bag), "--compare", "--no-plots", *extra]
    code, out, res = run_replay(*args, "--wait", "60", timeout=180, env=local_dds_env(domain))
    return code, res, out


def start_panda_node(domain: int, ns: str, *params: str, urdf: bool = True) -> subprocess.Popen:
    """itasc_node in ``ns`` with :data:`PANDA_NODE_PARAMS` and ``params`` (see :func:`start_ros`).

    Args:
        urdf: give it urdf/panda.urdf (``urdf_file``); False: it waits for robot_description.
    """
    urdf_file = (f"urdf_file:={PANDA_URDF}",) if urdf else ()
    return start_ros(domain, *PANDA_NODE_PARAMS, *urdf_file, *params, ns=ns)


@contextmanager
def running(
    p: subprocess.Popen, sig: int = signal.SIGINT, log_tail: int = 4000
) -> Iterator[subprocess.Popen]:
    """``p`` until the block ends; then :func:`stop_process` with ``sig`` and print its log's tail.

    Args:
        p: a process of :func:`start_process` or :func:`start_ros`.
        sig: the signal that stops it if it still runs (SIGKILL: a test stopped it already).
        log_tail: characters of the log printed (pytest shows them for a failed test).
    """
    try:
        yield p
    finally:
        stop_process(p, sig)
        print(read_log(p)[-log_tail:])


class RosTestClient:
    """An rclpy node spun by an executor in a background thread, with message collectors.

    Use as a context manager after ``rclpy.init()``. Collected messages are ``(t_receive,
    msg)`` pairs per topic, ``t_receive`` from ``time.monotonic()``.
    """

    def __init__(self, name: str = "itasc_test_client") -> None:
        self.node: Node = rclpy.create_node(name)
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self.lock = threading.Lock()
        self.messages: dict[str, list[tuple[float, Any]]] = defaultdict(list)
        self._fed: set[str] = set()  # the topics whose messages go to self.messages already
        self._stores: dict[str, list[list[tuple[float, Any]]]] = defaultdict(list)  # collect's
        self._subs: dict[str, list[Any]] = defaultdict(list)  # collect's subscriptions
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._stop = threading.Event()
        self._thread.start()

    def _spin(self) -> None:
        spin_through_destruction(self.executor, rclpy.get_default_context(), self._stop)

    def __enter__(self) -> RosTestClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the spin thread and destroy the node."""
        self._stop.set()
        self._thread.join(5.0)
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()

    # ------------------------------------------------------------------ topics
    def collect(
        self,
        msg_type: Any,
        topic: str,
        qos: QoSProfile | int = 10,
        callback: Callable[[Any], None] | None = None,
    ) -> list[tuple[float, Any]]:
        """Subscribe and store every message of ``topic``; returns the (live) list.

        Each call has a subscription and a list of its own, which starts empty: a test of a
        module's client that collects a topic an earlier test collected gets its own messages,
        each once (:meth:`received` has every message since the topic was first collected,
        each once; :meth:`clear` empties them all).
        """
        store: list[tuple[float, Any]] = []
        with self.lock:
            shared = None if topic in self._fed else self.messages[topic]
            self._fed.add(topic)
            self._stores[topic].append(store)

        def cb(msg: Any) -> None:
            t = time.monotonic()
            with self.lock:
                store.append((t, msg))
                if shared is not None:
                    shared.append((t, msg))
            if callback is not None:
                callback(msg)

        self._subs[topic].append(self.node.create_subscription(msg_type, topic, cb, qos))
        return store

    def wait_until_heard(
        self,
        stores: Sequence[list[tuple[float, Any]]],
        until: float,
        timeout: float = HANG,
        stamp: Callable[[Any], float] | None = None,
    ) -> None:
        """Wait until each of ``stores`` (lists :meth:`collect` returned) holds a message from
        ``until`` [s, ROS time] on: what was published before then has been taken.

        This client takes its messages in a thread of its own: starved beside other tests, it
        takes them late (1.5 s behind two robots' joint states at 250 Hz, measured), and a test
        that reads its lists as soon as the motion ends reads a part of the motion.

        Args:
            stores: the lists of collected messages.
            until: the instant [s, ROS time] the last message of each must be at or after.
            timeout: [s] of waiting.
            stamp: a message's instant [s, ROS time]; the header's stamp if None.
        """
        when = stamp or (lambda m: m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec)

        def heard() -> bool:
            with self.lock:
                return all(s and when(s[-1][1]) >= until for s in stores)

        self.wait_for(heard, timeout, f"the messages collected up to {until:.3f} s")

    def received(self, topic: str) -> list[Any]:
        """A snapshot of the messages received on ``topic``."""
        with self.lock:
            return [m for _, m in self.messages[topic]]

    def clear(self, topic: str) -> None:
        """Forget the messages received so far on ``topic`` (in every list of it)."""
        with self.lock:
            self.messages[topic].clear()
            for store in self._stores[topic]:
                store.clear()

    def publisher(self, msg_type: Any, topic: str, qos: QoSProfile | int = 10) -> Any:
        """A publisher of the client node."""
        return self.node.create_publisher(msg_type, topic, qos)

    def wait_for_subscribers(self, pub: Any, count: int = 1, timeout: float = HANG) -> None:
        """Wait until ``pub`` is matched by ``count`` subscriptions (discovery done)."""
        try:
            self.wait_for(
                lambda: pub.get_subscription_count() >= count,
                timeout,
                f"subscribers of {pub.topic_name}",
            )
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; {self.graph()}") from None

    def graph(self) -> str:
        """What this client sees of the DDS graph, and its domain (a failed match's context)."""
        nodes = self.node.get_node_names_and_namespaces()
        domain = self.node.context.get_domain_id()
        env = os.environ.get("ROS_DOMAIN_ID")
        return f"this client's domain {domain} (ROS_DOMAIN_ID {env}) sees the nodes {nodes}"

    def wait_for_publishers(self, topic: str, count: int = 1, timeout: float = HANG) -> None:
        """Wait until every subscription :meth:`collect` made on ``topic`` is matched by
        ``count`` publishers: from then on, what they publish is heard (the graph seeing a
        publisher, ``count_publishers``, can come seconds before the match under load)."""
        subs = self._subs[topic]
        assert subs, f"nothing collects {topic}"
        try:
            self.wait_for(
                lambda: all(s.get_publisher_count() >= count for s in subs),
                timeout,
                f"publishers of {topic} matched",
            )
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; {self.graph()}") from None

    # ------------------------------------------------------------------ services
    def call(self, srv_type: Any, name: str, request: Any, timeout: float = HANG) -> Any:
        """Call a service and wait for the answer (the client thread spins)."""
        client: Any = self.node.create_client(srv_type, name)
        try:
            if not client.wait_for_service(timeout_sec=timeout):
                raise TimeoutError(f"service {name} not available after {timeout} s")
            return self.answer(client, request, timeout)
        finally:
            self.node.destroy_client(client)

    def answer(self, client: Any, request: Any, timeout: float, resend: float = 2.0) -> Any:
        """The answer of a service ``client`` to ``request``, sent again every ``resend`` [s].

        A server's service is seen (``wait_for_service``) before its answers' writer has
        matched this client's reader: a request sent in between is answered into the void
        (rmw_fastrtps; seen once on a loaded machine). The tests' requests are idempotent, so
        one is sent again until an answer comes or ``timeout`` [s] has passed.
        """
        deadline = time.monotonic() + timeout
        while True:
            future = client.call_async(request)
            left = deadline - time.monotonic()
            try:
                self.wait_for(future.done, min(resend, max(left, 0.0)), "an answer")
                return future.result()
            except TimeoutError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(
                        f"timed out after {timeout} s waiting for the answer of {client.srv_name}"
                    ) from None

    # ------------------------------------------------------------------ waiting
    @staticmethod
    def wait_for(
        predicate: Callable[[], Any],
        timeout: float = HANG,
        what: str = "condition",
        period: float = 0.01,
    ) -> Any:
        """Poll ``predicate`` until it is truthy; return its value or raise TimeoutError."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
            time.sleep(period)


@contextmanager
def dds_env(domain: int) -> Iterator[int]:
    """This process's DDS environment on ``domain`` for the block; the one before afterwards.

    So a module's domain does not outlive the module in ``os.environ`` (where
    ``local_dds_env()`` without a domain would find it).

    Yields:
        ``domain``.
    """
    saved = {key: os.environ.get(key) for key in LOCAL_DDS_KEYS}
    apply_local_dds_env(domain)
    try:
        yield domain
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def ros_client(domain: int, name: str) -> Iterator[RosTestClient]:
    """This process on the local DDS of ``domain``, rclpy initialised, one test client.

    The module-scoped ``client`` fixture of the DDS test files (:func:`client_fixture`).
    """
    with dds_env(domain):
        rclpy.init()
        try:
            with RosTestClient(name) as c:
                yield c
        finally:
            rclpy.shutdown()


def client_fixture(domain: int, name: str) -> Any:
    """A module-scoped ``client`` fixture: :func:`ros_client` of ``domain``, node ``name``.

    Use at a test module's top level: ``DOMAIN = allocate_domain()`` (held for the session),
    then ``client = client_fixture(DOMAIN, "my_test_client")``.
    """

    @pytest.fixture(scope="module")
    def client() -> Iterator[RosTestClient]:
        with ros_client(domain, name) as c:
            yield c

    return client


@contextmanager
def ros_context(domain: int) -> Iterator[tuple[Context, SingleThreadedExecutor]]:
    """This process on the local DDS of ``domain``: its own rclpy context, spun in a thread.

    Yields:
        ``(context, executor)``: create nodes with ``context`` and add them to ``executor``.
    """
    with dds_env(domain):
        context = Context()
        rclpy.init(
            context=context, domain_id=domain, signal_handler_options=SignalHandlerOptions.NO
        )
        executor = SingleThreadedExecutor(context=context)
        stop = threading.Event()
        thread = threading.Thread(
            target=spin_through_destruction, args=(executor, context, stop), daemon=True
        )
        thread.start()
        try:
            yield context, executor
        finally:
            stop.set()
            executor.shutdown(timeout_sec=2.0)
            rclpy.shutdown(context=context)
            thread.join(timeout=2.0)


def spin_through_destruction(
    executor: SingleThreadedExecutor, context: Context, stop: threading.Event
) -> None:
    """Spin ``executor`` until ``stop`` is set or ``context`` shuts down.

    A test that destroys one of its nodes while the executor waits on it (another thread: the
    test's) makes rclpy raise ``InvalidHandle`` from the wait; ``executor.spin`` would end its
    thread there, and every later callback of every node of the executor would be lost (a
    marker client's KEEP_ALIVE never arriving). The wait is begun again instead.
    """
    while not stop.is_set() and context.ok():
        try:
            executor.spin_once(timeout_sec=0.02)
        except InvalidHandle:  # a node destroyed under the wait: wait again without it
            continue
        except Exception:  # the context shut down under us
            if stop.is_set() or not context.ok():
                return
            raise


def wait_until(
    pred: Callable[[], object], timeout: float = HANG, what: str = "", period: float = 0.005
) -> None:
    """Poll ``pred`` every ``period`` [s] until it is truthy; AssertionError after ``timeout`` [s].

    (:meth:`RosTestClient.wait_for` raises TimeoutError and returns the value instead.)
    """
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(period)


def reliable(depth: int) -> QoSProfile:
    """Reliable, keep-last ``depth`` QoS (as RViz and the node's command subscribers use)."""
    return QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE)


class CommandChecker:
    """Checks every velocity command a node publishes (Float64MultiArray, ``joints`` order).

    A message is *bad* when its length differs from the joint count, a value is NaN or Inf, or
    ``|v|`` exceeds the URDF velocity limit (relative tolerance 1e-9). Fuzz and fault tests
    assert ``checker.bad == []`` at the end, and that commands did flow (``checker.total``).
    """

    def __init__(
        self,
        client: RosTestClient,
        velocity_limits: Any,
        topic: str = "/forward_velocity_controller/commands",
    ) -> None:
        """Subscribe (reliable, depth 1000) on ``topic`` of ``client``.

        Args:
            client: the test client whose executor spins the subscription.
            velocity_limits: (n,) URDF velocity limits of the command's joints [rad/s or m/s].
        """
        import numpy as np
        from std_msgs.msg import Float64MultiArray

        self._np = np
        self.limits = np.asarray(velocity_limits, dtype=float)  # (n,)
        self.total = 0
        self.zeros = 0  # all-zero commands
        self.bad: list[str] = []  # why each bad message was bad (first 100)
        self.bad_count = 0
        self.last: Any = None  # (n,) the last command
        self._lock = threading.Lock()
        client.node.create_subscription(Float64MultiArray, topic, self._check, 1000)

    def _check(self, msg: Any) -> None:
        np = self._np
        v = np.asarray(msg.data, dtype=float)
        why = ""
        if v.shape != self.limits.shape:
            why = f"length {v.size} != {self.limits.size}"
        elif not np.all(np.isfinite(v)):
            why = f"non-finite {v.tolist()}"
        elif np.any(np.abs(v) > self.limits * (1.0 + 1e-9)):
            why = f"over the limit {v.tolist()} (limits {self.limits.tolist()})"
        with self._lock:
            self.total += 1
            self.last = v
            if why:
                self.bad_count += 1
                if len(self.bad) < 100:
                    self.bad.append(why)
            elif not np.any(v):
                self.zeros += 1

    def snapshot(self) -> tuple[int, int, int]:
        """``(total, zeros, bad_count)`` so far."""
        with self._lock:
            return self.total, self.zeros, self.bad_count


__all__ = [
    "LOG_DIR",
    "NODE_MODULE",
    "PANDA_NODE_PARAMS",
    "PANDA_URDF",
    "PROGRAMS",
    "REPO",
    "SIM_ROBOT_MODULE",
    "CommandChecker",
    "RosTestClient",
    "allocate_domain",
    "client_fixture",
    "dds_env",
    "node_command",
    "read_log",
    "reliable",
    "replay_compare",
    "ros_arguments",
    "ros_client",
    "ros_context",
    "running",
    "start_panda_node",
    "start_process",
    "start_recorder",
    "start_ros",
    "stop_process",
    "stop_processes",
    "stop_recorded",
    "wait_until",
]


class StaticRobot:
    """The test process as a robot at rest: joint states at ``rate`` [Hz] from a thread.

    Each state is stamped with the client's clock; ``positions`` (by name, 0 when missing)
    can change between states. Publishing runs between :meth:`start` and :meth:`stop`.
    """

    def __init__(
        self,
        client: RosTestClient,
        topic: str,
        names: list[str],
        positions: dict[str, float],
        rate: float = 100.0,
    ) -> None:
        self.client = client
        self.pub = client.publisher(JointState, topic, 10)
        self.names = list(names)
        self.positions = dict(positions)
        self.period = 1.0 / rate
        self.running = threading.Event()
        self._quit = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._quit.is_set():
            if self.running.is_set():
                msg = JointState()
                msg.header.stamp = self.client.node.get_clock().now().to_msg()
                msg.name = list(self.names)
                msg.position = [float(self.positions.get(n, 0.0)) for n in self.names]
                self.pub.publish(msg)
            time.sleep(self.period)

    def start(self) -> StaticRobot:
        self.running.set()
        return self

    def stop(self) -> None:
        self.running.clear()

    def close(self) -> None:
        self._quit.set()
        self._thread.join(2.0)
        self.client.node.destroy_publisher(self.pub)
