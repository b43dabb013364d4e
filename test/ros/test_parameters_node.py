"""itasc_node's parameter services over real DDS: a request is applied whole or refused whole.

One node runs as its own process (the console script's entry point) in the namespace ``/params``,
with the parameters of ``config/panda.yaml`` and the bundled Panda URDF as ``robot_description``;
this process is a static robot at HOME (joint states at 100 Hz) and gives one target, so the node
commands a constant velocity throughout (checked by a :class:`procs.CommandChecker`).

Shown:

* five hostile strings (``position_axes`` ``qqq`` / ``xyzx``, ``rotation_axes`` ``xxz``,
  ``reference`` ``nowhere``, ``solver`` ``svd``) are refused with a reason naming them, the node
  keeps running (same process, no model rebuilt), the values stay as they were and the commands
  go on;
* hypothesis requests of 1-4 parameters drawn from every declared parameter (and a few undeclared
  names), each value of a random ROS type (booleans, integers, doubles with NaN, infinities,
  1e308, -0.0 and values just outside the ranges, strings with the valid choices and garbage,
  byte, boolean, integer, double and string arrays, NOT_SET), sent with
  ``set_parameters_atomically`` or ``set_parameters``: the outcome is the one the documented
  rules give (the oracle below, written from the rules, not by calling the node's validation),
  a refusal has a reason and changes nothing (``get_parameters`` of every declared parameter),
  an accepted request reads back;
* an atomic request naming a parameter twice, once with a bad value, is refused (rclpy checks
  every entry's type and range; the node's own rules must judge every entry too);
* afterwards the node is alive, answers, still tracks the target with the very command of
  before, never published a bad command, and SIGINT ends it with exit code 0 and a clean log.

The oracle (see :func:`broken` and :func:`cross_field`), per parameter: declared; not read-only; a
value of the declared type (an INTEGER sent to a DOUBLE parameter is that DOUBLE, an INTEGER_ARRAY
a DOUBLE_ARRAY, see :func:`coerce`; any other type is refused, and NOT_SET is refused for a
declared parameter: "Static parameter cannot be undeclared"); a number within the declared closed
range (NaN is in no range; rclpy itself lets values within a relative 1e-6 of a bound through, the
node then refuses those outside); ``solver`` one of dls, sdls; ``reference`` one of target,
effector, root; the axes distinct letters of 'xyz' (read case-insensitively by the constraint: 'XZ'
is 'xz'), possibly empty; ``values`` finite numbers within +-1e6; ``robot_description`` empty (a
no-op: the node keeps its model) and never anything else here (every other string sent is garbage,
not a URDF, and must be refused); ``urdf_file`` anything (the URDF came from the parameter, so the
file is not read: accepted and ignored). Across fields: ``damping_epsilon`` 0 with ``damping_max``
> 0, and a copy_pose with neither position nor rotation axes are refused. The node declares only
the settings of the constraint's type (copy_pose): the settings of other types (``distance``,
``values``...) are undeclared here and refused by rclpy. ``set_parameters`` is applied by rclpy one
parameter at a time (each judged on the state the previous ones left);
``set_parameters_atomically`` is accepted iff every parameter is.

Examples are generated (not shrunk: each one talks to a live process) and derandomised.
"""

from __future__ import annotations

import math
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from geometry_msgs.msg import PoseStamped
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from procs import (
    PANDA_URDF,
    REPO,
    CommandChecker,
    RosTestClient,
    StaticRobot,
    allocate_domain,
    client_fixture,
    read_log,
    running,
    start_ros,
    stop_process,
)
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue, SetParametersResult
from rcl_interfaces.srv import (
    DescribeParameters,
    GetParameters,
    ListParameters,
    SetParameters,
    SetParametersAtomically,
)
from rclpy.parameter import Parameter
from test_node import HOME, goal_pose, home_by_name, pose_msg

from itasc_ros.core import JointValue, KinematicTree
from itasc_ros.ros.parameters import NODE_PARAMS, ParamSpec, constraint_specs

pytestmark = pytest.mark.dds

