"""``itasc-bench tick``: one full control tick beside KDL's, and what the tick's parts cost.

The Panda's tick (FK, Jacobian, 6-D CopyPose, damping, limits) beside KDL's
``ChainFkSolverPos`` + ``ChainIkSolverVel_wdls`` for the same step; key ``tick_ratio_vs_pykdl``;
with a new target pose set every tick (checked, as KDL's tick takes one),
``tick_with_target_ratio_vs_pykdl``. Beside the peers that put the same joint and velocity
limits inside their solve, for the same step: PlaCo (``tick_ratio_vs_placo``) and Drake's
differential IK (``tick_ratio_vs_drake``). Also the controller's tick (with a journal, with
motion limits; on a moving arm: ``node_tick_moving_ratio_vs_pykdl``), a Talos tick with four
constraints, and the Panda with a pose and a posture at
one priority level vs two (``priorities``).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from itasc_ros.core import (
    ConstraintConfig,
    Controller,
    ControllerConfig,
    CopyPose,
    JointValue,
    KinematicTree,
    Scene,
)
from itasc_ros.core.control import fused_tick as fused_tick_module
from itasc_ros.core.control.journal import Journal
from itasc_ros.core.kinematics.home_poses import HOME_POSES
from itasc_ros.core.kinematics.spatial import matrix_to_quat
from itasc_ros.params import load_config
from itasc_ros.tools.resources import robot_urdf, share_file

from .harness import TALOS_URDF, TimedElsewhere, erd_urdf, time_interleaved, time_paced
from .peers import DrakePeer, KdlPeer, PeerUnavailable, PlacoPeer
from .report import print_table


def _node_tick_configs() -> tuple[ControllerConfig, ControllerConfig]:
    """A pose task on ``panda_link8`` at 1 kHz, without and with Franka's motion limits.

    The limits are config/panda.yaml's ``joint_limits`` (acceleration and jerk).
    """
    config = ControllerConfig(
        constraints=[ConstraintConfig("ee", "copy_pose", link="panda_link8")], control_rate=1000.0
    )
    limited = copy.deepcopy(config)  # with Franka's acceleration and jerk limits
    limited.joint_limits = load_config(share_file("config", "panda.yaml")).joint_limits
    return config, limited


def _controller_ticks(
    tree: KinematicTree, q: np.ndarray, target: np.ndarray
) -> dict[str, Callable[[], Any]]:
    """The node's tick in the core: joint state, target pose, step; without and with a journal.

    ``controller_journaled`` records every call into a journal emptied every 10 ticks, as the
    node does while ``~/journal`` is subscribed at 1 kHz; ``controller_limited`` applies
    Franka's acceleration and jerk limits (config/panda.yaml's ``joint_limits``);
    ``controller_node_tick`` has both, the tick the node runs (config/panda.yaml with
    ``~/journal`` subscribed), and ``controller_node_tick_moving`` the same on a moving arm
    (its target circling, its joints following each command); ``live_gain_change`` is a live
    change of the pose task's gain on that controller (set on the running scene, nothing
    rebuilt).
    """
    config, limited = _node_tick_configs()
    funcs: dict[str, Callable[[], Any]] = {}
    for name, journal, cfg in (
        ("controller", None, config),
        ("controller_journaled", Journal(), config),
        ("controller_limited", None, limited),
        ("controller_node_tick", Journal(), limited),
    ):
        funcs[name] = _controller_tick(tree, cfg, journal, q, target)
    funcs["controller_node_tick_moving"] = _controller_tick(
        tree, limited, Journal(), q, target, moving=True
    )
    live = Controller(tree, limited)
    gains = [20.0, 21.0]

    def gain_change() -> None:  # a live scalar change, as a ros2 param set of the gain
        gains.reverse()
        live.update_parameters(**{"constraints.ee.gain": gains[0]})

    funcs["live_gain_change"] = gain_change
    return funcs


MOVING_RADIUS = 0.05
"""[m] The moving ticks' target circles this far around the target pose (0.5 Hz: 0.16 m/s)."""


def _circling(target: np.ndarray, tick: int) -> np.ndarray:
    """(3,) The moving ticks' target position at ``tick`` (1 kHz): a circle in x, y [m]."""
    w = 2.0 * np.pi * 0.5 * tick * 0.001
    return target[:3, 3] + MOVING_RADIUS * np.array([np.cos(w) - 1.0, np.sin(w), 0.0])


