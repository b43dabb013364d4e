"""itasc_node's position IK: ``~/ik_request`` in, ``~/ik_solution`` and ``~/ik_result`` out.

Every request (geometry_msgs/PoseStamped, the pose of the first target constraint's effector) gets
exactly one ``~/ik_result`` (diagnostic_msgs/DiagnosticStatus): level OK for a solution, ERROR with
the reason otherwise -- refused (a frame that is not a link, NaN, an unreachable target), not
solved within the budget, superseded by a newer request before it started, no robot model (after
waiting :data:`MODEL_WAIT` for one, and for as long as a URDF that arrived is made a model). A
solution keeps the node's enabled one-sided constraints as the control loop does (a ``collision``
constraint: every pair at its margin; see ``solve_ik``'s ``keep``). A solution is published on
``~/ik_solution`` (sensor_msgs/JointState) first. Both carry the request's header: the solution as
its ``header`` (stamp and frame_id), the result as the values ``request_stamp``
(``<sec>.<nanosec>``) and ``frame_id``, so that a client matches them to its request. The requests
wait in their DDS reader (a queue of :data:`QUEUE_DEPTH`) for a thread of their own that takes
them, solves and answers (the control tick never waits, and no executor callback runs per request).
A round answers every waiting request: the latest is solved, the older ones are superseded. Under a
flood, requests replaced in the full queue before the thread took them get no answer (counted in
``/diagnostics`` as ``ik_requests_unanswered``), and the thread rests between rounds at least as
long as a round took.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped
from numpy.typing import NDArray
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Header

from ..core import ConstraintConfig, Controller, KinematicTree
from ..core.constraints import Constraint
from ..core.ik.worker import DEFAULT_TIMEOUT, IkOutcome, IkWorker, warm_up_ik
from .conversions import pose_stamped_arrays
from .log_throttle import log_throttled
from .polled_reader import PolledReader, Waiter, replaced_count
from .realtime import demote_current_thread

Array = NDArray[np.float64]
SUPERSEDED = "superseded by a newer request before it started"
NO_MODEL = "no robot model yet"
#: Requests DDS keeps waiting for the IK thread; beyond it, under a flood, the oldest are
#: replaced and get no answer (counted: :attr:`IkRequests.unanswered`).
QUEUE_DEPTH = 10
#: The IK thread answers a round of requests at most this often [s] (and rests at least as
#: long as a round took): a flood of requests costs the process a few percent of a core (at
#: 5 ms rounds a 2 kHz flood took a third of a core, and the loop's ticks with it).
MIN_ROUND_PERIOD = 0.02
#: How long the latest request waits for a robot model [s] before it is answered
#: :data:`NO_MODEL` (a request that comes while the node loads its model at start-up, or just
#: before a ``robot_description`` arrives, is solved once the model is there).
MODEL_WAIT = 2.0


@dataclass
class _Request:
    """One request, as solved by the worker thread (a tree view of its own)."""

    header: Header
    robot: str
    tree: KinematicTree
    link: str
    seed: Array
    frame: str
    position: Array
    quaternion: Array
    keep: list[Constraint]


def stamp_text(header: Header) -> str:
    """A header's stamp as ``<sec>.<nanosec>`` (nanoseconds zero-padded to 9 digits)."""
    return f"{header.stamp.sec}.{header.stamp.nanosec:09d}"