PANDA_YAML = REPO / "config" / "panda.yaml"
DOMAIN = allocate_domain()  # this module's own, held for the session (used at import)
NS = "/params"
NODE = f"{NS}/itasc_node"
COMMANDS = f"{NS}/commands"
TIMEOUT = 60.0  # [s] a hang's bound: a start-up beside six starting nodes took > 15 s
EXAMPLES = 100  # hypothesis examples (each a request, its check and, if accepted, a restore)
PANDA_PARAMS: dict[str, Any] = yaml.safe_load(PANDA_YAML.read_text())["/**"]
PANDA_PARAMS = PANDA_PARAMS["ros__parameters"]  # the node's parameters in config/panda.yaml
JOINTS: list[str] = PANDA_PARAMS["joints"]  # the order of the commands
GOAL = ([0.02, -0.01, 0.015], [0.0, 0.0, 0.0])  # the target: HOME's hand moved by [m], [rad]

T = ParameterType

# =============================================================================== the oracle
Value = tuple[int, Any]
"""A parameter value: (ParameterType, Python value); arrays as tuples, NOT_SET as None."""

SOLVERS = ("dls", "sdls")  # 'solver': damped least squares or selectively damped
REFERENCES = ("target", "effector", "root")  # 'reference': frame of the copy_pose axes
AXES_LETTERS = "xyz"  # distinct letters of 'xyz', either case, possibly empty
# each element of constraints.<name>.values (a joint_value setting: not declared for "ee")
VALUES_RANGE = next((f.lo, f.hi) for f in JointValue.FIELDS if f.name == "values")
CONSTRAINT = "ee"  # the one constraint of config/panda.yaml, a copy_pose
C = f"constraints.{CONSTRAINT}."


@dataclass(frozen=True)
class Rule:
    """What a declared parameter accepts: its type, whether it is read-only, its range."""

    type: int
    read_only: bool
    lo: float | None = None
    hi: float | None = None


def declared_type(default: Any) -> int:
    """The ParameterType of a :class:`ParamSpec` default (a Parameter.Type for empty arrays)."""
    if isinstance(default, Parameter.Type):
        return int(default.value)
    if isinstance(default, bool):
        return T.PARAMETER_BOOL
    if isinstance(default, int):
        return T.PARAMETER_INTEGER
    if isinstance(default, float):
        return T.PARAMETER_DOUBLE
    if isinstance(default, str):
        return T.PARAMETER_STRING
    assert isinstance(default, list) and all(isinstance(s, str) for s in default), default
    return T.PARAMETER_STRING_ARRAY


SPECS: list[ParamSpec] = [*NODE_PARAMS, *constraint_specs(CONSTRAINT, "copy_pose")]
RULES: dict[str, Rule] = {
    s.name: Rule(declared_type(s.default), s.read_only, s.lo, s.hi) for s in SPECS
} | {
    # rclpy's own parameters of every node
    "use_sim_time": Rule(T.PARAMETER_BOOL, False),
    "start_type_description_service": Rule(T.PARAMETER_BOOL, True),
}
DECLARED = sorted(RULES)
WRITABLE = sorted(n for n, r in RULES.items() if not r.read_only)
UNDECLARED = ["solvr", f"{C}typo", "constraints.arm.gain", "constraints", "qos_overrides"]
# Statically typed arrays declared without a value: rclpy's get_parameters answers nothing at all
# for a request naming one that was never set, so these are read one by one (and read as [], as
# the node reads them).
MAYBE_UNSET = sorted(s.name for s in SPECS if isinstance(s.default, Parameter.Type))


def axes_ok(text: str) -> bool:
    """Distinct letters of 'xyz' (either case), possibly none."""
    letters = AXES_LETTERS + AXES_LETTERS.upper()
    low = text.lower() if all(ch in letters for ch in text) else None
    return low is not None and len(set(low)) == len(low)


def coerce(name: str, value: Value) -> Value:
    """``value`` as the node stores it: an integer (array) sent for a double (array) as such."""
    rule = RULES.get(name)
    kind, v = value
    if rule is not None and (kind, rule.type) == (T.PARAMETER_INTEGER, T.PARAMETER_DOUBLE):
        return (T.PARAMETER_DOUBLE, float(v))
    pair = (T.PARAMETER_INTEGER_ARRAY, T.PARAMETER_DOUBLE_ARRAY)
    if rule is not None and (kind, rule.type) == pair:
        return (T.PARAMETER_DOUBLE_ARRAY, tuple(float(x) for x in v))
    return value