def _controller_tick(
    tree: KinematicTree,
    cfg: ControllerConfig,
    journal: Journal | None,
    q: np.ndarray,
    target: np.ndarray,
    moving: bool = False,
) -> Callable[[], Any]:
    """A new controller's tick (joint state, target pose, step); its journal emptied as read.

    The journal (when one) is emptied every 2000 values, as the node's subscriber reads it.
    ``moving``: the target circles (:func:`_circling`) and the joints follow each command
    over the period (a robot that tracks it exactly), so that every tick's Jacobian is new;
    else the same joint state and target every tick.
    """
    ctrl = Controller(tree, cfg)
    ctrl.attach_journal(journal)
    p, quat = target[:3, 3].copy(), matrix_to_quat(target)
    names = tree.joint_names
    clock = [1000.0]
    joints, ticks = [q.copy()], [0]

    def tick() -> Any:
        clock[0] += 0.001
        now = clock[0]
        ctrl.set_joint_state(names, joints[0] if moving else q, now, now)
        ctrl.set_target("ee", "", _circling(target, ticks[0]) if moving else p, quat, now, now)
        out = ctrl.step(now)
        if moving:
            joints[0] = joints[0] + out.qdot * 0.001
            ticks[0] += 1
        j = ctrl.journal
        if j is not None and j.size > 2000:
            j.take()
        return out

    return tick


def bench_node_tick_parts(
    tree: KinematicTree, q: np.ndarray, target: np.ndarray, number: int, repeats: int
) -> dict[str, float]:
    """Where the node's tick goes: its inputs' acceptance, the step, the scene's solve in it.

    The tick of ``controller_node_tick`` (Franka's motion limits, a journal), each part timed
    by ``perf_counter_ns`` around its call; the scene's solve inside the step through wrappers
    of what makes it, the scene's ``prepare`` and the compiled command that solves
    (``plan_command``: the solve, the limits' take of its command, the send, the record; in
    the common tick ``tick_command``, which makes the tick's look and its target's twist
    first); its time counts in ``step_us`` too. Then the same ticks again with every compiled
    call of the package timed (its dispatch included): the time the tick spends in compiled
    code, the rest its Python.

    Args:
        tree: the Panda's tree.
        q: (n,) its joint positions [rad].
        target: (4, 4) the target pose of ``panda_link8``.
        number: ticks per block.
        repeats: blocks (the median of each part's mean per block is taken).

    Returns:
        ``joint_state_us``, ``target_us``, ``step_us``, ``solve_us`` and
        ``step_without_solve_us`` [us per tick]; ``solve_share``, the solve's part of the
        three parts' sum (a ratio within the same ticks: a slower or busier machine moves it
        less than the times); ``compiled_us``, the tick's compiled calls (all of them: the
        inputs', the look, the solve's, the record's; in ticks of their own, each call timed)
        [us per tick]; ``compiled_share``, their part of those ticks (the median of each
        block's: within the same ticks, which the timing of each call slows a little); and
        ``python_us``, the rest of the three parts' sum above at that share [us per tick].
    """
    _, limited = _node_tick_configs()

    def node_controller() -> Controller:  # made once the calls are wrapped: the controller
        ctrl = Controller(tree, limited)  # resolves its compiled calls as it is made
        ctrl.attach_journal(Journal())
        return ctrl

    kernel, fused = fused_tick_module.plan_command, fused_tick_module.tick_command
    solving = [0]
    fused_tick_module.plan_command = _timed(kernel, solving)  # type: ignore[assignment]
    fused_tick_module.tick_command = _timed(fused, solving)  # type: ignore[assignment]
    try:
        ctrl = node_controller()
        scene = ctrl.scene
        scene.prepare = _timed(scene.prepare, solving)  # type: ignore[method-assign]
        parts = _timed_parts(ctrl, tree, q, target, number, repeats, solving)
    finally:
        fused_tick_module.plan_command = kernel
        fused_tick_module.tick_command = fused
    compiled = [0]

    def timing(call: Callable[..., Any]) -> Callable[..., Any]:
        return _timed(call, compiled)

    with _dispatchers_wrapped("itasc_ros", timing):  # the same ticks, every compiled call timed
        inside = _timed_parts(node_controller(), tree, q, target, number, repeats, compiled)
    parts.pop("share_within")
    parts["compiled_us"] = inside["solve_us"]
    # the share within the same ticks (each block's), and the rest of the ticks timed above
    parts["compiled_share"] = share = inside["share_within"]
    parts["python_us"] = (parts["joint_state_us"] + parts["target_us"] + parts["step_us"]) * (
        1.0 - share
    )
    return parts


