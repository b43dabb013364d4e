"""``itasc_sim_robot``: a simulated velocity-controlled robot for demos, tests and benchmarks.

It stands in for a robot whose ros2_control runs a ``JointGroupVelocityController`` (or a
``JointTrajectoryController``): it takes joint velocity commands, integrates them at ``rate`` with
the *measured* time step, keeps every joint within its URDF position and velocity limits, and
publishes ``joint_states``. It is how the project tests itself, so it behaves like the real
controller where that matters:

* ``std_msgs/Float64MultiArray`` commands are read in ``joints`` order; a message with the wrong
  length or a non-finite value is dropped with a throttled warning (as ros2_control's forward
  command controller does) and the previous command stays in force.
* The last command is held forever (``command_timeout`` 0, like ros2_control), or replaced by
  zeros when no command arrived for ``command_timeout`` seconds.
* ``trajectory_msgs/JointTrajectory``: the first point's ``velocities`` by joint name; without
  velocities, ``(positions - q) / time_from_start`` computed when the message arrives.
* ``sensor_msgs/JointState``: ``velocity`` by joint name.
  For both named types, joints the message does not name are commanded zero velocity and a name
  the robot does not have rejects the message.
* ``latency`` [s] delays every accepted command before it takes effect; ``noise`` [rad or m] adds
  seeded Gaussian noise to the *published* positions (the integrated state stays exact).

Topics: subscribes ``command_topic`` (reliable, depth 10, as ros2_control's SystemDefaults);
publishes ``joint_states`` (``sensor_msgs/JointState``: stamp, name, position, velocity; reliable,
depth 10, so sensor-data subscribers match too) every tick, and ``~/stats`` (``std_msgs/String``,
JSON, 1 Hz): commands received / rejected / applied, limit clamps, timeouts, achieved rate.

:class:`SimulatedJoints` is the integrator without ROS, for offline use by the demo and tests.

Usage::

    itasc_sim_robot --ros-args -p urdf_file:=urdf/panda.urdf -p rate:=500.0
    python -m itasc_ros.tools.sim_robot --ros-args -p urdf_file:=urdf/ur5.urdf
        -p command_type:=trajectory_msgs/JointTrajectory -p latency:=0.01  (one line)
    itasc_sim_robot --ros-args -p urdf_file:=panda -p rate:=250   # a bundled robot

``urdf_file`` is a path (it ends in ``.urdf`` or has a ``/``) or a bundled robot's name; an
integer is accepted for a double parameter. The ``-p`` values are checked before DDS starts: a
wrong name, type, range, robot or joint is one line on stderr and exit status 2.

Like the other console scripts it does not change the DDS environment; tests and the demo pass
the local shared-memory environment (:mod:`itasc_ros.tools.dds_env`) to it.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Sequence

import rclpy
from rclpy.exceptions import NameValidationException, ParameterException
from rclpy.signals import SignalHandlerOptions

from itasc_ros.cli import UsageError, run_cli
from itasc_ros.core import ItascError
from itasc_ros.ros.executors import make_executor, spin_until
from itasc_ros.ros.ros_args import non_ros_args, param_overrides

from .node import SimRobotNode
from .overrides import check_overrides

PROG = "itasc_sim_robot"


def main(argv: Sequence[str] | None = None) -> int:
    """Console script entry point; returns the exit status (2: a mistake, named on one line)."""
    args = list(sys.argv if argv is None else [PROG, *argv])
    ros_args = args.index("--ros-args") if "--ros-args" in args else len(args)
    if {"-h", "--help"} & set(args[1:ros_args]):  # before rclpy: no DDS
        print(f"usage: {PROG} [-h] [--ros-args -p name:=value ...]\n\n{__doc__}")
        return 0
    return run_cli(PROG, lambda: _main(args))


def _main(args: list[str]) -> int:
    extra = non_ros_args(args)[1:]
    if extra:
        raise UsageError(
            f"unexpected argument {extra[0]!r}; {PROG} takes ROS parameters only: "
            "--ros-args -p urdf_file:=panda -p rate:=500.0 (see --help)"
        )
    check_overrides(param_overrides(args, "itasc_sim_robot"), "--params-file" in args)
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    context = rclpy.Context()
    rclpy.init(args=args, context=context, signal_handler_options=SignalHandlerOptions.NO)
    try:
        _spin(context, stop)
    finally:
        rclpy.try_shutdown(context=context)
    return 0


def _spin(context: rclpy.Context, stop: threading.Event) -> None:
    """Run the node until ``stop``; a bad configuration is a :class:`UsageError`."""
    node: SimRobotNode | None = None
    executor = make_executor(context)
    try:
        try:
            node = SimRobotNode(context=context)
            node.apply_scheduling()
        except (ParameterException, NameValidationException) as exc:
            raise UsageError(str(exc)) from None
        except ItascError:
            raise
        except ValueError as exc:  # a priority or CPU out of range, naming the valid ones
            raise UsageError(str(exc)) from None
        executor.add_node(node)
        node.gc.start()  # start-up objects frozen; collections right after a publish
        spin_until(executor, stop, context)
    finally:
        if node is not None:
            node.stop()
        executor.shutdown()
        if node is not None:
            node.destroy_node()


__all__ = ["PROG", "main"]