def broken(name: str, value: Value) -> str:
    """Why ``name`` may not be set to ``value`` on its own ('' when it may)."""
    rule = RULES.get(name)
    if rule is None:
        return "not declared"
    if rule.read_only:
        return "read-only"
    kind, v = coerce(name, value)
    if kind != rule.type:  # other than an integer for a double: refused; NOT_SET never
        return f"type {kind}, declared {rule.type}"
    numeric = (T.PARAMETER_DOUBLE, T.PARAMETER_INTEGER)
    if kind in numeric and rule.lo is not None and rule.hi is not None:
        if not rule.lo <= v <= rule.hi:  # NaN fails both
            return f"not in [{rule.lo}, {rule.hi}]"
    if name == "solver" and v not in SOLVERS:
        return f"solver not one of {SOLVERS}"
    if name == f"{C}reference" and v not in REFERENCES:
        return f"reference not one of {REFERENCES}"
    if name in (f"{C}position_axes", f"{C}rotation_axes") and not axes_ok(v):
        return "axes not distinct letters of 'xyz'"
    if name == f"{C}values" and not all(VALUES_RANGE[0] <= x <= VALUES_RANGE[1] for x in v):
        return f"values not all in {VALUES_RANGE}"
    if name == "robot_description" and v != "":
        return "not a URDF"  # only garbage is sent; '' keeps the model (accepted, a no-op)
    return ""  # urdf_file: any path, ignored (the URDF came from the robot_description)


def cross_field(state: dict[str, Value]) -> str:
    """Why the configuration ``state`` is invalid as a whole ('' when it is valid)."""
    damping_max, epsilon = state["damping_max"][1], state["damping_epsilon"][1]
    if damping_max > 0.0 and epsilon == 0.0:
        return "damping_epsilon 0 while damping_max > 0"
    if not state[f"{C}position_axes"][1] and not state[f"{C}rotation_axes"][1]:
        return "a copy_pose needs a position or a rotation axis"
    return ""


def refusal(state: dict[str, Value], params: Sequence[tuple[str, Value]]) -> str:
    """Why the atomic request ``params`` on ``state`` must be refused ('' if accepted)."""
    names = [name for name, _ in params]
    for name, value in params:
        if names.count(name) > 1 and name in state:  # rclpy refuses undeclared ones first
            return f"{name}: named more than once in one request"
        why = broken(name, value)
        if why:
            return f"{name}: {why}"
    return cross_field(state | {n: coerce(n, v) for n, v in params})


# ============================================================================ the messages
_FIELDS = {
    T.PARAMETER_BOOL: "bool_value",
    T.PARAMETER_INTEGER: "integer_value",
    T.PARAMETER_DOUBLE: "double_value",
    T.PARAMETER_STRING: "string_value",
    T.PARAMETER_BYTE_ARRAY: "byte_array_value",
    T.PARAMETER_BOOL_ARRAY: "bool_array_value",
    T.PARAMETER_INTEGER_ARRAY: "integer_array_value",
    T.PARAMETER_DOUBLE_ARRAY: "double_array_value",
    T.PARAMETER_STRING_ARRAY: "string_array_value",
}
_ARRAYS = {t for t, f in _FIELDS.items() if f.endswith("_array_value")}


def to_msg(value: Value) -> ParameterValue:
    """A ParameterValue message of ``value``."""
    kind, v = value
    msg = ParameterValue(type=kind)
    if kind == T.PARAMETER_BYTE_ARRAY:
        v = [bytes([b]) for b in v]
    elif kind in _ARRAYS:
        v = list(v)
    if kind in _FIELDS:
        setattr(msg, _FIELDS[kind], v)
    return msg


def from_msg(msg: ParameterValue) -> Value:
    """The :data:`Value` of a ParameterValue message."""
    if msg.type not in _FIELDS:
        return (msg.type, None)
    v = getattr(msg, _FIELDS[msg.type])
    if msg.type == T.PARAMETER_BYTE_ARRAY:
        return (msg.type, tuple(b[0] for b in v))
    return (msg.type, tuple(v) if msg.type in _ARRAYS else v)


def show(params: Sequence[tuple[str, Value]]) -> str:
    """A request, readably (for assertion messages)."""
    names = {t: n[10:] for n, t in vars(T).items() if n.startswith("PARAMETER_")}
    return ", ".join(f"{n}={names.get(k, k)}:{v!r:.80}" for n, (k, v) in params)