def _timed(call: Callable[..., Any], spent: list[int]) -> Callable[..., Any]:
    """``call``, its time [ns] added to ``spent[0]`` at each call."""
    clock = time.perf_counter_ns

    def timed(*args: Any) -> Any:
        t0 = clock()
        try:
            return call(*args)
        finally:
            spent[0] += clock() - t0

    return timed


def _timed_parts(
    ctrl: Controller,
    tree: KinematicTree,
    q: np.ndarray,
    target: np.ndarray,
    number: int,
    repeats: int,
    solving: list[int],
) -> dict[str, float]:
    """:func:`bench_node_tick_parts`'s blocks of ``ctrl``'s ticks.

    ``solving``: the solve's time [ns], counted by its wrappers.
    """
    clock = time.perf_counter_ns
    p, quat = target[:3, 3].copy(), matrix_to_quat(target)
    names, now = tree.joint_names, max(1000.0, ctrl.joint_state_stamp)  # on from the last
    blocks: dict[str, list[float]] = {"joint_state": [], "target": [], "step": [], "solve": []}
    shares: list[float] = []
    for block in range(repeats + 1):  # the first block warms up: not kept
        spent = dict.fromkeys(blocks, 0)
        solving[0] = 0
        for _ in range(number):
            now += 0.001
            t0 = clock()
            ctrl.set_joint_state(names, q, now, now)
            t1 = clock()
            ctrl.set_target("ee", "", p, quat, now, now)
            t2 = clock()
            ctrl.step(now)
            t3 = clock()
            spent["joint_state"] += t1 - t0
            spent["target"] += t2 - t1
            spent["step"] += t3 - t2
            j = ctrl.journal
            if j is not None and j.size > 2000:
                j.take()
        spent["solve"] = solving[0]
        if block:
            for k, v in spent.items():
                blocks[k].append(v / number / 1e3)
            ticks = spent["joint_state"] + spent["target"] + spent["step"]
            shares.append(spent["solve"] / ticks)  # the counted calls' share of these ticks
    out = {f"{k}_us": statistics.median(v) for k, v in blocks.items()}
    out["share_within"] = statistics.median(shares)
    out["step_without_solve_us"] = out["step_us"] - out["solve_us"]
    whole = out["joint_state_us"] + out["target_us"] + out["step_us"]
    out["solve_share"] = out["solve_us"] / whole  # of the same ticks: the machine's pace cancels
    return out


#: The Panda's tick period [s] (``Scene.solve``'s ``dt``, the peers' time step).
PERIOD = 0.002


def _limits_peer_ticks(
    tree: KinematicTree,
    scene: Scene,
    q: np.ndarray,
    out: dict[str, Any],
    stack: contextlib.ExitStack,
) -> dict[str, Callable[[], Any] | TimedElsewhere]:
    """The ticks of the peers with limits inside their solve, for the Panda's step.

    The same step as the others (``q + 0.05``), on ``panda_hand`` (``panda_link8`` turned
    -45 degrees about z, same origin: the same motion), with the scene's position and velocity
    limits and its period. Why a peer cannot run goes into ``out`` (``<peer>_unavailable``);
    a worker process to end goes onto ``stack``.
    """
    urdf = robot_urdf("panda")
    hand = tree.forward_kinematics(q + 0.05, "panda_hand")
    limits = (*scene.position_limits, scene.velocity_limits)
    funcs: dict[str, Callable[[], Any] | TimedElsewhere] = {}
    try:
        placo = PlacoPeer(urdf, "panda_hand", tree.joint_names, limits, PERIOD)
        stack.callback(placo.close)
        placo.set_target(hand)
        funcs["placo"] = TimedElsewhere(functools.partial(placo.time_ticks, q))
    except PeerUnavailable as exc:
        out["placo_unavailable"] = str(exc)
    try:
        xml = urdf.read_text()
        drake = DrakePeer(xml, "panda_link0", "panda_hand", tree.joint_names, limits, PERIOD)
        funcs["drake"] = functools.partial(drake.tick, q, hand)
    except PeerUnavailable as exc:
        out["drake_unavailable"] = str(exc)
    return funcs