def result_status(
    name: str, header: Header, robot: str, link: str, outcome: IkOutcome | None, reason: str
) -> DiagnosticStatus:
    """The ``~/ik_result`` of one request.

    Args:
        name: the status name (``<node>: ik``).
        header: the request's header.
        robot: the robot's name ('' without a model).
        link: the link placed ('' when the request was refused before that was known).
        outcome: the solver's outcome, or None for a request that never reached it.
        reason: why there is no solution ('' for a solution).
    """
    r = outcome.result if outcome is not None else None
    success = r is not None and r.success and not reason
    values = {
        "request_stamp": stamp_text(header),
        "frame_id": header.frame_id,
        "success": "true" if success else "false",
        "link": link,
        "position_error_m": "nan" if r is None else f"{r.position_error:.3g}",
        "rotation_error_rad": "nan" if r is None else f"{r.rotation_error:.3g}",
        "iterations": "0" if r is None else str(r.iterations),
        "time_ms": "nan" if r is None else f"{1e3 * r.time:.3f}",
        "reason": reason,
    }
    status = DiagnosticStatus(name=name, hardware_id=robot)
    status.level = DiagnosticStatus.OK if success else DiagnosticStatus.ERROR
    status.message = "solved" if success else f"no solution: {reason}"
    status.values = [KeyValue(key=k, value=v) for k, v in values.items()]
    return status


