"""One DDS demo run: prepare, start the processes, run the phases while recording, report."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time

from itasc_ros.tools.demo.live import DemoRun
from itasc_ros.tools.demo.prepare import DemoSetup, prepare
from itasc_ros.tools.demo.processes import (
    LOG_NAMES,
    NODE,
    child_env,
    process_commands,
    start_process,
    stop_process,
)
from itasc_ros.tools.demo.report import report
from itasc_ros.tools.demo.tap_writer import TapWriter
from itasc_ros.tools.replay import write_parameters_snapshot
from itasc_ros.tools.warm_cache import warm_node


def run_live(d: DemoSetup, wall0: float) -> None:
    """Start the processes, run the phases while recording, stop everything.

    Args:
        d: the run.
        wall0: monotonic time [s] the demo started (for the start-up time).

    Raises:
        RuntimeError: a process died or did not come up.
    """
    # the node's kernels compiled here first (the first run after an install or an update): the
    # node then loads them at its start instead of compiling beside the robot for minutes
    print("itasc-demo: the node's compiled kernels (compiled once after an install)", flush=True)
    print(f"itasc-demo: kernels ready after {warm_node(d.tree, d.config):.1f} s", flush=True)
    env = child_env(d.domain)
    logs = {name: d.out / log for name, log in LOG_NAMES.items()}
    procs: dict[str, subprocess.Popen[bytes]] = {}
    run: DemoRun | None = None
    writer = TapWriter(d.bag, "mcap", d.setup.joint_topic)
    try:
        writer.open()
        for name, cmd in process_commands(d.urdf, d.params_file, d.cmd_joints, d.physics).items():
            procs[name] = start_process(cmd, env, logs[name])
        run = DemoRun(d.setup, d.tree, d.tip, writer, sys.stdout)
        run.wait_ready(procs, logs)
        write_parameters_snapshot(writer, run.now_ns(), run.fetch_parameters(), NODE)
        t_ready = time.monotonic() - wall0
        print(f"itasc-demo: processes up after {t_ready:.1f} s; running the phases", flush=True)
        run.run_phases(d.phases, d.path, d.config.control_rate)
        # Stop the node first (it sends its zero command), record it, then stop the rest.
        stop_process(procs["node"])
        time.sleep(0.3)
    finally:
        if run is not None:
            run.close()
        writer.close()
        for p in procs.values():
            stop_process(p)


def _robot_line(d: DemoSetup) -> str:
    """What the simulated robot is, for the first line."""
    ph = d.physics
    told = f"the node told {ph.node_lag * 1e3:g} ms" if ph.node_lag else "not told to the node"
    if ph.kind == "ideal":
        return "ideal robot (follows each command exactly)"
    return f"{ph.kind} physics, servos with a {ph.lag * 1e3:g} ms lag ({told})"


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_demo(args: argparse.Namespace) -> int:
    """The DDS demo: prepare, run live, report.

    Returns:
        The exit status: 0 healthy, 1 not healthy or failed, 130 interrupted.

    Raises:
        UsageError: a mistake in the arguments or the environment (see :func:`prepare`).
    """
    wall0 = time.monotonic()
    d = prepare(args)
    print(
        f"itasc-demo: DDS domain {d.domain} ({d.domain_source}; shared memory only); "
        f"{d.tree.name} ({d.tree.n_joints} joints, tip {d.tip}), {len(d.phases)} phases in "
        f"{args.duration:g} s, circle radius {d.path.radius:g} m, control "
        f"{d.config.control_rate:g} Hz, K = {d.gain:g}; {_robot_line(d)}; output {d.out}",
        flush=True,
    )
    signal.signal(signal.SIGTERM, _raise_interrupt)  # stop the processes on SIGTERM too
    try:
        run_live(d, wall0)
    except KeyboardInterrupt:
        print("\nitasc-demo: interrupted", file=sys.stderr)
        return 130
    except RuntimeError as exc:
        print(f"\nitasc-demo: {exc}", file=sys.stderr)
        print("itasc-demo: verdict: NOT healthy: the run did not complete", file=sys.stderr)
        return 1
    return report(d, wall0, time.monotonic() - wall0)


__all__ = ["run_demo", "run_live"]