def _panda_ticks(
    xml: str, tree: KinematicTree, q: np.ndarray, out: dict[str, Any], stack: contextlib.ExitStack
) -> tuple[dict[str, Callable[[], Any] | TimedElsewhere], np.ndarray]:
    """The Panda's ticks to time, and the target pose (4, 4).

    Why a peer cannot run goes into ``out``; a worker process to end onto ``stack``.
    """
    c = CopyPose("ee", "panda_link8", gain=20.0)
    target = tree.forward_kinematics(q + 0.05, "panda_link8")
    c.set_target(target)
    scene = Scene(tree, [c])

    def closed_loop() -> Any:  # a new target every tick, as KDL's tick takes one
        c.set_target(target)
        return scene.solve(q, 0.002)

    funcs: dict[str, Callable[[], Any] | TimedElsewhere] = {
        "itasc_ros": lambda: scene.solve(q, 0.002),
        "itasc_ros_with_target": closed_loop,
    }
    try:
        kdl = KdlPeer(xml, "panda_link0", "panda_link8", lam=0.1)
        funcs["pykdl"] = lambda: kdl.tick(q, target, 20.0)
        funcs["pykdl_moving"] = _kdl_moving(kdl, q, target)
    except (PeerUnavailable, TypeError) as exc:
        out["pykdl_unavailable"] = str(exc)
    funcs.update(_controller_ticks(tree, q, target))
    funcs.update(_limits_peer_ticks(tree, scene, q, out, stack))
    return funcs, target


PACED_PERIOD = 0.004
"""[s] The paced ticks' period: config/panda.yaml's control rate, 250 Hz."""


def _paced(
    funcs: dict[str, Callable[[], Any] | TimedElsewhere], hot: dict[str, float], number: int
) -> dict[str, Any]:
    """The moving ticks, the node's and KDL's, each after a sleep of :data:`PACED_PERIOD`.

    As a node ticks at its control rate (:func:`~itasc_bench.harness.time_paced`), beside
    their times back to back (``hot``, [s]): ``*_us`` [us], ``ratio_vs_pykdl``, and each
    one's ``*_vs_back_to_back`` (how much slower a tick is at that pace).
    """
    node, kdl = funcs["controller_node_tick_moving"], funcs["pykdl_moving"]
    if isinstance(node, TimedElsewhere) or isinstance(kdl, TimedElsewhere):
        raise TypeError("the moving ticks are timed in this process")
    paced = time_paced({"node": node, "kdl": kdl}, PACED_PERIOD, max(20, min(300, number)))
    return {
        "period_ms": 1e3 * PACED_PERIOD,
        "node_tick_moving_us": 1e6 * paced["node"],
        "pykdl_moving_us": 1e6 * paced["kdl"],
        "ratio_vs_pykdl": paced["node"] / paced["kdl"],
        "node_tick_moving_vs_back_to_back": paced["node"] / hot["controller_node_tick_moving"],
        "pykdl_moving_vs_back_to_back": paced["kdl"] / hot["pykdl_moving"],
    }


def _kdl_moving(kdl: KdlPeer, q: np.ndarray, target: np.ndarray) -> Callable[[], Any]:
    """KDL's tick on the moving ticks' path: the circling target, joints that follow it."""
    joints, ticks = [q.copy()], [0]
    pose = target.copy()

    def tick() -> Any:
        pose[:3, 3] = _circling(target, ticks[0])
        qdot = kdl.tick(joints[0], pose, 20.0)
        joints[0] = joints[0] + qdot * 0.001
        ticks[0] += 1
        return qdot

    return tick