class IkRequests:
    """The node's IK requests: a latest-request worker thread and the two output topics.

    Args:
        node: the node whose ``~/ik_solution`` and ``~/ik_result`` these are.
        controller: the installed controller (None: no model yet).
        timeout: time budget of one request [s].
        lock: held while a request is read from the controller (its seed, tree and kept
            constraints): the lock the control tick holds, so that the seed is one tick's.
        model_coming: True while a URDF that arrived is parsed and its model built: a
            request without a model waits for it beyond :data:`MODEL_WAIT`.
    """

    def __init__(
        self,
        node: Node,
        controller: Callable[[], Controller | None],
        timeout: float = DEFAULT_TIMEOUT,
        lock: AbstractContextManager[Any] | None = None,
        model_coming: Callable[[], bool] = lambda: False,
    ) -> None:
        self._node = node
        self._controller = controller
        self._model_coming = model_coming
        self._lock = lock if lock is not None else nullcontext()
        self._name = f"{node.get_name()}: ik"
        self._solutions = node.create_publisher(JointState, "~/ik_solution", 10)
        self._results = node.create_publisher(DiagnosticStatus, "~/ik_result", 10)
        # The solver only: this class's thread takes the requests and keeps each one's header.
        self._solver = IkWorker(lambda _: None, timeout)
        self._solver.close()
        warm_up_ik()  # before the control loop starts: never a compilation beside it
        self._reader = PolledReader(node, PoseStamped, "~/ik_request", depth=QUEUE_DEPTH)
        self._waiter = Waiter(node.context, self._reader)
        self._closed = threading.Event()
        self._timeout = timeout
        self._kept: tuple[list[ConstraintConfig], list[Constraint]] = ([], [])
        #: the latest request, taken while there was no model: (message, time.monotonic() [s])
        self._waiting: tuple[PoseStamped, float] | None = None
        self._thread = threading.Thread(target=self._run, name="itasc_ik", daemon=True)
        self._thread.start()

    @property
    def unanswered(self) -> str:
        """Requests replaced in the queue by newer ones before they were taken: no answer.

        The count, or ``"unknown"`` with the reason where rclpy does not number messages.
        """
        return replaced_count([self._reader])

    def close(self) -> None:
        """Stop the thread (a solve in progress ends within its budget), release the reader."""
        self._closed.set()
        self._waiter.wake()
        self._thread.join(max(1.0, 2.0 * self._timeout))
        if not self._thread.is_alive():
            self._reader.destroy()

    def _run(self) -> None:
        """The thread: wait for requests, answer a round, rest as long as the round took."""
        demote_current_thread()  # a solve must never hold a real-time core
        context: Any = self._node.context
        with context.handle:
            while not self._closed.is_set():
                self._waiter.wait(0.1 if self._waiting is None else MIN_ROUND_PERIOD)
                t0 = time.monotonic()
                if not self._round():
                    continue
                busy = time.monotonic() - t0
                self._closed.wait(max(busy, MIN_ROUND_PERIOD - busy))

    def _round(self) -> bool:
        """Answer the waiting requests: the older ones superseded, the latest solved.

        Without a model the latest waits for one, :data:`MODEL_WAIT` at most, or longer while
        a URDF that arrived is made a model.
        """
        batch: list[tuple[PoseStamped, float]] = [(m, 0.0) for m, _ in self._reader.take_all()]
        if self._waiting is not None:
            batch.insert(0, self._waiting)
            self._waiting = None
        if not batch:
            return False
        ctrl = self._controller()
        robot = "" if ctrl is None else ctrl.tree.name
        for msg, _ in batch[:-1]:
            self._fail(msg.header, robot, "", SUPERSEDED)
        msg, since = batch[-1]
        if ctrl is None:
            now = time.monotonic()
            since = since or now
            waits = now - since < MODEL_WAIT or self._model_coming()
            if waits and not self._closed.is_set():
                self._waiting = (msg, since)
                return False
            ctrl = self._controller()  # installed since it was read: no longer coming
            if ctrl is None:
                self._fail(msg.header, "", "", NO_MODEL)
                return True
            robot = ctrl.tree.name
        try:
            with self._lock:
                req = self._make(msg, ctrl)
        except Exception as exc:  # a request never stops the node
            self._fail(msg.header, robot, "", f"refused: {exc}")
            return True
        outcome = self._solver.solve(
            req.tree, req.link, req.seed, req.frame, req.position, req.quaternion, req.keep
        )
        self._publish(req, outcome)
        return True

    def _make(self, msg: PoseStamped, ctrl: Controller) -> _Request:
        targets = ctrl.pose_constraints
        link = ctrl.constraint(targets[0]).effector_link if targets else None
        seed = ctrl.q if ctrl.has_joint_state else ctrl.tree.neutral()
        frame, p, quat, _ = pose_stamped_arrays(msg)
        tree = ctrl.tree
        keep = self._kept_constraints(ctrl)
        return _Request(
            msg.header,
            tree.name,
            tree.select_joints(tree.joint_names),  # a view of its own for the worker
            link or tree.tip_link(),
            np.array(seed, dtype=float),
            frame,
            np.array(p, dtype=float),
            np.array(quat, dtype=float),
            keep,
        )

    def _kept_constraints(self, ctrl: Controller) -> list[Constraint]:
        """The controller's enabled one-sided constraints (collision, ...), for this thread.

        Built from their settings (objects of this thread's own, bound to each request's
        tree), again only when those settings change: a solution keeps every pair at its
        margin as the control loop does.
        """
        configs = [
            c for c in ctrl.config.constraints
            if c.kind.one_sided and ctrl.constraint(c.name).enabled
        ]  # fmt: skip
        if configs != self._kept[0]:
            self._kept = (copy.deepcopy(configs), [c.build() for c in configs])
        return self._kept[1]

    def _publish(self, req: _Request, outcome: IkOutcome) -> None:
        logger = self._node.get_logger()
        r = outcome.result
        reason = ""
        if r is not None and r.success:
            js = JointState(header=req.header, name=list(outcome.joint_names))
            js.position = [float(v) for v in r.q]
            self._solutions.publish(js)
            # a flood: one line a second
            log_throttled(logger, "info", "ik solved", outcome.summary(), 1.0)
        else:
            reason = f"refused: {outcome.error}" if r is None else f"not solved: {r.message}"
            log_throttled(logger, "warning", "ik not solved", outcome.summary(), 1.0)
        status = result_status(self._name, req.header, req.robot, req.link, outcome, reason)
        self._results.publish(status)

    def _fail(self, header: Header, robot: str, link: str, reason: str) -> None:
        """Publish the failure of a request that never reached the solver; log it."""
        text = f"IK request refused: {reason}"
        log_throttled(self._node.get_logger(), "warning", "ik refused", text, 1.0)
        self._results.publish(result_status(self._name, header, robot, link, None, reason))


__all__ = [
    "MIN_ROUND_PERIOD",
    "MODEL_WAIT",
    "NO_MODEL",
    "QUEUE_DEPTH",
    "SUPERSEDED",
    "IkRequests",
    "result_status",
    "stamp_text",
]
