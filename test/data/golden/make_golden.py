"""Make the golden bag ``panda_circle.mcap``: the Panda tracking a circle, simulated offline.

Regenerate (from the repository root; only after a deliberate change of the solver's output)::

    .venv/bin/python test/data/golden/make_golden.py

The loop is simulated in Python, deterministically, without DDS: every tick of
``1 / control_rate`` the :class:`~itasc_ros.tools.sim_robot.SimulatedJoints` integrate the last
command and publish a joint state, the target generator gives a pose on a circle (radius
0.1 m, 0.25 m/s, around the home tip position, as ``itasc_ros.core.scenarios``) and, for the
first 0.9 s, its twist (afterwards the controller estimates the twist from the poses), and a
:class:`~itasc_ros.core.Controller` built from config/panda.yaml (control_rate 100 Hz to keep
the file small) computes the command. At 1.8 s a parameter event switches
``constraints.ee.feedforward`` off, as a ``SetParameters`` call on the node would. Every message
is written with bagio in the order the controller saw it (joint state, pose, twist, parameter
event, command, the node's journal of the tick: 1 us apart), with the node's parameters on
``/itasc_node/parameters`` (revision 0, and 1 after the switch) as the node publishes them.

``test/tools/test_replay.py`` replays the bag with ``itasc-replay --compare``: any change of the
commands the controller computes from these inputs beyond 1e-12 rad/s makes it fail.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import json  # noqa: E402

from itasc_ros.core import Controller, KinematicTree  # noqa: E402
from itasc_ros.core.control.journal import Journal, urdf_tag  # noqa: E402
from itasc_ros.core.control.model_manager import urdf_digest  # noqa: E402
from itasc_ros.core.kinematics import spatial  # noqa: E402
from itasc_ros.core.paths import path_point  # noqa: E402
from itasc_ros.params import config_from_parameters, read_params_file  # noqa: E402
from itasc_ros.tools.bagio import (  # noqa: E402
    BagWriter,
    default_typestore,
    float64_multi_array_msg,
    joint_state_msg,
    pose_stamped_msg,
    time_msg,
    twist_stamped_msg,
)
from itasc_ros.tools.replay import (  # noqa: E402
    PARAMETER_EVENTS_TOPIC,
    bag_seconds,
    header_seconds,
)
from itasc_ros.tools.sim_robot import SimulatedJoints  # noqa: E402

OUT = HERE / "panda_circle.mcap"
CONTROL_RATE = 100.0  # [Hz]
DURATION = 2.6  # [s]
ESTIMATE_AT = 0.9  # [s] no more twist messages from here: the node estimates the twist
SWITCH_AT = 1.8  # [s] feed-forward off from here
RADIUS = 0.1  # [m]
SPEED = 0.25  # [m/s]
T0_NS = 100_000_000_000  # bag time of the first tick [ns]
US = 1000  # [ns]

JOINT_TOPIC = "/joint_states"
POSE_TOPIC = "/itasc_node/target_pose"
TWIST_TOPIC = "/itasc_node/target_twist"
COMMAND_TOPIC = "/forward_velocity_controller/commands"
JOURNAL_TOPIC = "/itasc_node/journal"
PARAMETERS_TOPIC = "/itasc_node/parameters"


def parameters_msg(params: dict[str, object], revision: int) -> object:
    """std_msgs/msg/String of ``~/parameters``: the node's parameters and their revision."""
    text = json.dumps({"node": "/itasc_node", "revision": revision, "parameters": params})
    return default_typestore().types["std_msgs/msg/String"](data=text)


def parameter_event(t_ns: int, name: str, value: bool) -> object:
    """rcl_interfaces/msg/ParameterEvent of /itasc_node changing one bool parameter."""
    types = default_typestore().types
    pv = types["rcl_interfaces/msg/ParameterValue"](
        type=1,
        bool_value=value,
        integer_value=0,
        double_value=0.0,
        string_value="",
        byte_array_value=np.zeros(0, np.uint8),
        bool_array_value=np.zeros(0, bool),
        integer_array_value=np.zeros(0, np.int64),
        double_array_value=np.zeros(0),
        string_array_value=[],
    )
    prm = types["rcl_interfaces/msg/Parameter"](name=name, value=pv)
    return types["rcl_interfaces/msg/ParameterEvent"](
        stamp=time_msg(t_ns),
        node="/itasc_node",
        new_parameters=[],
        changed_parameters=[prm],
        deleted_parameters=[],
    )