def _panda_row(t: dict[str, float], out: dict[str, Any]) -> dict[str, Any]:
    """The Panda's row from the times per call [s]; the summary figures also into ``out``."""
    row: dict[str, Any] = {f"{k}_us": v * 1e6 for k, v in t.items()}
    row["journal_overhead_us"] = (t["controller_journaled"] - t["controller"]) * 1e6
    out["journal_overhead_us"] = row["journal_overhead_us"]
    row["motion_limits_overhead_us"] = (t["controller_limited"] - t["controller"]) * 1e6
    out["motion_limits_overhead_us"] = row["motion_limits_overhead_us"]
    out["live_gain_change_us"] = row["live_gain_change_us"]
    out["node_tick_us"] = row["controller_node_tick_us"]
    if "pykdl" in t:
        row["node_tick_ratio_vs_pykdl"] = t["controller_node_tick"] / t["pykdl"]
        out["node_tick_ratio_vs_pykdl"] = row["node_tick_ratio_vs_pykdl"]
        row["ratio_vs_pykdl"] = t["itasc_ros"] / t["pykdl"]
        row["with_target_ratio_vs_pykdl"] = t["itasc_ros_with_target"] / t["pykdl"]
        out["tick_ratio_vs_pykdl"] = row["ratio_vs_pykdl"]
        out["tick_with_target_ratio_vs_pykdl"] = row["with_target_ratio_vs_pykdl"]
        row["node_tick_moving_ratio_vs_pykdl"] = (
            t["controller_node_tick_moving"] / t["pykdl_moving"]
        )
        out["node_tick_moving_ratio_vs_pykdl"] = row["node_tick_moving_ratio_vs_pykdl"]
    for peer in ("placo", "drake"):
        if peer in t:
            row[f"ratio_vs_{peer}"] = t["itasc_ros"] / t[peer]
            out[f"tick_ratio_vs_{peer}"] = row[f"ratio_vs_{peer}"]
    return row


@contextlib.contextmanager
def _dispatchers_wrapped(
    package: str, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]
) -> Iterator[None]:
    """Every numba dispatcher bound to a module-level name of ``package``, wrapped by ``wrap``.

    A dispatcher held elsewhere (in a class or a container) is not; all are restored on exit.
    """
    from numba.core.registry import CPUDispatcher

    patched: list[tuple[Any, str, Any]] = []
    for mod in list(sys.modules.values()):
        if not getattr(mod, "__name__", "").startswith(package):
            continue
        for attr, value in list(vars(mod).items()):
            if isinstance(value, CPUDispatcher):
                setattr(mod, attr, wrap(value))
                patched.append((mod, attr, value))
    try:
        yield
    finally:
        for mod, attr, value in patched:
            setattr(mod, attr, value)


