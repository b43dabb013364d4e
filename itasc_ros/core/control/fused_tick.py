"""The tick's compiled calls: its look at its inputs, and the common tick in one call (ROS-free).

Internal: the public API is :meth:`itasc_ros.core.control.Controller.step`. Taken through its
parts (the look at the inputs, the status, the target's twist, the scene's solve, the command,
the record), a tick pays each part's compiled-call dispatch and the Python around it, and the
machine code of the solve comes back cold from the Python between: more than the work.
:class:`FusedTick` makes the same calls, in the same order, on the same arrays, in one
compiled call (:func:`~._command_kernels.tick_command`) when the tick is the common one: a
single robot, at most one target stream that neither follows a straight-line reference nor
is held in the world frame, a scene whose solve reads the joint positions in its compiled
call only; a target that moves, by its estimated twist or by an explicit one, is aimed ahead in
the call too. Whatever the tick's time finds (a stale joint state or odometry, a jog) stops the
call after its look, and the controller's parts do the rest.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..compiled_call import entry_point
from ..constraints.base import HOLDER_EPOCH
from ._command_kernels import SENT, TickPlan, new_tick_plan, plan_command, tick_command
from ._tick_kernels import look
from .following import Following
from .inputs import Inputs
from .model_fit import FittedModel
from .prediction import StatePrediction
from .recorder import ACTIVE_CODE, NO_ROOM, Recorder

Array = NDArray[np.float64]

_NO_TWIST = np.zeros(6)  # the twist arrays of no target stream (unread)
_NO_POSE = np.eye(4)  # its poses
_NO_FLAG = np.zeros(1)  # its aim flag


class FusedTick:
    """The controller's tick's look at its inputs, and its common active tick in one call.

    Args:
        model: the controller's fitted model.
        inputs: its inputs.
        prediction: its joint-position prediction.
        recorder: its recorder (the tick's TICK record, written in the call once sent).
        clock: (:data:`~._tick_kernels.CLOCK_SIZE`,) its packed clock.
        capped: (n,) its work array of a capped command.
        command: (n,) its command being made [rad/s or m/s].
    """

    def __init__(
        self,
        model: FittedModel,
        inputs: Inputs,
        prediction: StatePrediction,
        recorder: Recorder,
        clock: Array,
        capped: Array,
        command: Array,
    ) -> None:
        self._model = model
        self._inputs = inputs
        self._prediction = prediction
        self._recorder = recorder
        self._clock = clock
        self._capped = capped
        self._command = command
        self._mean_twist = np.zeros(6)  # (6,) work of an explicit twist's aim in the call
        self._streams = list(inputs.targets.items())
        self._plan: TickPlan | None = None  # the compiled call's arrays and settings
        self._plan_key: tuple[Any, ...] = ()  # what they were gathered from (_planned)
        # tick_command's and plan_command's variants for the plan's type, called without
        # numba's dispatch
        self._call: Callable[..., tuple[int, int, float]] = tick_command
        self._command_call: Callable[..., tuple[int, int, float]] = plan_command

    def look(self, now: float) -> None:
        """The tick's one look at its time and its inputs at ``now`` [s], then its positions.

        In one compiled call (:func:`~itasc_ros.core.control._tick_kernels.look`): the time
        since the last tick (at most ``input_timeout``, the period at first; a jog or a step
        moves its reference by it; the motion limits do not use it: every command differs
        from the last one by at most what the limits allow over the *nominal* period, as a
        ros2_control velocity controller applies a command at once, however late it is), the
        joint state's, the odometry's and each target stream's freshness (in the streams'
        packed states), and the positions the tick solves at
        (:class:`~.prediction.StatePrediction`: advanced while a state is late, and where the
        joints head for behind servos that lag). Then each robot's freshness. The rest of the
        tick reads these flags (and the joint state's age in the clock), never the clock: one
        snapshot, one judgement of freshness per input per tick. The common tick makes it in
        its own call (:meth:`run`).
        """
        model, inputs, pred = self._model, self._inputs, self._prediction
        timeout, js = model.config.input_timeout, inputs.joints
        look(
            self._clock, now, model.dt, timeout, js.s, inputs.odom.stamp, inputs.stream_states,
            js.q, js.stamps, pred.state, pred.values, model.config.actuator_lag, pred.period,
        )  # fmt: skip
        if inputs.robots.names and not inputs.robots.look(now, timeout):
            model.held_limit.release()

    def possible(self) -> bool:
        """Whether this tick can be the common one, as far as its inputs say before its time.

        A single robot with a joint state, at most one target stream that follows no
        straight-line reference (a step, a jog) and is not held in the world frame (one
        aimed ahead by its twist is aimed in the call).
        """
        inputs = self._inputs
        if len(self._streams) > 1 or inputs.robots.names or not inputs.joints.has_state:
            return False
        for _, st in self._streams:
            if st.world or st.ref.active or st.ref.jogging:
                return False
        return True

    def run(self, now: float, following: Following) -> tuple[int, int, float, bool]:
        """The tick at ``now`` [s] in one compiled call, its tasks judged by ``following``.

        The scene :meth:`~itasc_ros.core.solve.Scene.ready` for this tick (its ``q`` is set in
        the call, once predicted), when it
        :attr:`~itasc_ros.core.solve.Scene.solves_in_one_call`.

        Returns:
            :func:`~._command_kernels.tick_command`'s result (its code
            :data:`~._command_kernels.LOOKED`: only the tick's look was made) and whether
            the tick's TICK record was written.

        Raises:
            Exception: what the compiled call raised (after its look).
        """
        plan = self._planned(following)
        buf, at, revision = self._recorder.reserve_tick()
        try:
            code, worst, longest = self._call(
                plan, now, self._inputs.odom.stamp, buf, at, revision
            )
        except Exception:
            self._recorder.settle(False)
            raise
        return code, worst, longest, self._recorder.settle(code == SENT)

    def command(self, following: Following) -> tuple[int, int, float, bool]:
        """The solve and command of an active tick the controller's parts made, in one call.

        :func:`~._command_kernels.plan_command` on the tick's plan: the same call as
        :meth:`run`'s after its look, for a tick that is not the common one (a moving target
        aimed ahead, a reference, several robots) whose scene
        :attr:`~itasc_ros.core.solve.Scene.compiled_tick` and is readied at the prediction's
        positions; its tasks judged by ``following``.

        Returns:
            :func:`~._command_kernels.solve_command`'s result and whether the tick's TICK
            record was written.

        Raises:
            Exception: what the compiled call raised.
        """
        plan = self._planned(following)
        buf, at, revision = self._recorder.reserve_tick()
        try:
            code, worst, longest = self._command_call(plan, buf, at, revision)
        except Exception:
            self._recorder.settle(False)
            raise
        return code, worst, longest, self._recorder.settle(code == SENT)

    def _planned(self, following: Following) -> TickPlan:
        """The tick's :class:`~._command_kernels.TickPlan`: the last one, or a new one.

        A new one when anything it holds may have been replaced since: the plan holds arrays,
        not their owners. It is gathered again when the model's configuration (a live
        change), its scene, the scene's :attr:`~itasc_ros.core.solve.Scene.revision` (a new
        layout, a solver setting, a limit), the motion limiter, the tasks' judgement or the
        constraints' holders of their arrays changed. The key holds the objects themselves:
        none of them can be freed and its address taken by another while the plan stands.
        """
        model = self._model
        scene = model.scene
        key = self._plan_key
        if (
            key
            and key[2] == scene.revision
            and key[5] == HOLDER_EPOCH[0]
            and key[1] is scene
            and key[0] is model.config
            and key[3] is model.limiter
            and key[4] is following
        ):
            return self._plan  # type: ignore[return-value]
        self._plan = plan = self._gather(following, scene.arguments(model.dt))
        # the other arguments' types are fixed: floats, an int, the journal's buffer (float64,
        # C-contiguous, the recorder's own)
        self._call = entry_point(tick_command, (plan, 0.0, 0.0, NO_ROOM, -1, 0.0))
        self._command_call = entry_point(plan_command, (plan, NO_ROOM, -1, 0.0))
        self._plan_key = (
            model.config, scene, scene.revision, model.limiter, following, HOLDER_EPOCH[0]
        )  # fmt: skip
        return self._plan

    def _gather(self, following: Following, args: tuple[Any, ...]) -> TickPlan:
        """A new plan of the tick's arrays and settings, the scene's call ``args`` among them."""
        model, inputs, pred = self._model, self._inputs, self._prediction
        scene, cfg, lim, js = model.scene, model.config, model.limiter, inputs.joints
        if self._streams:
            name, st = self._streams[0]
            c = scene.get(name)
            dest = c.target.pose  # type: ignore[attr-defined]
            here = bool(dest.flags.c_contiguous)  # else its aim is the controller's parts'
            stream: tuple[Any, ...] = (
                st.twist, st.estimate, st.applied, c.twist_store, here, st.pose, st.aimed,
                dest if here else st.new_pose, st.aim_flag, st.twist_clock, st.accel,
                self._mean_twist, st.aimed_twist,
            )  # fmt: skip
        else:
            stream = (_NO_TWIST, _NO_TWIST, _NO_TWIST, _NO_TWIST, False) + (_NO_POSE,) * 3
            stream += (_NO_FLAG, _NO_FLAG, _NO_TWIST, _NO_TWIST, _NO_TWIST)
        states, arrays = self._recorder.watched
        speeds = (
            float(cfg.command_latency), float(cfg.max_target_speed),
            float(cfg.max_target_angular_speed),
        )  # fmt: skip
        return new_tick_plan(  # type: ignore[call-arg]
            self._clock, model.dt, float(cfg.input_timeout), js.s, states, js.q, js.stamps,
            pred.state, pred.values, float(cfg.actuator_lag), pred.period,
            bool(model.base_joints), bool(cfg.aim_ahead), *stream, *speeds, *args, self._capped,
            model.vmax_hard, self._command, lim.v, lim.a, lim.active, following.tasks,
            ACTIVE_CODE, arrays,
        )  # fmt: skip

    def warm_up(self) -> None:
        """Load the compiled call now (the model warmed up first): no tick waits for it.

        On copies of the tick's state (its look, its target's twist, the command's limits)
        and the scene's solve of its warm-up (whose buffers hold a solve's values again at
        the next one); no record.
        """
        model, inputs, pred = self._model, self._inputs, self._prediction
        scene, lim, js = model.scene, model.limiter, inputs.joints
        if not scene.compiled_tick:  # its warm-up's arguments: a compiled tick's
            return
        n, k = js.q.shape[0], len(scene.result.constraint_names)
        twists: list[Any] = [np.zeros(6) for _ in range(4)]
        twists += [True, np.eye(4), np.eye(4), np.eye(4), np.zeros(1)]  # and the aim's
        twists += [np.zeros(1), np.zeros(6), np.zeros(6), np.zeros(6), 0.0, 1.0, 1.0]
        plan = new_tick_plan(  # type: ignore[call-arg]
            self._clock.copy(), model.dt, 0.1, js.s.copy(), inputs.stream_states.copy(),
            js.q.copy(), js.stamps.copy(), pred.state.copy(), pred.values.copy(), 0.0,
            pred.period, False, True, *twists, *scene.warm_up(model.dt), np.zeros(n),
            model.vmax_hard, np.zeros(n), lim.v.copy(), lim.a.copy(), lim.active,
            np.zeros((3, k)), ACTIVE_CODE, inputs.stream_arrays.copy(),
        )  # fmt: skip
        tick_command(plan, 0.0, -math.inf, NO_ROOM, -1, 0.0)
        plan_command(plan, NO_ROOM, -1, 0.0)


__all__ = ["FusedTick"]