# ============================================================================ the node
class ParamServices:
    """Persistent clients of the node's parameter services (one discovery, then ~ms a call)."""

    def __init__(self, client: RosTestClient, node: str) -> None:
        self.client = client
        make = client.node.create_client
        self.get: Any = make(GetParameters, f"{node}/get_parameters")
        self.set: Any = make(SetParameters, f"{node}/set_parameters")
        self.set_atomic: Any = make(SetParametersAtomically, f"{node}/set_parameters_atomically")
        for c in (self.get, self.set, self.set_atomic):
            assert c.wait_for_service(timeout_sec=TIMEOUT), c.srv_name

    def _call(self, srv: Any, request: Any) -> Any:
        future = srv.call_async(request)
        RosTestClient.wait_for(future.done, TIMEOUT, f"the answer of {srv.srv_name}", 0.001)
        return future.result()

    def read(self, names: Sequence[str]) -> list[Value | None]:
        """get_parameters: the values, or None for each name if one was never set."""
        answer = self._call(self.get, GetParameters.Request(names=list(names)))
        if len(answer.values) != len(names):
            return [None] * len(names)
        return [from_msg(v) for v in answer.values]

    def snapshot(self) -> dict[str, Value]:
        """Every declared parameter's value; an array never set reads as [] of its type."""
        batch = [n for n in DECLARED if n not in MAYBE_UNSET]
        values = dict(zip(batch, self.read(batch), strict=True))
        for name in MAYBE_UNSET:
            (values[name],) = self.read([name])
        out: dict[str, Value] = {}
        for name, v in values.items():
            assert v is not None or name in MAYBE_UNSET, f"{name} does not answer"
            out[name] = (RULES[name].type, ()) if v is None else v
        return out

    def set_atomically(self, params: Sequence[tuple[str, Value]]) -> SetParametersResult:
        """set_parameters_atomically: one result for the whole request."""
        request = SetParametersAtomically.Request(
            parameters=[ParameterMsg(name=n, value=to_msg(v)) for n, v in params]
        )
        return self._call(self.set_atomic, request).result

    def set_each(self, params: Sequence[tuple[str, Value]]) -> list[SetParametersResult]:
        """set_parameters: one result per parameter (rclpy applies them one at a time)."""
        request = SetParameters.Request(
            parameters=[ParameterMsg(name=n, value=to_msg(v)) for n, v in params]
        )
        return list(self._call(self.set, request).results)


@dataclass
class NodeUnderTest:
    """The node process, its services, the robot, the checker and the reference state."""

    proc: subprocess.Popen
    services: ParamServices
    robot: StaticRobot
    checker: CommandChecker
    target: Any
    goal: PoseStamped
    original: dict[str, Value]
    baseline: np.ndarray  # (7,) the command tracking GOAL before any parameter request
    accepted: int = 0
    refused: int = 0
    partly: int = 0  # set_parameters requests with some parameters accepted, some refused

    def alive(self) -> str:
        """'' while the process runs, else its exit code and log tail."""
        if self.proc.poll() is None:
            return ""
        return f"node exited with {self.proc.returncode}:\n{read_log(self.proc)[-3000:]}"

    def restore(self) -> None:
        """Set back every parameter that differs from the start (one atomic request)."""
        now = self.services.snapshot()
        changed = [(n, v) for n, v in self.original.items() if now[n] != v]
        if changed:
            result = self.services.set_atomically(changed)
            assert result.successful, f"restore refused: {show(changed)}: {result.reason}"
            assert self.services.snapshot() == self.original

    def commands_flow(self, count: int = 20) -> None:
        """``count`` more commands arrive, the last one the baseline (tracking GOAL as before)."""
        start = self.checker.snapshot()[0]
        RosTestClient.wait_for(
            lambda: self.checker.snapshot()[0] >= start + count, TIMEOUT, f"{count} commands"
        )
        RosTestClient.wait_for(
            lambda: np.allclose(self.checker.last, self.baseline, rtol=1e-6, atol=1e-9),
            TIMEOUT,
            f"the baseline command {self.baseline} (last {self.checker.last})",
        )


def write_params_file(path: Path) -> Path:
    """config/panda.yaml's parameters (its hand task) for any node name, the Panda URDF.

    The file's section is ``itasc_node``, which names only a node in the root namespace.
    """
    params = PANDA_PARAMS | {
        "robot_description": PANDA_URDF.read_text(),
        "command_out_topic": "commands",
        # the hand task alone: the oracle's one constraint (the posture, a joint_value, has
        # its own settings' oracle in the constraint contract test)
        "constraint_names": [CONSTRAINT],
    }
    params["constraints"] = {CONSTRAINT: params["constraints"][CONSTRAINT]}
    path.write_text(yaml.safe_dump({"/**": {"ros__parameters": params}}))
    return path