def calls_per_call(
    make: Callable[[], Callable[[], Any]], package: str, n: int = 200, settle: int = 3000
) -> dict[str, float]:
    """The compiled (numba) calls and the Python calls one call of ``make()`` makes.

    The compiled calls are counted through :func:`_dispatchers_wrapped` over ``n`` calls of a
    function made inside it (its compiled calls are resolved as it is made: a controller
    calls some of them without numba's dispatch); the Python calls by a profile hook over
    ``n`` calls of another, without the function itself; each after ``settle`` calls.

    Returns:
        ``compiled``, ``python``: calls per call of the function made.
    """
    counted = [0]

    def counting(kernel: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any) -> Any:
            counted[0] += 1
            return kernel(*args)

        return wrapper

    with _dispatchers_wrapped(package, counting):
        func = make()
        for _ in range(settle):  # its first calls (a controller's first approach), not counted
            func()
        counted[0] = 0
        for _ in range(n):
            func()
    func = make()
    for _ in range(settle):
        func()
    calls = [0]

    def hook(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            calls[0] += 1

    sys.setprofile(hook)
    try:
        for _ in range(n):
            func()
    finally:
        sys.setprofile(None)
    return {"compiled": counted[0] / n, "python": calls[0] / n - 1.0}


def bench_tick(number: int, repeats: int) -> dict[str, Any]:
    """One control tick: ours (scene.solve) vs KDL FK + wdls velocity IK, PlaCo and Drake.

    Args:
        number: Calls per timing block.
        repeats: Timing blocks (median taken).

    Returns:
        The summary figures, then the rows ``panda``, ``priorities`` and (where
        example-robot-data is installed) ``talos``; times in [us per call]; the node's tick's
        compiled and Python calls per tick (``node_tick_calls``) and where its time goes
        (``node_tick_parts``: :func:`bench_node_tick_parts`); with PyKDL,
        ``node_tick_compiled_ratio_vs_pykdl``: the node's tick's ratio to PyKDL's times the
        share of it in compiled calls (what the ratio would be with no Python in the tick);
        and ``paced``: the moving ticks, the node's and KDL's, made once per period of a
        250 Hz node (:func:`_paced`), ``node_tick_paced_ratio_vs_pykdl``.
    """
    out: dict[str, Any] = {}
    xml = robot_urdf("panda").read_text()
    tree = KinematicTree.from_urdf(xml)
    q = np.array(HOME_POSES["panda"])
    with contextlib.ExitStack() as stack:  # PlaCo's worker ends with the Panda's timing
        funcs, target = _panda_ticks(xml, tree, q, out, stack)
        t = time_interleaved(funcs, number, repeats)
    out["panda"] = _panda_row(t, out)
    if "pykdl_moving" in funcs:
        out["paced"] = _paced(funcs, t, number)
        out["node_tick_paced_ratio_vs_pykdl"] = out["paced"]["ratio_vs_pykdl"]
    limited = _node_tick_configs()[1]
    out["node_tick_calls"] = calls_per_call(
        lambda: _controller_tick(tree, limited, Journal(), q, target), "itasc_ros"
    )
    parts = out["node_tick_parts"] = bench_node_tick_parts(tree, q, target, number, repeats)
    if "node_tick_ratio_vs_pykdl" in out:  # the compiled calls' share of it: no Python at all
        out["node_tick_compiled_ratio_vs_pykdl"] = (
            parts["compiled_share"] * out["node_tick_ratio_vs_pykdl"]
        )
    out["priorities"] = bench_priorities(tree, q, target, number, repeats)
    talos = erd_urdf(TALOS_URDF)
    if talos is not None:
        out["talos"] = _talos_tick(talos, number, repeats)
    return out


def _talos_tick(urdf: Path, number: int, repeats: int) -> dict[str, Any]:
    """Talos (all joints) with a CopyPose on each hand and foot (24 rows)."""
    tt = KinematicTree.from_urdf(urdf.read_text())
    qt = tt.neutral()
    cons = []
    for link in ("arm_left_7_link", "arm_right_7_link", "leg_left_6_link", "leg_right_6_link"):
        cc = CopyPose(link, link)
        cc.set_target(tt.forward_kinematics(qt + 0.02, link))
        cons.append(cc)
    st = Scene(tt, cons)
    tt_t = time_interleaved(
        {"itasc_ros": lambda: st.solve(qt, 0.002)}, max(10, number // 4), repeats
    )
    return {
        "itasc_ros_us": tt_t["itasc_ros"] * 1e6,
        "joints": tt.n_joints,
        "constraints": 4,
        "rows": 24,
    }


def bench_priorities(
    tree: KinematicTree, q: Any, target: Any, number: int, repeats: int
) -> dict[str, Any]:
    """The Panda's tick with a pose (6 rows) and a posture (7 rows): one level vs two.

    The same rows, blended by weights in one level, or the posture at priority 2 (in the null
    space of the pose); interleaved medians.
    """
    scenes = {}
    for name, prio in (("one_level", 1), ("two_levels", 2)):
        ee = CopyPose("ee", "panda_link8", gain=20.0)
        ee.set_target(target)
        posture = JointValue("posture", tree.joint_names, tree.neutral(), gain=2.0)
        posture.set_priority(prio)
        scenes[name] = Scene(tree, [ee, posture])
    funcs: dict[str, Callable[[], Any]] = {
        k: functools.partial(sc.solve, q, 0.002) for k, sc in scenes.items()
    }
    t = time_interleaved(funcs, number, repeats)
    return {
        "one_level_us": t["one_level"] * 1e6,
        "two_levels_us": t["two_levels"] * 1e6,
        "ratio_two_vs_one_level": t["two_levels"] / t["one_level"],
    }


def tick_command(args: argparse.Namespace) -> dict[str, Any]:
    """Run and print ``itasc-bench tick`` (``args.number // 2`` calls per block).

    Args:
        args: The parsed command line (``number``, ``repeats``).

    Returns:
        The figures for the JSON line.
    """
    r = bench_tick(args.number // 2, args.repeats)
    print_table("control tick [us per call, median]", r)
    out: dict[str, Any] = {"tick": r}
    for key in (
        "node_tick_ratio_vs_pykdl",
        "node_tick_moving_ratio_vs_pykdl",
        "node_tick_paced_ratio_vs_pykdl",
        "node_tick_compiled_ratio_vs_pykdl",
        "tick_ratio_vs_pykdl",
        "tick_ratio_vs_placo",
        "tick_ratio_vs_drake",
    ):
        if key in r:
            out[key] = r[key]
    return out


__all__ = ["bench_node_tick_parts", "bench_priorities", "bench_tick", "tick_command"]
