"""IkWorker: position IK requests solved in a thread of their own, beside a control loop.

A request (a pose of a link, in the frame of any link of the tree) is handed over with
:meth:`IkWorker.submit` and solved by :func:`~itasc_ros.core.ik.solve_ik` with a bounded
budget in a worker thread; the control loop never waits for it (only the latest request is
kept; the compiled IK loop releases the GIL). Every outcome -- a solution, no solution in the
budget, or a refused request -- goes to the ``on_result`` callback, called in the worker thread.
Nothing raised by a request can stop the worker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..constraints.base import Constraint
from ..errors import ConfigurationError, ItascError
from ..kinematics import spatial
from ..kinematics.tree import KinematicTree
from ..latest_worker import LatestWorker
from .result import IkResult
from .solve import solve_ik

Array = NDArray[np.float64]

#: Time budget of one request [s].
DEFAULT_TIMEOUT = 0.1


@dataclass
class IkOutcome:
    """What became of one request.

    Attributes:
        link: the link placed.
        frame: the frame the request's pose was given in ('' = root).
        result: the IK result (None when the request was refused).
        error: why the request was refused ('' otherwise).
        joint_names: the columns of ``result.q``.
    """

    link: str
    frame: str
    result: IkResult | None
    error: str = ""
    joint_names: list[str] = field(default_factory=list)

    @property
    def success(self) -> bool:
        """True when a configuration meeting the tolerance was found."""
        return self.result is not None and self.result.success

    def summary(self) -> str:
        """One line for a log: success or why not, errors, iterations, time."""
        r = self.result
        if r is None:
            return f"IK request for {self.link!r} refused: {self.error}"
        state = "solved" if r.success else f"not solved ({r.message})"
        return (
            f"IK request for {self.link!r} {state}: position error {r.position_error:.3g} m, "
            f"rotation error {r.rotation_error:.3g} rad, {r.iterations} iterations, "
            f"{r.restarts} restarts, {1e3 * r.time:.2f} ms"
        )


def pose_in_root(
    tree: KinematicTree, q: Array, frame: str, position: ArrayLike, quaternion: ArrayLike
) -> Array:
    """(4, 4) pose in the root frame of a pose given in ``frame`` ('' = root) at ``q``.

    Raises:
        ConfigurationError: a non-finite position, a zero or non-finite quaternion.
        UnknownLinkError: ``frame`` is not a link of the tree (lists them).
    """
    p = np.asarray(position, dtype=float).reshape(-1)
    quat = np.asarray(quaternion, dtype=float).reshape(-1)
    if p.shape != (3,) or not np.all(np.isfinite(p)):
        raise ConfigurationError(f"the position must be 3 finite values, got {p.tolist()}")
    t = np.eye(4)
    try:  # normalised without overflow: a quaternion scaled by 1e200 is the same rotation
        if quat.shape != (4,):
            raise ConfigurationError("not 4 values")
        t[:3, :3] = spatial.quat_to_matrix(quat)
    except ConfigurationError:
        raise ConfigurationError(
            f"the orientation must be a finite, non-zero quaternion (x, y, z, w), got "
            f"{quat.tolist()}"
        ) from None
    t[:3, 3] = p
    if frame and frame != tree.root_link:
        t = tree.forward_kinematics(q, frame) @ t
    return t


class IkWorker:
    """Solves IK requests in a daemon thread, latest request only.

    The compiled IK loop is loaded by the first request, in the worker thread, before that
    request's budget starts (from numba's cache: tens of milliseconds; compiled once per
    machine: seconds): a node that never receives a request never loads it.

    Args:
        on_result: called with each :class:`IkOutcome`, in the worker thread.
        timeout: time budget of one request [s].
        before_solve: called in the worker thread before each solve (e.g. to put the thread
            back on the normal scheduler after a real-time policy was applied to the process).
    """

    def __init__(
        self,
        on_result: Callable[[IkOutcome], None],
        timeout: float = DEFAULT_TIMEOUT,
        before_solve: Callable[[], None] | None = None,
    ) -> None:
        self._on_result = on_result
        self._before_solve = before_solve
        self.timeout = float(timeout)
        self.solved = 0
        self._worker: LatestWorker[tuple[KinematicTree, str, Array, str, Array, Array]] = (
            LatestWorker(self._serve, "itasc_ik")
        )

    def submit(
        self,
        tree: KinematicTree,
        link: str,
        seed: ArrayLike,
        frame: str,
        position: ArrayLike,
        quaternion: ArrayLike,
    ) -> None:
        """Queue a request (replacing one not yet started); returns at once.

        Args:
            tree: the robot's tree, read now, in the calling thread: the worker solves on a
                view of its own (its buffers, the held joints' positions of now).
            link: the link to place.
            seed: (n,) start configuration, e.g. the current joint positions.
            frame: frame of the pose ('' or the root link: the root).
            position: (3,) [m].
            quaternion: (4,) (x, y, z, w).
        """
        self._worker.submit(
            (
                tree.select_joints(tree.joint_names),
                str(link),
                np.array(seed, dtype=float),
                str(frame),
                np.array(position, dtype=float),
                np.array(quaternion, dtype=float),
            )
        )

    def close(self) -> None:
        """Stop the thread (a solve in progress ends within its budget)."""
        self._worker.close(max(1.0, 2.0 * self.timeout))

    def _serve(self, request: tuple[KinematicTree, str, Array, str, Array, Array]) -> None:
        if self._before_solve is not None:
            try:
                self._before_solve()
            except Exception:  # a hook's failure does not stop the worker
                pass
        self._on_result(self.solve(*request))

    def solve(
        self,
        tree: KinematicTree,
        link: str,
        seed: Array,
        frame: str,
        position: Array,
        quaternion: Array,
        keep: Sequence[Constraint] = (),
    ) -> IkOutcome:
        """Solve one request now, in the calling thread; never raises for a bad request.

        ``tree`` must not be computed on by another thread meanwhile (:meth:`submit` passes a
        view of its own). ``keep``: one-sided constraints the solution keeps (see
        :func:`~itasc_ros.core.ik.solve_ik`), used by this thread only.
        """
        try:
            view = tree
            q0 = view.clamp(seed) if seed.shape == (view.n_joints,) else view.neutral()
            target = pose_in_root(view, np.nan_to_num(q0), frame, position, quaternion)
            result = solve_ik(view, target, link, keep=keep, seed=q0, timeout=self.timeout)
        except ItascError as exc:
            return IkOutcome(link, frame, None, str(exc), tree.joint_names)
        except Exception as exc:  # anything else: reported, the worker goes on
            return IkOutcome(link, frame, None, f"{type(exc).__name__}: {exc}", tree.joint_names)
        self.solved += 1
        return IkOutcome(link, frame, result, "", view.joint_names)


#: A two-joint arm: its solves compile every IK kernel (they depend on the arrays' types, not
#: on the robot), for :func:`warm_up_ik`.
_WARM_UP_URDF = """<robot name="warm_up">
  <link name="base"/><link name="upper"/><link name="tip"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="upper"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="upper"/><child link="tip"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
</robot>"""


def warm_up_ik() -> None:
    """Compile (or load) the IK kernels now: a reachable and an unreachable solve of a toy arm.

    Called before a control loop starts: on a fresh install the first request would otherwise
    compile them beside the loop (measured: a 100 ms gap between commands).
    """
    tree = KinematicTree.from_urdf(_WARM_UP_URDF)
    worker = IkWorker(lambda _: None, 0.005)
    worker.close()
    tip = tree.forward_kinematics(tree.neutral(), "tip")
    far = np.array([5.0, 0.0, 0.0])
    for position in (tip[:3, 3], far):
        worker.solve(tree, "tip", tree.neutral(), "", position, np.array([0.0, 0.0, 0.0, 1.0]))


__all__ = ["DEFAULT_TIMEOUT", "IkOutcome", "IkWorker", "pose_in_root", "warm_up_ik"]