client = client_fixture(DOMAIN, "itasc_parameters_test_client")


@pytest.fixture(scope="module")
def node(
    client: RosTestClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[NodeUnderTest]:
    """The node commanding a static robot at HOME towards GOAL (one for the module)."""
    tree = KinematicTree.from_urdf_file(PANDA_URDF)
    limits = [tree.velocity_limits[tree.joint_names.index(j)] for j in JOINTS]
    checker = CommandChecker(client, limits, COMMANDS)
    params = write_params_file(tmp_path_factory.mktemp("params") / "panda.yaml")
    proc = start_ros(DOMAIN, ns=NS, params_files=[params], name="itasc_node_params")
    # The last test stops the node with SIGINT; SIGKILL if it still runs after a failure.
    with running(proc, signal.SIGKILL):
        robot = StaticRobot(client, f"{NS}/joint_states", list(home_by_name()), home_by_name())
        target = client.publisher(PoseStamped, f"{NODE}/target_pose")
        try:
            robot.start()
            client.wait_for_subscribers(target, 1, TIMEOUT)
            goal = pose_msg(goal_pose(tree, HOME, *GOAL))
            target.publish(goal)
            client.wait_for(
                lambda: checker.last is not None and np.abs(checker.last).max() > 0.01,
                TIMEOUT,
                "motion commands",
            )
            # The step is approached along a straight line: the baseline is the command once
            # the reference has arrived (then the static robot gets the same command every tick).
            steady: list[np.ndarray] = [np.array(checker.last)]

            def settled() -> bool:
                time.sleep(0.2)
                steady.append(np.array(checker.last))
                return bool(np.allclose(steady[-1], steady[-2], rtol=1e-9, atol=1e-12))

            client.wait_for(settled, TIMEOUT, "a steady command")
            services = ParamServices(client, NODE)
            yield NodeUnderTest(
                proc,
                services,
                robot,
                checker,
                target,
                goal,
                original=services.snapshot(),
                baseline=np.array(checker.last),
            )
        finally:
            robot.close()


# =============================================================================== the tests
def test_the_declared_parameters_are_the_documented_ones(
    client: RosTestClient, node: NodeUnderTest
) -> None:
    """The oracle's premises: the node declares exactly these, with these types and ranges."""
    listed = client.call(ListParameters, f"{NODE}/list_parameters", ListParameters.Request())
    # joint_limits.<joint>.<field>: declared (read-only) for the joints the params file names
    limits = [n for n in listed.result.names if n.startswith("joint_limits.")]
    assert len(limits) == 7 * 6  # Franka's velocity, acceleration and jerk limits per joint
    assert sorted(set(listed.result.names) - set(limits)) == DECLARED
    request = DescribeParameters.Request(names=DECLARED)
    described = client.call(DescribeParameters, f"{NODE}/describe_parameters", request)
    for name, d in zip(DECLARED, described.descriptors, strict=True):
        rule = RULES[name]
        assert (d.name, d.type, d.read_only) == (name, rule.type, rule.read_only)
        bounds = [(r.from_value, r.to_value) for r in [*d.floating_point_range, *d.integer_range]]
        assert bounds == ([] if rule.lo is None else [(rule.lo, rule.hi)]), name
        if rule.type == T.PARAMETER_DOUBLE and not rule.read_only:
            assert bounds, f"{name}: a double without a range"
    original = node.original
    assert original["solver"] == (T.PARAMETER_STRING, "dls")
    assert original["constraint_names"] == (T.PARAMETER_STRING_ARRAY, (CONSTRAINT,))
    assert original[f"{C}type"] == (T.PARAMETER_STRING, "copy_pose")
    assert original["robot_description"] == (T.PARAMETER_STRING, PANDA_URDF.read_text())
    assert cross_field(original) == ""


TYPOS = [
    (f"{C}position_axes", "qqq"),
    (f"{C}position_axes", "xyzx"),
    (f"{C}rotation_axes", "xxz"),
    (f"{C}reference", "nowhere"),
    ("solver", "svd"),
]


@pytest.mark.parametrize(("name", "text"), TYPOS, ids=[f"{n}={v}" for n, v in TYPOS])
def test_the_reported_typos_are_refused_without_a_restart(
    node: NodeUnderTest, name: str, text: str
) -> None:
    services = node.services
    before = services.snapshot()
    assert before == node.original
    models = read_log(node.proc).count("model 'panda' from the parameter")
    request = [(name, (T.PARAMETER_STRING, text))]
    assert refusal(before, request)  # the oracle agrees
    (each,) = services.set_each(request)  # as `ros2 param set` does
    atomic = services.set_atomically(request)
    for result in (each, atomic):
        assert not result.successful
        assert f"'{text}'" in result.reason, result.reason  # the reason names the value
    assert node.alive() == ""
    assert services.snapshot() == before
    node.commands_flow()
    assert node.alive() == ""
    # Still the first process and its first model: nothing was restarted or rebuilt.
    assert read_log(node.proc).count("model 'panda' from the parameter") == models == 1


# --------------------------------------------------------------------- random requests
NAN, INF = math.nan, math.inf
ODD_DOUBLES = [NAN, INF, -INF, 1e308, -1e308, -0.0, 0.0, 5e-324, 1e-9, -1.0, 1.0, 1e6, 1e7]
ODD_INTS = [0, 1, -1, 20, 250, 2**31, 2**63 - 1, -(2**63)]
ODD_STRINGS = [
    "",
    " ",
    "\n",
    "svd",
    "DLS",
    "dls ",
    "nowhere",
    "Target",
    "qqq",
    "xyzx",
    "xxz",
    "x y",
    "null",
    "[]",
    "1.0",
    "true",
    "<robot/>",
    "<robot name='x'><link name='a'/>",
    "<?xml version='1.0'?>",
    "/nonexistent/robot.urdf",
    str(PANDA_YAML),  # exists, not a URDF
    "été 日本 \u202e",
]
texts = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=30)
any_double = st.one_of(st.sampled_from(ODD_DOUBLES), st.floats())
any_int = st.one_of(st.sampled_from(ODD_INTS), st.integers(-(2**63), 2**63 - 1))
any_string = st.one_of(st.sampled_from([*ODD_STRINGS, *SOLVERS, *REFERENCES, "xyz"]), texts)


