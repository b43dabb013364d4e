"""``itasc-bench``: speed and tracking figures, side by side with the peers in the same run.

Subcommands (``--json`` prints one JSON object on the last line):

* ``kinematics``: FK + tip Jacobian of the Panda (7 DOF) and of Talos (all joints): itasc_ros,
  Orocos KDL (PyKDL) and Pinocchio; key ``fk_jac_ratio_vs_pykdl`` (Panda, ours / KDL).
* ``tick``: one full control tick (FK, Jacobian, 6-D CopyPose, damping, limits) of the Panda
  beside KDL's ``ChainFkSolverPos`` + ``ChainIkSolverVel_wdls`` for the same step; key
  ``tick_ratio_vs_pykdl``; with a new target pose set every tick (checked, as KDL's tick takes
  one), ``tick_with_target_ratio_vs_pykdl``. Also a Talos tick with four constraints, and the
  Panda with a pose and a posture at one priority level vs two (``priorities``).
* ``tracking``: a target on a circle (0.1 m, 0.25 m/s) with and without feed-forward.
* ``outliers``: one bad target pose (1e6, 1e12, 1e149 m away, refused; 1 and 3 m, jumps) in a
  50 Hz stream on a circle: the effector's largest deviation from the run without it and the
  time to come back within 1 mm (the controller closed on a perfect velocity robot).
* ``collision``: the collision constraint's distance queries per tick on the Panda (the pairs
  its SRDF leaves in) beside ``pinocchio.computeDistances`` on the same pairs; key
  ``queries_ratio_vs_pinocchio``; and the controller's tick with self-collision on.
* ``loop`` / ``soak``: the node at 1 kHz with the simulated robot over DDS.
* ``ik``: position IK on the TRAC-IK protocol (random reachable targets, mid-range or random
  seed, 5 ms, every pose error component <= 1e-5) beside TRAC-IK (pytracik) and KDL's
  ``ChainIkSolverPos_NR_JL``, interleaved per sample, on the Panda, the UR5 and the xArm7
  (:mod:`itasc_ros.bench.ik`); ``--samples`` targets per row; the last line of ``--json`` is
  ``{"results": [{"solver", "robot", "seed", "samples", "success_rate", "mean_ms"}, ...]}``.
* ``all``: kinematics, tick and tracking.

Timing: each implementation runs ``--number`` calls per block, blocks interleaved between the
implementations (so machine load hits all of them alike), ``--repeats`` blocks; the figure is
the median per-call time over blocks. Ratios are ours / peer (< 1: we are faster).
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import math
import statistics
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ..cli import CliParser, positive_float, positive_int, run_cli, unknown_choice
from ..core import CopyPose, JointValue, KinematicTree, Scene
from ..tools.resources import robot_urdf, share_file
from .harness import control_rate, erd_urdf, loop_robots, time_interleaved

PROG = "itasc-bench"
PANDA_HOME = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]


def _peers() -> tuple[Any, Any]:
    from . import peers

    kdl = pin = None
    try:
        kdl = peers.KdlPeer
    except Exception:  # pragma: no cover
        kdl = None
    try:
        peers._import_pinocchio()
        pin = peers.PinocchioPeer
    except Exception:
        pin = None
    return kdl, pin


def bench_kinematics(number: int, repeats: int) -> dict[str, Any]:
    """FK + tip Jacobian: Panda and Talos, ours vs PyKDL vs Pinocchio."""
    from .peers import PeerUnavailable

    kdl_cls, pin_cls = _peers()
    out: dict[str, Any] = {}
    cases = [("panda", robot_urdf("panda"), "panda_link0", "panda_link8")]
    talos = erd_urdf("talos_data/robots/talos_full_v2.urdf")
    if talos is not None:
        cases.append(("talos", talos, "base_link", "arm_right_7_link"))
    for name, path, root, tip in cases:
        xml = path.read_text()
        tree = KinematicTree.from_urdf(xml)
        rng = np.random.default_rng(0)
        q = tree.random_configuration(rng)
        idx = tree.link_index(tip)
        jac = np.empty((6, tree.n_joints))

        def ours(
            tree: KinematicTree = tree, q: np.ndarray = q, idx: int = idx, jac: np.ndarray = jac
        ) -> None:
            tree.compute(q)
            tree.jacobian_into(idx, jac)

        funcs: dict[str, Callable[[], Any]] = {"itasc_ros": ours}
        notes = [f"itasc_ros: all {tree.n_joints} joints, every link pose + {tip} Jacobian"]
        try:
            kdl = kdl_cls(xml, root, tip)
            qk = np.array([q[tree.joint_index(j)] for j in kdl.joint_names])
            funcs["pykdl"] = functools.partial(kdl.fk_jac, qk)
            notes.append(f"pykdl: chain {root}->{tip} ({kdl.n} joints)")
        except (PeerUnavailable, TypeError) as exc:
            notes.append(f"pykdl unavailable: {exc}")
        if pin_cls is not None:
            pp = pin_cls(xml, tip)
            qp = np.array([q[tree.joint_index(j)] for j in pp.joint_names])
            funcs["pinocchio"] = functools.partial(pp.fk_jac, qp)
            notes.append(f"pinocchio: whole model, chain joints set ({pp.n})")
        t = time_interleaved(funcs, number, repeats)
        row: dict[str, Any] = {f"{k}_us": v * 1e6 for k, v in t.items()}
        if "pykdl" in t:
            row["ratio_vs_pykdl"] = t["itasc_ros"] / t["pykdl"]
        if "pinocchio" in t:
            row["ratio_vs_pinocchio"] = t["itasc_ros"] / t["pinocchio"]
        row["notes"] = notes
        out[name] = row
    if "ratio_vs_pykdl" in out.get("panda", {}):
        out["fk_jac_ratio_vs_pykdl"] = out["panda"]["ratio_vs_pykdl"]
    return out


def _controller_ticks(
    tree: KinematicTree, q: np.ndarray, target: np.ndarray
) -> dict[str, Callable[[], Any]]:
    """The node's tick in the core: joint state, target pose, step; without and with a journal.

    ``controller_journaled`` records every call into a journal emptied every 10 ticks, as the
    node does while ``~/journal`` is subscribed at 1 kHz; ``controller_limited`` applies
    Franka's acceleration and jerk limits (config/panda.yaml's ``joint_limits``).
    """
    from ..core import ConstraintConfig, Controller, ControllerConfig
    from ..core.control.journal import Journal
    from ..core.kinematics.spatial import matrix_to_quat
    from ..params import load_config

    config = ControllerConfig(
        constraints=[ConstraintConfig("ee", "copy_pose", link="panda_link8")], control_rate=1000.0
    )
    limited = copy.deepcopy(config)  # with Franka's acceleration and jerk limits
    limited.joint_limits = load_config(share_file("config", "panda.yaml")).joint_limits
    p, quat = target[:3, 3].copy(), matrix_to_quat(target)
    names = tree.joint_names
    funcs: dict[str, Callable[[], Any]] = {}
    for name, journal, cfg in (
        ("controller", None, config),
        ("controller_journaled", Journal(), config),
        ("controller_limited", None, limited),
    ):
        ctrl = Controller(tree, cfg)
        ctrl.attach_journal(journal)
        clock = [1000.0]

        def tick(ctrl: Controller = ctrl, clock: list[float] = clock) -> Any:
            clock[0] += 0.001
            now = clock[0]
            ctrl.set_joint_state(names, q, now, now)
            ctrl.set_target("ee", "", p, quat, now, now)
            out = ctrl.step(now)
            j = ctrl.journal
            if j is not None and j.size > 2000:
                j.take()
            return out

        funcs[name] = tick
    return funcs


def bench_tick(number: int, repeats: int) -> dict[str, Any]:
    """One control tick: ours (scene.solve) vs KDL FK + wdls velocity IK."""
    from .peers import PeerUnavailable

    kdl_cls, _ = _peers()
    out: dict[str, Any] = {}
    xml = robot_urdf("panda").read_text()
    tree = KinematicTree.from_urdf(xml)
    q = np.array(PANDA_HOME)
    c = CopyPose("ee", "panda_link8", gain=20.0)
    target = tree.forward_kinematics(q + 0.05, "panda_link8")
    c.set_target(target)
    scene = Scene(tree, [c])

    def closed_loop() -> Any:  # a new target every tick, as KDL's tick takes one
        c.set_target(target)
        return scene.solve(q, 0.002)

    funcs: dict[str, Callable[[], Any]] = {
        "itasc_ros": lambda: scene.solve(q, 0.002),
        "itasc_ros_with_target": closed_loop,
    }
    try:
        kdl = kdl_cls(xml, "panda_link0", "panda_link8", lam=0.1)
        funcs["pykdl"] = lambda: kdl.tick(q, target, 20.0)
    except (PeerUnavailable, TypeError) as exc:
        out["pykdl_unavailable"] = str(exc)
    funcs.update(_controller_ticks(tree, q, target))
    t = time_interleaved(funcs, number, repeats)
    row: dict[str, Any] = {f"{k}_us": v * 1e6 for k, v in t.items()}
    row["journal_overhead_us"] = (t["controller_journaled"] - t["controller"]) * 1e6
    out["journal_overhead_us"] = row["journal_overhead_us"]
    row["motion_limits_overhead_us"] = (t["controller_limited"] - t["controller"]) * 1e6
    out["motion_limits_overhead_us"] = row["motion_limits_overhead_us"]
    if "pykdl" in t:
        row["ratio_vs_pykdl"] = t["itasc_ros"] / t["pykdl"]
        row["with_target_ratio_vs_pykdl"] = t["itasc_ros_with_target"] / t["pykdl"]
        out["tick_ratio_vs_pykdl"] = row["ratio_vs_pykdl"]
        out["tick_with_target_ratio_vs_pykdl"] = row["with_target_ratio_vs_pykdl"]
    out["panda"] = row
    out["priorities"] = bench_priorities(tree, q, target, number, repeats)
    talos = erd_urdf("talos_data/robots/talos_full_v2.urdf")
    if talos is not None:
        tt = KinematicTree.from_urdf(talos.read_text())
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
        out["talos"] = {
            "itasc_ros_us": tt_t["itasc_ros"] * 1e6,
            "joints": tt.n_joints,
            "constraints": 4,
            "rows": 24,
        }
    return out


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


def bench_tracking() -> dict[str, Any]:
    """Circle tracking with and without feed-forward (the demo's scenario, same parameters)."""
    from ..core import scenarios

    xml = robot_urdf("panda").read_text()
    tree = KinematicTree.from_urdf(xml)
    out: dict[str, Any] = {}
    for shape in ("circle", "figure8"):
        home = np.array(PANDA_HOME)
        ff = scenarios.circle_tracking(tree, "panda_hand", home, True, shape=shape)
        fb = scenarios.circle_tracking(tree, "panda_hand", home, False, shape=shape)
        out[shape] = {"feedforward": ff, "feedback_only": fb}
    out["tracking_error_feedforward_m"] = out["circle"]["feedforward"]["rms_error_m"]
    out["tracking_error_feedback_only_m"] = out["circle"]["feedback_only"]["rms_error_m"]
    return out


OUTLIER_POSITIONS = {  # name -> the outlier's position in the root frame [m]
    "1e6 m": (1e6, 0.0, 0.5),
    "1e12 m": (1e12, 0.0, 0.5),
    "1e149 m": (1e149, 0.0, 0.5),
    "3 m": (3.0, 0.0, 0.5),
    "1 m": (1.0, 0.0, 0.5),
}


def bench_outliers() -> dict[str, Any]:
    """One outlier pose at t = 1.01 s in a 50 Hz circle stream (Panda, config/panda.yaml)."""
    from ..core import scenarios
    from ..params import load_config

    tree = KinematicTree.from_urdf(robot_urdf("panda").read_text())
    config = load_config(share_file("config", "panda.yaml"))
    out: dict[str, Any] = {}
    for name, position in OUTLIER_POSITIONS.items():
        bad = [scenarios.HostileInput(1.01, "pose", position)]
        r = scenarios.stream_with_hostile_inputs(tree, config, PANDA_HOME, bad, duration=10.0)
        out[name] = {k: v for k, v in r.items() if k not in ("t", "deviation_m")}
    return out


def _print_table(title: str, rows: dict[str, Any]) -> None:
    print(f"\n== {title}")
    for k, v in rows.items():
        if isinstance(v, dict):
            cells = ", ".join(
                f"{kk}={vv:.3g}" if isinstance(vv, float) else f"{kk}={vv}"
                for kk, vv in v.items()
                if kk != "notes"
            )
            print(f"  {k:>10}: {cells}")
            for n in v.get("notes", []):
                print(f"              {n}")
        else:
            print(f"  {k}: {v:.4g}" if isinstance(v, float) else f"  {k}: {v}")


#: ``--floor``: the node that does no kinematics (same topics, QoS, executor).
FLOOR_MODULE = "itasc_ros.bench.floor_node"
#: ``--floor``: the figures reported for the floor and as node / floor ratios.
FLOOR_KEYS = (
    "achieved_rate_hz",
    "missed_tick_fraction",
    "publish_missed_tick_fraction",
    "latency_p50_ms",
    "latency_p99_ms",
    "node_cpu_percent",
    "joint_state_missed_tick_fraction",
)
#: ``--runs``: figures added up over the runs instead of their median.
SUMMED_KEYS = ("commands_out_of_limits", "commands_received", "joint_states_received")
#: ``--runs``: further figures listed run by run.
RUN_KEYS = ("period_error_max_ms", "delivery_p99_ms", "commands_out_of_limits", "steal_percent")


def median_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One result from several runs: medians, sums of :data:`SUMMED_KEYS`, values in ``runs``.

    A single run is returned as it is (no ``runs`` key).
    """
    if len(runs) == 1:
        return dict(runs[0])
    out: dict[str, Any] = {}
    for k, v in runs[0].items():
        if isinstance(v, bool) or not isinstance(v, int | float):
            out[k] = v
        elif k in SUMMED_KEYS:  # a bad command in any run must show
            out[k] = sum(r[k] for r in runs)
        else:
            out[k] = float(statistics.median(float(r[k]) for r in runs))
    out["runs"] = {k: [r[k] for r in runs] for k in (*FLOOR_KEYS, *RUN_KEYS) if k in runs[0]}
    return out


def floor_comparison(nodes: list[dict[str, Any]], floors: list[dict[str, Any]]) -> dict[str, Any]:
    """``floor_<key>`` (median over the runs) and ``<key>_vs_floor`` for :data:`FLOOR_KEYS`.

    The ratio is the median of the runs' node / floor ratios (each run beside the floor run that
    followed it), so that a change of the machine's state between pairs of runs cancels out.
    """
    out: dict[str, Any] = {}
    for k in FLOOR_KEYS:
        out[f"floor_{k}"] = float(statistics.median(float(f[k]) for f in floors))
        ratios = [n[k] / f[k] if f[k] else math.inf for n, f in zip(nodes, floors, strict=True)]
        out[f"{k}_vs_floor"] = float(statistics.median(ratios))
        if len(floors) > 1:
            out[f"floor_runs_{k}"] = [f[k] for f in floors]
    return out


def peer_comparison(
    runs: list[dict[str, Any]], others: list[dict[str, Any]], name: str, other: str
) -> dict[str, Any]:
    """``<name>_<key>`` (median) and ``<key>_<name>_vs_<other>`` (median of the pairs' ratios).

    Each run is paired with the run of ``others`` made just before it (interleaved runs).
    """
    out: dict[str, Any] = {}
    for k in FLOOR_KEYS:
        out[f"{name}_{k}"] = float(statistics.median(float(r[k]) for r in runs))
        ratios = [r[k] / o[k] if o[k] else math.inf for r, o in zip(runs, others, strict=True)]
        out[f"{k}_{name}_vs_{other}"] = float(statistics.median(ratios))
    out[f"{name}_messages"] = [r.get("journal_messages", 0) for r in runs]
    return out


IK_ROW_KEYS = ("solver", "robot", "seed", "samples", "success_rate", "mean_ms")
"""The keys of each row of the ``ik`` subcommand's JSON line."""


def _main_ik(args: argparse.Namespace) -> int:
    from .ik import bench_ik, print_ik_table

    r = bench_ik(args.samples, args.robots)
    print_ik_table(r)
    if args.json:
        rows = [{k: row[k] for k in IK_ROW_KEYS} for row in r["results"]]
        print(json.dumps({"results": rows}, default=float))
    return 0


#: The subcommands of ``itasc-bench``.
SUBCOMMANDS = (
    "kinematics",
    "tick",
    "tracking",
    "outliers",
    "collision",
    "ik",
    "loop",
    "soak",
    "all",
)


def ik_robot_list(text: str) -> list[str]:
    """``--robots``: comma-separated names of :data:`~itasc_ros.bench.ik.IK_ROBOTS`."""
    from .ik import IK_ROBOTS

    robots = [r.strip() for r in text.split(",") if r.strip()]
    for r in robots:
        if r not in IK_ROBOTS:
            raise argparse.ArgumentTypeError(unknown_choice("robot", r, IK_ROBOTS))
    if not robots:
        raise argparse.ArgumentTypeError(f"no robot in {text!r}; valid: {', '.join(IK_ROBOTS)}")
    return robots


def _parser() -> CliParser:
    ap = CliParser(prog=PROG, description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("what", choices=SUBCOMMANDS)
    ap.add_argument("--json", action="store_true", help="print one JSON object on the last line")
    ap.add_argument("--number", type=positive_int, default=2000, help="calls per timing block")
    ap.add_argument(
        "--repeats", type=positive_int, default=15, help="timing blocks (median taken)"
    )
    ap.add_argument(
        "--samples", type=positive_int, default=1000, help="ik: targets per robot and seed kind"
    )
    ap.add_argument(
        "--robots",
        type=ik_robot_list,
        default="panda,ur5,xarm7",
        help="ik: comma-separated robots (panda, ur5, xarm7)",
    )
    ap.add_argument(
        "--rate", type=control_rate, default=1000.0, help="loop/soak: control rate [Hz]"
    )
    ap.add_argument(
        "--duration",
        type=positive_float,
        default=None,
        help="loop/soak duration [s] (default 60 / 600)",
    )
    ap.add_argument("--robot", default="panda", choices=loop_robots(), help="loop/soak: robot")
    ap.add_argument(
        "--trigger",
        default="timer",
        choices=["timer", "joint_states"],
        help="loop/soak: the node's control_trigger",
    )
    ap.add_argument(
        "--realtime",
        action="store_true",
        help="loop/soak: SCHED_FIFO priorities, a CPU of its own for the node",
    )
    _add_loop_flags(ap)
    return ap


def _add_loop_flags(ap: CliParser) -> None:
    ap.add_argument(
        "--keep-warm",
        action="store_true",
        help="loop/soak: a SCHED_IDLE busy loop on every CPU (a host with idle=poll)",
    )
    ap.add_argument(
        "--runs",
        type=positive_int,
        default=1,
        help="loop: runs (interleaved with the floor's); medians reported",
    )
    ap.add_argument(
        "--floor",
        action="store_true",
        help="loop: then the same run with itasc_ros.bench.floor_node (no kinematics) as peer",
    )
    ap.add_argument(
        "--journal",
        action="store_true",
        help="loop: then the same run with a subscriber of the node's ~/journal (its cost)",
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``itasc-bench``; a mistake is one line on stderr and exit status 2.

    A loop or soak run that cannot finish (a process died, no command) is one line and exit
    status 1.
    """
    from .loop import BenchError

    try:
        return run_cli(PROG, lambda: _main(argv))
    except BenchError as exc:
        print(f"{PROG}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    if args.what == "ik":
        return _main_ik(args)
    result: dict[str, Any] = {"command": "itasc-bench " + " ".join(argv or sys.argv[1:])}
    if args.what in ("kinematics", "all"):
        r = bench_kinematics(args.number, args.repeats)
        _print_table("FK + tip Jacobian [us per call, median]", r)
        result["kinematics"] = r
        if "fk_jac_ratio_vs_pykdl" in r:
            result["fk_jac_ratio_vs_pykdl"] = r["fk_jac_ratio_vs_pykdl"]
    if args.what in ("tick", "all"):
        r = bench_tick(args.number // 2, args.repeats)
        _print_table("control tick [us per call, median]", r)
        result["tick"] = r
        if "tick_ratio_vs_pykdl" in r:
            result["tick_ratio_vs_pykdl"] = r["tick_ratio_vs_pykdl"]
    if args.what in ("tracking", "all"):
        r = bench_tracking()
        print("\n== tracking (0.1 m, 0.25 m/s, K = 20, dt = 2 ms; steady-state RMS over 2 s)")
        print(
            f"  {'shape':<8} {'feed-forward [mm]':>18} {'feedback only [mm]':>19} {'v/K [mm]':>9}"
        )
        for shape in ("circle", "figure8"):
            ff, fb = r[shape]["feedforward"], r[shape]["feedback_only"]
            ff_mm, fb_mm = ff["rms_error_m"] * 1e3, fb["rms_error_m"] * 1e3
            print(f"  {shape:<8} {ff_mm:>18.4f} {fb_mm:>19.3f} {ff['expected_lag_m'] * 1e3:>9.2f}")
        result["tracking"] = r
        result["tracking_error_feedforward_m"] = r["tracking_error_feedforward_m"]
        result["tracking_error_feedback_only_m"] = r["tracking_error_feedback_only_m"]
    if args.what == "outliers":
        r = bench_outliers()
        print("\n== one outlier pose in a 50 Hz stream (deviation from the run without it)")
        for name, row in r.items():
            at = ", ".join(f"{v * 1e3:.1f}" for v in row["deviation_at_m"].values())
            print(
                f"  {name:>8}: max {row['max_deviation_m'] * 1e3:8.1f} mm, back within 1 mm "
                f"after {row['recovery_s']:.2f} s, at +1/3/5 s [{at}] mm, refused "
                f"{row['rejected']}, jumps {row['jumps']}, largest feed-forward "
                f"{row['max_feedforward_m_s']:.3f} m/s"
            )
        result["outliers"] = r
    if args.what == "collision":
        from .collision import bench_collision

        r = bench_collision(max(10, args.number // 10), args.repeats)
        for label in ("home", "near"):
            _print_table(
                f"collision, Panda {label}, {r['pairs']} pairs [us per call, median]", r[label]
            )
        result["collision"] = r
        result["queries_ratio_vs_pinocchio"] = r["queries_ratio_vs_pinocchio"]
        result["tick_collision_near_us"] = r["tick_collision_near_us"]
    if args.what in ("loop", "soak"):
        from .loop import run_loop_bench

        soak = args.what == "soak"
        duration = args.duration if args.duration is not None else (600.0 if soak else 60.0)
        kw: dict[str, Any] = dict(
            robot=args.robot,
            rate=args.rate,
            duration=duration,
            trigger=args.trigger,
            realtime=args.realtime,
            keep_warm=args.keep_warm,
        )
        runs = 1 if soak else args.runs
        nodes: list[dict[str, Any]] = []
        floors: list[dict[str, Any]] = []
        journaled: list[dict[str, Any]] = []
        for i in range(runs):  # interleaved: node, floor, node, floor, ...
            tag = f" (run {i + 1} of {runs})" if runs > 1 else ""
            r = run_loop_bench(soak=soak, **kw)
            _print_table(f"{args.what}: node at {args.rate:g} Hz for {duration:g} s{tag}", r)
            nodes.append(r)
            if args.floor and not soak:
                f = run_loop_bench(node_module=FLOOR_MODULE, **kw)
                _print_table(f"loop: {FLOOR_MODULE} (the floor) at {args.rate:g} Hz{tag}", f)
                floors.append(f)
            if args.journal and not soak:
                j = run_loop_bench(journal=True, **kw)
                _print_table(f"loop: node with ~/journal subscribed{tag}", j)
                journaled.append(j)
        result.update(median_runs(nodes))
        if journaled:
            result.update(peer_comparison(journaled, nodes, "journal", "without"))
            print(f"\n== node with ~/journal subscribed vs without (medians of {runs} runs)")
            for k in FLOOR_KEYS:
                print(
                    f"  {k}: with {result['journal_' + k]:.4g}, without {result[k]:.4g}, "
                    f"ratio {result[k + '_journal_vs_without']:.3g}"
                )
        if floors:
            result.update(floor_comparison(nodes, floors))
            print(f"\n== node vs floor (medians of {runs} interleaved runs)")
            for k in FLOOR_KEYS:
                print(
                    f"  {k}: node {result[k]:.4g}, floor {result['floor_' + k]:.4g}, "
                    f"ratio {result[k + '_vs_floor']:.3g}"
                )
    if args.json:
        print(json.dumps(result, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