def make(out: Path = OUT) -> Path:
    """Write the golden bag to ``out`` (a single .mcap file); returns its path."""
    params = read_params_file(ROOT / "config" / "panda.yaml")
    params.update(control_rate=CONTROL_RATE, urdf_file="panda.urdf")
    config = config_from_parameters(params)
    xml = (ROOT / "urdf" / "panda.urdf").read_text()
    tree = KinematicTree.from_urdf(xml)
    ctrl = Controller(tree, config)
    journal = Journal()
    journal.urdf_tag = urdf_tag(urdf_digest(xml))
    ctrl.attach_journal(journal)
    sim = SimulatedJoints(tree, ctrl.joint_names)
    tip = config.constraints[0].link
    home = tree.forward_kinematics(sim.q, tip)  # (4, 4)
    quat = spatial.matrix_to_quat(home[:3, :3])  # (4,) x, y, z, w
    dt = 1.0 / CONTROL_RATE
    ticks = round(DURATION / dt)
    switch = round(SWITCH_AT / dt)
    estimate = round(ESTIMATE_AT / dt)
    with tempfile.TemporaryDirectory() as tmp:
        bag_dir = Path(tmp) / "golden"
        with BagWriter(bag_dir, "mcap") as bag:
            bag.write(PARAMETERS_TOPIC, T0_NS - 1000 * US, parameters_msg(params, 0))
            for k in range(ticks):
                t_ns = T0_NS + round(k * dt * 1e9)
                if k > 0:
                    sim.step(dt)
                q = sim.q
                bag.write(JOINT_TOPIC, t_ns, joint_state_msg(t_ns, sim.names, q, sim.velocity))
                sec, nsec = divmod(t_ns, 1_000_000_000)
                ctrl.set_joint_state(sim.names, q, bag_seconds(t_ns), header_seconds(sec, nsec))
                p, v = path_point(k * dt, home[:3, 3], RADIUS, SPEED, "circle")
                bag.write(POSE_TOPIC, t_ns + US, pose_stamped_msg(t_ns, "", p, quat))
                ctrl.set_target(
                    "ee", "", p, quat, bag_seconds(t_ns + US), header_seconds(sec, nsec)
                )
                if k < estimate:
                    bag.write(
                        TWIST_TOPIC, t_ns + 2 * US, twist_stamped_msg(t_ns, "", v, (0.0, 0.0, 0.0))
                    )
                    ctrl.set_target_twist(
                        "ee", "", np.concatenate([v, np.zeros(3)]), bag_seconds(t_ns + 2 * US)
                    )
                if k == switch:
                    bag.write(
                        PARAMETER_EVENTS_TOPIC,
                        t_ns + 3 * US,
                        parameter_event(t_ns + 3 * US, "constraints.ee.feedforward", False),
                    )
                    ctrl.update_parameters(**{"constraints.ee.feedforward": False})
                    params["constraints.ee.feedforward"] = False
                    bag.write(PARAMETERS_TOPIC, t_ns + 4 * US, parameters_msg(params, 1))
                    journal.parameters(1)
                step = ctrl.step(bag_seconds(t_ns + 5 * US))
                if step.publish:
                    bag.write(COMMAND_TOPIC, t_ns + 5 * US, float64_multi_array_msg(step.qdot))
                    sim.apply(step.qdot)
                data = journal.take()
                bag.write(JOURNAL_TOPIC, t_ns + 6 * US, float64_multi_array_msg(data))
        mcap = next(bag_dir.glob("*.mcap"))
        shutil.copyfile(mcap, out)
    return out


if __name__ == "__main__":
    path = make()
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")