def typed(kind: int, values: st.SearchStrategy[Any]) -> st.SearchStrategy[Value]:
    """Values of type ``kind`` drawn from ``values`` (arrays of them, 0-5 long, as tuples)."""
    if kind in _ARRAYS:
        return st.lists(values, max_size=5).map(lambda v: (kind, tuple(v)))
    return values.map(lambda v: (kind, v))


ELEMENTS: dict[int, st.SearchStrategy[Any]] = {
    T.PARAMETER_BOOL: st.booleans(),
    T.PARAMETER_INTEGER: any_int,
    T.PARAMETER_DOUBLE: any_double,
    T.PARAMETER_STRING: any_string,
    T.PARAMETER_BYTE_ARRAY: st.integers(0, 255),
    T.PARAMETER_BOOL_ARRAY: st.booleans(),
    T.PARAMETER_INTEGER_ARRAY: any_int,
    T.PARAMETER_DOUBLE_ARRAY: any_double,
    T.PARAMETER_STRING_ARRAY: any_string,
}
"""Per ROS type, its values (the elements, for an array type)."""
any_value: st.SearchStrategy[Value] = st.one_of(
    st.just((T.PARAMETER_NOT_SET, None)), *(typed(k, e) for k, e in ELEMENTS.items())
)
"""Any value of any ROS parameter type."""


def weighted(*choices: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of the strategies by weight (``st.one_of`` weighs its distinct ones alike)."""
    picks = [i for i, (weight, _) in enumerate(choices) for _ in range(weight)]
    return st.sampled_from(picks).flatmap(lambda i: choices[i][1])


def near(lo: float, hi: float) -> list[float]:
    """The bounds, values just outside them (also within rclpy's 1e-6 tolerance), a middle."""
    return [
        lo,
        hi,
        (lo + hi) / 2.0,
        lo - max(abs(lo), 1.0) * 1e-3,
        lo - abs(lo) * 5e-7,
        hi + hi * 5e-7,
        hi * 1.001,
        math.nextafter(hi, INF),
    ]


def plausible(name: str) -> st.SearchStrategy[Value]:
    """Values of the parameter's declared type, valid and nearly valid ones."""
    rule = RULES[name]
    kind = rule.type
    if kind == T.PARAMETER_DOUBLE and rule.lo is not None and rule.hi is not None:
        edges = st.sampled_from(near(rule.lo, rule.hi))
        return typed(kind, weighted((2, st.floats(rule.lo, rule.hi)), (1, edges)))
    if name == f"{C}values":
        lo, hi = VALUES_RANGE
        return typed(kind, st.one_of(st.floats(lo, hi), st.sampled_from(near(lo, hi))))
    if name == "solver":
        return typed(kind, st.sampled_from([*SOLVERS, "svd", "DLS", "", "sdls "]))
    if name == f"{C}reference":
        return typed(kind, st.sampled_from([*REFERENCES, "nowhere", "Root", ""]))
    if name in (f"{C}position_axes", f"{C}rotation_axes"):
        return typed(kind, st.one_of(st.text("xyzXYZ", max_size=4), st.sampled_from(ODD_STRINGS)))
    if name == "robot_description":  # '' or garbage only (a valid URDF would rebuild the model)
        return typed(kind, st.one_of(st.sampled_from(ODD_STRINGS), texts))
    return typed(kind, ELEMENTS[kind])


def value_for(name: str) -> st.SearchStrategy[tuple[str, Value]]:
    """A value for ``name``: mostly of its declared type, else of any type."""
    values = any_value if name not in RULES else weighted((5, plausible(name)), (1, any_value))
    return values.map(lambda v: (name, v))


names = st.sampled_from(WRITABLE * 3 + DECLARED + UNDECLARED)
"""Parameter names: mostly writable ones (whose valid values can be accepted)."""
requests = (
    st.integers(1, 4)
    .flatmap(lambda k: st.lists(names, min_size=k, max_size=k, unique=True))
    .flatmap(lambda ns: st.tuples(*(value_for(n) for n in ns)).map(list))
)
"""Requests of 1-4 distinct parameters (as many of each size)."""


def _d(v: float) -> Value:
    return (T.PARAMETER_DOUBLE, v)


def _s(v: str) -> Value:
    return (T.PARAMETER_STRING, v)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@given(params=requests, atomic=st.sampled_from([True, True, False]))
# A good gain with a typo: nothing changes (atomic); the gain alone changes (one by one).
@example(params=[(f"{C}gain", _d(5.0)), ("solver", _s("svd"))], atomic=True)
@example(params=[(f"{C}gain", _d(5.0)), ("solver", _s("svd"))], atomic=False)
# An integer for a double, NaN, huge, NOT_SET, an undeclared name, a read-only one.
@example(params=[("control_rate", (T.PARAMETER_INTEGER, 100))], atomic=True)
@example(params=[("damping_max", _d(NAN)), ("velocity_scale", _d(0.5))], atomic=True)
@example(params=[(f"{C}weight", _d(1e308)), ("solver", _s("sdls"))], atomic=True)
@example(params=[("solver", (T.PARAMETER_NOT_SET, None))], atomic=False)
@example(params=[("input_timeout", _d(0.2)), ("solvr", _s("dls"))], atomic=True)
@example(params=[("joint_topic", _s("joint_states")), ("max_velocity", _d(5.0))], atomic=True)
# Cross-field rules; then all valid together; garbage and empty URDFs, a missing file.
@example(params=[("damping_epsilon", _d(0.0))], atomic=True)
@example(params=[("damping_epsilon", _d(0.0)), ("damping_max", _d(0.0))], atomic=True)
@example(params=[(f"{C}position_axes", _s("")), (f"{C}rotation_axes", _s(""))], atomic=True)
@example(params=[(f"{C}min_distance", _d(0.5))], atomic=True)  # not a copy_pose setting
@example(
    params=[
        ("solver", _s("sdls")),
        (f"{C}position_axes", _s("xz")),
        (f"{C}reference", _s("root")),
        (f"{C}gain", _d(35.0)),
    ],
    atomic=True,
)
@example(params=[("robot_description", _s("<robot name='x'><link name='a'/>"))], atomic=True)
@example(params=[("robot_description", _s("")), ("urdf_file", _s("/nope.urdf"))], atomic=True)
def test_any_parameter_request_is_applied_whole_or_refused_whole(
    node: NodeUnderTest, params: list[tuple[str, Value]], atomic: bool
) -> None:
    services = node.services
    before = services.snapshot()
    assert before == node.original, "the previous example left a change behind"
    what = f"{'atomic' if atomic else 'one by one'}: {show(params)}"
    try:
        if atomic:
            result = services.set_atomically(params)
            why = refusal(before, params)
            assert result.successful == (why == ""), f"{what}: expected {why!r}, got {result}"
            expected = before if why else before | {n: coerce(n, v) for n, v in params}
            outcomes = [result]
        else:
            outcomes = services.set_each(params)
            assert len(outcomes) == len(params)
            expected = dict(before)
            for (name, value), result in zip(params, outcomes, strict=True):
                why = refusal(expected, [(name, value)])
                assert result.successful == (why == ""), (
                    f"{what}: {name}: expected {why!r}, got {result}"
                )
                if not why:
                    expected[name] = coerce(name, value)
        for result in outcomes:
            if not result.successful:
                assert result.reason.strip(), f"{what}: refused without a reason"
                assert "internal error" not in result.reason, f"{what}: {result.reason}"
        assert node.alive() == "", what
        after = services.snapshot()
        assert after == expected, f"{what}: {[n for n in after if after[n] != expected[n]]}"
        ok = [r.successful for r in outcomes]
        node.accepted += all(ok)
        node.refused += not any(ok)
        node.partly += any(ok) and not all(ok)
    finally:
        if node.alive() == "":
            node.restore()


REPEATED = [
    [(f"{C}gain", _d(-1.0)), (f"{C}gain", _d(5.0))],  # refused by rclpy's range check
    [("solver", _s("svd")), ("solver", _s("dls"))],
    [(f"{C}position_axes", _s("qqq")), (f"{C}position_axes", _s("xy"))],
    [(f"{C}reference", _s("nowhere")), (f"{C}reference", _s("root"))],
    [("robot_description", _s("<robot/>")), ("robot_description", _s(""))],
    [(f"{C}gain", _d(5.0)), (f"{C}gain", _d(6.0))],  # which one? refused, not guessed
]


@pytest.mark.parametrize("request_", REPEATED, ids=[show(r) for r in REPEATED])
def test_an_atomic_request_naming_a_parameter_twice_is_refused(
    node: NodeUnderTest, request_: list[tuple[str, Value]]
) -> None:
    """A name given twice in one request is refused: a bad value is never hidden by a good one.

    rclpy checks each entry against the descriptor (so a repeated gain of -1 is refused even
    when a good gain follows); the node refuses every repeated name, whatever the values.
    """
    before = node.services.snapshot()
    try:
        assert refusal(before, request_)  # the oracle: one of the values is bad
        result = node.services.set_atomically(request_)
        assert not result.successful, f"{show(request_)} accepted"
        assert result.reason.strip()
        assert node.services.snapshot() == before
    finally:
        node.restore()
    assert node.alive() == ""


def test_the_node_still_answers_tracks_and_stops_cleanly(node: NodeUnderTest) -> None:
    print(
        f"requests: {node.accepted} accepted, {node.refused} refused, {node.partly} partly; "
        f"commands (total, zero, bad): {node.checker.snapshot()}"
    )
    assert node.accepted >= 10 and node.refused >= 20  # both outcomes were exercised
    assert node.alive() == ""
    assert node.services.snapshot() == node.original  # get_parameters answers, all restored
    node.target.publish(node.goal)  # the same target again: the very command of before
    node.commands_flow(50)
    # That command moves the hand straight at the target (static robot: gain x offset).
    tree = KinematicTree.from_urdf_file(PANDA_URDF)
    qdot = np.array([node.checker.last[JOINTS.index(j)] for j in tree.joint_names])
    twist = tree.jacobian(HOME, "panda_hand") @ qdot  # (6,) linear, angular
    offset = np.array(GOAL[0])
    cosine = twist[:3] @ offset / (np.linalg.norm(twist[:3]) * np.linalg.norm(offset))
    assert cosine > 0.999 and np.linalg.norm(twist[3:]) < 0.01 * np.linalg.norm(twist[:3])
    assert node.checker.bad == [] and node.checker.bad_count == 0
    assert stop_process(node.proc, signal.SIGINT) == 0
    log = read_log(node.proc)
    assert "Traceback" not in log and "FATAL" not in log, log[-3000:]
    assert "internal error" not in log, log[-3000:]
    assert "shutdown: zero command sent" in log
